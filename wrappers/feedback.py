"""Privacy wrappers that release a step's whole feedback, with the action in hand.

A privacy wrapper sits between an env and any learner: whatever the learner
sees is the wrapper's release. So any agent running on the wrapped env is
private, by post-processing, third-party ones included. The bases here
release the observation and the reward of a step *together*, knowing the
action that produced them. This is what the settings beyond one scalar
reward need. In semi-bandit feedback, with ``MultiBinary(m)`` actions, the
observation carries the outcomes of the base arms of the played super arm. In
two-point bandit convex optimisation, the release is only
``f(x1) - f(x2) + n^T (x1 - x2)`` for the two points of the action.

* :class:`FeedbackWrapper`, for one env, and :class:`VectorFeedbackWrapper`, for a
  vector env, are the bases. A subclass builds its mechanism
  (:meth:`~FeedbackWrapper.make_mechanism`) and says what one step releases
  (:meth:`~FeedbackWrapper.release`). It also says what ``reset`` releases when the
  observation after reset is private too (:meth:`~FeedbackWrapper.release_reset`).
  By default, ``reset`` releases the observation as it is.
* The reward wrappers of :mod:`ldp_gym.wrappers.reward` are such releases: they
  noise the reward and pass the observation through.

Every such wrapper shares the same policies:

* **What is protected** is what ``release`` noises, stated by ``privacy``. That is a
  :class:`~ldp_gym.wrappers.mechanisms.privacy.Privacy` in the local model, with the
  mechanism's epsilon and delta and the unit of the class attribute ``unit``. Anything
  ``release`` passes through unnoised is not protected.
* **info** is computed from the private data, as oracle values, so ``step`` and
  ``reset`` hand out ``{}``. ``oracle_info=True`` passes it through, for
  evaluation only: it breaks the guarantee for whoever reads ``info``.
* **Noise** comes from the wrapper's own stream: from ``seed`` if given, else
  from each ``reset(seed=...)``. In both cases it is drawn under a spawn key of its
  own, :data:`NOISE_KEY`, so it is never the env's stream, even for the same integer.
  With ``secure=True`` it comes from the OS CSPRNG instead, and no seed is accepted.
  Seeded noise is for simulation: whoever knows the seed knows the noise.
* **Observations passed through**: a wrapper whose release passes the env's
  observation through unnoised declares ``passes_observation = True`` and then
  refuses a setting whose observation is private feedback
  (``BanditCore.private_observation``).
* **Round by round**: ``needs_round_by_round = True``, so the runner never
  takes the block path, which would bypass ``step`` (:mod:`ldp_gym.protocols`).
* **Spec**: the constructor arguments are recorded (``RecordConstructorArgs``),
  so ``gym.make(env.spec)`` rebuilds the wrapper.
* **Spaces**: a release may change what the learner observes; the wrapper
  declares it as its ``observation_space``, or ``single_observation_space`` for a
  vector env.

Example:
    >>> import gymnasium as gym
    >>> import numpy as np
    >>> from gymnasium.utils import RecordConstructorArgs
    >>> import ldp_gym
    >>> from ldp_gym.wrappers.mechanisms import LaplaceMechanism
    >>> class NoisyRewardTimesAction(FeedbackWrapper):
    ...     '''Releases reward * (action + 1) / K with Laplace noise: epsilon-LDP per reward.'''
    ...     def __init__(self, env, epsilon, seed=None, *, secure=False, oracle_info=False):
    ...         RecordConstructorArgs.__init__(self, epsilon=epsilon, seed=seed, secure=secure,
    ...                                        oracle_info=oracle_info)
    ...         self.epsilon, self.K = epsilon, int(env.action_space.n)
    ...         super().__init__(env, seed=seed, secure=secure, oracle_info=oracle_info)
    ...     def make_mechanism(self, seed):
    ...         return LaplaceMechanism(self.epsilon, seed=seed, secure=self.secure)
    ...     def release(self, action, observation, reward):
    ...         return observation, float(self.mechanism(reward * (action + 1) / self.K))
    >>> env = NoisyRewardTimesAction(gym.make("LDPMAB-v0"), epsilon=1.0)
    >>> obs, info = env.reset(seed=0)
    >>> _, reward, _, _, info = env.step(2)
    >>> isinstance(reward, float), info, env.needs_round_by_round
    (True, {}, True)
    >>> print(env.privacy)
    local DP, epsilon=1 per reward
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import RecordConstructorArgs
from gymnasium.vector import AutoresetMode, VectorWrapper
from gymnasium.vector.utils import batch_space
from typing_extensions import override

from ldp_gym.validation import check_bool

from .mechanisms import Mechanism
from .mechanisms.noise import make_rng
from .mechanisms.privacy import Privacy

__all__ = ["NOISE_KEY", "FeedbackWrapper", "VectorFeedbackWrapper", "private_observation"]

#: Spawn key under which a wrapper derives its noise stream from the reset seed.
NOISE_KEY = 0x4C4450  # "LDP"


#: Ids whose observation is private, for a setting whose core cannot be resolved (fail closed).
_PRIVATE_OBSERVATION_IDS = ("MultiPoint", "Combinatorial")


def private_observation(env: Any) -> str:
    """What to use instead of a reward-only release if ``env`` observes private feedback
    (``BanditCore.private_observation``, ``own_release``), else ``""``.

    ``env`` may be a single env, a native vector env, or Gymnasium's sync/async vector env
    of a setting. An unresolved setting of a multi-point or combinatorial id counts as
    private, so the check fails closed. A release below ``env`` that replaces the observation
    (``passes_observation`` False, e.g. ``LaplaceSemiBandit``) has made it private already.
    The setting is found through Gymnasium's wrapper chain (``unwrapped``). An object that
    hides it otherwise, such as an env holding another env as a plain attribute, cannot be
    checked.
    """
    below = env
    while hasattr(below, "env"):
        if isinstance(below, _Release) and not below.passes_observation:
            return ""
        below = below.env
    core = getattr(getattr(env, "unwrapped", env), "core", None)
    cores = [core] if core is not None else []
    if not cores and hasattr(env, "get_attr"):  # Gymnasium's vector envs of single envs
        try:
            cores = list(env.get_attr("core"))
        except AttributeError:
            pass
    if cores:
        private = [c for c in cores if getattr(c, "private_observation", False)]
        return (getattr(private[0], "own_release", "") or "the setting's own release") \
            if private else ""
    env_id = str(getattr(getattr(env, "spec", None), "id", ""))
    return "the setting's own release" if any(k in env_id for k in _PRIVATE_OBSERVATION_IDS) \
        else ""


class _NoiseStream:
    """The wrapper's noise stream: from ``seed`` if given, else reseeded on every
    ``reset(seed=...)``.

    It is always drawn under the wrapper's own spawn key (``NOISE_KEY``), so that it never
    replays the env's numbers. In secure mode it is the OS CSPRNG, and no seed is accepted.
    """

    mechanism: Mechanism
    secure: bool = False
    #: What one release protects: a key of :data:`ldp_gym.wrappers.mechanisms.privacy.UNITS`.
    unit: str = "reward"

    def _init_noise(self, seed: Any, secure: Any) -> None:
        make_rng(seed, secure=secure)  # validates seed and secure (secure refuses seeds)
        self.secure = bool(secure)
        self._fixed_seed = seed is not None or self.secure
        self.mechanism = self.make_mechanism(self._key(seed))

    @staticmethod
    def _key(seed: Any) -> Any:
        if isinstance(seed, (int, np.integer)):
            return np.random.SeedSequence(int(seed), spawn_key=(NOISE_KEY,))
        return seed

    def _reseed(self, seed: int | None) -> None:
        if seed is not None and not self._fixed_seed:
            self.mechanism = self.make_mechanism(self._key(seed))

    def make_mechanism(self, seed: Any) -> Mechanism:
        """The mechanism (with ``privacy = (epsilon, delta)``) the wrapper draws its noise from.

        Called at construction and on every ``reset(seed=...)`` of a wrapper built without
        ``seed``. Pass ``seed`` and ``secure=self.secure`` on to the mechanism.

        Args:
            seed: a :class:`numpy.random.SeedSequence` under :data:`NOISE_KEY`, built from an
                integer seed; ``None``, in secure mode or while there is no seed yet; or the
                ``SeedSequence`` or ``Generator`` the wrapper was given.
        """
        raise NotImplementedError

    @property
    def privacy(self) -> Privacy:
        """The guarantee: local DP per :attr:`unit`, epsilon and delta of the mechanism."""
        eps, delta = self.mechanism.privacy
        return Privacy("local", eps, delta, self.unit, secure=self.secure)


class _Release(_NoiseStream, RecordConstructorArgs):
    """``reset`` and ``step`` of every privacy wrapper.

    The noise stream is reseeded and the feedback goes through ``release_reset`` /
    ``release``. ``info`` is computed from the private data, so it is kept out of the release
    unless ``oracle_info`` opts in.
    """

    oracle_info: bool = False
    env: Any  # the wrapped env (set by the other base, gym.Wrapper or VectorWrapper)
    needs_round_by_round = True  # the runner's block path would bypass step (ldp_gym.protocols)
    #: Whether ``release`` passes the env's observation through unnoised (the reward
    #: wrappers): such a wrapper refuses a setting whose observation is private feedback.
    passes_observation: bool = False

    def _init_release(self, seed: Any, secure: Any, oracle_info: Any) -> None:
        if "_saved_kwargs" not in vars(self):
            raise TypeError(f"{type(self).__name__}.__init__ must call "
                            f"RecordConstructorArgs.__init__(self, **its arguments) first")
        instead = private_observation(self.env) if self.passes_observation else ""
        if instead:
            raise ValueError(f"env: its observation carries private feedback of the last "
                             f"round, which {type(self).__name__} would pass through unnoised; "
                             f"use {instead}")
        self._init_noise(seed, secure)
        self.oracle_info = check_bool("oracle_info", oracle_info)

    def _release_info(self, info: dict) -> dict:
        return info if self.oracle_info else {}

    def release(self, action: Any, observation: Any, reward: Any) -> tuple[Any, Any]:
        """What the learner sees of one step: ``(observation, reward)``, from the env's.

        Draw the noise from ``self.mechanism``; the result must lie in the wrapper's
        ``observation_space``.

        Args:
            action: the action played, as passed to ``step``; the env checks it.
            observation: the env's observation after the step.
            reward: the env's reward for ``action``.
        """
        raise NotImplementedError

    def release_reset(self, observation: Any) -> Any:
        """What the learner sees of the observation after ``reset``; by default, the observation
        unchanged.

        Override it where the observation is private, or where ``release`` changes the
        observation space.
        """
        return observation

    def _autoreset(self, terminated: Any, truncated: Any) -> None:
        """Vector envs: mark the runs that autoreset in this step; a single env has none."""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._reseed(seed)
        obs, info = self.env.reset(seed=seed, options=options)
        return self.release_reset(obs), self._release_info(info)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._autoreset(terminated, truncated)
        obs, reward = self.release(action, obs, reward)
        return obs, reward, terminated, truncated, self._release_info(info)


#: The Args entries every privacy wrapper shares (the noise stream and the info policy).
STREAM_ARGS_DOC = """\
        seed: the noise stream's seed; without it, the seed is derived from each
            ``reset(seed=...)``. Either way the stream is under the wrapper's own spawn key.
            Seeded noise is for simulation: whoever knows the seed knows the noise, and the
            same seed replays it. So whoever chooses the reset seeds can replay the same noise
            on other actions and cancel it. Never let an untrusted party choose them; deploy
            with ``secure=True``.
        secure: draw the noise from the OS CSPRNG (deployment); refuses ``seed``.
        oracle_info: pass the env's ``info`` through, for evaluation only: it is computed
            from the private data and breaks the guarantee for whoever reads it. Otherwise
            ``info`` is ``{}``.
"""

_ARGS_DOC = """
    Args:
        env: the env whose feedback is released.
""" + STREAM_ARGS_DOC + """\
        {space}

    Raises:
        TypeError: the subclass did not record its arguments first, ``secure`` with a seed,
            or a non-bool ``secure`` / ``oracle_info``.
"""


class FeedbackWrapper(_Release, gym.Wrapper):
    __doc__ = """Base of the privacy wrappers of one env: ``step`` returns :meth:`release` of the
    action, observation and reward, ``reset`` returns :meth:`release_reset` of the
    observation, ``info`` is ``{}`` unless ``oracle_info``.

    A subclass calls ``RecordConstructorArgs.__init__(self, **its arguments)``, sets what
    :meth:`make_mechanism` needs, then calls ``super().__init__(env, ...)``. It implements
    :meth:`make_mechanism` and :meth:`release`. It sets the class attribute ``unit`` if one
    release protects more than one reward. It implements :meth:`release_reset` if the
    observation after reset is private or changes space. Protected: what :meth:`release` and
    :meth:`release_reset` noise, stated by ``privacy``.
    """ + _ARGS_DOC.replace("{space}", (
        "observation_space: the space of the released observations, by default the env's.")) \
        + """
    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.wrappers.reward import LaplaceReward
        >>> env = LaplaceReward(gym.make("LDPMAB-v0"), epsilon=1.0)  # a FeedbackWrapper
        >>> isinstance(env, FeedbackWrapper), env.needs_round_by_round
        (True, True)
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(1)  # release(1, obs, reward)
        >>> info
        {}
    """

    def __init__(self, env: gym.Env, *, seed: Any = None, secure: bool = False,
                 oracle_info: bool = False, observation_space: gym.Space | None = None):
        gym.Wrapper.__init__(self, env)
        if observation_space is not None:
            self.observation_space = observation_space
        self._init_release(seed, secure, oracle_info)


class VectorFeedbackWrapper(_Release, VectorWrapper):
    __doc__ = """Base of the privacy wrappers of a vector env: :class:`FeedbackWrapper` for N runs at
    once.

    ``release(actions, observations, rewards)`` works on the batches, with one independent
    draw per run. Runs that autoreset in a step carry a fresh observation and a 0 reward,
    and their action is ignored. In Gymnasium's next-step mode, these are the runs in the
    step after one that ended. ``release`` is called on every run, these included.
    :attr:`autoreset` marks them for a release that treats them apart, e.g. with
    :meth:`release_reset`.

    Attributes:
        autoreset: (N,) bool, the runs that autoreset in the current ``step``. It is set
            before :meth:`release` is called, and all False after ``reset``.
    """ + _ARGS_DOC.replace("{space}", (
        "single_observation_space: one run's space of released observations, by default the\n"
        "            env's. ``observation_space`` is its batch.")) + """
    Example:
        >>> import gymnasium as gym
        >>> import numpy as np
        >>> import ldp_gym
        >>> from ldp_gym.wrappers.reward import VectorLaplaceReward
        >>> venv = VectorLaplaceReward(gym.make_vec("LDPMAB-v0", num_envs=3,
        ...     vectorization_mode="vector_entry_point", max_episode_steps=1), epsilon=1.0)
        >>> isinstance(venv, VectorFeedbackWrapper)
        True
        >>> obs, info = venv.reset(seed=0)
        >>> _, rewards, _, truncated, info = venv.step(np.zeros(3, int))
        >>> rewards.shape, bool(truncated.all()), info, bool(venv.autoreset.any())
        ((3,), True, {}, False)
        >>> _ = venv.step(np.zeros(3, int))  # every run starts afresh
        >>> bool(venv.autoreset.all())
        True
    """

    def __init__(self, env: Any, *, seed: Any = None, secure: bool = False,
                 oracle_info: bool = False, single_observation_space: gym.Space | None = None):
        VectorWrapper.__init__(self, env)
        if single_observation_space is not None:
            self.single_observation_space = single_observation_space
            self.observation_space = batch_space(single_observation_space, self.num_envs)
        mode = self.env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self._autoreset_mode = AutoresetMode(mode)
        self._ended = np.zeros(self.num_envs, dtype=bool)
        self.autoreset = np.zeros(self.num_envs, dtype=bool)
        self._init_release(seed, secure, oracle_info)

    def _autoreset(self, terminated: Any, truncated: Any) -> None:
        ended = np.logical_or(terminated, truncated)
        if self._autoreset_mode is AutoresetMode.NEXT_STEP:
            self.autoreset, self._ended = self._ended, ended
        elif self._autoreset_mode is AutoresetMode.SAME_STEP:
            self.autoreset = ended
        else:
            self.autoreset = np.zeros(self.num_envs, dtype=bool)

    @override
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        mask = (options or {}).get("reset_mask")  # Gymnasium's partial reset: those runs only
        self._ended = np.zeros(self.num_envs, bool) if mask is None \
            else self._ended & ~np.asarray(mask, dtype=bool)
        self.autoreset = np.zeros(self.num_envs, dtype=bool)
        return super().reset(seed=seed, options=options)
