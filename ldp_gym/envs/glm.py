"""Linear and generalized-linear contextual bandits: Zheng et al. 2020, section 4, and Han et al. 2021.

Single parameter (``LDPLinearBandit-v0``, ``LDPGLMBandit-v0``): every round
shows K context vectors ``x_{t,a}`` in R^d; one unknown ``theta*``; the reward
of arm a is ``mu(x_{t,a}^T theta*) + noise``. Multi parameter
(``LDPMultiParamLinearBandit-v0``, ``LDPMultiParamGLMBandit-v0``): one
context ``X_t`` per round, one ``theta_a`` per arm, reward
``mu(X_t^T theta_a) + noise``.

Defaults follow Han et al.'s experiments: contexts uniform on the unit sphere
S^{d-1} (``C_B = 1``), parameters uniform on the sphere drawn at reset,
d = 2 with K = 10 (single) or K = 3 (multi). Links:

* ``identity``: reward ``x^T theta + eta`` with bounded noise eta uniform on
  ``[-noise, noise]``, so ``|r| <= 1 + noise``. The default noise is 0.1;
  Han et al.'s public code used none;
* ``logistic``: Bernoulli rewards with mean ``1/(1 + e^{-x^T theta})``;
* ``poisson``: Poisson rewards with mean ``e^{x^T theta}``, clipped to
  ``reward_bound`` (default 5) so that they stay bounded.

Observations are float32 and flat, so SB3 accepts them: ``(K*d,)`` for the
single-parameter envs, where row a is arm a's context, and ``(d,)`` for the
multi-parameter ones. ``reward_bound`` is the declared ``c_r`` that private
agents clip to.

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> env = gym.make("LDPGLMBandit-v0")
    >>> obs, _ = env.reset(seed=0)
    >>> obs.shape, env.action_space
    ((20,), Discrete(10))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces
from numba import njit

from ldp_gym.validation import check_finite, check_int, check_real

from ..protocols import DrawsBlocks
from .base import BanditCore, BanditEnv, RoundsAhead, make_vector_class

__all__ = ["LINKS", "inverse_link", "GLMEnv", "GLMVectorEnv", "MultiParamGLMEnv", "MultiParamGLMVectorEnv"]

#: the links, by code (their position): identity, logistic, Poisson
LINKS = ("identity", "logistic", "poisson")


@njit(cache=True, nogil=True)
def inverse_link(z, link):
    """The mean reward mu(z) of ``z = x^T theta`` for the link of code ``link`` (index in
    ``LINKS``): z, 1/(1 + e^-z) or e^z. Compiled; the env and the agents' kernels share it."""
    if link == 1:
        return 1.0 / (1.0 + math.exp(-z))
    if link == 2:
        return math.exp(z)
    return z
CONTEXTS = ("sphere", "ball", "gaussian")


def sample_contexts(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    """Contexts of norm <= 1: uniform on the sphere, uniform in the ball, or clipped N(0, I/d)."""
    g = rng.standard_normal(shape)
    radii = rng.random(shape[:-1]) if kind == "ball" else np.empty(0)
    _scale_rows(g.reshape(-1, shape[-1]), CONTEXTS.index(kind), radii.reshape(-1))
    return g


@njit(cache=True, nogil=True, inline="always")
def _scale(kind, d):
    """The factor applied to standard normals before their norm is taken: ``1/sqrt(d)`` for
    ``N(0, I/d)`` contexts (kind 2), else 1."""
    return 1.0 / math.sqrt(d) if kind == 2 else 1.0


@njit(cache=True, nogil=True, inline="always")
def _scale_factor(sq, kind, radius, d):
    """The factor taking standard normals g with ``sq = sum (g scale)^2`` onto the unit
    sphere (kind 0), into the unit ball with radius ``radius ** (1/d)`` (1), or to
    ``N(0, I/d)`` clipped to norm 1 (2)."""
    norm = math.sqrt(sq)
    if kind == 2:
        return _scale(kind, d) / max(norm, 1.0)
    if kind == 1:
        return radius ** (1.0 / d) / norm
    return 1.0 / norm


@njit(cache=True, nogil=True, inline="always")
def _scale_row(g, i, kind, radius):
    """In place, row i of standard normals g (M, d) scaled by :func:`_scale_factor`.

    The compiled passes here read and write rows by index, not through views: a numba
    view is a reference-counted object, and one per context cost about a fifth of a block's
    draw."""
    d = g.shape[1]
    scale = _scale(kind, d)
    sq = 0.0
    for j in range(d):
        sq += (g[i, j] * scale) ** 2
    f = _scale_factor(sq, kind, radius, d)
    for j in range(d):
        g[i, j] *= f


@njit(cache=True, nogil=True)
def _scale_rows(g, kind, radii):
    """:func:`_scale_row` of every row of g (M, d) (``radii`` (M,) for the ball)."""
    for i in range(g.shape[0]):
        _scale_row(g, i, kind, radii[i] if kind == 1 else 0.0)


@njit(cache=True, nogil=True, inline="always")
def _reward(mean, u, link, noise):
    """A reward from its mean and a uniform u: ``mean + noise (2u - 1)`` for the identity link,
    or ``1{u < mean}`` for the logistic one."""
    if link == 0:
        return mean + noise * (2.0 * u - 1.0)
    return 1.0 if u < mean else 0.0


@njit(cache=True, nogil=True, inline="always")
def _round_outcomes(x, row, theta, link, noise, u, means, rewards, regret, at):
    """One round of one run: every arm's mean, reward and instantaneous regret, written at
    ``at = (run, round)`` of ``means``, ``rewards`` and ``regret`` (N, L, K).

    The contexts are rows ``row``, ``row + 1``, ... of x (M, d): K of them with theta (1, d)
    for a single parameter, or one with theta (K, d) for multi parameter. The rewards come
    from the uniforms u (N, L, K) for the identity and logistic links; there are none where
    u is empty."""
    k_arms, d = means.shape[2], x.shape[1]
    per_arm_x = theta.shape[0] == 1
    best = -np.inf
    for k in range(k_arms):
        kx, kt = (row + k, 0) if per_arm_x else (row, k)
        z = 0.0
        for j in range(d):
            z += x[kx, j] * theta[kt, j]
        m = inverse_link(z, link)
        means[at + (k,)] = m
        best = max(best, m)
        if u.shape[0]:
            rewards[at + (k,)] = _reward(m, u[at + (k,)], link, noise)
    for k in range(k_arms):
        regret[at + (k,)] = best - means[at + (k,)]


@njit(cache=True, nogil=True, inline="always")
def _write_obs(x, row, obs, at):
    """The observation ``obs[at]`` (C d,) float32 of the C contexts in rows ``row``... of x."""
    d = x.shape[1]
    for c in range(obs.shape[2] // d):
        for j in range(d):
            obs[at + (c * d + j,)] = np.float32(x[row + c, j])


@njit(cache=True, nogil=True)
def _draw_block(rng, kind, x0, theta, link, noise, obs, rewards, regret,
                x_last):  # pragma: no cover - compiled
    """A block drawn and scored in one compiled pass from the env's generator ``rng``.

    For sphere or Gaussian contexts, it draws the numbers that :func:`sample_contexts` and
    the uniforms drawn after them give; numba's generator methods draw numpy's numbers.
    Each fresh context's normals are drawn in (N, L, C, d) order and scaled by
    :func:`_scale_row`. They are written to ``obs`` (N, L + 1, C d) float32 after the
    current contexts ``x0`` (N, C, d), and scored by :func:`_round_outcomes`: round 0 on
    ``x0``, round s on the fresh contexts s - 1. The means are kept in ``rewards``. Then,
    for the identity and logistic links, every arm's uniform is drawn in (N, L, K) order
    and its reward put in place of its mean. The caller draws the Poisson rewards from the
    means. ``x_last`` (N, C, d) receives the last fresh contexts, the next round's."""
    n_runs, length, k_arms = rewards.shape
    width, d = x0.shape[1], x0.shape[2]
    x = np.empty((2 * width, d))  # a round's contexts and the next round's, in turn
    scale = _scale(kind, d)
    no_u = np.empty((0, 0, 0))
    for n in range(n_runs):
        theta_n = theta[n]
        for c in range(width):
            for j in range(d):
                x[c, j] = x0[n, c, j]
        _write_obs(x, 0, obs, (n, 0))
        for s in range(length):
            now, fresh = (s % 2) * width, (1 - s % 2) * width
            for c in range(width):  # _scale_row as the normals are drawn, in one pass
                sq = 0.0
                for j in range(d):
                    g = rng.standard_normal()
                    x[fresh + c, j] = g
                    sq += (g * scale) ** 2
                f = _scale_factor(sq, kind, 0.0, d)
                for j in range(d):
                    v = x[fresh + c, j] * f
                    x[fresh + c, j] = v
                    obs[n, s + 1, c * d + j] = np.float32(v)
            _round_outcomes(x, now, theta_n, link, noise, no_u, rewards, rewards, regret, (n, s))
        last = (length % 2) * width
        for c in range(width):
            for j in range(d):
                x_last[n, c, j] = x[last + c, j]
    if link == 2:
        return
    for n in range(n_runs):
        for s in range(length):
            for k in range(k_arms):
                rewards[n, s, k] = _reward(rewards[n, s, k], rng.random(), link, noise)


@njit(cache=True, nogil=True)
def _block_outcomes(xs, radii, kind, theta, link, noise, u, obs, means, regret):
    """A drawn block in one pass: the contexts, the observations and every round's outcomes.

    ``xs`` (N, L + 1, C, d) holds the current contexts ``xs[:, 0]``, then the fresh ones'
    normals, which :func:`_scale_row` scales in place, with ``radii`` (N, L, C) for the
    ball. The observations ``obs`` (N, L + 1, C d) float32 receive all of them.
    :func:`_round_outcomes` gives every round's outcomes into ``means`` and ``regret``
    (N, L, K), round s on the contexts ``xs[:, s]``; the uniforms ``u`` (N, L, K) become
    the rewards, in place. They are empty for the Poisson link."""
    n_runs, length, width = radii.shape
    rows = xs.reshape(-1, xs.shape[3])
    for n in range(n_runs):
        theta_n = theta[n]
        first = n * (length + 1) * width
        _write_obs(rows, first, obs, (n, 0))
        for s in range(length):
            fresh = first + (s + 1) * width
            for c in range(width):
                _scale_row(rows, fresh + c, kind, radii[n, s, c] if kind == 1 else 0.0)
            _write_obs(rows, fresh, obs, (n, s + 1))
            _round_outcomes(rows, fresh - width, theta_n, link, noise, u, means, u, regret,
                            (n, s))


@njit(cache=True, nogil=True)
def _outcomes(x, theta, link, noise, u, means, rewards, regret):
    """Every arm's mean (N, L, K), instantaneous regret and, for the identity and logistic
    links, reward from the uniforms u (N, L, K). ``x`` is (N, L, K, d) with theta (N, 1, d)
    for a single parameter, or (N, L, 1, d) with theta (N, K, d) for multi parameter."""
    n_runs, length, width = x.shape[0], x.shape[1], x.shape[2]
    rows = x.reshape(-1, x.shape[3])
    for n in range(n_runs):
        theta_n = theta[n]
        for s in range(length):
            _round_outcomes(rows, (n * length + s) * width, theta_n, link, noise, u, means,
                            rewards, regret, (n, s))


@njit(cache=True, nogil=True)
def _step_outcomes(x, theta, link, noise, u, actions, out, best_arm):
    """One round of N runs into ``out`` (4, N), and the best arm into ``best_arm``.

    ``out`` holds the chosen arm's reward, its mean, the best mean and the regret, best - mean.
    For the identity and logistic links the reward comes from the uniforms u, as in
    :func:`_outcomes`. x (N, K, d) with theta (N, 1, d), or x (N, 1, d) with theta (N, K, d)."""
    n_runs = x.shape[0]
    k_arms = max(x.shape[1], theta.shape[1])
    d = x.shape[2]
    for n in range(n_runs):
        top, arg, chosen = -np.inf, 0, 0.0
        for k in range(k_arms):
            kx, kt = (k, 0) if x.shape[1] > 1 else (0, k)
            z = 0.0
            for j in range(d):
                z += x[n, kx, j] * theta[n, kt, j]
            m = inverse_link(z, link)
            if m > top:
                top, arg = m, k
            if k == actions[n]:
                chosen = m
        out[1, n], out[2, n], out[3, n], best_arm[n] = chosen, top, top - chosen, arg
        if link == 0:
            out[0, n] = chosen + noise * (2.0 * u[n] - 1.0)
        elif link == 1:
            out[0, n] = 1.0 if u[n] < chosen else 0.0


class _GLMBase(RoundsAhead, BanditCore, DrawsBlocks):
    """Shared by the single- and multi-parameter settings."""

    public = ("dim", "n_arms", "link", "reward_bound", "multi_parameter")

    multi_parameter = False

    def __init__(self, dim: int = 2, n_arms: int = 10, link: str = "identity",
                 theta: Any = None, contexts: str = "sphere", noise: float = 0.1,
                 reward_bound: float | None = None):
        self.dim = check_int("dim", dim)
        self.n_arms = check_int("n_arms", n_arms)
        if link not in LINKS:
            raise ValueError(f"link must be one of {tuple(LINKS)}, got {link!r}")
        if contexts not in CONTEXTS:
            raise ValueError(f"contexts must be one of {CONTEXTS}, got {contexts!r}")
        self.link, self.contexts = link, contexts
        self._link_code = LINKS.index(link)
        self.noise = check_real("noise", noise, low=0.0, low_open=False)
        default_bound = {"identity": 1.0 + self.noise, "logistic": 1.0, "poisson": 5.0}[link]
        self.reward_bound = default_bound if reward_bound is None else check_real(
            "reward_bound", reward_bound, low=0.0)
        if link == "identity" and self.reward_bound < 1.0 + self.noise:
            raise ValueError(f"reward_bound must be >= 1 + noise = {1 + self.noise} for the "
                             f"identity link")
        shape = (self.n_arms, self.dim) if self.multi_parameter else (self.dim,)
        if theta is None:
            self.fixed_theta = None
        else:
            th = check_finite(theta, "theta")
            if th.shape != shape or (np.linalg.norm(th, axis=-1) > 1 + 1e-12).any():
                raise ValueError(f"theta must be an array of shape {shape} with norms <= 1")
            self.fixed_theta = th.astype(np.float64)
        self.reward_range = (-self.reward_bound, self.reward_bound) if link == "identity" \
            else (0.0, self.reward_bound)
        self.action_space = spaces.Discrete(self.n_arms)
        self.theta = np.zeros((0,) + shape)
        self._one: tuple[np.ndarray, ...] | None = None  # step_one's arrays

    def reset(self, rng, runs, n_runs):
        shape = self.theta.shape[1:]
        if self.theta.shape[0] != n_runs:
            self.theta = np.zeros((n_runs,) + shape)
            self.x = np.zeros((n_runs,) + self._context_shape)
        self.theta[runs] = self.fixed_theta if self.fixed_theta is not None else \
            sample_contexts(rng, "sphere", (len(runs),) + shape)
        self.x[runs] = sample_contexts(rng, self.contexts, (len(runs),) + self._context_shape)
        self._rows = np.arange(n_runs)
        self._theta3 = self.theta.reshape(n_runs, -1, self.dim)  # as the step kernel reads it
        if len(runs) == n_runs:
            self._discard_ahead()

    def observe(self):
        return self.x.reshape(self.x.shape[0], -1).astype(np.float32)

    def means(self, x: np.ndarray | None = None) -> np.ndarray:
        """Expected reward (N, [B,] K) of every arm for contexts x, by default the current ones."""
        means = self._outcomes(self.x[:, None] if x is None else x)[0]
        return means[:, 0] if x is None else means

    def _outcomes(self, xs: np.ndarray, u: np.ndarray | None = None):
        """Means, rewards and regrets (N, L, K) of contexts xs (N, L, ...).

        For the identity and logistic links, the rewards come from the uniforms u."""
        n, length = xs.shape[:2]
        x = np.ascontiguousarray(xs.reshape(n, length, -1, self.dim), dtype=np.float64)
        theta = self.theta.reshape(n, -1, self.dim)
        means, rewards, regret = (np.empty((n, length, self.n_arms)) for _ in range(3))
        _outcomes(x, theta, LINKS.index(self.link), self.noise,
                  np.empty((0, 0, 0)) if u is None else u, means, rewards, regret)
        return means, rewards, regret

    def draw_block(self, rng, length):
        n, shape = self.x.shape[0], self._context_shape
        poisson = self.link == "poisson"
        obs = np.empty((n, length + 1, math.prod(shape)), dtype=np.float32)
        regret = np.empty((n, length, self.n_arms))
        if self.contexts != "ball":   # every draw in the compiled pass
            rewards, x_last = np.empty((n, length, self.n_arms)), np.empty_like(self.x)
            _draw_block(rng, CONTEXTS.index(self.contexts), self.x.reshape(n, -1, self.dim),
                        self._theta3, self._link_code, self.noise, obs, rewards, regret,
                        x_last.reshape(n, -1, self.dim))
            self.x = x_last
            return obs, self._rewards(rng, rewards) if poisson else rewards, regret
        xs = np.empty((n, length + 1) + shape)
        xs[:, 0] = self.x
        xs[:, 1:] = rng.standard_normal((n, length) + shape)  # sample_contexts' draws, in order
        radii = rng.random((n, length) + shape[:-1])
        u = np.empty((0, 0, 0)) if poisson else rng.random((n, length, self.n_arms))
        means = np.empty((n, length, self.n_arms))
        _block_outcomes(xs.reshape(n, length + 1, -1, self.dim), radii.reshape(n, length, -1),
                        CONTEXTS.index(self.contexts), self._theta3, self._link_code,
                        self.noise, u, obs, means, regret)
        rewards = self._rewards(rng, means) if poisson else u   # the uniforms became rewards
        self.x = xs[:, length].copy()
        return obs, rewards, regret

    def _rewards(self, rng, mean: np.ndarray) -> np.ndarray:
        if self.link == "identity":
            return mean + self.noise * (2.0 * rng.random(mean.shape) - 1.0)
        if self.link == "logistic":
            return (rng.random(mean.shape) < mean).astype(np.float64)
        return np.minimum(rng.poisson(mean), self.reward_bound).astype(np.float64)

    def _draw_states(self, rng, lead):
        return sample_contexts(rng, self.contexts, lead + self._context_shape)

    def _state_numbers(self):
        return math.prod(self._context_shape)

    def _play(self, rng, actions, out, best_arm):
        """Play one round of every run, then move to the next contexts.

        :func:`_step_outcomes` writes into ``out`` and ``best_arm``; Poisson rewards are
        drawn from the means."""
        n = self.x.shape[0]
        x_next, u = self._next_round(rng, n)
        _step_outcomes(self.x.reshape(n, -1, self.dim), self._theta3, self._link_code,
                       self.noise, u, actions, out, best_arm)
        if self._link_code == 2:  # Poisson
            out[0] = self._rewards(rng, out[1])
        # the next contexts: a row of the chunk drawn ahead, which is served once and never
        # written to again (a reset of some runs writes their rows of this one only)
        self.x = x_next

    def step(self, rng, actions):
        n = self.x.shape[0]
        out, best_arm = np.empty((4, n)), np.empty(n, dtype=np.int64)
        self._play(rng, actions, out, best_arm)
        rewards, mean, best, regret = out
        return rewards, {"expected_reward": mean, "optimal_reward": best, "regret": regret,
                         "optimal_action": best_arm}

    def step_one(self, rng, action):
        # one run: the round's arrays are reused (nothing of them is handed out)
        one = self._one
        if one is None:
            one = self._one = (np.zeros(1, dtype=np.int64), np.zeros((4, 1)),
                               np.zeros(1, dtype=np.int64))
        acts, out, best_arm = one
        acts[0] = action
        self._play(rng, acts, out, best_arm)
        reward, mean, best, regret = out[:, 0].tolist()
        return reward, {"expected_reward": mean, "optimal_reward": best, "regret": regret,
                        "optimal_action": int(best_arm[0])}


class GLMCore(_GLMBase):
    """Single-parameter linear / GLM contextual bandit: Han et al. 2021, section 3.

    Args:
        dim: d. n_arms: K, the contexts per round. link: ``identity``, ``logistic``, ``poisson``.
        theta: fixed theta* of norm <= 1, else drawn uniformly on the sphere at reset.
        contexts: ``sphere`` (default), ``ball`` or ``gaussian``, which is clipped to norm 1.
        noise: half-width of the uniform reward noise of the identity link.
        reward_bound: declared bound c_r on |reward|; the default depends on the link.
    """

    def __init__(self, dim: int = 2, n_arms: int = 10, **kwargs: Any):
        super().__init__(dim, n_arms, **kwargs)
        self._context_shape = (self.n_arms, self.dim)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(self.n_arms * self.dim,),
                                            dtype=np.float32)


class MultiParamGLMCore(_GLMBase):
    """Multi-parameter linear / GLM contextual bandit: Han et al. 2021, section 4.

    One context per round and one parameter per arm, drawn on the sphere at
    reset or given as a (K, d) array. Other arguments as :class:`GLMCore`.
    """

    multi_parameter = True

    def __init__(self, dim: int = 2, n_arms: int = 3, **kwargs: Any):
        super().__init__(dim, n_arms, **kwargs)
        self._context_shape = (self.dim,)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(self.dim,), dtype=np.float32)


class GLMEnv(BanditEnv):
    __doc__ = (GLMCore.__doc__ or "") + """
    Example:
        >>> from ldp_gym.envs import GLMEnv
        >>> env = GLMEnv(dim=3, n_arms=4, link="logistic")
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, obs.dtype, env.action_space
        ((12,), dtype('float32'), Discrete(4))
        >>> obs, reward, terminated, truncated, info = env.step(0)
        >>> reward in (0.0, 1.0), 0 <= info["optimal_action"] < 4
        (True, True)
    """
    core_class = GLMCore


class MultiParamGLMEnv(BanditEnv):
    __doc__ = (MultiParamGLMCore.__doc__ or "") + """
    Example:
        >>> from ldp_gym.envs import MultiParamGLMEnv
        >>> env = MultiParamGLMEnv(dim=2, n_arms=3)
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, env.action_space       # one context per round, one parameter per arm
        ((2,), Discrete(3))
        >>> obs, reward, terminated, truncated, info = env.step(1)
        >>> abs(reward) <= 1.1, info["regret"] >= 0.0
        (True, True)
    """
    core_class = MultiParamGLMCore


GLMVectorEnv = make_vector_class("GLMVectorEnv", GLMCore, """N runs of :class:`GLMEnv` in numpy.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import GLMVectorEnv
        >>> envs = GLMVectorEnv(num_envs=2, max_episode_steps=3, dim=2, n_arms=5)
        >>> obs, info = envs.reset(seed=0)
        >>> obs.shape
        (2, 10)
        >>> for _ in range(3):
        ...     obs, rewards, terminated, truncated, info = envs.step(np.array([0, 4]))
        >>> rewards.shape, truncated.tolist()
        ((2,), [True, True])
    """)
MultiParamGLMVectorEnv = make_vector_class("MultiParamGLMVectorEnv", MultiParamGLMCore, """N runs of
    :class:`MultiParamGLMEnv` in numpy.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import MultiParamGLMVectorEnv
        >>> envs = MultiParamGLMVectorEnv(num_envs=2, max_episode_steps=100, link="poisson")
        >>> obs, info = envs.reset(seed=0)
        >>> obs, rewards, regrets = envs.draw_block(4)   # 4 rounds of every arm, drawn ahead
        >>> obs.shape, rewards.shape, regrets.shape
        ((2, 5, 2), (2, 4, 3), (2, 4, 3))
    """)
