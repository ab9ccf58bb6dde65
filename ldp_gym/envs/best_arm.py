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

    @override
    def step(self, rng, actions):
        pulls = actions < self.n_arms
        arms = np.where(pulls, actions, actions - self.n_arms)
        mu_arm = self.means[self._rows, arms]
        mu = np.where(pulls, mu_arm, 0.0)
        rewards = np.where(pulls, self._draw(rng, mu_arm), 0.0)
        info = {"expected_reward": mu, "optimal_reward": np.where(pulls, self.best, 0.0),
                "regret": np.where(pulls, self.best - mu, 0.0),
                "optimal_action": self.best_arm.copy(),
                "recommendation": np.where(pulls, -1, arms)}
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
