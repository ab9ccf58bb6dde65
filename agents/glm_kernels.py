"""The contextual agents' rounds, written once and compiled with numba.

Each algorithm is three functions of one user and the server's state.
``choose`` runs on the user side: it picks the action from the context and the public state.
``report`` runs on the user side too: it builds the message with the mechanisms' compiled
transforms of :mod:`ldp_gym.wrappers.mechanisms.compiled`, from noise the mechanisms drew.
``update`` runs on the server: it folds a message into its state and sees nothing else.
One kernel per algorithm loops them over runs and rounds, doing the steps
``mode`` asks for:

* ``act``, the Gymnasium path: ``CHOOSE`` over one round of N runs;
* ``local_report``: ``REPORT`` with the actions given in ``forced``;
* ``update``: ``UPDATE`` from the messages;
* ``play_block``, the runner's block path: all three for L rounds drawn ahead.

The Gymnasium path runs a kernel through a handle (:func:`round_call`): the
kernel and its argument tuple, built once per agent state and held natively.
A round (:func:`round_step`) then passes one handle and the round's inputs
instead of the ~25 arrays of the tuple, and checks and loads the inputs in
the same compiled call.

So the per-round path and the block path run the same code, and the
messages always pass through a buffer (``msg_*``, (L, N, ...)) between
report and update: the user/server border stays visible, and the block's
messages stay inspectable (``last_report``).

Arrays: ``obs`` (N, L, width); ``rewards`` (N, L, K), every arm's reward, or
(N, L, 1), the chosen arm's; ``forced`` (N, L), an action or -1 to choose;
noise (L, N, ..., entries) on the mechanisms' grids; the state, updated in place;
``actions`` (N, L), written. User-side code does the same operations for every
input, with no data-dependent loop.

Inside a round the kernels index arrays (``obs[n, s, j]``, ``msgs[at + (i, j)]`` with
``at = (round, run)``) rather than take views such as ``obs[n, s]``: each numba view is a
reference-counted object, and views taken per round and per arm cost about a sixth of
LDP-OLS's kernel time (a view of a run's state is taken once per run). Loop bounds come
from the kernel's own sizes, not from the shape of an array being written.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numba import njit, types
from numba.experimental import structref
from numba.extending import overload

from ldp_gym.envs.glm import inverse_link
from ldp_gym.validation import finite_into
from ldp_gym.wrappers.mechanisms.compiled import (
    clip_l2_into,
    clip_scalar,
    l2_ball,
    release_outer,
    release_vector,
)

__all__ = ["CHOOSE", "KERNELS", "PLAY", "REPORT", "UPDATE", "gloc_rounds", "multi_ols_rounds",
           "multi_sgd_rounds", "regression_rounds", "ridge_rounds", "round_call", "round_step",
           "sgd_rounds"]

#: steps of a kernel call (bit flags)
CHOOSE, REPORT, UPDATE = 1, 2, 4
PLAY = CHOOSE | REPORT | UPDATE

_JIT: dict[str, Any] = dict(cache=True, nogil=True, error_model="numpy")
#: the helpers of the rounds, inlined into the kernels (the kernels themselves are not: the
#: round call runs them by their arguments)
_INLINE: dict[str, Any] = {**_JIT, "inline": "always"}


# --------------------------------------------------------------------------- shared pieces


@njit(**_INLINE)
def _mean(z, link):
    """The link's mean with the margin clipped to +-50. A diverged estimate then gives a
    finite, if huge, gradient, which the mechanism clips."""
    return inverse_link(min(max(z, -50.0), 50.0), link)


@njit(**_INLINE)
def _dot(a, b):
    s = 0.0
    for j in range(a.shape[0]):
        s += a[j] * b[j]
    return s


@njit(**_INLINE)
def _row_dot(m, i, b):
    """``m[i] . b``, reading the row by index rather than through a view."""
    s = 0.0
    for j in range(b.shape[0]):
        s += m[i, j] * b[j]
    return s


@njit(**_INLINE)
def _features(obs, n, s, feats, k_arms, d):
    """Fill ``feats`` (K, D) = ``(k_arms, d)`` from the observation ``obs[n, s]`` of run n in
    round s. With a single parameter these are the K contexts; with multi parameter, the
    block contexts ``x (x) e_k`` of the one context, and D = K d.

    The kernel passes K and D: loop bounds read from ``feats.shape`` measured 10 % slower
    (the compiler cannot tell that the stores into ``feats`` leave its shape alone)."""
    width = obs.shape[2]
    if width == k_arms * d:
        for k in range(k_arms):
            for j in range(d):
                feats[k, j] = np.float64(obs[n, s, k * d + j])
    else:
        feats[:, :] = 0.0
        for k in range(k_arms):
            for j in range(width):
                feats[k, k * width + j] = np.float64(obs[n, s, j])


@njit(**_INLINE)
def _choose(feats, theta, inv, beta, ucb):
    """``argmax_k x_k^T theta`` (+ ``beta ||x_k||_inv`` if ucb), the first index on ties."""
    k_arms, d = feats.shape
    best, arm = -np.inf, 0
    for k in range(k_arms):
        score = 0.0
        for j in range(d):
            score += feats[k, j] * theta[j]
        if ucb:
            quad = 0.0
            for i in range(d):
                for j in range(d):
                    quad += feats[k, i] * inv[i, j] * feats[k, j]
            score += beta * math.sqrt(max(quad, 0.0))
        if score > best:
            best, arm = score, k
    return arm


@njit(**_INLINE)
def _beta(kind, p, t):
    """The exploration coefficient of a round with ``t`` earlier rounds; 0 when greedy.

    Kind 1 is LDP-LinUCB, Zheng et al. Alg 5, with ``p = (sigma, Upsilon_1, D, ln T)``:
    ``2 sigma sqrt(D ln T) + (sqrt(3 Upsilon_t) + sigma sqrt(D t / Upsilon_t)) D ln T`` with
    ``Upsilon_t = Upsilon_1 sqrt(t)``. Kind 2 is LDP-GLOC, with ``p = (c, D)``:
    ``c sqrt(sqrt(D t))``, the order of Zheng's beta_t^2 in Alg 3."""
    t = max(t, 1.0)
    if kind == 1:
        sigma, ups1, d, log_t = p[0], p[1], p[2], p[3]
        ups = ups1 * math.sqrt(t)
        return 2 * sigma * math.sqrt(d * log_t) + (math.sqrt(3 * ups)
                                                  + sigma * math.sqrt(d * t / ups)) * d * log_t
    if kind == 2:
        return p[0] * math.sqrt(math.sqrt(p[1] * t))
    return 0.0


@njit(**_INLINE)
def _shift(coef, t):
    """The regulariser ``coef sqrt(t)`` (t >= 1) added to V before solving after t rounds.

    It is c~ sqrt(t) in Han et al. Thm 4.1, and 2 Upsilon_t in Zheng et al. Alg 3 and 5."""
    return coef * math.sqrt(max(t, 1.0))


@njit(**_INLINE)
def _solve(V, u, shift, inv, theta, work):
    """``theta = (V + shift I)^-1 u``, and ``inv = (V + shift I)^-1`` where ``inv`` has room.

    Only the UCB agents give it room, since their width reads it. d <= 2: closed form.
    d > 2: a Cholesky factor (:func:`_cholesky`, ``work`` (2, d, d) scratch) and two
    triangular solves, d^3 / 6 flops without an allocation. The inverse costs d^3 / 2 more,
    only where asked. The summed noise can outweigh the shift; where the shifted matrix is
    then not positive definite, LAPACK's general inverse is used, as before the factor."""
    d = V.shape[0]
    if d == 1:
        a = 1.0 / (V[0, 0] + shift)
        if inv.shape[0]:
            inv[0, 0] = a
        theta[0] = 0.0 + a * u[0]
    elif d == 2:
        p, q, r, s = V[0, 0] + shift, V[0, 1], V[1, 0], V[1, 1] + shift
        det = p * s - q * r
        a, b, c, e = s / det, -q / det, -r / det, p / det
        if inv.shape[0]:
            inv[0, 0], inv[0, 1], inv[1, 0], inv[1, 1] = a, b, c, e
        theta[0] = 0.0 + a * u[0] + b * u[1]
        theta[1] = 0.0 + c * u[0] + e * u[1]
    elif _cholesky(V, shift, work[0]):
        _cholesky_solve(work[0], u, theta)
        if inv.shape[0]:
            _cholesky_inverse(work[0], work[1], inv)
    else:
        a2 = V.copy()
        for i in range(d):
            a2[i, i] += shift
        full = np.linalg.inv(a2)
        if inv.shape[0]:
            inv[:, :] = full
        for i in range(d):
            theta[i] = _dot(full[i], u)


@njit(**_INLINE)
def _cholesky(a, shift, chol):
    """The lower Cholesky factor of ``a + shift I`` into ``chol``, reading its lower triangle.

    Returns False where it is not positive definite or not finite."""
    d = a.shape[0]
    for j in range(d):
        s = a[j, j] + shift
        for k in range(j):
            s -= chol[j, k] * chol[j, k]
        if not s > 0.0:
            return False
        root = math.sqrt(s)
        chol[j, j] = root
        for i in range(j + 1, d):
            s = a[i, j]
            for k in range(j):
                s -= chol[i, k] * chol[j, k]
            chol[i, j] = s / root
    return True


@njit(**_INLINE)
def _cholesky_solve(chol, u, theta):
    """``theta = (L L^T)^-1 u``: forward substitution, then back substitution.

    The forward step solves L y = u and keeps y in theta."""
    d = u.shape[0]
    for i in range(d):
        s = u[i]
        for k in range(i):
            s -= chol[i, k] * theta[k]
        theta[i] = s / chol[i, i]
    for i in range(d - 1, -1, -1):
        s = theta[i]
        for k in range(i + 1, d):
            s -= chol[k, i] * theta[k]
        theta[i] = s / chol[i, i]


@njit(**_INLINE)
def _cholesky_inverse(chol, m, inv):
    """``inv = (L L^T)^-1 = M^T M`` with ``M = L^-1``, lower triangular, built in ``m``."""
    d = chol.shape[0]
    for j in range(d):
        m[j, j] = 1.0 / chol[j, j]
        for i in range(j + 1, d):
            s = 0.0
            for k in range(j, i):
                s -= chol[i, k] * m[k, j]
            m[i, j] = s / chol[i, i]
    for i in range(d):
        for j in range(i + 1):
            s = 0.0
            for k in range(i, d):
                s += m[k, i] * m[k, j]
            inv[i, j] = s
            inv[j, i] = s


@njit(**_INLINE)
def _add(target, msgs, at):
    """Server: add a vector part, ``target += msgs[at]``."""
    for i in range(target.shape[0]):
        target[i] += msgs[at + (i,)]


@njit(**_INLINE)
def _add_matrix(target, msgs, at):
    """Server: add a matrix part, ``target += msgs[at]``."""
    for i in range(target.shape[0]):
        for j in range(target.shape[1]):
            target[i, j] += msgs[at + (i, j)]


@njit(**_INLINE)
def _user_data(feats, arm, rewards, at, clip, x):
    """The user's chosen context clipped into ``x`` and its reward, ``rewards[at]``'s, clipped,
    within the declared bounds ``clip = (context_bound, reward_bound)``."""
    for j in range(x.shape[0]):
        x[j] = feats[arm, j]
    clip_l2_into(x, clip[0], x)
    return clip_scalar(rewards[at + (arm if rewards.shape[-1] > 1 else 0,)], clip[1])


@njit(**_INLINE)
def _release_outer(x, part, at, msgs):
    """``x x^T`` released into ``msgs[at]`` by the mechanism part ``(bound, noise, grid)``
    with its noise at ``at = (round, run[, slot])``."""
    bound, noise, grid = part
    release_outer(x, bound, noise, grid, msgs, at)


@njit(**_INLINE)
def _release_vector(v, part, at, msgs):
    """``v`` released into ``msgs[at]`` by the mechanism part ``(bound, noise, grid)`` with
    its noise at ``at``."""
    bound, noise, grid = part
    release_vector(v, bound, noise, grid, msgs, at)


@njit(**_INLINE)
def _l2_ball(grad, ball, index, kept, out):
    """``grad`` released into ``out[index]`` by the l2-ball mechanism ``ball = (radius,
    output_radius, p_keep_side, direction, sign, side, sphere)`` with its draws at ``index``.

    The clipped input is kept in ``kept[index]`` for the replay test."""
    radius, output_radius, p_keep_side, direction, sign, side, sphere = ball
    l2_ball(grad, radius, output_radius, p_keep_side, direction, sign[index], side[index],
            sphere, kept, out, index)


# --------------------------------------------------------------------------- LDP-OLS, LDP-LinUCB


@njit(**_JIT)
def regression_rounds(mode, obs, rewards, forced, rule, clip, release_m, release_u, server, msgs,
                      actions):
    """LDP-OLS (greedy, ``beta_kind`` 0) and LDP-LinUCB (1, :func:`_beta`); after round t the
    server solves ``(V + shift_coef sqrt(t) I) theta = u``.

    ``rule = (k_arms, beta_kind, beta_params, shift_coef)``; ``clip = (context_bound,
    reward_bound)``, the user's declared data bounds; ``release_m`` and ``release_u`` the
    mechanism's parts ``(bound, noise, grid)``; ``server = (t, V, u, theta, inverse)``;
    ``msgs = (M, u)``."""
    k_arms, beta_kind, beta_params, shift_coef = rule
    t, V, u, theta, inv = server
    msg_m, msg_u = msgs
    n_runs, length = actions.shape
    d = theta.shape[1]
    for n in range(n_runs):
        feats, x, v = np.empty((k_arms, d)), np.empty(d), np.empty(d)
        work = np.empty((2, d, d))
        V_n, u_n, theta_n, inv_n = V[n], u[n], theta[n], inv[n]  # views once per run
        for s in range(length):
            arm = forced[n, s]
            if mode & (CHOOSE | REPORT):
                _features(obs, n, s, feats, k_arms, d)
            if arm < 0:
                arm = _choose(feats, theta_n, inv_n, _beta(beta_kind, beta_params, t[n]),
                              beta_kind > 0)
            actions[n, s] = arm
            if mode & REPORT:
                r = _user_data(feats, arm, rewards, (n, s), clip, x)
                _release_outer(x, release_m, (s, n), msg_m)  # Han et al. eq. 3-4
                for j in range(d):
                    v[j] = r * x[j]
                _release_vector(v, release_u, (s, n), msg_u)
            if mode & UPDATE:
                _add_matrix(V_n, msg_m, (s, n))
                _add(u_n, msg_u, (s, n))
                t[n] += 1
                _solve(V_n, u_n, _shift(shift_coef, t[n]), inv_n, theta_n, work)


# --------------------------------------------------------------------------- LDP-GLOC


@njit(**_JIT)
def gloc_rounds(mode, obs, rewards, forced, rule, clip, release_m, release_zx, release_g, server,
                msgs, actions):
    """LDP-GLOC, Zheng et al. Alg 3: UCB decision; the user sends ``x x^T + B``,
    ``z x + xi`` (z = x^T theta^) and the noised gradient at theta^; the server projects
    ``theta^ - zeta grad`` on the unit ball and solves for theta~.

    ``rule = (k_arms, beta_params, shift_coef, zeta, link)``; ``clip`` and the ``release_*``
    parts as in :func:`regression_rounds`; ``server = (t, theta_hat, V, u, theta, inverse)``
    with ``theta_hat`` the public theta^ the user reads; ``msgs = (M, zx, grad)``."""
    k_arms, beta_params, shift_coef, zeta, link = rule
    t, theta_hat, V, u, theta, inv = server
    msg_m, msg_zx, msg_g = msgs
    n_runs, length = actions.shape
    d = theta.shape[1]
    for n in range(n_runs):
        feats, x, v = np.empty((k_arms, d)), np.empty(d), np.empty(d)
        work = np.empty((2, d, d))
        V_n, u_n, theta_n, inv_n = V[n], u[n], theta[n], inv[n]  # views once per run
        theta_hat_n = theta_hat[n]
        for s in range(length):
            arm = forced[n, s]
            if mode & (CHOOSE | REPORT):
                _features(obs, n, s, feats, k_arms, d)
            if arm < 0:
                arm = _choose(feats, theta_n, inv_n, _beta(2, beta_params, t[n]), True)
            actions[n, s] = arm
            if mode & REPORT:
                y = _user_data(feats, arm, rewards, (n, s), clip, x)
                z = _dot(x, theta_hat_n)
                resid = _mean(z, link) - y
                _release_outer(x, release_m, (s, n), msg_m)
                for j in range(d):
                    v[j] = z * x[j]
                _release_vector(v, release_zx, (s, n), msg_zx)
                for j in range(d):
                    v[j] = resid * x[j]
                _release_vector(v, release_g, (s, n), msg_g)
            if mode & UPDATE:
                _add_matrix(V_n, msg_m, (s, n))
                _add(u_n, msg_zx, (s, n))
                for j in range(d):
                    v[j] = theta_hat_n[j] - zeta * msg_g[s, n, j]
                clip_l2_into(v, 1.0, theta_hat_n)  # the projection on W, the unit ball
                t[n] += 1
                _solve(V_n, u_n, _shift(shift_coef, t[n]), inv_n, theta_n, work)


# --------------------------------------------------------------------------- LDP-SGD


@njit(**_JIT)
def sgd_rounds(mode, obs, rewards, forced, rule, clip, ball, server, msgs, actions):
    """LDP-SGD, Han et al. Alg 1 with eq. 5-6: greedy decision; the user sends the l2-ball
    report of the clipped gradient; the server steps ``theta -= step / t Z``.

    ``rule = (k_arms, link, step)``; ``clip`` as in :func:`regression_rounds`; ``ball`` the
    l2-ball mechanism and its draws (:func:`_l2_ball`); ``server = (t, theta)``;
    ``msgs = (clipped input, Z)``, the input kept for the replay test."""
    k_arms, link, step = rule
    t, theta = server
    msg_in, msg = msgs
    n_runs, length = actions.shape
    d = theta.shape[1]
    dummy = np.empty((d, d))
    for n in range(n_runs):
        feats, x, grad = np.empty((k_arms, d)), np.empty(d), np.empty(d)
        theta_n = theta[n]  # views once per run
        for s in range(length):
            arm = forced[n, s]
            if mode & (CHOOSE | REPORT):
                _features(obs, n, s, feats, k_arms, d)
            if arm < 0:
                arm = _choose(feats, theta_n, dummy, 0.0, False)
            actions[n, s] = arm
            if mode & REPORT:
                r = _user_data(feats, arm, rewards, (n, s), clip, x)
                resid = _mean(_dot(x, theta_n), link) - r
                for j in range(d):
                    grad[j] = resid * x[j]
                _l2_ball(grad, ball, (s, n), msg_in, msg)
            if mode & UPDATE:
                t[n] += 1
                eta = step / t[n]
                for j in range(d):
                    theta[n, j] = theta[n, j] - eta * msg[s, n, j]


# --------------------------------------------------------------------------- Han et al. Alg 2


@njit(**_INLINE)
def _han_choose(x, theta, theta_warm, t, warmup_rounds, gap):
    """Arm ``t mod K`` in the warm-up, then the greedy arm among those kept by eq. 7.

    Eq. 7 keeps the arms whose warm-up scores are within ``gap / 2`` of the best."""
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


@njit(**_INLINE)
def _han_user(obs, rewards, at, theta, theta_warm, t, forced, warmup_rounds, gap, clip, x,
              xc):
    """Read the context ``obs[at]`` (``at = (run, round)``) into x, choose the arm unless
    ``forced``, and clip the user's data.

    The context is clipped into xc and the chosen reward of ``rewards[at]`` is clipped too,
    both to ``clip = (context_bound, reward_bound)``. Returns the arm and the clipped
    reward."""
    for j in range(x.shape[0]):
        x[j] = np.float64(obs[at + (j,)])
    arm = forced if forced >= 0 else _han_choose(x, theta, theta_warm, t, warmup_rounds, gap)
    clip_l2_into(x, clip[0], xc)
    return arm, clip_scalar(rewards[at + (arm if rewards.shape[-1] > 1 else 0,)], clip[1])


@njit(**_INLINE)
def _slot_input(xc, r, k, arm, xs):
    """The slot-k input: the user's context and reward in the pulled arm's slot.

    Every other slot gets the zero input (0, 0), the synthetic message. Returns the slot's
    reward."""
    pulled = k == arm
    for j in range(xs.shape[0]):
        xs[j] = xc[j] if pulled else 0.0
    return r if pulled else 0.0


@njit(**_INLINE)
def _han_server_slots(warm, arm, k_arms, used):
    """The slots the server folds in: the (public) arm's in the warm-up, every one after."""
    for k in range(k_arms):
        used[k] = (not warm) or k == arm


@njit(**_JIT)
def multi_ols_rounds(mode, obs, rewards, forced, rule, clip, release_m, release_u, server, msgs,
                     actions):
    """LDP-OLS, multi parameter, Han Alg 2: every user sends K noised OLS slots and an arm.

    The slot of the pulled arm is the real one; the others hold the message of (0, 0).
    The arm sent is the public arm in the warm-up, and -1 after it. The server folds in
    that arm's slot in the warm-up and every slot afterwards. It solves each arm's system
    with ``c~ sqrt(pulls)``.

    ``rule = (warmup_rounds, gap, c_tilde)``; ``clip`` and the ``release_*`` parts as in
    :func:`regression_rounds`; ``server = (t, theta_warm, V, u, pulls, theta)``;
    ``msgs = (M, u, arm)``."""
    warmup_rounds, gap, c_tilde = rule
    t, theta_warm, V, u, pulls, theta = server
    msg_m, msg_u, msg_arm = msgs
    n_runs, length = actions.shape
    k_arms, d = theta.shape[1], theta.shape[2]
    for n in range(n_runs):
        x, xc, xs = np.empty(d), np.empty(d), np.empty(d)
        no_inverse, work = np.empty((0, 0)), np.empty((2, d, d))
        used = np.empty(k_arms, dtype=np.bool_)
        for s in range(length):
            arm, r = -1, 0.0
            if mode & (CHOOSE | REPORT):
                arm, r = _han_user(obs, rewards, (n, s), theta[n], theta_warm[n], t[n],
                                   forced[n, s], warmup_rounds, gap, clip, x, xc)
                actions[n, s] = arm
            if mode & REPORT:
                msg_arm[s, n] = arm if t[n] < warmup_rounds else -1
                for k in range(k_arms):
                    rs = _slot_input(xc, r, k, arm, xs)
                    _release_outer(xs, release_m, (s, n, k), msg_m)
                    for j in range(d):
                        xs[j] = rs * xs[j]
                    _release_vector(xs, release_u, (s, n, k), msg_u)
            if mode & UPDATE:
                _han_server_slots(msg_arm[s, n] >= 0, msg_arm[s, n], k_arms, used)
                for k in range(k_arms):
                    if used[k]:
                        _add_matrix(V[n, k], msg_m, (s, n, k))
                        _add(u[n, k], msg_u, (s, n, k))
                        pulls[n, k] += 1
                        _solve(V[n, k], u[n, k], c_tilde * math.sqrt(max(pulls[n, k], 1)),
                               no_inverse, theta[n, k], work)
                t[n] += 1
                if t[n] == warmup_rounds:
                    theta_warm[n] = theta[n]


@njit(**_JIT)
def multi_sgd_rounds(mode, obs, rewards, forced, rule, clip, ball, server, msgs, actions):
    """LDP-SGD, multi parameter, Han Alg 2: K l2-ball slots, the pulled arm's gradient and the
    zero gradient for the others.

    Each slot the server folds in steps its arm's parameter by ``step / n_a``, with n_a the
    arm's number of updates.

    ``rule = (warmup_rounds, gap, link, step)``; ``clip`` and ``ball`` as in
    :func:`sgd_rounds`; ``server = (t, theta_warm, updates, theta)``; ``msgs = (clipped
    input, Z, arm)``."""
    warmup_rounds, gap, link, step = rule
    t, theta_warm, updates, theta = server
    msg_in, msg, msg_arm = msgs
    n_runs, length = actions.shape
    k_arms, d = theta.shape[1], theta.shape[2]
    for n in range(n_runs):
        x, xc, xs, grad = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
        used = np.empty(k_arms, dtype=np.bool_)
        for s in range(length):
            arm, r = -1, 0.0
            if mode & (CHOOSE | REPORT):
                arm, r = _han_user(obs, rewards, (n, s), theta[n], theta_warm[n], t[n],
                                   forced[n, s], warmup_rounds, gap, clip, x, xc)
                actions[n, s] = arm
            if mode & REPORT:
                msg_arm[s, n] = arm if t[n] < warmup_rounds else -1
                for k in range(k_arms):
                    rs = _slot_input(xc, r, k, arm, xs)
                    resid = _mean(_dot(xs, theta[n, k]), link) - rs
                    for j in range(d):
                        grad[j] = resid * xs[j]
                    _l2_ball(grad, ball, (s, n, k), msg_in, msg)
            if mode & UPDATE:
                _han_server_slots(msg_arm[s, n] >= 0, msg_arm[s, n], k_arms, used)
                for k in range(k_arms):
                    if used[k]:
                        updates[n, k] += 1
                        eta = step / max(updates[n, k], 1)
                        for j in range(d):
                            theta[n, k, j] = theta[n, k, j] - eta * msg[s, n, k, j]
                t[n] += 1
                if t[n] == warmup_rounds:
                    theta_warm[n] = theta[n]


# --------------------------------------------------------------------------- non-private

#: the non-private agents of :func:`ridge_rounds`
GREEDY_OLS, LINUCB, GLOC, GREEDY_SGD = 0, 1, 2, 3


@njit(**_INLINE)
def _ridge_beta(kind, p, t):
    """The exploration coefficient of a round with ``t`` earlier rounds; 0 for the greedy agents.

    LinUCB's is ``R sqrt(D ln((1 + t/lambda)/alpha)) + sqrt(lambda)`` with
    ``p = (R, D, lambda, alpha)``: Abbasi-Yadkori et al. Thm 2 with S = 1. GLOC's is
    ``c sqrt(D ln(2 + t))`` with ``p = (c, D)``."""
    if kind == LINUCB:
        return p[0] * math.sqrt(p[1] * math.log((1.0 + t / p[2]) / p[3])) + math.sqrt(p[2])
    if kind == GLOC:
        return p[0] * math.sqrt(p[1] * math.log1p(t + 1.0))
    return 0.0


@njit(**_INLINE)
def _sherman_morrison(inv, u, theta, x, target, vx):
    """Ridge regression's rank-one step: ``inv -= (inv x)(inv x)^T / (1 + x^T inv x)``,
    ``u += target x``, ``theta = inv u`` (``vx``: scratch)."""
    d = x.shape[0]
    for i in range(d):
        vx[i] = _row_dot(inv, i, x)
    denominator = 1.0 + _dot(x, vx)
    for i in range(d):
        for j in range(d):
            inv[i, j] -= vx[i] * vx[j] / denominator
    for j in range(d):
        u[j] += target * x[j]
    for i in range(d):
        theta[i] = _row_dot(inv, i, u)


@njit(**_JIT)
def ridge_rounds(mode, obs, rewards, forced, rule, server, actions):
    """The non-private contextual agents: Greedy-OLS, LinUCB, GLOC and Greedy-SGD.

    Greedy-OLS and LinUCB run ridge regression on the reward, greedy or with the UCB width.
    GLOC runs projected online gradient descent for theta^, and ridge regression of
    ``z = x^T theta^`` for theta~. Greedy-SGD steps ``theta -= step / t (g(x^T theta) - r) x``.
    ``CHOOSE`` picks the arm, and ``UPDATE`` learns from the chosen context and its reward.
    These are the raw data: there is no user/server border.

    ``rule = (k_arms, kind, beta_params, link, zeta, step)``; ``server = (t, inverse, u,
    theta, theta_hat)``. The arrays a kind does not use are empty."""
    k_arms, kind, beta_params, link, zeta, step = rule
    t, inv, u, theta, theta_hat = server
    n_runs, length = actions.shape
    d = theta.shape[1]
    ucb = kind == LINUCB or kind == GLOC
    for n in range(n_runs):
        feats, x, v = np.empty((k_arms, d)), np.empty(d), np.empty(d)
        inv_n, u_n, theta_n, theta_hat_n = inv[n], u[n], theta[n], theta_hat[n]  # views once per run
        for s in range(length):
            _features(obs, n, s, feats, k_arms, d)
            arm = forced[n, s]
            if arm < 0:
                arm = _choose(feats, theta_n, inv_n, _ridge_beta(kind, beta_params, t[n]), ucb)
            actions[n, s] = arm
            if mode & UPDATE:
                for j in range(d):
                    x[j] = feats[arm, j]
                r = rewards[n, s, arm if rewards.shape[2] > 1 else 0]
                t[n] += 1
                if kind == GREEDY_SGD:
                    resid = _mean(_dot(x, theta_n), link) - r
                    for j in range(d):
                        theta_n[j] -= step / t[n] * (resid * x[j])
                    continue
                if kind == GLOC:
                    z = _dot(x, theta_hat_n)
                    resid = _mean(z, link) - r
                    for j in range(d):
                        v[j] = theta_hat_n[j] - zeta * (resid * x[j])
                    clip_l2_into(v, 1.0, theta_hat_n)  # the projection on the unit ball
                    r = z
                _sherman_morrison(inv_n, u_n, theta_n, x, r, v)


# --------------------------------------------------------------------------- round calls


#: the kernels a round call runs, by name (the name is part of the handle's numba type)
KERNELS = {f.__name__: f for f in (regression_rounds, gloc_rounds, sgd_rounds, multi_ols_rounds,
                                   multi_sgd_rounds, ridge_rounds)}
_KERNEL_FIELD = "kernel_"


@structref.register
class RoundCallType(types.StructRef):
    """The numba type of a :func:`round_call` handle: the field ``args``, the kernel's
    argument tuple, and an empty field ``kernel_<name>`` naming the kernel."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class RoundCall(structref.StructRefProxy):
    """A kernel and its argument tuple, held natively (built by :func:`round_call`)."""


structref.define_boxing(RoundCallType, RoundCall)


class _PyRoundCall:
    """A round call's stand-in where numba's JIT is disabled and everything runs as Python."""

    def __init__(self, kernel: Any, args: tuple):
        self.kernel, self.args = kernel, args


def _new_round_call(args, name):
    return _PyRoundCall(KERNELS[name], args)


@overload(_new_round_call)
def _new_round_call_impl(args, name):
    if not isinstance(name, types.StringLiteral):
        return None
    call_type = RoundCallType(fields=[("args", args),
                                      (_KERNEL_FIELD + name.literal_value, types.int8)])

    def impl(args, name):
        call = structref.new(call_type)
        call.args = args
        return call
    return impl


@njit(**_INLINE)
def _native_round_call(args, name):
    return _new_round_call(args, numba.literally(name))


def round_call(kernel: Any, args: tuple) -> Any:
    """``kernel`` (one of ``KERNELS``) and its argument tuple ``(mode, obs, rewards, forced,
    ...)``, held natively for :func:`round_step`, which then passes one handle rather than the
    tuple's ~25 arrays. The arrays stay the agent's, read and written in place."""
    return _native_round_call(args, kernel.__name__)


def _run_kernel(call):
    call.kernel(*call.args)


@overload(_run_kernel)
def _run_kernel_impl(call):
    (kernel,) = [KERNELS[name[len(_KERNEL_FIELD):]] for name in call.field_dict
                 if name.startswith(_KERNEL_FIELD)]

    def impl(call):
        kernel(*call.args)
    return impl


@njit(**_JIT)
def round_step(call, obs, next_obs):
    """One Gymnasium round of a :func:`round_call` handle.

    ``obs`` is one run's (width,) or N runs' (N, width). ``obs`` and ``next_obs`` are checked
    for NaN and inf: status 1 or 2 names the one holding one, and then nothing runs.
    Otherwise ``obs`` is loaded into the kernel's observations (N, 1, width), the kernel runs
    on the handle's arguments, and the status is 0."""
    status = finite_into(call.args[1], obs, next_obs)
    if status == 0:
        _run_kernel(call)
    return status
