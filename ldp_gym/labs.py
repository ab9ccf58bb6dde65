"""The checks of the labs in ``examples/labs/``: did the student get the exercise right?

Each lab notebook leaves a few functions or classes for the student to write; the cell after
each calls its check here, with the student's code. A check prints one line saying what was
right, or raises :class:`LabCheckError` saying what is wrong and giving a hint. The checks
call the student's code on inputs of their own, with their own seeded generators, and compare
it with the library's own implementation: exactly where the answer is deterministic, and by
statistics of 200,000 draws where it is random. Those tests have tolerances of six standard
errors, a false alarm for a right answer less often than once in 10^8 checks.

The solutions are kept apart, in ``examples/labs/solutions/``; the test suite runs every lab
with them, and checks that the labs fail without them.

Example:
    >>> import numpy as np
    >>> from ldp_gym import labs
    >>> def greedy_arm(theta, contexts):
    ...     return int(np.argmax(contexts @ theta))
    >>> labs.check_greedy_arm(greedy_arm)
    greedy_arm: right on 200 random cases
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["LabCheckError", "check_cucb_index", "check_episode_release", "check_gradient_estimate",
           "check_greedy_arm", "check_grid_cell", "check_local_report", "check_mutant_flagged",
           "check_pooled_mean", "check_private_agent", "check_server_estimate", "check_top_k",
           "check_two_point_release"]

#: draws per statistical check
DRAWS = 200_000
#: tolerance of the statistical checks, in standard errors
SIGMAS = 6.0


class LabCheckError(AssertionError):
    """The student's answer is not right yet: the message says what, and how to find out."""


def _fail(what: str, hint: str) -> None:
    raise LabCheckError(f"{what}. Hint: {hint}")


def _not_written(fn: Callable, *args: Any, name: str | None = None) -> Any:
    """``fn(*args)``, or the failure that says the exercise ``name`` is not written yet."""
    try:
        return fn(*args)
    except NotImplementedError:
        _fail(f"{name or getattr(fn, '__name__', 'the exercise')} is not written yet",
              "replace `raise NotImplementedError` with your code")


def _uses_rng(name: str, call: Callable[[np.random.Generator], Any]) -> None:
    """``call(rng)`` gives the same output for two generators of one seed and different outputs
    for two seeds: its noise comes from the generator it is given."""
    first, again, other = (np.asarray(call(np.random.default_rng(seed)), dtype=np.float64)
                           for seed in (2, 2, 3))
    if not np.array_equal(first, again) or np.array_equal(first, other):
        _fail(f"{name} does not draw its noise from the rng it is given",
              "use rng.laplace / rng.normal, not np.random nor a generator of your own")


def _check_laplace(name: str, draws: np.ndarray, centre: float, scale: float, hint: str) -> None:
    """Mean, sd and tails of ``draws`` against ``centre + Lap(scale)``."""
    draws = np.asarray(draws, dtype=np.float64)
    if draws.shape != (DRAWS,):
        _fail(f"{name} returned shape {draws.shape}, not ({DRAWS},)",
              "work on the whole array at once (numpy), one output per input")
    if np.unique(draws).size < DRAWS // 2:
        _fail(f"{name}: the outputs share their noise ({np.unique(draws).size} distinct values "
              f"of {DRAWS})", "draw one noise value per entry: size=np.shape(...)")
    sd = math.sqrt(2.0) * scale
    if abs(draws.mean() - centre) > SIGMAS * sd / math.sqrt(DRAWS):
        _fail(f"{name}: the outputs are centred at {draws.mean():.4f}, not at {centre:g}", hint)
    if abs(draws.std() / sd - 1.0) > SIGMAS * math.sqrt(5.0 / DRAWS) / 2:  # Laplace's kurtosis 6
        _fail(f"{name}: the noise has sd {draws.std():.4f}, not {sd:.4f} (Laplace of scale "
              f"{scale:g})", "the Laplace scale is sensitivity / epsilon")
    tail = float(np.mean(np.abs(draws - centre) > 3.0 * scale))  # e^-3 for Laplace
    if abs(tail - math.exp(-3.0)) > SIGMAS * math.sqrt(math.exp(-3.0) / DRAWS):
        _fail(f"{name}: P(|noise| > 3 scale) is {tail:.4f}, not e^-3 = {math.exp(-3):.4f}: the "
              f"noise is not Laplace", "draw it with rng.laplace(0.0, scale, size)")


# ----------------------------------------------------------------------------- MAB lab


def check_local_report(local_report: Callable) -> None:
    """``local_report(rewards, epsilon, rng)``: LDP-UCB's user side, the reward clipped to
    [0, 1] plus ``Lap(1/epsilon)`` drawn from ``rng``."""
    for reward, eps in ((0.3, 1.0), (7.0, 0.5), (-2.0, 2.0)):
        out = _not_written(local_report, np.full(DRAWS, reward), eps, np.random.default_rng(1))
        _check_laplace("local_report", out, min(max(reward, 0.0), 1.0), 1.0 / eps,
                       "clip the reward to [0, 1] first: a reward of 7 must count as 1, or one "
                       "user could move the server's mean without bound")
    _uses_rng("local_report", lambda rng: local_report(np.zeros(5), 1.0, rng))
    print("local_report: clipped to [0, 1], Laplace noise of scale 1/epsilon from rng")


def check_episode_release(episode_release: Callable) -> None:
    """``episode_release(episode_sum, n, epsilon, rng)``: a global-DP curator's releases of
    episodes of n rewards in [0, 1], ``episode_sum`` an array of their sums: each mean plus its
    own ``Lap(1/(epsilon n))``."""
    for total, n, eps in ((3.0, 10, 1.0), (40.0, 64, 0.5)):
        out = _not_written(episode_release, np.full(DRAWS, total), n, eps,
                           np.random.default_rng(3))
        _check_laplace("episode_release", out, total / n, 1.0 / (eps * n),
                       "release the episode's mean, sum / n")
    _uses_rng("episode_release", lambda rng: episode_release(np.full(5, 3.0), 10, 1.0, rng))
    print("episode_release: the mean plus Laplace of scale 1/(epsilon n): one reward moves the "
          "mean by at most 1/n")


# ----------------------------------------------------------------------------- GLM lab


def check_server_estimate(server_estimate: Callable) -> None:
    """``server_estimate(M_sum, u_sum, reg)``: the regularised least squares of the noisy
    statistics, ``(M_sum + reg I)^-1 u_sum``."""
    rng = np.random.default_rng(4)
    for d in (2, 5):
        x = rng.normal(size=(50, d))
        m_sum, u_sum = x.T @ x, x.T @ rng.normal(size=50)
        for reg in (0.0, 3.0):
            got = np.asarray(_not_written(server_estimate, m_sum, u_sum, reg), dtype=np.float64)
            want = np.linalg.solve(m_sum + reg * np.eye(d), u_sum)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-9):
                _fail(f"server_estimate is off for d = {d}, reg = {reg:g}",
                      "solve (M_sum + reg I) theta = u_sum: np.linalg.solve")
    print("server_estimate: (M_sum + reg I)^-1 u_sum")


def check_greedy_arm(greedy_arm: Callable) -> None:
    """``greedy_arm(theta, contexts)``: the arm whose context has the largest predicted reward,
    ``argmax_a <x_a, theta>``, contexts of shape (K, d)."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        contexts, theta = rng.normal(size=(10, 3)), rng.normal(size=3)
        got = _not_written(greedy_arm, theta, contexts)
        if np.ndim(got) != 0:
            _fail(f"greedy_arm returned {got!r}, not one arm", "return the index of one arm, "
                  "an int")
        if int(got) != int(np.argmax(contexts @ theta)):
            _fail("greedy_arm did not pick the largest <x_a, theta>",
                  "one predicted reward per row of contexts: contexts @ theta")
    print("greedy_arm: right on 200 random cases")


# ----------------------------------------------------------------------------- BCO lab


def check_two_point_release(two_point_release: Callable) -> None:
    """``two_point_release(f1, f2, x1, x2, G, sigma, rng)``: Zheng et al.'s Alg 2, one number
    ``clip(f1 - f2, +-G ||x1 - x2||) + n^T (x1 - x2)``, ``n ~ N(0, sigma^2 I)``."""
    x1, x2 = np.array([0.3, -0.1, 0.2]), np.array([0.1, 0.2, 0.0])
    dist = float(np.linalg.norm(x1 - x2))
    for f1, f2 in ((0.5, 0.4), (9.0, 0.0), (-9.0, 0.0)):
        value = _not_written(two_point_release, f1, f2, x1, x2, 2.0, 0.0, np.random.default_rng(6))
        if np.ndim(value) != 0:
            _fail(f"two_point_release returned shape {np.shape(value)}, not one number",
                  "the release is one number: the projection n @ (x1 - x2) is a scalar")
        got = float(value)
        want = float(np.clip(f1 - f2, -2.0 * dist, 2.0 * dist))
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12):
            _fail(f"with sigma = 0, f1 = {f1:g}, f2 = {f2:g}: {got:.4f}, not {want:.4f}",
                  "clip the difference to [-G ||x1 - x2||, G ||x1 - x2||]: the loss is "
                  "G-Lipschitz, so a larger difference can only be a user's outlier")
    rng = np.random.default_rng(7)
    draws = np.array([two_point_release(0.5, 0.4, x1, x2, 2.0, 3.0, rng) for _ in range(20_000)])
    sd = 3.0 * dist
    if abs(draws.std() / sd - 1.0) > 0.03 or abs(draws.mean() - 0.1) > SIGMAS * sd / math.sqrt(20_000):
        _fail(f"the noise of two_point_release has sd {draws.std():.4f} and mean "
              f"{draws.mean() - 0.1:+.4f}, not sd {sd:.4f} and mean 0",
              "n is a Gaussian vector of sd sigma per coordinate, projected on x1 - x2")
    # the shape, along one axis (a projection on several would look Gaussian by itself)
    xa, xb = np.array([0.3, 0.0, 0.0]), np.array([0.1, 0.0, 0.0])
    draws = np.array([two_point_release(0.5, 0.4, xa, xb, 2.0, 3.0, rng) for _ in range(20_000)])
    tail, gauss = float(np.mean(np.abs(draws - 0.1) > 2 * 3.0 * 0.2)), 0.04550026
    if abs(tail - gauss) > SIGMAS * math.sqrt(gauss * (1 - gauss) / 20_000):
        _fail(f"two_point_release: P(|noise| > 2 sd) is {tail:.4f}, not {gauss:.4f}: the "
              f"noise is not Gaussian", "draw n with rng.normal(0.0, sigma, size=d)")
    _uses_rng("two_point_release", lambda rng: [two_point_release(0.5, 0.4, x1, x2, 2.0, 3.0, rng)
                                                for _ in range(3)])
    print("two_point_release: the clipped difference plus the noise n^T (x1 - x2)")


def check_gradient_estimate(gradient_estimate: Callable) -> None:
    """``gradient_estimate(D, u, rho, d)``: the two-point gradient estimate
    ``d / (2 rho) D u`` (Agarwal, Dekel and Xiao 2010)."""
    rng = np.random.default_rng(8)
    for _ in range(20):
        u = rng.normal(size=4)
        u /= np.linalg.norm(u)
        d_value, rho = rng.normal(), rng.uniform(0.01, 1.0)
        got = np.asarray(_not_written(gradient_estimate, d_value, u, rho, 4), dtype=np.float64)
        if got.shape != (4,) or not np.allclose(got, 4 / (2 * rho) * d_value * u, rtol=1e-9):
            _fail("gradient_estimate is off", "d / (2 rho) times D times the direction u")
    print("gradient_estimate: d / (2 rho) D u")


# ----------------------------------------------------------------------------- nonparametric lab


def check_grid_cell(grid_cell: Callable) -> None:
    """``grid_cell(x, bins)``: the cell of each point of x (n, d) in [0, 1]^d, in a grid of
    ``bins`` cells per coordinate, numbered row-major (the first coordinate slowest), a
    coordinate of 1 in the last cell."""
    rng = np.random.default_rng(9)
    for d, bins in ((1, 4), (2, 3), (3, 2)):
        x = rng.random((500, d))
        x[:3] = 1.0
        x[3:6] = 0.0
        x[6:6 + 3 * bins] = rng.integers(0, bins + 1, (3 * bins, d)) / bins  # on the edges
        idx = np.minimum((x * bins).astype(np.int64), bins - 1)
        want = np.ravel_multi_index(tuple(idx.T), (bins,) * d)
        got = np.asarray(_not_written(grid_cell, x, bins))
        if got.shape != want.shape or not np.array_equal(got, want):
            _fail(f"grid_cell is off for d = {d}, bins = {bins} (points inside, at 0, at 1 and "
                  f"on the inner edges)", "floor(x * bins), capped at bins - 1, then the "
                  "row-major number (np.ravel_multi_index); a point on an inner edge j / bins "
                  "is in cell j")
    print("grid_cell: row-major cells, the upper edge in the last cell")


def check_pooled_mean(pooled_mean: Callable) -> None:
    """``pooled_mean(n_target, mean_target, n_aux, mean_aux)``: the mean of a cell over the
    target data and the auxiliary data together; 0 where the cell has no data at all."""
    rng = np.random.default_rng(10)
    n_t, n_a = rng.integers(0, 20, 50), rng.integers(0, 20, 50)
    n_t[:3] = n_a[:3] = 0
    m_t, m_a = rng.random(50), rng.random(50)
    got = np.asarray(_not_written(pooled_mean, n_t, m_t, n_a, m_a), dtype=np.float64)
    total = n_t + n_a
    want = np.where(total > 0, (n_t * m_t + n_a * m_a) / np.maximum(total, 1), 0.0)
    if got.shape != want.shape or not np.allclose(got, want):
        _fail("pooled_mean is off", "weigh each mean by its count; a cell with no data gives 0")
    print("pooled_mean: each sample counts once, whichever dataset it came from")


# ----------------------------------------------------------------------------- combinatorial lab


def check_top_k(top_k: Callable) -> None:
    """``top_k(scores, k)``: the super arm of the k largest scores, as a 0/1 vector: exactly k
    ones, ties broken any way."""
    rng = np.random.default_rng(11)
    for i in range(200):
        scores, k = rng.random(8), int(rng.integers(1, 5))
        if i % 2:  # ties, as every index is 1 before the first pulls
            scores = np.round(scores * 2) / 2
        got = np.asarray(_not_written(top_k, scores, k))
        if got.shape != (8,) or not np.isin(got, (0, 1)).all():
            _fail(f"top_k returned {got!r}, not a 0/1 vector of the 8 base arms",
                  "start from np.zeros(len(scores)) and set the chosen arms to 1")
        chosen = got.astype(bool)
        if chosen.sum() != k or scores[chosen].min() < scores[~chosen].max():
            _fail(f"top_k chose {int(chosen.sum())} arms for k = {k}, or passed over a larger "
                  f"score (scores {scores.round(2).tolist()})",
                  "np.argsort(-scores)[:k] are the indices of k largest, ties included")
    print("top_k: the oracle of the top-K family")


def check_cucb_index(cucb_index: Callable) -> None:
    """``cucb_index(means, counts, t)``: CUCB's index ``min(mean + sqrt(3 ln t / (2 n)), 1)``,
    1 for a base arm never pulled."""
    rng = np.random.default_rng(12)
    means, counts = rng.random(20), rng.integers(0, 50, 20)
    counts[:2] = 0
    got = np.asarray(_not_written(cucb_index, means, counts, 100), dtype=np.float64)
    with np.errstate(divide="ignore"):
        want = np.where(counts > 0, np.minimum(means + np.sqrt(3 * math.log(100) / (2 * counts)), 1.0),
                        1.0)
    if got.shape != want.shape or not np.allclose(got, want):
        _fail("cucb_index is off", "the width sqrt(3 ln t / (2 n)), the index capped at 1, and 1 "
              "where n = 0 (np.where)")
    print("cucb_index: the optimistic mean, capped at 1")


# ----------------------------------------------------------------------------- your own agent


def check_private_agent(agent_class: type) -> None:
    """An agent class of the own-agent lab: it passes the contract suite on ``LDPMAB-v0`` and
    the statistical audit of its user's report (:func:`ldp_gym.checks.audit_agent`)."""
    from ldp_gym.checks import audit_agent, check_agent

    try:
        check_agent(agent_class, env_ids=["LDPMAB-v0"])
    except Exception as exc:  # the contract suite names the check that failed, and the error
        if "NotImplementedError" in f"{type(exc).__name__}: {exc}":
            _fail(f"{agent_class.__name__} is not written yet",
                  "replace `raise NotImplementedError` with your code")
        raise
    result = audit_agent(agent_class, n=50_000)
    if not result.passed:
        _fail(f"the audit certifies epsilon >= {result.epsilon_lower:.2f}, more than the agent "
              f"claims: its report leaks", "send the reward through self.mechanism (clipping and "
              "Laplace noise), never the raw reward")
    print(f"{agent_class.__name__}: the contract suite passes, and the audit certifies only "
          f"epsilon >= {result.epsilon_lower:.2f}, within its claim of {result.claimed:g}")


def check_mutant_flagged(mutant_class: type, correct_class: type) -> None:
    """A mutant of the own-agent lab: a broken copy of the student's agent that the audit must
    flag, while it passes the correct one."""
    from ldp_gym.checks import audit_agent

    if not audit_agent(correct_class, n=50_000).passed:
        _fail("the correct agent fails its audit", "finish the first exercise first")
    result = _not_written(lambda cls: audit_agent(cls, n=50_000), mutant_class,
                          name=mutant_class.__name__)
    if result.passed:
        _fail(f"the audit does not flag {mutant_class.__name__} (epsilon >= "
              f"{result.epsilon_lower:.2f} only)", "break the privacy for real between rewards "
              "0 and 1, the neighbours the audit compares: less noise than 1/epsilon, or the "
              "raw reward in the message")
    print(f"{mutant_class.__name__}: flagged, the audit certifies epsilon >= "
          f"{result.epsilon_lower:.2f}: a leak the mutant's claim does not cover")
