"""Combinatorial semi-bandits (``LDPCombinatorialBandit-v0``).

The setting of Chen, Zheng et al. (ICML 2020), "(Locally) Differentially
Private Combinatorial Semi-Bandits", section 2.1: m base arms (``n_arms``,
default 20) with outcomes ``X_t`` in [0, 1]^m, independent across arms and
rounds, of mean mu. Outcomes are Bernoulli by default, or Beta with
``concentration`` a + b by keyword, or real data: with ``distribution="yeast"`` the
outcomes of a round are the 14 labels of a row of river's bundled Yeast data (a multi-label
set of 2417 genes), drawn with replacement: choose K labels, observe which are correct. The
labels of a row are correlated, not independent as the paper assumes; with a linear reward
the expected reward, the oracle and the regret stay exact (the coverage family, whose
reward is not linear, is refused with yeast). The means are ``means`` if given, else drawn
uniformly in [0, 1] at every reset from the env's ``np_random``. Every round the
learner plays a super arm S_t of a family with ``|S| <= K``, where K is
``max_size`` (default 4). It receives the reward ``R(S_t, X_t)`` and observes
the semi-bandit feedback ``{(i, X_{t,i}) : i in S_t}``.

**Families and oracles** are set by ``family`` and live in :mod:`ldp_gym.oracles`,
shared with the agents:

* ``"topk"``: every S with ``1 <= |S| <= K``; linear reward ``sum_{i in S} X_i``,
  B_1-smooth, exact oracle.
* ``"paths"``: paths through K fully connected layers of ``m / K`` nodes. The nodes
  are the base arms, one per layer. Linear, B_1, exact oracle.
* ``"coverage"``: probabilistic maximum coverage,
  ``R(S, X) = (1/n) sum_j [1 - prod_{i in S} (1 - p_ij X_i)]`` over n targets of
  a known graph p. The graph is drawn from ``family_seed`` or given in
  ``family_params``. B_inf-smooth as the paper classifies it; greedy oracle with
  ``alpha = 1 - 1/e``, ``beta = 1``.

A :class:`~ldp_gym.oracles.Family` instance may also be passed as ``family``.

**Regret.** ``info`` carries ``expected_reward`` ``r_mu(S_t)``,
``optimal_reward`` ``alpha beta opt_mu``, ``regret``, ``alpha``, ``beta`` and
``projected``. Here ``opt_mu = max_S r_mu(S)`` is exact: the exact oracle gives it
for linear families, enumeration for coverage. ``regret`` is the difference of the
two rewards: the instantaneous (alpha, beta)-approximation regret of the paper's
Definition 2. For exact oracles it is the plain regret. It may be negative for
coverage, where a super arm can beat ``alpha opt``. There is no
``optimal_action``, since a super arm is not a scalar: the best super arm is
``core.family.oracle(core.means)`` for exact families.

**Actions.** The action space is a :class:`SuperArmSpace`: a ``MultiBinary(m)``
holding the indicator of S, whose ``sample()`` draws feasible super arms and whose
``contains()`` checks feasibility. So Gymnasium's checker and stable-baselines3 run
unchanged. Shapes and dtypes are checked by :mod:`ldp_gym.validation`. It accepts
0/1 integers, or floats exactly 0 or 1 as stable-baselines3's PPO and A2C send
them; it refuses bools, 0.5 and wrong shapes. With ``strict=True`` (default, for
agents) an infeasible super arm is a ``ValueError`` naming the action. With
``strict=False``, meant for generic RL learners, it is mapped to a feasible one by
:meth:`~ldp_gym.oracles.Family.project` and ``info["projected"]`` is True.
Cardinality families keep the K lowest-indexed arms, and an empty set becomes
``{0}``. Paths keep the lowest-indexed chosen node of each layer, or its first node.

**Speed.** The vector env's ``step`` takes a compiled path for the agents'
batch: int8 super arms, every one feasible, no run restarting. One pass checks
the batch, one draws the outcomes and computes the observations, rewards and
expected rewards. Anything else goes through the checked ``step`` of
:class:`~ldp_gym.envs.base.BanditVectorEnv`, with the same results draw for
draw. The block path (:class:`~ldp_gym.protocols.ScoresBlocks`) serves agents
with ``block_play = PLAYS_OUTCOMES``. ``draw_outcomes`` draws every base arm's
outcomes of L rounds at once (N, L, m), bitwise the per-round draws: the same
stream, round-major. The agent plays them, and ``score_block`` scores its
super arms (N, L, m) as ``step`` does, giving the regret (N, L). The observation
becomes the feedback of the last round.

**Observations** (float32, (2m,)): the outcomes of the base arms of the last
super arm, 0 elsewhere, then its indicator; zeros after reset.

**Rewards** lie in ``bounded_rewards``: ``(0, K)`` for the linear families,
``(0, 1)`` for coverage, a fraction of the targets.

Example:
    >>> import gymnasium as gym
    >>> import numpy as np
    >>> import ldp_gym
    >>> env = gym.make("LDPCombinatorialBandit-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    >>> obs.shape, sorted(info)
    ((40,), ['alpha', 'beta', 'expected_reward', 'optimal_reward', 'projected', 'regret'])
"""

from __future__ import annotations

import functools
from copy import deepcopy
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space
from numba import njit
from typing_extensions import override

from ldp_gym.oracles import ENUMERATION_LIMIT, FAMILIES, Coverage, Family, make_family
from ldp_gym.validation import check_bool, check_finite, check_int, check_real

from .base import BanditCore, BanditEnv, BanditVectorEnv, river_text

__all__ = ["CombinatorialCore", "CombinatorialEnv", "CombinatorialVectorEnv", "SuperArmBatchSpace",
           "SuperArmSpace", "YEAST_LABELS", "yeast_labels"]

#: the labels of river's Yeast data: the base arms of ``distribution="yeast"``
YEAST_LABELS = 14

DISTRIBUTIONS = ("bernoulli", "beta", "yeast")


@functools.lru_cache(maxsize=1)
def yeast_labels() -> np.ndarray:
    """The 14 labels (2417, 14) of river's bundled Yeast data (Elisseeff and Weston 2001), 0 or
    1, read-only: the outcomes of ``distribution="yeast"``."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(river_text("yeast.csv.gz",
                                                  "LDPCombinatorialBandit-v0 (yeast)"))))
    labels = np.array([r[-14:] for r in rows[1:]], dtype=np.float64)
    labels.setflags(write=False)
    return labels


@njit(cache=True, nogil=True)
def _play(S, draws, mu, bernoulli, seen, obs, rewards, expected):  # pragma: no cover - compiled
    """One round of every run: the outcomes ``seen`` (N, m) of the arms of S, the observations
    (N, 2m) and the linear reward and expected reward (N,).

    ``seen`` is 0 outside S. Its outcomes are Bernoulli ``draws < mu`` or the Beta ``draws``
    themselves. S is 0/1, so the sums add ``+0.0`` outside S, as :func:`_score_linear`'s,
    which leaves them unchanged: no branch per arm for the processor to mispredict."""
    runs, m = S.shape
    for r in range(runs):
        total, mean = 0.0, 0.0
        for i in range(m):
            hit = S[r, i] != 0
            x = (1.0 if draws[r, i] < mu[r, i] else 0.0) if bernoulli else draws[r, i]
            x = x if hit else 0.0
            total += x
            mean += mu[r, i] * S[r, i]
            seen[r, i] = x
            obs[r, i] = x
            obs[r, m + i] = 1.0 if hit else 0.0
        rewards[r] = total
        expected[r] = mean


@njit(cache=True, nogil=True)
def _bernoulli_block(draws, mu, out):  # pragma: no cover - compiled
    """Outcomes ``out[r, s, i] = draws[s, r, i] < mu[r, i]`` of rounds drawn round-major ``draws``
    (L, N, m), as ``_play`` draws them; float32, as the feedback shows them."""
    length, runs, m = draws.shape
    for r in range(runs):
        for s in range(length):
            for i in range(m):
                out[r, s, i] = 1.0 if draws[s, r, i] < mu[r, i] else 0.0
    return out


@njit(cache=True, nogil=True)
def _score_linear(S, outcomes, mu, target, regret, obs):  # pragma: no cover - compiled
    """The regret ``target - sum_{i in S} mu_i`` (N, L) of the super arms S (N, L, m) and the
    observation (N, 2m) of each run's last round; the sum runs in ``_play``'s order.

    It adds ``mu_i * S_i`` over every arm: for a mean in [0, 1] that is ``mu_i`` or ``+0.0``,
    and adding ``+0.0`` leaves a sum that is not ``-0.0`` unchanged. So the sums are bitwise
    ``_play``'s, without a branch per arm that the processor mispredicts on random super arms
    (34 -> 12 ns per run-round, measured)."""
    runs, length, m = S.shape
    for r in range(runs):
        for s in range(length):
            mean = 0.0
            for i in range(m):
                mean += mu[r, i] * S[r, s, i]
            regret[r, s] = target[r] - mean
        for i in range(m):
            hit = S[r, length - 1, i] != 0 if length else False
            obs[r, i] = outcomes[r, length - 1, i] if hit else 0.0
            obs[r, m + i] = 1.0 if hit else 0.0


class SuperArmSpace(spaces.MultiBinary):
    """``MultiBinary(m)`` restricted to the super arms of a family: ``sample()`` draws feasible
    ones (:meth:`~ldp_gym.oracles.Family.sample`) and ``contains()`` checks feasibility."""

    def __init__(self, family: Family, seed: Any = None):
        self.family = family
        super().__init__(family.m, seed=seed)

    @override
    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if mask is not None or probability is not None:  # a masked draw, made feasible
            raw = super().sample(mask=mask, probability=probability)
            return self.family._project(raw[None].astype(bool))[0].astype(np.int8)
        return self.family._sample(self.np_random, 1)[0]

    @override
    def contains(self, x: Any) -> bool:
        if not super().contains(x):
            return False
        return bool(self.family._feasible(np.asarray(x).astype(bool)[None])[0])

    def __repr__(self) -> str:
        return f"SuperArmSpace({self.family!r})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SuperArmSpace) and self.family == other.family


class SuperArmBatchSpace(spaces.Box):
    """A batch of n :class:`SuperArmSpace` actions (``batch_space`` of one): a ``Box(0, 1, (n, m),
    int8)`` whose ``sample()`` draws n feasible super arms and ``contains()`` checks each."""

    def __init__(self, family: Family, n: int, seed: Any = None):
        self.family = family
        super().__init__(0, 1, shape=(n, family.m), dtype=np.int8, seed=seed)

    @override
    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        return self.family._sample(self.np_random, self.shape[0])

    @override
    def contains(self, x: Any) -> bool:
        if not super().contains(x):
            return False
        return bool(self.family._feasible(np.asarray(x).astype(bool)).all())

    def __repr__(self) -> str:
        return f"SuperArmBatchSpace({self.family!r}, n={self.shape[0]})"


@batch_space.register(SuperArmSpace)
def _batch_super_arms(space: SuperArmSpace, n: int = 1) -> SuperArmBatchSpace:
    return SuperArmBatchSpace(space.family, n, seed=deepcopy(space.np_random))


class CombinatorialCore(BanditCore):
    """Stochastic combinatorial semi-bandit on a batch of runs.

    The observation carries the outcomes of the played base arms (``private_observation``):
    reward-only privacy wrappers refuse the setting; ``LaplaceSemiBandit`` releases them.

    Args:
        n_arms: m, the number of base arms. Default 20, or the family's.
        max_size: K, the largest super-arm size. Default 4, or the family's.
        family: ``"topk"`` (default), ``"paths"``, ``"coverage"``, or a
            :class:`~ldp_gym.oracles.Family`. For a Family, ``n_arms`` and ``max_size``, if
            given, must match it.
        distribution: ``"bernoulli"`` (default), ``"beta"``: Beta with mean mu_i and
            concentration ``concentration``, or ``"yeast"``: a semi-bandit from data, whose
            outcomes each round are the 14 labels (0/1) of a row of river's bundled Yeast data
            (2417 genes, multi-label) drawn with replacement; the means are the label
            frequencies, and one user is one row. Needs river (the ``data`` extra) and
            ``n_arms`` 14 (its default then).
        concentration: a + b of Beta outcomes.
        means: base-arm means (m,) in [0, 1] (in (0, 1) for Beta), the same at every reset;
            None (default) draws them uniformly at every reset.
        strict: refuse infeasible super arms (default) or project them (``strict=False``).
        family_params: parameters of :func:`~ldp_gym.oracles.make_family` for coverage: a dict
            ``{"targets": n, "probs": p}`` or ``{"targets": n, "density": d}``.
        family_seed: seed of the coverage graph drawn when ``family_params`` gives no ``probs``.

    Attributes:
        family: the :class:`~ldp_gym.oracles.Family`.
        means: (N, m) base-arm means of the runs.
        opt: (N,) ``opt_mu`` of the runs.
    """

    public = ("family",)

    private_observation = True  # the outcomes of S: reward wrappers would pass them through
    own_release = "LaplaceSemiBandit, or a private agent (CUCB-LDP1, CUCB-LDP2, CUCB-DP)"

    def __init__(self, n_arms: int | None = None, max_size: int | None = None,
                 family: str | Family = "topk", distribution: str = "bernoulli",
                 concentration: float = 2.0, means: Any = None, strict: bool = True,
                 family_params: dict | None = None, family_seed: int = 0):
        if isinstance(family, Family):
            for arg, value, want in (("n_arms", n_arms, family.m), ("max_size", max_size, family.K)):
                if value is not None and check_int(arg, value) != want:
                    raise ValueError(f"{arg}={value} does not match the family's {want}")
            self.family = family
        else:
            default_m = YEAST_LABELS if distribution == "yeast" else 20
            m = check_int("n_arms", default_m if n_arms is None else n_arms)
            K = check_int("max_size", 4 if max_size is None else max_size)
            if K > m:
                raise ValueError(f"max_size (K) must be <= n_arms (m), got max_size={K} > n_arms={m}")
            if not isinstance(family, str) or family not in FAMILIES:
                raise ValueError(f"family must be one of {FAMILIES} or a Family, got {family!r}")
            if family == "paths" and m % K:
                raise ValueError(f"family 'paths' needs n_arms to be a multiple of max_size, got "
                                 f"n_arms={m}, max_size={K}")
            if family_params is not None and not isinstance(family_params, dict):
                raise TypeError("family_params must be a dict or None")
            params = dict(family_params or {})
            params.setdefault("seed", check_int("family_seed", family_seed, low=0))
            self.family = make_family(family, m, K, params)
        if distribution not in DISTRIBUTIONS:
            raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")
        self.distribution = distribution
        self.concentration = check_real("concentration", concentration, low=0.0, low_open=True)
        self.table = self._data_table(means)
        if self.table is not None:
            means = self.table.mean(axis=0)
        self.strict = check_bool("strict", strict)
        m = self.family.m
        if isinstance(self.family, Coverage) and self.family.n_sets > ENUMERATION_LIMIT:
            raise ValueError(f"family 'coverage' computes opt exactly by enumerating C(n_arms, max_size) "
                             f"= {self.family.n_sets} sets, more than {ENUMERATION_LIMIT}: lower "
                             f"n_arms or max_size")
        if means is None:
            self.fixed_means = None
        else:
            mu = check_finite(means, "means").astype(np.float64)
            if mu.shape != (m,):
                raise ValueError(f"means must have shape ({m},) (n_arms), got {mu.shape}")
            if ((mu < 0) | (mu > 1)).any():
                raise ValueError("means must lie in [0, 1]")
            if distribution == "beta" and ((mu <= 0) | (mu >= 1)).any():
                raise ValueError("means must lie in (0, 1) for beta outcomes")
            self.fixed_means = mu
        self.n_arms, self.max_size = m, self.family.K
        self.alpha, self.beta = float(self.family.alpha), float(self.family.beta)
        self.action_space = SuperArmSpace(self.family)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(2 * m,), dtype=np.float32)
        self.bounded_rewards = self.family.reward_bounds
        self.reward_range = self.family.reward_bounds
        self.means = np.zeros((0, m))
        self.opt = np.zeros(0)
        self._obs = np.zeros((0, 2 * m), dtype=np.float32)

    def _data_table(self, means: Any) -> np.ndarray | None:
        """The outcomes' data of ``distribution="yeast"`` (rows, 14), checked, else None."""
        if self.distribution != "yeast":
            return None
        if self.family.m != YEAST_LABELS:
            raise ValueError(f"n_arms must be {YEAST_LABELS} (yeast's labels) with "
                             f"distribution='yeast', got {self.family.m}")
        if means is not None:
            raise ValueError("means must be None with distribution='yeast': its means are the "
                             "label frequencies of the data")
        if not self.family.linear:  # R(S, mu) is the expected reward only for independent arms
            raise ValueError(f"family must be linear (topk or paths) with distribution='yeast': "
                             f"yeast's labels are correlated, so {self.family!r}'s expected reward "
                             "is not its reward at the label frequencies")
        return yeast_labels()

    @override
    def reset(self, rng, runs, n_runs):
        m = self.n_arms
        if self.means.shape[0] != n_runs:
            self.means = np.zeros((n_runs, m))
            self.opt = np.zeros(n_runs)
            self._obs = np.zeros((n_runs, 2 * m), dtype=np.float32)
        if self.fixed_means is not None:
            self.means[runs] = self.fixed_means
        else:
            lo = 1e-3 if self.distribution == "beta" else 0.0
            self.means[runs] = lo + (1 - 2 * lo) * rng.random((len(runs), m))
        self.opt[runs] = self.family._optimum(self.means[runs])
        self._target = self.alpha * self.beta * self.opt
        self._alphas, self._betas = np.full(n_runs, self.alpha), np.full(n_runs, self.beta)
        self._obs = self._obs.copy()  # observations already returned stay as they were
        self._obs[runs] = 0.0

    @override
    def observe(self):
        return self._obs

    @override
    def step(self, rng, actions):
        S = actions.astype(bool)
        n = S.shape[0]
        projected = np.zeros(n, dtype=bool)
        bad = self.family._first_infeasible(S)
        if bad >= 0:
            if self.strict:
                arms = np.flatnonzero(S[bad]).tolist()
                raise ValueError(f"infeasible action in actions[{bad}]: arms {arms} are not a super arm "
                                 f"of {self.family!r} ({self.family.describe(S[bad])}); pass "
                                 f"strict=False to project it")
            projected = ~self.family._feasible(S)
            S[projected] = self.family._project(S[projected])
        return self.play_round(rng, S, projected)

    # ------------------------------------------------------------------ block path
    def draw_outcomes(self, rng: np.random.Generator, length: int) -> np.ndarray:
        """Block path (:class:`~ldp_gym.protocols.ScoresBlocks`): every base arm's outcomes
        (N, length, m) of the next ``length`` rounds, float32 as the feedback shows them.

        They do not depend on the super arms. Bitwise the outcomes ``length`` calls of
        :meth:`play_round` draw: the same stream, drawn round-major in one call."""
        mu = self.means
        n, m = mu.shape
        length = int(length)
        if self.table is not None:  # rows drawn with replacement, as play_round draws them
            rows = (rng.random((length, n)) * self.table.shape[0]).astype(np.int64)
            return np.ascontiguousarray(self.table[rows].transpose(1, 0, 2), dtype=np.float32)
        if self.distribution == "bernoulli":
            draws = rng.random((length, n, m))
            return _bernoulli_block(draws, mu, np.empty((n, length, m), dtype=np.float32))
        c = self.concentration
        draws = rng.beta(mu * c, (1.0 - mu) * c, size=(length, n, m))
        return np.ascontiguousarray(draws.transpose(1, 0, 2), dtype=np.float32)

    def score_block(self, actions: np.ndarray, outcomes: np.ndarray) -> tuple[np.ndarray,
                                                                               np.ndarray]:
        """Block path: the instantaneous regret (N, L) of the super arms ``actions`` (N, L, m).

        The actions are played on ``outcomes`` (N, L, m) from :meth:`draw_outcomes`. They must
        be 0/1 int8 and each feasible, else ``ValueError``. The regret is scored as
        :meth:`play_round` scores ``info["regret"]``, the (alpha, beta)-approximation regret.
        The observation (N, 2m) of :meth:`observe` becomes the feedback of the last round."""
        n, m = self.means.shape
        S = np.asarray(actions)
        if S.dtype != np.int8 or S.ndim != 3 or S.shape[0] != n or S.shape[2] != m \
                or outcomes.shape != S.shape:
            raise ValueError(f"a block's super arms must be an int8 array (N={n}, L, m={m}) "
                             f"matching the outcomes {outcomes.shape}, got {S.dtype} {S.shape}")
        length = S.shape[1]
        flat = S.reshape(n * length, m)
        if not self.feasible_batch(flat):
            bad = self.family._first_infeasible(flat)
            where = "not 0/1" if bad < 0 or not ((flat[bad] == 0) | (flat[bad] == 1)).all() \
                else f"run {bad // length}, round {bad % length} of the block"
            raise ValueError(f"a block's super arms must be feasible super arms of "
                             f"{self.family!r} ({where})")
        regret = np.empty((n, length))
        obs = np.empty((n, 2 * m), dtype=np.float32)
        _score_linear(S, outcomes, self.means, self._target, regret, obs)
        if not self.family.linear and length:
            expected = self.family._reward(flat.view(np.bool_), np.repeat(self.means, length,
                                                                          axis=0))
            regret = self._target[:, None] - expected.reshape(n, length)
        if length:
            self._obs = obs
        return self.observe(), regret

    def feasible_batch(self, actions: np.ndarray) -> bool:
        """Whether every row of an int8 array (N, m) is a 0/1 feasible super arm of the family.

        It uses the family's ``_first_infeasible``, compiled for the library's families. This is
        the vector env's fast path, which then plays them with :meth:`play_round`."""
        # 0/1 first (a family's own _first_infeasible may only count arms), then the family's
        return bool(actions.view(np.uint8).max(initial=0) <= 1) and \
            self.family._first_infeasible(actions) < 0

    def play_round(self, rng: np.random.Generator, S: np.ndarray,
                   projected: np.ndarray) -> tuple[np.ndarray, dict]:
        """One round of the feasible super arms S (N, m), bool or 0/1 int8: the rewards and the
        oracle info."""
        mu = self.means
        n = S.shape[0]
        bernoulli = self.distribution == "bernoulli"
        if self.table is not None:  # one row of the data per run: its labels are the outcomes
            draws = self.table[(rng.random(n) * self.table.shape[0]).astype(np.int64)]
        elif bernoulli:
            draws = rng.random(mu.shape)
        else:
            c = self.concentration
            draws = rng.beta(mu * c, (1.0 - mu) * c)
        seen = np.empty(mu.shape)
        obs = np.empty((n, 2 * self.n_arms), dtype=np.float32)
        rewards, expected = np.empty(n), np.empty(n)
        _play(S, draws, mu, bernoulli, seen, obs, rewards, expected)
        if not self.family.linear:
            sets = S if S.dtype == np.bool_ else S.view(np.bool_)
            rewards = self.family._reward(sets, seen)
            expected = self.family._reward(sets, mu)
        self._obs = obs
        target = self._target.copy()
        return rewards, {"expected_reward": expected, "optimal_reward": target,
                         "regret": target - expected, "alpha": self._alphas.copy(),
                         "beta": self._betas.copy(), "projected": projected}


class CombinatorialEnv(BanditEnv):
    __doc__ = (CombinatorialCore.__doc__ or "") + """
    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import CombinatorialEnv
        >>> env = CombinatorialEnv(n_arms=4, max_size=2, means=[0.9, 0.1, 0.8, 0.2])
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(np.array([1, 0, 1, 0]))
        >>> obs.shape, round(info["optimal_reward"], 12), round(info["regret"], 12)   # the best
        ((8,), 1.7, 0.0)
        >>> env.action_space.contains(np.array([1, 1, 1, 0], dtype=np.int8))   # |S| > K
        False
    """
    core_class = CombinatorialCore


class CombinatorialVectorEnv(BanditVectorEnv):
    """N runs of
    :class:`CombinatorialEnv` in numpy.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import CombinatorialVectorEnv
        >>> envs = CombinatorialVectorEnv(num_envs=3, max_episode_steps=10, family="coverage",
        ...                               n_arms=8, max_size=2)
        >>> obs, info = envs.reset(seed=0)
        >>> best = envs.core.family.oracle(envs.core.means)          # the greedy super arms
        >>> obs, rewards, terminated, truncated, info = envs.step(best.astype(np.int8))
        >>> obs.shape, bool((info["regret"] <= 0).all()), info["alpha"].round(3).tolist()
        ((3, 16), True, [0.632, 0.632, 0.632])
    """

    core_class = CombinatorialCore
    core: CombinatorialCore

    def draw_outcomes(self, length: int) -> np.ndarray:
        """Block path (:class:`~ldp_gym.protocols.ScoresBlocks`): every base arm's outcomes
        (N, length, m) of the next ``length`` rounds (:meth:`CombinatorialCore.draw_outcomes`).
        The env moves past them: every run plays all of them, scored by :meth:`score_block`."""
        return self.drawn_ahead(self.core.draw_outcomes, length)

    def score_block(self, actions: np.ndarray, outcomes: np.ndarray) -> tuple[np.ndarray,
                                                                               np.ndarray]:
        """Block path: ``(observations (N, 2m) after the block, regret (N, L))`` of the super
        arms ``actions`` (N, L, m) int8 played on ``outcomes`` from :meth:`draw_outcomes`
        (:meth:`CombinatorialCore.score_block`); ``last_regret`` is the last round's."""
        self.check_reset()
        obs, regret = self.core.score_block(actions, outcomes)
        if regret.shape[1]:
            self.last_regret = regret[:, -1].copy()
        return obs, regret

    @override
    def step(self, actions):
        # the agents' batch (int8 (N, m), every row a super arm), no run restarting: checked in
        # one compiled pass and played; anything else takes the checked path of the base class
        self.check_reset()
        core = self.core
        n = self.num_envs
        if type(actions) is np.ndarray and actions.dtype == np.int8 \
                and actions.shape == (n, core.n_arms) and not self._needs_reset.any() \
                and core.feasible_batch(actions):
            rewards, info = core.play_round(self.np_random, actions, np.zeros(n, dtype=bool))
            self.t += 1
            return self._stepped(rewards, info, np.ones(n, dtype=bool))
        return super().step(actions)
