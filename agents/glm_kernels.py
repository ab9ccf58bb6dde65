"""Compiled rounds of the LDP contextual agents (numba), for blocks of rounds drawn ahead.

Each kernel plays ``L`` consecutive rounds of ``N`` runs in one call: the
user's decision, the user's clipped and noised message, the server's update,
exactly as the agents' per-round methods in :mod:`ldp_gym.agents.glm` do
(those are the reference; ``tests/test_glm_kernels.py`` checks that both
choose the same actions and reach the same state from the same seed). The
noise is drawn beforehand by the agents' own mechanisms (``draws``: the very
numbers the per-round calls would have added, from the same streams, already on
the float-safe grid) and the kernels add it to inputs transformed by the
mechanisms' compiled transforms (:mod:`ldp_gym.wrappers.compiled`), so the
calibration, validation and auditing stay with the mechanisms. The exploration
coefficients and regularisers per round are computed by the agents too (arrays
of shape (N, L)).

Arrays: ``obs`` (N, L + 1, K d) float32 (the env's observations), ``rewards``
(N, L, K) (every arm's reward; the chosen one is read), server state
arrays updated in place, ``actions`` (N, L) written.

User-side code runs the same operations for every input (no data-dependent
loop; clipping is a multiplication by ``min(1, bound / ||x||)``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ldp_gym.envs.glm import inverse_link
from ldp_gym.wrappers.compiled import clip_l2_into as _clip
from ldp_gym.wrappers.compiled import snap_add

__all__ = ["gloc_rounds", "multi_ols_rounds", "multi_sgd_rounds", "regression_rounds",
           "sgd_rounds"]



@njit(cache=True, nogil=True, error_model="numpy")
def _mean(z, link):
    """The link's mean with the margin clipped to +-50 (as ``ContextualAgent.mean``)."""
    return inverse_link(min(max(z, -50.0), 50.0), link)


@njit(cache=True, nogil=True, error_model="numpy")
def _dot(a, b):
    s = 0.0
    for j in range(a.shape[0]):
        s += a[j] * b[j]
    return s


@njit(cache=True, nogil=True, error_model="numpy")
def _choose(obs_row, theta, inv, beta, ucb, feats):
    """Fill ``feats`` (K, D) from the observation: the K contexts (single parameter), or the
    block contexts ``x (x) e_k`` of the one context (multi parameter, D = K d, as
    ``ContextualAgent.features``); return argmax of ``x^T theta`` (+ ``beta ||x||_inv`` if
    ucb), first index on ties (as ``np.argmax``)."""
    k_arms, d = feats.shape
    width = obs_row.shape[0]
    if width == k_arms * d:
        for k in range(k_arms):
            for j in range(d):
                feats[k, j] = np.float64(obs_row[k * d + j])
    else:  # block contexts
        feats[:, :] = 0.0
        for k in range(k_arms):
            for j in range(width):
                feats[k, k * width + j] = np.float64(obs_row[j])
    best, arm = -np.inf, 0
    for k in range(k_arms):
        score = _dot(feats[k], theta)
        if ucb:
            quad = 0.0
            for i in range(d):
                for j in range(d):
                    quad += feats[k, i] * inv[i, j] * feats[k, j]
            score += beta * math.sqrt(max(quad, 0.0))
        if score > best:
            best, arm = score, k
    return arm


@njit(cache=True, nogil=True, error_model="numpy")
def _add_outer(V, x, noise, grid):
    """``V += x x^T + W`` (the float-safe release of ``GaussianStatistics.outer``): the upper
    triangle (row-major) snapped to ``grid`` plus its drawn grid ``noise``, mirrored."""
    d = x.shape[0]
    idx = 0
    for i in range(d):
        for j in range(i, d):
            val = snap_add(x[i] * x[j], noise[idx], grid)
            V[i, j] += val
            if j != i:
                V[j, i] += val
            idx += 1


@njit(cache=True, nogil=True, error_model="numpy")
def _add_noised(u, v, bound, noise, grid, tmp):
    """``u += snap(clip(v, bound)) + noise`` (the release of ``GaussianStatistics.vector``)."""
    _clip(v, bound, tmp)
    for j in range(u.shape[0]):
        u[j] += snap_add(tmp[j], noise[j], grid)


@njit(cache=True, nogil=True, error_model="numpy")
def _solve(V, u, shift, inv, theta):
    """``inv = (V + shift I)^-1`` (closed form for d <= 2, as ``small_inverse``), ``theta = inv u``."""
    d = V.shape[0]
    if d == 1:
        inv[0, 0] = 1.0 / (V[0, 0] + shift)
    elif d == 2:
        p, q, r, s = V[0, 0] + shift, V[0, 1], V[1, 0], V[1, 1] + shift
        det = p * s - q * r
        inv[0, 0], inv[0, 1], inv[1, 0], inv[1, 1] = s / det, -q / det, -r / det, p / det
    else:
        a = V.copy()
        for i in range(d):
            a[i, i] += shift
        inv[:, :] = np.linalg.inv(a)
    for i in range(d):
        theta[i] = _dot(inv[i], u)


@njit(cache=True, nogil=True, error_model="numpy")
def regression_rounds(obs, rewards, context_bound, reward_bound, g_m, grid_m, g_u, grid_u, beta,
                      shift, ucb, V, u, theta, inv, actions):
    """LDP-OLS (Han Alg 1, eq. 3-4) and LDP-LinUCB (Zheng Alg 5): the user plays greedily (or
    by UCB with ``beta``), sends ``x x^T + W`` and ``r x + xi``; the server sums them and solves
    with the regulariser ``shift`` of the round."""
    n_runs, length, k_arms = rewards.shape
    d = theta.shape[1]
    for n in range(n_runs):
        feats, xc, x2, v, tmp = (np.empty((k_arms, d)), np.empty(d), np.empty(d), np.empty(d),
                                 np.empty(d))
        for s in range(length):
            arm = _choose(obs[n, s], theta[n], inv[n], beta[n, s], ucb, feats)
            actions[n, s] = arm
            _clip(feats[arm], context_bound, xc)  # the agent's clipping
            r = min(max(rewards[n, s, arm], -reward_bound), reward_bound)
            _clip(xc, context_bound, x2)  # the mechanism's
            _add_outer(V[n], x2, g_m[s, n], grid_m)
            for j in range(d):
                v[j] = r * xc[j]
            _add_noised(u[n], v, reward_bound * context_bound, g_u[s, n], grid_u, tmp)
            _solve(V[n], u[n], shift[n, s], inv[n], theta[n])


@njit(cache=True, nogil=True, error_model="numpy")
def gloc_rounds(obs, rewards, context_bound, reward_bound, link, g_max, g_m, grid_m, g_zx, grid_zx,
                g_grad, grid_grad, beta, shift, zeta, V, u, theta, inv, theta_hat, actions):
    """LDP-GLOC (Zheng Alg 3): UCB decision, the user sends ``x x^T + B``, ``z x + xi`` and the
    noised gradient at ``theta^``; the server projects ``theta^ - zeta grad`` on the unit ball."""
    n_runs, length, k_arms = rewards.shape
    d = theta.shape[1]
    for n in range(n_runs):
        feats, xc, x2, v, tmp = (np.empty((k_arms, d)), np.empty(d), np.empty(d), np.empty(d),
                                 np.empty(d))
        grad = np.zeros(d)
        for s in range(length):
            arm = _choose(obs[n, s], theta[n], inv[n], beta[n, s], True, feats)
            actions[n, s] = arm
            _clip(feats[arm], context_bound, xc)
            y = min(max(rewards[n, s, arm], -reward_bound), reward_bound)
            z = _dot(xc, theta_hat[n])
            resid = _mean(z, link) - y
            _clip(xc, context_bound, x2)
            _add_outer(V[n], x2, g_m[s, n], grid_m)
            for j in range(d):
                v[j] = z * xc[j]
            _add_noised(u[n], v, context_bound * context_bound, g_zx[s, n], grid_zx, tmp)
            for j in range(d):
                v[j] = resid * xc[j]
                grad[j] = 0.0
            _add_noised(grad, v, (g_max + reward_bound) * context_bound, g_grad[s, n], grid_grad,
                        tmp)
            for j in range(d):
                v[j] = theta_hat[n, j] - zeta * grad[j]
            _clip(v, 1.0, theta_hat[n])
            _solve(V[n], u[n], shift[n, s], inv[n], theta[n])


@njit(cache=True, nogil=True, error_model="numpy")
def _l2_ball(x, radius, output_radius, p_keep_side, direction, u_sign, u_side, z, out):
    """Duchi's l2-ball mechanism on one vector with its drawn randomness (as
    ``L2BallMechanism.__call__``): ``out`` is the report."""
    d = x.shape[0]
    xc = np.empty(d)
    _clip(x, radius, xc)
    norm = math.sqrt(_dot(xc, xc))
    target = np.empty(d)
    for j in range(d):
        target[j] = xc[j] / max(norm, 1e-300) if norm > 0 else direction[j]
    dnorm = math.sqrt(_dot(target, target))
    p_plus = min(max(0.5 + norm / (2.0 * radius), 0.0), 1.0)
    sign = 1.0 if u_sign < p_plus else -1.0
    side = 1.0 if u_side < p_keep_side else -1.0
    znorm = math.sqrt(_dot(z, z))
    proj = 0.0
    for j in range(d):
        target[j] = target[j] / dnorm * (sign * side)
        out[j] = z[j] / znorm
        proj += out[j] * target[j]
    flip = -1.0 if proj < 0 else 1.0
    for j in range(d):
        out[j] = output_radius * (flip * out[j])


@njit(cache=True, nogil=True, error_model="numpy")
def sgd_rounds(obs, rewards, context_bound, reward_bound, link, radius, output_radius,
               p_keep_side, direction, u_sign, u_side, sphere, step, t, theta, actions):
    """LDP-SGD (Han Alg 1, eq. 5-6): greedy decision, the user sends the l2-ball report of the
    clipped gradient, the server steps ``theta -= step / t Z``."""
    n_runs, length, k_arms = rewards.shape
    d = theta.shape[1]
    for n in range(n_runs):
        feats, xc, grad, report = np.empty((k_arms, d)), np.empty(d), np.empty(d), np.empty(d)
        dummy = np.empty((d, d))
        for s in range(length):
            arm = _choose(obs[n, s], theta[n], dummy, 0.0, False, feats)
            actions[n, s] = arm
            _clip(feats[arm], context_bound, xc)
            r = min(max(rewards[n, s, arm], -reward_bound), reward_bound)
            resid = _mean(_dot(xc, theta[n]), link) - r
            for j in range(d):
                grad[j] = resid * xc[j]
            _l2_ball(grad, radius, output_radius, p_keep_side, direction[s, n], u_sign[s, n],
                     u_side[s, n], sphere[s, n], report)
            t[n] += 1
            eta = step / t[n]
            for j in range(d):
                theta[n, j] = theta[n, j] - eta * report[j]


@njit(cache=True, nogil=True, error_model="numpy")
def _han_choose(x, theta, theta_warm, t, warmup_rounds, gap):
    """Han Alg 2's decision (as ``_HanMulti._act``): arm ``t mod K`` in the warm-up, then the
    greedy arm among those kept by eq. 7 (warm-up scores within ``gap / 2`` of the best)."""
    k_arms = theta.shape[0]
    if t < warmup_rounds:
        return t % k_arms
    top = -np.inf
    for k in range(k_arms):
        top = max(top, _dot(theta_warm[k], x))
    best, arm = -np.inf, 0
    for k in range(k_arms):
        score = _dot(theta[k], x) if _dot(theta_warm[k], x) > top - gap / 2 else -np.inf
        if score > best:
            best, arm = score, k
    return arm


@njit(cache=True, nogil=True, error_model="numpy")
def _han_user(obs_row, reward_row, theta, theta_warm, t, warmup_rounds, gap, context_bound,
              reward_bound, x, xc):
    """The user side shared by both Alg 2 estimators: read the context into x, choose the arm,
    clip the context into xc and the chosen reward; returns (arm, clipped reward)."""
    for j in range(x.shape[0]):
        x[j] = np.float64(obs_row[j])
    arm = _han_choose(x, theta, theta_warm, t, warmup_rounds, gap)
    _clip(x, context_bound, xc)
    return arm, min(max(reward_row[arm], -reward_bound), reward_bound)


@njit(cache=True, nogil=True, error_model="numpy")
def multi_ols_rounds(obs, rewards, context_bound, reward_bound, g_m, grid_m, g_u, grid_u, c_tilde,
                     warmup_rounds, gap, V, u, pulls, theta, theta_warm, t, actions):
    """LDP-OLS, multi parameter (Han Alg 2): every user sends K noised OLS slots, the real one
    for the pulled arm and that of (0, 0) for the others; in the warm-up the server folds in
    the (public) arm's slot only, afterwards every slot."""
    n_runs, length, k_arms = rewards.shape
    d = theta.shape[2]
    for n in range(n_runs):
        x, xc, xs, x2, v, tmp, inv = (np.empty(d), np.empty(d), np.empty(d), np.empty(d),
                                      np.empty(d), np.empty(d), np.empty((d, d)))
        for s in range(length):
            arm, r = _han_user(obs[n, s], rewards[n, s], theta[n], theta_warm[n], t[n],
                               warmup_rounds, gap, context_bound, reward_bound, x, xc)
            actions[n, s] = arm
            warm = t[n] < warmup_rounds
            for k in range(k_arms):
                if warm and k != arm:
                    continue  # the slot is sent (noise drawn) but not used in the warm-up
                for j in range(d):
                    xs[j] = xc[j] if k == arm else 0.0
                    v[j] = r * xs[j] if k == arm else 0.0
                _clip(xs, context_bound, x2)
                _add_outer(V[n, k], x2, g_m[s, n, k], grid_m)
                _add_noised(u[n, k], v, reward_bound * context_bound, g_u[s, n, k], grid_u, tmp)
                pulls[n, k] += 1
                _solve(V[n, k], u[n, k], c_tilde * math.sqrt(max(pulls[n, k], 1)), inv,
                       theta[n, k])
            t[n] += 1
            if t[n] == warmup_rounds:
                theta_warm[n] = theta[n]


@njit(cache=True, nogil=True, error_model="numpy")
def multi_sgd_rounds(obs, rewards, context_bound, reward_bound, link, radius, output_radius,
                     p_keep_side, direction, u_sign, u_side, sphere, step, warmup_rounds, gap,
                     updates, theta, theta_warm, t, actions):
    """LDP-SGD, multi parameter (Han Alg 2): K l2-ball slots, the pulled arm's gradient and the
    zero gradient for the others; each used slot steps its arm's parameter by ``step / n_a``."""
    n_runs, length, k_arms = rewards.shape
    d = theta.shape[2]
    for n in range(n_runs):
        x, xc, grad, report = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
        for s in range(length):
            arm, r = _han_user(obs[n, s], rewards[n, s], theta[n], theta_warm[n], t[n],
                               warmup_rounds, gap, context_bound, reward_bound, x, xc)
            actions[n, s] = arm
            warm = t[n] < warmup_rounds
            for k in range(k_arms):
                if warm and k != arm:
                    continue
                pulled = k == arm
                margin = _dot(xc, theta[n, k]) if pulled else 0.0
                resid = _mean(margin, link) - (r if pulled else 0.0)
                for j in range(d):
                    grad[j] = resid * xc[j] if pulled else 0.0
                _l2_ball(grad, radius, output_radius, p_keep_side, direction[s, n, k],
                         u_sign[s, n, k], u_side[s, n, k], sphere[s, n, k], report)
                updates[n, k] += 1
                eta = step / max(updates[n, k], 1)
                for j in range(d):
                    theta[n, k, j] = theta[n, k, j] - eta * report[j]
            t[n] += 1
            if t[n] == warmup_rounds:
                theta_warm[n] = theta[n]
