"""Hypothesis profiles: reproducible in CI, searching locally.

CI (the environment variable ``CI`` set, as ``.ci/run`` is run) loads ``ci``: derandomized, so a
run on a commit is the same run every time and a red CI names a real fault of that commit, not
a new random draw; no per-example deadline (the 2-core CI machine runs the suite with other
work). Locally the default profile keeps drawing new examples; a counterexample it finds is
pinned with ``@example`` in the test that found it. ``HYPOTHESIS_PROFILE`` picks one explicitly.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("default", print_blob=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default")
)
