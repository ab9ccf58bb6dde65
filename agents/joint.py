"""Linear contextual bandits under joint differential privacy: :class:`JDPLinUCB`.

The learner sees every user's context and reward (a trusted server). What it publishes, the
"billboard", is a continual private release of the Gram matrix of ``z = (x, y)``; each user
computes its own action from its own contexts and the billboard. Changing one user's data then
changes the distribution of the billboard, and so of every other user's action, by at most
the release's (epsilon, delta): joint DP (Kearns et al. 2014; Shariff and Sheffet 2018).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldp_gym.validation import check_real
from ldp_gym.wrappers.mechanisms import GramTreeMechanism
from ldp_gym.wrappers.mechanisms.noise import clip_l2

from .base import Agent, JointDPAgent, argmax_random
from .glm import ContextualAgent

__all__ = ["JDPLinUCB"]


class JDPLinUCB(JointDPAgent, ContextualAgent):
    """JDP-LinUCB: LinUCB on a tree-mechanism release of the Gram matrix (Shariff and Sheffet,
    "Differentially Private Contextual Linear Bandits", NeurIPS 2018, Alg. 1 with the shifted
    Gaussian noise of Sec. 4.1).

    With ``z_s = (x_s, y_s)`` in R^(D+1) (the context clipped to ``context_bound`` L, the
    reward to ``reward_bound`` B), the billboard after t rounds is
    ``M~_t = sum_{s<=t} z_s z_s^T + N_t``, released by
    :class:`~ldp_gym.wrappers.mechanisms.GramTreeMechanism` (m levels, node noise sigma).
    Its top-left D x D block plus ``2 Upsilon I`` is ``V_t + H_t``, its last column ``u_t``;
    ``theta = (V_t + H_t)^-1 u_t`` and the user plays
    ``argmax_a x_a^T theta + beta_t ||x_a||_{(V_t + H_t)^-1}``, ties broken at random. The
    shift makes ``V_t + H_t`` positive definite with high probability; eigenvalues below
    ``Upsilon/1000`` (a failure of that event) are raised to it, a post-processing.

    Constants (the regulariser's bounds of Shariff and Sheffet's Sec. 4.1 after BanditLib's
    ``PrivateLinUCB``; the paper's own text was not available here):
    ``Upsilon = sqrt(2 m) sigma (4 sqrt(D + 1) + 2 ln(2T/alpha))``, where BanditLib has
    ``4 sqrt(D)`` (D + 1 is the noise matrix's size: a larger, safer shift), ``rho_min = Upsilon``,
    ``rho_max = 3 Upsilon``, ``gamma = sqrt(m) sigma (sqrt(D) + sqrt(2 ln(2T/alpha)))`` and
    the OFUL width with these bounds,
    ``beta_t = R sqrt(2 ln(2/alpha) + D ln(rho_max/rho_min + t L^2/(D rho_min)))
    + S sqrt(rho_max) + gamma``, with R = ``noise_scale`` (0.5), S = 1 and alpha = 0.05 as
    in :class:`LinUCB`. Sigma is the exact analytic calibration of the whole tree, not the
    paper's ``16 m L~^4 ln(4/delta)^2/epsilon^2``.

    Privacy: (epsilon, delta)-joint DP per user, protecting the context and the reward (and
    so the action) of each user from everything the other users see. The billboard is
    (epsilon, delta)-DP per user (:class:`~ldp_gym.wrappers.mechanisms.GramTreeMechanism`);
    each action is a function of its own user's contexts and the billboard (the billboard
    lemma, Hsu et al. 2014).

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import JDPLinUCB
        >>> env = gym.make("LDPLinearBandit-v0", max_episode_steps=100)
        >>> agent = JDPLinUCB.from_env(env, epsilon=1.0, delta=1e-5, seed=0)
        >>> print(agent.privacy)
        joint DP, epsilon=1, delta=1e-05 per user (context, action and reward)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(5):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> agent.tree.count, agent.theta.shape
        (5, (1, 2))
    """

    name = "JDP-LinUCB"
    needs_horizon = True
    horizon: int  # always given (needs_horizon)
    test_params = {"epsilon": 1.0, "delta": 1e-5}

    @classmethod
    def _unit_test_params(cls):
        return [cls.test_params, {"epsilon": 0.5, "delta": 1e-3, "context_bound": 0.7,
                                  "reward_bound": 0.4}]

    def __init__(self, n_arms, *, epsilon: float, delta: float = 1e-5, noise_scale: float = 0.5,
                 alpha: float = 0.05, **kwargs: Any):
        self.noise_scale = check_real("noise_scale", noise_scale, low=0.0)
        self.alpha = check_real("alpha", alpha, low=0.0, high=1.0)
        self._budget = (epsilon, delta)
        super().__init__(n_arms, **kwargs)

    def _init_state(self, n):
        eps, delta = self._budget
        self.declare_privacy("joint", eps, delta, "user", -self.reward_bound, self.reward_bound)
        if not self.delta > 0:
            raise ValueError("delta must be > 0: the Gaussian tree's guarantee is (epsilon, delta)")
        c, b = self.context_bound, self.reward_bound
        if not 1e-150 < math.hypot(c, b) < 1e150:
            raise ValueError(f"context_bound={c!r} and reward_bound={b!r}: their joint norm must "
                             "lie in (1e-150, 1e150)")
        self.tree = GramTreeMechanism(self.epsilon, self.delta, self.horizon, self.D + 1,
                                      math.sqrt(c * c + b * b), n, **self.noise_source())
        m, sigma, log_t = self.tree.levels, self.tree.sigma, math.log(2 * self.horizon / self.alpha)
        self.upsilon = math.sqrt(2 * m) * sigma * (4 * math.sqrt(self.D + 1) + 2 * log_t)
        self.gamma = math.sqrt(m) * sigma * (math.sqrt(self.D) + math.sqrt(2 * log_t))
        self.t = np.zeros(n, dtype=np.int64)
        self.theta = np.zeros((n, self.D))
        self.inv = np.repeat(np.eye(self.D)[None] / (2 * self.upsilon), n, axis=0)

    def beta(self, t: np.ndarray) -> np.ndarray:
        """The width beta_t of rounds t (the class docstring's formula)."""
        rho_min, rho_max = self.upsilon, 3 * self.upsilon
        inner = 2 * math.log(2 / self.alpha) + self.D * np.log(
            rho_max / rho_min + t * self.context_bound ** 2 / (self.D * rho_min))
        return self.noise_scale * np.sqrt(inner) + math.sqrt(rho_max) + self.gamma

    def _act(self, obs):
        x = clip_l2(self.features(self._check_obs(np.asarray(obs, np.float64), None, one=True)),
                    self.context_bound)
        width = np.sqrt(np.einsum("nkd,nde,nke->nk", x, self.inv, x))
        scores = np.einsum("nkd,nd->nk", x, self.theta) + self.beta(self.t + 1)[:, None] * width
        return argmax_random(self.rng, scores)

    def _observe(self, obs, actions, rewards, next_obs):
        obs = self._check_obs(np.asarray(obs, np.float64), None, one=True)
        x = clip_l2(self._chosen(obs, actions), self.context_bound)
        y = np.clip(rewards, -self.reward_bound, self.reward_bound)
        gram = self.tree.add(np.concatenate([x, y[:, None]], axis=1))  # the billboard
        d = self.D
        w, q = np.linalg.eigh(gram[:, :d, :d] + 2 * self.upsilon * np.eye(d))
        w = np.maximum(w, self.upsilon / 1000)
        self.inv = np.einsum("nij,nj,nkj->nik", q, 1 / w, q)
        self.theta = np.einsum("nij,nj->ni", self.inv, gram[:, :d, d])
        self.t += 1


#: The joint-DP agents by display name.
AGENTS: dict[str, type[Agent]] = {JDPLinUCB.name: JDPLinUCB}
