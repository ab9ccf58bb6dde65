"""Adapters: third-party learners as agents of the runner, their libraries imported lazily.

Any object with ``act(obs)`` and ``observe(obs, action, reward, next_obs)`` is
already an agent for :func:`ldp_gym.run`, as long as it takes batches of N
observations. These adapters cover the rest:

* :class:`SB3Agent`: a trained stable-baselines3 model, whose ``model.predict``
  works on batches. It does not learn while it is evaluated.
* :class:`PredictAgent`: any object with a ``predict``-like method
  ``obs_batch -> actions``, such as a scikit-learn style policy or a function,
  with an optional learning method.
* :class:`PerRunAgent`: N copies of a single-run agent, one per run, behind
  the batched interface. This loops over runs in Python, the slow path
  meant for agents that cannot be batched.

None of these is private by itself: run them on a privacy-wrapped env
(:mod:`ldp_gym.wrappers.reward`) for the black-box reduction.

Example:
    >>> import numpy as np
    >>> agent = PredictAgent(lambda obs: np.zeros(len(obs), dtype=np.int64))
    >>> agent.act(np.zeros((3, 1))).tolist()
    [0, 0, 0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ldp_gym.validation import check_bool, check_int

__all__ = ["PerRunAgent", "PredictAgent", "SB3Agent"]


class PredictAgent:
    """Wrap ``predict(obs_batch) -> actions``, and optionally ``learn(obs, a, r, next_obs)``.

    Args:
        predict: a callable, or an object whose ``method`` attribute is one.
        learn: optional ``(obs, actions, rewards, next_obs) -> None``.
        method: the attribute to call when ``predict`` is an object.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents.adapters import PredictAgent
        >>> from ldp_gym.envs import MABVectorEnv
        >>> envs = MABVectorEnv(num_envs=4, max_episode_steps=10,  # best arm first, not shuffled
        ...                     means=[0.75, 0.625, 0.5, 0.375, 0.25])
        >>> agent = PredictAgent(lambda obs: np.zeros(len(obs), dtype=np.int64))   # always arm 0
        >>> obs, _ = envs.reset(seed=0)
        >>> for _ in range(3):
        ...     actions = agent.act(obs)
        ...     next_obs, rewards, terminated, truncated, info = envs.step(actions)
        ...     agent.observe(obs, actions, rewards, next_obs)
        ...     obs = next_obs
        >>> actions.tolist(), envs.last_regret.tolist()
        ([0, 0, 0, 0], [0.0, 0.0, 0.0, 0.0])
    """

    privacy = None

    def __init__(self, predict: Any, learn: Callable | None = None, method: str = "predict"):
        fn = predict if callable(predict) and not hasattr(predict, method) \
            else getattr(predict, method, None)
        if not callable(fn):
            raise TypeError(f"predict must be callable or have a callable {method!r} method")
        self._predict = fn
        self._learn = learn

    def reset(self, seed: Any = None) -> None:
        """Nothing to forget; the wrapped object keeps its own state."""

    def act(self, obs: Any) -> np.ndarray:
        """The wrapped policy's actions for the batch ``obs``."""
        return np.asarray(self._predict(obs))

    def observe(self, obs: Any, action: Any, reward: Any, next_obs: Any) -> None:
        """Pass the round to ``learn`` if one was given, else nothing."""
        if self._learn is not None:
            self._learn(obs, action, reward, next_obs)


class SB3Agent(PredictAgent):
    """A stable-baselines3 model as an agent: ``model.predict(obs, deterministic)``.

    Args:
        model: a trained SB3 model for the env's spaces, such as PPO, A2C or DQN.
        deterministic: greedy actions (default) or samples from the policy.

    Example:
        >>> import numpy as np
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents.adapters import SB3Agent
        >>> env = gym.make("LDPMAB-v0", max_episode_steps=64)
        >>> from stable_baselines3 import PPO                                   # doctest: +SKIP
        >>> model = PPO("MlpPolicy", env, n_steps=64, batch_size=32, seed=0).learn(64)  # doctest: +SKIP
        >>> agent = SB3Agent(model)                                             # doctest: +SKIP
        >>> agent.act(np.zeros((3, 1), dtype=np.float32)).shape                 # doctest: +SKIP
        (3,)
    """

    def __init__(self, model: Any, deterministic: bool = True):
        try:
            from stable_baselines3.common.base_class import BaseAlgorithm
        except ImportError as exc:  # pragma: no cover - depends on the sb3 extra
            raise ImportError("SB3Agent needs stable-baselines3: pip install 'ldp-gym[sb3]'") \
                from exc
        if not isinstance(model, BaseAlgorithm):
            raise TypeError(f"model must be a stable-baselines3 model, got {type(model).__name__}")
        self.model = model
        self.deterministic = check_bool("deterministic", deterministic)
        super().__init__(self._predict_batch)

    def _predict_batch(self, obs: Any) -> np.ndarray:
        actions, _ = self.model.predict(obs, deterministic=self.deterministic)
        return actions


class PerRunAgent:
    """One single-run agent per run behind the batched interface: the slow path, a loop over runs.

    Args:
        factory: ``seed -> agent`` building one single-run agent.
        num_envs: number of runs N.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents import UCB1
        >>> from ldp_gym.agents.adapters import PerRunAgent
        >>> from ldp_gym.envs import MABVectorEnv
        >>> envs = MABVectorEnv(num_envs=2, max_episode_steps=10)
        >>> agent = PerRunAgent(lambda seed: UCB1(n_arms=5, seed=seed), num_envs=2)
        >>> agent.reset(seed=0)
        >>> obs, _ = envs.reset(seed=0)
        >>> for _ in range(5):
        ...     actions = agent.act(obs)
        ...     next_obs, rewards, terminated, truncated, info = envs.step(actions)
        ...     agent.observe(obs, actions, rewards, next_obs)
        ...     obs = next_obs
        >>> actions.shape, [a.counts.tolist() for a in agent.agents]
        ((2,), [[[1, 1, 1, 1, 1]], [[1, 1, 1, 1, 1]]])
    """

    privacy = None

    def __init__(self, factory: Callable[[Any], Any], num_envs: int):
        self.factory = factory
        self.num_envs = check_int("num_envs", num_envs)
        self.agents = [factory(None) for _ in range(num_envs)]

    def reset(self, seed: Any = None) -> None:
        """Build fresh agents, one per run, from ``seed``'s spawned children."""
        root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        seeds = root.spawn(self.num_envs)
        self.agents = [self.factory(s) for s in seeds]

    def act(self, obs: Any) -> np.ndarray:
        """Each run's agent acts on its own observation."""
        return np.array([a.act(o) for a, o in zip(self.agents, obs)])

    def observe(self, obs: Any, action: Any, reward: Any, next_obs: Any) -> None:
        """Each run's agent observes its own round."""
        for i, a in enumerate(self.agents):
            a.observe(obs[i], action[i], reward[i], next_obs[i])
