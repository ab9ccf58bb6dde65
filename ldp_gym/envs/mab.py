"""Multi-armed bandits: stochastic (``LDPMAB-v0``) and oblivious adversarial (``LDPAdversarialMAB-v0``).

The stochastic K-armed bandit is that of Azize and Basu 2022, section 5, and of Chen et
al. 2020 with one base arm. Defaults reproduce Azize and Basu's Fig. 2: Bernoulli arms
with means {0.75, 0.625, 0.5, 0.375, 0.25}.

There is no context: the observation is a constant float32 ``[0.0]``, so
that any Gymnasium learner, stable-baselines3 included, runs unchanged.

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> env = gym.make("LDPMAB-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(0)
    >>> sorted(info)
    ['expected_reward', 'optimal_action', 'optimal_reward', 'regret']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from numba import njit, vectorize
from scipy import special

from ldp_gym.validation import check_finite, check_int, check_real

from ..protocols import DrawsBlocks, DrawsStretches
from .base import BanditCore, BanditEnv, make_vector_class

__all__ = [
    "DEFAULT_MEANS",
    "AdversarialMABEnv",
    "AdversarialMABVectorEnv",
    "MABEnv",
    "MABVectorEnv",
    "bernoulli_kl",
    "d_epsilon",
    "minimax_lower_bound",
    "optimal_lower_bound",
    "problem_dependent_lower_bound",
]

DEFAULT_MEANS = (0.75, 0.625, 0.5, 0.375, 0.25)
DISTRIBUTIONS = ("bernoulli", "gaussian", "beta")
ORDERS = ("shuffled", "given")
_OBS_SPACE = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)


class StochasticArms(BanditCore):
    """Stochastic K-armed bandit on a batch of runs.

    Args:
        means: a sequence of arm means, or ``"random"`` for means drawn uniformly
            in [0, 1] at every reset. ``"random"`` needs ``n_arms``.
        distribution: ``"bernoulli"``, the default, ``"gaussian"`` or ``"beta"``.
            Gaussian rewards have std ``sigma`` and are unbounded: private wrappers and
            agents clip them to their declared bounds. Beta rewards have mean mu and
            concentration ``concentration``, and lie in [0, 1].
        n_arms: number of arms for random instances.
        sigma: standard deviation of Gaussian rewards.
        concentration: a + b of Beta rewards.
        order: ``"shuffled"`` presents the means in an order drawn at every reset from the
            env's ``np_random``. So no fixed arm index is best, and an ``argmax`` agent or a
            frozen policy cannot score zero regret by the order alone. ``"given"`` keeps the
            order of ``means``. Default: shuffled for the default means, which are the
            paper's, best first as published; given for means you pass. Random means
            ignore it.
    """

    def __init__(self, means: Sequence[float] | str | None = None,
                 distribution: str = "bernoulli", n_arms: int | None = None, sigma: float = 1.0,
                 concentration: float = 2.0, order: str | None = None):
        if order is None:
            order = "shuffled" if means is None else "given"
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
        self.order = order
        if means is None:
            means = DEFAULT_MEANS
        if distribution not in DISTRIBUTIONS:
            raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")
        self.distribution = distribution
        self.sigma = check_real("sigma", sigma, low=0.0)
        self.concentration = check_real("concentration", concentration, low=0.0)
        if isinstance(means, str):
            if means != "random":
                raise ValueError(f"means must be a sequence of numbers or 'random', got {means!r}")
            if n_arms is None:
                raise ValueError("n_arms is required with means='random'")
            self.fixed_means = None
            self.n_arms = check_int("n_arms", n_arms)
        else:
            m = check_finite(means, "means")
            if m.ndim != 1 or m.size < 1:
                raise ValueError("means must be a non-empty 1-D sequence of finite numbers")
            if distribution != "gaussian" and ((m < 0) | (m > 1)).any():
                raise ValueError(f"means must lie in [0, 1] for {distribution} rewards")
            if distribution == "beta" and ((m <= 0) | (m >= 1)).any():
                raise ValueError("means must lie in (0, 1) for beta rewards")
            if n_arms is not None and check_int("n_arms", n_arms) != m.size:
                raise ValueError(f"n_arms={n_arms} does not match len(means)={m.size}")
            self.fixed_means = m.astype(np.float64)
            self.n_arms = m.size
        self.action_space = spaces.Discrete(self.n_arms)
        self.observation_space = _OBS_SPACE
        self.reward_range = (-np.inf, np.inf) if distribution == "gaussian" else (0.0, 1.0)
        self.bounded_rewards = None if distribution == "gaussian" else (0.0, 1.0)
        self.means = np.zeros((0, self.n_arms))

    def reset(self, rng, runs, n_runs):
        if self.means.shape[0] != n_runs:
            self.means = np.zeros((n_runs, self.n_arms))
        if self.fixed_means is None:
            lo = 1e-3 if self.distribution == "beta" else 0.0
            self.means[runs] = lo + (1 - 2 * lo) * rng.random((len(runs), self.n_arms))
        elif self.order == "shuffled":
            self.means[runs] = self.fixed_means[rng.random((len(runs), self.n_arms)).argsort(axis=1)]
        else:
            self.means[runs] = self.fixed_means
        self.best = self.means.max(axis=1)
        self.best_arm = self.means.argmax(axis=1)
        self._rows = np.arange(n_runs)

    def observe(self):
        return np.zeros((self.means.shape[0], 1), dtype=np.float32)

    def _draw(self, rng, mu: np.ndarray) -> np.ndarray:
        if self.distribution == "bernoulli":
            return (rng.random(mu.shape) < mu).astype(np.float64)
        if self.distribution == "gaussian":
            return mu + self.sigma * rng.standard_normal(mu.shape)
        c = self.concentration
        return rng.beta(mu * c, (1.0 - mu) * c)

    def step(self, rng, actions):
        mu = self.means[self._rows, actions]
        info = {"expected_reward": mu, "optimal_reward": self.best.copy(),
                "regret": self.best - mu, "optimal_action": self.best_arm.copy()}
        return self._draw(rng, mu), info

    def draw_block(self, rng, length):
        n = self.means.shape[0]
        means = np.broadcast_to(self.means[:, None, :], (n, length, self.n_arms))
        obs = np.zeros((n, length + 1, 1), dtype=np.float32)
        regrets = np.broadcast_to((self.best[:, None] - self.means)[:, None, :], means.shape)
        if self.distribution == "bernoulli" and type(rng) is np.random.Generator:
            rewards = np.empty(means.shape)
            _bernoulli_block(rng, self.means, rewards)
            return obs, rewards, regrets
        return obs, self._draw(rng, means), regrets

    def stretch_regret(self, actions, counts):
        return counts * (self.best - self.means[self._rows, actions])

    def draw_sums(self, rng, actions, counts):
        mu = self.means[self._rows, actions]
        if self.distribution == "bernoulli":
            sums = rng.binomial(counts, mu).astype(np.float64)
        elif self.distribution == "gaussian":
            sums = counts * mu + self.sigma * np.sqrt(counts) * rng.standard_normal(mu.shape)
        else:  # a sum of Betas has no closed form: draw every round, vectorised, and add
            draws = self._draw(rng, np.repeat(mu, counts))
            sums = np.zeros(mu.shape)
            np.add.at(sums, np.repeat(self._rows, counts), draws)
        return sums


@njit(cache=True, nogil=True)
def _bernoulli_block(rng, means, out):  # pragma: no cover - compiled
    """``out[n, s, k] = 1{u < means[n, k]}`` for every run, round and arm, with u the
    generator's uniforms in that (C) order: bitwise ``_draw`` on the broadcast means (numba's
    generator draws numpy's numbers), in one pass instead of numpy's three (uniforms, compare,
    cast), about 1.5x faster."""
    runs, length, k_arms = out.shape
    for n in range(runs):
        for s in range(length):
            for k in range(k_arms):
                out[n, s, k] = 1.0 if rng.random() < means[n, k] else 0.0


class MABCore(StochasticArms, DrawsBlocks, DrawsStretches):
    __doc__ = StochasticArms.__doc__


class AdversarialMABCore(BanditCore, DrawsBlocks):
    """Oblivious adversarial K-armed bandit: the reward sequence does not depend on the actions.

    With ``reward_table``, of shape (T, K) and values in [0, 1], the rewards are the
    table's rows, the same in every run. Regret is measured against the best
    fixed arm of the whole table, so instantaneous regret may be negative.

    Without it, every run draws a *stochastically constrained* adversarial
    sequence (Zimmert and Seldin 2021). The best arm is drawn at reset and has mean
    ``level(t)``, the others ``level(t) - gap``. ``level`` alternates
    between ``high`` and ``low`` over phases whose lengths grow geometrically
    by ``growth``. Rewards are Bernoulli draws from an independent stream, so
    the sequence is fixed before the agent acts; regret is the pseudo-regret
    against the best arm.

    The rewards do not depend on the actions, so the runner draws blocks of rounds ahead
    with ``draw_block``. They are bitwise the rounds of ``step``, which draws every arm's
    reward too.
    """

    def __init__(self, reward_table: Any = None, n_arms: int = 5, gap: float = 0.1,
                 high: float = 0.9, low: float = 0.3, growth: float = 1.6):
        if reward_table is not None:
            tab = check_finite(reward_table, "reward_table")
            if tab.ndim != 2 or tab.shape[0] < 1 or tab.shape[1] < 1 or ((tab < 0) | (tab > 1)).any():
                raise ValueError("reward_table must be a (T, K) array of finite values in [0, 1]")
            self.table: np.ndarray | None = tab.astype(np.float64)
            self.n_arms = tab.shape[1]
            self.table_best = int(self.table.sum(axis=0).argmax())
        else:
            self.table = None
            self.n_arms = check_int("n_arms", n_arms)
            self.gap = check_real("gap", gap, low=0.0)
            self.high = check_real("high", high, low=0.0)
            self.low = check_real("low", low, low=0.0)
            self.growth = check_real("growth", growth, low=0.0)
            if not (self.gap <= self.low < self.high <= 1.0):
                raise ValueError("need gap <= low < high <= 1")
            if self.growth <= 1.0:
                raise ValueError(f"growth must be > 1, got {growth}")
        self.action_space = spaces.Discrete(self.n_arms)
        self.observation_space = _OBS_SPACE
        self.reward_range = (0.0, 1.0)
        self.bounded_rewards = (0.0, 1.0)  # table values are checked, draws are Bernoulli

    def reset(self, rng, runs, n_runs):
        if getattr(self, "t", np.zeros(0)).shape[0] != n_runs:
            self.t = np.zeros(n_runs, dtype=np.int64)
            self.best_arm = np.zeros(n_runs, dtype=np.int64)
        self.t[runs] = 0
        if self.table is None:
            self.best_arm[runs] = rng.integers(0, self.n_arms, size=len(runs))
        else:
            self.best_arm[runs] = self.table_best
        self._rows = np.arange(n_runs)

    def observe(self):
        return np.zeros((self.t.shape[0], 1), dtype=np.float32)

    def mean_table(self, t: np.ndarray) -> np.ndarray:
        """Means (N, ..., K) of the default sequence at rounds ``t`` (N, ...), per run."""
        phase = np.floor(np.log1p(t) / np.log(self.growth)).astype(np.int64)
        level = np.where(phase % 2 == 0, self.high, self.low)
        mu = np.repeat((level - self.gap)[..., None], self.n_arms, axis=-1)
        np.put_along_axis(mu, self.best_arm.reshape((-1,) + (1,) * (mu.ndim - 1)),
                          level[..., None], axis=-1)
        return mu

    def draw_block(self, rng, length):
        t = self.t[:, None] + np.arange(length)
        if self.table is not None:
            if (t >= self.table.shape[0]).any():
                raise ValueError(f"reward_table has only {self.table.shape[0]} rows")
            mu = self.table[t]
            rewards = mu.copy()
        else:
            mu = self.mean_table(t)
            u = rng.random((length,) + self.best_arm.shape + (self.n_arms,))  # round-major
            rewards = (u.transpose(1, 0, 2) < mu).astype(np.float64)
        best = np.take_along_axis(mu, self.best_arm[:, None, None], axis=2)
        self.t += length
        obs = np.zeros((self.t.shape[0], length + 1, 1), dtype=np.float32)
        return obs, rewards, best - mu

    def step(self, rng, actions):
        if self.table is not None:
            if (self.t >= self.table.shape[0]).any():
                raise ValueError(f"reward_table has only {self.table.shape[0]} rows")
            row = self.table[self.t]
            rewards = row[self._rows, actions]
            mu_row = row
        else:
            mu_row = self.mean_table(self.t)
            rewards = (rng.random(mu_row.shape) < mu_row)[self._rows, actions].astype(np.float64)
        best = mu_row[self._rows, self.best_arm]
        mu = mu_row[self._rows, actions]
        self.t += 1
        return rewards, {"expected_reward": mu, "optimal_reward": best, "regret": best - mu,
                         "optimal_action": self.best_arm.copy()}


class MABEnv(BanditEnv):
    __doc__ = (MABCore.__doc__ or "") + """
    Example:
        >>> from ldp_gym.envs import MABEnv
        >>> env = MABEnv(means=[0.2, 0.5, 0.8])
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(2)
        >>> obs.shape, env.action_space, reward in (0.0, 1.0)
        ((1,), Discrete(3), True)
        >>> info["optimal_action"], info["regret"]
        (2, 0.0)
    """
    core_class = MABCore


class AdversarialMABEnv(BanditEnv):
    __doc__ = (AdversarialMABCore.__doc__ or "") + """
    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import AdversarialMABEnv
        >>> table = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])   # arm 0 wins 2 rounds of 3
        >>> env = AdversarialMABEnv(reward_table=table)
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(1)
        >>> reward, info["optimal_action"], info["regret"]        # against the best fixed arm
        (0.0, 0, 1.0)
        >>> [env.step(1)[1] for _ in range(2)]
        [1.0, 0.0]
    """
    core_class = AdversarialMABCore


MABVectorEnv = make_vector_class("MABVectorEnv", MABCore, """N runs of :class:`MABEnv` in numpy,
    with committed stretches.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import MABVectorEnv
        >>> envs = MABVectorEnv(num_envs=4, max_episode_steps=10, means=[0.2, 0.8])
        >>> obs, info = envs.reset(seed=0)
        >>> obs, rewards, terminated, truncated, info = envs.step(np.array([0, 1, 1, 0]))
        >>> obs.shape, rewards.shape, envs.last_regret.round(2).tolist()
        ((4, 1), (4,), [0.6, 0.0, 0.0, 0.6])
        >>> obs, sums, regrets = envs.step_committed(np.array([1, 1, 1, 1]), np.array([3, 3, 3, 3]))
        >>> envs.t.tolist()
        [4, 4, 4, 4]
    """)
AdversarialMABVectorEnv = make_vector_class("AdversarialMABVectorEnv", AdversarialMABCore, """N runs of
    :class:`AdversarialMABEnv` in numpy.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import AdversarialMABVectorEnv
        >>> envs = AdversarialMABVectorEnv(num_envs=3, max_episode_steps=5, n_arms=4)
        >>> obs, info = envs.reset(seed=0)
        >>> for _ in range(5):
        ...     obs, rewards, terminated, truncated, info = envs.step(np.zeros(3, dtype=np.int64))
        >>> rewards.shape, truncated.tolist()
        ((3,), [True, True, True])
    """)


# --------------------------------------------------------------------------- lower bounds


def bernoulli_kl(p: Any, q: Any) -> np.ndarray:
    """Bernoulli Kullback-Leibler divergence ``kl(p, q)``, vectorised and safe at 0 and 1."""
    p = np.asarray(p, dtype=np.float64)
    q = np.clip(np.asarray(q, dtype=np.float64), 1e-15, 1 - 1e-15)
    return special.xlogy(p, p / q) + special.xlogy(1 - p, (1 - p) / (1 - q))


def minimax_lower_bound(horizon: Any, n_arms: int, epsilon: float) -> np.ndarray:
    """Minimax regret lower bound under epsilon-global DP (Azize and Basu 2022, Table 2).

    ``max(sqrt(T (K - 1)) / 27, (K - 1) / (131 epsilon))``.
    """
    t = np.asarray(horizon, dtype=np.float64)
    return np.maximum(np.sqrt(t * (n_arms - 1)) / 27.0, (n_arms - 1) / (131.0 * epsilon))


def problem_dependent_lower_bound(means: Sequence[float], horizon: Any,
                                  epsilon: float) -> np.ndarray:
    """Problem-dependent lower bound for Bernoulli arms (Azize and Basu 2022, Table 2, Thm 3).

    ``sum_a Delta_a log T / min(kl(mu_a, mu*), 6 epsilon Delta_a)`` over the
    sub-optimal arms, with ``t_inf = Delta_a`` for Bernoulli. It is an asymptotic bound.
    Plotted beside regret curves it shows the slope, not a guaranteed floor at
    small T.
    """
    mu = np.asarray(means, dtype=np.float64)
    best = mu.max()
    gaps = best - mu
    sub = gaps > 0
    coef = np.sum(gaps[sub] / np.minimum(bernoulli_kl(mu[sub], best), 6.0 * epsilon * gaps[sub]))
    return coef * np.log(np.asarray(horizon, dtype=np.float64))


# --------------------------------------------------------------------------- the privacy-aware divergence

_CLAMP = 1e-12
_FLOAT_MAX = float(np.finfo(np.float64).max)


@njit(cache=True, inline="always")
def _sigmoid(u: float) -> float:  # pragma: no cover - compiled
    """``1/(1 + e^-u)`` without overflow, for any u in [-inf, inf]."""
    if u >= 0.0:
        return 1.0 / (1.0 + math.exp(-u))
    e = math.exp(u)
    return e / (1.0 + e)


@njit(cache=True, error_model="numpy")
def d_epsilon_value(x: float, y: float, epsilon: float) -> float:  # pragma: no cover - compiled
    """:func:`d_epsilon` of one triple, unchecked (compiled; the agents' indices call it)."""
    if y >= 1.0:  # kl(z, 1) is infinite but at z = 1
        return epsilon * (1.0 - x) if x < 1.0 else 0.0
    if y <= 0.0:  # kl(z, 0) is infinite but at z = 0
        return epsilon * x if x > 0.0 else 0.0
    xc = min(max(x, _CLAMP), 1.0 - _CLAMP)
    yc = min(max(y, _CLAMP), 1.0 - _CLAMP)
    logit_y = math.log(yc) - math.log1p(-yc)
    if xc <= yc:  # the minimiser: the stationary point logit(z) = logit(y) -+ eps, clipped
        z = max(xc, _sigmoid(logit_y - epsilon))
    else:
        z = min(xc, _sigmoid(logit_y + epsilon))
    # z = x whenever epsilon is inf: capping epsilon makes that term 0, not inf * 0
    linear = min(epsilon, _FLOAT_MAX) * abs(z - xc)
    return linear + z * math.log(z / yc) + (1.0 - z) * math.log((1.0 - z) / (1.0 - yc))


@vectorize(["float64(float64, float64, float64)"], cache=True)
def _d_epsilon(x, y, epsilon):  # pragma: no cover - compiled
    return d_epsilon_value(x, y, epsilon)


def d_epsilon(x: Any, y: Any, epsilon: Any) -> Any:
    """The privacy-aware divergence of Azize, Wu, Honda, Orabona, Ito and Basu (2025, Def. 1).

    ``d_eps(x, y) = inf {eps |z - x| + kl(z, y) : z between x and y}`` for Bernoulli means x, y.
    It interpolates between the Bernoulli kl (large epsilon) and epsilon times the total
    variation ``|x - y|`` (small epsilon). It never exceeds either of them.

    The objective is convex in z, so the infimum is a clipped stationary point. For
    ``x <= y`` the minimiser is ``max(x, sigmoid(logit(y) - eps))``. For ``x > y`` it is
    ``min(x, sigmoid(logit(y) + eps))``. This closed form is derived here, not quoted from the
    paper; the tests compare it with a brute-force search over z. Means are clamped to
    ``[1e-12, 1 - 1e-12]``, except that ``d_eps(x, 1) = eps (1 - x)`` and ``d_eps(x, 0) = eps x``
    exactly. An infinite epsilon gives kl.

    Args:
        x: the first means, in [0, 1] (broadcast with ``y`` and ``epsilon``).
        y: the second means, in [0, 1].
        epsilon: the privacy budgets, > 0 (``inf`` allowed).

    Returns:
        The divergences: a float for scalar arguments, else an array of the broadcast shape.

    Example:
        >>> from ldp_gym.envs.mab import d_epsilon, bernoulli_kl
        >>> float(d_epsilon(0.5, 1.0, 0.1))                # eps (1 - x): finite where kl is not
        0.05
        >>> bool(abs(d_epsilon(0.7, 0.85, 1e9) - bernoulli_kl(0.7, 0.85)) < 1e-12)
        True
    """
    x, y, eps = (np.asarray(v, dtype=np.float64) for v in (x, y, epsilon))
    if not (np.all((x >= 0) & (x <= 1)) and np.all((y >= 0) & (y <= 1))):
        raise ValueError("x and y must be Bernoulli means in [0, 1]")
    if not np.all(eps > 0):
        raise ValueError("epsilon must be > 0")
    return _d_epsilon(x, y, eps)


def optimal_lower_bound(means: Sequence[float], horizon: Any, epsilon: float) -> np.ndarray:
    """Regret lower bound under epsilon-global DP (Azize et al. 2025, Thm 1).

    ``sum_a Delta_a log T / d_eps(mu_a, mu*)`` over the sub-optimal Bernoulli arms. It
    improves :func:`problem_dependent_lower_bound` (Azize and Basu 2022) at every epsilon. It is
    asymptotic: plotted beside regret curves it shows the slope, not a floor at small T.

    Example:
        >>> from ldp_gym.envs.mab import optimal_lower_bound
        >>> round(float(optimal_lower_bound([0.75, 0.7, 0.7, 0.7, 0.7], 1e6, 0.01)), 1)
        5632.0
    """
    mu = np.asarray(means, dtype=np.float64)
    if mu.ndim != 1 or mu.size < 2:
        raise ValueError(f"means must be a list of two or more Bernoulli means, got {means!r}")
    t = np.asarray(horizon, dtype=np.float64)
    if not np.all(np.isfinite(t) & (t >= 1)):
        raise ValueError(f"horizon must be finite and >= 1, got {horizon!r}")
    gaps = mu.max() - mu
    sub = gaps > 0
    coef = np.sum(gaps[sub] / d_epsilon(mu[sub], mu.max(), epsilon))
    return coef * np.log(t)
