"""The agent contract: batch-first agents with one ``act``/``observe`` API.

Every algorithm is written once on arrays with a leading run dimension. An
agent built with ``num_envs=N`` takes and returns batches of N. One built
without it takes single observations and returns one action: a Python ``int``
for a ``Discrete`` space, else an array of the space's dtype. The base class
adds and removes the batch dimension. Agents declare the action spaces they
support in ``supported_action_spaces``, and :meth:`Agent.from_env` refuses any
other. ``act`` and ``observe`` refuse, with one clear error, actions outside
the agent's space, NaN or inf rewards and observations and wrong shapes.
The checks live in :mod:`ldp_gym.validation`.

Randomness: the agent owns one :class:`numpy.random.SeedSequence`. Its
decisions draw from one child, and every mechanism it creates draws from a child of
its own, made by :meth:`Agent.spawn`. None draws from the env's stream or the global
``np.random``. Seeded noise is for simulation: whoever knows the seed knows
the noise, and the same seed replays it. With ``secure=True`` every mechanism
of the agent draws from the operating system's CSPRNG instead. The seed then
only drives the agent's public decisions, such as tie-breaking.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from typing_extensions import override

from ldp_gym.protocols import BlockPlay
from ldp_gym.validation import (
    Part,
    check_action,
    check_actions,
    check_bool,
    check_bounds,
    check_delta,
    check_epsilon,
    check_finite,
    check_input,
    check_int,
    check_message,
    check_optional_int,
    check_real,
    seed_sequence,
)
from ldp_gym.wrappers.mechanisms.privacy import Privacy

__all__ = ["Agent", "DistributedDPAgent", "GlobalDPAgent", "JointDPAgent", "LocalDPAgent", "Privacy",
           "ShuffleDPAgent", "argmax_random", "readonly", "trust_model"]


def argmax_random(rng: np.random.Generator, values: np.ndarray) -> np.ndarray:
    """Row-wise argmax with ties broken uniformly at random, exactly and not by jitter."""
    ties = values == values.max(axis=1, keepdims=True)
    return (rng.random(values.shape) * ties).argmax(axis=1)


def readonly(**arrays: Any) -> dict[str, np.ndarray]:
    """Read-only views of ``arrays``, as a dict, as :meth:`LocalDPAgent.public_state` returns.

    Users read the server's broadcast and see its updates, but they cannot write into the
    server's state through it. The views come through a read-only buffer, so that numpy
    refuses to make them writeable again. Numpy allows that on a plain view.
    """
    return {key: np.asarray(np.asarray(value).data.toreadonly())
            for key, value in arrays.items()}


class Agent(ABC):
    """Base class of every agent.

    Subclasses implement ``_init_state(n)``, ``_act(obs)`` and
    ``_observe(obs, actions, rewards, next_obs)`` on batches, which :meth:`act` and
    :meth:`observe` validate. They declare ``supported_action_spaces``, and
    ``test_env`` / ``test_params`` for the generic contract suite, which reads them through
    :meth:`_unit_test_params`. Agents of spaces other than ``Discrete`` override
    :meth:`space_params` and :meth:`_make_action_space`.

    Args:
        n_arms: number of actions; for a ``Discrete`` space, of arms.
        horizon: the horizon T, for algorithms whose parameters use it.
        num_envs: ``None`` for a single run, else the batch size N.
        seed: ``None``, an int or a ``SeedSequence``. Seeded noise is for simulation:
            whoever knows the seed can predict every noise draw, and reseeding replays it.
        secure: draw every privacy mechanism's noise from the OS CSPRNG. This is for
            deployment; such noise cannot be replayed. The seed then only drives public
            decisions.
    """

    #: Display name, as in the papers.
    name: ClassVar[str] = "agent"
    #: The action spaces (classes) the agent can play in; :meth:`from_env` refuses any other.
    supported_action_spaces: ClassVar[tuple[type[spaces.Space], ...]] = (spaces.Discrete,)
    #: Registered env id and constructor parameters used by the contract tests (the default
    #: parameter set of :meth:`_unit_test_params`).
    test_env: ClassVar[str] = "LDPMAB-v0"
    test_params: ClassVar[dict[str, Any]] = {}
    #: How the agent consumes the runner's block path (the runner's table
    #: :data:`ldp_gym.runner.blocks.PLAYERS`): ``ROUNDS``, by ``act``/``observe``.
    block_play: ClassVar[BlockPlay] = BlockPlay.ROUNDS
    #: Whether ``horizon`` must be given.
    needs_horizon: ClassVar[bool] = False
    #: The task the agent is for, as settings declare it (``env.unwrapped.setting["task"]``,
    #: ``"regret"`` where a setting does not say): :meth:`from_env` refuses the other one.
    task: ClassVar[str] = "regret"
    _privacy: Privacy | None = None

    def __init__(self, n_arms: int, *, horizon: int | None = None, num_envs: int | None = None,
                 seed: Any = None, secure: bool = False):
        self.secure = check_bool("secure", secure)
        self.n_arms = check_int("n_arms", n_arms)
        self.horizon = check_optional_int("horizon", horizon)
        if self.needs_horizon and self.horizon is None:
            raise ValueError(f"{type(self).__name__} needs horizon (the number of rounds T)")
        self.num_envs = check_optional_int("num_envs", num_envs)
        self.action_space = self._make_action_space()
        self._discrete = isinstance(self.action_space, spaces.Discrete)
        self._n = self.num_envs or 1
        self._rows = np.arange(self._n)
        self._seed_seq = seed_sequence(seed)
        self._fresh_streams()
        self._init_state(self._n)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_env(cls, env: Any, **kwargs: Any) -> Agent:
        """Build the agent for ``env``, a single env or a native vector env.

        Reads the number of arms from the action space with :meth:`space_params`,
        ``num_envs`` from a vector env, and the horizon from
        ``max_episode_steps`` unless given.

        Raises:
            ValueError: the env's action space is not in ``supported_action_spaces``, or the
                env is not of the agent's setting or task.
        """
        is_vec = isinstance(getattr(env, "unwrapped", env), VectorEnv) or isinstance(env, VectorEnv)
        space = env.single_action_space if is_vec else env.action_space
        if not isinstance(space, cls.supported_action_spaces):
            names = " or ".join(s.__name__ for s in cls.supported_action_spaces)
            raise ValueError(f"{cls.name} supports {names} action spaces only, not {space}")
        params = cls.space_params(space)
        task = (getattr(getattr(env, "unwrapped", env), "setting", None) or {}).get("task", "regret")
        if task != cls.task:
            raise ValueError(f"env: {cls.name} is for {cls.task}, not for this env's {task} "
                             f"(env.unwrapped.setting['task'])")
        params.update(cls.env_params(env, is_vec))
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
        """Setting-specific constructor arguments read off the env, such as dimension and bounds."""
        return {}

    @classmethod
    def space_params(cls, space: spaces.Space) -> dict[str, Any]:
        """Constructor arguments read off one run's action space, which must be supported.

        The base reads ``n_arms`` of a ``Discrete`` space, which must start at 0.
        """
        if not isinstance(space, spaces.Discrete):
            raise NotImplementedError(f"{cls.name} reads no parameters off {space}")
        if space.start != 0:
            raise ValueError(f"{cls.name} needs a Discrete action space starting at 0, not {space}")
        return {"n_arms": int(space.n)}

    def _make_action_space(self) -> spaces.Space:
        """The action space of one run, from the constructor's arguments: ``Discrete(n_arms)``."""
        return spaces.Discrete(self.n_arms)

    @classmethod
    def _unit_test_params(cls) -> list[dict[str, Any]]:
        """The parameter sets the contract suite runs the agent with, ``test_params`` first."""
        return [dict(cls.test_params)]

    def _fresh_streams(self) -> None:
        decisions, self._mechanism_seeds = self._seed_seq.spawn(2)
        self.rng = np.random.default_rng(decisions)

    def spawn(self) -> np.random.SeedSequence:
        """A fresh, independent seed sequence for one mechanism of this agent."""
        return self._mechanism_seeds.spawn(1)[0]

    def noise_source(self) -> dict[str, Any]:
        """Keyword arguments that give one mechanism of this agent its noise.

        The noise comes from a fresh seed sequence of its own, made by :meth:`spawn`, or in
        secure mode from the OS CSPRNG.
        """
        return {"secure": True} if self.secure else {"seed": self.spawn()}

    def reset(self, seed: Any = None) -> None:
        """Forget everything learned. With a seed, restart every stream from it."""
        if seed is not None:
            self._seed_seq = seed_sequence(seed)
            self._fresh_streams()
        self._init_state(self._n)

    # ------------------------------------------------------------------ public API
    def act(self, obs: Any) -> Any:
        """Choose actions: a batch (N, ...) for ``num_envs=N`` agents; otherwise one action, a
        Python int for a ``Discrete`` space, else an array of the space's dtype."""
        if self.num_envs is None:
            action = self._act(check_finite(obs, "obs")[None])[0]
            return int(action) if self._discrete else np.array(action, dtype=self.action_space.dtype)
        return self._act(self._batch(obs, "obs"))

    def observe(self, obs: Any, action: Any, reward: Any, next_obs: Any) -> None:
        """Learn from one round, batched for ``num_envs=N`` agents.

        Raises:
            TypeError: an action of the wrong type, such as a float or bool for a ``Discrete``
                space; non-numeric rewards or observations.
            ValueError: an action outside the agent's action space, NaN or inf in a reward or an
                observation, wrong shapes.
        """
        obs, next_obs = self._observations(obs, next_obs)
        if self.num_envs is None:
            actions = np.array([check_action(self.action_space, action)]) if self._discrete \
                else np.asarray(check_action(self.action_space, action))[None]
            rewards = self._rewards(reward, ())[None]
        else:
            actions = check_actions(self.action_space, action, self._n)
            rewards = self._rewards(reward, (self._n,))
        self._observe(obs, actions, rewards, next_obs)

    def _observations(self, obs: Any, next_obs: Any) -> tuple[np.ndarray, np.ndarray]:
        """``obs`` and ``next_obs`` as finite batches (N, ...) of one shape."""
        if self.num_envs is None:
            obs, next_obs = check_finite(obs, "obs")[None], check_finite(next_obs, "next_obs")[None]
        else:
            obs, next_obs = self._batch(obs, "obs"), self._batch(next_obs, "next_obs")
        if next_obs.shape != obs.shape:
            raise ValueError(f"obs and next_obs must have one shape, got obs {obs.shape[1:]} "
                             f"and next_obs {next_obs.shape[1:]}")
        return obs, next_obs

    def _batch(self, x: Any, name: str) -> np.ndarray:
        """``x`` as a finite array with leading dimension N."""
        arr = check_finite(x, name)
        if arr.shape[:1] != (self._n,):
            raise ValueError(f"{name} must have leading dimension num_envs={self._n}, "
                             f"got shape {arr.shape}")
        return arr

    @staticmethod
    def _rewards(reward: Any, shape: tuple[int, ...]) -> np.ndarray:
        """``reward`` as a finite float64 array of ``shape``."""
        if type(reward) is float and not shape:  # a Gymnasium env's reward, without numpy
            if not math.isfinite(reward):
                raise ValueError("reward must be finite (NaN or inf found)")
            return np.array(reward)
        name = "rewards" if shape else "reward"
        r = check_input(reward, name)
        if r.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {r.shape}")
        return r

    @property
    def privacy(self) -> Privacy | None:
        """The guarantee the agent gives; ``None`` for non-private agents."""
        if self._privacy is None:
            return None
        return dataclasses.replace(self._privacy, secure=self.secure)

    def commitment(self) -> np.ndarray:
        """Rounds (N,) the agent commits to playing its current action; 1 for per-round agents."""
        return np.ones(self._n, dtype=np.int64)

    def __repr__(self) -> str:
        priv = f", {self.privacy}" if self.privacy else ""
        return f"{type(self).__name__}(n_arms={self.n_arms}, num_envs={self.num_envs}{priv})"

    # ------------------------------------------------------------------ to implement
    @abstractmethod
    def _init_state(self, n: int) -> None:
        """Create the learning state for ``n`` runs; ``__init__`` and ``reset`` call it."""

    @abstractmethod
    def _act(self, obs: np.ndarray) -> np.ndarray:
        """The actions (n, ...) for a checked batch of observations (n, ...)."""

    @abstractmethod
    def _observe(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
                 next_obs: np.ndarray) -> None:
        """Learn from a checked batch of rounds: observations (n, ...), the actions played
        (n, ...), finite rewards (n,) and the next observations (n, ...)."""


class _PrivateMixin:
    """Validation shared by private agents: epsilon, delta and the declared reward bounds."""

    _privacy: Privacy | None = None
    epsilon: float
    delta: float
    rho: float
    lower: float
    upper: float

    def declare_privacy(self, model: str, epsilon: Any = None, delta: Any = 0.0,
                        unit: str = "reward", lower: Any = 0.0, upper: Any = 1.0, *,
                        rho: Any = None) -> None:
        """Declare the guarantee the agent gives.

        Call it in ``__init__`` before ``super().__init__``. That call builds the state, and
        with it the mechanisms that read ``epsilon`` (or ``rho``), ``delta``, ``lower`` and
        ``upper``.

        Args:
            model: one of :data:`~ldp_gym.wrappers.mechanisms.privacy.MODELS`.
            epsilon: the privacy budget of (epsilon, delta)-DP, > 0 and finite.
            delta: the delta of an (epsilon, delta) guarantee, in [0, 1).
            unit: what one user's data is, such as ``"reward"`` or ``"user"``, as
                :class:`~ldp_gym.wrappers.mechanisms.privacy.Privacy` states it.
            lower: the declared lower bound of the protected values.
            upper: the declared upper bound; the agent clips to ``[lower, upper]`` before
                any release.
            rho: instead of ``epsilon``, the budget of a rho-zCDP guarantee, > 0 and finite.
                The agent then has a ``rho`` attribute and no ``epsilon``.

        Raises:
            TypeError, ValueError: a parameter that is not a valid value, named.
        """
        lo, hi = check_bounds(lower, upper)
        if rho is not None:
            if epsilon is not None:
                raise ValueError("give epsilon (DP) or rho (zCDP), not both")
            self.rho = check_real("rho", rho, low=0.0)
            self.delta = 0.0  # no epsilon attribute: a zCDP agent has none to report
            self._privacy = Privacy(model, unit=unit, rho=self.rho)
        else:
            eps = check_epsilon(epsilon)
            d = check_delta(delta, allow_zero=True)
            self.epsilon, self.delta = eps, d
            self._privacy = Privacy(model, eps, d, unit)
        self.lower, self.upper = lo, hi


class LocalDPAgent(_PrivateMixin, Agent):
    """An agent under local DP: a user side and a server side in one object.

    * user side: :meth:`act`, on the raw context and the server's public state, and
      :meth:`local_report`. It sees the round's whole feedback: observation,
      action, reward, next observation. It builds the message, privatised with
      mechanisms from :mod:`ldp_gym.wrappers.mechanisms`;
    * server side: :meth:`update` sees the report and nothing else.
      :meth:`public_state` is what the server broadcasts, read-only through
      :func:`readonly`.

    ``observe`` is written once here: ``report = local_report(...)``, then
    ``update(report)``. A compiled agent may run both steps in one call of the
    same code, as the LDP contextual agents do. ``last_report`` keeps the last batched
    message, so a lab can show what the server received. It is ``None`` before the first
    round and after :meth:`reset`.
    """

    last_report: dict[str, np.ndarray] | None = None

    @override
    def reset(self, seed: Any = None) -> None:
        super().reset(seed)
        self.__dict__.pop("last_report", None)  # the class's None again

    #: whether :meth:`local_report` reads its ``public_state`` argument (``observe`` does not
    #: build the broadcast, e.g. a UCB index, for a user side that ignores it: it gets ``{}``)
    report_reads_public_state = True

    def _observe(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
                 next_obs: np.ndarray) -> None:
        public = self.public_state() if self.report_reads_public_state else {}
        report = self._report(obs, actions, rewards, next_obs, public)  # inputs checked by observe
        self.last_report = report
        self._fold(report)  # built just now by the user side: no second check

    @abstractmethod
    def public_state(self) -> dict[str, np.ndarray]:
        """What the server broadcasts to users, as batched read-only arrays from :func:`readonly`."""
        raise NotImplementedError

    def _user_inputs(self, obs: Any, actions: Any, rewards: Any,
                     next_obs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The inputs of :meth:`local_report` checked as ``observe`` checks a batch.

        It wants finite ``obs`` and ``next_obs`` (N, ...) of one shape, actions of the action
        space and finite rewards (N,). Otherwise it raises one ``TypeError``/``ValueError``
        naming the argument. The observations come back as float64, which the compiled user
        sides read.
        """
        obs, next_obs = (self._batch(x, name).astype(np.float64, copy=False)
                         for x, name in ((obs, "obs"), (next_obs, "next_obs")))
        if next_obs.shape != obs.shape:
            raise ValueError(f"obs and next_obs must have one shape, got obs {obs.shape[1:]} "
                             f"and next_obs {next_obs.shape[1:]}")
        return obs, check_actions(self.action_space, actions, self._n), \
            self._rewards(rewards, (self._n,)), next_obs

    def _broadcast(self, public_state: Any) -> dict[str, np.ndarray]:
        """``public_state`` checked against the server's own broadcast.

        It must have the same parts, shapes and dtypes, and finite numbers. A user side that
        indexes with it checks more.
        """
        own = self.public_state()
        schema = {k: Part(v.shape, "real" if v.dtype.kind == "f" else
                          "mask" if v.dtype.kind == "b" else "int",
                          -(2 ** 62), v.shape[-1] if v.dtype.kind == "b" and v.ndim else 2 ** 62)
                  for k, v in own.items()}
        state = check_message(public_state, schema, "public_state")
        return {k: v.astype(own[k].dtype, copy=False) for k, v in state.items()}

    def local_report(self, obs: Any, actions: Any, rewards: Any, next_obs: Any,
                     public_state: Any) -> dict[str, np.ndarray]:
        """User side: the privatised message of a batch of users.

        It is built from the round's feedback and the server's broadcast. The feedback
        includes ``next_obs``, as semi-bandit and two-point settings report on it. The inputs
        are checked as ``observe`` checks them, by :meth:`_user_inputs`. Where the user side
        reads the broadcast, :meth:`_broadcast` checks it. Then :meth:`_report` runs.
        """
        return self._report(*self._user_inputs(obs, actions, rewards, next_obs),
                            self._broadcast(public_state) if self.report_reads_public_state
                            else public_state)

    @abstractmethod
    def _report(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
                next_obs: np.ndarray, public_state: Any) -> dict[str, np.ndarray]:
        """:meth:`local_report` on checked inputs and broadcast.

        ``observe`` calls it directly, with the server's own :meth:`public_state`.
        """
        raise NotImplementedError

    def update(self, report: dict[str, np.ndarray]) -> None:
        """Server side: fold a batch of reports into the server's state.

        The server trusts no message. Before any state changes, the report is checked
        completely against :meth:`report_schema` by :func:`~ldp_gym.validation.check_message`.
        Every part must be present and none other, numeric, of its shape, finite and
        inside the schema's bounds. Then :meth:`_consistent` checks it. A refused report raises one
        ``TypeError`` or ``ValueError`` naming the part and leaves the state bitwise
        unchanged.
        """
        clean = check_message(report, self.report_schema())
        self._consistent(clean)
        self._fold(clean)

    @abstractmethod
    def report_schema(self) -> dict[str, Part]:
        """The message schema of a batch of reports, as the server checks it.

        It maps each part's name to its :class:`~ldp_gym.validation.Part`.
        """
        raise NotImplementedError

    def _consistent(self, report: dict[str, np.ndarray]) -> None:
        """Checks of a schema-valid report against the server's state; none by default."""

    @abstractmethod
    def _fold(self, report: dict[str, np.ndarray]) -> None:
        """Fold a checked batch of reports into the server's state."""
        raise NotImplementedError


class GlobalDPAgent(_PrivateMixin, Agent):
    """An agent under global DP: it sees raw rewards but acts only on privatised releases."""


class JointDPAgent(GlobalDPAgent):
    """An agent under joint DP (Kearns et al. 2014; the billboard model of Shariff and Sheffet
    2018): it sees raw data and publishes private releases; each user's action is a function
    of that user's own data and the releases, so the actions of all other users are private
    (``model="joint"``)."""


class ShuffleDPAgent(_PrivateMixin, Agent):
    """An agent under shuffle DP: users randomise locally, a trusted shuffler permutes each
    batch, and the learner acts only on what it computes from the shuffled batches.

    The object holds the three parties, as a :class:`LocalDPAgent` holds two. Its guarantee
    is that of the batches (``model="shuffle"``); a single user's message alone is only
    weakly private, so the local-DP checks do not apply.
    """


class DistributedDPAgent(_PrivateMixin, Agent):
    """An agent under distributed DP: users add shares of noise to their messages, a secure
    aggregation protocol reveals only each batch's sum, and the learner acts only on the sums.

    No party is trusted (``model="distributed"``); the guarantee is that of the batches' sums,
    as :mod:`ldp_gym.wrappers.mechanisms.distributed` states it.
    """


def trust_model(cls: type) -> str | None:
    """The trust model of an agent class: ``"local"``, ``"shuffle"``, ``"distributed"``,
    ``"joint"`` or ``"global"``, from its base class; ``None`` for a non-private one."""
    for base, name in ((LocalDPAgent, "local"), (ShuffleDPAgent, "shuffle"),
                       (DistributedDPAgent, "distributed"), (JointDPAgent, "joint"),
                       (GlobalDPAgent, "global")):
        if issubclass(cls, base):
            return name
    return None


