"""Deprecated: moved to :mod:`ldp_gym.wrappers.mechanisms.calibration`; this path is removed in the
next release."""

import warnings

from .mechanisms.calibration import *  # noqa: F403
from .mechanisms.calibration import __all__  # noqa: F401

warnings.warn("ldp_gym.wrappers.calibration moved to ldp_gym.wrappers.mechanisms.calibration; the old path "
              "is removed in the next release", DeprecationWarning, stacklevel=2)
