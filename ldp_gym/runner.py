"""The experiment runner: every agent on the same N instances, vectorised.

``run`` builds one native vector env of N runs per agent, reset with the same
seed, so every agent faces the same N bandit instances (and, where the
setting allows, the same reward draws: common random numbers). Cumulative
regret is recorded at checkpoints (log-spaced by default), never as a T-long
array per run.

Two paths play the rounds: round by round (``act``, the env's ``step``,
``observe``), and by blocks, whose protocol :mod:`ldp_gym.protocols` declares:
the setting's core draws rounds ahead, the agent consumes them and says how
many rounds each run used, and the env advances past and scores exactly those
rounds. By what the agent and the setting declare, a block is

* for agents that commit (``commits``: AdaP-UCB, AdaP-KLUCB, DP-SE), the exact
  reward sum of their arm over their commitment (``draw_sums``), so that
  T = 1e7 costs O(K log T) decisions per run; only where the setting declares
  every reward inside the agent's bounds (``bounded_rewards``): a sum cannot
  be clipped reward by reward;
* for agents that speculate (``speculates``: DP-UCB), per-round rewards of
  their arm (``draw_stretch``), over which they run their rule and stop where
  it would switch (``observe_stretch``);
* for agents that play evaluated blocks (``plays_evaluated_blocks``: FKM and
  ADX) on a setting that draws its randomness ahead and computes the losses of
  any action in a compiled round (``EvaluatesBlocks``: bandit convex
  optimisation), ``BLOCK`` rounds in one compiled kernel (``play_world``:
  act, the setting's round, the release, observe), also under one privacy
  wrapper that applies its release there itself (``releases_blocks``: the
  releases of Zheng et al., noise drawn ahead by its mechanism);
* for the others, contexts and every arm's rewards of ``BLOCK`` rounds
  (``draw_block``), drawn in a second thread one block ahead, all played:
  compiled (``plays_blocks``: ``play_block``, the LDP contextual agents) or by
  ``act``/``observe`` over the drawn rounds (up to ``BLOCK_MAX_RUNS`` runs);
* on settings whose action is a super arm (``ScoresBlocks``: combinatorial
  semi-bandits), every base arm's outcomes of ``BLOCK`` rounds
  (``draw_outcomes``, drawn in a second thread one block ahead), played by
  agents that declare ``plays_outcome_blocks`` (``play_outcomes``: CUCB,
  CUCB-LDP1/2) and scored by the env (``score_block``); other agents play
  such settings round by round.

Stretches are cut at checkpoints and blocks scored round by round, so the
recorded regret is exact. The block path bypasses the wrappers' ``step``, so it
is taken only when every wrapper declares ``needs_round_by_round = False`` (or,
on the evaluated blocks, applies its release itself);
one that declares nothing (a third party's) is stepped round by round, as are
the privacy wrappers (they declare ``True``). Rounds stepped one by one take
their regret from the native vector env under the wrappers
(``venv.unwrapped.last_regret``), never from ``info``, which privacy wrappers
drop.

Seeds: ``SeedSequence(seed)`` spawns the env's seed; each agent's stream is
keyed by its name, so adding an agent to a comparison never changes the
numbers of the others.

Example:
    >>> import ldp_gym
    >>> from ldp_gym.agents import UCB1, AdaPUCB
    >>> res = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1, "AdaP-UCB": (AdaPUCB, {"epsilon": 1.0})},
    ...                   horizon=1000, n_runs=4, seed=0, progress=False)
    >>> res.regret["UCB1"].shape == (4, len(res.checkpoints))
    True
"""

from __future__ import annotations

import inspect
import math
import os
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorWrapper

from .envs.base import BanditVectorEnv
from .protocols import BlockPlayer, DrawsBlocks, DrawsStretches, EvaluatesBlocks, ScoresBlocks
from .results import Results
from .sweep_cache import TaskCache
from .validation import check_actions, check_bool, check_int, seed_sequence

__all__ = ["default_checkpoints", "make_vector_env", "run", "sweep"]

AgentSpec = Any  # an Agent class, (class, kwargs), a callable env -> agent, or an agent
#: Largest block of rounds drawn at once for agents that speculate (``observe_stretch``).
MAX_BLOCK = 4096
#: Rounds drawn ahead at once (``draw_block``) for agents that play every round.
BLOCK = 512
#: Blocks pay where Python overhead dominates (few runs); with many runs, drawing every arm's
#: reward costs more than it saves (measured: x1.4-1.6 at 10-20 runs, x0.75-0.85 at 100-1000).
BLOCK_MAX_RUNS = 50


def default_checkpoints(horizon: int, n: int = 31) -> np.ndarray:
    """About ``n`` log-spaced rounds from 1 to ``horizon`` (always including ``horizon``)."""
    return np.unique(np.round(np.geomspace(1, horizon, n)).astype(np.int64))


def make_vector_env(env: str | Callable, n_runs: int, horizon: int, wrappers: Any = (),
                    secure: bool = False, **env_kwargs: Any):
    """The native vector env of ``env`` (a registered id, or ``f(num_envs, max_episode_steps)``),
    wrapped by ``wrappers``, a sequence of ``(wrapper, kwargs)`` (a vector wrapper class, or a
    function of the env such as :func:`~ldp_gym.wrappers.bco.one_point`); with ``secure``,
    every wrapper that takes a ``secure`` argument (the privacy wrappers) gets ``secure=True``
    and a wrapper that draws noise otherwise is refused."""
    if callable(env):
        venv = env(num_envs=n_runs, max_episode_steps=horizon, **env_kwargs)
    else:
        import ldp_gym  # noqa: F401  (registers the ids)

        if env not in gym.registry:
            raise ValueError(f"env {env!r} is not registered; `ldp-gym list` shows the ids")
        venv = gym.make_vec(env, num_envs=n_runs, vectorization_mode="vector_entry_point",
                            max_episode_steps=horizon, **env_kwargs)
    for wrapper, kwargs in wrappers:
        if secure and "secure" in inspect.signature(wrapper).parameters:
            kwargs = {**kwargs, "secure": True}
        venv = wrapper(venv, **kwargs)
        if secure and getattr(venv, "mechanism", None) is not None \
                and not getattr(venv, "secure", False):
            raise ValueError(f"secure=True, but wrapper {wrapper.__name__} draws seeded noise")
    return venv


def _build_agent(spec: AgentSpec, venv, secure: bool = False) -> Any:
    # duck-typed: the runner does not import the agents package (envs and runner never depend on agents)
    extra = {"secure": True} if secure else {}
    from_env = getattr(spec, "from_env", None) if isinstance(spec, type) else None
    if from_env is not None:
        agent = from_env(venv, **extra)
    elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], type):
        cls, kwargs = spec
        agent = cls.from_env(venv, **{**kwargs, **extra})
    elif hasattr(spec, "act") and hasattr(spec, "observe"):
        agent = spec
    elif callable(spec):
        agent = spec(venv)
    else:
        raise TypeError(f"an agent spec must be an Agent class, (class, kwargs), a callable "
                        f"env -> agent, or an object with act/observe; got {type(spec).__name__}")
    claims = getattr(agent, "privacy", None) is not None or bool(getattr(agent, "departures", None))
    if secure and claims and not getattr(agent, "secure", False):
        raise ValueError(f"secure=True, but agent {type(agent).__name__} was built without "
                         f"secure mode (its noise is seeded)")
    return agent


def _agent_seed(root: np.random.SeedSequence, name: str) -> np.random.SeedSequence:
    return np.random.SeedSequence(root.entropy,
                                  spawn_key=root.spawn_key + (zlib.crc32(name.encode()),))


def _bandit_env(venv: Any) -> Any:
    """The native bandit vector env under ``venv``'s wrappers, where the runner reads regret."""
    base = venv.unwrapped
    if not hasattr(base, "last_regret"):
        raise ValueError(f"env must build a bandit vector env of ldp_gym (BanditVectorEnv, "
                         f"which keeps last_regret), got {type(base).__name__}")
    return base


def _run_agent(env: Any, name: str, spec: AgentSpec, horizon: int, n_runs: int, seed: Any,
               checkpoints: np.ndarray, env_kwargs: dict, wrappers: Any, sink: Any = None,
               task: int = 0, secure: bool = False):
    root = seed_sequence(seed)
    # the first child root.spawn(1) would give, without spawning from (changing) a caller's object
    env_seed = int(np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key + (0,),
                                          pool_size=root.pool_size).generate_state(1)[0])
    venv = make_vector_env(env, n_runs, horizon, wrappers, secure, **env_kwargs)
    agent = _build_agent(spec, venv, secure)
    if hasattr(agent, "reset"):
        agent.reset(seed=_agent_seed(root, name))
    obs, _ = venv.reset(seed=env_seed)
    out = np.zeros((n_runs, len(checkpoints)))
    cum = np.zeros(n_runs)
    report = None if sink is None else _Reporter(sink, task)
    if report is not None:
        report(0, final=True)  # started
    start = time.perf_counter()
    player = _block_player(agent, venv, horizon)
    try:
        if player is None:
            decisions = _round_by_round(venv, agent, obs, horizon, checkpoints, out, cum, report)
        else:
            decisions = _by_blocks(player, obs, horizon, checkpoints, out, cum, report)
    except (ValueError, TypeError) as e:  # say whose play failed (e.g. a third party's action)
        e.args = (f"agent {name!r} ({type(agent).__name__}): {e}",)  # same type, any subclass
        raise
    if report is not None:
        report(horizon, final=True)
    elapsed = time.perf_counter() - start
    meta = {"seconds": elapsed, "decisions": int(decisions), "privacy": _privacy_label(agent, venv)}
    core: Any = getattr(_bandit_env(venv), "core", None)
    if hasattr(core, "alpha") and hasattr(core, "beta"):  # an approximate oracle's guarantee
        meta["oracle"] = {"alpha": float(core.alpha), "beta": float(core.beta)}
    return name, out, meta


def _privacy_label(agent: Any, venv: Any) -> str:
    """The guarantee of ``agent`` on ``venv``: the agent's own, else those of the privacy
    wrappers (each states one :class:`~ldp_gym.wrappers.privacy.Privacy`)."""
    privacy = getattr(agent, "privacy", None)
    if privacy is not None:
        return str(privacy)
    labels, env = [], venv
    while hasattr(env, "env"):
        if getattr(env, "privacy", None) is not None:
            labels.append(f"{env.privacy} via {type(env).__name__}")
        env = env.env
    return "; ".join(labels) or "none"


# --------------------------------------------------------------------------- progress


#: Seconds between two progress lines when stderr is not a terminal (``progress=None``).
PROGRESS_INTERVAL = 30.0
#: Least seconds between two reports of one agent's run (they may cross processes).
REPORT_INTERVAL = 0.5
#: Characters of an agent's name shown in the progress bar (the bar stays on one line).
_NAME_WIDTH = 28


def _progress_mode(enabled: bool | None) -> str | None:
    """``"bar"`` (tqdm), ``"lines"`` (a line every :data:`PROGRESS_INTERVAL` seconds) or
    ``None``: ``progress=False`` shows nothing, ``True`` a bar, ``None`` a bar when stderr
    is a terminal and lines otherwise (no tqdm: lines)."""
    if enabled is False:
        return None
    if enabled is None and not _isatty(sys.stderr):
        return "lines"
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return "lines"
    return "bar"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    h, m = s // 3600, s // 60 % 60
    return f"{h}h{m:02d}m" if h else f"{m}m{s % 60:02d}s" if m else f"{s}s"


def _count(x: float) -> str:
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.2f}{suffix}"
    return f"{x:.0f}"


class _Job:
    """The progress of a whole job, every agent's run of every :func:`run` of a :func:`sweep`,
    shown once, by the parent process: one tqdm bar on a terminal, else a line on stderr every
    ``interval`` seconds (and a last one at the end if any was written).

    ``tasks``: (agent name, runs, rounds) of every agent's run, in order. The runs report
    ``(task, rounds done by each of its runs)`` through :meth:`put`, from this process or,
    through a queue, from worker processes; the work done is counted in run-rounds (runs x
    rounds), so the time left weighs every task by its size.
    """

    def __init__(self, tasks: list[tuple[str, int, int]], mode: str, label: str = "",
                 stream: Any = None, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.names = [t[0] for t in tasks]
        self.runs = [int(t[1]) for t in tasks]
        self.rounds = [int(t[2]) for t in tasks]
        self.total = sum(r * t for r, t in zip(self.runs, self.rounds))
        self.done = [0] * len(tasks)
        self.running: dict[int, None] = {}  # started, not finished, in order of start
        self.finished = 0
        self.label = label or "ldp-gym"
        self.stream = stream if stream is not None else sys.stderr
        self.interval = PROGRESS_INTERVAL if interval is None else interval
        self.clock = clock
        self.start = self.last_line = clock()
        self.lines = 0
        self.lock = threading.Lock()
        self.bar: Any = None
        if mode == "bar":
            from tqdm.auto import tqdm

            self.bar = tqdm(total=self.total, desc=self.label, leave=False, smoothing=0,
                            unit_scale=True, dynamic_ncols=True, file=self.stream,
                            bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                                       "runs x rounds [{elapsed}<{remaining}]")

    @classmethod
    def create(cls, tasks: list[tuple[str, int, int]], progress: bool | None,
               label: str = "") -> _Job | None:
        mode = _progress_mode(progress)
        return None if mode is None or not tasks else cls(tasks, mode, label)

    def put(self, message: tuple[int, int]) -> None:
        """Task ``message[0]``'s runs have each played ``message[1]`` rounds."""
        task, rounds = message
        with self.lock:
            if self.done[task] < self.rounds[task]:  # (a finished task's reports are late)
                self.done[task] = max(self.done[task], min(int(rounds), self.rounds[task]))
                if self.done[task] >= self.rounds[task]:
                    self.running.pop(task, None)
                    self.finished += 1
                else:
                    self.running[task] = None
            self._show()

    def tick(self) -> None:
        """No news: the line of every ``interval`` seconds is still written on time."""
        with self.lock:
            if self.bar is None:
                self._show()

    def units(self) -> int:
        return sum(d * r for d, r in zip(self.done, self.runs))

    def describe(self) -> str:
        """Which agents are running: ``agent 2/4 DP-SE`` (``agents 2-3/4 ...`` in parallel)."""
        n = len(self.names)
        if not self.running:
            return f"{self.label}: {self.finished}/{n} agents done"
        ids = sorted(self.running)
        names = ", ".join(self._short(self.names[i]) for i in ids[:2]) + (", ..." if len(ids) > 2
                                                                          else "")
        which = f"agent {ids[0] + 1}/{n}" if len(ids) == 1 else \
            f"agents {','.join(str(i + 1) for i in ids[:3])}{',...' if len(ids) > 3 else ''}/{n}"
        done = f" ({self.finished} done)" if self.finished else ""
        return f"{self.label}: {which} {names}{done}"

    @staticmethod
    def _short(name: str) -> str:
        return name if len(name) <= _NAME_WIDTH else name[:_NAME_WIDTH - 3] + "..."

    def line(self) -> str:
        """The progress as one line (what is written when stderr is not a terminal)."""
        done, elapsed = self.units(), self.clock() - self.start
        left = f"~{_duration(elapsed * (self.total - done) / done)} left" if done else \
            "time left unknown"
        return (f"{self.describe()} | {100 * done / max(self.total, 1):3.0f}% | "
                f"{_count(done)}/{_count(self.total)} runs x rounds | "
                f"{_duration(elapsed)} elapsed, {left}")

    def _show(self) -> None:
        if self.bar is not None:
            self.bar.n = self.units()
            self.bar.set_description_str(self.describe(), refresh=False)
            self.bar.refresh()
        elif self.clock() - self.last_line >= self.interval:
            self.last_line = self.clock()
            self._write(self.line())

    def _write(self, text: str) -> None:
        self.lines += 1
        print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.lines:  # a job long enough to have written lines ends with one
            self._write(self.line())

    def __enter__(self) -> _Job:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Reporter:
    """How one agent's run reports to the job: ``(task, rounds done)`` into ``sink`` (the job,
    or a queue to it from a worker process), at most every :data:`REPORT_INTERVAL` seconds;
    the runner calls it every few thousand rounds or once a block, never once a round."""

    __slots__ = ("sink", "task", "last")

    def __init__(self, sink: Any, task: int):
        self.sink, self.task, self.last = sink, task, -math.inf

    def __call__(self, rounds: int, final: bool = False) -> None:
        now = time.monotonic()
        if final or now - self.last >= REPORT_INTERVAL:
            self.last = now
            self.sink.put((self.task, int(rounds)))


@contextmanager
def _bridge(job: _Job | None, parallel: bool, backend: str | None) -> Iterator[Any]:
    """Where the tasks report: the job itself in this process (and threads), else a queue of
    a :class:`multiprocessing.Manager` drained into the job by a thread of this process
    (joblib's process backends); ``None`` (no progress) on other backends (dask, ray), whose
    workers may be on other machines."""
    backend = _backend_in_force(backend)
    if not isinstance(job, _Job) or not parallel or backend == "threading":
        yield job  # in this process, or already a queue (a sweep's task run in parallel)
        return
    if backend not in (None, "loky", "multiprocessing"):
        yield None
        return
    import multiprocessing
    import queue as queue_module

    with multiprocessing.Manager() as manager:
        q = manager.Queue()
        stop = threading.Event()

        def drain() -> None:
            while True:
                try:
                    message = q.get(timeout=1.0)
                except queue_module.Empty:
                    if stop.is_set():
                        return
                    job.tick()
                    continue
                except (EOFError, OSError):  # the manager is gone
                    return
                if message is None:
                    return
                job.put(message)

        thread = threading.Thread(target=drain, daemon=True)
        thread.start()
        try:
            yield q
        finally:
            stop.set()
            q.put(None)
            thread.join(timeout=5.0)


# --------------------------------------------------------------------------- the two paths


def _round_by_round(venv: Any, agent: Any, obs: Any, horizon: int, checkpoints: np.ndarray,
                    out: np.ndarray, cum: np.ndarray, report: _Reporter | None) -> int:
    """``act``, ``venv.step`` (every wrapper's included), ``observe``, one round at a time;
    progress reported every hundredth of the horizon."""
    base = _bandit_env(venv)
    column = np.full(horizon + 1, -1)  # checkpoint round -> column of `out`
    column[checkpoints] = np.arange(len(checkpoints))
    every = max(horizon // 100, 1)
    for step in range(1, horizon + 1):
        actions = agent.act(obs)
        next_obs, rewards, _, _, _ = venv.step(actions)
        agent.observe(obs, actions, rewards, next_obs)
        cum += base.last_regret
        obs = next_obs
        if column[step] >= 0:
            out[:, column[step]] = cum
        if report is not None and step % every == 0:
            report(step)
    return horizon


def _by_blocks(player: BlockPlayer, obs: Any, horizon: int, checkpoints: np.ndarray,
               out: np.ndarray, cum: np.ndarray, report: _Reporter | None) -> int:
    """``player.play`` until every run has played ``horizon`` rounds, stretches cut at the next
    checkpoint (or the horizon); the regret is recorded where a segment ends on a checkpoint.
    Returns the number of decisions (segments) per run."""
    t = np.zeros(len(cum), dtype=np.int64)
    stops = np.append(checkpoints, horizon)
    decisions = 0
    while (t < horizon).any():
        limit = stops[np.searchsorted(checkpoints, t, side="right")] - t  # 0 once finished
        obs, rounds, regret = player.play(obs, limit)
        ends = t[:, None] + np.cumsum(rounds, axis=1)
        path = np.cumsum(np.concatenate([cum[:, None], regret], axis=1), axis=1)[:, 1:]
        lo, hi = np.searchsorted(checkpoints, [t.min(), ends[:, -1].max()], side="right")
        for c in range(lo, hi):  # the checkpoints these segments can end on
            i, j = np.nonzero(ends == checkpoints[c])
            out[i, c] = path[i, j]
        t, cum[:] = ends[:, -1], path[:, -1]
        decisions += rounds.shape[1]
        if report is not None:  # once a block (the reporter keeps to its interval)
            report(int(t.min()))
    return decisions


# --------------------------------------------------------------------------- the block protocol


def _block_player(agent: Any, venv: Any, horizon: int) -> BlockPlayer | None:
    """The block path's player of ``agent`` on ``venv``, by what both declare; ``None``: the
    rounds are played one by one."""
    evaluated = _evaluated_player(agent, venv, horizon)
    if evaluated is not None:
        return evaluated
    env, _ = _block_env(venv)
    if env is None:
        return None
    core = env.core
    if isinstance(core, ScoresBlocks):
        if getattr(agent, "plays_outcome_blocks", False):
            return _Scored(env, agent.play_outcomes, horizon)
        return None
    if isinstance(core, DrawsStretches):
        bounds = core.bounded_rewards
        # an agent that clips rewards can use sums only where no reward needs clipping
        if getattr(agent, "commits", False) and bounds is not None \
                and getattr(agent, "lower", -np.inf) <= bounds[0] \
                and bounds[1] <= getattr(agent, "upper", np.inf):
            return _Committed(agent, env)
        if getattr(agent, "speculates", False):
            return _Speculative(agent, env)
    if isinstance(core, DrawsBlocks):
        if getattr(agent, "plays_blocks", False):
            return _Drawn(env, agent.play_block, horizon)
        if env.num_envs <= BLOCK_MAX_RUNS:
            return _Drawn(env, _act_observe(agent, env.single_action_space), horizon)
    return None


def _block_env(venv: Any, releases: bool = False) -> tuple[BanditVectorEnv | None, Any]:
    """``(env, release)``: the native bandit env under ``venv`` if every wrapper in between
    lets the block path bypass its ``step`` (``needs_round_by_round = False`` on its class;
    undeclared: ``True``) or, with ``releases``, is the one wrapper that applies its release
    to blocks itself (``releases_blocks``, then ``release``); else ``(None, None)``."""
    release = None
    while isinstance(venv, VectorWrapper):
        if releases and release is None and getattr(venv, "releases_blocks", False):
            release = venv
        elif getattr(type(venv), "needs_round_by_round", True):
            return None, None
        venv = venv.env
    return (venv, release) if isinstance(venv, BanditVectorEnv) else (None, None)


def _evaluated_player(agent: Any, venv: Any, horizon: int) -> BlockPlayer | None:
    """The block path of an agent that ``plays_evaluated_blocks`` on an
    :class:`~ldp_gym.protocols.EvaluatesBlocks` setting, under wrappers that each let it bypass
    their ``step`` (``needs_round_by_round = False``) or, one at most, apply their release
    themselves (``releases_blocks``: :class:`~ldp_gym.protocols.ReleasesBlocks`); else None."""
    if not getattr(agent, "plays_evaluated_blocks", False):
        return None
    env, release = _block_env(venv, releases=True)
    if env is None or not isinstance(env.core, EvaluatesBlocks):
        return None
    return _Evaluated(agent, env, release, horizon)


class _Evaluated:
    """Agents that play a whole block of an :class:`~ldp_gym.protocols.EvaluatesBlocks` setting
    in one compiled kernel (``play_world``): the setting's randomness of ``BLOCK`` rounds
    (``draw_world``) and, under a release, its noise drawn ahead by its wrapper's mechanism
    (``block_release``); every round played, scored by the setting's compiled round. The
    observation returned is that of the last round as the learner saw it (the env's, or the
    release's)."""

    def __init__(self, agent: Any, env: BanditVectorEnv, release: Any, horizon: int):
        self.agent, self.env, self.release, self.horizon = agent, env, release, horizon
        self.passes = release is None or getattr(release, "passes_observation", False)

    def play(self, obs, limit):
        env = self.env
        length = int(min(BLOCK, self.horizon - env.t.max()))
        core = env.core
        world = env.drawn_ahead(core.draw_world, length)
        release = None if self.release is None else self.release.block_release(length)
        regrets, _, seen = self.agent.play_world(world, core.round_kernel(), release)
        env.last_regret = regrets[-1].copy()
        obs = core.observe() if self.passes else seen[:, 1:].copy()
        return obs, np.ones(regrets.shape[::-1], dtype=np.int64), np.ascontiguousarray(regrets.T)


class _Committed:
    """Agents that commit: the exact reward sum of their action over their commitment."""

    def __init__(self, agent: Any, env: BanditVectorEnv):
        self.agent, self.env = agent, env

    def play(self, obs, limit):
        actions = self.agent.act(obs)
        counts = np.minimum(self.agent.commitment(), limit)
        sums = self.env.draw_sums(actions, counts)
        self.agent.observe_committed(actions, counts, sums,
                                     reward_bounds=self.env.core.bounded_rewards)
        obs, regret = self.env.advance(actions, counts)
        return obs, counts[:, None], regret[:, None]


class _Speculative:
    """Agents that speculate: per-round rewards of their action, in stretches sized per run
    (twice what the run used of its last one, 8 to :data:`MAX_BLOCK`): the agent is offered
    at most that many rounds of each run (``limit``), so a run that switches arms often does
    not pay for the long stretches of one that does not."""

    def __init__(self, agent: Any, env: BanditVectorEnv):
        self.agent, self.env = agent, env
        self.lengths = np.full(env.num_envs, 8, dtype=np.int64)

    def play(self, obs, limit):
        actions = self.agent.act(obs)
        offered = np.minimum(self.lengths, limit)
        rewards = self.env.draw_stretch(actions, int(offered.max()))
        used = self.agent.observe_stretch(actions, rewards, offered)
        self.lengths = np.clip(2 * used, 8, MAX_BLOCK)
        obs, regret = self.env.advance(actions, used)
        return obs, used[:, None], regret[:, None]


class _Drawn:
    """Agents that play every round: contexts and every arm's rewards of ``BLOCK`` rounds, the
    next block drawn in a second thread while the agent plays this one (the draws do not depend
    on the actions, so the numbers are those of drawing in turn; numpy's generators and the
    compiled kernels release the GIL), scored round by round."""

    def __init__(self, env: BanditVectorEnv, play_block: Callable, horizon: int):
        self.play_block = play_block
        self.blocks = _prefetched(env.draw_block, horizon)

    def play(self, obs, limit):
        obs_block, rewards, regrets = next(self.blocks)
        actions = self.play_block(obs_block, rewards)
        if actions.shape != rewards.shape[:2] or (actions < 0).any() \
                or (actions >= rewards.shape[2]).any():
            raise ValueError(f"a block's actions must be arms in [0, {rewards.shape[2]}) of "
                             f"shape {rewards.shape[:2]}")
        regret = np.take_along_axis(regrets, actions[..., None], axis=2)[..., 0]
        return obs_block[:, -1], np.ones(actions.shape, dtype=np.int64), regret


class _Scored:
    """Agents that play super arms (``ScoresBlocks`` settings): every base arm's outcomes of
    ``BLOCK`` rounds, the next block drawn in a second thread while the agent plays this one
    (the outcomes do not depend on the super arms), the agent's super arms (N, L, m) scored
    round by round by the env, which also gives the observation after the block."""

    def __init__(self, env: Any, play_outcomes: Callable, horizon: int):
        # env: the combinatorial vector env (draw_outcomes, score_block)
        self.env, self.play_outcomes = env, play_outcomes
        self.blocks = _prefetched(env.draw_outcomes, horizon)

    def play(self, obs, limit):
        outcomes = next(self.blocks)
        actions = self.play_outcomes(outcomes)
        obs, regret = self.env.score_block(actions, outcomes)  # checks the super arms
        return obs, np.ones(regret.shape, dtype=np.int64), regret


def _prefetched(draw: Callable, horizon: int):
    """``draw(length)`` for the blocks of ``BLOCK`` rounds (the last one shorter) that make up
    ``horizon``, each drawn in a second thread while the previous one is used."""
    lengths = [min(BLOCK, horizon - s) for s in range(0, horizon, BLOCK)]
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(draw, lengths[0])
        for length in lengths[1:]:
            block = pending.result()
            pending = pool.submit(draw, length)
            yield block
        yield pending.result()


def _act_observe(agent: Any, space: Any) -> Callable:
    """``play_block`` of an agent that plays round by round: ``act`` and ``observe`` over the
    drawn rounds, looking up the chosen arm's reward (actions checked against ``space`` as the
    env's ``step`` would)."""
    def play_block(obs: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        n, length = rewards.shape[:2]
        rows = np.arange(n)
        actions = np.empty((n, length), dtype=np.int64)
        for s in range(length):
            actions[:, s] = a = check_actions(space, agent.act(obs[:, s]), n)
            agent.observe(obs[:, s], a, rewards[rows, s, a], obs[:, s + 1])
        return actions
    return play_block


def _check_run_args(horizon: Any, n_runs: Any, checkpoints: Any) -> np.ndarray:
    horizon = check_int("horizon", horizon)
    check_int("n_runs", n_runs)
    if checkpoints is None:
        return default_checkpoints(int(horizon))
    cp = np.asarray(checkpoints)
    if cp.ndim != 1 or cp.size == 0 or not np.issubdtype(cp.dtype, np.integer) \
            or (np.diff(cp) <= 0).any() or cp[0] < 1 or cp[-1] > horizon:
        raise ValueError("checkpoints must be increasing integers in [1, horizon]")
    return cp.astype(np.int64)


def run(env: str | Callable, agents: Mapping[str, AgentSpec], horizon: int, n_runs: int = 10,
        seed: Any = 0, checkpoints: Any = None, env_kwargs: dict | None = None,
        wrappers: Any = (), progress: bool | None = None, n_jobs: int = 1,
        backend: str | None = None, secure: bool = False, label: str = "") -> Results:
    """Run every agent on the same ``n_runs`` independent instances of ``env``.

    Args:
        env: a registered id (e.g. ``"LDPMAB-v0"``) or ``f(num_envs, max_episode_steps, **kw)``
            returning a vector env.
        agents: display name -> an Agent class, ``(class, kwargs)``, a callable
            ``vector_env -> agent``, or a batched agent object with ``act``/``observe``.
        horizon: number of rounds T.
        n_runs: number of independent runs N.
        seed: the root seed; same seed, bitwise identical regret.
        checkpoints: rounds at which cumulative regret is recorded (default log-spaced).
        env_kwargs: keyword arguments of the env (e.g. ``means``).
        wrappers: ``(VectorWrapperClass, kwargs)`` pairs applied in order, e.g.
            ``[(VectorLaplaceReward, {"epsilon": 1.0})]`` for the one-point reduction.
        progress: show the progress of the whole job (every agent, runs x rounds done, time
            left): ``None`` (default) a tqdm bar when stderr is a terminal, else a line on
            stderr every :data:`PROGRESS_INTERVAL` seconds (silent if the job ends sooner);
            ``True`` a bar (lines without tqdm); ``False`` nothing. With ``n_jobs > 1`` the
            workers report to the one display of the parent process.
        n_jobs: agents run in parallel processes through joblib when > 1 (or -1).
        backend: joblib backend (``"loky"``; ``"dask"``, ``"ray"`` from the extras); default:
            the backend of an enclosing ``joblib.parallel_config``, else loky.
        secure: every private agent and privacy wrapper draws its noise from the OS CSPRNG
            (deployment mode: the noise cannot be replayed, so the results are not
            reproducible; ``seed`` then drives only the envs and the agents' public
            decisions). Agent objects passed ready-made must have been built with
            ``secure=True``. Without it, noise is seeded: right for simulation, but whoever
            knows the seed knows the noise.
        label: what the progress shows first (default ``"ldp-gym"``).

    Returns:
        :class:`~ldp_gym.results.Results` with regret of shape (n_runs, len(checkpoints)).
    """
    return _run(env, agents, horizon, n_runs, seed, checkpoints, env_kwargs, wrappers, progress,
                n_jobs, backend, secure, label)


def _run(env: str | Callable, agents: Mapping[str, AgentSpec], horizon: int, n_runs: int = 10,
         seed: Any = 0, checkpoints: Any = None, env_kwargs: dict | None = None,
         wrappers: Any = (), progress: bool | None = None, n_jobs: int = 1,
         backend: str | None = None, secure: bool = False, label: str = "", *,
         sink: Any = None, offset: int = 0, nested: bool = False) -> Results:
    """:func:`run`; ``nested``: a task of a :func:`sweep`, whose agents report to ``sink`` as
    the job's tasks ``offset``, ``offset + 1``, ... (``progress`` and ``label`` are the
    sweep's business)."""
    cps = _check_run_args(horizon, n_runs, checkpoints)
    check_bool("secure", secure)
    if check_int("n_jobs", n_jobs, low=-(2**31)) == 0:
        raise ValueError("n_jobs must be >= 1, or negative (-1: all cores), got 0")
    root = seed_sequence(seed)  # once: seed=None draws one entropy for every agent
    if not agents:
        raise ValueError("agents must name at least one agent")
    env_kwargs = dict(env_kwargs or {})
    wrappers = tuple(wrappers)
    plan = [(name, int(n_runs), int(horizon)) for name in agents]
    with (nullcontext(sink) if nested else _job(plan, progress, label)) as job, \
            _bridge(job, _is_parallel(len(plan), n_jobs), backend) as into:
        tasks = [(env, name, spec, int(horizon), int(n_runs), root, cps, env_kwargs, wrappers,
                  into, offset + i, bool(secure)) for i, (name, spec) in enumerate(agents.items())]
        outputs = _parallel(_run_agent, tasks, n_jobs, backend,
                            [f"agent {name!r}" for name in agents])
    env_name = env if isinstance(env, str) else getattr(env, "__name__", repr(env))
    return Results(checkpoints=cps, regret={name: out for name, out, _ in outputs},
                   meta={"env": env_name, "env_kwargs": {k: _jsonable(v) for k, v in
                                                         env_kwargs.items()},
                         "wrappers": [f"{w.__name__}({_jsonable(kw)})" for w, kw in wrappers],
                         "horizon": int(horizon), "n_runs": int(n_runs),
                         "seed": root.entropy if not root.spawn_key else
                         {"entropy": root.entropy, "spawn_key": list(root.spawn_key)},
                         "secure": bool(secure),
                         "privacy": {name: m["privacy"] for name, _, m in outputs},
                         **({"oracle": outputs[0][2]["oracle"]} if "oracle" in outputs[0][2]
                            else {})},
                   timings={name: m for name, _, m in outputs})


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v if isinstance(v, (str, int, float, bool, type(None), dict)) else repr(v)


def _is_parallel(n_tasks: int, n_jobs: int) -> bool:
    """Whether :func:`_parallel` hands ``n_tasks`` tasks to joblib (installed, more than one
    task and job)."""
    if n_jobs == 1 or n_tasks <= 1:
        return False
    try:
        import joblib  # noqa: F401
    except ImportError:  # joblib is optional: run sequentially
        return False
    return True


def _parallel(fn: Callable, tasks: list[tuple], n_jobs: int, backend: str | None,
              names: list[str] | None = None) -> list:
    """``[fn(*t) for t in tasks]``, in parallel as :func:`_completed` runs them."""
    out: list[Any] = [None] * len(tasks)
    for i, result in _completed(fn, tasks, n_jobs, backend, names):
        out[i] = result
    return out


def _completed(fn: Callable, tasks: list[tuple], n_jobs: int, backend: str | None,
               names: list[str] | None = None) -> Iterator[tuple[int, Any]]:
    """``(i, fn(*tasks[i]))`` for every task, as each finishes: in this process in order
    (sequential), else through joblib, or the futures of the Dask client when the backend in
    force is Dask (:func:`_dask_completed`). ``names[i]`` says what task ``i`` is in errors."""
    if not _is_parallel(len(tasks), n_jobs):
        for i, t in enumerate(tasks):
            yield i, fn(*t)
        return
    import joblib
    from joblib.parallel import get_active_backend

    if backend == "ray":
        from ray.util.joblib import register_ray

        register_ray()
    # backend None: the backend of an enclosing joblib.parallel_config (joblib's default, loky,
    # without one), so that experiments that sweep inside run where their caller says
    config = joblib.parallel_config(n_jobs=n_jobs) if backend is None else \
        joblib.parallel_config(backend=backend, n_jobs=n_jobs)
    with config:
        active = get_active_backend()[0]
        client = getattr(active, "client", None) if _backend_in_force(backend) == "dask" else None
        if client is not None:
            yield from _dask_completed(client, fn, tasks, n_jobs, names,
                                       getattr(active, "submit_kwargs", None) or {})
            return
        # results as they finish where the backend can (loky, threading, dask), so that a
        # sweep keeps each one (cache_dir) before the others end; at the end on the others
        # (multiprocessing, ray)
        streams = getattr(active, "supports_return_generator", False)
        yield from joblib.Parallel(return_as="generator_unordered" if streams else "list")(
            joblib.delayed(_indexed)(i, fn, t) for i, t in enumerate(tasks))


def _indexed(i: int, fn: Callable, args: tuple) -> tuple[int, Any]:
    return i, fn(*args)


def _dask_completed(client: Any, fn: Callable, tasks: list[tuple], n_jobs: int,
                    names: list[str] | None, submit_kwargs: dict) -> Iterator[tuple[int, Any]]:
    """:func:`_completed` through the futures of a ``distributed.Client``: at most ``n_jobs``
    tasks in flight (all with -1), each result as it finishes. A task the scheduler gave up on
    (it killed ``distributed.scheduler.allowed-failures`` + 1 workers, as an out-of-memory kill
    does) ends the whole call with one ``RuntimeError`` naming it; joblib's Dask backend would
    wait for it forever. What is still in flight is cancelled when the call ends early."""
    from distributed import KilledWorker, as_completed

    limit = len(tasks) if n_jobs < 1 else n_jobs
    waiting = iter(range(len(tasks)))
    flying: dict[Any, tuple[int, Any]] = {}  # future key -> (task, future)

    def submit() -> Any:
        i = next(waiting, None)
        if i is None:
            return None
        future = client.submit(fn, *tasks[i], pure=False, **submit_kwargs)
        flying[future.key] = (i, future)
        return future

    running = as_completed([submit() for _ in range(min(limit, len(tasks)))])
    try:
        for future in running:
            i, _ = flying.pop(future.key)
            try:
                result = future.result()
            except KilledWorker as exc:
                what = names[i] if names else f"task {i}"
                _, last, allowed = (*exc.args, None, None, None)[:3]
                raise RuntimeError(
                    f"{what} was on a Dask worker that died (killed by it or by a task beside "
                    f"it, as an out-of-memory kill does) more often than the scheduler allows "
                    f"(distributed.scheduler.allowed-failures = {allowed}), so it gave up on it "
                    f"(last worker: {last}); the sweep is stopped") from None
            following = submit()
            if following is not None:
                running.add(following)
            yield i, result
    finally:
        if flying:
            client.cancel([f for _, f in flying.values()])


def _backend_in_force(backend: str | None) -> str | None:
    """``backend``, else the name of the backend of an enclosing ``joblib.parallel_config``
    (``"dask"``, ``"ray"``, ``"threading"``, ...); ``None`` for joblib's default (loky), or
    without joblib."""
    if backend is not None:
        return backend
    try:
        from joblib.parallel import BACKENDS, get_active_backend
    except ImportError:
        return None
    active = type(get_active_backend()[0])
    return next((name for name, cls in BACKENDS.items() if cls is active and name != "loky"), None)


def sweep(tasks: list[dict[str, Any]], n_jobs: int = -1, backend: str | None = None,
          label: str = "", cache_dir: str | os.PathLike | None = None) -> list[Results]:
    """Run several :func:`run` calls (e.g. over epsilon, settings or seeds) in parallel.

    One progress display covers the whole sweep (every agent of every call): shown unless
    every task says ``progress=False``, forced if one says ``True``, else as ``None`` says
    (see :func:`run`); the tasks' ``label`` is ignored, the sweep's is shown.

    Args:
        tasks: keyword arguments of :func:`run`, one dict per call.
        n_jobs: joblib workers (-1: all cores).
        backend: ``"loky"`` (local processes), ``"dask"`` (needs a
            ``dask.distributed.Client``) or ``"ray"`` (no progress on those two); default: the
            backend of an enclosing ``joblib.parallel_config``, else loky.
        label: what the progress shows first (default ``"ldp-gym"``).
        cache_dir: a folder (made if missing) that keeps each finished task's results, so that
            a sweep interrupted or failed part way, run again with the same ``cache_dir``,
            runs only the tasks it had not finished and returns bitwise the results of an
            uninterrupted sweep. A task's entry is keyed by everything that determines its
            results: env (id, or function) and ``env_kwargs``, agents (names in order, classes
            by qualified name, their keyword arguments), horizon, runs, seed, checkpoints,
            wrappers, secure mode, and the versions of ldp-gym (with a digest of its source
            files), numpy and Python; an entry of any other configuration is never used.
            Each entry is written whole (a temporary file renamed into place) as its task
            ends. Tasks it cannot key are run every time, with a warning: ``seed=None``, and
            agents given as objects, lambdas or closures over values it cannot key.
            Default: no cache.

    Example:
        >>> from ldp_gym.agents import AdaPKLUCB
        >>> tasks = [dict(env="LDPMAB-v0", agents={"A": (AdaPKLUCB, {"epsilon": e})},
        ...               horizon=100, n_runs=2, progress=False) for e in (0.5, 1.0)]
        >>> len(sweep(tasks, n_jobs=1))
        2
    """
    cache = None if cache_dir is None else TaskCache(cache_dir)
    keys = [None if cache is None else cache.key(i, t) for i, t in enumerate(tasks)]
    out: list[Results | None] = [None if k is None or cache is None else cache.load(k)
                                 for k in keys]
    todo = [i for i, r in enumerate(out) if r is None]  # the progress shows only these
    settings = [t.get("progress") for t in tasks]
    progress = False if all(p is False for p in settings) else True if True in settings else None
    plan: list[tuple[str, int, int]] = []
    offsets = []
    for i in todo:
        offsets.append(len(plan))
        plan += [(str(name), _as_int(tasks[i].get("n_runs", 10)), _as_int(tasks[i].get("horizon")))
                 for name in tasks[i].get("agents") or {}]
    with _job(plan, progress, label) as job, \
            _bridge(job, _is_parallel(len(todo), n_jobs), backend) as into:
        for j, res in _completed(_run_kwargs, [(tasks[i], into, off) for i, off in
                                               zip(todo, offsets)], n_jobs, backend,
                                 [_describe_task(i, tasks[i]) for i in todo]):
            i = todo[j]
            key = keys[i]
            if cache is not None and key is not None:
                cache.save(key, res)
            out[i] = res
    return out  # type: ignore[return-value]  # (every task is done)


def _describe_task(i: int, task: dict[str, Any]) -> str:
    """``sweep task 3 (agents 'LDP-UCB', 'UCB1')``: what an error says a task is."""
    agents = task.get("agents")
    names = ", ".join(repr(str(a)) for a in agents) if isinstance(agents, Mapping) else "?"
    return f"sweep task {i} (agents {names})"


def _as_int(value: Any) -> int:
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):  # run() refuses it, with its own message
        return 0


def _job(plan: list[tuple[str, int, int]], progress: bool | None, label: str) -> Any:
    """The job's progress as a context manager (``None`` inside when nothing is shown)."""
    job = _Job.create(plan, progress, label)
    return nullcontext(None) if job is None else job


def _run_kwargs(kwargs: dict[str, Any], sink: Any = None, offset: int = 0) -> Results:
    return _run(**kwargs, sink=sink, offset=offset, nested=True)
