"""Deprecated: moved to :mod:`ldp_gym.wrappers.mechanisms.audit`; this path is removed in the
next release."""

import warnings

from .mechanisms.audit import *  # noqa: F403
from .mechanisms.audit import __all__  # noqa: F401

warnings.warn("ldp_gym.wrappers.audit moved to ldp_gym.wrappers.mechanisms.audit; the old path "
              "is removed in the next release", DeprecationWarning, stacklevel=2)
