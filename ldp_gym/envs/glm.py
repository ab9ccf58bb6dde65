"""Linear and generalized-linear contextual bandits (Zheng et al. 2020, section 4; Han et al. 2021).

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
  ``[-noise, noise]`` (default 0.1; Han et al.'s public code used none), so
  ``|r| <= 1 + noise``;
* ``logistic``: Bernoulli rewards with mean ``1/(1 + e^{-x^T theta})``;
* ``poisson``: Poisson rewards with mean ``e^{x^T theta}``, clipped to
  ``reward_bound`` (default 5) so that they stay bounded.

Observations are float32 and flat (SB3 accepts them): ``(K*d,)`` for the
single-parameter envs (row a is arm a's context), ``(d,)`` for the
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

from typing import Any

import numpy as np
from gymnasium import spaces
from scipy import special

from .base import BanditCore, BanditEnv, make_vector_class

__all__ = ["LINKS", "GLMEnv", "GLMVectorEnv", "MultiParamGLMEnv", "MultiParamGLMVectorEnv"]

#: link name -> inverse link mu (the mean reward as a function of x^T theta)
LINKS = {
    "identity": lambda z: z,
    "logistic": special.expit,
    "poisson": np.exp,
}
CONTEXTS = ("sphere", "ball", "gaussian")


def _check_int(name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_real(name: str, value: Any, low: float = 0.0, strict: bool = True) -> float:
    if isinstance(value, (bool, np.bool_)) or not np.isscalar(value) or not np.isfinite(value) \
            or (value <= low if strict else value < low):
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} {low}, "
                         f"got {value!r}")
    return float(value)


def sample_contexts(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    """Contexts of norm <= 1: uniform on the sphere, uniform in the ball, or clipped N(0, I/d)."""
    g = rng.standard_normal(shape)
    d = shape[-1]
    if kind == "gaussian":
        g /= np.sqrt(d)
        return g / np.maximum(np.sqrt(np.einsum("...i,...i->...", g, g))[..., None], 1.0)
    g /= np.sqrt(np.einsum("...i,...i->...", g, g))[..., None]
    if kind == "ball":
        g *= rng.random(shape[:-1] + (1,)) ** (1.0 / d)
    return g


class _GLMBase(BanditCore):
    """Shared by the single- and multi-parameter settings."""

    multi_parameter = False

    def __init__(self, dim: int = 2, n_arms: int = 10, link: str = "identity",
                 theta: Any = None, contexts: str = "sphere", noise: float = 0.1,
                 reward_bound: float | None = None):
        self.dim = _check_int("dim", dim)
        self.n_arms = _check_int("n_arms", n_arms)
        if link not in LINKS:
            raise ValueError(f"link must be one of {tuple(LINKS)}, got {link!r}")
        if contexts not in CONTEXTS:
            raise ValueError(f"contexts must be one of {CONTEXTS}, got {contexts!r}")
        self.link, self.contexts, self.mu = link, contexts, LINKS[link]
        self.noise = _check_real("noise", noise, strict=False)
        default_bound = {"identity": 1.0 + self.noise, "logistic": 1.0, "poisson": 5.0}[link]
        self.reward_bound = default_bound if reward_bound is None else _check_real(
            "reward_bound", reward_bound)
        if link == "identity" and self.reward_bound < 1.0 + self.noise:
            raise ValueError(f"reward_bound must be >= 1 + noise = {1 + self.noise} for the "
                             f"identity link")
        shape = (self.n_arms, self.dim) if self.multi_parameter else (self.dim,)
        if theta is None:
            self.fixed_theta = None
        else:
            th = np.asarray(theta, dtype=np.float64) if not isinstance(theta, str) else None
            if th is None or th.shape != shape or not np.isfinite(th).all() \
                    or (np.linalg.norm(th, axis=-1) > 1 + 1e-12).any():
                raise ValueError(f"theta must be an array of shape {shape} with norms <= 1")
            self.fixed_theta = th
        self.reward_range = (-self.reward_bound, self.reward_bound) if link == "identity" \
            else (0.0, self.reward_bound)
        self.action_space = spaces.Discrete(self.n_arms)
        self.theta = np.zeros((0,) + shape)

    def reset(self, rng, runs, n_runs):
        shape = self.theta.shape[1:]
        if self.theta.shape[0] != n_runs:
            self.theta = np.zeros((n_runs,) + shape)
            self.x = np.zeros((n_runs,) + self._context_shape)
        self.theta[runs] = self.fixed_theta if self.fixed_theta is not None else \
            sample_contexts(rng, "sphere", (len(runs),) + shape)
        self.x[runs] = sample_contexts(rng, self.contexts, (len(runs),) + self._context_shape)
        self._rows = np.arange(n_runs)

    def observe(self):
        return self.x.reshape(self.x.shape[0], -1).astype(np.float32)

    def means(self, x: np.ndarray | None = None) -> np.ndarray:
        """Expected reward (N, [B,] K) of every arm for contexts x (default: the current ones)."""
        raise NotImplementedError

    def draw_block(self, rng, length):
        n = self.x.shape[0]
        fresh = sample_contexts(rng, self.contexts, (n, length) + self._context_shape)
        xs = np.concatenate([self.x[:, None], fresh], axis=1)   # rounds 1..length, then next
        means = self.means(xs[:, :length])
        rewards = self._rewards(rng, means)
        self.x = xs[:, length].copy()
        return (xs.reshape(n, length + 1, -1).astype(np.float32), rewards,
                means.max(axis=-1, keepdims=True) - means)

    def _rewards(self, rng, mean: np.ndarray) -> np.ndarray:
        if self.link == "identity":
            return mean + self.noise * (2.0 * rng.random(mean.shape) - 1.0)
        if self.link == "logistic":
            return (rng.random(mean.shape) < mean).astype(np.float64)
        return np.minimum(rng.poisson(mean), self.reward_bound).astype(np.float64)

    def step(self, rng, actions):
        means = self.means()
        mean = means[self._rows, actions]
        best = means.max(axis=1)
        rewards = self._rewards(rng, mean)
        info = {"expected_reward": mean, "optimal_reward": best, "regret": best - mean,
                "optimal_action": means.argmax(axis=1)}
        self.x = sample_contexts(rng, self.contexts, self.x.shape)
        return rewards, info


class GLMCore(_GLMBase):
    """Single-parameter linear / GLM contextual bandit (Han et al. 2021, section 3).

    Args:
        dim: d. n_arms: K (contexts per round). link: ``identity``, ``logistic``, ``poisson``.
        theta: fixed theta* (norm <= 1), else drawn uniformly on the sphere at reset.
        contexts: ``sphere`` (default), ``ball`` or ``gaussian`` (clipped to norm 1).
        noise: half-width of the uniform reward noise (identity link).
        reward_bound: declared bound c_r on |reward| (defaults per link).
    """

    def __init__(self, dim: int = 2, n_arms: int = 10, **kwargs: Any):
        super().__init__(dim, n_arms, **kwargs)
        self._context_shape = (self.n_arms, self.dim)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(self.n_arms * self.dim,),
                                            dtype=np.float32)

    def means(self, x=None):
        x = self.x if x is None else x
        return self.mu(np.einsum("n...kd,nd->n...k", x, self.theta))


class MultiParamGLMCore(_GLMBase):
    """Multi-parameter linear / GLM contextual bandit (Han et al. 2021, section 4).

    One context per round and one parameter per arm (drawn on the sphere at
    reset or given as a (K, d) array). Other arguments as :class:`GLMCore`.
    """

    multi_parameter = True

    def __init__(self, dim: int = 2, n_arms: int = 3, **kwargs: Any):
        super().__init__(dim, n_arms, **kwargs)
        self._context_shape = (self.dim,)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(self.dim,), dtype=np.float32)

    def means(self, x=None):
        x = self.x if x is None else x
        return self.mu(np.einsum("nkd,n...d->n...k", self.theta, x))


class GLMEnv(BanditEnv):
    __doc__ = GLMCore.__doc__
    core_class = GLMCore


class MultiParamGLMEnv(BanditEnv):
    __doc__ = MultiParamGLMCore.__doc__
    core_class = MultiParamGLMCore


GLMVectorEnv = make_vector_class("GLMVectorEnv", GLMCore, "N runs of :class:`GLMEnv` in numpy.")
MultiParamGLMVectorEnv = make_vector_class("MultiParamGLMVectorEnv", MultiParamGLMCore,
                                           "N runs of :class:`MultiParamGLMEnv` in numpy.")
