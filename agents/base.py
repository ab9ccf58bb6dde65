"""The agent contract (DESIGN.md section 3): batch-first agents with one ``act``/``observe`` API.

Every algorithm is written once on arrays with a leading run dimension. An
agent built with ``num_envs=N`` takes and returns batches of N; one built
without it takes single observations and returns a Python ``int`` action, the
base class adding and removing the batch dimension.

Randomness: the agent owns one :class:`numpy.random.SeedSequence`; its
decisions draw from one child and every mechanism it creates from a child of
its own (:meth:`Agent.spawn`), never from the env's stream or the global
``np.random``. Seeded noise is for simulation: whoever knows the seed knows
the noise, and the same seed replays it. With ``secure=True`` every mechanism
of the agent draws from the operating system's CSPRNG instead (the seed then
only drives the agent's public decisions, such as tie-breaking).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
from gymnasium.vector import VectorEnv

from ldp_gym.wrappers.mechanisms import check_epsilon, check_int, check_real
from ldp_gym.wrappers.privacy import Privacy

__all__ = ["Agent", "GlobalDPAgent", "LocalDPAgent", "Privacy", "argmax_random"]


def argmax_random(rng: np.random.Generator, values: np.ndarray) -> np.ndarray:
    """Row-wise argmax with ties broken uniformly at random (exactly, not by jitter)."""
    ties = values == values.max(axis=1, keepdims=True)
    return (rng.random(values.shape) * ties).argmax(axis=1)


def _check_optional_int(name: str, value: Any) -> int | None:
    return None if value is None else check_int(name, value)


class Agent:
    """Base class of every agent.

    Subclasses implement ``_init_state(n)``, ``_act(obs)`` and
    ``_observe(obs, actions, rewards, next_obs)`` on batches, and declare
    ``test_env`` / ``test_params`` for the generic contract suite.

    Args:
        n_arms: number of actions.
        horizon: the horizon T, for algorithms whose parameters use it.
        num_envs: ``None`` for a single run, else the batch size N.
        seed: ``None``, an int or a ``SeedSequence``. Seeded noise is for simulation:
            whoever knows the seed can predict every noise draw, and reseeding replays it.
        secure: draw every privacy mechanism's noise from the OS CSPRNG (for deployment;
            such noise cannot be replayed). The seed then only drives public decisions.
    """

    #: Display name, as in the papers.
    name: ClassVar[str] = "agent"
    #: Registered env id and constructor parameters used by the contract tests.
    test_env: ClassVar[str] = "LDPMAB-v0"
    test_params: ClassVar[dict[str, Any]] = {}
    #: Whether the agent commits to one action for several rounds (see ``commitment``).
    commits: ClassVar[bool] = False
    #: Whether the agent can run its per-round rule over a block of drawn rewards of its
    #: current action and say where it would have switched (``observe_stretch``).
    speculates: ClassVar[bool] = False
    #: Whether ``horizon`` must be given.
    needs_horizon: ClassVar[bool] = False
    _privacy: Privacy | None = None

    def __init__(self, n_arms: int, *, horizon: int | None = None, num_envs: int | None = None,
                 seed: Any = None, secure: bool = False):
        if not isinstance(secure, (bool, np.bool_)):
            raise TypeError(f"secure must be True or False, got {type(secure).__name__}")
        self.secure = bool(secure)
        self.n_arms = check_int("n_arms", n_arms)
        self.horizon = _check_optional_int("horizon", horizon)
        if self.needs_horizon and self.horizon is None:
            raise ValueError(f"{type(self).__name__} needs horizon (the number of rounds T)")
        self.num_envs = _check_optional_int("num_envs", num_envs)
        self._n = self.num_envs or 1
        self._rows = np.arange(self._n)
        self._seed_seq = seed if isinstance(seed, np.random.SeedSequence) \
            else np.random.SeedSequence(seed)
        self._fresh_streams()
        self._init_state(self._n)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_env(cls, env: Any, **kwargs: Any) -> Agent:
        """Build the agent for ``env`` (a single env or a native vector env).

        Reads the number of arms from the action space, ``num_envs`` from a
        vector env, and the horizon from ``max_episode_steps`` unless given.
        """
        is_vec = isinstance(getattr(env, "unwrapped", env), VectorEnv) or isinstance(env, VectorEnv)
        space = env.single_action_space if is_vec else env.action_space
        params = cls.env_params(env, is_vec)
        params.setdefault("n_arms", int(space.n))
        if is_vec:
            params.setdefault("num_envs", env.num_envs)
        horizon = getattr(getattr(env, "unwrapped", env), "horizon", None)
        if horizon is None and getattr(env, "spec", None) is not None:
            horizon = env.spec.max_episode_steps
        params.setdefault("horizon", horizon)
        params.update(kwargs)
        return cls(**params)

    @classmethod
    def env_params(cls, env: Any, is_vec: bool) -> dict[str, Any]:
        """Setting-specific constructor arguments read off the env (dimension, bounds)."""
        return {}

    def _fresh_streams(self) -> None:
        decisions, self._mechanism_seeds = self._seed_seq.spawn(2)
        self.rng = np.random.default_rng(decisions)

    def spawn(self) -> np.random.SeedSequence:
        """A fresh, independent seed sequence for one mechanism of this agent."""
        return self._mechanism_seeds.spawn(1)[0]

    def noise_source(self) -> dict[str, Any]:
        """Keyword arguments that give one mechanism of this agent its noise: a fresh seed
        sequence of its own (:meth:`spawn`), or in secure mode the OS CSPRNG."""
        return {"secure": True} if self.secure else {"seed": self.spawn()}

    def reset(self, seed: Any = None) -> None:
        """Forget everything learned. With a seed, restart every stream from it."""
        if seed is not None:
            self._seed_seq = seed if isinstance(seed, np.random.SeedSequence) \
                else np.random.SeedSequence(seed)
            self._fresh_streams()
        self._init_state(self._n)

    # ------------------------------------------------------------------ public API
    def act(self, obs: Any) -> Any:
        """Choose actions: a batch for ``num_envs=N`` agents, a Python int otherwise."""
        if self.num_envs is None:
            return int(self._act(np.asarray(obs)[None])[0])
        return self._act(np.asarray(obs))

    def observe(self, obs: Any, action: Any, reward: Any, next_obs: Any) -> None:
        """Learn from one round (batched for ``num_envs=N`` agents)."""
        if self.num_envs is None:
            self._observe(np.asarray(obs)[None], np.asarray(action, dtype=np.int64).reshape(1),
                          np.asarray(reward, dtype=np.float64).reshape(1),
                          np.asarray(next_obs)[None])
        else:
            self._observe(np.asarray(obs), np.asarray(action), np.asarray(reward, np.float64),
                          np.asarray(next_obs))

    @property
    def privacy(self) -> Privacy | None:
        """The guarantee the agent gives (``None`` for non-private agents)."""
        if self._privacy is None:
            return None
        return dataclasses.replace(self._privacy, secure=self.secure)

    def commitment(self) -> np.ndarray:
        """Rounds (N,) the agent commits to playing its current action (1 for per-round agents)."""
        return np.ones(self._n, dtype=np.int64)

    def __repr__(self) -> str:
        priv = f", {self.privacy}" if self.privacy else ""
        return f"{type(self).__name__}(n_arms={self.n_arms}, num_envs={self.num_envs}{priv})"

    # ------------------------------------------------------------------ to implement
    def _init_state(self, n: int) -> None:
        raise NotImplementedError

    def _act(self, obs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _observe(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
                 next_obs: np.ndarray) -> None:
        raise NotImplementedError


class _PrivateMixin:
    """Validation shared by private agents: epsilon, delta and the declared reward bounds."""

    def _set_privacy(self, model: str, epsilon: Any, delta: Any = 0.0, unit: str = "reward",
                     lower: Any = 0.0, upper: Any = 1.0) -> None:
        eps = check_epsilon(epsilon)
        d = 0.0 if delta == 0.0 else check_real("delta", delta, low=0.0, high=1.0)
        lo = check_real("lower", lower)
        hi = check_real("upper", upper)
        if not hi > lo:
            raise ValueError(f"upper must be > lower, got lower={lo}, upper={hi}")
        self.epsilon, self.delta, self.lower, self.upper = eps, d, lo, hi
        self._privacy = Privacy(model, eps, d, unit)


class LocalDPAgent(_PrivateMixin, Agent):
    """An agent under local DP: a user side and a server side in one object.

    * user side: :meth:`act` (raw context and the server's public state) and
      :meth:`local_report`, which builds the message and privatises it with
      mechanisms from :mod:`ldp_gym.wrappers.mechanisms`;
    * server side: :meth:`update` sees the report and nothing else;
      :meth:`public_state` is what the server broadcasts.

    ``observe`` is written once here: ``report = local_report(...)``, then
    ``update(report)``. ``last_report`` keeps the last (batched) message so a
    lab can show what the server received.
    """

    last_report: dict[str, np.ndarray] | None = None

    def _observe(self, obs, actions, rewards, next_obs):
        report = self.local_report(obs, actions, rewards, self.public_state())
        self.last_report = report
        self.update(report)

    def public_state(self) -> dict[str, np.ndarray]:
        """What the server broadcasts to users (batched)."""
        raise NotImplementedError

    def local_report(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
                     public_state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """User side: the privatised message of a batch of users."""
        raise NotImplementedError

    def update(self, report: dict[str, np.ndarray]) -> None:
        """Server side: fold a batch of reports into the server's state."""
        raise NotImplementedError


class GlobalDPAgent(_PrivateMixin, Agent):
    """An agent under global DP: it sees raw rewards but acts only on privatised releases."""


