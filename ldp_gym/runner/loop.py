"""The run loop: one agent's runs on one native vector env, round by round or by blocks,
cumulative regret recorded at checkpoints."""

from __future__ import annotations

import inspect
import time
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from numba import njit

from ..protocols import AgentLike, AgentSpec, BlockPlayer
from .blocks import block_player
from .progress import Reporter


def default_checkpoints(horizon: int, n: int = 31) -> np.ndarray:
    """About ``n`` log-spaced rounds from 1 to ``horizon``, always including ``horizon``."""
    return np.unique(np.round(np.geomspace(1, horizon, n)).astype(np.int64))


def make_vector_env(env: str | Callable, n_runs: int, horizon: int, wrappers: Any = (),
                    secure: bool = False, **env_kwargs: Any) -> Any:
    """The native vector env of ``env``, wrapped by ``wrappers``.

    ``env`` is a registered id, or ``f(num_envs, max_episode_steps)``. ``wrappers`` is a
    sequence of ``(wrapper, kwargs)``, where a wrapper is a vector wrapper class or a function
    of the env such as :func:`~ldp_gym.wrappers.bco.one_point`. With ``secure``, every wrapper
    that takes a ``secure`` argument gets ``secure=True``; these are the privacy wrappers. A
    wrapper that draws noise otherwise is refused."""
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


def _build_agent(spec: AgentSpec, venv: Any, secure: bool = False) -> AgentLike:
    # duck-typed: the runner does not import the agents package (envs and runner never depend on agents)
    extra = {"secure": True} if secure else {}
    from_env = getattr(spec, "from_env", None) if isinstance(spec, type) else None
    if from_env is not None:
        agent = from_env(venv, **extra)
    elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], type):
        cls, kwargs = spec
        agent = cls.from_env(venv, **{**kwargs, **extra})
    elif isinstance(spec, AgentLike):
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


class Chunk(NamedTuple):
    """One task of the runner: runs ``start`` to ``start + runs`` of agent ``name``, on their own
    native vector env, with their own streams (see :func:`chunk_seeds`)."""

    env: Any
    name: str
    spec: AgentSpec
    horizon: int
    start: int
    runs: int
    number: int
    root: np.random.SeedSequence
    checkpoints: np.ndarray
    env_kwargs: dict
    wrappers: tuple
    secure: bool


def chunk_seeds(root: np.random.SeedSequence, name: str, number: int) -> tuple[int, Any]:
    """``(env seed, agent seed)`` of chunk ``number`` of agent ``name``.

    Chunk 0 keeps the keys of an unsplit run. The env's key is that of the first child
    ``root.spawn(1)`` would give, without spawning from a caller's object. The agent's key is
    its name, so adding an agent to a comparison never changes the numbers of the others.
    Chunk c > 0 appends c to both keys."""
    more = (number,) if number else ()
    env_seed = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key + (0,) + more,
                                      pool_size=root.pool_size).generate_state(1)[0]
    agent_seed = np.random.SeedSequence(
        root.entropy, spawn_key=root.spawn_key + (zlib.crc32(name.encode()),) + more)
    return int(env_seed), agent_seed


class Stops:
    """The first recommendation of every run of a best-arm identification setting.

    Attributes:
        rounds: (N,) the pulls before each run's recommendation, its sample complexity; -1
            while it has not stopped.
        arm: (N,) the arm recommended, -1 while the run has not stopped.
        correct: (N,) whether it is a best arm of the run's instance.
    """

    def __init__(self, n: int):
        self.rounds = np.full(n, -1, dtype=np.int64)
        self.arm = np.full(n, -1, dtype=np.int64)
        self.correct = np.zeros(n, dtype=bool)

    @property
    def done(self) -> bool:
        """Every run has stopped."""
        return bool((self.arm >= 0).all())

    def note(self, played: np.ndarray, recommendations: np.ndarray, core: Any) -> np.ndarray:
        """Record the runs' first recommendations among ``recommendations`` (N, L), L rounds
        that follow ``played`` (N,) rounds; ``core`` judges them while it holds the instances.

        Returns the rounds (N, L) whose regret counts: those before a run's recommendation."""
        said = recommendations >= 0
        length = said.shape[1]
        first = np.where(said.any(axis=1), said.argmax(axis=1), length)
        going = self.arm < 0
        counts = (np.arange(length) < first[:, None]) & going[:, None]
        new = np.flatnonzero(going & (first < length))
        if new.size:
            arms = np.full(len(going), -1, dtype=np.int64)
            arms[new] = recommendations[new, first[new]]
            self.rounds[new] = played[new] + first[new]
            self.arm[new] = arms[new]
            self.correct[new] = core.correct(arms)[new]
        return counts

    def as_dict(self) -> dict[str, np.ndarray]:
        """The record as :attr:`~ldp_gym.results.Results.stops` keeps it."""
        return {"stopping_time": self.rounds, "recommendation": self.arm, "correct": self.correct}


def _bandit_env(venv: Any) -> Any:
    """The native bandit vector env under ``venv``'s wrappers, where the runner reads regret."""
    base = venv.unwrapped
    if not hasattr(base, "last_regret"):
        raise ValueError(f"env must build a bandit vector env of ldp_gym (BanditVectorEnv, "
                         f"which keeps last_regret), got {type(base).__name__}")
    return base


def play_chunk(chunk: Chunk, sink: Any = None, task: int = 0) -> tuple[str, np.ndarray, dict]:
    """``(name, regret (runs, checkpoints), meta)`` of one chunk, reporting its progress to
    ``sink`` as the job's task ``task``."""
    n, horizon, checkpoints = chunk.runs, chunk.horizon, chunk.checkpoints
    env_seed, agent_seed = chunk_seeds(chunk.root, chunk.name, chunk.number)
    venv = make_vector_env(chunk.env, n, horizon, chunk.wrappers, chunk.secure,
                           **chunk.env_kwargs)
    agent = _build_agent(chunk.spec, venv, chunk.secure)
    if hasattr(agent, "reset"):
        agent.reset(seed=agent_seed)
    obs, _ = venv.reset(seed=env_seed)
    receive = getattr(agent, "receive_auxiliary", None)
    if receive is not None:  # this episode's auxiliary datasets, as data (least authority)
        receive(venv.unwrapped.auxiliary_datasets())
    out = np.zeros((n, len(checkpoints)))
    cum = np.zeros(n)
    report = None if sink is None else Reporter(sink, task)
    if report is not None:
        report(0, final=True)  # started
    start = time.perf_counter()
    player = block_player(agent, venv, horizon)
    base = _bandit_env(venv)
    stops = None if base.core.task == "regret" else Stops(n)
    try:
        if player is None:
            decisions = _round_by_round(venv, agent, obs, horizon, checkpoints, out, cum, report,
                                        stops)
        else:
            decisions = _by_blocks(player, obs, horizon, checkpoints, out, cum, report, stops)
    except (ValueError, TypeError) as e:  # say whose play failed (e.g. a third party's action)
        e.args = (f"agent {chunk.name!r} ({type(agent).__name__}): {e}",)  # same type
        raise
    if report is not None:
        report(horizon, final=True)
    elapsed = time.perf_counter() - start
    meta = {"seconds": elapsed, "decisions": int(decisions), "privacy": _privacy_label(agent, venv)}
    if stops is not None:  # best-arm identification: the stops, and the risk the agent took
        meta["stops"] = stops.as_dict()
        meta["risk"] = getattr(agent, "risk", None)
    core: Any = base.core
    if hasattr(core, "alpha") and hasattr(core, "beta"):  # an approximate oracle's guarantee
        meta["oracle"] = {"alpha": float(core.alpha), "beta": float(core.beta)}
    return chunk.name, out, meta


def _privacy_label(agent: AgentLike, venv: Any) -> str:
    """The guarantee of ``agent`` on ``venv``: the agent's own, else those of the privacy
    wrappers.

    Each privacy wrapper states one :class:`~ldp_gym.wrappers.mechanisms.privacy.Privacy`."""
    privacy = getattr(agent, "privacy", None)
    if privacy is not None:
        return str(privacy)
    labels, env = [], venv
    while hasattr(env, "env"):
        if getattr(env, "privacy", None) is not None:
            labels.append(f"{env.privacy} via {type(env).__name__}")
        env = env.env
    return "; ".join(labels) or "none"


def _round_by_round(venv: Any, agent: AgentLike, obs: Any, horizon: int, checkpoints: np.ndarray,
                    out: np.ndarray, cum: np.ndarray, report: Reporter | None,
                    stops: Stops | None = None) -> int:
    """``act``, ``venv.step`` with every wrapper's step, then ``observe``, one round at a time.

    In best-arm identification (``stops``), a run's regret stops at its recommendation, and
    the loop ends once every run has stopped; the later checkpoints keep the regret then.
    Progress is reported every hundredth of the horizon. Returns the rounds played."""
    base = _bandit_env(venv)
    column = np.full(horizon + 1, -1)  # checkpoint round -> column of `out`
    column[checkpoints] = np.arange(len(checkpoints))
    every = max(horizon // 100, 1)
    for step in range(1, horizon + 1):
        actions = agent.act(obs)
        next_obs, rewards, _, _, _ = venv.step(actions)
        agent.observe(obs, actions, rewards, next_obs)
        regret = base.last_regret
        if stops is not None:
            regret = regret * stops.note(np.full(len(cum), step - 1),
                                         base.last_recommendation[:, None], base.core)[:, 0]
        cum += regret
        obs = next_obs
        if column[step] >= 0:
            out[:, column[step]] = cum
        if report is not None and step % every == 0:
            report(step)
        if stops is not None and stops.done:
            out[:, checkpoints > step] = cum[:, None]
            return step
    return horizon


@njit(cache=True, nogil=True)
def _record_segments(t: np.ndarray, cum: np.ndarray, rounds: np.ndarray, regret: np.ndarray,
                     checkpoints: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """Move every run i past its segments: ``t[i] += rounds[i, j]`` and ``cum[i] +=
    regret[i, j]`` in turn, and where a segment ends on a checkpoint c, ``out[i, c] = cum[i]``.

    The sums are numpy's ``cumsum`` of ``cum`` and the regrets, in the same order."""
    n_checkpoints = checkpoints.shape[0]
    for i in range(t.shape[0]):
        ti, ci = t[i], cum[i]
        c = np.searchsorted(checkpoints, ti, side="right")
        for j in range(rounds.shape[1]):
            ti += rounds[i, j]
            ci += regret[i, j]
            while c < n_checkpoints and checkpoints[c] < ti:
                c += 1
            if c < n_checkpoints and checkpoints[c] == ti:
                out[i, c] = ci
        t[i], cum[i] = ti, ci


def _by_blocks(player: BlockPlayer, obs: Any, horizon: int, checkpoints: np.ndarray,
               out: np.ndarray, cum: np.ndarray, report: Reporter | None,
               stops: Stops | None = None) -> int:
    """``player.play`` until every run has played ``horizon`` rounds, or has stopped.

    Stretches are cut at the next checkpoint, or at the horizon. The regret is recorded where a
    segment ends on a checkpoint. In best-arm identification (``stops``, where the player plays
    rounds one by one and says what was recommended), a run's regret stops at its
    recommendation. Returns the number of decisions (segments) per run."""
    t = np.zeros(len(cum), dtype=np.int64)
    ends_at = np.append(checkpoints, horizon)
    decisions = 0
    while (t < horizon).any() and not (stops is not None and stops.done):
        limit = ends_at[np.searchsorted(checkpoints, t, side="right")] - t  # 0 once finished
        obs, rounds, regret = player.play(obs, limit)
        if stops is not None:
            drawn: Any = player  # the _Drawn player, the only one of these settings
            regret = regret * stops.note(t, drawn.recommended, drawn.env.core)
        _record_segments(t, cum, np.ascontiguousarray(rounds, dtype=np.int64),
                         np.ascontiguousarray(regret, dtype=np.float64), checkpoints, out)
        decisions += rounds.shape[1]
        if report is not None:  # once a block (the reporter keeps to its interval)
            report(int(t.min()))
    if stops is not None:
        out[:, checkpoints > t.max()] = cum[:, None]
    return decisions

