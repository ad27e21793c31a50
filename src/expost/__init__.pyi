"""The public surface of `expost`, written once: one line per name (issue 43).

Each name is re-exported (``X as X``) from the module that defines it. Type checkers read this
stub; ``expost/__init__.py`` reads the same lines (`expost._lazy.attach_stub`) and loads each
name on first use. Which names are top level, and why: docs/architecture.md, "The public
surface"; the rest stay in their rooms (``expost.filters``, ``expost.pld``, ``expost.audit``, …).
"""

from expost import exact as exact
from expost import stopping as stopping
from expost.boundaries import Boundary as Boundary
from expost.boundaries import FACStitched as FACStitched
from expost.boundaries import LinearPrivacyBoundary as LinearPrivacyBoundary
from expost.boundaries import LineCrossing as LineCrossing
from expost.boundaries import MixturePrivacyBoundary as MixturePrivacyBoundary
from expost.boundaries import NormalMixture as NormalMixture
from expost.boundaries import PolynomialStitching as PolynomialStitching
from expost.boundaries import PrivacyBoundary as PrivacyBoundary
from expost.boundaries import apc_psi as apc_psi
from expost.errors import BudgetExceeded as BudgetExceeded
from expost.errors import ExpostError as ExpostError
from expost.errors import InvalidParameter as InvalidParameter
from expost.errors import LedgerCorrupted as LedgerCorrupted
from expost.errors import LedgerError as LedgerError
from expost.errors import LedgerMismatch as LedgerMismatch
from expost.errors import LedgerNotFound as LedgerNotFound
from expost.errors import NotAStoppingTime as NotAStoppingTime
from expost.errors import NotCopyable as NotCopyable
from expost.ex_post_rdp import ExPostRDP as ExPostRDP
from expost.exact import GeneratorBits as GeneratorBits
from expost.exact import SecureBits as SecureBits
from expost.filters import ApproxDPFilter as ApproxDPFilter
from expost.filters import BoundedRangeCost as BoundedRangeCost
from expost.filters import BrownianCost as BrownianCost
from expost.filters import BrownianFilter as BrownianFilter
from expost.filters import ConcurrentFilter as ConcurrentFilter
from expost.filters import Cost as Cost
from expost.filters import DPCost as DPCost
from expost.filters import ExPostCost as ExPostCost
from expost.filters import ExPostFilter as ExPostFilter
from expost.filters import GaussianCost as GaussianCost
from expost.filters import GaussianDPFilter as GaussianDPFilter
from expost.filters import LaplaceCost as LaplaceCost
from expost.filters import PLDFilter as PLDFilter
from expost.filters import PrivacyFilter as PrivacyFilter
from expost.filters import RDPFilter as RDPFilter
from expost.filters import RenyiFilter as RenyiFilter
from expost.filters import SubsampledGaussianCost as SubsampledGaussianCost
from expost.filters import UnifiedFilter as UnifiedFilter
from expost.filters import ZCDPCost as ZCDPCost
from expost.filters import ZCDPFilter as ZCDPFilter
from expost.grids import EpsilonGrid as EpsilonGrid
from expost.grids import OpenEpsilonGrid as OpenEpsilonGrid
from expost.grids import TimeGrid as TimeGrid
from expost.guarantees import ZCDP as ZCDP
from expost.guarantees import ApproxDP as ApproxDP
from expost.guarantees import ExPost as ExPost
from expost.guarantees import GaussianDP as GaussianDP
from expost.guarantees import Guarantee as Guarantee
from expost.guarantees import ProbabilisticDP as ProbabilisticDP
from expost.guarantees import PureDP as PureDP
from expost.guarantees import cks_delta as cks_delta
from expost.guarantees import cks_rho_for_dp as cks_rho_for_dp
from expost.guarantees import cks_zcdp_to_dp as cks_zcdp_to_dp
from expost.guarantees import compose_ex_post as compose_ex_post
from expost.guarantees import compose_zcdp as compose_zcdp
from expost.guarantees import dp_to_pdp as dp_to_pdp
from expost.guarantees import dp_to_zcdp as dp_to_zcdp
from expost.guarantees import pdp_to_dp as pdp_to_dp
from expost.guarantees import rho_for_dp as rho_for_dp
from expost.guarantees import zcdp_to_dp as zcdp_to_dp
from expost.ledger import Ledger as Ledger
from expost.loss import BrownianLoss as BrownianLoss
from expost.loss import GaussianLoss as GaussianLoss
from expost.loss import LaplaceLoss as LaplaceLoss
from expost.loss import LaplaceNoiseReductionLoss as LaplaceNoiseReductionLoss
from expost.loss import PrivacyLoss as PrivacyLoss
from expost.mechanisms import AboveThreshold as AboveThreshold
from expost.mechanisms import BatchTranscript as BatchTranscript
from expost.mechanisms import BrownianNoiseReduction as BrownianNoiseReduction
from expost.mechanisms import DoublingMethod as DoublingMethod
from expost.mechanisms import DoublingTranscript as DoublingTranscript
from expost.mechanisms import ExponentialMechanism as ExponentialMechanism
from expost.mechanisms import GaussianMechanism as GaussianMechanism
from expost.mechanisms import LaplaceMechanism as LaplaceMechanism
from expost.mechanisms import LaplaceNoiseReduction as LaplaceNoiseReduction
from expost.mechanisms import ReducedAboveThreshold as ReducedAboveThreshold
from expost.mechanisms import SkellamNoiseReduction as SkellamNoiseReduction
from expost.mechanisms import Transcript as Transcript
from expost.mechanisms.permute_and_flip import PermuteAndFlip as PermuteAndFlip
from expost.odometers import BrownianOdometer as BrownianOdometer
from expost.odometers import FilterOdometer as FilterOdometer
from expost.odometers import MixtureOdometer as MixtureOdometer
from expost.odometers import StitchedOdometer as StitchedOdometer
from expost.pld import PrivacyLossDistribution as PrivacyLossDistribution
from expost.session import PrivateSession as PrivateSession
from expost.session import Round as Round
from expost.skellam.boundary import SkellamPrivacyBoundary as SkellamPrivacyBoundary
from expost.skellam.loss import SkellamLoss as SkellamLoss
from expost.stopping import AtIndex as AtIndex
from expost.stopping import MemorylessRule as MemorylessRule
from expost.stopping import Never as Never
from expost.stopping import RelativeError as RelativeError
from expost.stopping import Released as Released
from expost.stopping import StoppingRule as StoppingRule
from expost.stopping import WhenPublicUtility as WhenPublicUtility

__version__: str
