"""The experiment runner (DESIGN.md section 6): every agent on the same N instances, vectorised.

``run`` builds one native vector env of N runs per agent, reset with the same
seed, so every agent faces the same N bandit instances (and, where the
setting allows, the same reward draws: common random numbers). Cumulative
regret is recorded at checkpoints (log-spaced by default), never as a T-long
array per run.

Agents that commit to one action for several rounds (``commits = True``,
e.g. AdaP-UCB, DP-SE) are stepped a whole committed stretch at a time
(``step_committed``: rewards summed exactly, regret exact), so that T = 1e7
costs O(K log T) decisions per run. Agents whose arm can only change when
their own index crosses a threshold (``speculates = True``, DP-UCB) get a
block of per-round rewards of their current arm (``draw_stretch``), run their
per-round rule over it in one vectorised call and report how many rounds they
used (``observe_stretch``); only those rounds are played (``advance``).
Agents with a compiled block path (``plays_blocks``, the LDP contextual
agents) play whole blocks of rounds drawn ahead (``draw_block``)
in one call (``play_block``); other per-round agents get the same blocks
below ``BLOCK_MAX_RUNS`` runs and loop over their rounds in Python.
Stretches are cut at checkpoints, so the recorded regret is exact. Rounds
stepped one by one take their regret from the native vector env under the
wrappers (``venv.unwrapped.last_regret``), never from ``info``, which privacy
wrappers drop. Committed stretches are used only where the setting declares
that every reward lies inside the agent's bounds (``bounded_rewards``): a sum
cannot be clipped reward by reward.

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
import sys
import time
import zlib
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np

from .envs.base import BanditCore
from .results import Results

__all__ = ["default_checkpoints", "make_vector_env", "run", "sweep"]

AgentSpec = Any  # an Agent class, (class, kwargs), a callable env -> agent, or an agent
#: Largest block of rounds drawn at once for agents that speculate (``observe_stretch``).
MAX_BLOCK = 4096
#: Rounds drawn ahead at once (``draw_block``) for per-round agents.
BLOCK = 512
#: Blocks pay where Python overhead dominates (few runs); with many runs, drawing every arm's
#: reward costs more than it saves (measured: x1.4-1.6 at 10-20 runs, x0.75-0.85 at 100-1000).
BLOCK_MAX_RUNS = 50


def _core_has(venv: Any, method: str) -> bool:
    """Whether ``venv`` is an unwrapped bandit vector env whose setting implements ``method``
    (wrapped envs have no ``core``: their ``step`` must run, so privacy wrappers are honoured)."""
    core = getattr(venv, "core", None)
    return core is not None and hasattr(venv, method) and \
        getattr(type(core), method) is not getattr(BanditCore, method)


def _draws_blocks(venv: Any) -> bool:
    return _core_has(venv, "draw_block") and venv.num_envs <= BLOCK_MAX_RUNS


def default_checkpoints(horizon: int, n: int = 31) -> np.ndarray:
    """About ``n`` log-spaced rounds from 1 to ``horizon`` (always including ``horizon``)."""
    return np.unique(np.round(np.geomspace(1, horizon, n)).astype(np.int64))


def make_vector_env(env: str | Callable, n_runs: int, horizon: int, wrappers: Any = (),
                    secure: bool = False, **env_kwargs: Any):
    """The native vector env of ``env`` (a registered id, or ``f(num_envs, max_episode_steps)``),
    wrapped by ``wrappers``, a sequence of ``(VectorWrapperClass, kwargs)``; with ``secure``,
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
    # duck-typed: the runner does not import the agents package (DESIGN.md dependency direction)
    extra = {"secure": True} if secure else {}
    if isinstance(spec, type) and hasattr(spec, "from_env"):
        agent = spec.from_env(venv, **extra)
    elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], type):
        agent = spec[0].from_env(venv, **{**spec[1], **extra})
    elif hasattr(spec, "act") and hasattr(spec, "observe"):
        agent = spec
    elif callable(spec):
        agent = spec(venv)
    else:
        raise TypeError(f"an agent spec must be an Agent class, (class, kwargs), a callable "
                        f"env -> agent, or an object with act/observe; got {type(spec).__name__}")
    if secure and getattr(agent, "privacy", None) is not None and not getattr(agent, "secure", False):
        raise ValueError(f"secure=True, but agent {type(agent).__name__} was built without "
                         f"secure mode (its noise is seeded)")
    return agent


def _agent_seed(root: np.random.SeedSequence, name: str) -> np.random.SeedSequence:
    return np.random.SeedSequence(root.entropy,
                                  spawn_key=root.spawn_key + (zlib.crc32(name.encode()),))


def _can_commit(agent: Any, venv: Any) -> bool:
    if not getattr(agent, "commits", False) or not _core_has(venv, "step_committed"):
        return False
    bounds = venv.core.bounded_rewards
    # an agent that clips rewards can only use sums when the setting guarantees that no reward
    # needs clipping
    return bounds is not None and getattr(agent, "lower", -np.inf) <= bounds[0] \
        and bounds[1] <= getattr(agent, "upper", np.inf)


def _bandit_env(venv: Any) -> Any:
    """The native bandit vector env under ``venv``'s wrappers, where the runner reads regret."""
    base = venv.unwrapped
    if not hasattr(base, "last_regret"):
        raise ValueError(f"env must build a bandit vector env of ldp_gym (BanditVectorEnv, "
                         f"which keeps last_regret), got {type(base).__name__}")
    return base


def _progress(total: int, enabled: bool | None, desc: str):
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="round", leave=False)


def _run_agent(env: Any, name: str, spec: AgentSpec, horizon: int, n_runs: int, seed: Any,
               checkpoints: np.ndarray, env_kwargs: dict, wrappers: Any, progress: bool | None,
               secure: bool = False):
    root = np.random.SeedSequence(seed)
    env_seed = int(root.spawn(1)[0].generate_state(1)[0])
    venv = make_vector_env(env, n_runs, horizon, wrappers, secure, **env_kwargs)
    agent = _build_agent(spec, venv, secure)
    if hasattr(agent, "reset"):
        agent.reset(seed=_agent_seed(root, name))
    obs, _ = venv.reset(seed=env_seed)
    out = np.zeros((n_runs, len(checkpoints)))
    cum = np.zeros(n_runs)
    bar = _progress(horizon, progress, name)
    start = time.perf_counter()
    if _can_commit(agent, venv):
        def play(actions, limit):  # whole committed stretches, cut at checkpoints
            counts = np.minimum(agent.commitment(), limit)
            obs, sums, regrets = venv.step_committed(actions, counts)
            agent.observe_committed(actions, counts, sums, reward_bounds=venv.core.bounded_rewards)
            return obs, counts, regrets
        decisions = _stretches(agent, obs, play, horizon, checkpoints, out, cum, bar, block=None)
    elif getattr(agent, "speculates", False) and _core_has(venv, "draw_stretch"):
        def play(actions, limit, block):  # the agent's per-round rule over drawn rewards
            used = agent.observe_stretch(actions, venv.draw_stretch(actions, block), limit)
            obs, regrets = venv.advance(actions, used)
            return obs, used, regrets
        decisions = _stretches(agent, obs, play, horizon, checkpoints, out, cum, bar, block=8)
    else:
        column = np.full(horizon + 1, -1)  # checkpoint round -> column of `out`
        column[checkpoints] = np.arange(len(checkpoints))
        if getattr(agent, "plays_blocks", False) and _core_has(venv, "draw_block"):
            _play_blocks(venv, agent, horizon, column, out, cum, bar)
        elif _draws_blocks(venv):
            rows = np.arange(n_runs)
            for start_round in range(0, horizon, BLOCK):
                length = min(BLOCK, horizon - start_round)
                obs_block, reward_block, regret_block = venv.draw_block(length)
                for s in range(length):
                    obs = obs_block[:, s]
                    actions = agent.act(obs)
                    agent.observe(obs, actions, reward_block[rows, s, actions], obs_block[:, s + 1])
                    cum += regret_block[rows, s, actions]
                    if column[start_round + s + 1] >= 0:
                        out[:, column[start_round + s + 1]] = cum
                if bar is not None:
                    bar.update(length)
        else:
            base = _bandit_env(venv)
            every = max(horizon // 100, 1)
            for step in range(1, horizon + 1):
                actions = agent.act(obs)
                next_obs, rewards, _, _, _ = venv.step(actions)
                agent.observe(obs, actions, rewards, next_obs)
                cum += base.last_regret
                obs = next_obs
                if column[step] >= 0:
                    out[:, column[step]] = cum
                if bar is not None and step % every == 0:
                    bar.update(every)
        decisions = horizon
    if bar is not None:
        bar.close()
    elapsed = time.perf_counter() - start
    return name, out, {"seconds": elapsed, "decisions": int(decisions),
                       "privacy": _privacy_label(agent, venv)}


def _play_blocks(venv: Any, agent: Any, horizon: int, column: np.ndarray, out: np.ndarray,
                 cum: np.ndarray, bar: Any) -> None:
    """Compiled rounds over blocks drawn ahead (``play_block``). The env draws block k + 1 in a
    second thread while the agent plays block k (and draws its own noise): the env's draws do
    not depend on the actions, so the numbers are those of drawing in turn (numpy's generators
    and the compiled kernels release the GIL)."""
    starts = list(range(0, horizon, BLOCK))
    lengths = [min(BLOCK, horizon - s) for s in starts]
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(venv.draw_block, lengths[0])
        for i, (start, length) in enumerate(zip(starts, lengths, strict=True)):
            obs_block, reward_block, regret_block = pending.result()
            if i + 1 < len(starts):
                pending = pool.submit(venv.draw_block, lengths[i + 1])
            actions = agent.play_block(obs_block, reward_block)
            inst = np.take_along_axis(regret_block, actions[..., None], axis=2)[..., 0]
            path = np.cumsum(np.concatenate([cum[:, None], inst], axis=1), axis=1)[:, 1:]
            cols = column[start + 1:start + length + 1]
            out[:, cols[cols >= 0]] = path[:, cols >= 0]
            cum[:] = path[:, -1]
            if bar is not None:
                bar.update(length)


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


def _stretches(agent: Any, obs: Any, play: Callable, horizon: int, checkpoints: np.ndarray,
               out: np.ndarray, cum: np.ndarray, bar: Any, block: int | None) -> int:
    """Step runs by stretches of rounds, cut at checkpoints; returns the number of decisions.

    ``play(actions, limit[, block])`` plays at most ``limit[i]`` rounds of run i and returns
    ``(obs, rounds played, summed regret)``. With ``block``, the block of drawn rewards grows
    while some run uses all of it and shrinks when none needs half of it.
    """
    n_runs = len(cum)
    cps = np.append(checkpoints, np.iinfo(np.int64).max)
    t = np.zeros(n_runs, dtype=np.int64)
    ci = np.zeros(n_runs, dtype=np.int64)
    rows = np.arange(n_runs)
    decisions = 0
    while (t < horizon).any():
        actions = agent.act(obs)
        limit = np.where(t < horizon, cps[ci] - t, 0)
        if block is None:
            obs, used, regrets = play(actions, limit)
        else:
            block = int(min(block, limit.max()))
            obs, used, regrets = play(actions, limit, block)
            block = int(np.clip(2 * used.max(), 8, MAX_BLOCK))
        cum += regrets
        t += used
        hit = t == cps[ci]
        out[rows[hit], ci[hit]] = cum[hit]
        ci += hit
        decisions += 1
        if bar is not None:
            bar.n = int(t.min())
            bar.refresh()
    return decisions


def _check_run_args(horizon: Any, n_runs: Any, checkpoints: Any) -> np.ndarray:
    for pname, v in (("horizon", horizon), ("n_runs", n_runs)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{pname} must be an integer >= 1, got {v!r}")
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
        backend: str | None = None, secure: bool = False) -> Results:
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
        progress: progress bars (``None``: when stderr is a terminal and tqdm is installed).
        n_jobs: agents run in parallel processes through joblib when > 1 (or -1).
        backend: joblib backend (``"loky"`` default; ``"dask"``, ``"ray"`` from the extras).
        secure: every private agent and privacy wrapper draws its noise from the OS CSPRNG
            (deployment mode: the noise cannot be replayed, so the results are not
            reproducible; ``seed`` then drives only the envs and the agents' public
            decisions). Agent objects passed ready-made must have been built with
            ``secure=True``. Without it, noise is seeded: right for simulation, but whoever
            knows the seed knows the noise.

    Returns:
        :class:`~ldp_gym.results.Results` with regret of shape (n_runs, len(checkpoints)).
    """
    cps = _check_run_args(horizon, n_runs, checkpoints)
    if not isinstance(secure, (bool, np.bool_)):
        raise TypeError(f"secure must be True or False, got {type(secure).__name__}")
    if not agents:
        raise ValueError("agents must name at least one agent")
    env_kwargs = dict(env_kwargs or {})
    wrappers = tuple(wrappers)
    tasks = [(env, name, spec, int(horizon), int(n_runs), seed, cps, env_kwargs, wrappers,
              progress, bool(secure)) for name, spec in agents.items()]
    outputs = _parallel(_run_agent, tasks, n_jobs, backend)
    env_name = env if isinstance(env, str) else getattr(env, "__name__", repr(env))
    return Results(checkpoints=cps, regret={name: out for name, out, _ in outputs},
                   meta={"env": env_name, "env_kwargs": {k: _jsonable(v) for k, v in
                                                         env_kwargs.items()},
                         "wrappers": [f"{w.__name__}({_jsonable(kw)})" for w, kw in wrappers],
                         "horizon": int(horizon), "n_runs": int(n_runs), "seed": _jsonable(seed),
                         "secure": bool(secure),
                         "privacy": {name: m["privacy"] for name, _, m in outputs}},
                   timings={name: m for name, _, m in outputs})


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v if isinstance(v, (str, int, float, bool, type(None), dict)) else repr(v)


def _parallel(fn: Callable, tasks: list[tuple], n_jobs: int, backend: str | None) -> list:
    if n_jobs == 1 or len(tasks) == 1:
        return [fn(*t) for t in tasks]
    try:
        import joblib
    except ImportError:  # joblib is optional: run sequentially
        return [fn(*t) for t in tasks]
    if backend == "ray":
        from ray.util.joblib import register_ray

        register_ray()
    with joblib.parallel_backend(backend or "loky", n_jobs=n_jobs):
        return joblib.Parallel()(joblib.delayed(fn)(*t) for t in tasks)


def sweep(tasks: list[dict[str, Any]], n_jobs: int = -1, backend: str | None = None) -> list[Results]:
    """Run several :func:`run` calls (e.g. over epsilon, settings or seeds) in parallel.

    Args:
        tasks: keyword arguments of :func:`run`, one dict per call.
        n_jobs: joblib workers (-1: all cores).
        backend: ``"loky"`` (local processes, default), ``"dask"`` (needs a
            ``dask.distributed.Client``) or ``"ray"``.

    Example:
        >>> from ldp_gym.agents import AdaPKLUCB
        >>> tasks = [dict(env="LDPMAB-v0", agents={"A": (AdaPKLUCB, {"epsilon": e})},
        ...               horizon=100, n_runs=2, progress=False) for e in (0.5, 1.0)]
        >>> len(sweep(tasks, n_jobs=1))
        2
    """
    return _parallel(_run_kwargs, [(t,) for t in tasks], n_jobs, backend)


def _run_kwargs(kwargs: dict[str, Any]) -> Results:
    return run(**kwargs)
