"""Privacy: mechanisms (``ldp_gym.wrappers.mechanisms``), Gymnasium wrappers and the audit."""

from .mechanisms import (
    GaussianMechanism,
    L2BallMechanism,
    LaplaceMechanism,
    PrivateEpisodeMean,
    RandomizedResponse,
    TreeMechanism,
    recording,
)

__all__ = ["GaussianMechanism", "L2BallMechanism", "LaplaceMechanism", "PrivateEpisodeMean",
           "RandomizedResponse", "TreeMechanism", "recording"]
