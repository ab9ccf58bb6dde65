"""The contextual agents through ``ldp_gym.run`` against two yardsticks, in one invocation.

For LDP-OLS (Han et al. 2021, Alg 1 with eq. 3-4; epsilon = 1, delta = 0.01) and LinUCB on
``LDPLinearBandit-v0`` (contexts uniform on the sphere, identity link, uniform reward noise),
N runs of T rounds at (d, K) = (2, 10) and (20, 20), CPU seconds of:

* ``numpy``: the algorithm over runs as a user would write it in plain numpy, one vectorised
  step per round (LDP-OLS: the noised ``x x^T`` and ``r x`` summed, ``np.linalg.solve`` of the
  shifted system; LinUCB: the Sherman-Morrison inverse and the UCB scores by ``einsum``);
* ``limit``: one numba function doing ldp-gym's arithmetic with the same draws (every arm's
  context and reward uniform drawn as the env draws them, every arm's mean and the regret,
  the Gaussian noise on the mechanism's grid, the same solver: ``glm_kernels._solve``);
* ``ldp-gym``: ``ldp_gym.run`` (the env draws blocks, the agent's compiled kernel plays them).

Each figure is the best of ``--repeat`` timings (CPU time of this process, threads included);
the ratios ``ldp-gym / numpy`` (speed-up) and ``limit / ldp-gym`` (share of the limit) compare
figures of the same invocation, and ``d20/d2`` divides the per-step costs of ldp-gym at the
two sizes. Usage::

    python benchmarks/glm_limits.py [--runs 100] [--horizon 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import os

import gymnasium as gym
import numpy as np
from mab_speed import yardstick_row  # the shared table row (benchmarks/ is the script's path)
from numba import njit

import ldp_gym
from ldp_gym.agents import LDPOLS, LinUCB
from ldp_gym.agents.glm_kernels import _choose, _solve

NOISE = 0.1  # the env's default reward noise: uniform on [-0.1, 0.1] around the mean
SIZES = ((2, 10), (20, 20))


def constants(dim: int, k: int, horizon: int) -> dict:
    """LDP-OLS's and LinUCB's constants for this instance, read from the agents themselves."""
    env = gym.make("LDPLinearBandit-v0", dim=dim, n_arms=k, max_episode_steps=horizon)
    ols = LDPOLS.from_env(env, epsilon=1.0, seed=0)
    m, u = ols.mechanism.parts["M"], ols.mechanism.parts["u"]
    ucb = LinUCB.from_env(env)
    return {"sd_m": m.sd, "grid_m": m.grid, "sd_u": u.sd, "grid_u": u.grid,
            "shift": ols.shift_coef, "reward_bound": ols.reward_bound,
            "ucb": np.array([ucb.noise_scale, ucb.D, ucb.reg, ucb.alpha])}


def _theta_star(rng: np.random.Generator, runs: int, dim: int) -> np.ndarray:
    theta = rng.standard_normal((runs, dim))
    return theta / np.linalg.norm(theta, axis=1, keepdims=True)


# ----------------------------------------------------------------------------- numpy yardstick
def numpy_agent(agent: str, runs: int, horizon: int, dim: int, k: int, c: dict,
                seed: int = 0) -> float:
    """The agent in plain numpy; returns the mean regret (so the work cannot be skipped)."""
    rng = np.random.default_rng(seed)
    star = _theta_star(rng, runs, dim)
    rows, eye, regret = np.arange(runs), np.eye(dim), 0.0
    V, U, theta = np.zeros((runs, dim, dim)), np.zeros((runs, dim)), np.zeros((runs, dim))
    inv = np.repeat(eye[None], runs, axis=0)
    upper = np.triu_indices(dim)
    for t in range(horizon):
        x = rng.standard_normal((runs, k, dim))
        x /= np.linalg.norm(x, axis=2, keepdims=True)
        means = np.einsum("nkd,nd->nk", x, star)
        score = np.einsum("nkd,nd->nk", x, theta)
        if agent == "LinUCB":
            p = c["ucb"]
            beta = p[0] * math.sqrt(p[1] * math.log((1 + t / p[2]) / p[3])) + math.sqrt(p[2])
            score = score + beta * np.sqrt(np.maximum(np.einsum("nkd,nde,nke->nk", x, inv, x), 0))
        arm = score.argmax(axis=1)
        xa = x[rows, arm]
        r = means[rows, arm] + NOISE * (2 * rng.random(runs) - 1)
        regret += (means.max(axis=1) - means[rows, arm]).sum()
        if agent == "LinUCB":
            vx = np.einsum("nde,ne->nd", inv, xa)
            inv -= vx[:, :, None] * vx[:, None, :] / (1 + np.einsum("nd,nd->n", xa, vx))[:, None,
                                                                                        None]
            U += r[:, None] * xa
            theta = np.einsum("nde,ne->nd", inv, U)
            continue
        r = np.clip(r, -c["reward_bound"], c["reward_bound"])
        w = np.zeros((runs, dim, dim))  # symmetric noise, the upper triangle mirrored
        w[:, upper[0], upper[1]] = c["sd_m"] * rng.standard_normal((runs, len(upper[0])))
        w = w + np.triu(w, 1).transpose(0, 2, 1)
        V += xa[:, :, None] * xa[:, None, :] + w
        U += r[:, None] * xa + c["sd_u"] * rng.standard_normal((runs, dim))
        theta = np.linalg.solve(V + c["shift"] * math.sqrt(t + 1) * eye, U[:, :, None])[:, :, 0]
    return regret / runs


# ----------------------------------------------------------------------------- the limit
@njit(cache=True, error_model="numpy")
def _limit(ucb, runs, horizon, dim, k, rng, star, sd_m, grid_m, sd_u, grid_u, shift,
           reward_bound, ucb_params):  # pragma: no cover - compiled
    V, U = np.zeros((runs, dim, dim)), np.zeros((runs, dim))
    theta = np.zeros((runs, dim))
    inv = np.zeros((runs, dim, dim)) if ucb else np.zeros((runs, 0, 0))
    for n in range(runs):
        for i in range(dim):
            if ucb:
                inv[n, i, i] = 1.0 / ucb_params[2]
    x, means, us = np.empty((k, dim)), np.empty(k), np.empty(k)
    vx, work = np.empty(dim), np.empty((2, dim, dim))
    regret = 0.0
    for t in range(horizon):
        for n in range(runs):
            for a in range(k):  # the env: every arm's context on the sphere, and its mean
                sq = 0.0
                for j in range(dim):
                    x[a, j] = rng.standard_normal()
                    sq += x[a, j] * x[a, j]
                norm, mean = math.sqrt(sq), 0.0
                for j in range(dim):
                    x[a, j] /= norm
                    mean += x[a, j] * star[n, j]
                means[a] = mean
            best = means.max()
            for a in range(k):   # every arm's reward uniform, as the env draws them
                us[a] = rng.random()
            beta = 0.0
            if ucb:
                p = ucb_params
                beta = p[0] * math.sqrt(p[1] * math.log((1.0 + t / p[2]) / p[3])) \
                    + math.sqrt(p[2])
            arm = _choose(x, theta[n], inv[n], beta, ucb)
            r = means[arm] + NOISE * (2.0 * us[arm] - 1.0)
            regret += best - means[arm]
            xa = x[arm]
            if ucb:  # Sherman-Morrison
                for i in range(dim):
                    s = 0.0
                    for j in range(dim):
                        s += inv[n, i, j] * xa[j]
                    vx[i] = s
                den = 1.0
                for i in range(dim):
                    den += xa[i] * vx[i]
                for i in range(dim):
                    for j in range(dim):
                        inv[n, i, j] -= vx[i] * vx[j] / den
                    U[n, i] += r * xa[i]
                for i in range(dim):
                    s = 0.0
                    for j in range(dim):
                        s += inv[n, i, j] * U[n, j]
                    theta[n, i] = s
                continue
            r = min(max(r, -reward_bound), reward_bound)
            for i in range(dim):  # x x^T + W and r x + xi on the grids, folded in
                for j in range(i, dim):
                    w = np.rint(rng.standard_normal() * (sd_m / grid_m)) * grid_m
                    v = np.rint(xa[i] * xa[j] / grid_m) * grid_m + w
                    V[n, i, j] += v
                    if j != i:
                        V[n, j, i] += v
                xi = np.rint(rng.standard_normal() * (sd_u / grid_u)) * grid_u
                U[n, i] += np.rint(r * xa[i] / grid_u) * grid_u + xi
            _solve(V[n], U[n], shift * math.sqrt(t + 1.0), inv[n], theta[n], work)
    return regret / runs


def limit_agent(agent: str, runs: int, horizon: int, dim: int, k: int, c: dict,
                seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    star = _theta_star(rng, runs, dim)
    return _limit(agent == "LinUCB", runs, horizon, dim, k, rng, star, c["sd_m"], c["grid_m"],
                  c["sd_u"], c["grid_u"], c["shift"], c["reward_bound"], c["ucb"])


# ----------------------------------------------------------------------------- ldp-gym
AGENT = {"LDP-OLS": (LDPOLS, {"epsilon": 1.0}), "LinUCB": (LinUCB, {})}


def ldp_gym_agent(agent: str, runs: int, horizon: int, dim: int, k: int, c: dict,
                  seed: int = 0) -> float:
    res = ldp_gym.run("LDPLinearBandit-v0", {agent: AGENT[agent]}, horizon=horizon,
                      n_runs=runs, seed=seed, progress=False,
                      env_kwargs={"dim": dim, "n_arms": k})
    return float(res.regret[agent][:, -1].mean())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--horizon", type=int, default=20_000,
                   help="rounds at d = 2; a tenth of them at d = 20")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    print(f"{args.runs} runs; T = {args.horizon} at d = 2, {args.horizon // 10} at d = 20; load "
          f"average {os.getloadavg()[0]:.2f}; best of {args.repeat}; CPU seconds (mean regret "
          f"at T)")
    print(f"{'agent':<9}{'d':>3}{'K':>4}{'numpy':>17}{'limit':>17}{'ldp-gym':>17}"
          f"{'x numpy':>9}{'% limit':>9}{'d20/d2':>8}")
    for agent in AGENT:
        per_step = []
        for dim, k in SIZES:
            horizon = args.horizon if dim == 2 else args.horizon // 10
            c = constants(dim, k, horizon)
            for fn in (numpy_agent, limit_agent, ldp_gym_agent):  # compile and warm up
                fn(agent, 2, 50, dim, k, c)
            text, seconds = yardstick_row((numpy_agent, limit_agent, ldp_gym_agent),
                                          args.repeat, agent, args.runs, horizon, dim, k, c)
            per_step.append(seconds[2] / horizon)
            ratio = f"{per_step[1] / per_step[0]:>8.1f}" if len(per_step) == 2 else ""
            print(f"{agent:<9}{dim:>3}{k:>4}{text}{ratio}", flush=True)


if __name__ == "__main__":
    main()
