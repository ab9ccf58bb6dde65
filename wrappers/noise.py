"""Deprecated: moved to :mod:`ldp_gym.wrappers.mechanisms.noise`; this path is removed in the
next release."""

import warnings

from .mechanisms.noise import *  # noqa: F403
from .mechanisms.noise import __all__  # noqa: F401

warnings.warn("ldp_gym.wrappers.noise moved to ldp_gym.wrappers.mechanisms.noise; the old path "
              "is removed in the next release", DeprecationWarning, stacklevel=2)
