"""BNR Sec. 6: accuracy-first private ERM with the Brownian mechanism and Laplace noise reduction.

Two tasks (THEORY §7), loss ``L(β) = (1/n) Σ ℓ(y_i, βᵀx_i) + λ‖β‖²/2`` with λ = 0.05:

- logistic regression by output perturbation (Chaudhuri et al. 2011): the released statistic is
  the non-private minimiser, ℓ2 sensitivity 2/(nλ), ℓ1 sensitivity 2√d/(nλ);
- ridge regression by covariance perturbation (Smith et al. 2017): the released statistic is
  (upper triangle of XᵀX, Xᵀy), ℓ2 sensitivity 2.0, ℓ1 sensitivity 2.0d + 2.0√d (BNR Sec. 6),
  the model solves the perturbed system ``(Ã + nλI)β = b̃``.

A model is projected onto the ball ‖β‖ <= R that contains the non-private minimiser
(R = sqrt(2 log 2/λ) logistic, 1/sqrt(λ) ridge: λ‖β*‖²/2 <= L(0)); this post-processing bounds
the loss of every released model, hence the sensitivity of the accuracy check: R/n (logistic
loss ranges over an interval of length R) and (R² + 1)/(2n) (ridge, rows (x, y) of norm <= 1).

Both mechanisms release along one increasing sequence of privacy levels E_1 < … < E_K: the
Brownian mechanism (BM) at times t_k = ψ^(−1)(E_k) of the linear boundary tuned at eps = 0.3,
delta = 1e-6 (BNR Thm 3.6, appendix), Laplace noise reduction (LNR) at scales Δ1/E_k
(BNR Prop 4.2). Stopping at the first model whose loss is at most the target, checked (a) on
the training data as if public (ex-post loss E_N), (b) by AboveThreshold at eps = 0.5 (E_N + 0.5,
APC Lemma B.1) or (c) by ReducedAboveThreshold at the levels E_n (2E_N, BNR Thm 5.1, Cor 5.2),
or (d) by a private validation check under ex-post RDP (`validation`, THEORY §11; issue 29).
"""

from expost.apps.erm.figures import plot_figure2, plot_figure3
from expost.apps.erm.report import summary
from expost.apps.erm.simulation import (
    ABOVE_THRESHOLD_EPS,
    CHECK_SHARE,
    CHECK_WINDOW,
    CHECKERS,
    DELTA,
    METHODS,
    TUNED_EPS,
    Mechanisms,
    MethodResult,
    TaskResult,
    privacy_levels,
    run_task,
    single_run,
)
from expost.apps.erm.tasks import (
    LAMBDA,
    TARGETS,
    ERMTask,
    LogisticRegression,
    RidgeRegression,
    logistic_minimiser,
    make_task,
)
from expost.apps.erm.validation import ValidationCheck, ValidationResult

__all__ = [
    "ABOVE_THRESHOLD_EPS",
    "CHECKERS",
    "CHECK_SHARE",
    "CHECK_WINDOW",
    "DELTA",
    "LAMBDA",
    "METHODS",
    "TARGETS",
    "TUNED_EPS",
    "ERMTask",
    "LogisticRegression",
    "Mechanisms",
    "MethodResult",
    "RidgeRegression",
    "TaskResult",
    "ValidationCheck",
    "ValidationResult",
    "logistic_minimiser",
    "make_task",
    "plot_figure2",
    "plot_figure3",
    "privacy_levels",
    "run_task",
    "single_run",
    "summary",
]
