"""The nonparametric agents through ``ldp_gym.run`` against two yardsticks, in one invocation.

For ABSE (Perchet and Rigollet 2013, non-private) and LDPMAB (Ma et al. 2025, Alg 1-2, epsilon
= 1) on ``LDPNonparametricBandit-v0`` at its defaults (d = 2, K = 3, the bumps
``f_k(x) = 2 e^-a / (1 + e^-a)``, ``a = 2 K^2 (x_1 - (k + 1)/(K + 1))^2``, contexts uniform on
[0, 1]^2 drawn in float32, Bernoulli rewards, no auxiliary data), N runs of T rounds, CPU
seconds of:

* ``numpy``: the algorithm over runs as a user would write it in plain numpy, one vectorised
  step per round, the env's draws made as it makes them (d float32 uniforms for the context,
  one uniform per arm for the rewards; the pulled arm's reward is ``u < f_a(x)``). ABSE keeps
  its hypercubes in one dense table of every dyadic cell down to the depth cap: the bin of a
  context is the active one of its cells ``floor(x 2^j)`` (the same bin as ldp-gym's walk,
  exactly), round robin by ``argmin``, the round's end, the elimination and the split test
  computed for every run and masked, the splits fancy-indexed assignments. LDPMAB keeps the
  node arrays of the full tree of its depth cap, arms and coordinates on the leading axis;
  the bin is the active node whose box ``[lo, hi)`` holds the context (ldp-gym's walk's bin,
  exactly), the arm uniform among its active arms (``floor(u m)``-th); every slot the server
  can still read is released at once (one noise value per slot: discrete Laplace as the
  difference of two ``rng.geometric`` draws times the mechanism's grid, U's then V's); every
  bin past the warm-up is checked at once (eq. 13-14 estimates and radii, eq. 16 elimination,
  eq. 17 refinement test, computed for every node and masked), and the bins that pass are
  split in a Python loop (rare: at most ``2^(depth cap) - 1`` per run);
* ``limit``: one numba function per agent doing ldp-gym's arithmetic with the same draws per
  run and round, from one generator: the env's (d float32 uniforms, K uniforms, every arm's
  mean and the best one) and, for LDPMAB, the agent's (one uniform for the arm, two geometric
  draws per noise value released, one uniform per split). Run by run, the state of one run in
  small arrays sized for the full tree: no env, runner or blocks. Both walk ldp-gym's trees
  (ABSE's hypercubes, LDPMAB's max-edge bins) with its comparisons, and the elimination,
  radius and split rules are its expressions. The limit skips only what is not the
  algorithm's arithmetic: the Bernoulli outcome and regret of the arms not pulled (the env
  scores every arm of a block), the checks of contexts and rewards, the growth of the node
  arrays, LDPMAB's capacity test per round and its second test, after the release, of a bin
  with one arm at the depth cap (one test skips it), and the buffers drawn ahead. LDPMAB's
  limit also puts a split bin's first child in the bin's place in the active list and
  appends the second, where ldp-gym removes the bin and appends both (so no snapshot of the
  list): the slots are visited in another order and take other noise values, of the same
  law. It adds ``1 + z`` and ``y + z``, ldp-gym ``snap(1) + z + 0`` and ``snap(y) + z + 0``:
  the same number, the snap of 1 and of a reward y in {0, 1} being exact;
* ``ldp-gym``: ``ldp_gym.run`` (the env draws blocks, the agent's compiled kernel plays them;
  LDPMAB's noise and decision uniforms are drawn ahead in chunks; on the one core of the
  timings, in the thread that plays).

The constants (ABSE's depth cap and split constant; LDPMAB's warm-up, ``C sqrt(ln n)``, depth
cap, ``tau_j``, epsilon, and each mechanism's grid and geometric parameter) are read off the
agent built by ``from_env``, the dimension and arms off the env's core; the bumps are retyped,
and checked against ``core.reward_means`` (bitwise for the limit's). The yardsticks draw other
streams than ldp-gym, so they play other instances of the same law: the mean regret at T of
each is printed to check that the three play the same algorithm, and the figures must agree
within the noise of N runs (checked at 1000 runs with several seeds, and at epsilon = 8, where
LDPMAB eliminates more). Fed ldp-gym's draws (LDPMAB: its three streams and its slot order),
the limits give the regret of the agents' ``play_block`` bitwise (checked on single runs);
with one run, numpy's ABSE draws the limit's stream and gives its regret to the last bit.
numpy's ``exp``, ``log`` and ``sqrt`` may differ from the compiled ones in the last bit.

ABSE plays ``--horizon`` rounds, LDPMAB a fifth of them (its rounds cost about five times
ABSE's in ldp-gym). Each figure is the best of ``--repeat`` timings (CPU time of this process,
threads included); the ratios ``numpy / ldp-gym`` (speed-up) and ``limit / ldp-gym`` (share of
the limit) compare figures of the same invocation. Usage::

    python benchmarks/nonparametric_limits.py [--runs 100] [--horizon 100000] [--repeat 3]
"""

from __future__ import annotations

import math
import os

import gymnasium as gym
import numpy as np
from mab_speed import yardstick_parser, yardstick_row  # benchmarks/ is the script's path
from numba import njit

import ldp_gym
from ldp_gym.agents import ABSE, LDPMAB

ENV = LDPMAB.test_env  # LDPNonparametricBandit-v0, ABSE's test env too
AGENT = {"ABSE": (ABSE, {}), "LDPMAB": (LDPMAB, {"epsilon": 1.0})}
#: LDPMAB plays a fifth of ``--horizon``: its rounds cost about 5 times ABSE's in ldp-gym
SHARE = {"ABSE": 1, "LDPMAB": 5}


@njit(cache=True, inline="always")
def _bumps(x0, centres, scale, out):  # pragma: no cover - compiled
    """The env's bump means at a context of first coordinate x0 into out (K,); the best one."""
    best = -np.inf
    for k in range(out.shape[0]):
        e = math.exp(-scale * (x0 - centres[k]) ** 2)
        out[k] = 2.0 * e / (1.0 + e)
        best = max(best, out[k])
    return best


@njit(cache=True, inline="always")
def _limit_env_round(rng, centres, scale, x, means, us):  # pragma: no cover - compiled
    """The env's round in the limits: a float32 context into x, the arms' means, one uniform
    per arm into us; returns the best mean."""
    for j in range(x.shape[0]):
        x[j] = rng.random(dtype=np.float32)
    best = _bumps(x[0], centres, scale, means)
    for a in range(us.shape[0]):
        us[a] = rng.random()
    return best


@njit(cache=True)
def _bumps_at(x, centres, scale):  # pragma: no cover - compiled
    out = np.empty((x.shape[0], centres.shape[0]))
    for i in range(x.shape[0]):
        _bumps(x[i, 0], centres, scale, out[i])
    return out


def _numpy_means(x: np.ndarray, c: dict) -> np.ndarray:
    e = np.exp(-c["scale"] * (x[:, :1] - c["centres"]) ** 2)
    return 2.0 * e / (1.0 + e)


def constants(agent: str, horizon: int) -> dict:
    """The agent's constants for this horizon, read from the agent; the env's size and bumps."""
    cls, kwargs = AGENT[agent]
    env = gym.make(ENV, max_episode_steps=horizon)
    core = env.unwrapped.core
    if core.reward != "bumps" or core.auxiliary:
        raise ValueError(f"{ENV}: the yardsticks play the bumps without auxiliary data only")
    k = core.n_arms
    c = {"dim": core.dim, "k": k, "centres": (np.arange(k) + 1.0) / (k + 1.0),
         "scale": 2.0 * k * k}
    x = np.random.default_rng(1).random((1000, core.dim), dtype=np.float32).astype(np.float64)
    if not (np.array_equal(_bumps_at(x, c["centres"], c["scale"]), core.reward_means(x))
            and np.allclose(_numpy_means(x, c), core.reward_means(x), rtol=0.0, atol=1e-15)):
        raise ValueError(f"{ENV}: the bumps retyped here are not the env's")
    a = cls.from_env(env, seed=0, **kwargs)
    c["horizon"] = float(a.horizon)
    if agent == "ABSE":
        c.update(max_depth=int(a.max_depth), split_constant=float(a.split_constant))
        return c
    if (a.lower, a.upper) != core.bounded_rewards or a.departures or a.multi_source \
            or len(a.source_epsilons) != 1:
        raise ValueError("LDPMAB: the yardsticks play one source, rewards in [0, 1], no departures")
    mu, mv = a.mechanism_u, a.mechanism_v
    c.update(warmup=int(a.warmup), radius=float(a.radius_factor), max_depth=int(a.max_depth),
             taus=np.asarray(a.taus, np.float64), eps=float(a.source_epsilons[0]),
             grid_u=float(mu.grid), p_u=float(mu._geometric_p(mu.sensitivity, mu.grid)),
             grid_v=float(mv.grid), p_v=float(mv._geometric_p(mv.sensitivity, mv.grid)))
    return c


def _env_round(rng: np.random.Generator, runs: int, c: dict):
    """The env's round over runs: float32 contexts, one uniform per arm, the means."""
    x = rng.random((runs, c["dim"]), dtype=np.float32).astype(np.float64)
    u = rng.random((runs, c["k"]))
    means = _numpy_means(x, c)
    return x, u, means, means.max(axis=1)


# ----------------------------------------------------------------------------- numpy yardsticks
def _cells(d: int, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every dyadic cell down to ``depth``, in one table: the offset of each depth, the strides
    of a cell's integer coordinates ``floor(x 2^j)``, and each cell's 2^d children."""
    offsets = np.cumsum([0] + [1 << (j * d) for j in range(depth)])
    strides = np.array([[1 << (j * i) for i in range(d)] for j in range(depth + 1)])
    children = np.zeros((int(offsets[-1]) + (1 << (depth * d)), 1 << d), np.int64)
    for j in range(depth):
        for cell in range(1 << (j * d)):
            coords = [(cell >> (j * i)) & ((1 << j) - 1) for i in range(d)]
            for idx in range(1 << d):
                sub = [2 * coords[i] + ((idx >> i) & 1) for i in range(d)]
                children[offsets[j] + cell, idx] = offsets[j + 1] + sum(
                    s * int(strides[j + 1, i]) for i, s in enumerate(sub))
    return offsets, strides, children


def numpy_abse(runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    """ABSE in plain numpy; returns the mean regret (so the work cannot be skipped)."""
    rng = np.random.default_rng(seed)
    d, k, depth_cap, T = c["dim"], c["k"], c["max_depth"], c["horizon"]
    offsets, strides, children = _cells(d, depth_cap)
    cells = children.shape[0]
    scales = 2.0 ** np.arange(depth_cap + 1)
    widths = 0.5 ** np.arange(depth_cap + 1)
    active = np.zeros((runs, cells), bool)
    arms = np.zeros((runs, cells, k), bool)
    pulls = np.zeros((runs, cells, k), np.int64)
    sums = np.zeros((runs, cells, k))
    rounds = np.zeros((runs, cells), np.int64)
    active[:, 0] = arms[:, 0] = True
    rows, big, regret = np.arange(runs), np.iinfo(np.int64).max, 0.0
    for _ in range(horizon):
        x, u, means, best = _env_round(rng, runs, c)
        ids = offsets + (np.floor(x[:, None, :] * scales[:, None]).astype(np.int64)
                         * strides).sum(axis=2)                        # (N, depths)
        level = active[rows[:, None], ids].argmax(axis=1)
        node = ids[rows, level]
        live = arms[rows, node]
        arm = np.where(live, pulls[rows, node], big).argmin(axis=1)    # round robin
        chosen = means[rows, arm]
        regret += (best - chosen).sum()
        pulls[rows, node, arm] += 1
        sums[rows, node, arm] += u[rows, arm] < chosen
        tau = rounds[rows, node] + 1
        n_pulls = pulls[rows, node]
        done = (~live | (n_pulls >= tau[:, None])).all(axis=1)       # a round of SE is over
        if not done.any():
            continue
        rounds[rows[done], node[done]] = tau[done]
        m = live.sum(axis=1)
        width = widths[level]
        ybar = sums[rows, node] / np.maximum(n_pulls, 1)
        bound = 2.0 * np.sqrt(2.0 * np.maximum(1.0, np.log(T * width ** d / tau)) / tau)
        top = np.where(live, ybar, -np.inf).max(axis=1)
        gone = live & (top[:, None] - ybar > bound[:, None]) & (done & (m >= 2))[:, None]
        arms[rows, node] = live & ~gone
        m -= gone.sum(axis=1)
        length = np.ceil(c["split_constant"] * np.maximum(1.0, np.log(T * width ** (d + 2)))
                         / (width * width))
        split = done & (m >= 2) & (tau >= length) & (level < depth_cap)
        if split.any():
            r, b = rows[split], node[split]
            active[r, b] = False
            active[r[:, None], children[b]] = True
            arms[r[:, None], children[b]] = arms[r, b][:, None, :]
    return regret / runs


def _laplace(rng: np.random.Generator, count: int, p: float, grid: float) -> np.ndarray:
    g = rng.geometric(p, size=2 * count)
    return (g[0::2] - g[1::2]) * grid


def numpy_ldpmab(runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    """LDPMAB in plain numpy; returns the mean regret (so the work cannot be skipped).

    The small axes lead (coordinates, arms: (d, N, nodes), (K, N, nodes)), so that the
    reductions over them are elementwise operations on (N, nodes) planes."""
    rng = np.random.default_rng(seed)
    d, k, cap, warmup = c["dim"], c["k"], c["max_depth"], c["warmup"]
    nodes = (1 << (cap + 1)) - 1
    lo, hi = np.zeros((d, runs, nodes)), np.zeros((d, runs, nodes))
    depth = np.zeros((runs, nodes), np.int64)
    active = np.zeros((runs, nodes), bool)
    arms = np.zeros((k, runs, nodes), bool)
    su, sv = np.zeros((k, runs, nodes)), np.zeros((k, runs, nodes))
    users = np.zeros((runs, nodes), np.int64)
    n_nodes = np.ones(runs, np.int64)
    hi[:, :, 0] = 1.0
    active[:, 0] = arms[:, :, 0] = True
    rows, regret, eps2 = np.arange(runs), 0.0, c["eps"] * c["eps"]
    taus = c["taus"]
    for _ in range(horizon):
        x, u, means, best = _env_round(rng, runs, c)
        inside = active.copy()  # the bin: the active node whose box [lo, hi) holds x
        for j in range(d):
            xj = x[:, j:j + 1]
            inside &= (lo[j] <= xj) & (xj < hi[j])
        node = inside.argmax(axis=1)
        live = arms[:, rows, node]                                     # (K, N)
        m = live.sum(axis=0)
        j = np.minimum((rng.random(runs) * m).astype(np.int64), m - 1)
        arm = (live & (live.cumsum(axis=0) == j + 1)).argmax(axis=0)  # uniform among them
        chosen = means[rows, arm]
        regret += (best - chosen).sum()
        y = (u[rows, arm] < chosen).astype(np.float64)
        # the server: every active bin's slots it can still read, released
        nk = arms.sum(axis=0)
        users += active
        readable = active & ~((nk == 1) & (depth >= cap))
        slot_u = arms & readable
        slot_v = slot_u & (nk >= 2)
        inp_u = np.zeros((k, runs, nodes))
        inp_u[arm, rows, node] = 1.0
        su[slot_u] += inp_u[slot_u] + _laplace(rng, int(slot_u.sum()), c["p_u"], c["grid_u"])
        inp_u[arm, rows, node] = y
        sv[slot_v] += inp_u[slot_v] + _laplace(rng, int(slot_v.sum()), c["p_v"], c["grid_v"])
        # the checks of every bin past the warm-up: eq. 13-14, 16, 17
        checked = readable & (users >= warmup)
        if not checked.any():
            continue
        pos = su > 0.0
        den = np.where(pos, su, 1.0)
        est = np.where(pos, sv / den, 0.0)
        rad = np.where(pos, c["radius"] * (np.sqrt(np.maximum(su, users / eps2)) / den), np.inf)
        tau = taus[depth]
        wide = np.maximum(rad, tau)
        lcb = np.where(arms, est - wide, -np.inf).max(axis=0)
        arms &= ~((lcb > est + wide) & (checked & (nk >= 2)))
        narrow = checked & (depth < cap) & np.where(arms, rad < tau, True).all(axis=0)
        for n, b in zip(*np.nonzero(narrow)):  # Alg 1: the midpoint of a longest edge
            edges = hi[:, n, b] - lo[:, n, b]
            tied = np.flatnonzero(edges == edges.max())
            e = tied[min(int(rng.random() * len(tied)), len(tied) - 1)]
            ch = n_nodes[n]
            n_nodes[n] += 2
            lo[:, n, ch:ch + 2], hi[:, n, ch:ch + 2] = lo[:, n, b, None], hi[:, n, b, None]
            mid = 0.5 * (lo[e, n, b] + hi[e, n, b])
            hi[e, n, ch] = lo[e, n, ch + 1] = mid
            depth[n, ch:ch + 2] = depth[n, b] + 1
            arms[:, n, ch:ch + 2] = arms[:, n, b, None]
            active[n, ch:ch + 2] = True
            active[n, b] = False
    return regret / runs


# ----------------------------------------------------------------------------- the limits
@njit(cache=True, error_model="numpy")
def _abse_limit(runs, horizon, rng, dim, centres, scale, T, split_constant,
                max_depth):  # pragma: no cover - compiled
    k_arms = centres.shape[0]
    cap = 0
    for j in range(max_depth + 1):
        cap += 1 << (j * dim)
    lo, side = np.empty((cap, dim)), np.empty(cap)
    depth, child, rounds = np.empty(cap, np.int64), np.empty(cap, np.int64), \
        np.empty(cap, np.int64)
    active = np.empty(cap, np.bool_)
    arms = np.empty((cap, k_arms), np.bool_)
    pulls = np.empty((cap, k_arms), np.int64)
    sums = np.empty((cap, k_arms))
    x, means, us = np.empty(dim), np.empty(k_arms), np.empty(k_arms)
    regret = 0.0
    for _ in range(runs):
        lo[0, :] = 0.0
        side[0], depth[0], rounds[0], active[0], n_nodes = 1.0, 0, 0, True, 1
        arms[0, :], pulls[0, :], sums[0, :] = True, 0, 0.0
        for _ in range(horizon):
            best = _limit_env_round(rng, centres, scale, x, means, us)
            node = 0  # the hypercube of x
            while not active[node]:
                idx = 0
                for j in range(dim):
                    if x[j] >= lo[node, j] + 0.5 * side[node]:
                        idx += 1 << j
                node = child[node] + idx
            arm = -1  # round robin: the active arm with the fewest pulls, the first on ties
            for a in range(k_arms):
                if arms[node, a] and (arm < 0 or pulls[node, a] < pulls[node, arm]):
                    arm = a
            regret += best - means[arm]
            pulls[node, arm] += 1
            sums[node, arm] += 1.0 if us[arm] < means[arm] else 0.0
            tau = rounds[node] + 1
            m = 0
            for a in range(k_arms):
                if arms[node, a]:
                    m += 1
                    if pulls[node, a] < tau:
                        m = -1
                        break
            if m <= 0:
                continue
            rounds[node] = tau  # a round of successive elimination is over
            width = side[node]
            if m >= 2:
                bound = 2.0 * math.sqrt(2.0 * max(1.0, math.log(T * width ** dim / tau)) / tau)
                top = -np.inf
                for a in range(k_arms):
                    if arms[node, a]:
                        top = max(top, sums[node, a] / pulls[node, a])
                for a in range(k_arms):
                    if arms[node, a] and top - sums[node, a] / pulls[node, a] > bound:
                        arms[node, a] = False
                        m -= 1
            length = math.ceil(split_constant * max(1.0, math.log(T * width ** (dim + 2)))
                               / (width * width))
            if m >= 2 and tau >= length and depth[node] < max_depth:
                c = n_nodes  # the 2^d half-side hypercubes, with the active arms
                n_nodes += 1 << dim
                for idx in range(1 << dim):
                    for j in range(dim):
                        lo[c + idx, j] = lo[node, j] + (0.5 * width if (idx >> j) & 1 else 0.0)
                    side[c + idx] = 0.5 * width
                    depth[c + idx] = depth[node] + 1
                    active[c + idx] = True
                    rounds[c + idx] = 0
                    for a in range(k_arms):
                        arms[c + idx, a] = arms[node, a]
                        pulls[c + idx, a] = 0
                        sums[c + idx, a] = 0.0
                child[node] = c
                active[node] = False
    return regret / runs


@njit(cache=True, error_model="numpy")
def _ldpmab_limit(runs, horizon, rng, dim, centres, scale, warmup, radius_c, eps2, max_depth,
                  taus, grid_u, p_u, grid_v, p_v):  # pragma: no cover - compiled
    k_arms = centres.shape[0]
    cap = (1 << (max_depth + 1)) - 1
    lo, hi = np.empty((cap, dim)), np.empty((cap, dim))
    depth, split, left = np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64)
    users, bins = np.empty(cap, np.int64), np.empty(cap, np.int64)
    active = np.empty(cap, np.bool_)
    arms = np.empty((cap, k_arms), np.bool_)
    su, sv = np.empty((cap, k_arms)), np.empty((cap, k_arms))
    x, means, us = np.empty(dim), np.empty(k_arms), np.empty(k_arms)
    est, rad = np.empty(k_arms), np.empty(k_arms)
    regret = 0.0
    for _ in range(runs):
        lo[0, :], hi[0, :] = 0.0, 1.0
        depth[0], users[0], active[0], bins[0], n_active, n_nodes = 0, 0, True, 0, 1, 1
        arms[0, :], su[0, :], sv[0, :] = True, 0.0, 0.0
        for _ in range(horizon):
            best = _limit_env_round(rng, centres, scale, x, means, us)
            node = 0  # the user: the bin of x, an arm uniform among its active arms
            while not active[node]:
                j = split[node]
                node = left[node] if x[j] < 0.5 * (lo[node, j] + hi[node, j]) else left[node] + 1
            m = 0
            for a in range(k_arms):
                if arms[node, a]:
                    m += 1
            j = min(int(rng.random() * m), m - 1)
            arm = -1
            for a in range(k_arms):
                if arms[node, a]:
                    if j == 0:
                        arm = a
                        break
                    j -= 1
            regret += best - means[arm]
            y = 1.0 if us[arm] < means[arm] else 0.0
            na = n_active  # the server: every active bin (a split's children wait a round)
            for i in range(na):
                b = bins[i]
                users[b] += 1
                nk = 0
                for a in range(k_arms):
                    if arms[b, a]:
                        nk += 1
                if nk == 1 and depth[b] >= max_depth:
                    continue  # nothing of this bin can change any more
                for a in range(k_arms):  # the slots the server can still read, released
                    if not arms[b, a]:
                        continue
                    hit = b == node and a == arm
                    z = (rng.geometric(p_u) - rng.geometric(p_u)) * grid_u
                    su[b, a] += 1.0 + z if hit else z
                    if nk >= 2:
                        z = (rng.geometric(p_v) - rng.geometric(p_v)) * grid_v
                        sv[b, a] += y + z if hit else z
                if users[b] < warmup:
                    continue
                dj = depth[b]
                tau = taus[dj]
                for a in range(k_arms):  # eq. 13-14
                    if arms[b, a]:
                        s_u = su[b, a]
                        if s_u <= 0.0:
                            est[a], rad[a] = 0.0, np.inf
                        else:
                            est[a] = sv[b, a] / s_u
                            rad[a] = radius_c * (math.sqrt(max(s_u, users[b] / eps2)) / s_u)
                if nk >= 2:  # eq. 16
                    top = -np.inf
                    for a in range(k_arms):
                        if arms[b, a]:
                            top = max(top, est[a] - max(rad[a], tau))
                    for a in range(k_arms):
                        if arms[b, a] and top > est[a] + max(rad[a], tau):
                            arms[b, a] = False
                if dj >= max_depth:
                    continue
                narrow = True  # eq. 17
                for a in range(k_arms):
                    if arms[b, a] and not rad[a] < tau:
                        narrow = False
                if not narrow:
                    continue
                u = rng.random()  # Alg 1: the midpoint of the floor(u t)-th of t longest edges
                longest = 0.0
                for j in range(dim):
                    longest = max(longest, hi[b, j] - lo[b, j])
                ties = 0
                for j in range(dim):
                    if hi[b, j] - lo[b, j] == longest:
                        ties += 1
                t = min(int(u * ties), ties - 1)
                e = 0
                for j in range(dim):
                    if hi[b, j] - lo[b, j] == longest:
                        if t == 0:
                            e = j
                            break
                        t -= 1
                c = n_nodes
                n_nodes += 2
                mid = 0.5 * (lo[b, e] + hi[b, e])
                for ch in (c, c + 1):
                    for j in range(dim):
                        lo[ch, j], hi[ch, j] = lo[b, j], hi[b, j]
                    depth[ch], users[ch], active[ch] = dj + 1, 0, True
                    for a in range(k_arms):
                        arms[ch, a], su[ch, a], sv[ch, a] = arms[b, a], 0.0, 0.0
                hi[c, e] = mid
                lo[c + 1, e] = mid
                split[b], left[b], active[b] = e, c, False
                bins[i] = c  # the first child takes the bin's slot, the second goes last
                bins[n_active] = c + 1
                n_active += 1
    return regret / runs


def limit_agent(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    if agent == "ABSE":
        return _abse_limit(runs, horizon, rng, c["dim"], c["centres"], c["scale"], c["horizon"],
                           c["split_constant"], c["max_depth"])
    return _ldpmab_limit(runs, horizon, rng, c["dim"], c["centres"], c["scale"], c["warmup"],
                         c["radius"], c["eps"] * c["eps"], c["max_depth"], c["taus"], c["grid_u"],
                         c["p_u"], c["grid_v"], c["p_v"])


def numpy_agent(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    return (numpy_abse if agent == "ABSE" else numpy_ldpmab)(runs, horizon, c, seed)


# ----------------------------------------------------------------------------- ldp-gym
def ldp_gym_agent(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    res = ldp_gym.run(ENV, {agent: AGENT[agent]}, horizon=horizon, n_runs=runs, seed=seed,
                      progress=False)
    return float(res.regret[agent][:, -1].mean())


def main() -> None:
    args = yardstick_parser(__doc__, 100_000, "rounds of ABSE; a fifth of them for LDPMAB").parse_args()
    fns = (numpy_agent, limit_agent, ldp_gym_agent)
    for agent in AGENT:  # compile and warm up
        c = constants(agent, 500)
        for fn in fns:
            fn(agent, 2, 500, c)
    horizons = {agent: max(1, args.horizon // SHARE[agent]) for agent in AGENT}
    print(f"{args.runs} runs; T = {horizons['ABSE']} for ABSE, {horizons['LDPMAB']} for LDPMAB "
          f"(epsilon = 1); load average {os.getloadavg()[0]:.2f}; best of {args.repeat}; "
          f"CPU seconds (mean regret at T)")
    print(f"{'agent':<8}{'T':>8}{'numpy':>17}{'limit':>17}{'ldp-gym':>17}{'x numpy':>9}"
          f"{'% limit':>9}")
    for agent in AGENT:
        horizon = horizons[agent]
        c = constants(agent, horizon)
        text, _ = yardstick_row(fns, args.repeat, agent, args.runs, horizon, c)
        print(f"{agent:<8}{horizon:>8}{text}", flush=True)


if __name__ == "__main__":
    main()
