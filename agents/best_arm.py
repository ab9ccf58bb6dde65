"""Best-arm identification with fixed confidence: Top Two, AdaP-TT, DP-SE and CTB-TT.

The agents of ``LDPBestArm-v0`` (:mod:`ldp_gym.envs.best_arm`). Each pulls arms until its
stopping rule fires, then recommends: its action ``K + a`` recommends arm a, and from then on
it keeps recommending in that run. ``risk`` is the confidence parameter delta of the papers:
the probability of a wrong recommendation each agent is built to stay below.
:attr:`BestArmAgent.recommendation` holds each run's recommendation, -1 before the stop.

* :class:`TopTwo`, TT-UCB, is the non-private baseline; :class:`AdaPTT` is epsilon-global
  DP (Azize, Jourdan, Al Marjani and Basu, NeurIPS 2023); :class:`DPSEBestArm` is DP-SE run
  until one arm is left (Sajed and Sheffet, ICML 2019); :class:`CTBTT` is epsilon-local DP
  (Azize et al., arXiv 2406.06408).
* The Top Two rules follow the authors' public code (``Aymen97am/DP_BAI``, ``ucb_TT.py`` and
  ``adap_TT.py``, commit eb3b287, with ``achraf-azize/DP-BAI`` for the second threshold).
  Where that code has a mistake, the docstrings say what is done instead.
* The stopping statistics are the authors': the Gaussian (unit variance) generalised
  likelihood ratio ``(mu_B - mu_j)^2 / (2 (1/n_B + 1/n_j))``. It is conservative for rewards
  in [0, 1], whose variance is at most 1/4.

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> from ldp_gym.agents import TopTwo
    >>> env = gym.make("LDPBestArm-v0", means=[0.2, 0.5, 0.9])
    >>> agent = TopTwo.from_env(env, risk=0.05, seed=0)
    >>> obs, _ = env.reset(seed=0)
    >>> terminated = truncated = False
    >>> while not (terminated or truncated):
    ...     action = agent.act(obs)
    ...     next_obs, reward, terminated, truncated, info = env.step(action)
    ...     agent.observe(obs, action, reward, next_obs)
    ...     obs = next_obs
    >>> info["recommendation"], info["optimal_action"], int(agent.counts.sum())
    (2, 2, 248)
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from typing_extensions import override

from ldp_gym.envs.best_arm import TASK
from ldp_gym.protocols import BlockPlay
from ldp_gym.validation import Part, check_real
from ldp_gym.wrappers.mechanisms import PrivateEpisodeMean, RandomizedResponse

from .base import Agent, LocalDPAgent, argmax_random, readonly
from .mab import DPSE, MABAgent, _GlobalMAB

__all__ = ["CTBTT", "AdaPTT", "BestArmAgent", "DPSEBestArm", "TopTwo", "adap_threshold",
           "top_two_threshold"]

#: The thresholds of :class:`AdaPTT`'s stopping rule.
THRESHOLDS = ("empirical", "theoretical")
#: The leaders of :class:`AdaPTT`: the private UCB of the authors' code, or the empirical best.
LEADERS = ("ucb", "eb")
_ZETA = math.pi ** 2 / 6


class BestArmAgent(MABAgent):
    """Base of the best-arm identification agents: pull, then recommend once and for all.

    The action space is ``Discrete(2K)`` of the setting. Subclasses choose the next pull in
    :meth:`_pull` and learn from the pulls of the runs still going in :meth:`_learn`, where
    they set :attr:`recommendation` to stop a run.

    One episode per run: once a run has recommended, the agent keeps sending that
    recommendation and learns nothing more there. A vector env autoresets the run, and each
    new episode then ends at once with the old recommendation, judged on a new instance: in a
    loop of your own, count a run's first termination only, as :func:`ldp_gym.run` does, and
    call :meth:`reset` (every run) for new episodes.

    Args:
        n_arms: the number of arms K (``from_env`` reads it off ``Discrete(2K)``).
        risk: delta, the error probability the stopping rule allows, in (0, 1).
    """

    task: ClassVar[str] = TASK
    test_env: ClassVar[str] = "LDPBestArm-v0"

    def __init__(self, n_arms: int, *, risk: float = 0.1, **kwargs: Any):
        self.risk = check_real("risk", risk, low=0.0, high=1.0)
        if self.risk >= 1.0:
            raise ValueError(f"risk must lie in (0, 1), got {risk!r}")
        super().__init__(n_arms, **kwargs)

    @classmethod
    def space_params(cls, space: spaces.Space) -> dict[str, Any]:
        """``n_arms`` K of the setting's ``Discrete(2K)``: pulls 0..K-1, recommendations K..2K-1."""
        n = super().space_params(space)["n_arms"]
        if n % 2:
            raise ValueError(f"env: {cls.name} needs the Discrete(2K) actions of best-arm "
                             f"identification (pulls, then recommendations), not {space}")
        return {"n_arms": n // 2}

    def _make_action_space(self) -> spaces.Space:
        return spaces.Discrete(2 * self.n_arms)

    def _init_state(self, n):
        super()._init_state(n)
        #: (N,) the arm each run recommended, -1 while it is still pulling.
        self.recommendation = np.full(n, -1, dtype=np.int64)

    def _act(self, obs):
        stopped = self.recommendation >= 0
        return np.where(stopped, self.n_arms + self.recommendation, self._pull())

    def _observe(self, obs, actions, rewards, next_obs):
        rows = np.flatnonzero((actions < self.n_arms) & (self.recommendation < 0))
        if rows.size:
            self._learn(rows, actions[rows], np.clip(rewards[rows], self.lower, self.upper))

    def _first_pulls(self) -> tuple[np.ndarray, np.ndarray]:
        """``(unpulled, first)``: whether each run has an arm never pulled, and the first one."""
        unpulled = self.counts == 0
        return unpulled.any(axis=1), unpulled.argmax(axis=1)

    def _top_two(self, leader: np.ndarray, means: np.ndarray, counts: np.ndarray,
                 t: np.ndarray) -> np.ndarray:
        """The leader with probability 1/2, else the transportation-cost challenger.

        The challenger minimises ``(m_B - m_j + kappa(t)) / sqrt(1/n_B + 1/n_j)`` over j != B,
        with ``kappa(t) = log(1 + t)^(-1/4)`` (the authors' ``toptwo.py``)."""
        rows = np.arange(means.shape[0])
        kappa = np.log1p(np.maximum(t, 1).astype(np.float64)) ** -0.25
        gap = means[rows, leader][:, None] - means + kappa[:, None]
        cost = gap / np.sqrt(1.0 / counts[rows, leader][:, None] + 1.0 / counts)
        cost[rows, leader] = np.inf
        challenger = cost.argmin(axis=1)
        return np.where(self.rng.random(means.shape[0]) < 0.5, leader, challenger)

    @staticmethod
    def _glr(best: np.ndarray, means: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The Gaussian GLR ``(m_B - m_j)_+^2 / (2 (1/n_B + 1/n_j))`` (N, K); +inf at B."""
        rows = np.arange(means.shape[0])
        gap = np.maximum(means[rows, best][:, None] - means, 0.0)
        z = 0.5 * gap ** 2 / (1.0 / counts[rows, best][:, None] + 1.0 / counts)
        z[rows, best] = np.inf
        return z

    @abstractmethod
    def _pull(self) -> np.ndarray:
        """The next arm (N,) of every run."""

    @abstractmethod
    def _learn(self, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Learn from one pull of ``arms`` in ``rows``, with rewards clipped to the bounds."""


def top_two_threshold(t: Any, n_arms: int, risk: float) -> np.ndarray:
    """TT-UCB's stopping threshold ``log((1 + log t)/delta) + log(K)/2`` after t pulls
    (the authors' ``ucb_TT.py``)."""
    t = np.asarray(t, dtype=np.float64)
    return np.log((1.0 + np.log(t)) / risk) + 0.5 * math.log(n_arms)


class TopTwo(BestArmAgent):
    """TT-UCB: the Top Two rule with a UCB leader, non-private (the authors' ``ucb_TT.py``).

    Each arm is pulled once, in order. Then the leader is the arm of largest
    ``mu^_a + sqrt(log t / (2 n_a))``; with probability 1/2 it is pulled, else the challenger
    of :meth:`BestArmAgent._top_two` on the empirical means. After every pull, the run stops
    when the empirical best B has a Gaussian GLR against every other arm of at least
    :func:`top_two_threshold`, and recommends B. Rewards are clipped to ``[lower, upper]``.

    Privacy: none; it is the baseline of the private agents.

    Example:
        >>> import ldp_gym
        >>> from ldp_gym.agents import TopTwo
        >>> venv = ldp_gym.make_vector_env("LDPBestArm-v0", 4, 10_000, means=[0.1, 0.5, 0.9])
        >>> agent = TopTwo.from_env(venv, risk=0.1, seed=0)
        >>> obs, _ = venv.reset(seed=0)
        >>> for _ in range(500):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = venv.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.recommendation.tolist(), venv.unwrapped.core.best_arm.tolist()
        ([2, 2, 2, 2], [2, 2, 2, 2])
    """

    name = "TT-UCB"
    test_params = {"risk": 0.1}

    def _init_state(self, n):
        super()._init_state(n)
        self.sums = np.zeros((n, self.n_arms))

    def _pull(self):
        unpulled, first = self._first_pulls()
        n = np.maximum(self.counts, 1)
        means = self.sums / n
        t = np.maximum(self.t, 1)
        ucb = means + np.sqrt(np.log(t)[:, None] / (2.0 * n))
        return np.where(unpulled, first, self._top_two(argmax_random(self.rng, ucb), means, n, t))

    def _learn(self, rows, arms, rewards):
        self.counts[rows, arms] += 1
        self.t[rows] += 1
        self.sums[rows, arms] += rewards
        ready = rows[(self.counts[rows] > 0).all(axis=1)]
        if ready.size == 0 or self.n_arms == 1:
            self.recommendation[ready] = 0
            return
        means = self.sums[ready] / self.counts[ready]
        best = means.argmax(axis=1)
        z = self._glr(best, means, self.counts[ready]).min(axis=1)
        stop = z >= top_two_threshold(self.t[ready], self.n_arms, self.risk)
        self.recommendation[ready[stop]] = best[stop]


def adap_threshold(n: Any, m: Any, risk: float, epsilon: float, kind: str = "empirical",
                   n_arms: int = 2, phase: Any = 1) -> np.ndarray:
    """AdaP-TT's stopping threshold for phases of ``n`` and ``m`` rewards.

    ``"empirical"`` (the authors' ``emp_c``, used in their experiments):
    ``log(1/delta) + log(1 + log n) + log(1 + log m) + (1/n + 1/m) log(1/delta)^2 / epsilon^2``.
    ``"theoretical"`` (``dp_c`` of ``achraf-azize/DP-BAI``):
    ``2 C(log((K-1) zeta p^2 / delta) / 2) + 2 log(4 + log n) + 2 log(4 + log m)
    + (1/n + 1/m) log(2 K zeta p^2 / delta)^2 / epsilon^2``, with ``zeta = pi^2/6``, the
    code's calibration ``C(x) = x + log x`` and p the phase index. The code never calls it
    and leaves p open; here p is the larger phase count of the two arms, the union bound
    over every phase reached so far.
    """
    n, m = (np.asarray(v, dtype=np.float64) for v in (n, m))
    inv = 1.0 / n + 1.0 / m
    if kind == "empirical":
        lg = math.log(1.0 / risk)
        return lg + np.log1p(np.log(n)) + np.log1p(np.log(m)) + inv * lg ** 2 / epsilon ** 2
    p2 = np.asarray(phase, dtype=np.float64) ** 2
    x = 0.5 * np.log((n_arms - 1) * _ZETA * p2 / risk)
    return (2.0 * (x + np.log(x)) + 2.0 * np.log(4.0 + np.log(n)) + 2.0 * np.log(4.0 + np.log(m))
            + inv * np.log(2.0 * n_arms * _ZETA * p2 / risk) ** 2 / epsilon ** 2)


class AdaPTT(BestArmAgent, _GlobalMAB):
    """AdaP-TT (Azize, Jourdan, Al Marjani and Basu, NeurIPS 2023, Alg. 1; the authors'
    ``adap_TT.py``).

    Every arm's rewards come in phases whose lengths double: 1, 1, 2, 4, ... . At a phase's
    end, the arm's private mean becomes that phase's mean plus ``Lap(1/(epsilon n))``,
    n the phase's length, and the older phases are forgotten. Each arm is pulled once
    first. Then the leader is the private UCB
    ``mu~_a + log(N)/(epsilon n_a) + sqrt(log(N)/(2 n_a))`` (``leader="ucb"``, the code's; N
    the rewards of all completed phases, n_a the last phase's length) or the largest private
    mean (``"eb"``). The leader is pulled with probability 1/2, else the challenger of
    :meth:`BestArmAgent._top_two` on the private means, with every pull counted. At a phase's
    end only, the run stops when the leader's GLR on the private means and the last phases'
    lengths reaches :func:`adap_threshold` against every other arm. It recommends the largest
    private mean.

    Departures from the code, both mistakes there: the GLR takes the positive part of the gap,
    which the code squares without it, so a leader below an arm cannot stop the run; and the
    recommendation is then the leader itself, which has the largest private mean. The code's
    returned sample size leaves out the open phases; here the env counts every pull.

    Privacy: epsilon-global DP per reward. Each reward enters one phase's release, with
    ``Lap(1/(epsilon n))`` for a mean of n rewards in [0, 1]; leader, challenger, stopping and
    recommendation read only releases and counts.

    Args:
        epsilon: the privacy budget.
        risk: delta.
        threshold: ``"empirical"`` (default) or ``"theoretical"``, of :func:`adap_threshold`.
        leader: ``"ucb"`` (default) or ``"eb"``.

    Example:
        >>> import ldp_gym
        >>> from ldp_gym.agents import AdaPTT
        >>> res = ldp_gym.run("LDPBestArm-v0", {"A": (AdaPTT, {"epsilon": 1.0})}, horizon=100_000,
        ...                   n_runs=4, seed=0, env_kwargs={"means": [0.2, 0.5, 0.8]},
        ...                   progress=False)
        >>> res.identification("A")["errors"], res.stopping_times("A").tolist()
        (0, [2671, 1387, 2074, 2761])
    """

    name = "AdaP-TT"
    test_params = {"epsilon": 1.0, "risk": 0.1}

    @classmethod
    def _unit_test_params(cls):
        return [dict(cls.test_params), {"epsilon": 0.5, "risk": 0.01, "threshold": "theoretical",
                                        "leader": "eb"}]

    def __init__(self, n_arms, *, epsilon: float, risk: float = 0.1, threshold: str = "empirical",
                 leader: str = "ucb", **kwargs):
        if threshold not in THRESHOLDS:
            raise ValueError(f"threshold must be one of {THRESHOLDS}, got {threshold!r}")
        if leader not in LEADERS:
            raise ValueError(f"leader must be one of {LEADERS}, got {leader!r}")
        self.threshold, self.leader = threshold, leader
        super().__init__(n_arms, risk=risk, epsilon=epsilon, **kwargs)

    def _init_state(self, n):
        super()._init_state(n)
        self.mechanism = PrivateEpisodeMean(self.epsilon, self.lower, self.upper,
                                            **self.noise_source())
        self.released = np.zeros((n, self.n_arms))           # mu~: the last phase's release
        self.done = np.zeros((n, self.n_arms), dtype=np.int64)  # rewards of completed phases
        self.last = np.zeros((n, self.n_arms), dtype=np.int64)  # the last phase's length
        self.phases = np.zeros((n, self.n_arms), dtype=np.int64)
        self.phase_sums = np.zeros((n, self.n_arms))

    def _leader(self, rows: np.ndarray) -> np.ndarray:
        if self.leader == "eb" or (self.last[rows] == 0).any():
            return self.released[rows].argmax(axis=1)
        s = self.last[rows]
        log_n = np.log(np.maximum(self.done[rows].sum(axis=1), 1))[:, None]
        return (self.released[rows] + log_n / (self.epsilon * s) + np.sqrt(log_n / (2.0 * s))
                ).argmax(axis=1)

    def _pull(self):
        unpulled, first = self._first_pulls()
        leader = self._leader(self._rows)
        tt = self._top_two(leader, self.released, np.maximum(self.counts, 1),
                           self.done.sum(axis=1))
        return np.where(unpulled, first, tt)

    def _learn(self, rows, arms, rewards):
        self.counts[rows, arms] += 1
        self.t[rows] += 1
        self.phase_sums[rows, arms] += rewards
        open_n = self.counts[rows, arms] - self.done[rows, arms]
        ends = open_n >= np.maximum(self.done[rows, arms], 1)  # the arm's rewards doubled
        r, a, n = rows[ends], arms[ends], open_n[ends]
        if r.size == 0:
            return
        self.released[r, a] = self.mechanism.release(self.phase_sums[r, a], n)
        self.done[r, a] += n
        self.last[r, a] = n
        self.phases[r, a] += 1
        self.phase_sums[r, a] = 0.0
        self._stop(r[(self.last[r] > 0).all(axis=1)])

    def _stop(self, rows: np.ndarray) -> None:
        if rows.size == 0:
            return
        if self.n_arms == 1:
            self.recommendation[rows] = 0
            return
        best = self._leader(rows)
        last = self.last[rows]
        z = self._glr(best, self.released[rows], last)
        idx = np.arange(rows.size)
        phase = np.maximum(self.phases[rows], self.phases[rows, best][:, None])
        c = adap_threshold(last[idx, best][:, None], last, self.risk, self.epsilon,
                           self.threshold, self.n_arms, phase)
        stop = (z >= c).all(axis=1)
        self.recommendation[rows[stop]] = self.released[rows[stop]].argmax(axis=1)


class DPSEBestArm(BestArmAgent, DPSE):
    """DP-SE for best-arm identification (Sajed and Sheffet, ICML 2019, Alg. 2 and its
    Theorem on identification), stopped when one arm is left.

    The epochs, releases and eliminations of :class:`~ldp_gym.agents.DPSE` with beta = delta
    (``risk``): epoch e pulls every active arm
    ``R_e = floor(max(32 ln(8|S|e^2/delta)/Delta_e^2, 8 ln(4|S|e^2/delta)/(Delta_e eps))) + 1``
    times and releases each epoch mean with ``Lap(1/(eps R_e))``. The run stops as soon as one
    arm is active, and recommends it. The epoch mean is this epoch's sum over R_e, not over
    the cumulative count as in the ``dp_se.py`` of the authors' BAI code (biased there).

    Privacy: epsilon-global DP per reward, as :class:`~ldp_gym.agents.DPSE`: each reward
    enters one epoch release.

    Example:
        >>> import ldp_gym
        >>> from ldp_gym.agents import DPSEBestArm
        >>> res = ldp_gym.run("LDPBestArm-v0", {"A": (DPSEBestArm, {"epsilon": 1.0})}, horizon=100_000,
        ...                   n_runs=4, seed=0, env_kwargs={"means": [0.2, 0.5, 0.8]},
        ...                   progress=False)
        >>> res.identification("A")["errors"], res.stopping_times("A").tolist()
        (0, [2106, 2106, 2106, 2106])
    """

    name = "DP-SE (BAI)"
    needs_horizon = False
    block_play = BlockPlay.ROUNDS
    test_params = {"epsilon": 1.0, "risk": 0.1}

    @classmethod
    def _unit_test_params(cls):
        return [dict(cls.test_params)]

    def __init__(self, n_arms, *, epsilon: float, risk: float = 0.1, **kwargs):
        super().__init__(n_arms, risk=risk, epsilon=epsilon, beta=risk, **kwargs)

    def _pull(self):
        return self._current()

    def _learn(self, rows, arms, rewards):
        pulled = np.zeros(self._n, dtype=np.int64)
        pulled[rows] = 1
        actions = np.zeros(self._n, dtype=np.int64)
        actions[rows] = arms
        sums = np.zeros(self._n)
        sums[rows] = rewards
        self._update(actions, pulled, sums)
        left = rows[self.active[rows].sum(axis=1) == 1]
        self.recommendation[left] = self.active[left].argmax(axis=1)


class CTBTT(LocalDPAgent, BestArmAgent):
    """CTB-TT: TT-UCB on randomised responses, epsilon-local DP (Azize, Jourdan, Al Marjani
    and Basu 2024, arXiv 2406.06408, "Convert to Bernoulli").

    User side: the user pulls the arm of the public state, turns the reward r, clipped to
    ``[lower, upper]`` and mapped onto [0, 1], into a bit of Bernoulli(r) and sends it through
    randomised response: kept with probability ``e^eps/(1 + e^eps)``, else flipped. Server side:
    :class:`TopTwo` on the bits. Their means ``(mu_a (e^eps - 1) + 1)/(e^eps + 1)`` are an
    increasing affine map of the arms' means, so the bits have the same best arm, and TT-UCB's
    risk holds for them. The paper's own stopping threshold is not reproduced here: its text was
    not available; this is TT-UCB's (:func:`top_two_threshold`).

    Privacy: epsilon-local DP per reward: one randomised-response bit per user, whatever the
    reward.

    Example:
        >>> import ldp_gym
        >>> from ldp_gym.agents import CTBTT
        >>> res = ldp_gym.run("LDPBestArm-v0", {"A": (CTBTT, {"epsilon": 1.0})}, horizon=100_000,
        ...                   n_runs=4, seed=0, env_kwargs={"means": [0.2, 0.5, 0.8]},
        ...                   progress=False)
        >>> res.identification("A")["errors"], res.stopping_times("A").tolist()
        (0, [2343, 3011, 2674, 4670])
    """

    name = "CTB-TT"
    test_params = {"epsilon": 1.0, "risk": 0.1}
    report_reads_public_state = False  # the arm comes from the public state through act

    def __init__(self, n_arms, *, epsilon: float, risk: float = 0.1, lower: float = 0.0,
                 upper: float = 1.0, **kwargs):
        self.declare_privacy("local", epsilon, 0.0, "reward", lower, upper)
        super().__init__(n_arms, risk=risk, **kwargs)

    def _init_state(self, n):
        super()._init_state(n)
        self.mechanism = RandomizedResponse(self.epsilon, 2, **self.noise_source())
        self.server = TopTwo(self.n_arms, risk=self.risk, num_envs=n, seed=self.spawn())

    def _pull(self):
        return self.server._pull()

    @override
    def public_state(self):
        """The server's counts and sums of bits, from which ``act`` draws the next arm, and the
        recommendations."""
        return readonly(counts=self.server.counts, sums=self.server.sums,
                        recommendation=self.recommendation)

    def _report(self, obs, actions, rewards, next_obs, public_state):
        r = (np.clip(rewards, self.lower, self.upper) - self.lower) / (self.upper - self.lower)
        bits = (self.mechanism.rng.random(r.shape) < r).astype(np.int64)
        return {"arm": np.array(actions, dtype=np.int64), "bit": self.mechanism(bits)}

    def report_schema(self):
        """``arm`` (N,) in {0, ..., 2K-1} (a recommendation is sent too) and the ``bit``."""
        return {"arm": Part((self._n,), "int", 0, 2 * self.n_arms - 1),
                "bit": Part((self._n,), "int", 0, 1)}

    def _fold(self, report):
        arms, bits = report["arm"], report["bit"].astype(np.float64)
        rows = np.flatnonzero((arms < self.n_arms) & (self.recommendation < 0))
        if rows.size:
            self._learn(rows, arms[rows], bits[rows])

    def _learn(self, rows, arms, rewards):
        self.counts[rows, arms] += 1
        self.t[rows] += 1
        self.server._learn(rows, arms, rewards)
        self.recommendation[rows] = self.server.recommendation[rows]


AGENTS: dict[str, type[Agent]] = {cls.name: cls for cls in (TopTwo, AdaPTT, DPSEBestArm, CTBTT)}
