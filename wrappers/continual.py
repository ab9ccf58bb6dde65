"""Deprecated: moved to :mod:`ldp_gym.wrappers.mechanisms.continual`; this path is removed in the
next release."""

import warnings

from .mechanisms.continual import *  # noqa: F403
from .mechanisms.continual import __all__  # noqa: F401

warnings.warn("ldp_gym.wrappers.continual moved to ldp_gym.wrappers.mechanisms.continual; the old path "
              "is removed in the next release", DeprecationWarning, stacklevel=2)
