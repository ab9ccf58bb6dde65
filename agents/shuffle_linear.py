"""Linear contextual bandits in the shuffle model: :class:`SDPLinUCB`.

Users randomise their statistics locally, a trusted shuffler mixes each batch of B users'
messages, and the learner sees only the shuffled batches. The guarantee is the shuffled sum's
(:mod:`~ldp_gym.wrappers.mechanisms.shuffle_vector`): between local DP, where each message
must be private alone, and joint DP, where the learner is trusted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldp_gym.validation import check_int, check_real
from ldp_gym.wrappers.mechanisms.noise import clip_l2, make_rng, upper_indices
from ldp_gym.wrappers.mechanisms.shuffle_vector import (
    binomial_quarter,
    pvec_encode,
    pvec_precision,
    pvec_trials,
)

from .base import Agent, ShuffleDPAgent, argmax_random
from .glm import ContextualAgent

__all__ = ["SDPLinUCB"]


class SDPLinUCB(ShuffleDPAgent, ContextualAgent):
    """SDP-LinUCB: batched LinUCB on shuffle-private sums of the users' statistics (Chowdhury
    and Zhou, "Shuffle Private Linear Contextual Bandits", ICML 2022, Alg. 1 with the vector
    summation protocol P_Vec).

    Every B rounds (``batch_size``) the B users of the batch send their statistics
    ``x y`` and the upper triangle of ``x x^T`` (the context clipped to ``context_bound`` L,
    the reward to ``reward_bound`` R) through the shuffled vector sum of
    :mod:`~ldp_gym.wrappers.mechanisms.shuffle_vector`, coordinates bounded by L R and L^2.
    The learner adds the decoded sums to ``b`` and ``G`` (made symmetric), sets
    ``theta = (G + lambda I)^-1 b`` with ``lambda = 2 Gamma`` and, until the next batch ends,
    plays ``argmax_a x_a^T theta + w ||x_a||_{(G + lambda I)^-1}``, ties broken at random.
    Eigenvalues of ``G + lambda I`` below ``lambda/1000`` (noise beating the regulariser) are
    raised to it, a post-processing.

    Constants (the authors' code, ``sayakrc/Differentially-Private-Bandits``,
    ``LinBanditPrivate.py``, ``SDPLinUCBPVec``): B = 20, the precision
    ``g = max(2 sqrt(B), d, 4)``, p = 1/4, ``Gamma = (1/4) sigma sqrt(T) sqrt(d)`` with their
    noise level ``sigma = ln(d/delta)/(epsilon sqrt(B))``, which equals ``sqrt(b)/g`` for
    their b, and the width ``w = sqrt(Gamma) S + R' sqrt(d ln((1 + T L^2/Gamma) T))``
    (``theta_bound`` S, ``noise_scale`` R' = 0.5, confidence 1/T) fixed for the whole run.
    Changes: b, the noise bits per user and coordinate, is the smallest that makes the batch
    (epsilon, delta)-DP by exact accounting
    (:func:`~ldp_gym.wrappers.mechanisms.shuffle_vector.pvec_trials`), and sigma is
    ``sqrt(b)/g`` for that b. The authors' b is not private at their budgets (epsilon 20.5
    instead of 1 at d = 5, B = 20, delta = 0.1); the exact b is 34 times theirs there. The
    declared bounds replace the data's: L is ``context_bound`` (the authors: the largest arm
    norm of their instance), the Gram coordinates are bounded by L^2 (the authors encode them
    in [-L, L]) and S is ``theta_bound``, 1 by default (the authors: sqrt(d)); at d = 5 the
    width is then about half the authors'.

    The setting is the paper's single-parameter one, a context per arm (``LDPLinearBandit-v0``,
    ``LDPGLMBandit-v0``); the multi-parameter envs are refused: their block contexts of
    dimension dK would make the shuffled coordinates, and the noise, grow as (dK)^2.

    Privacy: (epsilon, delta)-DP per user in the shuffle model, protecting the context and
    the reward (and so the action) of each user from the learner and everyone after it. Each
    user's statistics enter one batch, whose shuffled counts are (epsilon, delta)-DP for each
    of its users; the batches are disjoint, so the learner's estimates and the actions are
    post-processing. The simulation draws a batch's binomial noise at once: the sum of its B
    users' Binomial(b, 1/4) shares is Binomial(b B, 1/4). Each user's rounding and the noise
    bits come from the users' stream, the OS CSPRNG with ``secure=True``. Needs the
    ``accounting`` extra.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import SDPLinUCB
        >>> env = gym.make("LDPLinearBandit-v0", max_episode_steps=100)
        >>> agent = SDPLinUCB.from_env(env, epsilon=2.0, delta=0.01, seed=0)
        >>> print(agent.privacy)
        shuffle DP, epsilon=2, delta=0.01 per user (context, action and reward)
        >>> agent.precision, agent.coords, agent.trials   # g, d + d(d+1)/2, b
        (9, 5, 544)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(40):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.batches.tolist()       # two batches of 20 users released
        [2]
    """

    name = "SDP-LinUCB"
    needs_horizon = True
    horizon: int  # always given (needs_horizon)
    test_params = {"epsilon": 1.0, "delta": 0.01}

    @classmethod
    def _unit_test_params(cls):
        return [cls.test_params, {"epsilon": 4.0, "delta": 1e-3, "batch_size": 8,
                                  "context_bound": 0.7, "reward_bound": 0.4}]

    def __init__(self, n_arms, *, epsilon: float, delta: float = 0.01, batch_size: int = 20,
                 precision: int | None = None, noise_scale: float = 0.5,
                 theta_bound: float = 1.0, **kwargs: Any):
        self.batch_size = check_int("batch_size", batch_size)
        self._precision = None if precision is None else check_int("precision", precision)
        self.noise_scale = check_real("noise_scale", noise_scale, low=0.0)
        self.theta_bound = check_real("theta_bound", theta_bound, low=0.0)
        self._budget = (epsilon, delta)
        super().__init__(n_arms, **kwargs)

    def _init_state(self, n):
        eps, delta = self._budget
        self.declare_privacy("shuffle", eps, delta, "user", -self.reward_bound, self.reward_bound)
        if not self.delta > 0:
            raise ValueError("delta must be > 0: the binomial sum's guarantee is (epsilon, delta)")
        d, c, r = self.D, self.context_bound, self.reward_bound
        if self.multi_parameter:
            raise ValueError(f"{self.name} runs in the single-parameter setting (a context per "
                             f"arm): with multi_parameter=True its block contexts (D = {d}) give "
                             f"{d + d * (d + 1) // 2} shuffled coordinates, each noised in full")
        if not (1e-100 < c < 1e100 and 1e-100 < r < 1e100):
            raise ValueError(f"context_bound={c!r} and reward_bound={r!r} must lie in "
                             "(1e-100, 1e100)")
        self.precision = self._precision or pvec_precision(self.batch_size, d)
        self.coords = d + d * (d + 1) // 2
        self.trials = pvec_trials(self.epsilon, self.delta, self.batch_size, self.coords,
                                  self.precision)
        self.bounds = np.concatenate([np.full(d, c * r), np.full(self.coords - d, c * c)])
        sigma = math.sqrt(self.trials) / self.precision
        self.Gamma = 0.25 * sigma * math.sqrt(self.horizon) * math.sqrt(d)
        self.width = self.theta_bound * math.sqrt(self.Gamma) + self.noise_scale * math.sqrt(
            d * math.log((1 + self.horizon * c * c / self.Gamma) * self.horizon))
        self.user_rng = make_rng(**self.noise_source())  # the users' randomisers
        self.t = np.zeros(n, dtype=np.int64)
        self.batches = np.zeros(n, dtype=np.int64)
        self.held = np.zeros((n, self.coords), dtype=np.int64)  # the shuffler's counts
        self.gram, self.b = np.zeros((n, d, d)), np.zeros((n, d))
        self.theta = np.zeros((n, d))
        self.inv = np.repeat(np.eye(d)[None] / (2 * self.Gamma), n, axis=0)

    def _act(self, obs):
        x = clip_l2(self.features(self._check_obs(np.asarray(obs, np.float64), None, one=True)),
                    self.context_bound)
        spread = np.sqrt(np.einsum("nkd,nde,nke->nk", x, self.inv, x))
        return argmax_random(self.rng, np.einsum("nkd,nd->nk", x, self.theta) + self.width * spread)

    def _observe(self, obs, actions, rewards, next_obs):
        obs = self._check_obs(np.asarray(obs, np.float64), None, one=True)
        x = clip_l2(self._chosen(obs, actions), self.context_bound)
        y = np.clip(rewards, -self.reward_bound, self.reward_bound)
        rows, cols = upper_indices(self.D)
        stats = np.concatenate([x * y[:, None], x[:, rows] * x[:, cols]], axis=1)
        self.held += pvec_encode(stats, self.bounds, self.precision,
                                 self.user_rng.random(stats.shape))
        self.t += 1
        if self.t[0] % self.batch_size == 0:  # the runs move in step: every batch ends now
            self._release()

    def _release(self) -> None:
        """The shuffler's counts, with the batch's noise bits, decoded by the analyser."""
        n, d, size = self._n, self.D, self.batch_size
        counts = self.held + binomial_quarter(self.trials * size, n * self.coords,
                                              self.user_rng).reshape(n, self.coords)
        sums = self.bounds / self.precision * (counts - self.trials * size / 4.0) \
            - size * self.bounds
        self.held[:] = 0
        self.batches += 1
        self.b += sums[:, :d]
        rows, cols = upper_indices(d)
        tri = np.zeros((n, d, d))
        tri[:, rows, cols] = sums[:, d:]
        self.gram += tri + np.triu(tri, 1).transpose(0, 2, 1)
        lam = 2 * self.Gamma
        w, q = np.linalg.eigh(self.gram + lam * np.eye(d))
        w = np.maximum(w, lam / 1000)
        self.inv = np.einsum("nij,nj,nkj->nik", q, 1 / w, q)
        self.theta = np.einsum("nij,nj->ni", self.inv, self.b)


#: The shuffle-model linear agents by display name.
AGENTS: dict[str, type[Agent]] = {SDPLinUCB.name: SDPLinUCB}
