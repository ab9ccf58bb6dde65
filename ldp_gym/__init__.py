"""ldp-gym: differentially private bandit learning as Gymnasium environments.

Importing the package registers every environment id (``LDPMAB-v0``, ...);
linters that flag the unused import accept ``gym.register_envs(ldp_gym)``.

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> gym.register_envs(ldp_gym)
    >>> env = gym.make("LDPMAB-v0")
    >>> env.action_space
    Discrete(5)
"""

import importlib.metadata

from .registration import ENV_SPECS, register_envs
from .results import Results
from .runner import default_checkpoints, make_vector_env, run, sweep

try:  # the version has one source: the package's metadata (pyproject.toml)
    __version__ = importlib.metadata.version("ldp-gym")
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - not installed
    __version__ = "0+unknown"

__all__ = ["ENV_SPECS", "Results", "default_checkpoints", "make_vector_env", "register_envs",
           "run", "sweep"]

register_envs()
