"""The papers' claims at the papers' deltas (the ``quick`` and ``paper`` suites).

One module per claim family; each registers its audits with `expost.audit.register` and is
imported by `expost.audit.default_registry` (every public module of this package). A module
here that registers no audit fails ``tests/audit/test_audit_rooms.py``.
"""
