"""Linear and generalized-linear contextual bandit agents: non-private and local DP.

Non-private: :class:`LinUCB`, :class:`GLOC`, :class:`GreedyOLS`, :class:`GreedySGD`.
Local DP, single parameter: :class:`LDPLinUCB` is Zheng et al. 2020 Alg 5, which Han et al.
call LDP-UCB; :class:`LDPGLOC` is Zheng Alg 3; :class:`LDPOLS` and :class:`LDPSGD` are
Han et al. 2021 Alg 1. Local DP, multi parameter: :class:`LDPMultiOLS` and
:class:`LDPMultiSGD` are Han Alg 2. LDP-LinUCB and LDP-GLOC run on the multi-parameter
envs through block contexts ``x (x) e_a`` in R^{dK}. Any agent here does so; see ``features``.

Every agent is batch-first: its statistics are stacks of d x d matrices over
runs, solved together. The LDP agents add a full noise matrix every round, so
they solve the stacked systems rather than keeping rank-one inverses.

Bounds are declared, never read from data: contexts ``||x|| <= context_bound``
(C_B, default 1) and rewards ``|r| <= reward_bound``. The reward bound is c_r, which
``from_env`` reads from the env. The user side clips to them before anything is released.

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> from ldp_gym.agents import LDPSGD
    >>> env = gym.make("LDPLinearBandit-v0")
    >>> agent = LDPSGD.from_env(env, epsilon=1.0, seed=0)
    >>> obs, _ = env.reset(seed=0)
    >>> a = agent.act(obs)
    >>> agent.observe(obs, a, 0.5, obs)
    >>> agent.last_report["gradient"].shape
    (1, 2)
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any

import numba
import numpy as np
from scipy import special

from ldp_gym.envs.glm import LINKS
from ldp_gym.protocols import BlockPlay
from ldp_gym.validation import (
    Part,
    check_action,
    check_actions,
    check_delta,
    check_finite,
    check_int,
    check_real,
    check_share,
    plain_floats,
)
from ldp_gym.wrappers.mechanisms import GaussianStatistics, L2BallMechanism
from ldp_gym.wrappers.mechanisms.noise import NoiseStream, tracing

from . import glm_kernels
from .base import Agent, LocalDPAgent, readonly

__all__ = ["GLOC", "LDPGLOC", "LDPOLS", "LDPSGD", "GreedyOLS", "GreedySGD", "LDPLinUCB",
           "LDPMultiOLS", "LDPMultiSGD", "LinUCB", "gaussian_sigma"]

#: inverse link, its derivative's infimum on [-1, 1] (mu of Zheng et al.) and sup |g| on [-1, 1]
LINK_FUNCTIONS = {
    "identity": (np.positive, 1.0, 1.0),
    "logistic": (special.expit, float(special.expit(1.0) * special.expit(-1.0)), 1.0),
    "poisson": (np.exp, math.exp(-1.0), math.e),
}
#: the links' codes in the compiled kernels
LINK_CODES = {name: code for code, name in enumerate(LINKS)}


def gaussian_sigma(epsilon: float, delta: float) -> float:
    """``sigma_{eps,delta} = 2 sqrt(2 ln(1.25/delta)) / eps`` (Han et al. 2021, eq. 3-4)."""
    return 2.0 * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


class ContextualAgent(Agent):
    """Base of the contextual agents: features, bounds and the link function.

    Args:
        n_arms: K.
        dim: d, the context dimension.
        reward_bound: c_r, declared bound on |reward|.
        context_bound: C_B, declared bound on ||x||.
        link: ``identity``, ``logistic`` or ``poisson``; ``from_env`` takes the env's.
        multi_parameter: contexts are one (d,) vector per round. Single-parameter agents
            then work on block contexts ``x (x) e_a`` in R^{dK}; the Han Alg 2 agents
            keep one parameter per arm.
    """

    test_env = "LDPLinearBandit-v0"
    #: single-parameter algorithms work on block contexts in the multi-parameter setting
    blocks = True

    def __init__(self, n_arms: int, *, dim: int = 2, reward_bound: float = 1.0,
                 context_bound: float = 1.0, link: str = "identity",
                 multi_parameter: bool = False, **kwargs: Any):
        self.dim = check_int("dim", dim)
        # declared bounds up to 1e50: their squares and products with the noise scale stay
        # finite (a bound of 1e200 overflowed in the calibration)
        self.reward_bound = check_real("reward_bound", reward_bound, low=0.0, high=1e50,
                                       high_open=False)
        self.context_bound = check_real("context_bound", context_bound, low=0.0, high=1e50,
                                        high_open=False)
        if link not in LINK_FUNCTIONS:
            raise ValueError(f"link must be one of {tuple(LINK_FUNCTIONS)}, got {link!r}")
        self.link = link
        self.g, self.g_min_slope, self.g_max = LINK_FUNCTIONS[link]
        self.multi_parameter = bool(multi_parameter)
        k = check_int("n_arms", n_arms)
        self.D = self.dim * k if self.multi_parameter and self.blocks else self.dim
        super().__init__(n_arms, **kwargs)

    @classmethod
    def env_params(cls, env: Any, is_vec: bool) -> dict[str, Any]:
        setting = getattr(env.unwrapped, "setting", None) or {}
        if "dim" not in setting or "multi_parameter" not in setting:
            raise ValueError(f"env: {cls.name} needs a contextual env (LDPLinearBandit-v0, "
                             f"LDPGLMBandit-v0 or their multi-parameter variants)")
        return {k: setting[k] for k in ("dim", "reward_bound", "link", "multi_parameter")}

    def features(self, obs: np.ndarray) -> np.ndarray:
        """Candidate feature vectors (N, K, D): the K contexts, or the block contexts."""
        n = obs.shape[0]
        if not self.multi_parameter:
            return obs.reshape(n, self.n_arms, self.dim).astype(np.float64)
        blocks = np.zeros((n, self.n_arms, self.n_arms, self.dim))
        idx = np.arange(self.n_arms)
        blocks[:, idx, idx, :] = obs.reshape(n, 1, self.dim)
        return blocks.reshape(n, self.n_arms, self.D)

    def _check_obs(self, obs: np.ndarray, rounds: int | None, one: bool = False) -> np.ndarray:
        """Check that ``obs`` has shape (N, width), or (N, rounds + 1, width) given ``rounds``.

        ``one`` marks a single-run agent's observation, given as (width,) to act or observe;
        the error then names that shape."""
        width = self.dim if self.multi_parameter else self.n_arms * self.dim
        want = (self._n, width) if rounds is None else (self._n, rounds + 1, width)
        if obs.shape != want:
            if one and self.num_envs is None:
                raise ValueError(f"obs must have shape ({width},) (K={self.n_arms}, "
                                 f"d={self.dim}), got {obs.shape[1:]}")
            raise ValueError(f"obs must have shape {want} (N={self._n}, K={self.n_arms}, "
                             f"d={self.dim}), got {obs.shape}")
        return obs

    def _block_inputs(self, obs: np.ndarray,
                      rewards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A block's checked inputs as the kernels take them: the observations (N, L or L + 1,
        width), of which the kernels read the first L rounds, and every arm's rewards (N, L, K)
        float64, both C-contiguous (no copy of the env's arrays)."""
        rewards = check_finite(rewards, "rewards")
        length = rewards.shape[1] if rewards.ndim == 3 else -1
        if rewards.shape != (self._n, length, self.n_arms):
            raise ValueError(f"rewards must have shape (N, L, K) with N={self._n}, "
                             f"K={self.n_arms}, got {rewards.shape}")
        obs = self._check_obs(check_finite(obs, "obs"), length)
        return (np.ascontiguousarray(obs),
                np.ascontiguousarray(rewards, dtype=np.float64))

    def _chosen(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        return self.features(obs)[self._rows, actions]


# =========================================================================== non-private


#: no rewards: the choose step reads none
_NO_REWARDS = np.zeros((1, 1, 1))


class _Baseline(ContextualAgent):
    """The non-private agents: one compiled kernel,
    :func:`~ldp_gym.agents.glm_kernels.ridge_rounds`, runs every path.

    ``act`` runs its choose step. ``observe`` runs its update step, from the chosen context
    and reward. ``play_block`` runs both over a block of rounds drawn ahead. So the paths give
    bitwise the same actions and state from the same seed. Ridge regression keeps a rank-one
    Sherman-Morrison inverse, ``inv`` (N, D, D), starting at ``I / reg``."""

    block_play = BlockPlay.PLAYS_BLOCKS
    #: the agent's code in the kernel
    _kind: int

    def __init__(self, n_arms, *, reg: float = 1.0, **kwargs):
        self.reg = check_real("reg", reg, low=0.0)
        super().__init__(n_arms, **kwargs)

    def _init_state(self, n):
        ridge = self._kind != glm_kernels.GREEDY_SGD
        self.t = np.zeros(n, dtype=np.int64)
        self.theta = np.zeros((n, self.D))
        self.inv = np.repeat(np.eye(self.D)[None] / self.reg, n, axis=0) if ridge \
            else np.zeros((n, 0, 0))
        self.u = np.zeros((n, self.D)) if ridge else np.zeros((n, 0))
        self.theta_hat = np.zeros((n, self.D)) if self._kind == glm_kernels.GLOC \
            else np.zeros((n, 0))
        self._rule_args = self._rule()  # the constants, built once (not every round)

    def _rule(self) -> tuple:
        """The kernel's ``rule``: ``(k_arms, kind, beta_params, link, zeta, step)``."""
        return (self.n_arms, self._kind, np.zeros(4), LINK_CODES[self.link], 0.0, 0.0)

    def _rounds(self, mode: int, obs: np.ndarray, rewards: np.ndarray,
                forced: np.ndarray) -> np.ndarray:
        actions = np.empty(forced.shape, dtype=np.int64)
        glm_kernels.ridge_rounds(mode, obs, rewards, forced, self._rule_args,
                                 (self.t, self.inv, self.u, self.theta, self.theta_hat), actions)
        return actions

    def _round_obs(self, obs: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self._check_obs(obs, None, one=True),
                                    dtype=np.float64)[:, None]

    def _act(self, obs):
        return self._rounds(glm_kernels.CHOOSE, self._round_obs(obs), _NO_REWARDS,
                            np.full((self._n, 1), -1))[:, 0]

    def _observe(self, obs, actions, rewards, next_obs):
        self._rounds(glm_kernels.UPDATE, self._round_obs(obs),
                     np.ascontiguousarray(rewards, dtype=np.float64).reshape(self._n, 1, 1),
                     np.asarray(actions, dtype=np.int64).reshape(self._n, 1))

    def play_block(self, obs: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Play ``L`` consecutive rounds whose contexts (N, L + 1, width) and every arm's
        rewards (N, L, K) are drawn ahead, by the kernel of ``act`` and ``observe``: bitwise
        the rounds played one by one. Returns the actions (N, L)."""
        obs, rewards = self._block_inputs(obs, rewards)
        return self._rounds(glm_kernels.CHOOSE | glm_kernels.UPDATE, obs, rewards,
                            np.full(rewards.shape[:2], -1))


class GreedyOLS(_Baseline):
    """Greedy ridge regression: play ``argmax_a x_a^T theta``, theta the ridge estimate.

    The non-private counterpart of LDP-OLS: Han et al. 2021, Alg 1 with eq. 3-4
    without noise. Privacy: none.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import GreedyOLS
        >>> env = gym.make("LDPLinearBandit-v0", max_episode_steps=100)
        >>> agent = GreedyOLS.from_env(env, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.theta.shape, type(action)
        ((1, 2), <class 'int'>)
    """

    name = "Greedy-OLS"
    _kind = glm_kernels.GREEDY_OLS


class LinUCB(_Baseline):
    """LinUCB / OFUL (Abbasi-Yadkori et al. 2011, Thm 2): ``x^T theta + beta_t ||x||_{V^-1}``.

    ``beta_t = R sqrt(D log((1 + t/lambda)/alpha)) + sqrt(lambda) S`` with S = 1
    (``||theta*|| <= 1``), R = ``noise_scale`` and alpha = 0.05. The default R = 0.5 is
    the sub-Gaussian constant of rewards in an interval of length 1. Privacy: none.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import LinUCB
        >>> env = gym.make("LDPLinearBandit-v0", dim=3, n_arms=4, max_episode_steps=100)
        >>> agent = LinUCB.from_env(env, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.theta.shape, agent.inv.shape, int(agent.t[0])
        ((1, 3), (1, 3, 3), 10)
    """

    name = "LinUCB"
    _kind = glm_kernels.LINUCB

    def __init__(self, n_arms, *, noise_scale: float = 0.5, alpha: float = 0.05, **kwargs):
        self.noise_scale = check_real("noise_scale", noise_scale, low=0.0)
        self.alpha = check_real("alpha", alpha, low=0.0, high=1.0)
        super().__init__(n_arms, **kwargs)

    def _rule(self):
        beta = np.array([self.noise_scale, self.D, self.reg, self.alpha], dtype=np.float64)
        return (self.n_arms, self._kind, beta, LINK_CODES[self.link], 0.0, 0.0)


class _StepSize(ContextualAgent):
    """The step constant of the SGD agents, ``eta_t = step / t``. The default is D, the
    inverse smallest eigenvalue of E[x x^T] for contexts uniform on the sphere."""

    def __init__(self, n_arms, *, step: float | None = None, **kwargs):
        self.step = None if step is None else check_real("step", step, low=0.0)
        super().__init__(n_arms, **kwargs)

    @property
    def step_size(self) -> float:
        return float(self.D) if self.step is None else self.step


class GreedySGD(_StepSize, _Baseline):
    """Greedy SGD on the GLM loss: ``theta -= eta_t (g(x^T theta) - r) x``, ``eta_t = step / t``.

    The non-private counterpart of LDP-SGD: Han et al. 2021, eq. 5-6 without
    the l2-ball mechanism. Default ``step = D``, the inverse smallest
    eigenvalue of E[x x^T] for contexts uniform on the sphere. Privacy: none.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import GreedySGD
        >>> env = gym.make("LDPGLMBandit-v0", max_episode_steps=100)    # logistic link
        >>> agent = GreedySGD.from_env(env, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.link, agent.step_size, agent.theta.shape
        ('logistic', 2.0, (1, 2))
    """

    name = "Greedy-SGD"
    _kind = glm_kernels.GREEDY_SGD

    def _rule(self):
        return (self.n_arms, self._kind, np.zeros(4), LINK_CODES[self.link], 0.0,
                float(self.step_size))


class GLOC(_Baseline):
    """GLOC (Jun et al. 2017) with projected online gradient descent as the online learner.

    The non-private counterpart of Zheng et al.'s Alg 3: ``theta^`` by OGD on
    the GLM loss projected on the unit ball (step ``zeta = step/sqrt(T)``),
    ``z = x^T theta^``, ridge regression of z on x gives ``theta~``; play
    ``argmax <theta~, x> + beta_t ||x||_{V^-1}`` with
    ``beta_t = beta_scale sqrt(D log(1 + t))``. Privacy: none.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> import numpy as np
        >>> from ldp_gym.agents import GLOC
        >>> env = gym.make("LDPGLMBandit-v0", max_episode_steps=100)
        >>> agent = GLOC.from_env(env, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.theta_hat.shape, bool(np.linalg.norm(agent.theta_hat) <= 1.0)  # projected on the ball
        ((1, 2), True)
    """

    name = "GLOC"
    needs_horizon = True
    _kind = glm_kernels.GLOC

    def __init__(self, n_arms, *, step: float = 1.0, beta_scale: float = 1.0, **kwargs):
        self.step = check_real("step", step, low=0.0)
        self.beta_scale = check_real("beta_scale", beta_scale, low=0.0)
        super().__init__(n_arms, **kwargs)

    def _rule(self):
        beta = np.array([self.beta_scale, self.D, 0.0, 0.0], dtype=np.float64)
        return (self.n_arms, self._kind, beta, LINK_CODES[self.link],
                self.step / math.sqrt(self.horizon), 0.0)


# =========================================================================== local DP


class _LDPContextual(LocalDPAgent, ContextualAgent):
    """Shared by the LDP contextual agents: the budget, and every path through one kernel.

    Each algorithm is one compiled kernel (:mod:`ldp_gym.agents.glm_kernels`) of three
    steps. ``choose`` runs on the user side. ``report`` runs on the user side too: it builds
    the message from the mechanisms' compiled transforms and the noise they drew. ``update``
    runs on the server, from the message only. ``act`` runs its choose step, ``local_report``
    its report step, ``update`` its update step, and ``play_block`` all three over a block
    of rounds drawn ahead. On every path the messages pass through a buffer between report
    and update, and ``last_report`` is the last round's message.
    Subclasses declare ``_message_spec``, ``_noise``, ``_kernel_call`` and ``_record``.

    The Gymnasium path (``act``, then ``observe``) calls the kernel on buffers built once
    per state (:class:`_RoundBuffers`). Each input is validated once and copied into
    them, and the round's noise is copied from the mechanism's streams. A round makes two
    calls, choose and then report with update, and each reuses one argument tuple.
    """

    test_params = {"epsilon": 1.0, "delta": 0.01}

    @classmethod
    def _unit_test_params(cls):
        # the default, and clipping bounds below the envs' with another budget
        return [cls.test_params, {**cls.test_params, "epsilon": 0.5, "context_bound": 0.7,
                                  "reward_bound": 0.4}]

    #: :meth:`play_block` is available: the runner plays blocks of rounds drawn ahead
    block_play = BlockPlay.PLAYS_BLOCKS
    #: the server state's arrays that users read (``public_state``)
    public_names: tuple[str, ...] = ()
    #: the mechanism of the messages (set by ``_init_state``); its ``streams`` give the noise
    mechanism: Any
    #: the buffers reused by every per-round call (:attr:`_round_args`), built lazily
    _round: _RoundBuffers | None = None
    #: the message buffer of the last round or block (``last_report`` reads its last round)
    _last_msgs: dict[str, np.ndarray] | None = None
    #: the block path's message buffers, reused from block to block (:meth:`_block_buffers`)
    _block_msgs: dict[str, np.ndarray] | None = None

    def __init__(self, n_arms, *, epsilon: float, delta: float = 0.01, alpha: float = 0.05,
                 **kwargs):
        self.alpha = check_real("alpha", alpha, low=0.0, high=1.0)
        self._budget = (epsilon, delta)
        super().__init__(n_arms, **kwargs)
        width = self.dim if self.multi_parameter else self.n_arms * self.dim
        #: one observation's shape, or the batch's: the inputs the per-round path copies
        self._obs_shape = (width,) if self.num_envs is None else (self._n, width)

    def _set_budget(self, pure: bool) -> None:
        eps, delta = self._budget
        delta = check_delta(delta)  # validated even where unused (a pure mechanism)
        delta = 0.0 if pure else delta
        self.declare_privacy("local", eps, delta, "user", -self.reward_bound, self.reward_bound)

    # ------------------------------------------------------------------ declared per algorithm
    @abstractmethod
    def _message_spec(self) -> dict[str, tuple[tuple[int, ...], Any]]:
        """Each message part's name, mapped to the shape of one user's part and its dtype.

        Names starting with ``_`` are kept for the replay trace, not sent."""
        raise NotImplementedError

    @abstractmethod
    def _noise(self, rounds: int) -> dict[str, np.ndarray]:
        """The mechanisms' noise for ``rounds`` rounds of every run, (rounds, N, ...), by the
        names of the mechanism's streams (``self.mechanism.streams``) they come from."""
        raise NotImplementedError

    @abstractmethod
    def _kernel_call(self, mode: int, obs: np.ndarray, rewards: np.ndarray, forced: np.ndarray,
                     state: dict[str, np.ndarray], noise: dict[str, np.ndarray],
                     msgs: dict[str, np.ndarray], actions: np.ndarray) -> tuple[Any, tuple]:
        """The algorithm's kernel and its arguments for these arrays."""
        raise NotImplementedError

    def _bounds(self) -> tuple[float, float]:
        """The user's declared data bounds, the kernels' ``clip`` argument."""
        return self.context_bound, self.reward_bound

    def _kernel(self, mode: int, obs: np.ndarray, rewards: np.ndarray, forced: np.ndarray,
                state: dict[str, np.ndarray], noise: dict[str, np.ndarray],
                msgs: dict[str, np.ndarray], actions: np.ndarray) -> None:
        """Run the algorithm's kernel on ``state``, updated in place where ``mode`` updates."""
        kernel, args = self._kernel_call(mode, obs, rewards, forced, state, noise, msgs, actions)
        kernel(*args)

    @abstractmethod
    def _record(self, msgs: dict[str, np.ndarray], noise: dict[str, np.ndarray]) -> None:
        """Trace the releases of ``msgs`` for the replay test."""
        raise NotImplementedError

    @abstractmethod
    def _state(self) -> dict[str, np.ndarray]:
        """The server's state arrays by the kernel's names: the live arrays, which the kernels use."""
        raise NotImplementedError

    # ------------------------------------------------------------------ every path
    def public_state(self) -> dict[str, np.ndarray]:
        """What the server broadcasts: read-only views of its estimates."""
        state = self._state()
        return readonly(**{name: state[name] for name in self.public_names})

    def _buffers(self, rounds: int) -> dict[str, np.ndarray]:
        return {name: np.zeros((rounds, self._n) + shape, dtype)
                for name, (shape, dtype) in self._message_spec().items()}

    def _block_buffers(self, rounds: int) -> dict[str, np.ndarray]:
        """The message buffers of a block of ``rounds`` rounds, kept for the next block of the
        same length. The kernels write every round's messages before they read them, so the
        buffers need no clearing. Fresh (L, N, d, d) buffers cost their pages every block: at
        d = 20, N = 100, 172 MB a block."""
        msgs = self._block_msgs
        if msgs is None or next(iter(msgs.values())).shape[0] != rounds:
            msgs = self._block_msgs = self._buffers(rounds)
        return msgs

    def reset(self, seed: Any = None) -> None:
        self._round = None
        self._last_msgs = self._block_msgs = None
        super().reset(seed)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_round"] = None  # compiled entry points and views: rebuilt on the next round
        return state

    @property
    def _round_args(self) -> _RoundBuffers:
        """The buffers and kernel calls of the Gymnasium path, built once per state."""
        r = getattr(self, "_round", None)
        if r is None:
            r = self._round = _RoundBuffers(self)
        return r

    @property
    def last_report(self) -> dict[str, np.ndarray] | None:  # type: ignore[override]
        """The last round's messages (a copy), as the server received them, on every path."""
        msgs = self._last_msgs
        if msgs is None:
            return None
        return {k: v[-1].copy() for k, v in msgs.items() if not k.startswith("_")}

    def act(self, obs):
        r = self._round_args
        # float observations of the right shape are checked and loaded by the compiled round
        # call itself; anything else takes Agent.act (its checks, then _act)
        if not plain_floats(obs, self._obs_shape):
            return super().act(obs)
        if r.call(r.choose, obs, obs):
            raise ValueError("obs must be finite (NaN or inf found)")
        return int(r.actions[0, 0]) if self.num_envs is None else r.actions[:, 0].copy()

    def observe(self, obs, action, reward, next_obs):
        # Agent.observe's checks, in its order (obs, next_obs, action, reward); float
        # observations of the right shape are checked in the compiled round call, which runs
        # nothing when one is refused (and the noise copied for the round is given back)
        shape = self._obs_shape
        if not (plain_floats(obs, shape) and plain_floats(next_obs, shape)
                and obs.dtype == next_obs.dtype):
            return super().observe(obs, action, reward, next_obs)  # its checks, then _observe
        try:
            if self.num_envs is None:
                given = check_action(self.action_space, action)
                if type(reward) is not float or not math.isfinite(reward):  # a Gymnasium reward
                    reward = self._rewards(reward, ())
            else:
                given = check_actions(self.action_space, action, self._n)
                reward = self._rewards(reward, (self._n,))
        except (TypeError, ValueError):
            self._observations(obs, next_obs)  # an error in obs or next_obs comes first
            raise
        r = self._round
        if r is None:  # the first round of this state: checked before its buffers are built
            self._observations(obs, next_obs)
            r = self._round_args
        if self.num_envs is None:
            r.given[0, 0], r.rewards[0, 0, 0] = given, reward
        else:
            r.given[:, 0], r.rewards[:, 0, 0] = given, reward
        self._play_round(r, obs, next_obs)

    def _act(self, obs):
        r = self._round_args
        batch = self._loadable(obs)
        r.call(r.choose, batch, batch)
        return r.actions[:, 0].copy()

    def _loadable(self, obs: np.ndarray) -> np.ndarray:
        """A checked batch (N, width) of observations as the round call takes them: float64,
        exactly the values the kernel reads, in the shape of the per-round inputs."""
        return np.ascontiguousarray(self._check_obs(obs, None, one=True),
                                    dtype=np.float64).reshape(self._obs_shape)

    def _observe(self, obs, actions, rewards, next_obs):
        """One round on the Gymnasium path, from inputs validated by :meth:`observe`."""
        r = self._round_args
        r.given[:, 0] = actions
        r.rewards[:, 0, 0] = rewards
        batch = self._loadable(obs)
        self._play_round(r, batch, batch)  # next_obs was checked by Agent.observe

    def _play_round(self, r: _RoundBuffers, obs: np.ndarray, next_obs: np.ndarray) -> None:
        """The report and update steps of the kernel in one round call on the round's buffers.

        ``local_report`` then ``update`` run through the message buffer. The round's noise is
        taken from the mechanism's streams, and given back if the call refuses ``obs`` or
        ``next_obs``."""
        for stream, flat in r.noise_fill:
            stream.take_into(flat)
        status = r.call(r.play, obs, next_obs)
        if status:
            for stream, flat in r.noise_fill:
                stream.give_back(len(flat))
            raise ValueError(f"{'obs' if status == 1 else 'next_obs'} must be finite "
                             f"(NaN or inf found)")
        if tracing():
            self._record(r.msgs, r.noise)
        self._last_msgs = r.msgs

    def _report(self, obs, forced, rewards, next_obs, public_state):
        """User side: the privatised messages of a batch of users in one round, given the public
        state they read. ``next_obs``, the round's feedback, is not needed here but is checked."""
        obs = self._check_obs(obs, None)[:, None]
        rewards = rewards.reshape(self._n, 1, 1)
        state = {**self._state(), **{k: np.require(v, requirements=["C", "W"])
                                     for k, v in public_state.items()}}
        msgs, noise = self._buffers(1), self._noise(1)
        self._kernel(glm_kernels.REPORT, obs, rewards, forced.astype(np.int64)[:, None], state,
                     noise, msgs, np.empty((self._n, 1), dtype=np.int64))
        self._record(msgs, noise)
        return {k: v[0] for k, v in msgs.items() if not k.startswith("_")}

    def report_schema(self):
        """Every part of the message, with one message per run: finite, of its shape, within
        the magnitude its mechanism can release."""
        parts = getattr(self.mechanism, "parts", {})
        return {name: Part((self._n,) + shape, "int", -1, self.n_arms - 1)
                if np.dtype(dtype).kind == "i" else
                Part((self._n,) + shape, bound=self.mechanism.release_bound(
                    name if name in parts else None))
                for name, (shape, dtype) in self._message_spec().items()
                if not name.startswith("_")}

    def _fold(self, report):
        """Server side: fold a batch of messages, one per run, into the state."""
        msgs = self._buffers(1)
        for name, buf in msgs.items():
            if not name.startswith("_"):
                buf[0] = report[name]
        self._kernel(glm_kernels.UPDATE, _NO_OBS, np.zeros((self._n, 1, 1)), np.full((self._n, 1), -1),
                     self._state(), self._round_args.no_noise, msgs,
                     np.empty((self._n, 1), np.int64))

    def play_block(self, obs: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Play ``L`` consecutive rounds whose contexts and rewards are drawn ahead.

        The same kernel as the per-round methods runs choose, report and update for
        every round, with the noise of the same streams. So both paths give bitwise the
        same actions, messages and state from the same seed. The messages pass through
        a buffer, and ``last_report`` is the last round's.

        Args:
            obs: observations (N, L + 1, K d), or (N, L + 1, d) in the multi-parameter
                setting. The last one opens the next round and is unused.
            rewards: every arm's reward (N, L, K); the chosen arm's is observed.

        Returns:
            actions (N, L).
        """
        obs, rewards = self._block_inputs(obs, rewards)
        length = rewards.shape[1]
        msgs, noise = self._block_buffers(length), self._noise(length)
        actions = np.empty((self._n, length), dtype=np.int64)
        self._kernel(glm_kernels.PLAY, obs, rewards, np.full((self._n, length), -1),
                     self._state(), noise, msgs, actions)
        self._record(msgs, noise)
        self._last_msgs = msgs
        return actions


#: placeholder for the observations the update step does not read
_NO_OBS = np.zeros((1, 1, 0), dtype=np.float32)


class _RoundBuffers:
    """The Gymnasium path's arrays of one agent state, and its two round calls on them.

    The round call loads ``obs`` (N, 1, width) float64. ``given`` holds the observed actions,
    next to ``rewards``, and the choose step writes ``actions``. ``msgs`` is one round's
    message buffer. ``noise`` is one round's noise, filled from the streams through the flat
    memoryviews ``noise_fill``; the update step takes ``no_noise``. The handles ``choose``
    and ``play`` hold the kernel's arguments on them
    (:func:`~ldp_gym.agents.glm_kernels.round_call`); ``play`` runs report and update.
    :meth:`call` runs them through :func:`~ldp_gym.agents.glm_kernels.round_step`.
    """

    def __init__(self, agent: _LDPContextual):
        n = agent._n
        width = agent.dim if agent.multi_parameter else agent.n_arms * agent.dim
        self.obs = np.zeros((n, 1, width))
        self.given = np.zeros((n, 1), dtype=np.int64)
        self.rewards = np.zeros((n, 1, 1))
        self.actions = np.zeros((n, 1), dtype=np.int64)
        self.msgs = agent._buffers(1)
        empty = agent._noise(0)  # takes nothing from the streams
        self.no_noise = readonly(**{k: np.zeros((0,) * v.ndim, v.dtype) for k, v in empty.items()})
        self.noise = {k: np.zeros((1,) + v.shape[1:], v.dtype) for k, v in empty.items()}
        streams: dict[str, NoiseStream] = agent.mechanism.streams
        self.noise_fill = tuple((streams[k], v.reshape(-1).data) for k, v in self.noise.items())
        state = agent._state()
        choose = np.full((n, 1), -1, dtype=np.int64)
        kernel, args = agent._kernel_call(glm_kernels.CHOOSE, self.obs, self.rewards, choose,
                                          state, self.noise, self.msgs, self.actions)
        self.choose = glm_kernels.round_call(kernel, args)
        self.play = glm_kernels.round_call(kernel, agent._kernel_call(
            glm_kernels.REPORT | glm_kernels.UPDATE, self.obs, self.rewards, self.given, state,
            self.noise, self.msgs, self.actions)[1])
        # one compiled entry per input dtype serves both handles, which must have one type
        if isinstance(self.choose, glm_kernels.RoundCall) and \
                numba.typeof(self.choose) != numba.typeof(self.play):
            raise TypeError("the choose and play round calls must have one numba type")
        self._entries: dict[np.dtype, Any] = {}

    def call(self, handle: Any, obs: np.ndarray, next_obs: np.ndarray) -> int:
        """Run the round call of ``handle`` (``choose`` or ``play``) on ``obs`` and ``next_obs``.

        Both are arrays of one dtype that the agent's :func:`~ldp_gym.validation.plain_floats`
        accepted. Returns 0, or 1 or 2 when ``obs`` or ``next_obs`` holds a NaN or inf; then
        nothing ran."""
        entry = self._entries.get(obs.dtype)
        if entry is None:  # once per input dtype
            entry = self._entries[obs.dtype] = _bind(glm_kernels.round_step,
                                                     (handle, obs, next_obs))
        return entry(handle, obs, next_obs)


def _bind(kernel: Any, args: tuple) -> Any:
    """The compiled version of ``kernel`` that its dispatcher would pick for the types of ``args``.

    It is resolved once, since the per-round calls pass arguments of these same types every
    time; this skips the dispatcher's typing on every call. Where ``kernel`` is not a numba
    dispatcher, because JIT is disabled, the kernel itself is returned."""
    compile_ = getattr(kernel, "compile", None)
    if compile_ is None:
        return kernel
    entry = compile_(tuple(numba.typeof(a) for a in args))
    return entry if callable(entry) else kernel


def _gaussian_noise(mech: GaussianStatistics, rounds: int, n: int,
                    slots: tuple[int, ...] = ()) -> dict[str, np.ndarray]:
    return {name: mech.noise(name, (rounds, n) + slots + (part.entries,))
            for name, part in mech.parts.items()}


def _part(mech: GaussianStatistics, name: str, noise: dict[str, np.ndarray]) -> tuple:
    """A part's argument of the compiled rounds: its declared bound, drawn noise and grid."""
    part = mech.parts[name]
    return part.bound, noise[name], part.grid


def _ball(mech: L2BallMechanism, noise: dict[str, np.ndarray]) -> tuple:
    """The l2-ball mechanism's argument of the compiled rounds: its radii, its probability of
    keeping the side and its draws."""
    return (mech.radius, mech.output_radius, mech.p_keep_side, noise["direction"],
            noise["sign"], noise["side"], noise["sphere"])


def _take(arrays: dict[str, np.ndarray], *names: str) -> tuple[np.ndarray, ...]:
    """The arrays of ``names``, in that order: a kernel's state or messages argument."""
    return tuple(arrays[name] for name in names)


def _ball_noise(mech: L2BallMechanism, rounds: int, n: int,
                slots: tuple[int, ...] = ()) -> dict[str, np.ndarray]:
    lead = (rounds, n) + slots
    r = mech.draws(math.prod(lead))
    return {k: v.reshape(lead + v.shape[1:]) for k, v in r.items()}


class _NoisyRegression(_LDPContextual):
    """Server state ``V = sum (x x^T + W)``, ``u = sum (s x + xi)``; theta = (V + c_t I)^-1 u.

    The state also holds the inverse itself where the server broadcasts it, as
    ``public_names`` says. The UCB agents do, since their users' width reads it. The greedy
    LDP-OLS keeps an empty inverse and broadcasts theta only."""

    public_names: tuple[str, ...] = ("theta", "inverse", "t")

    def _init_state(self, n):
        self.V = np.zeros((n, self.D, self.D))
        self.u = np.zeros((n, self.D))
        self.theta = np.zeros((n, self.D))
        self.inv = np.repeat(np.eye(self.D)[None], n, axis=0) if "inverse" in self.public_names \
            else np.empty((n, 0, 0))
        self.t = np.zeros(n, dtype=np.int64)

    def _state(self):
        return {"V": self.V, "u": self.u, "theta": self.theta, "inverse": self.inv, "t": self.t}

    #: the regulariser after t rounds is ``shift_coef sqrt(t)`` (set by each algorithm)
    shift_coef: float
    #: the exploration coefficient's kind and parameters (``glm_kernels._beta``): greedy
    beta_kind, beta_params = 0, np.zeros(4)

    def _message_spec(self):
        return {"M": ((self.D, self.D), np.float64), "u": ((self.D,), np.float64)}

    def _noise(self, rounds):
        return _gaussian_noise(self.mechanism, rounds, self._n)

    def _kernel_call(self, mode, obs, rewards, forced, state, noise, msgs, actions):
        m = self.mechanism
        return glm_kernels.regression_rounds, (
            mode, obs, rewards, forced,
            (self.n_arms, self.beta_kind, self.beta_params, self.shift_coef), self._bounds(),
            _part(m, "M", noise), _part(m, "u", noise),
            _take(state, "t", "V", "u", "theta", "inverse"), _take(msgs, "M", "u"), actions)

    def _record(self, msgs, noise):
        for name in ("M", "u"):
            self.mechanism.record(name, msgs[name], noise[name])


class LDPOLS(_NoisyRegression):
    """LDP-OLS: Han et al. (2021), Alg 1 with the OLS mechanism and estimator (eq. 3-4).

    User: pulls ``argmax_a x_{t,a}^T theta_{t-1}``, greedy on the broadcast estimate.
    After clipping x and r to their declared bounds, it sends ``M = x x^T + W`` and
    ``u = r x + xi``. W is symmetric with entries N(0, 4 C_B^2 sigma^2), and
    xi ~ N(0, C_B^2 c_r^2 sigma^2 I), with ``sigma = 2 sqrt(2 ln(1.25/delta))/epsilon``.
    Server: ``theta_t = (sum M + c~ sqrt(t) I)^-1 sum u`` with
    ``c~ = 2 sigma (4 sqrt(d) + 2 log(2T/alpha))``. The public code omits this shift.

    Privacy: (epsilon, delta)-LDP per user, protecting the contexts, the
    chosen arm and the reward; the message is accounted as one Gaussian
    mechanism with the exact profile (:class:`GaussianStatistics`), which
    confirms the paper's claim for the noise above.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import LDPOLS
        >>> env = gym.make("LDPLinearBandit-v0", max_episode_steps=100)
        >>> agent = LDPOLS.from_env(env, epsilon=1.0, delta=0.01, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(5):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> print(agent.privacy)
        local DP, epsilon=1, delta=0.01 per user (context, action and reward)
        >>> {k: v.shape for k, v in agent.last_report.items()}    # one user's message: x x^T + W, r x + xi
        {'M': (1, 2, 2), 'u': (1, 2)}
    """

    name = "LDP-OLS"
    needs_horizon = True
    public_names = ("theta", "t")

    def _init_state(self, n):
        super()._init_state(n)
        self._set_budget(pure=False)
        s = gaussian_sigma(self.epsilon, self.delta)
        c, cr = self.context_bound, self.reward_bound
        self.mechanism = GaussianStatistics(
            self.epsilon, self.delta, {"M": ("outer", c, 2 * c * s), "u": ("vector", cr * c, c * cr * s)},
            self.D, **self.noise_source())
        self.c_tilde = 2 * s * (4 * math.sqrt(self.D) + 2 * math.log(2 * self.horizon / self.alpha))
        self.shift_coef = self.c_tilde


class LDPLinUCB(_NoisyRegression):
    """LDP-UCB for linear contextual bandits: Zheng et al. (2020), Alg 5 (appendix D).

    User: plays ``argmax theta^T x + beta_t ||x||_{(V + c_t I)^-1}`` and sends
    ``x x^T + B`` and ``y x + xi``. B is symmetric, i.i.d. N(0, sigma^2) on and above the
    diagonal, and xi ~ N(0, sigma^2 I). The budget is split evenly between
    the two releases, each calibrated classically for l2 sensitivity 2:
    ``sigma = 4 sqrt(2 ln(2.5/delta)) / epsilon``, scaled by C_B^2 and c_r C_B
    for other bounds. Server: ``V = sum(x x^T + B)``, ``u = sum(y x + xi)``,
    ``theta = (V + c_t I)^-1 u`` with ``Upsilon_t = sigma sqrt(t) (4 sqrt(d) +
    2 ln(2T/alpha))``, ``c_t = 2 Upsilon_t``,
    ``beta_t = 2 sigma sqrt(d ln T) + (sqrt(3 Upsilon_t) + sigma sqrt(d t / Upsilon_t)) d ln T``.

    Privacy: (epsilon, delta)-LDP per user, protecting the context, the chosen arm and
    the reward. The accounting is exact and joint, as in :class:`LDPOLS`.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import LDPLinUCB
        >>> env = gym.make("LDPLinearBandit-v0", max_episode_steps=100)
        >>> agent = LDPLinUCB.from_env(env, epsilon=1.0, delta=0.01, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(5):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> sorted(agent.public_state())     # what the server broadcasts
        ['inverse', 't', 'theta']
        >>> agent.public_state()["t"].tolist()
        [5]
    """

    name = "LDP-LinUCB"
    needs_horizon = True
    horizon: int  # always given (needs_horizon)
    n_releases = 2

    def _init_state(self, n):
        super()._init_state(n)
        self._set_budget(pure=False)
        k = self.n_releases
        self.sigma = 2 * math.sqrt(2 * math.log(1.25 * k / self.delta)) / (self.epsilon / k)
        c, cr = self.context_bound, self.reward_bound
        self.mechanism = GaussianStatistics(self.epsilon, self.delta, self._parts(c, cr), self.D,
                                            **self.noise_source())
        ups = self.sigma * (4 * math.sqrt(self.D) + 2 * math.log(2 * self.horizon / self.alpha))
        self.shift_coef = 2 * ups  # c_t = 2 Upsilon_t
        self._set_beta(ups)

    def _parts(self, c, cr):
        return {"M": ("outer", c, self.sigma * c**2), "u": ("vector", cr * c, self.sigma * cr * c)}

    def _set_beta(self, ups: float) -> None:
        self.beta_kind = 1
        self.beta_params = np.array([self.sigma, ups, self.D, math.log(self.horizon)])


class LDPGLOC(LDPLinUCB):
    """LDP-GLOC for generalized linear bandits: Zheng et al. (2020), Alg 3.

    User: plays ``argmax <theta~, x> + beta_t ||x||_{V~^-1}``, sets
    ``z = x^T theta^`` and sends ``x x^T + B``, ``z x + xi`` and
    ``grad l(theta^) + r`` with ``grad = (g(x^T theta^) - y) x``,
    B, xi ~ N(0, sigma^2), r ~ N(0, C^2 sigma^2 I), C = sup |g| on [-1, 1],
    ``sigma = 6 sqrt(2 ln(3.75/delta)) / epsilon`` for three releases, each at
    epsilon/3 and delta/3. Server: ``V~ += x x^T + B``, ``u~ += z x + xi``,
    ``theta~ = (V~ + c_t I)^-1 u~``, and ``theta^ <- Proj_W(theta^ - zeta (grad + r))``
    onto the unit ball W, with ``zeta = step / sqrt(T)``. The public code omits the
    projection. ``beta_t = beta_scale sqrt((C sigma / mu) sqrt(d t))`` is of the order of
    Zheng's beta_t^2, with mu = inf g' on [-1, 1].

    Privacy: (epsilon, delta)-LDP per user, protecting the context, the chosen arm and
    the reward. The three parts are accounted jointly and exactly.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import LDPGLOC
        >>> env = gym.make("LDPGLMBandit-v0", max_episode_steps=100)
        >>> agent = LDPGLOC.from_env(env, epsilon=1.0, delta=0.01, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(5):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> {k: v.shape for k, v in agent.last_report.items()}    # three releases per user
        {'M': (1, 2, 2), 'zx': (1, 2), 'grad': (1, 2)}
    """

    name = "LDP-GLOC"
    test_env = "LDPGLMBandit-v0"
    n_releases = 3
    public_names = ("theta", "inverse", "t", "theta_hat")

    def __init__(self, n_arms, *, step: float = 1.0, beta_scale: float = 1.0, **kwargs):
        self.step = check_real("step", step, low=0.0)
        self.beta_scale = check_real("beta_scale", beta_scale, low=0.0)
        super().__init__(n_arms, **kwargs)

    def _parts(self, c, cr):
        return {"M": ("outer", c, self.sigma * c**2), "zx": ("vector", c**2, self.sigma * c**2),
                "grad": ("vector", (self.g_max + cr) * c, self.g_max * self.sigma * c)}

    def _init_state(self, n):
        super()._init_state(n)
        self.theta_hat = np.zeros((n, self.D))

    def _state(self):
        return {**super()._state(), "theta_hat": self.theta_hat}

    def _set_beta(self, ups: float) -> None:
        self.beta_kind = 2
        self.beta_params = np.array([self.beta_scale * math.sqrt(
            self.g_max * self.sigma / self.g_min_slope), self.D, 0.0, 0.0])

    def _message_spec(self):
        return {"M": ((self.D, self.D), np.float64), "zx": ((self.D,), np.float64),
                "grad": ((self.D,), np.float64)}

    def _kernel_call(self, mode, obs, rewards, forced, state, noise, msgs, actions):
        m = self.mechanism
        return glm_kernels.gloc_rounds, (
            mode, obs, rewards, forced,
            (self.n_arms, self.beta_params, self.shift_coef, self.step / math.sqrt(self.horizon),
             LINK_CODES[self.link]), self._bounds(),
            _part(m, "M", noise), _part(m, "zx", noise), _part(m, "grad", noise),
            _take(state, "t", "theta_hat", "V", "u", "theta", "inverse"),
            _take(msgs, "M", "zx", "grad"), actions)

    def _record(self, msgs, noise):
        for name in ("M", "zx", "grad"):
            self.mechanism.record(name, msgs[name], noise[name])


class LDPSGD(_StepSize, _LDPContextual):
    """LDP-SGD: Han et al. (2021), Alg 1 with the SGD mechanism and estimator (eq. 5-6).

    User: pulls ``argmax_a x_{t,a}^T theta_{t-1}`` and sends
    ``Z = Psi_{eps,R}((g(x^T theta) - r) x)``, the l2-ball mechanism (Lemma 2.2)
    with ``R = 2 c_r C_B`` on the gradient clipped to that ball. The public
    code does not clip. Server: ``theta_t = theta_{t-1} - eta_t Z``,
    ``eta_t = step / t``. The paper's ``c' d / (kappa zeta p* t)`` has unknown
    constants; the default step is D, and the experiments tune it like GLOC's.

    Privacy: pure epsilon-LDP per user, protecting the context, the chosen arm and
    the reward.

    Example:
        >>> import numpy as np
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import LDPSGD
        >>> env = gym.make("LDPLinearBandit-v0", max_episode_steps=100)
        >>> agent = LDPSGD.from_env(env, epsilon=1.0, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(5):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> print(agent.privacy)
        local DP, epsilon=1 per user (context, action and reward)
        >>> z = agent.last_report["gradient"]     # on the sphere of the l2-ball mechanism
        >>> z.shape, bool(np.isclose(np.linalg.norm(z), agent.mechanism.output_radius))
        ((1, 2), True)
    """

    name = "LDP-SGD"
    test_params = {"epsilon": 1.0}
    public_names = ("theta",)

    def _init_state(self, n):
        self._set_budget(pure=True)
        self.theta = np.zeros((n, self.D))
        self.t = np.zeros(n, dtype=np.int64)
        self.mechanism = L2BallMechanism(self.epsilon, 2 * self.reward_bound * self.context_bound,
                                         self.D, **self.noise_source())

    def _state(self):
        return {"theta": self.theta, "t": self.t}

    def _message_spec(self):
        return {"gradient": ((self.D,), np.float64), "_input": ((self.D,), np.float64)}

    def _noise(self, rounds):
        return _ball_noise(self.mechanism, rounds, self._n)

    def _kernel_call(self, mode, obs, rewards, forced, state, noise, msgs, actions):
        m = self.mechanism
        return glm_kernels.sgd_rounds, (
            mode, obs, rewards, forced, (self.n_arms, LINK_CODES[self.link], self.step_size),
            self._bounds(), _ball(m, noise), _take(state, "t", "theta"),
            _take(msgs, "_input", "gradient"), actions)

    def _record(self, msgs, noise):
        self.mechanism.record(msgs["_input"])


class _HanMulti(_LDPContextual):
    """Han et al. (2021), Alg 2: warm-up, elimination (eq. 7) and synthetic updates.

    Rounds 1..K s0 pull arm ``(t mod K)``, which is public and sent in the message.
    The server folds in that arm's slot only. Afterwards the user keeps the arms with
    ``X^T theta_{Ks0,a} > max_a X^T theta_{Ks0,a} - h/2``, pulls the greedy one
    among them, and sends one message per arm: the real one for the pulled
    arm, and the message of (0, 0) for every other. Every slot is noised, so the
    server cannot tell which arm was pulled. Each slot is calibrated at
    epsilon/2 and delta/2; two slots change between neighbouring users.
    """

    test_env = "LDPMultiParamLinearBandit-v0"
    blocks = False
    public_names = ("theta", "theta_warm", "t")

    def __init__(self, n_arms, *, warmup: int = 10, gap: float = 0.5,
                 multi_parameter: bool = True, **kwargs):
        self.warmup = check_int("warmup", warmup)
        self.gap = check_real("gap", gap, low=0.0)
        if not multi_parameter:
            raise ValueError("multi_parameter must be True: Han et al.'s Alg 2 is for the "
                             "multi-parameter envs")
        super().__init__(n_arms, multi_parameter=True, **kwargs)

    def _init_state(self, n):
        self.t = np.zeros(n, dtype=np.int64)
        self.theta = np.zeros((n, self.n_arms, self.dim))
        self.theta_warm = np.zeros((n, self.n_arms, self.dim))

    def _consistent(self, report):
        """The public arm: an arm in the warm-up, -1 (hidden) after it."""
        warm = self.t < self.warmup * self.n_arms
        if ((report["arm"] >= 0) != warm).any():
            raise ValueError("report['arm'] must be the public arm (0 to K-1) in the warm-up "
                             "and -1 after it")


class LDPMultiOLS(_HanMulti):
    """LDP-OLS, multi parameter: Han et al. (2021), Alg 2 with eq. 3-4 per arm.

    Each arm's slot is the OLS message of :class:`LDPOLS` at epsilon/2 and delta/2:
    ``sigma = sigma_{eps/2, delta/2}``, ``c~ = 2 sigma (4 sqrt(d) + 2 log(2TK/alpha))``
    (Thm 4.1). The message always has K noised slots; during the warm-up the
    arm is public and the server uses its slot only.

    Privacy: (epsilon, delta)-LDP per user. It protects the context and the reward, and
    after the warm-up the chosen arm. The K slots are accounted jointly and exactly.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import LDPMultiOLS
        >>> env = gym.make("LDPMultiParamLinearBandit-v0", max_episode_steps=100)
        >>> agent = LDPMultiOLS.from_env(env, epsilon=1.0, delta=0.01, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(5):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> {k: v.shape for k, v in agent.last_report.items()}    # one noised slot per arm
        {'M': (1, 3, 2, 2), 'u': (1, 3, 2), 'arm': (1,)}
    """

    name = "LDP-OLS (multi)"
    needs_horizon = True

    def _init_state(self, n):
        super()._init_state(n)
        self._set_budget(pure=False)
        s = gaussian_sigma(check_share("epsilon", self.epsilon, 2), self.delta / 2)
        c, cr = self.context_bound, self.reward_bound
        # K slots; neighbours change one slot fully (same arm) or two between data and zero
        # (arm changed): the mechanism accounts for both
        self.mechanism = GaussianStatistics(
            self.epsilon, self.delta, {"M": ("outer", c, 2 * c * s), "u": ("vector", cr * c, c * cr * s)},
            self.dim, slots=self.n_arms, **self.noise_source())
        self.c_tilde = 2 * s * (4 * math.sqrt(self.dim) + 2 * math.log(2 * self.horizon * self.n_arms
                                                                        / self.alpha))
        self.V = np.zeros((n, self.n_arms, self.dim, self.dim))
        self.u = np.zeros((n, self.n_arms, self.dim))
        self.pulls = np.zeros((n, self.n_arms), dtype=np.int64)

    def _state(self):
        return {"t": self.t, "theta_warm": self.theta_warm, "V": self.V, "u": self.u,
                "pulls": self.pulls, "theta": self.theta}

    def _message_spec(self):
        k, d = self.n_arms, self.dim
        return {"M": ((k, d, d), np.float64), "u": ((k, d), np.float64), "arm": ((), np.int64)}

    def _noise(self, rounds):
        return _gaussian_noise(self.mechanism, rounds, self._n, (self.n_arms,))

    def _kernel_call(self, mode, obs, rewards, forced, state, noise, msgs, actions):
        m = self.mechanism
        return glm_kernels.multi_ols_rounds, (
            mode, obs, rewards, forced, (self.warmup * self.n_arms, self.gap, self.c_tilde),
            self._bounds(), _part(m, "M", noise), _part(m, "u", noise),
            _take(state, "t", "theta_warm", "V", "u", "pulls", "theta"),
            _take(msgs, "M", "u", "arm"), actions)

    def _record(self, msgs, noise):
        for name in ("M", "u"):
            self.mechanism.record(name, msgs[name], noise[name])


class LDPMultiSGD(_StepSize, _HanMulti):
    """LDP-SGD, multi parameter: Han et al. (2021), Alg 2 with eq. 5-6 per arm.

    Each arm's slot is the l2-ball message of the gradient at its own
    parameter, with epsilon/2. The synthetic slots carry the zero gradient,
    noised like every other. The step is ``eta = step / n_a``, with n_a the arm's
    number of updates: Thm 4.1's schedule up to its constants.

    Privacy: pure epsilon-LDP per user: two slots change between
    neighbours, each epsilon/2.

    Measured (``han2021-multi``): it does not learn within 1e5 rounds. The
    l2-ball report has norm ``r`` whatever its input: r = 14.1 at epsilon/2 = 0.5 and
    d = 2, and 3.45 even as epsilon grows. So every synthetic slot moves an arm's
    parameter by ``step r / n`` with no signal, and a greedy choice never pulls
    an arm whose parameter has drifted low: the arm is locked out. Longer
    warm-ups, of 300 and 1000 rounds per arm, and no elimination did not change
    this at 2e4 rounds. The public code sized one l2-ball draw for d on the
    whole dK vector. That adds much less noise, and does not give the privacy claimed.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import LDPMultiSGD
        >>> env = gym.make("LDPMultiParamGLMBandit-v0", max_episode_steps=100)
        >>> agent = LDPMultiSGD.from_env(env, epsilon=1.0, warmup=2, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(3):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.last_report["arm"].tolist(), agent.last_report["gradient"].shape   # warm-up: arm t mod K
        ([2], (1, 3, 2))
    """

    name = "LDP-SGD (multi)"
    test_params = {"epsilon": 1.0}

    def _init_state(self, n):
        super()._init_state(n)
        self._set_budget(pure=True)
        self.mechanism = L2BallMechanism(check_share("epsilon", self.epsilon, 2),
                                         2 * self.reward_bound * self.context_bound,
                                         self.dim, **self.noise_source())
        self.updates = np.zeros((n, self.n_arms), dtype=np.int64)

    def _state(self):
        return {"t": self.t, "theta_warm": self.theta_warm, "updates": self.updates,
                "theta": self.theta}

    def _message_spec(self):
        k, d = self.n_arms, self.dim
        return {"gradient": ((k, d), np.float64), "arm": ((), np.int64),
                "_input": ((k, d), np.float64)}

    def _noise(self, rounds):
        return _ball_noise(self.mechanism, rounds, self._n, (self.n_arms,))

    def _kernel_call(self, mode, obs, rewards, forced, state, noise, msgs, actions):
        m = self.mechanism
        return glm_kernels.multi_sgd_rounds, (
            mode, obs, rewards, forced,
            (self.warmup * self.n_arms, self.gap, LINK_CODES[self.link], self.step_size),
            self._bounds(), _ball(m, noise), _take(state, "t", "theta_warm", "updates", "theta"),
            _take(msgs, "_input", "gradient", "arm"), actions)

    def _record(self, msgs, noise):
        self.mechanism.record(msgs["_input"])


#: The GLM agents by display name.
AGENTS: dict[str, type[Agent]] = {cls.name: cls for cls in (
    LinUCB, GLOC, GreedyOLS, GreedySGD, LDPLinUCB, LDPGLOC, LDPOLS, LDPSGD, LDPMultiOLS,
    LDPMultiSGD)}
