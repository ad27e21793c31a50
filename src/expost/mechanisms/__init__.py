"""Mechanisms: each a frozen description with ``guarantee()``, ``loss(distance)`` and ``run``.

Every mechanism also has a batch form vectorised over trials (``run_batch``).
"""

from expost.mechanisms.additive import (
    GaussianMechanism,
    LaplaceMechanism,
)
from expost.mechanisms.doubling import (
    DoublingBatch,
    DoublingMethod,
    DoublingTranscript,
)
from expost.mechanisms.exponential import (
    ExponentialMechanism,
)
from expost.mechanisms.noise_reduction import (
    BrownianNoiseReduction,
    LaplaceNoiseReduction,
    PrivacyBoundaryWithDelta,
    TimeFunction,
)
from expost.mechanisms.permute_and_flip import (
    PermuteAndFlip,
)
from expost.mechanisms.skellam_noise_reduction import (
    SkellamNoiseReduction,
)
from expost.mechanisms.subsampled import SubsampledGaussianMechanism
from expost.mechanisms.threshold import (
    AboveThreshold,
    AboveThresholdResult,
    BrownianThresholdResult,
    ReducedAboveThreshold,
    ReducedAboveThresholdResult,
)
from expost.mechanisms.transcript import (
    BatchTranscript,
    Transcript,
)
from expost.mechanisms.trials import brownian_trials

__all__ = [
    "AboveThreshold",
    "AboveThresholdResult",
    "BatchTranscript",
    "BrownianNoiseReduction",
    "BrownianThresholdResult",
    "DoublingBatch",
    "DoublingMethod",
    "DoublingTranscript",
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "LaplaceNoiseReduction",
    "PermuteAndFlip",
    "PrivacyBoundaryWithDelta",
    "ReducedAboveThreshold",
    "ReducedAboveThresholdResult",
    "SkellamNoiseReduction",
    "SubsampledGaussianMechanism",
    "TimeFunction",
    "Transcript",
    "brownian_trials",
]
