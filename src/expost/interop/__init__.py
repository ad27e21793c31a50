"""Bridges to other privacy-accounting libraries (optional dependencies, imported lazily):
`expost.interop.dp_accounting` turns a dp-accounting ``DpEvent`` into a cost."""
