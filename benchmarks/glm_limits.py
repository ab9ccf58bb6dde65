"""The contextual agents through ``ldp_gym.run`` against two yardsticks, in one invocation.

For LDP-OLS (Han et al. 2021, Alg 1 with eq. 3-4; epsilon = 1, delta = 0.01), LinUCB
(non-private), LDP-LinUCB (Zheng et al. 2020, Alg 5) and LDP-GLOC (Zheng Alg 3), both at
epsilon = 1, delta = 0.01, and LDP-SGD (Han Alg 1 with eq. 5-6, the l2-ball mechanism;
epsilon = 1) on ``LDPLinearBandit-v0`` (contexts uniform on the sphere, identity link, uniform
reward noise), N runs of T rounds at (d, K) = (2, 10) and (20, 20), CPU seconds of:

* ``numpy``: the algorithm over runs as a user would write it in plain numpy, one vectorised
  step per round (LDP-OLS: the noised ``x x^T`` and ``r x`` summed, ``np.linalg.solve`` of the
  shifted system; LinUCB: the Sherman-Morrison inverse and the UCB scores by ``einsum``;
  LDP-LinUCB and LDP-GLOC: the noised statistics summed, ``np.linalg.inv`` of the shifted
  system for theta and the UCB width, GLOC's noised gradient step projected on the unit ball;
  LDP-SGD: the l2-ball mechanism over runs, without the direction drawn for a zero gradient).
  The numpy noise is not put on the mechanisms' grids;
* ``limit``: one numba function doing ldp-gym's arithmetic with the same draws (LDP-OLS and
  LinUCB: every arm's context and reward uniform drawn as the env draws them, every arm's mean
  and the regret, the Gaussian noise on the mechanism's grid, the same solver:
  ``glm_kernels._solve``). LDP-LinUCB and LDP-GLOC share one function, LDP-SGD has its own:
  run by run, one run's state in small arrays, they call ldp-gym's compiled pieces in its
  order (``glm_kernels``' choice, width, link and solver; the mechanisms' ``release_outer``,
  ``release_vector``, ``l2_ball`` and grid noise; the env's link, reward and sphere scaling),
  the agent reading the contexts rounded to float32 as in the observations. They skip the
  rewards of the arms not pulled, the input checks, the blocks and the message buffers. Per
  run they draw theta*, the first K contexts, then in each round the next round's K contexts,
  every arm's uniform and the agent's noise (d(d+1)/2 + d grid normals, + d for GLOC; l2 ball:
  d normals for the direction, two uniforms, d normals on the sphere). That is the draw order
  of ``ldp_gym/envs/glm.py`` as of commit 6cecdcf (reset: theta* (N, d), then contexts
  (N, K, d); a block: the next contexts (N, L, K, d), then every arm's uniform (N, L, K)) for
  one run and blocks of one round. Given the env's generator and the agent's noise streams'
  generators apart, they give bitwise the regret of one run of ``draw_block(1)`` and the
  agent's ``play_block`` (checked at (d, K, T) = (2, 10, 3000), (20, 20, 300), (5, 4, 1000),
  3 seeds each); here they draw everything from one generator;
* ``ldp-gym``: ``ldp_gym.run`` (the env draws blocks, the agent's compiled kernel plays them).

The yardsticks draw other streams than ldp-gym's, so they play other instances of the same
law: the mean regrets at T printed must agree within the noise of N runs (checked for
LDP-LinUCB, LDP-GLOC and LDP-SGD at both sizes, 400 runs, two sets of seeds: 23 of the 24
differences to ldp-gym within 1.8 standard errors of a difference, one at 2.4, LDP-LinUCB's
limit at d = 20, which two more seeds at 1000 runs put within 0.2).
Each figure is the best of ``--repeat`` timings (CPU time of this process, threads included);
the ratios ``ldp-gym / numpy`` (speed-up) and ``limit / ldp-gym`` (share of the limit) compare
figures of the same invocation, and ``d20/d2`` divides the per-step costs of ldp-gym at the
two sizes. Usage::

    python benchmarks/glm_limits.py [--runs 100] [--horizon 20000] [--repeat 3]
"""

from __future__ import annotations

import math
import os

import gymnasium as gym
import numpy as np
from mab_speed import yardstick_parser, yardstick_row  # benchmarks/ is the script's path
from numba import njit

import ldp_gym
from ldp_gym.agents import LDPGLOC, LDPOLS, LDPSGD, LDPLinUCB, LinUCB
from ldp_gym.agents.glm import LINK_CODES
from ldp_gym.agents.glm_kernels import _beta, _choose, _dot, _mean, _shift, _solve
from ldp_gym.envs.glm import _reward, _scale_factor, inverse_link
from ldp_gym.wrappers.mechanisms.compiled import (
    clip_l2_into,
    clip_scalar,
    l2_ball,
    release_outer,
    release_vector,
)
from ldp_gym.wrappers.mechanisms.noise import _grid_normals_into

NOISE = 0.1  # the env's default reward noise: uniform on [-0.1, 0.1] around the mean
SIZES = ((2, 10), (20, 20))


def constants(dim: int, k: int, horizon: int) -> dict:
    """The agents' constants for this instance, read from the agents themselves."""
    env = gym.make("LDPLinearBandit-v0", dim=dim, n_arms=k, max_episode_steps=horizon)
    ols = LDPOLS.from_env(env, epsilon=1.0, seed=0)
    m, u = ols.mechanism.parts["M"], ols.mechanism.parts["u"]
    ucb = LinUCB.from_env(env)
    return {"sd_m": m.sd, "grid_m": m.grid, "sd_u": u.sd, "grid_u": u.grid,
            "shift": ols.shift_coef, "reward_bound": ols.reward_bound,
            "ucb": np.array([ucb.noise_scale, ucb.D, ucb.reg, ucb.alpha]),
            **{name: ldp_constants(env, name) for name in ("LDP-LinUCB", "LDP-GLOC", "LDP-SGD")}}


def ldp_constants(env: gym.Env, agent: str) -> dict:
    """LDP-LinUCB's, LDP-GLOC's or LDP-SGD's constants, read from the agent and the env's core."""
    cls, kwargs = AGENT[agent]
    a = cls.from_env(env, seed=0, **kwargs)
    m, core = a.mechanism, env.unwrapped.core
    c = {"link": LINK_CODES[a.link], "g": a.g, "noise": float(core.noise),
         "clip": (float(a.context_bound), float(a.reward_bound))}
    if agent == "LDP-SGD":
        return {**c, "ball": (m.radius, m.output_radius, m.p_keep_side), "step": float(a.step_size)}
    zeta = a.step / math.sqrt(a.horizon) if agent == "LDP-GLOC" else 0.0  # gloc_rounds' zeta
    return {**c, "parts": np.array([[p.bound, p.sd, p.grid] for p in m.parts.values()]),
            "beta_kind": int(a.beta_kind), "beta": np.asarray(a.beta_params, np.float64),
            "shift": float(a.shift_coef), "zeta": zeta}


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


def _unit_rows(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _numpy_beta(kind: int, p: np.ndarray, t: int) -> float:
    """LDP-LinUCB's (kind 1) or LDP-GLOC's (2) width coefficient after t rounds."""
    t = max(t, 1)
    if kind == 1:
        ups = p[1] * math.sqrt(t)
        return 2 * p[0] * math.sqrt(p[2] * p[3]) + (math.sqrt(3 * ups)
                                                    + p[0] * math.sqrt(p[2] * t / ups)) * p[2] * p[3]
    return p[0] * math.sqrt(math.sqrt(p[1] * t))


def numpy_ucb(agent: str, runs: int, horizon: int, dim: int, k: int, c: dict,
              seed: int = 0) -> float:
    """LDP-LinUCB or LDP-GLOC in plain numpy; returns the mean regret."""
    p, gloc = c[agent], agent == "LDP-GLOC"
    (_, sd_m, _), (_, sd_v, _) = p["parts"][:2]
    sd_g = p["parts"][2, 1] if gloc else 0.0
    rng = np.random.default_rng(seed)
    star = _theta_star(rng, runs, dim)
    rows, eye, regret, cr = np.arange(runs), np.eye(dim), 0.0, p["clip"][1]
    V, u = np.zeros((runs, dim, dim)), np.zeros((runs, dim))
    theta, theta_hat = np.zeros((runs, dim)), np.zeros((runs, dim))
    inv = np.repeat(eye[None], runs, axis=0)
    upper = np.triu_indices(dim)
    for t in range(horizon):
        x = _unit_rows(rng, (runs, k, dim))
        means = np.einsum("nkd,nd->nk", x, star)
        width = np.sqrt(np.maximum(((x @ inv) * x).sum(axis=2), 0.0))
        arm = (np.einsum("nkd,nd->nk", x, theta) + _numpy_beta(p["beta_kind"], p["beta"], t)
               * width).argmax(axis=1)
        xa = x[rows, arm]
        r = means[rows, arm] + p["noise"] * (2 * rng.random(runs) - 1)
        regret += (means.max(axis=1) - means[rows, arm]).sum()
        r = np.clip(r, -cr, cr)
        w = np.zeros((runs, dim, dim))  # symmetric noise, the upper triangle mirrored
        w[:, upper[0], upper[1]] = sd_m * rng.standard_normal((runs, len(upper[0])))
        V += xa[:, :, None] * xa[:, None, :] + w + np.triu(w, 1).transpose(0, 2, 1)
        target = (xa * theta_hat).sum(axis=1) if gloc else r  # GLOC regresses z = x^T theta^
        u += target[:, None] * xa + sd_v * rng.standard_normal((runs, dim))
        if gloc:  # the noised gradient step, projected on the unit ball
            grad = (p["g"](np.clip(target, -50, 50)) - r)[:, None] * xa
            theta_hat -= p["zeta"] * (grad + sd_g * rng.standard_normal((runs, dim)))
            theta_hat /= np.maximum(1.0, np.linalg.norm(theta_hat, axis=1))[:, None]
        inv = np.linalg.inv(V + p["shift"] * math.sqrt(t + 1) * eye)
        theta = np.einsum("nde,ne->nd", inv, u)
    return regret / runs


def numpy_sgd(agent: str, runs: int, horizon: int, dim: int, k: int, c: dict,
              seed: int = 0) -> float:
    """LDP-SGD in plain numpy, the l2-ball mechanism over runs; returns the mean regret."""
    p = c[agent]
    radius, out_radius, p_keep = p["ball"]
    rng = np.random.default_rng(seed)
    star = _theta_star(rng, runs, dim)
    rows, regret, cr = np.arange(runs), 0.0, p["clip"][1]
    theta = np.zeros((runs, dim))
    for t in range(horizon):
        x = _unit_rows(rng, (runs, k, dim))
        means = np.einsum("nkd,nd->nk", x, star)
        arm = np.einsum("nkd,nd->nk", x, theta).argmax(axis=1)
        xa = x[rows, arm]
        r = means[rows, arm] + p["noise"] * (2 * rng.random(runs) - 1)
        regret += (means.max(axis=1) - means[rows, arm]).sum()
        r = np.clip(r, -cr, cr)
        grad = (p["g"](np.clip((xa * theta).sum(axis=1), -50, 50)) - r)[:, None] * xa
        norm = np.linalg.norm(grad, axis=1)
        grad *= np.minimum(1.0, radius / np.maximum(norm, 1e-300))[:, None]  # clipped to R
        norm = np.minimum(norm, radius)
        sign = np.where(rng.random(runs) < 0.5 + norm / (2 * radius), 1.0, -1.0)
        side = np.where(rng.random(runs) < p_keep, 1.0, -1.0)
        z = _unit_rows(rng, (runs, dim))  # on the hemisphere facing sign * side * grad
        facing = np.where((z * grad).sum(axis=1) * sign * side < 0, -1.0, 1.0)
        theta -= (p["step"] / (t + 1) * out_radius) * facing[:, None] * z
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


@njit(cache=True, inline="always")
def _sphere_row(rng, x, row):  # pragma: no cover - compiled
    """Row ``row`` of x: standard normals of rng, put on the unit sphere as the env does."""
    d = x.shape[1]
    sq = 0.0
    for j in range(d):
        x[row, j] = rng.standard_normal()
        sq += x[row, j] * x[row, j]
    f = _scale_factor(sq, 0, 0.0, d)
    for j in range(d):
        x[row, j] *= f


@njit(cache=True, inline="always")
def _env_start(rng, star, x):  # pragma: no cover - compiled
    """A run's reset: theta* on the sphere, then the first round's K contexts (rows 0..K-1)."""
    _sphere_row(rng, star, 0)
    for a in range(x.shape[0] // 2):
        _sphere_row(rng, x, a)


@njit(cache=True, inline="always")
def _env_round(rng, star, x, now, link, feats, means, us):  # pragma: no cover - compiled
    """The env's round of one run on the contexts in rows ``now``... of x (2K, d): the agent's
    float32 view of them into feats, every arm's mean, then the draws: the next round's
    contexts into the other K rows and every arm's uniform into us. Returns the best mean."""
    k, d = means.shape[0], x.shape[1]
    best = -np.inf
    for a in range(k):
        z = 0.0
        for j in range(d):
            feats[a, j] = np.float64(np.float32(x[now + a, j]))
            z += x[now + a, j] * star[0, j]
        means[a] = inverse_link(z, link)
        best = max(best, means[a])
    for a in range(k):
        _sphere_row(rng, x, k - now + a)
    for a in range(k):
        us[a] = rng.random()
    return best


@njit(cache=True, error_model="numpy")
def _ucb_limit(gloc, runs, horizon, k, d, rng_env, rng_m, rng_v, rng_g, link, noise, clip,
               parts, beta_kind, beta_params, shift_coef, zeta):  # pragma: no cover - compiled
    x, star, feats = np.empty((2 * k, d)), np.empty((1, d)), np.empty((k, d))
    means, us = np.empty(k), np.empty(k)
    V, inv, work = np.empty((d, d)), np.empty((d, d)), np.empty((2, d, d))
    u, theta, theta_hat = np.empty(d), np.empty(d), np.empty(d)
    xa, v, msg_m, msg_v, msg_g = np.empty(d), np.empty(d), np.empty((d, d)), np.empty(d), \
        np.empty(d)
    noise_m, noise_v, noise_g = np.empty(d * (d + 1) // 2), np.empty(d), np.empty(d)
    total = 0.0
    for _ in range(runs):
        _env_start(rng_env, star, x)
        V[:, :], inv[:, :], u[:], theta[:], theta_hat[:] = 0.0, 0.0, 0.0, 0.0, 0.0
        for i in range(d):
            inv[i, i] = 1.0
        regret = 0.0
        for t in range(horizon):
            best = _env_round(rng_env, star, x, (t % 2) * k, link, feats, means, us)
            arm = _choose(feats, theta, inv, _beta(beta_kind, beta_params, t), True)
            regret += best - means[arm]
            # the user: its clipped data and the releases
            for j in range(d):
                xa[j] = feats[arm, j]
            clip_l2_into(xa, clip[0], xa)
            y = clip_scalar(_reward(means[arm], us[arm], link, noise), clip[1])
            _grid_normals_into(rng_m, parts[0, 1] / parts[0, 2], parts[0, 2], noise_m)
            release_outer(xa, parts[0, 0], noise_m, parts[0, 2], msg_m)
            z = _dot(xa, theta_hat)
            for j in range(d):
                v[j] = (z if gloc else y) * xa[j]
            _grid_normals_into(rng_v, parts[1, 1] / parts[1, 2], parts[1, 2], noise_v)
            release_vector(v, parts[1, 0], noise_v, parts[1, 2], msg_v)
            if gloc:
                resid = _mean(z, link) - y
                for j in range(d):
                    v[j] = resid * xa[j]
                _grid_normals_into(rng_g, parts[2, 1] / parts[2, 2], parts[2, 2], noise_g)
                release_vector(v, parts[2, 0], noise_g, parts[2, 2], msg_g)
            # the server
            for i in range(d):
                for j in range(d):
                    V[i, j] += msg_m[i, j]
                u[i] += msg_v[i]
            if gloc:
                for j in range(d):
                    v[j] = theta_hat[j] - zeta * msg_g[j]
                clip_l2_into(v, 1.0, theta_hat)
            _solve(V, u, _shift(shift_coef, t + 1), inv, theta, work)
        total += regret
    return total / runs


@njit(cache=True, error_model="numpy")
def _sgd_limit(runs, horizon, k, d, rng_env, rng_dir, rng_sign, rng_side, rng_sphere, link,
               noise, clip, ball, step):  # pragma: no cover - compiled
    radius, out_radius, p_keep = ball
    x, star, feats = np.empty((2 * k, d)), np.empty((1, d)), np.empty((k, d))
    means, us, no_inverse = np.empty(k), np.empty(k), np.empty((d, d))
    theta, xa, grad, kept, msg = np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    direction, sphere = np.empty(d), np.empty(d)
    total = 0.0
    for _ in range(runs):
        _env_start(rng_env, star, x)
        theta[:] = 0.0
        regret = 0.0
        for t in range(horizon):
            best = _env_round(rng_env, star, x, (t % 2) * k, link, feats, means, us)
            arm = _choose(feats, theta, no_inverse, 0.0, False)
            regret += best - means[arm]
            for j in range(d):
                xa[j] = feats[arm, j]
            clip_l2_into(xa, clip[0], xa)
            y = clip_scalar(_reward(means[arm], us[arm], link, noise), clip[1])
            resid = _mean(_dot(xa, theta), link) - y
            for j in range(d):
                grad[j] = resid * xa[j]
                direction[j] = rng_dir.standard_normal()
            u_sign, u_side = rng_sign.random(), rng_side.random()
            for j in range(d):
                sphere[j] = rng_sphere.standard_normal()
            l2_ball(grad, radius, out_radius, p_keep, direction, u_sign, u_side, sphere, kept, msg)
            eta = step / (t + 1)
            for j in range(d):
                theta[j] = theta[j] - eta * msg[j]
        total += regret
    return total / runs


def limit_ucb(agent: str, runs: int, horizon: int, dim: int, k: int, c: dict,
              seed: int = 0) -> float:
    p, rng = c[agent], np.random.default_rng(seed)
    return _ucb_limit(agent == "LDP-GLOC", runs, horizon, k, dim, rng, rng, rng, rng, p["link"],
                      p["noise"], p["clip"], p["parts"], p["beta_kind"], p["beta"], p["shift"],
                      p["zeta"])


def limit_sgd(agent: str, runs: int, horizon: int, dim: int, k: int, c: dict,
              seed: int = 0) -> float:
    p, rng = c[agent], np.random.default_rng(seed)
    return _sgd_limit(runs, horizon, k, dim, rng, rng, rng, rng, rng, p["link"], p["noise"],
                      p["clip"], p["ball"], p["step"])


# ----------------------------------------------------------------------------- ldp-gym
AGENT = {"LDP-OLS": (LDPOLS, {"epsilon": 1.0}), "LinUCB": (LinUCB, {}),
         "LDP-LinUCB": (LDPLinUCB, {"epsilon": 1.0}), "LDP-GLOC": (LDPGLOC, {"epsilon": 1.0}),
         "LDP-SGD": (LDPSGD, {"epsilon": 1.0})}
#: each agent's yardsticks: numpy and limit
YARDSTICKS = {"LDP-OLS": (numpy_agent, limit_agent), "LinUCB": (numpy_agent, limit_agent),
              "LDP-LinUCB": (numpy_ucb, limit_ucb), "LDP-GLOC": (numpy_ucb, limit_ucb),
              "LDP-SGD": (numpy_sgd, limit_sgd)}


def ldp_gym_agent(agent: str, runs: int, horizon: int, dim: int, k: int, c: dict,
                  seed: int = 0) -> float:
    res = ldp_gym.run("LDPLinearBandit-v0", {agent: AGENT[agent]}, horizon=horizon,
                      n_runs=runs, seed=seed, progress=False,
                      env_kwargs={"dim": dim, "n_arms": k})
    return float(res.regret[agent][:, -1].mean())


def main() -> None:
    args = yardstick_parser(__doc__, 20_000, "rounds at d = 2; a tenth of them at d = 20").parse_args()
    print(f"{args.runs} runs; T = {args.horizon} at d = 2, {args.horizon // 10} at d = 20; load "
          f"average {os.getloadavg()[0]:.2f}; best of {args.repeat}; CPU seconds (mean regret "
          f"at T)")
    print(f"{'agent':<11}{'d':>3}{'K':>4}{'numpy':>17}{'limit':>17}{'ldp-gym':>17}"
          f"{'x numpy':>9}{'% limit':>9}{'d20/d2':>8}")
    for agent in AGENT:
        per_step = []
        for dim, k in SIZES:
            horizon = args.horizon if dim == 2 else args.horizon // 10
            c = constants(dim, k, horizon)
            fns = (*YARDSTICKS[agent], ldp_gym_agent)
            for fn in fns:  # compile and warm up
                fn(agent, 2, 50, dim, k, c)
            text, seconds = yardstick_row(fns, args.repeat, agent, args.runs, horizon, dim, k, c)
            per_step.append(seconds[2] / horizon)
            ratio = f"{per_step[1] / per_step[0]:>8.1f}" if len(per_step) == 2 else ""
            print(f"{agent:<11}{dim:>3}{k:>4}{text}{ratio}", flush=True)


if __name__ == "__main__":
    main()
