"""Privacy: mechanisms (``ldp_gym.wrappers.mechanisms``), Gymnasium wrappers
(``reward``, ``feedback``, ``bco``, ``semibandit``), the guarantee type (``privacy``) and the
audit (``audit``)."""

from .bco import TwoPointGaussian, VectorOnePointGaussian, VectorTwoPointGaussian, one_point
from .feedback import FeedbackWrapper, VectorFeedbackWrapper
from .mechanisms import (
    GaussianMechanism,
    GaussianStatistics,
    L2BallMechanism,
    LaplaceMechanism,
    PrivateEpisodeMean,
    RandomizedResponse,
    TreeMechanism,
    recording,
)
from .mechanisms.privacy import Privacy
from .reward import GaussianReward, LaplaceReward, VectorGaussianReward, VectorLaplaceReward
from .semibandit import LaplaceSemiBandit, VectorLaplaceSemiBandit

__all__ = ["FeedbackWrapper", "GaussianMechanism", "GaussianReward", "GaussianStatistics",
           "L2BallMechanism", "LaplaceMechanism", "LaplaceReward", "LaplaceSemiBandit", "Privacy",
           "PrivateEpisodeMean", "RandomizedResponse", "TreeMechanism", "TwoPointGaussian",
           "VectorFeedbackWrapper", "VectorGaussianReward", "VectorLaplaceReward",
           "VectorLaplaceSemiBandit", "VectorOnePointGaussian", "VectorTwoPointGaussian", "one_point",
           "recording"]
