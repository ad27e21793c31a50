"""The claims at deployment deltas, 1e-6 … 1e-12 (the ``deploy`` and ``deploy-quick`` suites).

Importance-sampled audits (`expost.audit.tilting`, `expost.audit.ImportanceClaim`), one module per
claim family, each registering delta factories with `expost.audit.register_at_deltas`; imported by
`expost.audit.default_registry` (every public module of this package). They may reuse the paper
room's simulators (``expost.audit.paper``), never the other way round.
"""
