"""Privacy: mechanisms (``ldp_gym.wrappers.mechanisms``), Gymnasium wrappers
(``reward``, ``feedback``, ``bco``), the guarantee type (``privacy``) and the audit (``audit``)."""

from .bco import TwoPointGaussian, VectorTwoPointGaussian, one_point
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
from .privacy import Privacy
from .reward import GaussianReward, LaplaceReward, VectorGaussianReward, VectorLaplaceReward

__all__ = ["FeedbackWrapper", "GaussianMechanism", "GaussianReward", "GaussianStatistics",
           "L2BallMechanism", "LaplaceMechanism", "LaplaceReward", "Privacy", "PrivateEpisodeMean",
           "RandomizedResponse", "TreeMechanism", "TwoPointGaussian", "VectorFeedbackWrapper",
           "VectorGaussianReward", "VectorLaplaceReward", "VectorTwoPointGaussian", "one_point",
           "recording"]
