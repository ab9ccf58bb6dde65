"""Deprecated: moved to :mod:`ldp_gym.wrappers.mechanisms.compiled`; this path is removed in the
next release."""

import warnings

from .mechanisms.compiled import *  # noqa: F403
from .mechanisms.compiled import __all__  # noqa: F401

warnings.warn("ldp_gym.wrappers.compiled moved to ldp_gym.wrappers.mechanisms.compiled; the old path "
              "is removed in the next release", DeprecationWarning, stacklevel=2)
