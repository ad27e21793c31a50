"""Symbolic (sympy) checks of the library's closed forms; see `expost.symbolic.proof`."""
