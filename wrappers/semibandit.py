"""The Laplace semi-bandit release: any learner on the wrapped env is CUCB-LDP1-private.

Chen, Zheng et al. (ICML 2020), Algorithm 1 (CUCB-LDP1), privatise a
combinatorial semi-bandit round on the user's side: for every base arm i of
the played super arm S the user sends ``X_i + Lap(K/epsilon)``. These
wrappers make that release on an ``LDPCombinatorialBandit-v0`` env:
:class:`LaplaceSemiBandit` for a single env, :class:`VectorLaplaceSemiBandit`
for a vector env. Any learner, CUCB or a third-party agent, then sees only the
released values: the black-box route to the guarantee, by post-processing.

Release of one round, from the env's observation ``[X (0 outside S), mask of S]``:

* **outcomes**: for every base arm of S, ``X_i`` clipped to [0, 1] plus
  float-safe Laplace noise from :class:`~ldp_gym.wrappers.mechanisms.LaplaceMechanism`,
  with budget ``epsilon/K`` per coordinate and scale ``K (1 + g)/epsilon``; exactly 0
  outside S;
* **mask**: the env's mask of S, passed through. It is public: a function of
  the action alone. In strict mode it is the action itself; in the env's lenient
  mode it is the action's documented feasible image. So the wrapper reads S there
  rather than from the raw action;
* **reward**: post-processed from the release. With ``reward="sum"`` (default)
  it is the sum of the released outcomes of S, an unbiased estimate of the linear
  reward ``sum_{i in S} X_i`` of top-K and paths. With ``reward="zero"`` it is ``0.0``,
  for non-linear families such as probabilistic coverage: there a learner
  computes what it needs from the released outcomes. The env's reward is
  never passed on;
* **info**: ``{}`` unless ``oracle_info``.

The observation space becomes ``Box`` (2m,) float64: outcomes in
``(-inf, inf)``, mask in [0, 1]. After ``reset`` no round has been played yet,
and the observation is all zeros.

Privacy: epsilon-LDP, local model, pure; the unit (``"outcomes"``) is the user's
outcomes of the round. Every base arm of S may change, by any amount: values
outside [0, 1] are clipped first. ``|S| <= K`` coordinates are each
``epsilon/K``-DP, so at most epsilon by composition (Theorem 1 of the paper).

Example:
    >>> import numpy as np
    >>> import gymnasium as gym
    >>> from types import SimpleNamespace
    >>> class Env(gym.Env):          # a stand-in with one base arm in S; normally the env id
    ...     action_space = gym.spaces.MultiBinary(3)
    ...     observation_space = gym.spaces.Box(0.0, 1.0, (6,), np.float32)
    ...     setting = {"family": SimpleNamespace(m=3, K=2)}   # its public description
    ...     def reset(self, *, seed=None, options=None):
    ...         return np.zeros(6, np.float32), {}
    ...     def step(self, action):
    ...         x = np.r_[0.7 * action, action].astype(np.float32)
    ...         return x, 0.7 * float(action.sum()), False, False, {"regret": 0.1}
    >>> env = LaplaceSemiBandit(Env(), epsilon=1.0, seed=0)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, *_, info = env.step(np.array([1, 0, 0], np.int8))
    >>> obs[1:3].tolist(), obs[3:].tolist(), info
    ([0.0, 0.0], [1.0, 0.0, 0.0], {})
    >>> bool(reward == obs[0])          # the released outcome of S, summed
    True
    >>> print(env.privacy)
    local DP, epsilon=1 per user's outcomes (the base arms of the played super arm, one round)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import RecordConstructorArgs
from typing_extensions import override

from ldp_gym.validation import check_epsilon, check_input, check_int, check_share

from .feedback import STREAM_ARGS_DOC, FeedbackWrapper, VectorFeedbackWrapper
from .mechanisms import LaplaceMechanism
from .mechanisms.privacy import Privacy

__all__ = ["LaplaceSemiBandit", "VectorLaplaceSemiBandit", "check_at_most_k"]

REWARDS = ("sum", "zero")


def _family(env: Any) -> Any:
    setting = getattr(getattr(env, "unwrapped", env), "setting", None) or {}
    family = setting.get("family")
    if family is None or not hasattr(family, "K") or not hasattr(family, "m"):
        raise ValueError("env must be a combinatorial semi-bandit env (LDPCombinatorialBandit-v0) "
                         "whose setting has a super-arm family (m, K)")
    return family



def check_at_most_k(played: np.ndarray, K: int, name: str) -> np.ndarray:
    """``played`` (N, m) bool, refused (naming ``name``) if a super arm has more than K base
    arms: epsilon/K per released outcome adds up to epsilon only for |S| <= K."""
    if (played.sum(axis=-1) > K).any():
        raise ValueError(f"{name}: a super arm has more than K = {K} base arms; epsilon/K per "
                         f"released outcome would not add up to epsilon")
    return played

class _SemiBandit:
    """The semi-bandit release of a batch of rounds, shared by the single and vector wrappers."""

    unit = "outcomes"
    secure: bool
    mechanism: Any  # the LaplaceMechanism of make_mechanism (budget epsilon/K per coordinate)

    def _init_semibandit(self, env: Any, epsilon: Any, reward: Any) -> spaces.Box:
        family = _family(env)
        self.m, self.K = check_int("family.m", family.m), check_int("family.K", family.K)
        self.epsilon = check_epsilon(epsilon)
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        self.reward_mode = reward
        m = self.m
        return spaces.Box(np.r_[np.full(m, -np.inf), np.zeros(m)],
                          np.r_[np.full(m, np.inf), np.ones(m)], (2 * m,), np.float64)

    def make_mechanism(self, seed: Any) -> LaplaceMechanism:
        return LaplaceMechanism(check_share("epsilon", self.epsilon, self.K), 0.0, 1.0, seed=seed,
                                secure=self.secure)

    @property
    def privacy(self) -> Privacy:
        """epsilon-LDP per user's outcomes of the round: K coordinates of epsilon/K each."""
        return Privacy("local", self.epsilon, 0.0, self.unit, secure=self.secure)

    def _release_batch(self, observations: Any) -> tuple[np.ndarray, np.ndarray]:
        """Released observations (N, 2m) and rewards (N,) from the env's observations (N, 2m)."""
        m = self.m
        obs = check_input(observations, "observation")
        obs = obs.reshape(-1, obs.shape[-1]) if obs.ndim else obs.reshape(1, 1)
        if obs.shape[1] != 2 * m:
            raise ValueError(f"observation must have length 2m = {2 * m} (outcomes, then the "
                             f"mask of S), got {obs.shape[1]}")
        mask = obs[:, m:]
        if ((mask != 0.0) & (mask != 1.0)).any():
            raise ValueError("observation: the mask of S (last m entries) must be 0 or 1")
        played = check_at_most_k(mask == 1.0, self.K, "observation")
        values = np.zeros(played.shape)
        values[played] = self.mechanism(obs[:, :m][played])  # clipped to [0, 1], Lap(K/eps)
        out = np.concatenate([values, played.astype(np.float64)], axis=1) + 0.0
        rewards = values.sum(axis=1) if self.reward_mode == "sum" else np.zeros(len(values))
        return out, rewards + 0.0


_DOC = """
    Protected: the user's outcomes of the round, all base arms of S; the unit is ``"outcomes"``.

    Args:
        env: a ``LDPCombinatorialBandit-v0`` env. Its core's family gives m and K.
        epsilon: the budget per round, epsilon/K per released coordinate.
        reward: ``"sum"``, the sum of the released outcomes of S, or ``"zero"``.
""" + STREAM_ARGS_DOC


class LaplaceSemiBandit(_SemiBandit, FeedbackWrapper):
    __doc__ = ("CUCB-LDP1's release of a semi-bandit round (Chen, Zheng et al. 2020, Alg 1): "
               "epsilon-LDP per user's outcomes.\n" + _DOC)

    def __init__(self, env: gym.Env, epsilon: float, seed: Any = None, *, reward: str = "sum",
                 secure: bool = False, oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, seed=seed, reward=reward,
                                       secure=secure, oracle_info=oracle_info)
        space = self._init_semibandit(env, epsilon, reward)
        FeedbackWrapper.__init__(self, env, seed=seed, secure=secure, oracle_info=oracle_info,
                                 observation_space=space)

    @override
    def release(self, action: Any, observation: Any, reward: Any) -> tuple[np.ndarray, float]:
        out, rewards = self._release_batch(observation)
        return out[0], float(rewards[0])

    @override
    def release_reset(self, observation: Any) -> np.ndarray:
        return np.zeros(2 * self.m)


class VectorLaplaceSemiBandit(_SemiBandit, VectorFeedbackWrapper):
    __doc__ = ("Vector-env version of :class:`LaplaceSemiBandit`: one independent draw per run, "
               "and runs that autoreset release zeros.\n" + _DOC)

    def __init__(self, env: Any, epsilon: float, seed: Any = None, *, reward: str = "sum",
                 secure: bool = False, oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, seed=seed, reward=reward,
                                       secure=secure, oracle_info=oracle_info)
        space = self._init_semibandit(env, epsilon, reward)
        VectorFeedbackWrapper.__init__(self, env, seed=seed, secure=secure,
                                       oracle_info=oracle_info, single_observation_space=space)

    @override
    def release(self, actions: Any, observations: Any,
                rewards: Any) -> tuple[np.ndarray, np.ndarray]:
        out, released = self._release_batch(observations)
        out[self.autoreset] = 0.0  # a fresh run's observation carries no round yet
        released[self.autoreset] = 0.0
        return out, released

    @override
    def release_reset(self, observation: Any) -> np.ndarray:
        return np.zeros((self.num_envs, 2 * self.m))
