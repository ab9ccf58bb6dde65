"""Deprecated: moved to :mod:`ldp_gym.wrappers.mechanisms.privacy`; this path is removed in the
next release."""

import warnings

from .mechanisms.privacy import *  # noqa: F403
from .mechanisms.privacy import __all__  # noqa: F401

warnings.warn("ldp_gym.wrappers.privacy moved to ldp_gym.wrappers.mechanisms.privacy; the old path "
              "is removed in the next release", DeprecationWarning, stacklevel=2)
