"""Multi-armed bandit agents: non-private, local, global, shuffle and distributed DP.

Non-private: :class:`UCB1`, :class:`KLUCB`, :class:`ThompsonSampling`,
:class:`Exp3`, :class:`TsallisINF`. Local DP: :class:`LDPUCB`. Global DP:
:class:`DPUCB`, :class:`DPSE`, :class:`AdaPUCB`, :class:`AdaPKLUCB`, :class:`DPKLUCB`,
:class:`DPIMED`, and :class:`AdaCUCB` (zCDP). Shuffle DP: :class:`ShuffleSE`. Distributed
DP: :class:`DistDPSE`.

Rewards are taken in ``[lower, upper]``, by default [0, 1]. Private agents clip
every reward to these declared bounds before it enters any statistic.
Ties between equal indices are broken uniformly at random. Many KL-UCB indices
equal 1 early on, and taking the first index would favour arm 0.

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> from ldp_gym.agents import AdaPKLUCB
    >>> env = gym.make("LDPMAB-v0", max_episode_steps=200)
    >>> agent = AdaPKLUCB.from_env(env, epsilon=1.0, seed=0)
    >>> obs, _ = env.reset(seed=0)
    >>> for _ in range(200):
    ...     a = agent.act(obs)
    ...     nxt, r, term, trunc, info = env.step(a)
    ...     agent.observe(obs, a, r, nxt)
    ...     obs = nxt
    >>> int(agent.counts.sum())
    200
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import ClassVar

import numpy as np
from typing_extensions import override

from ldp_gym.envs.mab import d_epsilon
from ldp_gym.protocols import BlockPlay
from ldp_gym.validation import Part, check_finite, check_input, check_int, check_real
from ldp_gym.wrappers.mechanisms import (
    GaussianEpisodeMean,
    LaplaceMechanism,
    PrivateEpisodeMean,
    TreeMechanism,
    make_rng,
    tracing,
)
from ldp_gym.wrappers.mechanisms.compiled import RATIO_DENOMINATOR
from ldp_gym.wrappers.mechanisms.distributed import check_budget, dist_dp_parameters, secagg_sum
from ldp_gym.wrappers.mechanisms.noise import NoiseStream, draw_words
from ldp_gym.wrappers.mechanisms.privacy import rho_from_epsilon
from ldp_gym.wrappers.mechanisms.shuffle import blanket_gamma

from . import mab_kernels as kernels
from .base import (
    Agent,
    DistributedDPAgent,
    GlobalDPAgent,
    LocalDPAgent,
    ShuffleDPAgent,
    argmax_random,
    readonly,
)
from .mab_kernels import dp_klucb_index, kl_ucb_index

__all__ = ["DPIMED", "DPKLUCB", "DPSE", "DPUCB", "KLUCB", "DistDPSE", "LDPUCB", "UCB1", "AdaCUCB",
           "AdaPKLUCB", "AdaPUCB", "Exp3", "ShuffleSE", "ThompsonSampling", "TsallisINF",
           "dp_klucb_index", "kl_ucb_index", "phase_grid"]


class MABAgent(Agent):
    """Base of the MAB agents: per-arm counts and sums, updated by arm, rounds and reward sum."""

    lower: float = 0.0
    upper: float = 1.0

    def _init_state(self, n):
        self.counts = np.zeros((n, self.n_arms), dtype=np.int64)
        self.t = np.zeros(n, dtype=np.int64)

    def _observe(self, obs, actions, rewards, next_obs):
        self._update(actions, np.ones(self._n, dtype=np.int64), rewards)

    def observe_committed(self, actions: np.ndarray, counts: np.ndarray,
                          reward_sums: np.ndarray, *,
                          reward_bounds: tuple[float, float] | None = None) -> None:
        """Learn from ``counts[i]`` rounds of ``actions[i]`` whose rewards summed to ``reward_sums[i]``.

        Only for agents that commit, with ``block_play = COMMITS``. Within a commitment,
        such agents use nothing but the sum of the rewards. A sum cannot be
        clipped reward by reward, and clipping the sum does not bound one
        reward's influence. For example, one reward of 1000 among 16 rewards of 0.5 moves a
        clipped mean in [0, 1] from 0.5 to 1. So sums are taken only from a
        setting that guarantees every reward lies in ``reward_bounds``, inside
        the agent's ``[lower, upper]``. ``BanditCore.bounded_rewards`` says so.

        Args:
            actions: (N,) the arms played.
            counts: (N,) the rounds played; 0 is allowed.
            reward_sums: (N,) the sums of their rewards.
            reward_bounds: ``(lo, hi)``, the interval every one of these rewards is guaranteed
                to lie in. Required.

        Raises:
            ValueError: ``reward_bounds`` is missing or not inside ``[lower, upper]``, or a sum
                lies outside ``[counts lo, counts hi]``.
        """
        if self.privacy is not None and self.block_play is not BlockPlay.COMMITS:
            raise TypeError(f"{self.name} privatises reward by reward: observe_committed (sums "
                            "only) is for the agents that commit (block_play = COMMITS); call "
                            "observe")
        counts = check_finite(counts, "counts")
        if counts.dtype.kind not in "iu":
            raise TypeError("counts must be integers")
        if (counts < 0).any():
            raise ValueError("counts must be >= 0")
        counts = counts.astype(np.int64)
        reward_sums = check_input(reward_sums, "reward_sums")
        lo, hi = self._check_reward_bounds(reward_bounds)
        if ((reward_sums < counts * lo) | (reward_sums > counts * hi)).any():
            raise ValueError(f"reward_sums must lie in [counts * {lo:g}, counts * {hi:g}] "
                             f"(reward_bounds): some reward lies outside the declared bounds")
        self._update(np.asarray(actions), counts, reward_sums)

    def _check_reward_bounds(self, reward_bounds: tuple[float, float] | None) -> tuple[float, float]:
        """``(lo, hi)`` of :meth:`observe_committed`, given and inside ``[lower, upper]``."""
        bools = reward_bounds is not None and any(
            isinstance(v, (bool, np.bool_)) for v in np.ravel(np.asarray(reward_bounds, object)))
        b = None if reward_bounds is None or bools else np.asarray(reward_bounds, dtype=np.float64)
        if b is None or b.shape != (2,) or not self.lower <= b[0] <= b[1] <= self.upper:
            raise ValueError(f"observe_committed needs reward_bounds=(lo, hi), the interval every "
                             f"reward is guaranteed to lie in, inside the agent's [lower, upper] = "
                             f"[{self.lower:g}, {self.upper:g}] (a sum cannot be clipped reward by "
                             f"reward); got reward_bounds={reward_bounds!r}")
        return float(b[0]), float(b[1])

    def _update(self, actions, counts, reward_sums):
        self.counts[self._rows, actions] += counts
        self.t += counts


# =========================================================================== non-private


class _Compiled(MABAgent):
    """An agent whose rule is a kernel of :mod:`~ldp_gym.agents.mab_kernels`.

    The same compiled code chooses in ``act``, learns in ``observe`` and plays whole blocks
    of drawn rounds in ``play_block``, the runner's block path. All three are bitwise alike.
    """

    kind: ClassVar[int]
    block_play = BlockPlay.PLAYS_BLOCKS

    def _rounds(self, mode: int, rewards: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Run the kernel in ``mode`` on ``rewards`` (N, L, K or 1) and ``actions`` (N, L)."""
        raise NotImplementedError

    def _act(self, obs):
        return self._rounds(kernels.CHOOSE, _NO_REWARDS, np.empty((self._n, 1), np.int64))[:, 0]

    def _observe(self, obs, actions, rewards, next_obs):
        self._rounds(kernels.UPDATE, np.ascontiguousarray(rewards, np.float64).reshape(-1, 1, 1),
                     np.ascontiguousarray(actions, np.int64).reshape(-1, 1))

    def play_block(self, obs: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Play the L rounds of a drawn block, given every arm's rewards (N, L, K).

        ``obs`` holds the constant observations and is unused. Returns the actions (N, L).
        It runs the kernel of ``act`` and ``observe``, round after round, so it is bitwise
        the per-round path.
        """
        r = check_finite(rewards, "rewards")
        if r.ndim != 3 or r.shape[0] != self._n or r.shape[2] != self.n_arms:
            raise ValueError(f"rewards must have shape (N={self._n}, L, K={self.n_arms}), got "
                             f"{r.shape}")
        return self._rounds(kernels.PLAY, np.ascontiguousarray(r, np.float64),
                            np.empty(r.shape[:2], np.int64))


#: the rewards and noise arguments of a kernel call that reads none
_NO_REWARDS = np.zeros((1, 1, 1))
_NO_NOISE = np.zeros(0)
_NO_WORDS = np.zeros(0, dtype=np.uint64)
#: the most words of random bits a batched elimination takes at once (2 MB)
_WORDS_AT_ONCE = 2**18


class _CompiledRule(_Compiled):
    """UCB1, KL-UCB and Thompson sampling on their compiled kernels.

    They keep per-arm pulls and reward sums; Thompson sampling keeps successes too. The
    kernels are :func:`~ldp_gym.agents.mab_kernels.ucb1_rounds` and its siblings.
    """

    c: float = 0.0

    def _init_state(self, n):
        super()._init_state(n)
        self.sums = np.zeros((n, self.n_arms))
        self._successes = np.zeros((n, self.n_arms if self.kind == kernels.THOMPSON else 0))
        self._params = np.array([self.c])
        # KL-UCB's index bounds and Thompson's pass chances (mab_kernels.choose); -1: none yet
        cached = self.kind in (kernels.KL_UCB, kernels.THOMPSON)
        self._cache = np.full((n if cached else 0, self.n_arms + 1, 4), -1.0)

    def _rounds(self, mode, rewards, actions):
        kernels.ROUNDS[self.kind](mode, self._params, _NO_NOISE, self.rng, rewards, actions,
                                  self.counts, self.sums, self._successes, self.t, self._cache)
        return actions

    def _update(self, actions, counts, reward_sums):  # observe_committed's sums too
        super()._update(actions, counts, reward_sums)
        self.sums[self._rows, actions] += reward_sums

    def index(self) -> np.ndarray:
        """The index (N, K) ``act`` maximises; unpulled arms have +inf."""
        return kernels.index_values(self.kind, self._params, self.counts, self.sums, self.t,
                                    np.empty(self.counts.shape))


class UCB1(_CompiledRule):
    """UCB1 (Auer, Cesa-Bianchi and Fischer 2002): ``mean + sqrt(2 ln t / n)``; each arm once first.

    The rule is :func:`~ldp_gym.agents.mab_kernels.ucb1_rounds`, compiled, on
    every path. Privacy: none.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import UCB1
        >>> env = gym.make("LDPMAB-v0", max_episode_steps=100)
        >>> agent = UCB1.from_env(env, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(5):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.counts.tolist()          # each arm once first
        [[1, 1, 1, 1, 1]]
        >>> type(agent.act(obs))
        <class 'int'>
    """

    name = "UCB1"
    kind = kernels.UCB1


class KLUCB(_CompiledRule):
    """KL-UCB (Garivier and Cappe 2011) with Bernoulli kl, for rewards in [0, 1].

    Index ``max{q : kl(mean, q) <= (ln t + c ln ln t)/n}``. ``c = 0`` by
    default, as in the paper's experiments; its theorem uses 3. The rule is
    :func:`~ldp_gym.agents.mab_kernels.kl_ucb_rounds`, compiled, on every path.
    Privacy: none.

    Example:
        >>> from ldp_gym.agents import KLUCB
        >>> agent = KLUCB(n_arms=3, c=0.0, seed=0)
        >>> obs = [0.0]
        >>> for arm, reward in [(0, 1.0), (1, 0.0), (2, 0.5)]:
        ...     agent.observe(obs, arm, reward, obs)
        >>> agent.index().shape, agent.act(obs)     # arm 0 has the best mean
        ((1, 3), 0)
    """

    name = "KL-UCB"
    kind = kernels.KL_UCB
    test_params = {"c": 0.0}

    @classmethod
    def _unit_test_params(cls):
        return [{"c": 0.0}, {"c": 3.0}]

    def __init__(self, n_arms, *, c: float = 0.0, **kwargs):
        self.c = check_real("c", c, low=0.0, low_open=False)
        super().__init__(n_arms, **kwargs)


class ThompsonSampling(_CompiledRule):
    """Thompson sampling with Beta(1, 1) priors (Agrawal and Goyal 2012).

    Rewards in [0, 1] are binarised by Agrawal and Goyal's trick: a Bernoulli trial
    with success probability equal to the reward. So the Beta
    posterior stays conjugate for any bounded rewards. The rule is
    :func:`~ldp_gym.agents.mab_kernels.thompson_rounds`, compiled, on every
    path. Privacy: none.

    Example:
        >>> from ldp_gym.agents import ThompsonSampling
        >>> agent = ThompsonSampling(n_arms=2, seed=0)
        >>> obs = [0.0]
        >>> for _ in range(20):
        ...     agent.observe(obs, 1, 1.0, obs)     # arm 1 always pays 1
        >>> agent.successes.tolist(), type(agent.act(obs)).__name__
        ([[0.0, 20.0]], 'int')
    """

    name = "Thompson"
    kind = kernels.THOMPSON

    @property
    def successes(self) -> np.ndarray:
        """The binarised successes (N, K) of every arm."""
        return self._successes

    @override
    def index(self) -> np.ndarray:
        raise NotImplementedError("Thompson sampling draws its index in act: it has no index()")

    @override
    def observe_committed(self, actions: np.ndarray, counts: np.ndarray,
                          reward_sums: np.ndarray, *,
                          reward_bounds: tuple[float, float] | None = None) -> None:
        """Refused: each reward is binarised by its own Bernoulli trial, and a sum of rewards
        does not give the successes. Call ``observe`` round by round."""
        raise TypeError("Thompson sampling binarises reward by reward: a sum of rewards does "
                        "not give its successes; call observe")


class _Adversarial(_Compiled):
    """Exp3 and Tsallis-INF on :func:`~ldp_gym.agents.mab_kernels.adversarial_rounds`.

    They keep importance-weighted loss estimates ``L[a] += (1 - r)/p[a]`` for rewards in
    [0, 1].
    """

    def _init_state(self, n):
        super()._init_state(n)
        self.loss_estimates = np.zeros((n, self.n_arms))
        self.probs = np.full((n, self.n_arms), 1.0 / self.n_arms)

    def _rounds(self, mode: int, rewards: np.ndarray, actions: np.ndarray) -> np.ndarray:
        kernels.adversarial_rounds(mode, self.kind, self.horizon or 0, self.rng, rewards,
                                   actions, self.counts, self.loss_estimates, self.probs, self.t)
        return actions

    def distribution(self) -> np.ndarray:
        """The distribution (N, K) the next ``act`` samples from."""
        return kernels.distributions(self.kind, self.horizon or 0, self.loss_estimates, self.t,
                                     np.empty(self.loss_estimates.shape))


class Exp3(_Adversarial):
    """Exp3 on losses (Auer et al. 2002; Bubeck and Cesa-Bianchi 2012, Thm 3.1).

    ``p ~ exp(-eta L)``, ``eta = sqrt(2 ln K / (T K))`` with a known horizon,
    else the anytime ``eta_t = sqrt(ln K / (t K))``. Privacy: none.

    Example:
        >>> import numpy as np
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import Exp3
        >>> env = gym.make("LDPAdversarialMAB-v0", max_episode_steps=50)
        >>> agent = Exp3.from_env(env, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(20):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.probs.shape, bool(np.isclose(agent.probs.sum(), 1.0))
        ((1, 5), True)
    """

    name = "Exp3"
    kind = kernels.EXP3

    @classmethod
    def _unit_test_params(cls):
        return [{}, {"horizon": None}]  # the horizon's learning rate, the anytime one


class TsallisINF(_Adversarial):
    """Tsallis-INF with alpha = 1/2 (Zimmert and Seldin 2021, Alg 1, IW estimator).

    ``p_i = 4 (eta_t (L_i - x))^-2`` with ``x`` normalising, ``eta_t = 2/sqrt(t)``.
    It is optimal in both the stochastic and the adversarial regime. It is the black box
    of Zheng et al. (2020, appendix B) for MAB. Privacy: none. For LDP, run it on a
    reward-privatised env.

    Example:
        >>> import numpy as np
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import TsallisINF
        >>> env = gym.make("LDPAdversarialMAB-v0", n_arms=3, max_episode_steps=50)
        >>> agent = TsallisINF.from_env(env, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(20):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> p = agent.distribution()
        >>> p.shape, bool(np.isclose(p.sum(), 1.0)), int(agent.t[0])
        ((1, 3), True, 20)
    """

    name = "Tsallis-INF"
    kind = kernels.TSALLIS_INF


# =========================================================================== local DP


class LDPUCB(LocalDPAgent, _Compiled):
    """LDP-UCB: CUCB-LDP1 of Chen et al. (2020, Alg 1) with one base arm per super arm.

    User side: the user pulls the arm the public state designates, a function
    of the server's broadcast only. The user sends ``reward + Lap((upper - lower + g)/epsilon)``,
    with float-safe Laplace noise on the grid g and the reward clipped to ``[lower, upper]``.
    Server side: running means of the noisy rewards, and the index
    ``min(mu~ + 4 (upper - lower) sqrt(2 ln T / (epsilon^2 n)), upper)``.
    This is Chen et al.'s equation for CUCB-LDP1 with K = 1. Unpulled arms have an infinite
    index.

    One compiled kernel, :func:`~ldp_gym.agents.mab_kernels.ldp_ucb_rounds`, chooses in
    ``act``. It also plays whole blocks in ``play_block``: the choice, the report from the
    mechanism's noise stream, the update. ``observe`` builds the report with the mechanism,
    with the same arithmetic and noise, and folds it in. So the block path is bitwise the
    per-round path.

    Privacy: epsilon-LDP per user, who sends one reward; pure.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import LDPUCB
        >>> env = gym.make("LDPMAB-v0", max_episode_steps=100)
        >>> agent = LDPUCB.from_env(env, epsilon=1.0, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> print(agent.privacy)
        local DP, epsilon=1 per reward
        >>> sorted(agent.last_report), agent.last_report["reward"].shape   # what the server received
        (['arm', 'reward'], (1,))
    """

    name = "LDP-UCB"
    needs_horizon = True
    test_params = {"epsilon": 1.0}

    @classmethod
    def _unit_test_params(cls):
        return [{"epsilon": 1.0}, {"epsilon": 0.5, "lower": -1.0, "upper": 2.0}]

    def __init__(self, n_arms, *, epsilon: float, lower: float = 0.0, upper: float = 1.0,
                 **kwargs):
        self.declare_privacy("local", epsilon, 0.0, "reward", lower, upper)
        super().__init__(n_arms, **kwargs)

    def _init_state(self, n):
        super()._init_state(n)
        self.noisy_sums = np.zeros((n, self.n_arms))
        self.mechanism = LaplaceMechanism(self.epsilon, self.lower, self.upper, **self.noise_source())
        self.width = 4.0 * (self.upper - self.lower) * math.sqrt(2.0 * math.log(self.horizon)) \
            / self.epsilon
        mech = self.mechanism  # the kernel's report is its release: its bounds and grid
        self._params = np.array([self.width, self.upper, mech.lower, mech.upper, mech.grid])
        self._no_successes = np.zeros((n, 0))

    def _index(self) -> np.ndarray:
        """The broadcast UCB index (N, K)."""
        return kernels.index_values(kernels.LDP_UCB, self._params, self.counts, self.noisy_sums,
                                    self.t, np.empty(self.counts.shape))

    @override
    def public_state(self):
        return readonly(index=self._index())

    def _rounds(self, mode, rewards, actions):
        mech = self.mechanism
        noise = mech.noise(actions.size) if mode & kernels.UPDATE else _NO_NOISE
        kernels.ldp_ucb_rounds(mode, self._params, noise, self.rng, rewards, actions, self.counts,
                               self.noisy_sums, self._no_successes, self.t)
        if mode & kernels.UPDATE and tracing():  # the replay test's records, round by round
            seen = np.take_along_axis(rewards, actions[..., None], axis=2)[..., 0]
            for s in range(actions.shape[1]):
                mech.record(np.clip(seen[:, s], mech.lower, mech.upper))
        return actions

    _observe = LocalDPAgent._observe  # local_report, then update (not _Compiled's)

    report_reads_public_state = False  # the user sends the arm and its noised reward only

    def _report(self, obs, actions, rewards, next_obs, public_state):
        return {"arm": np.array(actions, dtype=np.int64), "reward": self.mechanism(rewards)}

    def report_schema(self):
        """``arm`` (N,) in {0, ..., K-1} and the released ``reward`` (N,), finite."""
        return {"arm": Part((self._n,), "int", 0, self.n_arms - 1),
                "reward": Part((self._n,), bound=self.mechanism.release_bound())}

    def _fold(self, report):
        arms = report["arm"]
        self.noisy_sums[self._rows, arms] += report["reward"]
        self._update(arms, np.ones(self._n, dtype=np.int64), report["reward"])


# =========================================================================== global DP


class _GlobalMAB(GlobalDPAgent, MABAgent):
    def __init__(self, n_arms, *, epsilon: float | None, lower: float = 0.0, upper: float = 1.0,
                 rho: float | None = None, **kwargs):
        # epsilon-global DP per reward, or rho-zCDP per reward for the agents that take rho
        self.declare_privacy("global", epsilon, 0.0, "reward", lower, upper, rho=rho)
        super().__init__(n_arms, **kwargs)

    #: the mechanism whose releases the agent acts on (its bounds clip every reward)
    mechanism: PrivateEpisodeMean | GaussianEpisodeMean | TreeMechanism

    def _observe(self, obs, actions, rewards, next_obs):
        super()._observe(obs, actions, self.mechanism.clip(rewards), next_obs)


class DPUCB(_Compiled, _GlobalMAB):
    """DP-UCB (Mishra and Thakurta 2015; Tossou and Dimitrakakis 2016), as run by Azize and Basu.

    Each arm's reward stream goes through a binary tree mechanism,
    :class:`~ldp_gym.wrappers.mechanisms.TreeMechanism`. It adds Laplace noise of scale
    ``levels/epsilon`` per node, with ``levels = floor(log2 T) + 1``. The index, as Azize
    and Basu run it, is
    ``S~/n + sqrt(2 log(2/gamma)/n) + sqrt(8) log(T)^1.5 log(2/gamma)/(epsilon n)``
    with gamma = 0.1. ``S~`` is the tree's noisy sum. In the paper's notation it is
    ``mu^ + Y/N``: the raw mean plus the tree noise over n.

    One compiled kernel, :func:`~ldp_gym.agents.mab_kernels.dp_ucb_rounds`, chooses in
    ``act``. In ``observe`` it adds the reward to the pulled arm's tree with the tree
    mechanism's own :func:`~ldp_gym.wrappers.mechanisms.continual.tree_add` and its next
    noise value. It also plays whole drawn blocks in ``play_block``, and the block path is
    bitwise the per-round path. An arm not yet pulled has index +inf; ties are broken
    uniformly at random.

    Privacy: epsilon-global DP per reward: every reward enters one node per
    level, each node is noised once and reused, actions depend on noisy sums only.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import DPUCB
        >>> env = gym.make("LDPMAB-v0", max_episode_steps=64)
        >>> agent = DPUCB.from_env(env, epsilon=1.0, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> print(agent.privacy)
        global DP, epsilon=1 per reward
        >>> agent.tree.levels, int(agent.counts.sum())
        (7, 10)
    """

    name = "DP-UCB"
    needs_horizon = True
    kind = kernels.DP_UCB
    test_params = {"epsilon": 1.0}

    @classmethod
    def _unit_test_params(cls):
        return [{"epsilon": 1.0}, {"epsilon": 0.5, "gamma": 0.05}]

    def __init__(self, n_arms, *, epsilon: float, gamma: float = 0.1, **kwargs):
        self.gamma = check_real("gamma", gamma, low=0.0, high=1.0)
        super().__init__(n_arms, epsilon=epsilon, **kwargs)

    def _init_state(self, n):
        super()._init_state(n)
        self.tree = self.mechanism = TreeMechanism(
            self.epsilon, self.horizon, (n, self.n_arms), self.lower, self.upper,
            **self.noise_source())
        self.counts = self.tree.counts  # the pulls are the streams' lengths
        lg = math.log(2.0 / self.gamma)
        tree = self.tree
        self._params = np.array([2.0 * lg, math.sqrt(8.0) * math.log(self.horizon) ** 1.5 * lg
                                 / self.epsilon, tree.lower, tree.upper, tree.grid,
                                 self.horizon])

    @property
    def indices(self) -> np.ndarray:
        """The index (N, K) ``act`` maximises; unpulled arms have +inf."""
        return kernels.index_values(kernels.DP_UCB, self._params, self.counts,
                                    self.tree.noisy_sums, self.t, np.empty(self.counts.shape))

    def _rounds(self, mode, rewards, actions):
        tree = self.tree
        update = bool(mode & kernels.UPDATE)
        if mode == kernels.UPDATE and (self.counts[self._rows, actions[:, 0]]
                                       >= self.horizon).any():  # (a block's kernel checks it)
            raise ValueError(f"a stream is longer than horizon={self.horizon}")
        noise = tree.noise(actions.size) if update else _NO_NOISE
        closed = np.empty(actions.size if update else 0)
        # the trees' nodes as (N, K, levels) views, made per call (a copied agent's views
        # would be copies of their own)
        nodes = (self._n, self.n_arms, tree.levels)
        kernels.dp_ucb_rounds(mode, self._params, noise, self.rng, rewards, actions,
                              self.counts, tree.noisy_sums, tree._alpha.reshape(nodes),
                              tree._noisy.reshape(nodes), closed, self.t)
        if update and tracing():  # the replay test's records: the nodes closed, round by round
            for s in range(actions.shape[1]):
                tree.record(closed[s * self._n:(s + 1) * self._n])
        return actions


class DPSE(_GlobalMAB):
    """DP-SE: differentially private successive elimination (Sajed and Sheffet 2019, Alg 2).

    In epoch e, with Delta_e = 2^-e, every active arm is pulled
    ``R_e = floor(max(32 ln(8|S|e^2/beta)/Delta_e^2, 8 ln(4|S|e^2/beta)/(Delta_e epsilon))) + 1``
    times. The epoch mean is released with ``Lap(1/(epsilon R_e))``. It is the sum of this
    epoch's rewards only, divided by R_e. Arm a is eliminated when
    ``max mu~ - mu~_a > 2 (h_e + c_e)``, ``h_e = sqrt(ln(8|S|e^2/beta)/(2 R_e))``,
    ``c_e = ln(4|S|e^2/beta)/(R_e epsilon)``; beta = 1/T. The survivor is
    played to the end. Commits to R_e rounds per arm, which makes long horizons cheap.

    Privacy: epsilon-global DP per reward: each reward enters exactly one
    epoch release, as epochs are disjoint. Actions depend on releases only.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import DPSE
        >>> env = gym.make("LDPMAB-v0", max_episode_steps=1000)
        >>> agent = DPSE.from_env(env, epsilon=1.0, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> action = agent.act(obs)
        >>> action, int(agent.commitment()[0]) == int(agent.R[0])   # arm 0 for a whole epoch
        (0, True)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.counts.tolist(), bool(agent.active.all())    # no elimination before the epoch ends
        ([[10, 0, 0, 0, 0]], True)
    """

    name = "DP-SE"
    needs_horizon = True
    block_play = BlockPlay.COMMITS
    test_params = {"epsilon": 1.0}

    @classmethod
    def _unit_test_params(cls):
        return [{"epsilon": 1.0}, {"epsilon": 4.0, "beta": 0.1}]

    def __init__(self, n_arms, *, epsilon: float, beta: float | None = None, **kwargs):
        self._beta = None if beta is None else check_real("beta", beta, low=0.0, high=1.0)
        super().__init__(n_arms, epsilon=epsilon, **kwargs)

    def _init_state(self, n):
        super()._init_state(n)
        self.beta = 1.0 / self.horizon if self._beta is None else self._beta
        self.mechanism = PrivateEpisodeMean(self.epsilon, self.lower, self.upper,
                                            **self.noise_source())
        self.active = np.ones((n, self.n_arms), dtype=bool)
        self.epoch = np.ones(n, dtype=np.int64)
        self.epoch_sums = np.zeros((n, self.n_arms))
        self.epoch_counts = np.zeros((n, self.n_arms), dtype=np.int64)
        self.released = np.zeros((n, self.n_arms))
        self.R = self._epoch_length(self.epoch, self.active.sum(axis=1))

    def _epoch_length(self, e, s):
        d = 2.0 ** -e.astype(np.float64)
        a = 32.0 * np.log(8.0 * s * e ** 2 / self.beta) / d ** 2
        b = 8.0 * np.log(4.0 * s * e ** 2 / self.beta) / (d * self.epsilon)
        return (np.floor(np.maximum(a, b)) + 1).astype(np.int64)

    def _current(self):
        """The first active arm still owed pulls this epoch.

        Once the last survivor has had its pulls, this is the survivor: its epoch never
        closes.
        """
        todo = self.active & (self.epoch_counts < self.R[:, None])
        return np.where(todo.any(axis=1)[:, None], todo, self.active).argmax(axis=1)

    def _act(self, obs):
        return self._current()

    @override
    def commitment(self):
        arm = self._current()
        left = self.R - self.epoch_counts[self._rows, arm]
        single = self.active.sum(axis=1) == 1
        if self.horizon is not None:
            left = np.where(single, np.maximum(self.horizon - self.t, 1), left)
        return np.maximum(left, 1)

    def _update(self, actions, counts, reward_sums):
        super()._update(actions, counts, reward_sums)
        self.epoch_sums[self._rows, actions] += reward_sums
        self.epoch_counts[self._rows, actions] += counts
        s = self.active.sum(axis=1)
        done = (s > 1) & ~(self.active & (self.epoch_counts < self.R[:, None])).any(axis=1)
        if not done.any():
            return
        r = np.flatnonzero(done)
        act = self.active[r]
        R = self.R[r]
        mu = self.mechanism.release(self.epoch_sums[r], np.broadcast_to(R[:, None], act.shape))
        self.released[r] = np.where(act, mu, -np.inf)
        e, s_r = self.epoch[r], s[r]
        h = np.sqrt(np.log(8.0 * s_r * e ** 2 / self.beta) / (2.0 * R))
        c = np.log(4.0 * s_r * e ** 2 / self.beta) / (R * self.epsilon)
        best = self.released[r].max(axis=1)
        keep = act & (best[:, None] - self.released[r] <= 2.0 * (h + c)[:, None])
        self.active[r] = keep
        self.epoch[r] += 1
        self.epoch_sums[r] = 0.0
        self.epoch_counts[r] = 0
        self.R[r] = self._epoch_length(self.epoch[r], keep.sum(axis=1))


class _Episodes(_GlobalMAB):
    """Arm-dependent episodes: the chosen arm is played until its count reaches ``target``,
    and the episode's reward sum is released once, at its end.

    The skeleton of AdaP-UCB, AdaC-UCB, DP-KLUCB and DP-IMED. Each arm is played once
    first, in random order; then each episode goes to the best :meth:`_score`, ties broken
    uniformly at random. Subclasses say what an episode's end releases
    (:meth:`_close_episode`) and where the next one ends (:meth:`_next_target`).
    """

    block_play = BlockPlay.COMMITS

    def _init_state(self, n):
        super()._init_state(n)
        self.mechanism = self._episode_mechanism()
        self.arm = self.rng.integers(0, self.n_arms, size=n)
        self.target = np.ones(n, dtype=np.int64)         # count of `arm` ending the episode
        self.episode_sum = np.zeros(n)
        self.episode_n = np.zeros(n, dtype=np.int64)

    def _episode_mechanism(self) -> PrivateEpisodeMean | GaussianEpisodeMean:
        """The mechanism that releases each episode's mean once."""
        return PrivateEpisodeMean(self.epsilon, self.lower, self.upper, **self.noise_source())

    def _act(self, obs):
        return self.arm.copy()

    @override
    def commitment(self):
        return self.target - self.counts[self._rows, self.arm]

    def _choose(self, score: np.ndarray) -> np.ndarray:
        """The next episode's arm: the largest score, ties uniformly at random."""
        return argmax_random(self.rng, score)

    @abstractmethod
    def _score(self, rows: np.ndarray) -> np.ndarray:
        """The scores (len(rows), K) of the arms at an episode's start: the largest wins."""

    @abstractmethod
    def _close_episode(self, rows: np.ndarray, arms: np.ndarray) -> None:
        """Release the episode of ``arms`` that just ended in ``rows``."""

    @abstractmethod
    def _next_target(self, rows: np.ndarray, arms: np.ndarray) -> np.ndarray:
        """The count of ``arms`` at which their next episode ends."""

    def _update(self, actions, counts, reward_sums):
        if (np.asarray(actions) != self.arm).any():
            raise ValueError("actions must be the arms the agent chose (it commits to episodes)")
        if (counts > self.commitment()).any():
            raise ValueError("counts must not exceed commitment(): an episode's rewards enter "
                             "one release, which closes at the episode's end")
        super()._update(actions, counts, reward_sums)
        self.episode_sum += reward_sums
        self.episode_n += counts
        ends = self.counts[self._rows, self.arm] >= self.target
        if not ends.any():
            return
        r = np.flatnonzero(ends)
        self._close_episode(r, self.arm[r])
        self.episode_sum[r] = 0.0
        self.episode_n[r] = 0
        # next episode: an unplayed arm (initial round), else the best score
        if self.n_arms == 1:  # nothing to choose
            nxt = np.zeros(len(r), dtype=np.int64)
        else:
            unplayed = self.counts[r] == 0
            nxt = self._choose(np.where(unplayed, np.inf, self._score(r)))
        self.arm[r] = nxt
        self.target[r] = self._next_target(r, nxt)


class AdaPUCB(_Episodes):
    """AdaP-UCB (Azize and Basu 2022, Alg 1 with the index of eq. 7).

    Play each arm once; then play in episodes. At t_l choose
    ``A_l = argmax_a I_a``, with ties broken uniformly at random, and play it until its
    count doubles. Arm a's index uses only the ``n_a = N_a/2`` rewards of its last active
    episode. Their mean is released once, with float-safe Laplace noise, as
    ``mu~_a = mean + Lap(1/(epsilon n_a))``. The index, with alpha = 3.1, is
    ``I_a = mu~_a + sqrt(alpha log t_l / (2 n_a)) + alpha log t_l / (epsilon n_a)``.
    The privacy term is outside the root; the ablation experiment runs the other reading.
    Commits to whole episodes, so T = 1e7 costs O(K log T) decisions.

    Privacy: epsilon-global DP per reward: each reward enters exactly one
    release, its episode's mean. Actions are post-processing of releases.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents import AdaPUCB
        >>> from ldp_gym.envs import MABVectorEnv
        >>> envs = MABVectorEnv(num_envs=3, max_episode_steps=100)
        >>> agent = AdaPUCB.from_env(envs, epsilon=1.0, seed=0)    # batch-first: 3 runs
        >>> obs, _ = envs.reset(seed=0)
        >>> for _ in range(20):
        ...     actions = agent.act(obs)
        ...     next_obs, rewards, terminated, truncated, info = envs.step(actions)
        ...     agent.observe(obs, actions, rewards, next_obs)
        ...     obs = next_obs
        >>> actions.shape, agent.counts.sum(axis=1).tolist()
        ((3,), [20, 20, 20])
        >>> bool((agent.commitment() >= 1).all())      # it commits to whole episodes
        True
    """

    name = "AdaP-UCB"
    test_params = {"epsilon": 1.0}

    @classmethod
    def _unit_test_params(cls):
        return [{"epsilon": 1.0}, {"epsilon": 0.5, "alpha": 4.0}]

    def __init__(self, n_arms, *, epsilon: float | None, alpha: float = 3.1, **kwargs):
        self.alpha = check_real("alpha", alpha, low=0.0)
        super().__init__(n_arms, epsilon=epsilon, **kwargs)

    def _init_state(self, n):
        super()._init_state(n)
        self.released = np.zeros((n, self.n_arms))        # mu~ of each arm's last episode
        self.released_n = np.zeros((n, self.n_arms), dtype=np.int64)  # its number of rewards

    def index(self, rows: np.ndarray, log_t: np.ndarray) -> np.ndarray:
        """Indices (len(rows), K) from the releases alone; ``log_t = log t_l`` per row."""
        n = np.maximum(self.released_n[rows], 1)
        a = self.alpha * log_t[:, None]
        return self.released[rows] + np.sqrt(a / (2.0 * n)) + a / (self.epsilon * n)

    @override
    def _score(self, rows):
        return self.index(rows, np.log(self.t[rows] + 1.0))

    @override
    def _close_episode(self, rows, arms):
        self.released[rows, arms] = self.mechanism.release(self.episode_sum[rows],
                                                           self.episode_n[rows])
        self.released_n[rows, arms] = self.episode_n[rows]

    @override
    def _next_target(self, rows, arms):
        cnt = self.counts[rows, arms]
        return np.where(cnt == 0, 1, 2 * cnt)


class AdaPKLUCB(AdaPUCB):
    """AdaP-KLUCB (Azize and Basu 2022, Alg 1 with the index of eq. 8).

    As :class:`AdaPUCB`, with index ``max{q in [0, 1] : kl(mu', q) <= alpha log t_l / n_a}``
    where ``mu' = clip(mu~ + alpha log t_l / (epsilon n_a), 0, 1)``. This is the
    epsilon-shift reading of eq. 8. It uses Bernoulli kl and alpha = 3.1.

    Privacy: epsilon-global DP per reward, as AdaP-UCB.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import AdaPKLUCB
        >>> env = gym.make("LDPMAB-v0", max_episode_steps=200)
        >>> agent = AdaPKLUCB.from_env(env, epsilon=1.0, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(50):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> int(agent.counts.sum()), agent.released.shape
        (50, (1, 5))
    """

    name = "AdaP-KLUCB"

    @override
    def index(self, rows, log_t):
        n = np.maximum(self.released_n[rows], 1)
        a = self.alpha * log_t[:, None]
        mu = np.clip(self.released[rows] + a / (self.epsilon * n), 0.0, 1.0)
        return kl_ucb_index(mu, a / n)


class AdaCUCB(AdaPUCB):
    """AdaC-UCB (Azize and Basu, "Concentrated Differential Privacy for Bandits", SaTML 2024).

    The episodic UCB of :class:`AdaPUCB` with Gaussian noise (Azize's PhD thesis, 2024, Alg 7
    and eq. 5.4, the version of the paper read here). Each arm is played once; then each
    episode plays the arm of the largest index until its count doubles. The index uses only
    the arm's last episode, of n rewards: its mean is released once as ``mean + N(0, sigma^2)``
    with ``sigma = (upper - lower)/(n sqrt(2 rho))``
    (:class:`~ldp_gym.wrappers.mechanisms.GaussianEpisodeMean`). The index at the episode's
    start t_l is ``mu~ + sqrt((1/(2n) + 1/(rho n^2)) beta log t_l)``. The second term
    corrects UCB's bound for the Gaussian noise. The theory (Thm 5.6) needs beta > 3, so
    the default is 3.1, as AdaP-UCB's alpha; the thesis's own experiment runs beta = 1.

    Give ``rho``, or ``epsilon`` to run at the rho that epsilon-DP implies,
    ``rho = epsilon^2/2`` (:func:`~ldp_gym.wrappers.mechanisms.privacy.rho_from_epsilon`).
    Then the command line and :func:`~ldp_gym.experiments.compare.compare` run it beside the
    epsilon-DP agents at the same zCDP.

    Privacy: rho-global zCDP per reward (the paper's Thm 5.5). Each reward enters one
    release; the releases compose in parallel, and the actions are post-processing. Its
    (epsilon, delta) is ``agent.privacy.to_epsilon_delta(delta)``.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import AdaCUCB
        >>> env = gym.make("LDPMAB-v0", max_episode_steps=100)
        >>> agent = AdaCUCB.from_env(env, rho=0.5, seed=0)
        >>> print(agent.privacy)
        global zCDP, rho=0.5 per reward
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(20):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> int(agent.counts.sum())
        20
    """

    name = "AdaC-UCB"
    test_params = {"rho": 0.5}

    @classmethod
    def _unit_test_params(cls):
        return [{"rho": 0.5}, {"epsilon": 1.0, "beta": 1.0}]

    def __init__(self, n_arms, *, rho: float | None = None, epsilon: float | None = None,
                 beta: float = 3.1, **kwargs):
        if (rho is None) == (epsilon is None):
            raise ValueError("give exactly one of rho (zCDP) and epsilon (run at rho = "
                             "epsilon^2/2)")
        if rho is None:
            rho = rho_from_epsilon(epsilon)
        self.beta = check_real("beta", beta, low=0.0)
        # declare_privacy checks rho and states rho-zCDP; alpha is AdaP's name of beta
        super().__init__(n_arms, epsilon=None, rho=rho, alpha=self.beta, **kwargs)

    @override
    def _episode_mechanism(self):
        return GaussianEpisodeMean(self.rho, self.lower, self.upper, **self.noise_source())

    @override
    def index(self, rows, log_t):
        n = np.maximum(self.released_n[rows], 1)
        width = (0.5 / n + 1.0 / (self.rho * n * n)) * (self.beta * log_t[:, None])
        return self.released[rows] + np.sqrt(width)


# =========================================================================== optimal global DP


#: the longest phase grid :func:`phase_grid` builds (alpha = 1.001 needs about 45,000 phases)
MAX_PHASES = 100_000


def phase_grid(alpha: float, rule: str = "pow", up_to: int = 2**62) -> np.ndarray:
    """The pull counts ``n_0 = 1 < n_1 < ...`` at which an arm's phases end (up to ``up_to``).

    ``"pow"``: ``n_m = max(n_{m-1} + 1, ceil(alpha^m))``. ``"mult"``:
    ``n_m = max(n_{m-1} + 1, ceil(alpha n_{m-1}))``. Both are the doubling grid at alpha = 2.

    Example:
        >>> from ldp_gym.agents.mab import phase_grid
        >>> phase_grid(2.0, up_to=40).tolist()
        [1, 2, 4, 8, 16, 32, 64]
        >>> phase_grid(1.5, "mult", up_to=20).tolist()
        [1, 2, 3, 5, 8, 12, 18, 27]
    """
    alpha = check_real("alpha", alpha, low=1.0)  # > 1
    if rule not in ("pow", "mult"):
        raise ValueError(f"grid must be 'pow' or 'mult', got {rule!r}")
    grid = [1]
    while grid[-1] < up_to:
        if len(grid) > MAX_PHASES:
            raise ValueError(f"alpha={alpha} is too close to 1: its phase grid needs more than "
                             f"{MAX_PHASES} phases")
        m = len(grid)
        step = alpha ** m if rule == "pow" else alpha * grid[-1]
        # (a relative 1e-12 below: 1.1 * 10 is 11.000000000000002 in floating point, not 12)
        grid.append(max(grid[-1] + 1, math.ceil(min(step, 2.0 ** 63) * (1.0 - 1e-12))))
    return np.array(grid, dtype=np.int64)


class DPKLUCB(_Episodes):
    """DP-KLUCB (Azize, Wu, Honda, Orabona, Ito and Basu, NeurIPS 2025; arXiv 2505.05613).

    Arm-dependent phases, non-forgetting. Each arm's pulls are cut into phases that end at
    the counts of :func:`phase_grid` (1, 2, 4, 8, ... at the default alpha = 2). At the end
    of a phase its reward sum is released once with Laplace noise of scale
    ``(upper - lower)/epsilon`` and added to the arm's private cumulative sum ``S~``. The
    agent plays the chosen arm for a whole phase. Its index, computed at a phase's start with
    ``t`` the round about to be played, is
    ``U = max{mu in [x, 1] : d_eps(x, mu) <= log(t) / n}``, with ``x = clip(S~ / n, 0, 1)``
    and n the arm's pulls (:func:`dp_klucb_index`, :func:`~ldp_gym.envs.mab.d_epsilon`).
    Every arm is played once first; ties are broken uniformly at random.

    The paper's pseudocode could not be read here. The index, the Laplace noise on each
    phase's sum and the exploration ``log t`` follow its summary. The phase grid, alpha = 2,
    whole-phase play and the initial pull of each arm are this library's choices. The regret
    guarantee is for Bernoulli rewards; other rewards in ``[lower, upper]`` run but lose it.

    Privacy: epsilon-global DP per reward. Each reward enters exactly one phase sum. Each sum
    is released once (a :class:`~ldp_gym.wrappers.mechanisms.PrivateEpisodeMean` release of
    the phase mean, times its length). ``S~`` and every action are post-processing of the
    releases, so no budget is split over phases (the paper's Prop. 2).

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import DPKLUCB
        >>> env = gym.make("LDPMAB-v0", max_episode_steps=200)
        >>> agent = DPKLUCB.from_env(env, epsilon=1.0, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(50):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> print(agent.privacy)
        global DP, epsilon=1 per reward
        >>> int(agent.counts.sum()), agent.noisy_sums.shape
        (50, (1, 5))
    """

    name = "DP-KLUCB"
    test_params = {"epsilon": 1.0}

    @classmethod
    def _unit_test_params(cls):
        return [{"epsilon": 1.0}, {"epsilon": 0.5, "alpha": 1.5, "grid": "mult"}]

    def __init__(self, n_arms, *, epsilon: float, alpha: float = 2.0, grid: str = "pow",
                 **kwargs):
        self.phases = phase_grid(alpha, grid)
        self.alpha, self.grid = float(alpha), grid
        super().__init__(n_arms, epsilon=epsilon, **kwargs)

    def _init_state(self, n):
        super()._init_state(n)
        self.noisy_sums = np.zeros((n, self.n_arms))     # S~: the released phase sums, added
        self.phase = np.zeros((n, self.n_arms), dtype=np.int64)  # phases each arm completed

    def private_means(self, rows: np.ndarray) -> np.ndarray:
        """``x = clip(S~ / n, lower, upper)`` (len(rows), K), mapped to [0, 1]; 0 where n = 0."""
        n = np.maximum(self.counts[rows], 1)
        x = np.clip(self.noisy_sums[rows] / n, self.lower, self.upper)
        return (x - self.lower) / (self.upper - self.lower)

    def index(self, rows: np.ndarray) -> np.ndarray:
        """The indices (len(rows), K) the next phase's arm maximises."""
        level = np.log(self.t[rows] + 1.0)[:, None] / np.maximum(self.counts[rows], 1)
        return dp_klucb_index(self.private_means(rows), level, self.epsilon)

    @override
    def _score(self, rows):
        return self.index(rows)

    @override
    def _close_episode(self, rows, arms):
        length = self.episode_n[rows]  # the phase's sum, released once: its mean times length
        self.noisy_sums[rows, arms] += self.mechanism.release(self.episode_sum[rows],
                                                              length) * length
        self.phase[rows, arms] += 1

    @override
    def _next_target(self, rows, arms):
        return self.phases[self.phase[rows, arms]]


class DPIMED(DPKLUCB):
    """DP-IMED (Azize, Wu, Honda, Orabona, Ito and Basu, NeurIPS 2025; arXiv 2505.05613).

    The phases, releases and private means of :class:`DPKLUCB`, with IMED's rule: the next
    phase goes to ``argmin_i n_i d_eps(x_i, x*) + log n_i``, where ``x* = max_j x_j`` is the
    largest private mean. Ties are broken uniformly at random. With this reading the regret
    is heavy-tailed: an early noise deviation can starve the best arm for a long stretch.
    Report medians and the fraction of runs that starve the best arm beside the mean.

    Privacy: epsilon-global DP per reward (as DP-KLUCB: the same releases).

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents import DPIMED
        >>> agent = DPIMED(3, epsilon=0.5, num_envs=2, seed=0)
        >>> obs = np.zeros((2, 1))
        >>> for _ in range(30):
        ...     a = agent.act(obs)
        ...     agent.observe(obs, a, np.where(a == 2, 1.0, 0.0), obs)
        >>> agent.counts.sum(axis=1).tolist()
        [30, 30]
    """

    name = "DP-IMED"

    @override
    def index(self, rows):
        """IMED's index (len(rows), K): the next phase goes to its minimum."""
        n = np.maximum(self.counts[rows], 1)
        x = self.private_means(rows)
        best = x.max(axis=1, keepdims=True)
        return n * d_epsilon(x, best, self.epsilon) + np.log(n)

    @override
    def _score(self, rows):
        return -self.index(rows)


# ================================================================ shuffle and distributed DP


class _BatchedSE(_Compiled):
    """Successive elimination over disjoint batches of users, without a trusted learner.

    Epoch e pulls every active arm ``R[i]`` times, in arm order. Each pull's user turns its
    reward, clipped to ``[lower, upper]`` and rescaled to [0, 1], into a message; an
    aggregator holds each (arm, epoch) batch's ``held`` total until the epoch ends. Then the
    analyser estimates every active arm's mean from its total (:meth:`_estimate`), eliminates
    arm a when ``max mu~ - mu~_a > 2 w`` (:meth:`_width`) and plans the next epoch
    (:meth:`_plan`). The survivor is played to the end, with no message.

    The schedule and the users' messages are one compiled kernel,
    :func:`~ldp_gym.agents.mab_kernels.elimination_rounds`, run by ``act``, ``observe`` and
    ``play_block`` alike (those of :class:`_Compiled`): the paths are bitwise the same. It
    stops after each round in which epochs ended, for the analyser, here in Python.
    """

    needs_horizon = True
    _message_kind: ClassVar[int]
    _words_per_user: ClassVar[int]  # about what a user's message takes, to size the draws

    def _init_state(self, n):
        super()._init_state(n)
        self.user_rng = make_rng(**self.noise_source())  # the users' randomisers
        self.user_stream = NoiseStream(self.user_rng, draw_words)  # random bits, per message
        self.active = np.ones((n, self.n_arms), dtype=bool)
        self.epoch = np.ones(n, dtype=np.int64)
        self.epoch_counts = np.zeros((n, self.n_arms), dtype=np.int64)
        self.held = np.zeros((n, self.n_arms), dtype=np.int64)  # the aggregator's, per batch
        self.released = np.zeros((n, self.n_arms))       # the analyser's mu~ of the last epoch
        self.R = np.zeros(n, dtype=np.int64)             # the epoch's batch size per arm
        self._p0, self._p1 = np.zeros(n), np.zeros(n)    # the users' parameters (the kernel's)
        self._plan(np.arange(n))

    @abstractmethod
    def _plan(self, rows: np.ndarray) -> None:
        """Set the next epoch's batch size ``R[rows]`` and the users' parameters."""

    @abstractmethod
    def _estimate(self, rows: np.ndarray) -> np.ndarray:
        """The analyser's estimates (len(rows), K) of the means, from the held totals."""

    @abstractmethod
    def _width(self, rows: np.ndarray) -> np.ndarray:
        """The half-width (len(rows),) of the epoch's confidence intervals."""

    def _rounds(self, mode: int, rewards: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Run the kernel in ``mode`` over ``actions`` (N, L), closing epochs as they end.

        The users' words of random bits come from ``user_stream``, about what the rounds need
        at a time; the kernel returns for more when they run low (before a user, or when a
        user's own words ran out: that user starts again on the same words, extended), and
        what the rounds did not take is given back. So the words each user takes do not
        depend on how the rounds were cut into calls.
        """
        s, run, length = 0, 0, actions.shape[1]
        update = mode & kernels.UPDATE
        want = min(self._words_per_user * actions.size + kernels.WORDS_GUARD, _WORDS_AT_ONCE)
        words = self.user_stream.take(want) if update else _NO_WORDS
        cur = np.zeros(2, dtype=np.int64)  # the words taken, and "more words" from the kernel
        ended = np.zeros(self._n, dtype=bool)
        state = (self.active, self.epoch_counts, self.held, self.R, self._p0, self._p1,
                 self.counts, self.t, ended)
        while s < length:
            s, run = kernels.elimination_rounds(
                mode, self._message_kind, s, run, words, cur, rewards, actions, state,
                (self.lower, self.upper))
            if cur[1]:
                left = words.shape[0] - int(cur[0])
                self.user_stream.give_back(left)
                words = self.user_stream.take(max(want, 2 * left + kernels.WORDS_GUARD))
                cur[:] = 0
            if ended.any():
                self._analyse(np.flatnonzero(ended))
                ended[:] = False
        if update:
            self.user_stream.give_back(words.shape[0] - int(cur[0]))
        return actions

    def _analyse(self, r: np.ndarray) -> None:
        """The analyser, at the end of an epoch of ``r``: estimate, eliminate, plan the next."""
        act = self.active[r]
        self.released[r] = np.where(act, self._estimate(r), -np.inf)
        width = self._width(r)
        best = self.released[r].max(axis=1)
        self.active[r] = act & (best[:, None] - self.released[r] <= 2.0 * width[:, None])
        self.epoch[r] += 1
        self.epoch_counts[r] = 0
        self.held[r] = 0
        self._plan(r)


class ShuffleSE(ShuffleDPAgent, _BatchedSE):
    """Successive elimination in the shuffle model (Tenenbaum, Kaplan, Mansour and Stemmer,
    NeurIPS 2021), on the privacy-blanket summation of bits.

    Epoch e (Delta_e = 2^-e) pulls every active arm R_e times, with
    ``R_e = ceil(8 ln(4 |S| e^2 / beta) / Delta_e^2)`` and beta = 1/T. Each pull's user
    turns its reward r in ``[lower, upper]`` into a bit, 1 with probability
    ``(r - lower)/(upper - lower)``, and sends it through the blanket's local randomiser
    (:func:`~ldp_gym.wrappers.mechanisms.shuffle.blanket_messages`): the bit with probability
    ``1 - gamma_e``, else a uniform bit. The shuffler holds each arm's batch of the epoch
    until it is complete. The analyser sees its shuffled messages and estimates the arm's
    mean ``mu~ = (mean y - gamma_e/2)/(1 - gamma_e)``. The messages are independent bits of
    mean ``(1 - gamma_e) mu + gamma_e/2``, so Hoeffding gives the width
    ``w_e = sqrt(ln(4 |S| e^2 / beta)/(2 R_e)) / (1 - gamma_e)``. An arm is eliminated when
    ``max mu~ - mu~_a > 2 w_e``. The survivor is played to the end.

    The paper's own summation protocol and constants could not be read here. This agent keeps
    its structure (successive elimination over disjoint shuffled batches, one per arm and
    epoch) with the blanket summation of Cheu et al. (2019) and Balle et al. (2019), and
    gamma_e computed exactly for the batch (:func:`~ldp_gym.wrappers.mechanisms.shuffle.blanket_gamma`).

    Privacy: (epsilon, delta)-DP per reward in the shuffle model. Each user's message enters
    one shuffled batch, whose count is (epsilon, delta)-DP for each of its users; the batches
    are disjoint and the schedule is public, so the actions are post-processing.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents import ShuffleSE
        >>> agent = ShuffleSE(2, epsilon=1.0, delta=1e-6, horizon=10_000, num_envs=2, seed=0)
        >>> print(agent.privacy)
        shuffle DP, epsilon=1, delta=1e-06 per reward
        >>> agent.R.tolist(), agent.gamma.round(3).tolist()   # epoch 1's batches
        ([362, 362], [0.164, 0.164])
        >>> obs = np.zeros((2, 1))
        >>> for _ in range(800):
        ...     a = agent.act(obs)
        ...     agent.observe(obs, a, np.where(a == 1, 1.0, 0.0), obs)
        >>> agent.counts.tolist(), agent.active.tolist()    # arm 0 eliminated after epoch 1
        ([[362, 438], [362, 438]], [[False, True], [False, True]])
    """

    name = "Shuffle-SE"
    test_params = {"epsilon": 1.0}
    _message_kind = kernels.SHUFFLE_BITS
    _words_per_user = 3

    @classmethod
    def _unit_test_params(cls):
        return [{"epsilon": 1.0}, {"epsilon": 4.0, "delta": 1e-4, "beta": 0.1}]

    def __init__(self, n_arms, *, epsilon: float, delta: float = 1e-6, beta: float | None = None,
                 lower: float = 0.0, upper: float = 1.0, **kwargs):
        self.declare_privacy("shuffle", epsilon, delta, "reward", lower, upper)
        if not self.delta > 0:
            raise ValueError("delta must be > 0: the shuffle model's guarantee is (epsilon, delta)")
        self._beta = None if beta is None else check_real("beta", beta, low=0.0, high=1.0)
        super().__init__(n_arms, **kwargs)

    def _init_state(self, n):
        self.beta = 1.0 / self.horizon if self._beta is None else self._beta
        self.gamma = np.zeros(n)  # the blanket's gamma of the run's batches (0: none yet)
        super()._init_state(n)

    def _plan(self, rows):
        e, s = self.epoch[rows], self.active[rows].sum(axis=1)
        log_term = np.log(4.0 * s * e ** 2 / self.beta)
        self.R[rows] = np.ceil(8.0 * log_term * 4.0 ** e).astype(np.int64)
        # a survivor's users send nothing, so its epoch has no blanket to size (its gamma
        # stays the last batch's): the bisection for its large R took most of a cold run
        sending = rows[s >= 2]
        sizes, which = np.unique(self.R[sending], return_inverse=True)  # one gamma per size
        self.gamma[sending] = self._p0[sending] = np.array(
            [blanket_gamma(int(size), self.epsilon, self.delta) for size in sizes])[which]

    def _estimate(self, rows):
        R, gamma = self.R[rows][:, None], self.gamma[rows][:, None]
        return (self.held[rows] / R - gamma / 2.0) / (1.0 - gamma)

    def _width(self, rows):
        s = self.active[rows].sum(axis=1)
        log_term = np.log(4.0 * s * self.epoch[rows] ** 2 / self.beta)
        return np.sqrt(log_term / (2.0 * self.R[rows])) / (1.0 - self.gamma[rows])


class DistDPSE(DistributedDPAgent, _BatchedSE):
    """Dist-DP-SE: successive elimination with pure DP and no trusted party (Chowdhury and
    Zhou, "Distributed Differential Privacy in Multi-Armed Bandits", ICLR 2023, Alg. 1 with
    the secure-aggregation sum of Alg. 2 and discrete Laplace shares).

    Batch b pulls every active arm ``B = growth^b`` times (growth 4, from b = 1). Each user
    sends its reward through the private sum of
    :mod:`~ldp_gym.wrappers.mechanisms.distributed`: a rounding to precision
    ``g = ceil(epsilon sqrt(B))``, a share of discrete Laplace noise and a reduction mod m.
    SecAgg reveals each arm's sum of messages mod m, the analyser decodes the private sum
    ``S~_a`` and ``mu~_a = S~_a / B``. With ``L_c = ln(c |S| b^2 / beta)``, the width is
    ``w = sqrt(L_4/(2B)) + sigma sqrt(L_2)/B + h L_2/B``, ``sigma = sqrt(2)/epsilon`` and
    ``h = 1/epsilon``. Arm a is eliminated when ``max mu~ - mu~_a > 2 w``; the survivor is
    played to the end.

    Every constant (growth 4, beta = 0.1, the width's multiplier 1, g, tau, m) is that of
    the authors' code (``sayakrc/Differentially-Private-Bandits``, ``MABPrivate.py``,
    ``BatchSEDistDP``), except the Polya shares' Gamma scale: that code draws it as
    ``(1 - q)/q``, which gives almost no noise (see
    :mod:`~ldp_gym.wrappers.mechanisms.distributed`); here it is ``q/(1 - q)``, the law the
    paper states.

    Privacy: epsilon-DP (pure) per reward in the distributed model: no party, the learner
    included, sees more than each batch's sum of messages mod m, which is epsilon-DP for each
    of its users. The batches are disjoint and the schedule is public, so the actions are
    post-processing. The shares are sampled exactly, with integer arithmetic on random bits,
    at a ratio that spends at most epsilon (:mod:`~ldp_gym.wrappers.mechanisms.distributed`).
    ``held`` stands for secure aggregation's running sums, kept in this object to simulate it:
    a learner does not read it. Each user reads words of 64 random bits (about 39 for a batch
    of 1024), from the OS CSPRNG with ``secure=True``.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents import DistDPSE
        >>> agent = DistDPSE(2, epsilon=1.0, horizon=10_000, num_envs=2, seed=0)
        >>> print(agent.privacy)
        distributed DP, epsilon=1 per reward
        >>> agent.R.tolist(), agent.precision.tolist(), agent.modulus.tolist()  # batch 1
        ([4, 4], [2, 2], [21, 21])
        >>> rewards = np.tile([0.2, 0.9], (2, 3000, 1))       # arm 1 is better
        >>> actions = agent.play_block(None, rewards)
        >>> agent.active.tolist()
        [[False, True], [False, True]]
    """

    name = "Dist-DP-SE"
    test_params = {"epsilon": 1.0}
    _message_kind = kernels.SECAGG_SHARES
    _words_per_user = 40

    @classmethod
    def _unit_test_params(cls):
        return [{"epsilon": 1.0}, {"epsilon": 4.0, "beta": 0.05, "growth": 2}]

    def __init__(self, n_arms, *, epsilon: float, beta: float = 0.1, growth: int = 4,
                 lower: float = 0.0, upper: float = 1.0, **kwargs):
        self.declare_privacy("distributed", epsilon, 0.0, "reward", lower, upper)
        self.epsilon, self.beta = check_budget(epsilon, beta)
        self.growth = check_int("growth", growth, low=2)
        super().__init__(n_arms, **kwargs)

    def _init_state(self, n):
        largest = float(self.growth) * self.horizon     # no batch of the horizon is larger
        if largest * math.ceil(self.epsilon * math.sqrt(largest)) > 2.0**60:
            raise ValueError(f"epsilon={self.epsilon:g} and growth={self.growth} make the batches' "
                             f"moduli exceed 64-bit integers at horizon={self.horizon}: lower "
                             "epsilon")
        self.precision = np.zeros(n, dtype=np.int64)     # g, tau, m and q of the batches
        self.accuracy = np.zeros(n, dtype=np.int64)
        self.modulus = np.zeros(n, dtype=np.int64)
        self.q = np.zeros(n)
        super()._init_state(n)

    def _plan(self, rows):
        self.R[rows] = self.growth ** self.epoch[rows]  # at most growth x horizon
        (self.precision[rows], self.accuracy[rows], self.modulus[rows],
         s) = dist_dp_parameters(self.R[rows], self.epsilon, self.beta)
        self.q[rows] = np.exp(-s / RATIO_DENOMINATOR)  # the shares' ratio
        self._p0[rows], self._p1[rows] = self.precision[rows], s  # exact in float64 (< 2^46)

    def _estimate(self, rows):
        col = (slice(None), None)
        return secagg_sum(self.held[rows], self.R[rows][col], self.precision[rows][col],
                          self.accuracy[rows][col], self.modulus[rows][col]) / self.R[rows][col]

    def _width(self, rows):
        s = self.active[rows].sum(axis=1)
        b2, B = self.epoch[rows].astype(np.float64) ** 2, self.R[rows].astype(np.float64)
        log4, log2 = np.log(4.0 * s * b2 / self.beta), np.log(2.0 * s * b2 / self.beta)
        return (np.sqrt(log4 / (2.0 * B)) + math.sqrt(2.0) / self.epsilon * np.sqrt(log2) / B
                + log2 / (self.epsilon * B))


#: The MAB agents by display name (the contract suite and the CLI read this).
AGENTS: dict[str, type[Agent]] = {cls.name: cls for cls in (
    UCB1, KLUCB, ThompsonSampling, Exp3, TsallisINF, LDPUCB, DPUCB, DPSE, AdaPUCB, AdaPKLUCB,
    AdaCUCB, DPKLUCB, DPIMED, ShuffleSE, DistDPSE)}
