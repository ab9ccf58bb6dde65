"""Shuffle-SE and Dist-DP-SE through ``ldp_gym.run`` against two yardsticks, in one invocation.

For each agent on ``LDPMAB-v0`` (the paper's five Bernoulli arms in the given order, epsilon =
1, the agents' other defaults), N runs of T rounds, CPU seconds of:

* ``numpy``: the batched elimination over runs as a user would write it in plain numpy, one
  vectorised step per round: each run's scheduled arm (a pointer, moved to the next active arm
  when its batch is full), the chosen arm's reward, every run's message (masked where a run
  plays its survivor; none once every run does) and, for the runs whose epoch ended, the
  analyser. Shuffle-SE's message is the blanket's bit ``u0 < x`` or a uniform bit, from three
  uniforms, as ldp-gym's; Dist-DP-SE's is the rounding of ``x g`` (one uniform) plus two
  Polya(1/B, q) shares from ``Generator.negative_binomial``, a float Gamma-Poisson sampler of
  the law that ldp-gym samples exactly on integers;
* ``limit``: one numba function doing ldp-gym's arithmetic with the same draws per run and
  round: every arm's reward uniform (as the env draws them), then the user's message from the
  next words of 64 random bits, by the library's compiled randomisers (``unit_uniform``,
  ``blanket_bit``, ``secagg_message``: the exact samples are ldp-gym's), and at an epoch's end
  the agents' estimates, decoding and elimination. Run by run in one loop over rounds: no env,
  runner, blocks or kernel stops. It keeps the scheduled arm as a pointer and the active arms
  as a count, where ldp-gym's kernel scans ``active`` and ``epoch_counts`` each round, and it
  does not clip the rewards (0 or 1, inside the agents' bounds [0, 1]);
* ``ldp-gym``: ``ldp_gym.run`` (the env draws blocks of every arm's rewards, the agents'
  kernel :func:`~ldp_gym.agents.mab_kernels.elimination_rounds` plays them and stops for the
  analyser, in Python, after each round in which epochs ended).

The epochs' constants (batch size; the blanket's gamma, or Dist-DP-SE's g, tau, m and ratio;
the width) are the agent's: its own ``_plan`` and ``_width``, on an agent built by
``from_env``, tabulated over (epoch, active arms) once before timing. Shuffle-SE's gamma is a
bisection cached per batch size, so a process's first run pays for it: the table fills the
cache for the yardsticks and ldp-gym alike.
The yardsticks draw other streams than ldp-gym (the limit one generator for the env's uniforms
and the users' words), so they play other instances of the same law: the mean regret at T of
each is printed, and must agree within the noise of N runs (they do at N = 1000). Fed the
env's generator and the agent's users' generator, the limit gives ``ldp_gym.run``'s regret and
every epoch's batch totals bitwise (checked on single runs, T = 3e4 and 1e5, 16 instances).

A second table compares ``ldp_gym.run`` with the loop a user writes around any agent: ``act``
and ``observe`` once per round over the runs, the chosen arm's reward drawn with numpy, at a
tenth of the horizon.

Each figure is the best of ``--repeat`` timings (CPU time of this process, threads included);
the ratios ``numpy / ldp-gym`` (speed-up) and ``limit / ldp-gym`` (share of the limit) compare
figures of the same invocation. Usage::

    python benchmarks/elimination_speed.py [--runs 100] [--horizon 100000] [--repeat 3]
"""

from __future__ import annotations

import os

import numpy as np
from mab_speed import cpu_time, yardstick_parser, yardstick_row  # benchmarks/ is the script's path
from numba import njit

import ldp_gym
from ldp_gym.agents import DistDPSE, ShuffleSE
from ldp_gym.agents.mab_kernels import WORDS_GUARD
from ldp_gym.envs.mab import DEFAULT_MEANS
from ldp_gym.runner.loop import make_vector_env
from ldp_gym.wrappers.mechanisms.compiled import blanket_bit, secagg_message, unit_uniform

ENV = "LDPMAB-v0"
MEANS = np.array(DEFAULT_MEANS)
AGENT = {"Shuffle-SE": ShuffleSE, "Dist-DP-SE": DistDPSE}
KWARGS = {"epsilon": 1.0}
SHUFFLE, SECAGG = 0, 1
_ALL_BITS = np.uint64(2**64 - 1)


def agent_for(name: str, runs: int, horizon: int):
    """The agent as ``ldp_gym.run`` builds it (``from_env`` on the registered env)."""
    return AGENT[name].from_env(make_vector_env(ENV, runs, horizon, means=MEANS), **KWARGS)


def constants(name: str, horizon: int) -> dict:
    """The agent's epochs, tables [epoch, active arms] from its own ``_plan`` and ``_width``.

    Only the epochs a run can begin within the horizon, with two arms or more: epoch e with s
    arms follows epoch 1 (all K arms) and epochs 2 to e - 1 with s arms or more (each pulls
    ``s R``, at least, with R increasing in s). Shuffle-SE's gamma costs a bisection per size."""
    k = len(MEANS)
    rows = np.arange(k + 1)
    agent = agent_for(name, k + 1, horizon)
    if (agent.lower, agent.upper) != (0.0, 1.0):
        raise ValueError("the yardsticks take the rewards as the agent's x, unclipped")
    agent.active[:] = np.arange(k) < rows[:, None]  # s arms active in row s
    fields = ("size", "p0", "p1", "width", "g", "tau", "m")
    c = {f: [np.zeros(k + 1)] for f in fields}
    planned = rows == k  # epoch 1: all K arms
    while planned.any():
        r = np.flatnonzero(planned)
        agent.epoch[:] = len(c["size"])
        agent._plan(r)
        width = np.zeros(k + 1)
        width[r] = agent._width(r)
        decode = ((agent.precision, agent.accuracy, agent.modulus) if name == "Dist-DP-SE"
                  else (np.zeros(k + 1),) * 3)
        for f, v in zip(fields, (agent.R, agent._p0, agent._p1, width, *decode)):
            c[f].append(np.where(planned, v, 0))
        if len(c["size"]) == 2:  # after epoch 1, s arms for s = 2 to K
            pulls, planned = np.full(k + 1, k * agent.R[k]), rows >= 2
        else:
            pulls = pulls + rows * agent.R
        planned &= pulls <= horizon
    c = {f: np.array(v, dtype=np.float64 if f in ("p0", "p1", "width") else np.int64)
         for f, v in c.items()}
    return {**c, "kind": SHUFFLE if name == "Shuffle-SE" else SECAGG,
            "q": np.exp(-c["p1"] / 2.0**40)}


# ----------------------------------------------------------------------------- numpy yardstick
def numpy_agent(name: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    """The elimination in plain numpy; returns the mean regret (so the work cannot be skipped)."""
    rng = np.random.default_rng(seed)
    k, rows, gaps = len(MEANS), np.arange(runs), MEANS.max() - MEANS
    active, held = np.ones((runs, k), dtype=bool), np.zeros((runs, k), dtype=np.int64)
    epoch, filled = np.ones(runs, dtype=np.int64), np.zeros(runs, dtype=np.int64)
    arm, alive = np.zeros(runs, dtype=np.int64), np.full(runs, k)
    size, p0, q = c["size"][1, k].repeat(runs), c["p0"][1, k].repeat(runs), c["q"][1, k].repeat(runs)
    regret = 0.0
    for _ in range(horizon):
        x = rng.random(runs) < MEANS[arm]
        regret += gaps[arm].sum()
        sending = alive >= 2
        if not sending.any():  # every run plays its survivor
            continue
        if c["kind"] == SHUFFLE:
            u = rng.random((3, runs))
            message = np.where(u[1] < p0, u[2] < 0.5, u[0] < x)
        else:
            xg = x * p0
            shares = rng.negative_binomial(1 / size, 1 - q, (2, runs))
            message = np.floor(xg) + (rng.random(runs) < xg - np.floor(xg)) + shares[0] - shares[1]
        held[rows, arm] += (message * sending).astype(np.int64)
        filled += sending
        full = np.flatnonzero(sending & (filled == size))
        if full.size:  # the next active arm, or the epoch's end
            later = active[full] & (np.arange(k) > arm[full, None])
            more = later.any(axis=1)
            arm[full[more]], filled[full] = later[more].argmax(axis=1), 0
            if not more.all():
                end = full[~more]
                alive[end] = _numpy_analyse(end, c, active, held, epoch, size)
                arm[end] = active[end].argmax(axis=1)
                e, s = epoch[end], np.maximum(alive[end], 2)  # a survivor's: unused
                size[end], p0[end], q[end] = c["size"][e, s], c["p0"][e, s], c["q"][e, s]
    return regret / runs


def _numpy_analyse(end, c, active, held, epoch, size):
    """Estimate, eliminate and move to the next epoch the runs ``end``; their arms left."""
    e, s = epoch[end], active[end].sum(axis=1)
    n = size[end][:, None].astype(np.float64)
    if c["kind"] == SHUFFLE:
        gamma = c["p0"][e, s][:, None]
        mu = (held[end] / n - gamma / 2.0) / (1.0 - gamma)
    else:
        g, tau, m = (c[f][e, s][:, None] for f in ("g", "tau", "m"))
        y = np.mod(held[end], m)
        mu = np.where(y > size[end][:, None] * g + tau, y - m, y) / g.astype(np.float64) / n
    mu = np.where(active[end], mu, -np.inf)
    active[end] &= mu.max(axis=1, keepdims=True) - mu <= 2.0 * c["width"][e, s][:, None]
    epoch[end] += 1
    held[end] = 0
    return active[end].sum(axis=1)


# ----------------------------------------------------------------------------- the limit
@njit(cache=True, error_model="numpy")
def _limit(kind, runs, horizon, means, env_rng, user_rng, size, p0, p1, width, g, tau,
           m):  # pragma: no cover - compiled
    """The per-run regrets at T: the env's uniforms from ``env_rng``, the words from ``user_rng``."""
    k = means.shape[0]
    active, held = np.ones((runs, k), dtype=np.bool_), np.zeros((runs, k), dtype=np.int64)
    epoch, alive = np.ones(runs, dtype=np.int64), np.full(runs, k)
    arm, filled = np.zeros(runs, dtype=np.int64), np.zeros(runs, dtype=np.int64)
    x, mu, regret = np.empty(k), np.empty(k), np.zeros(runs)
    words = user_rng.integers(np.uint64(0), _ALL_BITS, 4096, np.uint64, True)
    cur = np.zeros(2, dtype=np.int64)
    best_mean = means.max()
    for _ in range(horizon):
        for r in range(runs):
            for a in range(k):  # every arm's reward, as the env draws them
                x[a] = 1.0 if env_rng.random() < means[a] else 0.0
            a = arm[r]
            regret[r] += best_mean - means[a]
            if alive[r] < 2:  # the survivor's users send nothing
                continue
            e, s = epoch[r], alive[r]
            while True:  # the user's message, from the next words of the stream
                if words.shape[0] - cur[0] < WORDS_GUARD or cur[1]:
                    left = words.shape[0] - cur[0]
                    fresh = user_rng.integers(np.uint64(0), _ALL_BITS, max(4096, 2 * left),
                                              np.uint64, True)
                    words = np.concatenate((words[cur[0]:], fresh))
                    cur[0], cur[1] = 0, 0
                begin = cur[0]
                if kind == SHUFFLE:
                    bit = 1 if unit_uniform(words, cur) < x[a] else 0
                    message = blanket_bit(bit, unit_uniform(words, cur), unit_uniform(words, cur),
                                          p0[e, s])
                else:
                    message = secagg_message(x[a], size[e, s], p0[e, s], p1[e, s], words, cur)
                if not cur[1]:
                    break
                cur[0] = begin  # the words ran out: again on the same words, extended
            held[r, a] += message
            filled[r] += 1
            if filled[r] < size[e, s]:
                continue
            filled[r] = 0
            a += 1
            while a < k and not active[r, a]:
                a += 1
            if a < k:
                arm[r] = a
                continue
            top = -np.inf  # the epoch's end: estimate, eliminate, plan the next
            for a in range(k):
                if not active[r, a]:
                    mu[a] = -np.inf
                elif kind == SHUFFLE:
                    mu[a] = (held[r, a] / size[e, s] - p0[e, s] / 2.0) / (1.0 - p0[e, s])
                else:
                    y = held[r, a] % m[e, s]
                    if y > size[e, s] * g[e, s] + tau[e, s]:
                        y -= m[e, s]
                    mu[a] = y / np.float64(g[e, s]) / size[e, s]
                top = max(top, mu[a])
                held[r, a] = 0
            alive[r], arm[r] = 0, -1
            for a in range(k):
                active[r, a] = active[r, a] and top - mu[a] <= 2.0 * width[e, s]
                if active[r, a]:
                    alive[r] += 1
                    if arm[r] < 0:
                        arm[r] = a
            epoch[r] += 1
    return regret


def limit_agent(name: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)  # one generator for the env's uniforms and the words
    return float(_limit(c["kind"], runs, horizon, MEANS, rng, rng, c["size"], c["p0"], c["p1"],
                        c["width"], c["g"], c["tau"], c["m"]).mean())


# ----------------------------------------------------------------------------- ldp-gym
def ldp_gym_agent(name: str, runs: int, horizon: int, c: dict | None = None, seed: int = 0) -> float:
    res = ldp_gym.run(ENV, {name: (AGENT[name], KWARGS)}, horizon=horizon, n_runs=runs, seed=seed,
                      env_kwargs={"means": MEANS}, progress=False)
    return float(res.regret[name][:, -1].mean())


def rounds_agent(name: str, runs: int, horizon: int, seed: int = 0) -> float:
    """The agent's ``act``/``observe`` loop over the runs, one step per round."""
    rng, agent = np.random.default_rng(seed), agent_for(name, runs, horizon)
    agent.reset(seed=seed)
    obs, regret = np.zeros((runs, 1)), 0.0
    for _ in range(horizon):
        a = agent.act(obs)
        agent.observe(obs, a, (rng.random(runs) < MEANS[a]).astype(np.float64), obs)
        regret += float((MEANS.max() - MEANS[a]).sum())
    return regret / runs


def main() -> None:
    args = yardstick_parser(__doc__, 100_000).parse_args()
    fns = (numpy_agent, limit_agent, ldp_gym_agent)
    for name in AGENT:  # compile and warm up
        c = constants(name, 2000)
        for fn in fns:
            fn(name, 2, 2000, c)
    print(f"{args.runs} runs x {args.horizon} rounds; load average {os.getloadavg()[0]:.2f}; "
          f"best of {args.repeat}; CPU seconds (mean regret at T)")
    print(f"{'agent':<12}{'numpy':>17}{'limit':>17}{'ldp-gym':>17}{'x numpy':>9}{'% limit':>9}")
    for name in AGENT:
        text, _ = yardstick_row(fns, args.repeat, name, args.runs, args.horizon,
                                constants(name, args.horizon))
        print(f"{name:<12}{text}", flush=True)
    horizon = max(args.horizon // 10, 1)
    print(f"\nthe act/observe loop, {args.runs} runs x {horizon} rounds; best of {args.repeat}")
    print(f"{'agent':<12}{'rounds':>17}{'ldp-gym':>17}{'speed-up':>9}")
    for name in AGENT:
        cells = [min(cpu_time(fn, name, args.runs, horizon) for _ in range(args.repeat))
                 for fn in (rounds_agent, ldp_gym_agent)]
        print(f"{name:<12}" + "".join(f"{t:>9.2f} ({v:>5.0f})" for t, v in cells)
              + f"{cells[0][0] / cells[1][0]:>8.1f}x", flush=True)


if __name__ == "__main__":
    main()
