"""The experiment runner: every agent on the same N instances, vectorised, on every core.

``run`` builds native vector envs of the runs per agent, reset with the same seeds, so every
agent faces the same N bandit instances. Where the setting allows, the agents also get the same
reward draws: common random numbers. Cumulative regret is recorded at checkpoints, log-spaced
by default, never as a T-long array per run.

The runner by concern:

* :mod:`~ldp_gym.runner.loop`: one task's run loop, round by round or by blocks. A round is
  ``act``, then the env's ``step``, then ``observe``;
* :mod:`~ldp_gym.runner.blocks`: the block players, and the one table ``PLAYERS`` that
  chooses them. It goes by what the agent (``block_play``), the setting and the wrappers
  declare;
* :mod:`~ldp_gym.runner.progress`: one progress display for a whole job;
* :mod:`~ldp_gym.runner.parallel`: the backends: this process, joblib or Dask.

Runs across cores: an agent's runs are cut into chunks of :data:`RUNS_PER_CHUNK`, the last one
shorter. Each chunk is a task with its own vector env and its own env and agent streams; see
:func:`~ldp_gym.runner.loop.chunk_seeds`. The tasks of every agent run in parallel with
``n_jobs``. The chunks do not depend on ``n_jobs``, so the results are bitwise the same for
any number of workers. Chunk 0 keeps the seeds of an unsplit run: up to
:data:`RUNS_PER_CHUNK` runs, an agent's numbers are those of one vector env of all its runs.
An agent passed ready-made, as an object, is one task, whatever its runs.

Seeds: ``SeedSequence(seed)`` spawns the env's seed; each agent's stream is keyed by its
name, so adding an agent to a comparison never changes the numbers of the others.

Example:
    >>> import ldp_gym
    >>> from ldp_gym.agents import UCB1, AdaPUCB
    >>> res = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1, "AdaP-UCB": (AdaPUCB, {"epsilon": 1.0})},
    ...                   horizon=1000, n_runs=4, seed=0, progress=False)
    >>> res.regret["UCB1"].shape == (4, len(res.checkpoints))
    True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import Any

import numpy as np

from ..results import Results
from ..sweep_cache import TaskCache
from ..validation import check_bool, check_int, seed_sequence
from .loop import AgentSpec, Chunk, default_checkpoints, make_vector_env, play_chunk
from .parallel import completed, is_parallel, parallel
from .progress import PROGRESS_INTERVAL, bridge, display

__all__ = ["PROGRESS_INTERVAL", "RUNS_PER_CHUNK", "default_checkpoints", "make_vector_env",
           "run", "sweep"]

#: Runs per task: an agent's runs are cut into chunks of this many, each with its own streams,
#: which run in parallel (``n_jobs``) with the same results for any number of workers. Chosen
#: so that a chunk still vectorises well (measured by ``benchmarks/parallel_speed.py``) and
#: that every experiment of the catalogue (at most 20 runs) is one chunk.
RUNS_PER_CHUNK = 50


def _chunks(spec: AgentSpec, n_runs: int) -> list[tuple[int, int]]:
    """``(start, runs)`` of the chunks of an agent's ``n_runs`` runs.

    An agent given as an object is one chunk, since it was built for all the runs."""
    ready_made = not isinstance(spec, (type, tuple)) and hasattr(spec, "act") \
        and hasattr(spec, "observe")
    if ready_made or n_runs <= RUNS_PER_CHUNK:
        return [(0, n_runs)]
    return [(s, min(RUNS_PER_CHUNK, n_runs - s)) for s in range(0, n_runs, RUNS_PER_CHUNK)]


def _plan(agents: Any, n_runs: int) -> list[tuple[str, Any, int, int, str]]:
    """The tasks of a :func:`run`: ``(name, spec, start, runs, label)`` per chunk of each agent,
    in order.

    ``label`` names the chunk's runs when an agent has several chunks."""
    plan = []
    for name, spec in (agents.items() if isinstance(agents, Mapping) else ()):
        chunks = _chunks(spec, n_runs)
        for start, runs in chunks:
            label = str(name) if len(chunks) == 1 else f"{name} [runs {start}-{start + runs - 1}]"
            plan.append((str(name), spec, start, runs, label))
    return plan


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
        checkpoints: rounds at which cumulative regret is recorded; log-spaced by default.
        env_kwargs: keyword arguments of the env (e.g. ``means``).
        wrappers: ``(VectorWrapperClass, kwargs)`` pairs applied in order, e.g.
            ``[(VectorLaplaceReward, {"epsilon": 1.0})]`` for the one-point reduction.
        progress: show the progress of the whole job: every agent, runs x rounds done, time
            left. ``None``, the default, shows a tqdm bar when stderr is a terminal, else a line
            on stderr every :data:`~ldp_gym.runner.progress.PROGRESS_INTERVAL` seconds; it
            stays silent if the job ends sooner. ``True`` shows a bar, or lines without tqdm.
            ``False`` shows nothing. With ``n_jobs > 1`` the workers report to the one display
            of the parent process.
        n_jobs: when > 1, the tasks run in parallel processes through joblib; -1 means every
            core. The tasks are every agent's chunks of :data:`RUNS_PER_CHUNK` runs. The
            results are the same for any number of workers.
        backend: joblib backend: ``"loky"``, or ``"dask"`` and ``"ray"`` from the extras. By
            default, the backend of an enclosing ``joblib.parallel_config``, else loky.
        secure: every private agent and privacy wrapper draws its noise from the OS CSPRNG.
            This is the deployment mode: the noise cannot be replayed, so the results are not
            reproducible, and ``seed`` then drives only the envs and the agents' public
            decisions. Agent objects passed ready-made must have been built with
            ``secure=True``. Without it, noise is seeded: right for simulation, but whoever
            knows the seed knows the noise.
        label: what the progress shows first (default ``"ldp-gym"``).

    Returns:
        :class:`~ldp_gym.results.Results` with regret of shape (n_runs, len(checkpoints)). In
        best-arm identification (``LDPBestArm-v0``), a run's regret stops at its
        recommendation, ``horizon`` is the budget, and the results also hold every run's
        stopping time and recommendation (:attr:`~ldp_gym.results.Results.stops`) and each
        agent's ``risk`` in ``meta["risk"]``.
    """
    return _run(env, agents, horizon, n_runs, seed, checkpoints, env_kwargs, wrappers, progress,
                n_jobs, backend, secure, label)


def _run(env: str | Callable, agents: Mapping[str, AgentSpec], horizon: int, n_runs: int = 10,
         seed: Any = 0, checkpoints: Any = None, env_kwargs: dict | None = None,
         wrappers: Any = (), progress: bool | None = None, n_jobs: int = 1,
         backend: str | None = None, secure: bool = False, label: str = "", *,
         sink: Any = None, offset: int = 0, nested: bool = False) -> Results:
    """:func:`run`; ``nested`` marks a task of a :func:`sweep`.

    A nested task's agents report to ``sink`` as the job's tasks ``offset``, ``offset + 1``
    and so on. Its ``progress`` and ``label`` are the sweep's business."""
    cps = _check_run_args(horizon, n_runs, checkpoints)
    check_bool("secure", secure)
    if check_int("n_jobs", n_jobs, low=-(2**31)) == 0:
        raise ValueError("n_jobs must be >= 1, or negative (-1: all cores), got 0")
    root = seed_sequence(seed)  # once: seed=None draws one entropy for every agent
    if not agents:
        raise ValueError("agents must name at least one agent")
    env_kwargs = dict(env_kwargs or {})
    wrappers = tuple(wrappers)
    plan = _plan(agents, int(n_runs))
    shown = [(task, runs, int(horizon)) for _, _, _, runs, task in plan]
    with (nullcontext(sink) if nested else display(shown, progress, label)) as job, \
            bridge(job, is_parallel(len(plan), n_jobs), backend) as into:
        tasks = [(Chunk(env, name, spec, int(horizon), start, runs, start // RUNS_PER_CHUNK, root,
                        cps, env_kwargs, wrappers, bool(secure)), into, offset + i)
                 for i, (name, spec, start, runs, _) in enumerate(plan)]
        chunks = parallel(play_chunk, tasks, n_jobs, backend,
                          [f"agent {shown_as!r}" for *_, shown_as in plan])
    outputs = _merged(chunks)
    env_name = env if isinstance(env, str) else getattr(env, "__name__", repr(env))
    stops = {name: m.pop("stops") for name, _, m in outputs if "stops" in m}
    identification = {"risk": {name: m.pop("risk") for name, _, m in outputs}} if stops else {}
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
                            else {}), **identification},
                   timings={name: m for name, _, m in outputs}, stops=stops)


def _merged(chunks: list[tuple[str, np.ndarray, dict]]) -> list[tuple[str, np.ndarray, dict]]:
    """Each agent's ``(name, regret, meta)`` from its chunks' (in order): the regret of every
    run, the seconds summed, the decisions of the chunk that made most."""
    merged: dict[str, tuple[list, list]] = {}
    for name, out, meta in chunks:
        outs, metas = merged.setdefault(name, ([], []))
        outs.append(out)
        metas.append(meta)
    result = []
    for name, (outs, metas) in merged.items():
        meta = {**metas[0], "seconds": sum(m["seconds"] for m in metas),
                "decisions": max(m["decisions"] for m in metas)}
        if "stops" in meta:
            meta["stops"] = {k: np.concatenate([m["stops"][k] for m in metas])
                             for k in meta["stops"]}
        result.append((name, np.concatenate(outs), meta))
    return result


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v if isinstance(v, (str, int, float, bool, type(None), dict)) else repr(v)


def sweep(tasks: list[dict[str, Any]], n_jobs: int = -1, backend: str | None = None,
          label: str = "", cache_dir: str | os.PathLike | None = None) -> list[Results]:
    """Run several :func:`run` calls in parallel, e.g. over epsilon, settings or seeds.

    One progress display covers the whole sweep, every agent of every call. It is shown unless
    every task says ``progress=False``, forced if one says ``True``, else as ``None`` says in
    :func:`run`. The tasks' ``label`` is ignored; the sweep's is shown.

    Args:
        tasks: keyword arguments of :func:`run`, one dict per call.
        n_jobs: joblib workers; -1 means all cores.
        backend: ``"loky"`` for local processes, ``"dask"`` or ``"ray"``. Dask needs a
            ``dask.distributed.Client``. There is no progress on those two. By default, the
            backend of an enclosing ``joblib.parallel_config``, else loky.
        label: what the progress shows first (default ``"ldp-gym"``).
        cache_dir: a folder that keeps each finished task's results; it is made if missing.
            A sweep interrupted or failed part way, run again with the same ``cache_dir``,
            runs only the tasks it had not finished. It returns bitwise the results of an
            uninterrupted sweep. A task's entry is keyed by everything that determines its
            results. That is the env, as id or function, and ``env_kwargs``; the agents' names
            in order, classes by qualified name, and keyword arguments; horizon, runs, seed,
            checkpoints, wrappers and secure mode; and the versions of ldp-gym, numpy and
            Python, with a digest of ldp-gym's source files. An entry of any other
            configuration is never used. Each entry is written whole as its task ends: a
            temporary file is renamed into place. Tasks it cannot key are run every time, with
            a warning: ``seed=None``, and agents given as objects, lambdas or closures over
            values it cannot key.
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
        horizon = _as_int(tasks[i].get("horizon"))
        plan += [(label, runs, horizon) for *_, runs, label in
                 _plan(tasks[i].get("agents"), _as_int(tasks[i].get("n_runs", 10)))]
    with display(plan, progress, label) as job, \
            bridge(job, is_parallel(len(todo), n_jobs), backend) as into:
        for j, res in completed(_run_kwargs, [(tasks[i], into, off) for i, off in
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



def _run_kwargs(kwargs: dict[str, Any], sink: Any = None, offset: int = 0) -> Results:
    return _run(**kwargs, sink=sink, offset=offset, nested=True)
