"""Numerical studies that the docs cite: computations, not audits and not library features.

- `expost.studies.post_processing`: how far post-processing pushes a Brownian transcript's
  probabilistic ex-post bound (THEORY §11), by propagating the law of the path on a lattice.
"""
