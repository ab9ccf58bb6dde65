"""Offline replay evaluation of any agent on logged data (Li, Chu, Langford and Wang,
"Unbiased Offline Evaluation of Contextual-bandit-based News Article Recommendation
Algorithms", WSDM 2011, Alg. 1).

A log holds events ``(observation, action, reward)`` collected by a policy that chose every
action uniformly at random (:func:`log_uniform` records one from an env whose actions are
arms, a ``Discrete`` action space, and whose rounds are i.i.d.: not the adversarial or the
combinatorial and BCO envs, which it refuses or, for an adversarial sequence, whose order the
replay's shuffling destroys). The replay shows
the agent the events one at a time; when the agent chooses the logged action, the event
counts as a round, and the agent observes its reward; otherwise the event is discarded. With
i.i.d. events and uniform logging, the accepted rounds have the law of rounds played online,
so the replayed regret after T accepted rounds is an unbiased estimate of the online regret
at T (Li et al., Theorem 1), over the draw of the log. About K events are needed per round (K
the number of arms). The runs of one replay share one log: their spread understates the
uncertainty of the estimate (an independent check found the per-log means spread 1.6 times
more than one log's runs suggest); for a confidence interval, replay several logs. Each event
costs an ``act`` call of one run: replay is 30 to 100 times slower than an online run.

The agent is built for the log's env as :func:`ldp_gym.run` builds it, one run at a time
(the accepted events differ between runs), each run with its own seed and its own random
order of the log. The regret of an accepted round is the logged action's, which the log
keeps for evaluation only. An agent observes ``(obs, action, reward, obs)``: the next
observation is the event's own, as no next event is known when it is accepted; the agents
of ldp-gym learn from the first three.

Example:
    >>> import ldp_gym
    >>> from ldp_gym.agents import ABSE
    >>> from ldp_gym.replay import log_uniform, replay
    >>> log = log_uniform("LDPClassificationBandit-v0", 3000, seed=0,
    ...                   env_kwargs={"dataset": "iris", "dim": 2})
    >>> log.actions.shape, log.n_arms
    ((3000,), 3)
    >>> res = replay({"ABSE": ABSE}, log, horizon=500, n_runs=2, seed=1)
    >>> res.regret["ABSE"].shape, res.meta["replay"]["events per run"]["ABSE"]
    ((2, 27), [1507, 1471])
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces

from ldp_gym.protocols import AgentSpec
from ldp_gym.results import Results
from ldp_gym.runner import _check_run_args
from ldp_gym.runner.loop import _build_agent, chunk_seeds, make_vector_env
from ldp_gym.validation import check_int, seed_sequence

__all__ = ["OBD_CAMPAIGNS", "Log", "log_uniform", "obd_log", "replay"]

#: The campaigns of the Open Bandit Dataset's sample: :func:`obd_log`.
OBD_CAMPAIGNS = ("all", "men", "women")


@dataclass(frozen=True)
class Log:
    """Events logged by the uniform policy on one instance of ``env``.

    Attributes:
        env: the registered id the events come from; replayed agents are built for it.
        env_kwargs: its keyword arguments.
        obs: the observations (n, ...), as the env gave them.
        actions: the logged actions (n,), uniform on the ``n_arms`` arms.
        rewards: the rewards (n,) the env returned.
        regrets: the logged actions' regrets (n,), for evaluation only (never shown to an
            agent).
        n_arms: K.
    """

    env: str
    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    regrets: np.ndarray
    n_arms: int
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        arrays = (self.obs, self.actions, self.rewards, self.regrets)
        if not all(isinstance(a, np.ndarray) for a in arrays):
            raise TypeError("obs, actions, rewards and regrets must be numpy arrays")
        n = self.actions.shape[0]
        if self.actions.ndim != 1 or not all(a.shape[:1] == (n,) for a in arrays) or n < 1:
            raise ValueError("obs, actions, rewards and regrets must hold the same n >= 1 events")
        if self.actions.dtype.kind not in "iu" or self.actions.min() < 0 \
                or self.actions.max() >= self.n_arms:
            raise ValueError(f"actions must be integer arms in [0, n_arms={self.n_arms})")


def log_uniform(env: str, n: int, seed: Any = 0, env_kwargs: dict | None = None) -> Log:
    """``n`` events of the uniform policy on one instance of the registered ``env``: the
    env and the policy seeded from ``seed``."""
    n = check_int("n", n)
    env_kwargs = dict(env_kwargs or {})
    venv = make_vector_env(env, 1, n, **env_kwargs)
    k = _arms(venv, env)
    root = seed_sequence(seed)
    env_seed, policy = (np.random.default_rng(s) for s in root.spawn(2))
    obs, _ = venv.reset(seed=int(env_seed.integers(2**31)))
    shape = obs.shape[1:]
    out_obs = np.empty((n, *shape), dtype=obs.dtype)
    actions = policy.integers(0, k, size=n)
    rewards, regrets = np.empty(n), np.empty(n)
    for i in range(n):
        out_obs[i] = obs[0]
        obs, r, _, _, info = venv.step(actions[i:i + 1])
        if "regret" not in info:
            raise ValueError(f"env: {env!r} reports no regret in its info (an ldp-gym env does)")
        rewards[i], regrets[i] = r[0], info["regret"][0]
    return Log(env, out_obs, actions, rewards, regrets, k, env_kwargs)


def obd_log(campaign: str = "all", position: int | None = None) -> Log:
    """The Open Bandit Dataset's sample logged by the uniform-random policy, as a :class:`Log`.

    The Open Bandit Dataset (Saito, Aihara, Matsutani and Narita, NeurIPS 2021 Datasets and
    Benchmarks) logs a fashion e-commerce site's recommendations: which item was shown at which
    of three positions, and whether the user clicked. The sample in the ``obp`` wheel holds
    10,000 impressions per ``campaign`` ("all": 80 items, "men": 34, "women": 46) of the
    "random" policy, which shows every item with the same probability: the uniform logging
    that replay needs (it is checked here from the logged propensities). They are read from
    the wheel's files; ldp-gym does not import ``obp``, whose own dependencies include torch:
    ``pip install --no-deps obp``.

    The events become a bandit of one arm per item, without context (the users' features are
    hashed categories): actions the items, rewards the clicks. Their true means are unknown:
    the log's regrets are the pseudo-regrets against the click rates the log itself estimates
    (each item's clicks over its impressions), and replayed agents are built for
    ``LDPMAB-v0`` with these rates as means. One user is one impression. The clicks are rare
    (38 in the 10,000 impressions of "all"), and replay accepts about one event in K, so a
    replay has a few hundred accepted rounds at most: a demonstration of unbiased offline
    evaluation on real logged data, not a benchmark.

    Args:
        campaign: one of :data:`OBD_CAMPAIGNS`.
        position: keep the impressions of this position only (1, 2 or 3); default all.

    Raises:
        ImportError: ``obp`` is not installed.

    Example:
        >>> from ldp_gym.replay import obd_log
        >>> log = obd_log("men")
        >>> log.n_arms, log.actions.shape, int(log.rewards.sum())
        (34, (10000,), 46)
    """
    import csv
    from importlib.util import find_spec

    if campaign not in OBD_CAMPAIGNS:
        raise ValueError(f"campaign must be one of {OBD_CAMPAIGNS}, got {campaign!r}")
    if position is not None and position not in (1, 2, 3):
        raise ValueError(f"position must be 1, 2, 3 or None, got {position!r}")
    spec = find_spec("obp")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("obd_log reads the Open Bandit Dataset's sample from the obp wheel: "
                          "pip install --no-deps obp")
    path = f"{list(spec.submodule_search_locations)[0]}/dataset/obd/random/{campaign}/{campaign}.csv"
    with open(path, newline="") as f:
        rows = [(int(r["item_id"]), int(r["position"]), float(r["click"]),
                 float(r["propensity_score"])) for r in csv.DictReader(f)]
    table = np.array(rows)
    if position is not None:
        table = table[table[:, 1] == position]
    items = table[:, 0].astype(np.int64)
    k = int(items.max()) + 1
    if not np.allclose(table[:, 3], 1.0 / k):
        raise ValueError(f"campaign {campaign!r}: the logged propensities are not uniform")
    shown = np.bincount(items, minlength=k)
    rates = np.bincount(items, weights=table[:, 2], minlength=k) / np.maximum(shown, 1)
    obs = np.zeros((len(items), 1), dtype=np.float32)
    return Log("LDPMAB-v0", obs, items, table[:, 2].copy(), rates.max() - rates[items], k,
               {"means": rates.tolist(), "order": "given"})


def _arms(venv: Any, env: str) -> int:
    """The number of arms of ``venv``, whose actions must be arms (``Discrete``)."""
    space = venv.single_action_space
    if not isinstance(space, spaces.Discrete):
        raise ValueError(f"env: replay needs an env whose actions are arms (Discrete), and "
                         f"{env!r} has {space}")
    return int(space.n)


def replay(agents: Mapping[str, AgentSpec], log: Log, horizon: int, n_runs: int = 10,
           seed: Any = 0, checkpoints: Any = None) -> Results:
    """Replay every agent on ``log`` for ``horizon`` accepted rounds, ``n_runs`` times.

    Args:
        agents: as :func:`ldp_gym.run` takes them (a class, ``(class, kwargs)``, or a
            callable ``vector env -> agent`` of one run).
        log: the events (:func:`log_uniform`).
        horizon: accepted rounds per run, T; a run that exhausts the log before T is an
            error (about K T events are needed).
        n_runs: runs per agent, each with its own seed and order of the events.
        seed: the root seed.
        checkpoints: the accepted rounds at which regret is recorded; log-spaced by default.

    Returns:
        :class:`~ldp_gym.results.Results` of the replayed regret (n_runs, len(checkpoints));
        ``meta["replay"]["events per run"]`` has each agent's events used per run,
        ``timings`` the seconds per agent. Each agent's numbers depend on its name and the
        seed, not on the other agents (as in :func:`ldp_gym.run`).
    """
    if not isinstance(log, Log):
        raise TypeError(f"log must be a Log (see log_uniform), got {type(log).__name__}")
    if not isinstance(agents, Mapping) or not agents:
        raise ValueError("agents must be a dict naming at least one agent")
    cps = _check_run_args(horizon, n_runs, checkpoints)
    horizon, n_runs = int(horizon), int(n_runs)
    venv = make_vector_env(log.env, 1, horizon, **log.env_kwargs)  # the agents' setting, read once
    k = _arms(venv, log.env)
    if k != log.n_arms:
        raise ValueError(f"log: its n_arms={log.n_arms} is not its env's {k} arms")
    root = seed_sequence(seed)
    regret: dict[str, np.ndarray] = {}
    privacy: dict[str, str] = {}
    used: dict[str, list[int]] = {}
    timings: dict[str, dict[str, Any]] = {}
    for name, spec in agents.items():
        start = time.perf_counter()
        rows = []
        _, key = chunk_seeds(root, name, 0)  # by name, as ldp_gym.run seeds its agents
        for child in key.spawn(n_runs):
            agent_seed, order_seed = child.spawn(2)
            agent = _build_agent(spec, venv)  # from_env reads the spaces and setting only
            if hasattr(agent, "reset"):
                agent.reset(seed=agent_seed)
            privacy.setdefault(name, str(getattr(agent, "privacy", None) or "none"))
            rows.append(_one_run(agent, log, horizon, np.random.default_rng(order_seed)))
        regret[name] = np.stack([np.cumsum(row[0])[cps - 1] for row in rows])
        used[name] = [int(row[1]) for row in rows]
        timings[name] = {"seconds": time.perf_counter() - start}
    meta = {"env": log.env, "env_kwargs": log.env_kwargs, "horizon": horizon, "n_runs": n_runs,
            "seed": seed if isinstance(seed, int) else str(seed), "privacy": privacy,
            "replay": {"events": int(log.actions.shape[0]), "events per run": used}}
    return Results(cps, regret, meta, timings)


def _one_run(agent: Any, log: Log, horizon: int, rng: np.random.Generator
             ) -> tuple[np.ndarray, int]:
    """The regrets of one run's ``horizon`` accepted rounds, and the events it used."""
    regrets, t = np.empty(horizon), 0
    order = rng.permutation(log.actions.shape[0])
    for used, i in enumerate(order, start=1):
        obs = log.obs[i:i + 1]
        if int(np.asarray(agent.act(obs)).reshape(-1)[0]) != log.actions[i]:
            continue
        agent.observe(obs, log.actions[i:i + 1], log.rewards[i:i + 1], obs)
        regrets[t] = log.regrets[i]
        t += 1
        if t == horizon:
            return regrets, used
    raise ValueError(f"log: its {log.actions.shape[0]} events gave only {t} accepted rounds, "
                     f"fewer than horizon={horizon}: log about {log.n_arms} events per round")
