"""Nonparametric contextual bandits (``LDPNonparametricBandit-v0``) and real data as bandits.

**Setting** (Perchet and Rigollet 2013). Ma et al. 2025 study it under local DP with
transfer, in "Locally private nonparametric contextual multi-armed bandits with
transfer learning". Every round a context X_t is drawn uniformly on
[0, 1]^d (``dim``, default 2) and shown to the learner, which pulls one of K
arms (``n_arms``) and receives a Bernoulli reward of mean ``f_a(X_t)``. The
reward functions are fixed, the same in every run and episode, and only
assumed smooth: no parametric model. The regret is
``sum_t f_{k*(X_t)}(X_t) - f_{a_t}(X_t)``. Observation: the context, a
``(d,)`` float32 array in ``Box(0, 1)``; the means are computed from exactly
these float32 values, so a learner sees the point its reward was drawn at.
``info`` holds ``expected_reward``, ``optimal_reward``, ``regret`` and
``optimal_action`` as in the other arm settings. Ties between arms, on sets of
measure zero, go to the smallest index.

**Reward functions** (``reward``):

* ``bumps``, the default, from Ma et al. section 4.1: for k = 0, ..., K - 1,
  ``f_k(x) = 2 e^{-a_k} / (1 + e^{-a_k})`` with
  ``a_k = 2 K^2 (x_1 - (k + 1)/(K + 1))^2``: a bump of height 1 centred at
  ``x_1 = (k + 1)/(K + 1)``, depending on the first coordinate only; arm k is
  best on the slab of ``x_1`` nearest its centre.
* ``checkerboard``: the K = 2 "symmetric" function of the paper's supplement. It
  needs ``n_arms = 2`` and ``dim >= 2``, and depends on x_1, x_2 only. With
  ``s(x) = sign((x_1 - 1/2)(x_2 - 1/2))`` and
  ``h(x) = 1 - 4 max_{j = 1, 2} |frac(2 x_j)/2 - 1/4|``,
  ``f_0(x) = (1 - s(x) h(x))/2`` and ``f_1(x) = (1 + s(x) h(x))/2``.
  ``h`` is a pyramid of height 1 over each quadrant of [0, 1]^2, peaking at
  the quadrant's centre (coordinates 1/4 or 3/4) and vanishing on its edges
  (``x_j`` in {0, 1/2, 1}). Arm 1 is best on the lower-left and upper-right
  quadrants, arm 0 on the other two, with gap ``h(x)``, which vanishes along
  every quadrant edge. So it is harder than the bumps: the decision boundary is a
  cross with no margin around it. It is 2-Lipschitz in the sup norm and
  ``f_0 + f_1 = 1``; the bumps are Lipschitz with constant about 1.11 K.

**Auxiliary data** (``auxiliary``; Ma et al. section 3): a sequence of
dataset specifications, ``{"n": n_m, "epsilon": eps_m, "gamma": gamma_m,
"kappa": kappa_m}`` (``gamma`` defaults to 0, ``kappa`` to 1). Dataset m has
n_m points from the same reward functions under covariate shift: X has density
``p_gamma(x) = ((gamma + d)/d) (2 ||x - 1/2||_inf)^gamma`` on [0, 1]^d, given by
:func:`auxiliary_density`. With gamma = 0 this is the target's uniform law; larger
gamma moves mass to the boundary of the cube. The sampler is exact for every
gamma >= 0 (:func:`sample_auxiliary_contexts`). The radius
``r = ||X - 1/2||_inf`` has density proportional to ``r^gamma * r^(d - 1)`` on
[0, 1/2], the density times the area of the cube's surface at radius r, so
``r = U^(1/(gamma + d)) / 2``. Given r, X is uniform on the surface of the cube of
half-width r: one of its 2d faces uniformly, as they have equal areas, the face's
coordinate at ``1/2 +- r`` and the others uniform in ``[1/2 - r, 1/2 + r]``. Actions
are logged by a behaviour policy independent of x, with probabilities
``linspace(kappa/K, (2 - kappa)/K, K)`` given by :func:`behaviour_policy`, and rewards
are Bernoulli ``f_A(X)``. With kappa = 1 the policy is uniform; smaller kappa explores
arm 0 less. ``core.auxiliary_data(run)`` returns run ``run``'s raw logged datasets
``[(X, A, Y), ...]`` of its current episode (float64 (n_m, d), int64 (n_m,), float64
(n_m,)). ``epsilon`` is the budget the *agent* privatises dataset m with: the env hands
out raw data, as it hands out raw rewards. The data are drawn on demand from 256 bits
of entropy that every run draws from the env's ``np_random`` at its reset. The same
reset seed gives the same data, every run and every episode its own, dataset m depends
only on that entropy and its own specification, and no dataset is held in memory by the
env. The entropy is drawn whether or not ``auxiliary`` is given, so the target contexts
and rewards of a seed are the same with and without auxiliary data. This allows paired
comparisons. ``core.auxiliary`` keeps the validated specifications as a tuple of dicts,
for the runner's metadata.

**Real data as bandits** (``LDPClassificationBandit-v0``): Riquelme et al. 2018's
construction, used by Ma et al. section 4.2. Classes are arms and the reward is 1 when
the pulled arm is the row's label, 0 otherwise, so the expected reward of arm a at a
row is ``1{a = label}``. The regret of a round is ``1 - 1{a = label}``, and the best arm
is the label. Contexts are rows drawn uniformly with replacement from a dataset that
ships inside scikit-learn or river, so nothing is downloaded: ``dataset`` is
``breast_cancer``, ``digits``, ``iris`` or ``wine`` (scikit-learn), or ``phishing``,
``banana``, ``segment`` (ImageSegments) or ``shuttle`` (river). Both are optional
dependencies (the ``data`` extra). One user is one row: the privacy unit of every agent
here (its context, action and reward). Features are
min-max scaled to [0, 1] over the dataset; constant features map to 0. ``dim`` reduces
the dimension by principal components: the scaled features are centred, projected on
their ``dim`` leading right singular vectors and min-max scaled to [0, 1] again. The
vectors come from numpy's SVD, each with its sign fixed so that its largest loading is
positive. The paper's Adult, Jobs and Taxi datasets cannot be fetched here; they are
in its Table 1, each split into target and auxiliary data. Auxiliary datasets take the
same specifications: their rows are drawn with replacement with probabilities
proportional to ``(2 ||x - 1/2||_inf)^gamma`` over the scaled rows, logged by the same
behaviour policy. With gamma = 0 this is the target's law.

Both cores also declare ``multi_parameter = True``, ``link = "logistic"`` and
``reward_bound = 1.0``, which the contextual agents read
(:meth:`~ldp_gym.agents.glm.ContextualAgent.env_params`). Han et al.'s
multi-parameter agents then run here as the paper's "Linear" baseline, with one
logistic model per arm, misspecified on purpose.

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> env = gym.make("LDPNonparametricBandit-v0",
    ...                auxiliary=[{"n": 500, "epsilon": 2.0, "gamma": 1.0}])
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, env.action_space
    ((2,), Discrete(3))
    >>> [(X.shape, A.shape, Y.shape) for X, A, Y in env.unwrapped.core.auxiliary_data(0)]
    [((500, 2), (500,), (500,))]
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from numba import njit

from ldp_gym.validation import MIN_EPSILON, check_int, check_real

from ..protocols import DrawsBlocks
from .base import BanditCore, BanditEnv, RoundsAhead, make_vector_class, river_text

__all__ = ["AUXILIARY_KEYS", "CLASSIFICATION_DATASETS", "REWARDS", "RIVER_DATASETS",
           "ClassificationBanditCore", "ClassificationBanditEnv", "ClassificationBanditVectorEnv",
           "NonparametricCore",
           "NonparametricEnv", "NonparametricVectorEnv", "auxiliary_density", "behaviour_policy",
           "bump_rewards", "check_auxiliary", "checkerboard_rewards", "load_classification",
           "sample_auxiliary_contexts"]

REWARDS = ("bumps", "checkerboard")
#: the datasets of ``LDPClassificationBandit-v0``: scikit-learn's bundled ones, then river's
#: (:data:`RIVER_DATASETS`); all ship inside their wheels, nothing is downloaded
CLASSIFICATION_DATASETS = ("breast_cancer", "digits", "iris", "wine", "phishing", "banana",
                           "segment", "shuttle")
#: river's bundled classification files: name -> (file in ``river/datasets``, rows, classes)
RIVER_DATASETS = {"phishing": ("phishing.csv.gz", 1250, 2), "banana": ("banana.zip", 5300, 2),
                  "segment": ("segment.csv.zip", 2310, 7), "shuttle": ("shuttle.csv.gz", 49097, 2)}
#: the keys of an auxiliary dataset's specification (``gamma`` and ``kappa`` are optional)
AUXILIARY_KEYS = ("n", "epsilon", "gamma", "kappa")
#: the extra of ldp-gym that installs scikit-learn
DATA_EXTRA = "data"


# --------------------------------------------------------------------------- reward functions


def bump_rewards(x: Any, n_arms: int) -> np.ndarray:
    """The exponential bumps ``f_k(x) = 2 e^{-a_k}/(1 + e^{-a_k})``,
    ``a_k = 2 K^2 (x_1 - (k + 1)/(K + 1))^2``: means (..., K) of contexts x (..., d)."""
    return _reward_means(x, 0, n_arms)


def checkerboard_rewards(x: Any) -> np.ndarray:
    """The two-arm checkerboard ``f_k(x) = (1 + (2k - 1) s(x) h(x))/2``, with
    ``s(x) = sign((x_1 - 1/2)(x_2 - 1/2))`` and
    ``h(x) = 1 - 4 max_{j=1,2} |frac(2 x_j)/2 - 1/4|``: means (..., 2) of contexts x (..., d),
    d >= 2."""
    x = np.asarray(x)
    if x.shape[-1] < 2:
        raise ValueError("the checkerboard needs contexts of dimension >= 2")
    return _reward_means(x, 1, 2)


def _reward_means(x: Any, code: int, n_arms: int) -> np.ndarray:
    """Means (..., K) of the reward functions of code ``code`` (index in :data:`REWARDS`)."""
    x = np.asarray(x, dtype=np.float64)
    flat = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))
    out = np.empty((flat.shape[0], n_arms))
    _means(flat, code, n_arms, out)
    return out.reshape(x.shape[:-1] + (n_arms,))


@njit(cache=True, nogil=True, inline="always")
def _means_of(x, i, code, k_arms, out):  # pragma: no cover - compiled
    """Every arm's mean at the context ``x[i]`` (x (M, d)) into out (K,): the bumps (code 0)
    or the checkerboard (code 1). The row is read by index: a numba view per context is a
    reference-counted object."""
    x0 = x[i, 0]
    if code == 0:
        scale = 2.0 * k_arms * k_arms
        for k in range(k_arms):
            e = math.exp(-scale * (x0 - (k + 1.0) / (k_arms + 1.0)) ** 2)
            out[k] = 2.0 * e / (1.0 + e)
    else:
        x1 = x[i, 1]
        s = np.sign((x0 - 0.5) * (x1 - 0.5))
        h = 1.0 - 4.0 * max(abs((2.0 * x0) % 1.0 / 2.0 - 0.25),
                            abs((2.0 * x1) % 1.0 / 2.0 - 0.25))
        out[0] = 0.5 - 0.5 * s * h
        out[1] = 0.5 + 0.5 * s * h


@njit(cache=True, nogil=True)
def _means(x, code, k_arms, out):  # pragma: no cover - compiled
    """Means (M, K) at the contexts x (M, d)."""
    m = np.empty(k_arms)
    for i in range(x.shape[0]):
        _means_of(x, i, code, k_arms, m)
        for k in range(k_arms):
            out[i, k] = m[k]


@njit(cache=True, nogil=True)
def _step_outcomes(x, code, k_arms, actions, u, rewards, mean, best,
                   best_arm):  # pragma: no cover - compiled
    """One round of N runs at contexts x (N, d): the chosen arm's Bernoulli reward (from the
    uniforms u (N,)) and mean, the best mean and the best arm, the first on ties."""
    m = np.empty(k_arms)
    for n in range(x.shape[0]):
        _means_of(x, n, code, k_arms, m)
        arg = 0
        for k in range(1, k_arms):
            if m[k] > m[arg]:
                arg = k
        chosen = m[actions[n]]
        mean[n], best[n], best_arm[n] = chosen, m[arg], arg
        rewards[n] = 1.0 if u[n] < chosen else 0.0


@njit(cache=True, nogil=True)
def _block_outcomes(x, code, k_arms, u, rewards, regret):  # pragma: no cover - compiled
    """Every arm's Bernoulli reward (from the uniforms u (M, K)) and instantaneous regret
    (M, K) at the contexts x (M, d)."""
    m = np.empty(k_arms)
    for i in range(x.shape[0]):
        _means_of(x, i, code, k_arms, m)
        top = m[0]
        for k in range(1, k_arms):
            top = max(top, m[k])
        for k in range(k_arms):
            rewards[i, k] = 1.0 if u[i, k] < m[k] else 0.0
            regret[i, k] = top - m[k]


# --------------------------------------------------------------------------- auxiliary data


def auxiliary_density(x: Any, gamma: float) -> np.ndarray:
    """The density ``((gamma + d)/d) (2 ||x - 1/2||_inf)^gamma`` of the auxiliary contexts on
    [0, 1]^d (0 outside), at points x (..., d)."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    r = np.abs(x - 0.5).max(axis=-1)
    inside = ((x >= 0.0) & (x <= 1.0)).all(axis=-1)
    return np.where(inside, (gamma + d) / d * (2.0 * r) ** gamma, 0.0)


def sample_auxiliary_contexts(rng: np.random.Generator, n: int, dim: int,
                              gamma: float) -> np.ndarray:
    """Draw n points (n, dim) of density :func:`auxiliary_density`, exactly.

    The radius
    ``r = ||x - 1/2||_inf = U^(1/(gamma + d))/2``, then a uniform point on the surface of the
    cube of half-width r: one of the 2d faces uniformly, then a uniform point on it."""
    r = 0.5 * rng.random(n) ** (1.0 / (gamma + dim))
    face = rng.integers(0, 2 * dim, size=n)
    pts = 2.0 * rng.random((n, dim)) - 1.0
    pts[np.arange(n), face // 2] = np.where(face % 2 == 0, -1.0, 1.0)
    return 0.5 + r[:, None] * pts


def behaviour_policy(n_arms: int, kappa: float) -> np.ndarray:
    """The logging policy's probabilities ``linspace(kappa/K, (2 - kappa)/K, K)``.

    They sum to 1, normalised against rounding."""
    p = np.linspace(kappa / n_arms, (2.0 - kappa) / n_arms, n_arms)
    return p / p.sum()


def check_auxiliary(auxiliary: Any) -> tuple[dict[str, Any], ...]:
    """Validate auxiliary dataset specifications: a list or tuple of dicts with
    ``n`` (int >= 1), ``epsilon`` (> 0), optional ``gamma`` (>= 0, default 0) and ``kappa``
    (in [0, 1], default 1). Returns them complete, as a tuple of dicts.

    Raises:
        TypeError: not a sequence of dicts; a value of the wrong type.
        ValueError: unknown or missing keys; a value out of range. The message names it, as
            ``auxiliary[m]['gamma']``.
    """
    if isinstance(auxiliary, (str, bytes, Mapping)) or not isinstance(auxiliary, Sequence):
        raise TypeError(f"auxiliary must be a sequence (list or tuple) of dicts, got "
                        f"{type(auxiliary).__name__}")
    out = []
    for m, spec in enumerate(auxiliary):
        where = f"auxiliary[{m}]"
        if not isinstance(spec, Mapping):
            raise TypeError(f"{where} must be a dict with keys {AUXILIARY_KEYS}, got "
                            f"{type(spec).__name__}")
        unknown = [k for k in spec if k not in AUXILIARY_KEYS]
        if unknown:
            raise ValueError(f"{where} has unknown keys {', '.join(sorted(map(repr, unknown)))}; "
                             f"allowed: {', '.join(AUXILIARY_KEYS)}")
        for key in ("n", "epsilon"):
            if key not in spec:
                raise ValueError(f"{where} needs the key {key!r}")
        out.append({
            "n": check_int(f"{where}['n']", spec["n"]),
            "epsilon": check_real(f"{where}['epsilon']", spec["epsilon"], low=MIN_EPSILON,
                                  low_open=False),
            "gamma": check_real(f"{where}['gamma']", spec.get("gamma", 0.0), low=0.0,
                                low_open=False),
            "kappa": check_real(f"{where}['kappa']", spec.get("kappa", 1.0), low=0.0, high=1.0,
                                low_open=False, high_open=False),
        })
    return tuple(out)


# --------------------------------------------------------------------------- shared core


class _ContextArmsCore(RoundsAhead, BanditCore, DrawsBlocks):
    """K arms, i.i.d. contexts shown each round, Bernoulli rewards of fixed mean functions,
    per-run auxiliary datasets. Subclasses keep a per-run *state*, the context or a row
    index, and implement ``_draw_states``, ``_obs``, ``_arm_means`` and ``_aux_points``."""

    public = ("dim", "n_arms", "auxiliary", "multi_parameter", "link", "reward_bound")

    #: declarations read by the contextual agents (a logistic model per arm, one context)
    multi_parameter = True
    link = "logistic"
    reward_bound = 1.0
    reward_range = (0.0, 1.0)
    bounded_rewards = (0.0, 1.0)
    #: the means are 0 or 1 (no Bernoulli draw needed)
    _deterministic = False
    n_arms: int
    dim: int
    #: a run's state: its shape (after the run axis) and dtype
    _state_tail: tuple[int, ...] = ()
    _state_dtype: Any = np.int64

    def _setup(self, auxiliary: Any) -> None:
        self.auxiliary = check_auxiliary(auxiliary)
        self.action_space = spaces.Discrete(self.n_arms)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.dim,), dtype=np.float32)
        self.state = np.zeros((0,) + self._state_tail, dtype=self._state_dtype)
        self._entropy = np.zeros((0, 4), dtype=np.uint64)

    # the setting's parts
    def _obs(self, states: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _arm_means(self, states: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _aux_points(self, rng: np.random.Generator, n: int,
                    gamma: float) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    # the core
    def reset(self, rng, runs, n_runs):
        if self.state.shape[0] != n_runs:
            self.state = np.zeros((n_runs,) + self._state_tail, dtype=self._state_dtype)
            self._entropy = np.zeros((n_runs, 4), dtype=np.uint64)
        self.state[runs] = self._draw_states(rng, (len(runs),))
        self._entropy[runs] = rng.integers(0, 2 ** 64, size=(len(runs), 4), dtype=np.uint64)
        self._rows = np.arange(n_runs)
        if len(runs) == n_runs:
            self._discard_ahead()

    def observe(self):
        return self._obs(self.state)

    def _state_numbers(self):
        return math.prod(self.state.shape[1:])

    def step(self, rng, actions):
        nxt, u = self._next_round(rng, self.state.shape[0])
        rewards, mean, best, best_arm = self._play(self.state, actions, u)
        self.state = nxt.copy()
        return rewards, {"expected_reward": mean, "optimal_reward": best, "regret": best - mean,
                         "optimal_action": best_arm}

    def draw_block(self, rng, length):
        n = self.state.shape[0]
        states = np.concatenate([self.state[:, None], self._draw_states(rng, (n, length))],
                                axis=1)  # rounds 1..length, then the next round's
        rewards, regrets = self._play_all(rng, states[:, :length])
        self.state = states[:, length].copy()
        return self._obs(states), rewards, regrets

    def _play(self, states: np.ndarray, actions: np.ndarray, u: np.ndarray):
        """One round at states (N, ...): rewards (from the uniforms u (N,)), the chosen mean,
        the best mean and the best arm, each (N,). Ties go to the first arm."""
        means = self._arm_means(states)
        best_arm = means.argmax(axis=1)
        best = means[self._rows, best_arm]
        mean = means[self._rows, actions]
        rewards = mean.copy() if self._deterministic else (u < mean).astype(np.float64)
        return rewards, mean, best, best_arm

    def _play_all(self, rng: np.random.Generator, states: np.ndarray):
        """Every arm's rewards and regrets (N, L, K) at states (N, L, ...)."""
        means = self._arm_means(states)
        if self._deterministic:
            rewards = means.copy()
        else:
            rewards = (rng.random(means.shape) < means).astype(np.float64)
        return rewards, means.max(axis=-1, keepdims=True) - means

    def auxiliary_data(self, run: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The raw logged auxiliary datasets of run ``run``'s current episode:
        ``[(X, A, Y), ...]`` in the order of :attr:`auxiliary`, X float64 (n_m, d), actions A
        int64 (n_m,), rewards Y float64 (n_m,). Drawn anew on every call from the run's
        entropy: the same data each time, and nothing is stored."""
        run = check_int("run", run, low=0)
        if run >= self._entropy.shape[0]:
            if self._entropy.shape[0] == 0:
                raise RuntimeError("auxiliary_data: call reset() first")
            raise ValueError(f"run must be < {self._entropy.shape[0]} (the number of runs), "
                             f"got {run}")
        entropy = [int(v) for v in self._entropy[run]]
        out = []
        for m, spec in enumerate(self.auxiliary):
            rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(m,)))
            n = spec["n"]
            x, means = self._aux_points(rng, n, spec["gamma"])
            actions = rng.choice(self.n_arms, size=n, p=behaviour_policy(self.n_arms,
                                                                          spec["kappa"]))
            chosen = means[np.arange(n), actions]
            rewards = chosen.copy() if self._deterministic \
                else (rng.random(n) < chosen).astype(np.float64)
            out.append((x, actions.astype(np.int64), rewards))
        return out


# --------------------------------------------------------------------------- synthetic


class NonparametricCore(_ContextArmsCore):
    """Nonparametric contextual bandit on [0, 1]^d (Ma et al. 2025, section 4.1).

    Args:
        dim: d >= 1 (default 2); ``checkerboard`` needs d >= 2.
        n_arms: K >= 2; default 3 for ``bumps``, 2 for ``checkerboard``, which refuses any
            other K.
        reward: ``"bumps"`` (default) or ``"checkerboard"``; see the module docstring.
        auxiliary: auxiliary dataset specifications, ``[{"n": ..., "epsilon": ...,
            "gamma": ..., "kappa": ...}, ...]`` (:func:`check_auxiliary`); their raw data come
            from :meth:`auxiliary_data`.
    """

    def __init__(self, dim: int = 2, n_arms: int | None = None, reward: str = "bumps",
                 auxiliary: Sequence[Mapping[str, Any]] = ()):
        if not isinstance(reward, str) or reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        self.reward = reward
        self.dim = check_int("dim", dim)
        default_arms = 3 if reward == "bumps" else 2
        self.n_arms = check_int("n_arms", default_arms if n_arms is None else n_arms, low=2)
        if reward == "checkerboard":
            if self.n_arms != 2:
                raise ValueError(f"n_arms must be 2 for reward='checkerboard' (the two-arm "
                                 f"checkerboard), got {self.n_arms}")
            if self.dim < 2:
                raise ValueError(f"dim must be >= 2 for reward='checkerboard' (it depends on "
                                 f"x_1 and x_2), got {self.dim}")
        self._code = REWARDS.index(reward)
        self._state_tail, self._state_dtype = (self.dim,), np.float32
        self._setup(auxiliary)

    def reward_means(self, x: Any) -> np.ndarray:
        """The mean reward of every arm (..., K) at contexts x (..., d)."""
        if self.reward == "bumps":
            return bump_rewards(x, self.n_arms)
        return checkerboard_rewards(x)

    def _draw_states(self, rng, shape):
        # float32 contexts: the observation is exactly the point the means are computed at
        return rng.random(shape + (self.dim,), dtype=np.float32)

    def _obs(self, states):
        return states.copy()

    def _arm_means(self, states):
        return self.reward_means(states)

    def _play(self, states, actions, u):
        n = states.shape[0]
        rewards, mean, best = np.empty(n), np.empty(n), np.empty(n)
        best_arm = np.empty(n, dtype=np.int64)
        _step_outcomes(states.astype(np.float64), self._code, self.n_arms, actions, u, rewards,
                       mean, best, best_arm)
        return rewards, mean, best, best_arm

    def _play_all(self, rng, states):
        shape = states.shape[:2] + (self.n_arms,)
        u = rng.random(shape)
        rewards, regrets = np.empty(shape), np.empty(shape)
        _block_outcomes(states.reshape(-1, self.dim).astype(np.float64), self._code, self.n_arms,
                        u.reshape(-1, self.n_arms), rewards.reshape(-1, self.n_arms),
                        regrets.reshape(-1, self.n_arms))
        return rewards, regrets

    def _aux_points(self, rng, n, gamma):
        x = sample_auxiliary_contexts(rng, n, self.dim, gamma)
        return x, self.reward_means(x)


# --------------------------------------------------------------------------- real data


def _river_table(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """A river bundled dataset's raw features and labels, read from the file inside the
    installed package (river itself is not imported).

    ``phishing`` (1250 web pages, 9 features, phishing or not), ``banana`` (5300 points, 2
    features, 2 classes; libsvm format), ``segment`` (ImageSegments: 2310 image regions,
    18 features, 7 classes) and ``shuttle`` (49097 rows, 9 features, anomaly or not: river's
    binary version of the Statlog shuttle data)."""
    import csv
    import io

    text = river_text(RIVER_DATASETS[dataset][0], f"LDPClassificationBandit-v0 ({dataset})")
    if dataset == "banana":  # libsvm: "label 1:x1 2:x2"
        rows = [line.split() for line in text.splitlines() if line.strip()]
        return (np.array([[float(v.split(":")[1]) for v in r[1:]] for r in rows]),
                np.array([r[0] for r in rows]))
    table = list(csv.reader(io.StringIO(text)))[1:]
    return np.array([r[:-1] for r in table], dtype=np.float64), np.array([r[-1] for r in table])


@functools.lru_cache(maxsize=16)
def load_classification(dataset: str, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A bundled dataset as bandit data: features (n, d) and labels (n,).

    scikit-learn's ``breast_cancer``, ``digits``, ``iris`` and ``wine``, or river's
    ``phishing``, ``banana``, ``segment`` and ``shuttle`` (:func:`_river_table`). The features
    are float64 in [0, 1]: min-max scaled, then reduced to ``dim`` principal components and
    min-max scaled again if ``dim`` is given. Every value is representable in float32. The
    labels are int64 in {0, ..., K - 1}, in the order of the sorted raw labels. Cached; the
    arrays are read-only.

    Raises:
        ImportError: scikit-learn (or river, for its datasets) is not installed
            (``pip install 'ldp-gym[data]'``).
    """
    if dataset not in CLASSIFICATION_DATASETS:
        raise ValueError(f"dataset must be one of {CLASSIFICATION_DATASETS}, got {dataset!r}")
    if dataset in RIVER_DATASETS:
        raw, target = _river_table(dataset)
    else:
        try:  # an optional dependency, imported by name (no stubs needed)
            datasets = importlib.import_module("sklearn.datasets")
        except ImportError as exc:
            raise ImportError(f"LDPClassificationBandit-v0 loads scikit-learn's bundled "
                              f"datasets: install the extra, pip install "
                              f"'ldp-gym[{DATA_EXTRA}]' (or pip install scikit-learn)") from exc
        bunch = getattr(datasets, f"load_{dataset}")()
        raw, target = np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target)
    features = _min_max(raw)
    if dim is not None:
        centred = features - features.mean(axis=0)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        v = vt[:dim]
        v *= np.sign(v[np.arange(v.shape[0]), np.abs(v).argmax(axis=1)])[:, None]
        features = _min_max(centred @ v.T)
    features = features.astype(np.float32).astype(np.float64)
    labels = np.unique(target, return_inverse=True)[1].astype(np.int64)
    features.setflags(write=False)
    labels.setflags(write=False)
    return features, labels


def _min_max(x: np.ndarray) -> np.ndarray:
    """Columns scaled to [0, 1] by their min and max; constant columns go to 0."""
    lo, hi = x.min(axis=0), x.max(axis=0)
    span = hi - lo
    return np.where(span > 0, (x - lo) / np.where(span > 0, span, 1.0), 0.0)


class ClassificationBanditCore(_ContextArmsCore):
    """A classification dataset as a contextual bandit: classes are arms, reward 1 when the
    pulled arm is the row's label (Riquelme et al. 2018; Ma et al. 2025, section 4.2).

    Contexts are rows drawn uniformly with replacement; the expected reward of arm a is
    ``1{a = label}``, the best arm the label; see the module docstring. Needs scikit-learn or
    river (the ``data`` extra).

    Args:
        dataset: one of :data:`CLASSIFICATION_DATASETS`. The default ``"wine"`` has 178 rows,
            13 features and 3 classes.
        dim: keep this many principal components, from 1 to the number of features, or
            ``None`` (default) for every scaled feature.
        auxiliary: auxiliary dataset specifications as for :class:`NonparametricCore`; rows
            drawn with probabilities proportional to ``(2 ||x - 1/2||_inf)^gamma``.

    Raises:
        ImportError: scikit-learn is not installed.
    """

    _deterministic = True

    def __init__(self, dataset: str = "wine", dim: int | None = None,
                 auxiliary: Sequence[Mapping[str, Any]] = ()):
        if not isinstance(dataset, str) or dataset not in CLASSIFICATION_DATASETS:
            raise ValueError(f"dataset must be one of {CLASSIFICATION_DATASETS}, got {dataset!r}")
        if dim is not None:
            dim = check_int("dim", dim)
        self.dataset = dataset
        self.features, self.labels = load_classification(dataset, None)
        if dim is not None:
            if dim > self.features.shape[1]:
                raise ValueError(f"dim must be <= {self.features.shape[1]} (the features of "
                                 f"{dataset}), got {dim}")
            self.features, self.labels = load_classification(dataset, dim)
        self.dim = self.features.shape[1]
        self.n_arms = int(self.labels.max()) + 1
        self._obs_features = self.features.astype(np.float32)
        self._onehot = np.eye(self.n_arms)[self.labels]
        self._setup(auxiliary)

    def _draw_states(self, rng, shape):
        return rng.integers(0, self.labels.shape[0], size=shape)

    def _obs(self, states):
        return self._obs_features[states]

    def _arm_means(self, states):
        return self._onehot[states]

    def _aux_points(self, rng, n, gamma):
        if gamma == 0.0:
            rows = rng.integers(0, self.labels.shape[0], size=n)
        else:
            w = (2.0 * np.abs(self.features - 0.5).max(axis=1)) ** gamma
            rows = rng.choice(self.labels.shape[0], size=n, p=w / w.sum())
        return self.features[rows], self._onehot[rows]


# --------------------------------------------------------------------------- env classes


class NonparametricEnv(BanditEnv):
    __doc__ = (NonparametricCore.__doc__ or "") + """
    Example:
        >>> from ldp_gym.envs import NonparametricEnv
        >>> env = NonparametricEnv(reward="checkerboard")
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, obs.dtype, env.action_space
        ((2,), dtype('float32'), Discrete(2))
        >>> obs, reward, terminated, truncated, info = env.step(1)
        >>> reward in (0.0, 1.0), info["regret"] >= 0.0
        (True, True)
        >>> env.unwrapped.core.reward_means([[0.25, 0.25], [0.25, 0.75]]).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    core_class = NonparametricCore


class ClassificationBanditEnv(BanditEnv):
    __doc__ = (ClassificationBanditCore.__doc__ or "") + """
    Example:
        >>> from ldp_gym.envs import ClassificationBanditEnv
        >>> env = ClassificationBanditEnv(dataset="iris", dim=2)
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, env.action_space
        ((2,), Discrete(3))
        >>> obs, reward, terminated, truncated, info = env.step(0)
        >>> reward == 1.0 - info["regret"], info["regret"] == float(info["optimal_action"] != 0)
        (True, True)
    """
    core_class = ClassificationBanditCore


NonparametricVectorEnv = make_vector_class("NonparametricVectorEnv", NonparametricCore, """N runs of
    :class:`NonparametricEnv` in numpy.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import NonparametricVectorEnv
        >>> envs = NonparametricVectorEnv(num_envs=4, max_episode_steps=100,
        ...                               auxiliary=[{"n": 100, "epsilon": 1.0, "kappa": 0.5}])
        >>> obs, info = envs.reset(seed=0)
        >>> obs, rewards, terminated, truncated, info = envs.step(np.array([0, 1, 2, 0]))
        >>> obs.shape, rewards.shape, info["optimal_action"].shape
        ((4, 2), (4,), (4,))
        >>> obs, rewards, regrets = envs.draw_block(8)   # 8 rounds of every arm, drawn ahead
        >>> obs.shape, rewards.shape, regrets.shape
        ((4, 9, 2), (4, 8, 3), (4, 8, 3))
        >>> X, A, Y = envs.core.auxiliary_data(3)[0]     # run 3's logged dataset
        >>> X.shape, A.dtype, Y.dtype
        ((100, 2), dtype('int64'), dtype('float64'))
    """)
ClassificationBanditVectorEnv = make_vector_class("ClassificationBanditVectorEnv",
                                                  ClassificationBanditCore, """N runs of
    :class:`ClassificationBanditEnv` in numpy.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import ClassificationBanditVectorEnv
        >>> envs = ClassificationBanditVectorEnv(num_envs=3, max_episode_steps=10,
        ...                                      dataset="digits", dim=5)
        >>> obs, info = envs.reset(seed=0)
        >>> obs.shape, envs.single_action_space
        ((3, 5), Discrete(10))
        >>> obs, rewards, regrets = envs.draw_block(4)
        >>> rewards.sum(axis=-1).tolist()     # one arm (the label) pays 1 in every round
        [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """)
