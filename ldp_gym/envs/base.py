"""Shared machinery of every bandit setting: one batch core, a single env and a native vector env.

Each setting writes its bandit once, as a *core* working on arrays with a
leading run dimension: a :class:`BanditCore`. :class:`BanditEnv` drives a core
with one run for Gymnasium users, stable-baselines3 and teaching;
:class:`BanditVectorEnv` drives it with N runs in numpy for the runner. No
second implementation.

Environment contract:

* one episode is one bandit run. ``truncated`` becomes True at the horizon,
  ``max_episode_steps``. ``terminated`` is always False, except in best-arm identification
  (:mod:`ldp_gym.envs.best_arm`), where the learner's recommendation ends the episode: its
  step's ``info["recommendation"]`` is the arm, -1 in every other step;
* the instance is drawn in ``reset(seed=...)`` from ``self.np_random``, or
  fixed by constructor arguments;
* observations are float32 arrays inside their space, and rewards Python floats.
  Observations are float64 where float32 would lose what a learner needs, as for
  the losses of multi-point BCO;
* actions are checked against the action space before the core sees them:
  :func:`~ldp_gym.validation.check_action` in :meth:`BanditEnv.step`,
  :func:`~ldp_gym.validation.check_actions` in the vector env. -1, K, 1.5,
  NaN, bools and wrong shapes are refused with one clear error;
* ``info`` carries evaluation data only, a fresh dict per call. It holds
  ``expected_reward``, ``optimal_reward`` and ``regret``, with ``optimal_action`` in the
  arm settings or ``projected`` in bandit convex optimisation.
  It is computed from the private data, so the privacy wrappers of
  :mod:`ldp_gym.wrappers.reward` drop it. The runner reads the regret from
  the native vector env instead, in :attr:`BanditVectorEnv.last_regret`.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from typing_extensions import override

from ldp_gym.validation import (
    check_action,
    check_actions,
    check_int,
    check_optional_int,
    check_reset_seed,
)

INFO_KEYS = ("expected_reward", "optimal_reward", "regret", "optimal_action")


def _make_core(core_class: type, kwargs: dict[str, Any]) -> Any:
    """The setting's core, built from the env's keyword arguments.

    An unknown argument is a ``TypeError`` naming it and the parameters the setting takes.
    """
    params = inspect.signature(core_class).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = [k for k in kwargs if k not in params]
    if unknown and not takes_any:
        names = ", ".join(k for k, p in params.items() if p.kind is not inspect.Parameter.VAR_KEYWORD)
        raise TypeError(f"{unknown[0]}: not a parameter of this environment (it takes {names})")
    return core_class(**kwargs)


def _frozen(value: Any) -> Any:
    """A read-only version of a value of :meth:`BanditCore.description`."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, np.ndarray):
        out = value.copy()
        out.flags.writeable = False
        return out
    return value


class BanditCore:
    """A bandit setting on a batch of independent runs, subclassed per setting.

    Subclasses set ``observation_space`` and ``action_space`` of one run,
    ``reward_range`` and ``bounded_rewards``, and implement :meth:`reset`,
    :meth:`step` and :meth:`observe`. A setting whose rounds can be drawn ahead
    declares it by also subclassing :class:`~ldp_gym.protocols.DrawsBlocks`
    and/or :class:`~ldp_gym.protocols.DrawsStretches` and implementing their
    methods. The runner's block path uses them.
    """

    observation_space: gym.Space
    action_space: gym.Space
    reward_range: tuple[float, float] = (-np.inf, np.inf)
    #: The interval ``(lo, hi)`` every reward is guaranteed to lie in, or ``None`` (no
    #: guarantee). A declaration, not a guess: agents that clip rewards may learn from the sums
    #: of ``draw_sums`` only inside it, since a sum cannot be clipped reward by reward.
    bounded_rewards: tuple[float, float] | None = None
    #: Whether the observation carries the private feedback of the last round (the k losses of
    #: multi-point bandit convex optimisation, the outcomes of a semi-bandit's super arm):
    #: privacy wrappers that noise the reward only refuse such settings, since they pass the
    #: observation through. Every setting declares it; ``own_release`` then names the release
    #: (wrapper or private agents) that does protect the observation.
    private_observation: bool = False
    own_release: str = ""
    #: What the learner is after: ``"regret"`` (episodes run to the horizon) or
    #: ``"best-arm identification"`` (an episode ends when the learner recommends an arm, and
    #: the core's step info has ``"recommendation"``). Agents refuse the other task.
    task: ClassVar[str] = "regret"
    #: The names of the setting's public description (:meth:`description`): what an agent's
    #: ``from_env`` may read (dimensions, bounds, the link, loss constants, the super-arm
    #: family, the auxiliary datasets' specifications), never the instance.
    public: ClassVar[tuple[str, ...]] = ()

    def description(self) -> Mapping[str, Any]:
        """The frozen public description of the setting.

        It maps each name of :attr:`public` to its value, read-only: mappings as read-only
        views, lists as tuples, arrays as read-only copies. It holds nothing of the instance,
        such as the means, the parameters or the labels, and no reference to the core.
        """
        return types.MappingProxyType({name: _frozen(getattr(self, name)) for name in self.public})
    # Implemented only by the settings that declare :class:`~ldp_gym.protocols.DrawsBlocks`
    # (draw_block) or :class:`~ldp_gym.protocols.DrawsStretches` (the others), as documented there;
    # the vector env's block methods are called only for those.
    draw_block: Callable[..., tuple[np.ndarray, ...]]
    draw_sums: Callable[..., np.ndarray]
    stretch_regret: Callable[..., np.ndarray]

    def reset(self, rng: np.random.Generator, runs: np.ndarray, n_runs: int) -> None:
        """Draw fresh instances for the runs in ``runs``, indices into a batch of ``n_runs``."""
        raise NotImplementedError

    def step(self, rng: np.random.Generator, actions: np.ndarray) -> tuple[np.ndarray, dict]:
        """Play one round in every run: rewards (N,) and the oracle info arrays (N,)."""
        raise NotImplementedError

    def observe(self) -> np.ndarray:
        """The float32 observations (N, ...) for the next round."""
        raise NotImplementedError

    def step_one(self, rng: np.random.Generator, action: Any) -> tuple[float, dict]:
        """One round of a single run of :class:`BanditEnv`, with ``action`` checked.

        Returns the reward as a Python float and the info as Python scalars. This default plays
        a batch of one through :meth:`step`. A setting may override it to skip the batch's
        arrays, with the same arithmetic.
        """
        acts = np.array([action]) if type(action) is int else np.asarray(action)[None]
        reward, info = self.step(rng, acts)
        return reward.item(0), {k: v.item(0) for k, v in info.items()}


class RoundsAhead:
    """Mixin of cores whose next-round states and reward uniforms are drawn ahead.

    The states, such as contexts, and the uniforms must be i.i.d. over rounds and independent
    of the actions. :meth:`_next_round` serves them a round at a time from chunks of about
    4096 numbers drawn ahead. This has the law of drawing them then, and a step costs no
    generator call. Subclasses implement ``_draw_states(rng, lead)``, which returns states of
    shape ``lead + state shape``, and ``_state_numbers()``, the count of numbers per state.
    """

    _ahead_used = _ahead_len = 0  # rounds of the chunk drawn ahead: served, all
    _ahead_states: np.ndarray
    _ahead_u: np.ndarray

    def _draw_states(self, rng: np.random.Generator, lead: tuple[int, ...]) -> np.ndarray:
        raise NotImplementedError

    def _state_numbers(self) -> int:
        raise NotImplementedError

    def _discard_ahead(self) -> None:
        """A new episode of every run: nothing drawn before it is used."""
        self._ahead_used = self._ahead_len

    def _next_round(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The next round's states (n, ...) and the uniforms (n,) of this round's rewards.

        They are rows of a chunk, each served once and never written to again.
        """
        i = self._ahead_used
        if i == self._ahead_len:
            rounds = max(1, 4096 // (n * max(1, self._state_numbers())))
            self._ahead_states = self._draw_states(rng, (rounds, n))
            self._ahead_u = rng.random((rounds, n))
            self._ahead_len, i = rounds, 0
        self._ahead_used = i + 1
        return self._ahead_states[i], self._ahead_u[i]


class BanditEnv(gym.Env):
    """A single bandit run for Gymnasium users; subclasses set ``core_class``.

    The horizon is enforced by the registered ``max_episode_steps``, through
    Gymnasium's ``TimeLimit``. The env itself never terminates.

    ``render_mode``: ``"ansi"`` returns, ``"human"`` prints, the round, the cumulative
    regret, the actions' counts (arm settings) and the instance's means where the setting has
    them; ``"rgb_array"`` draws the counts and the regret curve (needs matplotlib, the
    ``plot`` extra). This is the evaluator's view, with the true regret: not what a private
    learner receives.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 4}
    core_class: type[BanditCore]

    def __init__(self, render_mode: str | None = None, **kwargs: Any):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of "
                             f"{tuple(self.metadata['render_modes'])}, got {render_mode!r}")
        self.render_mode = render_mode
        self.core = _make_core(self.core_class, kwargs)
        self.observation_space = self.core.observation_space
        self.action_space = self.core.action_space
        self._runs = np.zeros(1, dtype=np.int64)
        self._ready = False  # reset() has drawn an instance
        self._not_ready = "Cannot call env.step() before calling env.reset()"
        self._identifies = self.core.task != "regret"  # a recommendation ends the episode
        self._regrets: list[float] = []  # the rounds' regrets and the pulls, for render only
        # pulls of every arm (Discrete) or base arm (MultiBinary super arms); none for BCO
        space = self.action_space
        arms = getattr(self.core, "n_arms", None) if self._identifies else None
        self._counts = np.zeros(arms if arms is not None else
                                space.n if isinstance(space, gym.spaces.Discrete) else
                                int(np.prod(space.shape)) if isinstance(space, gym.spaces.MultiBinary)
                                else 0, dtype=np.int64)

    @override
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=check_reset_seed(seed))
        self.core.reset(self.np_random, self._runs, 1)
        self._ready = True
        self._regrets = []
        self._counts[:] = 0
        return self.core.observe()[0], {}

    @property
    def setting(self) -> Mapping[str, Any]:
        """The frozen public description of the setting, from :meth:`BanditCore.description`.

        An agent's ``from_env`` reads it.
        """
        return self.core.description()

    def auxiliary_datasets(self) -> list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """This episode's auxiliary datasets as data, per run; there is one run here.

        For each run it is the list ``[(X, A, Y), ...]`` of the setting's auxiliary datasets,
        empty in settings without any. An agent that uses them receives this through
        ``receive_auxiliary``.
        """
        if not self._ready:
            raise gym.error.ResetNeeded("Cannot read auxiliary datasets before env.reset()")
        data = getattr(self.core, "auxiliary_data", None)
        return [data(0) if data is not None else []]

    @override
    def step(self, action):
        if not self._ready:
            raise gym.error.ResetNeeded(self._not_ready)
        action = check_action(self.action_space, action)
        reward, info = self.core.step_one(self.np_random, action)
        if self.render_mode is not None:  # what render shows; nothing to keep without it
            self._regrets.append(float(info["regret"]))
            if isinstance(self.action_space, gym.spaces.Discrete):
                if int(action) < self._counts.size:  # (a recommendation is not a pull)
                    self._counts[int(action)] += 1
            elif self._counts.size:
                self._counts += np.asarray(action, dtype=np.int64).reshape(-1)
        terminated = self._identifies and info["recommendation"] >= 0
        if terminated:  # the episode is over: the next step needs a reset
            self._ready = False
            self._not_ready = ("The episode ended with a recommendation (terminated): call "
                               "env.reset() for a new one")
        return self.core.observe()[0], reward, terminated, False, info

    @override
    def render(self) -> Any:
        """The run so far, as ``render_mode`` says (the class docstring); None without one."""
        if self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            return self._draw()
        lines = [f"{type(self).__name__}: round {len(self._regrets)}, cumulative regret "
                 f"{sum(self._regrets):.3f}"]
        if self._counts.size:
            lines.append("pulls: " + " ".join(f"{c}" for c in self._counts))
        means = getattr(self.core, "means", None)
        if self._ready and isinstance(means, np.ndarray) and means.ndim == 2:
            lines.append("means: " + " ".join(f"{m:.3f}" for m in means[0]))
        text = "\n".join(lines)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _draw(self) -> np.ndarray:
        """The counts (arm settings) and the regret curve as an RGB image (H, W, 3) uint8."""
        try:
            import matplotlib
        except ImportError as err:  # pragma: no cover - the plot extra installs it
            raise ImportError('render_mode="rgb_array" needs matplotlib: pip install '
                              '"ldp-gym[plot]"') from err
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        del matplotlib
        fig = Figure(figsize=(6.4, 2.8), dpi=80)
        canvas = FigureCanvasAgg(fig)
        left, right = fig.subplots(1, 2)
        if self._counts.size:
            left.bar(np.arange(self._counts.size), self._counts)
            left.set_xlabel("arm")
            left.set_ylabel("pulls")
        else:
            left.axis("off")
        right.plot(np.arange(1, len(self._regrets) + 1), np.cumsum(self._regrets))
        right.set_xlabel("round")
        right.set_ylabel("cumulative regret")
        fig.tight_layout()
        canvas.draw()
        return np.asarray(canvas.buffer_rgba())[..., :3].copy()


class BanditVectorEnv(VectorEnv):
    """N independent runs of one setting, stepped together in numpy: a native vector env.

    ``max_episode_steps`` is the horizon: runs truncate there and, in
    Gymnasium's next-step autoreset mode, start a fresh instance on the
    following ``step``. ``info`` holds the oracle arrays with their ``_key``
    masks. :attr:`last_regret` keeps the last ``step``'s instantaneous regret
    for the runner, which reads it here under any wrapper, as privacy wrappers
    drop ``info``. Settings that declare it in :mod:`ldp_gym.protocols` also
    draw rounds ahead for the runner's block path. :meth:`draw_block` draws every
    arm and :meth:`draw_sums` one action per run; then :meth:`advance`
    plays and scores the rounds used.

    Attributes:
        last_regret: (N,) instantaneous regret of the last :meth:`step`, as a copy. It is 0
            for runs that autoreset in it, and after :meth:`reset`.
    """

    metadata: dict[str, Any] = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}
    core_class: type[BanditCore]

    def __init__(self, num_envs: int = 1, max_episode_steps: int | None = None, **kwargs: Any):
        self.num_envs = check_int("num_envs", num_envs)
        self.horizon = check_optional_int("max_episode_steps", max_episode_steps)
        self.core = _make_core(self.core_class, kwargs)
        self.single_observation_space = self.core.observation_space
        self.single_action_space = self.core.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.t = np.zeros(self.num_envs, dtype=np.int64)
        self._needs_reset = np.zeros(self.num_envs, dtype=bool)
        self._all = np.arange(self.num_envs)
        self.last_regret = np.zeros(self.num_envs)
        #: (N,) the arm each run recommended in the last step, -1 where it did not (best-arm
        #: identification only; None in the other settings).
        self.last_recommendation: np.ndarray | None = None
        self._ready = False  # reset() has drawn every run's instance

    @property
    def setting(self) -> Mapping[str, Any]:
        """The frozen public description of the setting, from :meth:`BanditCore.description`.

        An agent's ``from_env`` reads it.
        """
        return self.core.description()

    def auxiliary_datasets(self) -> list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """This episode's auxiliary datasets as data, per run.

        For each run it is the list ``[(X, A, Y), ...]`` of the setting's auxiliary datasets,
        empty in settings without any. An agent that uses them receives this through
        ``receive_auxiliary``.
        """
        self.check_reset()
        data = getattr(self.core, "auxiliary_data", None)
        return [data(int(run)) if data is not None else [] for run in self._all]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start every run afresh, or only the runs where ``mask`` (N,) is True.

        The mask comes as ``options={"reset_mask": mask}``, Gymnasium's partial reset. The
        other runs are untouched.
        """
        mask = (options or {}).get("reset_mask")
        if mask is None:
            super().reset(seed=check_reset_seed(seed))
            runs = self._all
        else:
            self.check_reset()
            mask = np.asarray(mask)
            if mask.dtype != bool or mask.shape != (self.num_envs,):
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},)")
            if seed is not None:
                super().reset(seed=seed)
            runs = np.flatnonzero(mask)
        self.core.reset(self.np_random, runs, self.num_envs)
        self._ready = True
        self.t[runs] = 0
        self._needs_reset[runs] = False
        if mask is None:
            self.last_regret = np.zeros(self.num_envs)
        else:
            self.last_regret = self.last_regret.copy()
            self.last_regret[runs] = 0.0
        if self.core.task != "regret":
            if self.last_recommendation is None or mask is None:
                self.last_recommendation = np.full(self.num_envs, -1, dtype=np.int64)
            self.last_recommendation[runs] = -1
        return self.core.observe(), {}

    def check_reset(self) -> None:
        """Refuse to play before :meth:`reset` with Gymnasium's ``ResetNeeded``.

        No instance is drawn yet, and the compiled kernels must never see the empty state.
        """
        if not self._ready:
            raise gym.error.ResetNeeded("Cannot call the vector env before calling reset()")

    @override
    def step(self, actions):
        self.check_reset()
        actions = check_actions(self.single_action_space, actions, self.num_envs)
        done = self._needs_reset
        rewards, info = self.core.step(self.np_random, actions)
        if done.any():
            runs = np.flatnonzero(done)
            self.core.reset(self.np_random, runs, self.num_envs)
            self.t[runs] = 0
            rewards[runs] = 0.0
            for k, v in info.items():
                v[runs] = -1 if k == "recommendation" else 0
            self.t[~done] += 1
        else:  # the common step: no run starts afresh
            self.t += 1
        return self._stepped(rewards, info, ~done)

    def _stepped(self, rewards: np.ndarray, info: dict, played: np.ndarray):
        """``step``'s return after a round, the clocks moved.

        It sets ``last_regret`` and truncation at the horizon; those runs autoreset on the
        next step. It builds ``info`` with its ``_key`` masks. ``played`` marks the runs that
        did not restart.
        """
        self.last_regret = np.array(info["regret"], dtype=np.float64)
        truncated = np.zeros(self.num_envs, bool) if self.horizon is None else self.t >= self.horizon
        recommended = info.get("recommendation")
        terminated = np.zeros(self.num_envs, bool) if recommended is None else recommended >= 0
        if recommended is not None:
            self.last_recommendation = np.array(recommended, dtype=np.int64)
        self._needs_reset = truncated | terminated
        full = dict(info)
        for k in info:
            full["_" + k] = played.copy()
        return self.core.observe(), rewards.astype(np.float64), terminated, truncated, full

    def step_committed(self, actions: np.ndarray, counts: np.ndarray):
        """Play ``actions[i]`` for ``counts[i]`` rounds in run i; 0 rounds are allowed.

        It calls :meth:`draw_sums`, then :meth:`advance`. There is no autoreset.

        Returns:
            ``(observations, reward_sums, regret_sums)``.
        """
        sums = self.draw_sums(actions, counts)
        obs, regrets = self.advance(actions, counts)
        return obs, sums, regrets

    def draw_sums(self, actions: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The reward sums (N,) of ``counts[i]`` rounds of ``actions[i]``, drawn exactly.

        For Bernoulli arms, for example, they are binomial. They are drawn without playing the
        rounds; :meth:`advance` then plays them.
        """
        self.check_reset()
        return self.core.draw_sums(self.np_random, self._actions(actions), self._counts(counts))

    def draw_block(self, length: int):
        """Draw the next ``length`` rounds of every run at once and move past them.

        Returns observations (N, length + 1, ...), rewards (N, length, K) and
        instantaneous regrets (N, length, K) of *every* arm: round s of run i is
        played by looking up the chosen arm. It is exact where contexts and rewards do
        not depend on past actions, as in stochastic MAB and contextual envs. Then the
        chosen arm's reward has its per-round law, and the others are never seen by
        the agent. The runner uses it to take the env out of the per-round loop.
        """
        return self.drawn_ahead(self.core.draw_block, length)

    def drawn_ahead(self, draw: Callable[..., Any], length: int) -> Any:
        """``draw(rng, length)``: the next ``length`` rounds of every run, drawn by the core.

        The env is moved past them. It refuses before :meth:`reset` or past the horizon.
        """
        self.check_reset()
        length = int(length)
        if self.horizon is not None and (self.t + length > self.horizon).any():
            raise ValueError("a block would pass max_episode_steps")
        out = draw(self.np_random, length)
        self.t += length
        return out

    def advance(self, actions: np.ndarray, counts: np.ndarray):
        """Play ``counts[i]`` rounds of ``actions[i]`` whose reward sums came from
        :meth:`draw_sums`, and score them.

        Returns:
            ``(observations, regret_sums)``.
        """
        self.check_reset()
        counts = self._counts(counts)
        regrets = self.core.stretch_regret(self._actions(actions), counts)
        self.t += counts
        return self.core.observe(), regrets

    def _actions(self, actions: Any) -> np.ndarray:
        return check_actions(self.single_action_space, actions, self.num_envs)

    def _counts(self, counts: np.ndarray) -> np.ndarray:
        counts = np.asarray(counts, dtype=np.int64)
        if (counts < 0).any():
            raise ValueError("counts must be >= 0")
        if self.horizon is not None and (self.t + counts > self.horizon).any():
            raise ValueError("a stretch would pass max_episode_steps")
        return counts


def make_vector_class(name: str, core: type[BanditCore], doc: str) -> type[BanditVectorEnv]:
    """Build the vector env class of a setting from its core, in one line per setting.

    ``doc`` becomes the class's docstring: a summary line and an ``Example:`` section
    with a short runnable ``>>>`` session. The suite runs it as a doctest, and
    ``tests/test_docstrings.py`` checks that every env class has one.
    """
    return type(name, (BanditVectorEnv,), {"core_class": core, "__doc__": doc,
                                           "__module__": core.__module__})


def river_text(file: str, what: str) -> str:
    """The text of ``file``, one of the datasets bundled in river's wheel
    (``river/datasets/FILE``, gzip or zip), read without importing river.

    Raises:
        ImportError: river is not installed; the message says ``what`` needs it and names
            the ``data`` extra.
    """
    import gzip
    import zipfile
    from importlib.util import find_spec

    spec = find_spec("river")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"{what} reads river's bundled dataset {file!r}: install the extra, "
                          "pip install 'ldp-gym[data]' (or pip install river)")
    path = f"{list(spec.submodule_search_locations)[0]}/datasets/{file}"
    if file.endswith(".gz"):
        with gzip.open(path, "rt") as f:
            return f.read()
    with zipfile.ZipFile(path) as z:
        return z.read(next(n for n in z.namelist() if not n.startswith("__MACOSX"))).decode()
