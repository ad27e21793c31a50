"""The floating-point error of pocketfft's complex passes (docs/theory/fft-error.md).

A radix-r pass of pocketfft's complex FFT maps each block of r inputs to r outputs; transcribed
here from its code (``pass2``, ``pass4``, ``pass8`` for one block, ``ido == 1``; the twiddle
multiplication of the other blocks adds one multiplication per path), each output is the DFT_r
of the block (checked exactly), and every path from an input to an output runs through at most
d_r complex additions and m_r multiplications by constants of modulus <= 1. An error bound
θ·Σ|inputs| then propagates as θ' = (1+u)(1+θ) − 1 through an addition (the sum's own rounding
is at most u times its computed value) and θ' = (1+μ)(1+√2γ_2)(1+θ) − 1 through a product by a
constant known to μ (Higham 2002, Lemma 3.5); with || |A| ||_2 = r and ||A||_2 = √r for the
pass matrix the relative ℓ2 error of a pass is √r·θ_r, θ_r = (1+u)^{d_r}((1+μ)(1+√2γ_2))^{m_r} − 1.
The claim is the table (d_2, m_2, d_4, m_4, d_8, m_8) the library uses (`PASS_DEPTHS`); the
wrong variant undercounts every entry by one (e.g. the radix-8 additions: 3 instead of 4).
Assumptions: the passes as transcribed (pocketfft_hdronly.h, cfftp::pass2/pass4/pass8, forward);
the twiddles known to μ (proven: proofs/fft_twiddle_error.py, μ = 5.5u).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.pld.convolution import PASS_DEPTHS
from expost.symbolic import Proof, Step
from expost.symbolic.steps import identity

__all__ = ["PROOF"]

u, mu, g2, theta = sp.symbols("u mu gamma_2 theta", nonnegative=True)
_H = sp.sqrt(2) / 2  # hsqt2

Node = tuple[Any, int, int]  # (exact value, additions on the longest path, multiplications)


def _add(a: Node, b: Node, sign: int = 1) -> Node:
    return (sp.expand(a[0] + sign * b[0]), max(a[1], b[1]) + 1, max(a[2], b[2]))


def _rot90(a: Node) -> Node:  # forward: multiply by −i (a swap and a sign: exact)
    return (sp.expand(-sp.I * a[0]), a[1], a[2])


def _rot45(a: Node, turn: int) -> Node:
    """ROTX45 (turn 1: hsqt2·((r + i) + i(i − r))) or ROTX135 (turn 3), forward: one addition
    of the parts, then a product by the rounded constant hsqt2."""
    factor = {1: _H * (1 - sp.I), 3: _H * (-1 - sp.I)}[turn]
    return (sp.expand(factor * a[0]), a[1] + 1, a[2] + 1)


def _inputs(r: int) -> list[Node]:
    return [(sp.Symbol(f"x{j}"), 0, 0) for j in range(r)]


def _pass2() -> list[Node]:
    c = _inputs(2)
    return [_add(c[0], c[1]), _add(c[0], c[1], -1)]


def _pass4() -> list[Node]:
    c = _inputs(4)
    t2, t1 = _add(c[0], c[2]), _add(c[0], c[2], -1)
    t3, t4 = _add(c[1], c[3]), _add(c[1], c[3], -1)
    t4 = _rot90(t4)
    out = [_add(t2, t3), _add(t1, t4), _add(t2, t3, -1), _add(t1, t4, -1)]
    return out


def _pass8() -> list[Node]:
    c = _inputs(8)
    a1, a5 = _add(c[1], c[5]), _add(c[1], c[5], -1)
    a3, a7 = _add(c[3], c[7]), _add(c[3], c[7], -1)
    a1, a3 = _add(a1, a3), _add(a1, a3, -1)
    a3 = _rot90(a3)
    a7 = _rot90(a7)
    a5, a7 = _add(a5, a7), _add(a5, a7, -1)
    a5, a7 = _rot45(a5, 1), _rot45(a7, 3)
    a0, a4 = _add(c[0], c[4]), _add(c[0], c[4], -1)
    a2, a6 = _add(c[2], c[6]), _add(c[2], c[6], -1)
    s02, d02 = _add(a0, a2), _add(a0, a2, -1)
    out: list[Node] = [(0, 0, 0)] * 8
    out[0], out[4] = _add(s02, a1), _add(s02, a1, -1)
    out[2], out[6] = _add(d02, a3), _add(d02, a3, -1)
    a6 = _rot90(a6)
    s46, d46 = _add(a4, a6), _add(a4, a6, -1)
    out[1], out[5] = _add(s46, a5), _add(s46, a5, -1)
    out[3], out[7] = _add(d46, a7), _add(d46, a7, -1)
    return out


_PASSES = {2: _pass2, 4: _pass4, 8: _pass8}


def _is_dft(r: int, out: list[Node]) -> bool:
    xs = [sp.Symbol(f"x{j}") for j in range(r)]
    for k, (value, _, _) in enumerate(out):
        want = sum(x * sp.exp(-2 * sp.pi * sp.I * j * k / r) for j, x in enumerate(xs))
        if sp.simplify(sp.expand(sp.expand_complex(value - want))) != 0:
            return False
    return True


def _dft(r: int, sign: int) -> sp.Matrix:
    return sp.Matrix(r, r, lambda j, k: sp.exp(sign * 2 * sp.pi * sp.I * j * k / r))


def _unitary(r: int) -> bool:
    """DFT_r^H DFT_r = r·I, exactly."""
    gram = _dft(r, 1).T * _dft(r, -1)  # the conjugate transpose of DFT_r, times DFT_r
    diff = (gram - r * sp.eye(r)).applyfunc(lambda e: sp.simplify(sp.expand_complex(e)))
    return bool(diff == sp.zeros(r, r))


def check(form: Any) -> tuple[Step, ...]:
    """Each pass computes DFT_r, within the claimed depths (+1 multiplication: the twiddle);
    the propagation rules; the norms of a pass."""
    d2, m2, d4, m4, d8, m8 = (int(v) for v in form)
    claimed = {2: (d2, m2), 4: (d4, m4), 8: (d8, m8)}
    steps: list[Step] = []
    for r, build in _PASSES.items():
        out = build()
        adds = max(n[1] for n in out)
        mults = max(n[2] for n in out) + 1  # the twiddle product of the blocks with ido > 1
        steps.append(Step(f"pocketfft's pass{r} computes DFT_{r} (sympy, exact)", _is_dft(r, out)))
        steps.append(
            Step(
                f"pass{r}: at most {claimed[r][0]} additions and {claimed[r][1]} products per "
                f"path (found {adds}, {mults})",
                adds <= claimed[r][0] and mults <= claimed[r][1],
            )
        )
    steps.append(
        identity(
            "an addition: θ·M + u·(1 + θ)·M = ((1+u)(1+θ) − 1)·M",
            theta + u * (1 + theta),
            (1 + u) * (1 + theta) - 1,
        )
    )
    steps.append(
        identity(
            "a product by a constant known to μ: (1+μ)θ + μ + √2γ_2(1+μ)(1+θ) = "
            "(1+μ)(1+√2γ_2)(1+θ) − 1",
            (1 + mu) * theta + mu + sp.sqrt(2) * g2 * (1 + mu) * (1 + theta),
            (1 + mu) * (1 + sp.sqrt(2) * g2) * (1 + theta) - 1,
        )
    )
    for r in (2, 4, 8):
        steps.append(Step(f"DFT_{r}^H DFT_{r} = {r}·I: ||A||_2 = √{r} [sympy]", _unitary(r)))
        ones = sp.ones(r, r)
        steps.append(
            identity(f"|DFT_{r}| = ones: its largest eigenvalue is {r}", max(ones.eigenvals()), r)
        )
    library = tuple(v for r in (2, 4, 8) for v in PASS_DEPTHS[r])
    steps.append(Step("the library's PASS_DEPTHS is the claimed table", library == tuple(form)))
    return tuple(steps)


PROOF = Proof(
    name="fft-pass-error",
    source="docs/theory/fft-error.md (Higham 2002 Lemma 3.5, Thm 24.2's form)",
    statement=(
        "Each radix-r pass of pocketfft's complex FFT computes DFT_r per block with at most "
        "d_r additions and m_r products per path, so its relative ℓ2 error is at most "
        "√r·((1+u)^d_r·((1+μ)(1+√2γ_2))^m_r − 1)."
    ),
    assumptions=(
        "the passes as transcribed from pocketfft_hdronly.h (cfftp pass2/pass4/pass8)",
        "twiddles accurate to μ (proof fft-twiddle-error)",
    ),
    claim=sp.Tuple(1, 1, 2, 1, 4, 2),
    wrong_claim=sp.Tuple(0, 0, 1, 0, 3, 1),
    check=check,
)
