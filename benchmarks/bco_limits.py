"""The BCO agents through ``ldp_gym.run`` against two yardsticks, in one invocation.

For FKM (one point, on ``LDPBCO-v0``), ADX (two points, ``TwoPointGD`` on
``LDPMultiPointBCO-v0``) and the barrier agents Saha-Tewari and Hazan-Levy (one point, on
``LDPBCO-v0``), at the envs' defaults (d = 5, the ball of radius 1, the quadratic loss
``(mu/2) ||x - c||^2`` with mu = 1 and c uniform in the ball of radius 1/2, stochastic regime:
uniform noise on [-0.1, 0.1], one draw per round shared by the points; FKM and ADX thus on the
strongly convex schedule ``eta_t = 1/(mu t)``; the loss is smooth, beta = mu, as the barrier
agents need, and strongly convex, as Hazan-Levy needs), N runs of T rounds, CPU seconds of:

* ``numpy``: the algorithm over runs as a user would write it in plain numpy, one vectorised
  step per round (Gaussian rows made unit vectors, the points ``y + rho u`` (and ``y - rho u``)
  projected onto X and their losses, the noise uniform, the clipped loss (difference), the
  gradient step and the radial projection onto the ball of radius ``(1 - xi) R``). For the
  barrier agents: the point ``y = x + delta M^{-1/2} u`` and ``w = (d / delta) M^{1/2} u`` in
  the closed form of the ball's barrier (``M = grad^2 R(x) + lam I``; Saha-Tewari: lam = 0 and
  its delta; Hazan-Levy: ``lam = eta mu t``, delta = 1), y projected onto X, its loss, the
  noise, the clipped loss, the sum ``S += f w`` (Hazan-Levy: ``c += f w - mu x``) and the FTRL
  point ``-r S / ||S||``, r the barrier's root (Saha-Tewari) or found by Newton's method on all
  runs, masked as they converge (Hazan-Levy);
* ``limit``: one numba function doing ldp-gym's arithmetic in ldp-gym's order with the same
  draws per run and round (d standard normals for the unit vector, as the agent draws them; one
  uniform for the noise, as the env draws it, for ADX too, where it cancels from the
  difference), run by run, its state in scalars and d-vectors: no env, runner or blocks. It
  skips only what is not the algorithm's arithmetic: the finite and box checks of the actions
  (which never fail here, so the env's projection of points leaving the box never runs), the
  ``projected`` flags and the per-round regrets (summed at once). The barrier agents have their
  own limit, which also skips the count of Newton steps and draws from two generators, the
  agent's and the env's, as ldp-gym does: fed ldp-gym's seeds (``chunk_seeds``) it gives
  ``ldp_gym.run``'s regret bitwise (checked on single runs, T = 3000 and 60000). Given one
  generator for both, on one run, it draws numpy's stream, and numpy's regret agrees to 2e-16;
* ``ldp-gym``: ``ldp_gym.run`` (the env draws blocks, the agent's compiled kernel plays them).

The constants (rho, the step, the gain ``d / rho`` or ``d / (2 rho)``, the cap ``(1 - xi) R``,
the loss clip; the barrier agents' delta, eta, mu and most Newton steps) are read off the agent
built by ``from_env`` (the tuple its block kernel takes), the loss and noise off the env's
core; the barrier's root, Hazan-Levy's Newton on it and the bound of the FTRL points
(``_barrier_root``, ``_hazan_levy_radius``, ``_INSIDE``) are
ldp-gym's. The mean regret at T of each is printed to check that the three play the same
algorithm: the figures must agree within the noise of N runs (the yardsticks draw other
centres and other streams than ldp-gym; for the barrier agents checked at 1000 runs, T = 6000,
two seeds: within 1.7 standard errors). A barrier agent's round costs 1.4 to 3 times FKM's
(Hazan-Levy's in numpy 3 times), so the script takes about twice its FKM and ADX part. Each
figure is the best of ``--repeat`` timings (CPU time of this process, threads included); the
ratios ``numpy / ldp-gym`` (speed-up) and ``limit / ldp-gym`` (share of the limit) compare
figures of the same invocation. Usage::

    python benchmarks/bco_limits.py [--runs 100] [--horizon 60000] [--repeat 3]
"""

from __future__ import annotations

import math
import os

import gymnasium as gym
import numpy as np
from mab_speed import yardstick_parser, yardstick_row  # benchmarks/ is the script's path
from numba import njit

import ldp_gym
from ldp_gym.agents import FKM, HazanLevy, SahaTewari, TwoPointGD
from ldp_gym.agents.bco import _HAZAN_LEVY, _INSIDE, _barrier_root, _hazan_levy_radius

DIM = 5
AGENT = {"FKM": FKM, "ADX": TwoPointGD, "Saha-Tewari": SahaTewari, "Hazan-Levy": HazanLevy}
BARRIER = ("Saha-Tewari", "Hazan-Levy")  # FTRL with the ball's barrier, ellipsoidal sampling


def constants(agent: str, horizon: int) -> dict:
    """The agent's constants for this horizon, read from the agent, and the env's loss and noise."""
    cls = AGENT[agent]
    env = gym.make(cls.test_env, dim=DIM, max_episode_steps=horizon)
    core = env.unwrapped.core
    if core.loss != "quadratic" or core.regime != "stochastic":
        raise ValueError(f"{cls.test_env}: the yardsticks play the stochastic quadratic loss only")
    rule = cls.from_env(env, seed=0)._block_rule()
    if agent in BARRIER:  # delta is Saha-Tewari's radius, Hazan-Levy's 1.0; mu Hazan-Levy's
        kind, t0, delta, eta, mu, iterations, loss_cap, radius = rule
        return {"hazan": kind == _HAZAN_LEVY, "scale": delta, "eta": eta, "mu_agent": mu,
                "iterations": iterations, "loss_cap": loss_cap, "radius": radius, "mu": core.mu,
                "noise": core.noise}
    rho, t0, mu, eta, gain, cap, loss_cap, radius, two = rule
    return {"rho": rho, "mu_step": mu, "eta": eta, "gain": gain, "cap": cap, "loss_cap": loss_cap,
            "radius": radius, "two": two, "mu": core.mu, "noise": core.noise}


def _centres(rng: np.random.Generator, runs: int, radius: float) -> np.ndarray:
    """The env's instances: centres uniform in the ball of radius R/2, drawn as its reset does."""
    g = rng.standard_normal((runs, DIM))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return g * (0.5 * radius * rng.random((runs, 1)) ** (1.0 / DIM))


# ----------------------------------------------------------------------------- numpy yardstick
def numpy_agent(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    """The agent in plain numpy; returns the mean regret (so the work cannot be skipped)."""
    if agent in BARRIER:
        return numpy_barrier(runs, horizon, c, seed)
    rng = np.random.default_rng(seed)
    R, rho, mu, cap, loss_cap = c["radius"], c["rho"], c["mu"], c["cap"], c["loss_cap"]
    centres = _centres(rng, runs, R)[:, None, :]
    signs = np.array([1.0, -1.0] if c["two"] else [1.0])[None, :, None]
    y, regret = np.zeros((runs, DIM)), 0.0
    for t in range(1, horizon + 1):
        u = rng.standard_normal((runs, DIM))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        x = y[:, None, :] + signs * (rho * u)[:, None, :]          # (N, k, d): the k points
        sq = np.einsum("nkd,nkd->nk", x, x)                        # projected radially onto X
        diff = x * (R / np.sqrt(np.maximum(sq, R * R)))[:, :, None] - centres
        f = 0.5 * mu * np.einsum("nkd,nkd->nk", diff, diff)        # noise-free losses (N, k)
        regret += f.mean(axis=1).sum()
        seen = np.clip(f + (c["noise"] * (2.0 * rng.random(runs) - 1.0))[:, None], -loss_cap,
                       loss_cap)
        loss = seen[:, 0] - seen[:, 1] if c["two"] else seen[:, 0]
        step = 1.0 / (c["mu_step"] * t) if c["mu_step"] > 0.0 else c["eta"]
        y -= (step * c["gain"] * loss)[:, None] * u
        y *= (cap / np.maximum(np.sqrt(np.einsum("nd,nd->n", y, y)), cap))[:, None]
    return regret / runs


def _np_root(a: np.ndarray, radius: float) -> np.ndarray:
    """The barrier's root r of ``a (R^2 - r^2) = 2 r``, kept strictly inside the ball."""
    return np.minimum(a * radius * radius / (1.0 + np.sqrt(1.0 + (a * radius) ** 2)), radius * _INSIDE)


def numpy_barrier(runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    """Saha-Tewari or Hazan-Levy in plain numpy; returns the mean regret."""
    rng = np.random.default_rng(seed)
    R, scale, eta, mu, cap = c["radius"], c["scale"], c["eta"], c["mu_agent"], c["loss_cap"]
    centres = _centres(rng, runs, R)
    x, totals, regret, r2 = np.zeros((runs, DIM)), np.zeros((runs, DIM)), 0.0, R * R
    for t in range(1, horizon + 1):
        u = rng.standard_normal((runs, DIM))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        sq, xu = np.einsum("nd,nd->n", x, x), np.einsum("nd,nd->n", x, u)
        s = r2 - sq                      # M = grad^2 R(x) + lam I = a^2 I + (b^2 - a^2) xx^T/|x|^2
        a = np.sqrt(2.0 / s + (eta * mu * t if c["hazan"] else 0.0))
        b = np.sqrt(a * a + 4.0 * sq / (s * s))
        k = 4.0 / (s * s * (a + b)) * xu
        y = np.clip(x + scale * (u / a[:, None] - (k / (a * b))[:, None] * x), -R, R)
        w = (DIM / scale) * (a[:, None] * u + k[:, None] * x)
        ysq = np.einsum("nd,nd->n", y, y)   # the env: y projected radially onto X, its loss
        diff = y * (R / np.sqrt(np.maximum(ysq, r2)))[:, None] - centres
        f = 0.5 * c["mu"] * np.einsum("nd,nd->n", diff, diff)
        regret += f.sum()
        loss = np.clip(f + c["noise"] * (2.0 * rng.random(runs) - 1.0), -cap, cap)
        totals += loss[:, None] * w - (mu * x if c["hazan"] else 0.0)
        norm = np.sqrt(np.einsum("nd,nd->n", totals, totals))
        r = _np_root(eta * norm, R)
        if c["hazan"]:  # Newton from above on mu t r + (2/eta) r/(R^2 - r^2) = |c|
            curv, live = mu * t, np.ones(runs, dtype=bool)
            r = np.minimum(norm / curv, r)
            for _ in range(c["iterations"]):
                gap = r2 - r * r
                phi = curv * r + (2.0 / eta) * r / gap - norm
                step = phi / (curv + (2.0 / eta) * (r2 + r * r) / (gap * gap))
                live &= (phi > 0.0) & (r - step < r)
                if not live.any():
                    break
                r = np.where(live, np.maximum(r - step, 0.0), r)
            r = np.minimum(r, R * _INSIDE)
        x = -(r / np.where(norm > 0.0, norm, 1.0))[:, None] * totals
    return regret / runs


# ----------------------------------------------------------------------------- the limits
@njit(cache=True, error_model="numpy")
def _limit(two, runs, horizon, rng, centres, radius, mu, noise, rho, mu_step, eta, gain, cap,
           loss_cap):  # pragma: no cover - compiled
    d = centres.shape[1]
    y, u, x1, x2 = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    r2, regret = radius * radius, 0.0
    for n in range(runs):
        y[:] = 0.0
        for t in range(1, horizon + 1):
            s = 0.0
            for j in range(d):  # act: a Gaussian row made unit, the points y + rho u, y - rho u
                u[j] = rng.standard_normal()
                s += u[j] * u[j]
            norm = math.sqrt(s)
            sq1, sq2 = 0.0, 0.0
            for j in range(d):
                u[j] /= norm
                step = rho * u[j]
                x1[j] = y[j] + step
                sq1 += x1[j] * x1[j]
                if two:
                    x2[j] = y[j] - step
                    sq2 += x2[j] * x2[j]
            # the env: the points projected radially onto X, their losses, one shared noise
            shrink1 = radius / math.sqrt(sq1) if sq1 > r2 else 1.0
            shrink2 = radius / math.sqrt(sq2) if sq2 > r2 else 1.0
            acc1, acc2 = 0.0, 0.0
            for j in range(d):
                e = x1[j] * shrink1 - centres[n, j]
                acc1 += e * e
                if two:
                    e = x2[j] * shrink2 - centres[n, j]
                    acc2 += e * e
            f1, f2 = 0.5 * mu * acc1, 0.5 * mu * acc2
            z = noise * (2.0 * rng.random() - 1.0)
            step = 1.0 / (mu_step * t) if mu_step > 0.0 else eta
            if two:  # the observation (f1 + z, f2 + z) clipped, their difference
                regret += (f1 + f2) / 2.0
                value = min(max(f1 + z, -loss_cap), loss_cap) \
                    - min(max(f2 + z, -loss_cap), loss_cap)
                scale = -step * gain
            else:    # the reward -(f1 + z) clipped
                regret += f1
                value = min(max(0.0 - (f1 + z), -loss_cap), loss_cap)
                scale = step * gain
            k = scale * value
            s = 0.0
            for j in range(d):  # the step and the projection onto (1 - xi) X
                y[j] += k * u[j]
                s += y[j] * y[j]
            if s > cap * cap:
                f = cap / math.sqrt(s)
                for j in range(d):
                    y[j] *= f
    return regret / runs


@njit(cache=True, error_model="numpy")
def _barrier_limit(hazan, runs, horizon, agent_rng, env_rng, centres, radius, mu, noise, scale, eta,
                   mu_agent, iterations, loss_cap):  # pragma: no cover - compiled
    d = centres.shape[1]
    x, u, y, w, tot = np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    r2, gain, regret = radius * radius, d / scale, 0.0
    for n in range(runs):
        x[:] = 0.0
        tot[:] = 0.0
        for t in range(1, horizon + 1):
            s = 0.0
            for j in range(d):  # act: a Gaussian row made unit, the point y = x + scale M^-1/2 u
                u[j] = agent_rng.standard_normal()
                s += u[j] * u[j]
            norm = math.sqrt(s)
            sq, xu = 0.0, 0.0
            for j in range(d):
                u[j] /= norm
                sq += x[j] * x[j]
                xu += x[j] * u[j]
            gap = r2 - sq
            a = math.sqrt(2.0 / gap + (eta * mu_agent * t if hazan else 0.0))
            b = math.sqrt(a * a + 4.0 * sq / (gap * gap))
            c = 4.0 / (gap * gap * (a + b))
            k_inv, k_half = c * xu / (a * b), c * xu
            ysq = 0.0
            for j in range(d):  # and w = (d / scale) M^1/2 u
                y[j] = min(max(x[j] + scale * (u[j] / a - k_inv * x[j]), -radius), radius)
                w[j] = gain * (a * u[j] + k_half * x[j])
                ysq += y[j] * y[j]
            shrink = radius / math.sqrt(ysq) if ysq > r2 else 1.0  # the env: y projected onto X
            acc = 0.0
            for j in range(d):
                e = y[j] * shrink - centres[n, j]
                acc += e * e
            f = 0.5 * mu * acc
            regret += f
            reward = 0.0 - (f + noise * (2.0 * env_rng.random() - 1.0))
            reward = min(max(reward, -loss_cap), loss_cap)   # observe: the reward clipped
            s = 0.0
            for j in range(d):  # the sum of g_s (- mu x_s) and its norm
                tot[j] -= reward * w[j] + mu_agent * x[j] if hazan else reward * w[j]
                s += tot[j] * tot[j]
            norm = math.sqrt(s)
            if hazan:  # the agent's Newton from above on the root of phi
                r = _hazan_levy_radius(norm, mu_agent * t, eta, radius, iterations)[0]
            else:
                r = _barrier_root(eta * norm, radius)
            factor = r / norm if norm > 0.0 else 0.0
            for j in range(d):  # the FTRL point -r S / |S|
                x[j] = -factor * tot[j]
    return regret / runs


def limit_agent(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    if agent in BARRIER:  # the agent's stream and the env's, as ldp-gym has them
        agent_rng, env_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
        centres = _centres(env_rng, runs, c["radius"])
        return _barrier_limit(c["hazan"], runs, horizon, agent_rng, env_rng, centres, c["radius"],
                              c["mu"], c["noise"], c["scale"], c["eta"], c["mu_agent"],
                              c["iterations"], c["loss_cap"])
    rng = np.random.default_rng(seed)
    centres = _centres(rng, runs, c["radius"])
    return _limit(c["two"], runs, horizon, rng, centres, c["radius"], c["mu"], c["noise"],
                  c["rho"], c["mu_step"], c["eta"], c["gain"], c["cap"], c["loss_cap"])


# ----------------------------------------------------------------------------- ldp-gym
def ldp_gym_agent(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    cls = AGENT[agent]
    res = ldp_gym.run(cls.test_env, {agent: cls}, horizon=horizon, n_runs=runs, seed=seed,
                      progress=False, env_kwargs={"dim": DIM})
    return float(res.regret[agent][:, -1].mean())


def main() -> None:
    args = yardstick_parser(__doc__, 60_000).parse_args()
    fns = (numpy_agent, limit_agent, ldp_gym_agent)
    for agent in AGENT:  # compile and warm up
        c = constants(agent, 50)
        for fn in fns:
            fn(agent, 2, 50, c)
    print(f"{args.runs} runs x {args.horizon} rounds, d = {DIM}; load average "
          f"{os.getloadavg()[0]:.2f}; best of {args.repeat}; CPU seconds (mean regret at T)")
    print(f"{'agent':<12}{'numpy':>19}{'limit':>19}{'ldp-gym':>19}{'x numpy':>9}{'% limit':>9}")
    for agent in AGENT:
        c = constants(agent, args.horizon)
        text, _ = yardstick_row(fns, args.repeat, agent, args.runs, args.horizon, c,
                                value=">7.2f")
        print(f"{agent:<12}{text}", flush=True)


if __name__ == "__main__":
    main()
