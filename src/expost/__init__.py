"""expost: accuracy-first differential privacy.

Noise-reduction mechanisms with ex-post guarantees, fully adaptive privacy filters and
odometers, symbolic proofs of every closed form and statistical audits of every claim.
The math and its sources are in THEORY.md and the docs' theory map; ``expost prove``
checks the closed forms.

The public names are listed once, in the stub beside this file (``__init__.pyi``): the names a
user of the README, the tutorial and the docs needs. Engine internals (batch engines, path
samplers, the audit machinery) stay importable from their modules: ``expost.processes``,
``expost.stopping``, ``expost.audit``, ``expost.testing``.

``import expost`` loads only the error types (`expost.errors`): every other name, and every
submodule (``expost.filters``), is imported on first use (`__getattr__`, PEP 562; the table is
read from the stub by `expost._lazy.attach_stub`), so a script pays for what it uses, and
``import expost`` stays below 2.5× ``import numpy`` (benchmarks/bench_import.py).
"""

from __future__ import annotations

from expost._lazy import attach_stub

__version__ = "0.1.0"

__getattr__, __dir__, __all__, _HOME = attach_stub(__name__, __file__, eager=("expost.errors",))
