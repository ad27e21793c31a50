"""Reproductions of the papers' experiments (APC Sec. 7, BNR Sec. 6) built on the library."""
