"""Best-arm identification with fixed confidence (``LDPBestArm-v0``).

The K arms are those of :mod:`ldp_gym.envs.mab`: Bernoulli by default, with the means of
``LDPMAB-v0`` shown in an order drawn at every reset. The learner pulls arms until it is
confident enough, then stops and recommends one. It is judged by the rounds it took, its
*sample complexity*, and by how often its recommendation is wrong, which must stay below its
risk delta (Azize, Jourdan, Al Marjani and Basu, NeurIPS 2023, section 2; Garivier and
Kaufmann 2016).

Actions: ``Discrete(2K)``. An action ``a < K`` pulls arm a and returns its reward; an action
``K + a`` stops and recommends arm a. The recommendation ends the episode (``terminated``),
returns reward 0 and is not a pull. ``info["recommendation"]`` is the arm recommended, -1 in
every pull. As in every setting, ``info`` is the evaluator's: ``optimal_action`` is the best
arm, ``regret`` the pull's gap (0 at the recommendation). A run that reaches
``max_episode_steps`` without recommending is truncated: it did not stop within the budget.
Under a reward privacy wrapper the recommendation's reward 0 is noised like any other; it
carries nothing.

Agents for this setting (:mod:`ldp_gym.agents.best_arm`) refuse the regret settings, and the
regret agents refuse this one: they would pull the recommend actions as arms.

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> env = gym.make("LDPBestArm-v0")
    >>> obs, info = env.reset(seed=0)
    >>> env.action_space                                   # 5 arms: pull 0-4, recommend 5-9
    Discrete(10)
    >>> obs, reward, terminated, truncated, info = env.step(2)       # pull arm 2
    >>> terminated, info["recommendation"]
    (False, -1)
    >>> obs, reward, terminated, truncated, info = env.step(5 + 2)   # recommend arm 2
    >>> terminated, reward, info["recommendation"], info["optimal_action"]
    (True, 0.0, 2, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from typing_extensions import override

from ..protocols import DrawsBlocks
from .base import BanditEnv, make_vector_class
from .mab import StochasticArms

__all__ = ["TASK", "BestArmEnv", "BestArmVectorEnv"]

#: The task of the setting: :attr:`~ldp_gym.envs.base.BanditCore.task`.
TASK = "best-arm identification"


class BestArmCore(StochasticArms, DrawsBlocks):
    """Fixed-confidence best-arm identification on a batch of runs.

    Args: those of :class:`~ldp_gym.envs.mab.MABEnv` (``means``, ``distribution``,
    ``n_arms``, ``sigma``, ``concentration``, ``order``). The public description holds
    ``n_arms`` and ``task``.
    """

    task: ClassVar[str] = TASK
    public = ("n_arms", "task")

    def __init__(self, means: Sequence[float] | str | None = None,
                 distribution: str = "bernoulli", n_arms: int | None = None, sigma: float = 1.0,
                 concentration: float = 2.0, order: str | None = None):
        super().__init__(means, distribution, n_arms, sigma, concentration, order)
        self.action_space = spaces.Discrete(2 * self.n_arms)

    def recommendations(self, actions: np.ndarray) -> np.ndarray:
        """The arm each action recommends (``K + a`` recommends a), -1 for a pull; any shape."""
        return np.where(actions < self.n_arms, -1, actions - self.n_arms)

    @override
    def step(self, rng, actions):
        recommended = self.recommendations(actions)
        pulls = recommended < 0
        mu_arm = self.means[self._rows, np.where(pulls, actions, recommended)]
        mu = np.where(pulls, mu_arm, 0.0)
        rewards = np.where(pulls, self._draw(rng, mu_arm), 0.0)
        info = {"expected_reward": mu, "optimal_reward": np.where(pulls, self.best, 0.0),
                "regret": np.where(pulls, self.best - mu, 0.0),
                "optimal_action": self.best_arm.copy(), "recommendation": recommended}
        return rewards, info

    @override
    def draw_block(self, rng, length):
        obs, rewards, regrets = super().draw_block(rng, length)
        stop = np.zeros(rewards.shape)  # the recommend actions: no reward, no regret
        return obs, np.concatenate([rewards, stop], axis=2), np.concatenate([regrets, stop], axis=2)

    def correct(self, arms: np.ndarray) -> np.ndarray:
        """(N,) whether each run's arm in ``arms`` (N,) is a best arm of its instance; -1: no."""
        arms = np.asarray(arms)
        mu = self.means[self._rows, np.clip(arms, 0, self.n_arms - 1)]
        return (arms >= 0) & (mu == self.best)


class BestArmEnv(BanditEnv):
    __doc__ = (__doc__ or "").split("Example:")[0] + """
    ``render`` adds the recommendation to the pulls once the learner stopped.

    Example:
        >>> from ldp_gym.envs.best_arm import BestArmEnv
        >>> env = BestArmEnv(means=[0.2, 0.8])
        >>> obs, info = env.reset(seed=0)
        >>> for arm in (0, 1, 0, 1):
        ...     obs, reward, terminated, truncated, info = env.step(arm)
        >>> obs, reward, terminated, truncated, info = env.step(2 + 1)    # recommend arm 1
        >>> terminated, info["recommendation"] == info["optimal_action"]
        (True, True)
    """
    core_class = BestArmCore

    def __init__(self, render_mode: str | None = None, **kwargs: Any):
        super().__init__(render_mode, **kwargs)
        self._recommended = -1

    @override
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._recommended = -1
        return super().reset(seed=seed, options=options)

    @override
    def step(self, action):
        out = super().step(action)
        self._recommended = int(out[4]["recommendation"])
        return out

    @override
    def render(self) -> Any:
        if self._recommended < 0 or self.render_mode not in ("ansi", "human"):
            return super().render()
        line = f"stopped: recommends arm {self._recommended}"
        if self.render_mode == "human":
            super().render()
            print(line)
            return None
        return f"{super().render()}\n{line}"


BestArmVectorEnv = make_vector_class("BestArmVectorEnv", BestArmCore, """N runs of
    :class:`BestArmEnv` in numpy: a run that recommends is terminated, and starts afresh on its
    next step (next-step autoreset); ``last_recommendation`` keeps the last step's
    recommendations for the runner.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs.best_arm import BestArmVectorEnv
        >>> envs = BestArmVectorEnv(num_envs=3, max_episode_steps=100, means=[0.2, 0.8])
        >>> obs, info = envs.reset(seed=0)
        >>> obs, rewards, terminated, truncated, info = envs.step(np.array([0, 1, 2 + 1]))
        >>> terminated.tolist(), envs.last_recommendation.tolist()
        ([False, False, True], [-1, -1, 1])
    """)


# --------------------------------------------------------------------------- lower bound


def characteristic_time(means: Sequence[float], divergence: str = "kl",
                        epsilon: float | None = None) -> float:
    """The characteristic time ``T*(mu)`` of fixed-confidence best-arm identification.

    ``T*(mu)^-1 = sup_w min_{a != 1} inf_x [w_1 d(mu_1, x) + w_a d(mu_a, x)]`` over the
    weights w of the simplex, for Bernoulli means with a unique best arm 1 (Garivier and
    Kaufmann 2016, Thm 1; the transportation cost of the alternative where a beats 1). Every
    delta-correct algorithm has ``E[tau] >= T*(mu) kl(delta, 1 - delta) >= T*(mu) log(1/(2.4
    delta))`` with ``d = kl`` (``divergence="kl"``). ``"tv"`` is the total variation
    ``|x - y|`` of the private lower bound of Azize et al. (NeurIPS 2023), which scales with
    ``T*_TV / epsilon``; ``"d_eps"`` is :func:`~ldp_gym.envs.mab.d_epsilon` at ``epsilon``.
    The sup over w is solved as Garivier and Kaufmann do (their Thm 5): with ``w_1 = 1``
    unnormalised, each arm's weight x_a(y) is the least with ``g_a(x) = inf_x' [d(mu_1, x')
    + x d(mu_a, x')] >= y`` (bisection), and ``T*^-1 = max_y y / (1 + sum_a x_a(y))`` (bounded
    scalar maximisation over y). Each inf over x' in ``[mu_a, mu_1]`` is a bounded scalar
    minimisation, in closed form for kl (the weighted mean).

    Example:
        >>> from ldp_gym.envs.best_arm import characteristic_time
        >>> round(characteristic_time([0.5, 0.4]), 1)  # about 8 sigma^2 / gap^2, sigma^2 = 1/4
        197.7
        >>> round(float(characteristic_time([0.5, 0.4], "tv")), 6)  # 1/(w_1 gap), w_1 = 1/2
        20.0
    """
    from scipy import optimize

    from .mab import bernoulli_kl, d_epsilon

    mu = np.asarray(means, dtype=np.float64)
    if mu.ndim != 1 or mu.size < 2 or ((mu < 0) | (mu > 1)).any():
        raise ValueError(f"means must be two or more Bernoulli means in [0, 1], got {means!r}")
    order = np.argsort(-mu)
    mu = mu[order]
    if mu[0] == mu[1]:
        raise ValueError("means must have a unique best arm")
    if divergence == "d_eps" and (epsilon is None or not epsilon > 0):
        raise ValueError(f"epsilon must be > 0 with divergence='d_eps', got {epsilon!r}")
    costs = {"kl": lambda x, y: float(bernoulli_kl(x, y)), "tv": lambda x, y: abs(x - y),
             "d_eps": lambda x, y: float(d_epsilon(x, y, epsilon))}
    if divergence not in costs:
        raise ValueError(f"divergence must be one of {tuple(costs)}, got {divergence!r}")
    d = costs[divergence]

    def cost(a: int, x: float) -> float:  # g_a(x): arm a beats arm 1, weights (1, x)
        if divergence == "kl":
            z = (mu[0] + x * mu[a]) / (1.0 + x)
            return d(mu[0], z) + x * d(mu[a], z)
        res = optimize.minimize_scalar(lambda z: d(mu[0], z) + x * d(mu[a], z),
                                       bounds=(mu[a], mu[0]), method="bounded",
                                       options={"xatol": 1e-11})
        return float(min(res.fun, d(mu[0], mu[a]), x * d(mu[a], mu[0])))

    def weight(a: int, y: float) -> float:  # the least x with g_a(x) >= y (bisection)
        lo, hi = 0.0, 1.0
        while cost(a, hi) < y:
            lo, hi = hi, 2.0 * hi
            if hi > 1e12:
                return np.inf
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if cost(a, mid) < y else (lo, mid)
        return hi

    def rate(y: float) -> float:
        return y / (1.0 + sum(weight(a, y) for a in range(1, mu.size)))

    top = min(d(mu[0], mu[a]) for a in range(1, mu.size))  # g_a's supremum, over x
    res = optimize.minimize_scalar(lambda y: -rate(y), bounds=(0.0, top), method="bounded",
                                   options={"xatol": 1e-12 * max(top, 1e-300)})
    return float(1.0 / max(rate(float(res.x)), rate(top * (1 - 1e-9))))
