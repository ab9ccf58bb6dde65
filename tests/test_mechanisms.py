"""Mechanisms: golden calibration (R1), validation (R4), grid (R5), streams (R6/R7), distributions (R8).

Statistical tests here use Bonferroni-corrected thresholds with a total
false-alarm rate of at most 1e-6 per test, and fixed seeds (deterministic).
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ldp_gym.wrappers import mechanisms as M

mp.mp.dps = 50

# ----------------------------------------------------------------------------- R1 golden values


def mp_grid(scale, magnitude=0):
    """2^ceil(log2 scale) 2^-40, never finer than 2^ceil(log2 magnitude) 2^-50."""
    g = mp.mpf(2) ** (mp.ceil(mp.log(scale, 2)) - M.GRID_BITS)
    if magnitude:
        g = max(g, mp.mpf(2) ** (mp.ceil(mp.log(magnitude, 2)) - M.MAGNITUDE_BITS))
    return g


def mp_laplace_scale(sens, eps, magnitude=0, snaps=1):
    sens, eps = mp.mpf(sens), mp.mpf(eps)
    return (sens + snaps * mp_grid(sens / eps, magnitude)) / eps


def mp_profile(eps, sens, sigma):
    a, b = sens / (2 * sigma), eps * sigma / sens
    return mp.ncdf(a - b) - mp.e ** eps * mp.ncdf(-a - b)


def mp_analytic_sigma(sens, eps, delta):
    sens, eps, delta = mp.mpf(sens), mp.mpf(eps), mp.mpf(delta)
    lo, hi = sens * mp.mpf("1e-6"), sens * mp.mpf("1e6")
    for _ in range(200):
        mid = mp.sqrt(lo * hi)
        if mp_profile(eps, sens, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


EPS_POINTS = [1e-3, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 0.999, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 10.0, 20.0,
              50.0, 100.0]
SENS_POINTS = [1e-3, 0.5, 1.0, 2.0, 7.25, 1000.0]


def rel(a, b):
    return abs(float(a) - float(b)) / abs(float(b))


@pytest.mark.parametrize("eps", EPS_POINTS)
@pytest.mark.parametrize("sens", SENS_POINTS)
def test_golden_laplace_scale(eps, sens):
    m = M.LaplaceMechanism(eps, 0.0, sens, seed=0)
    assert rel(m.scale, mp_laplace_scale(sens, eps, sens)) < 1e-12


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("dim", [2, 10])
def test_golden_vector_laplace_scale(eps, dim):
    """d coordinates, each snapped: d (upper - lower + g) / epsilon (found by an external audit:
    with bounds far from zero the grid is coarse and d (upper - lower) + g leaked)."""
    for lo, hi in ((0.0, 1.0), (1e15 + 0.5, 1e15 + 1.5)):
        m = M.LaplaceMechanism(eps, lo, hi, dim=dim, seed=0)
        gold = mp_laplace_scale(dim * (hi - lo), eps, max(abs(lo), abs(hi)), dim)
        assert rel(m.scale, gold) < 1e-12


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 10.0])
@pytest.mark.parametrize("n", [1, 2, 3, 17, 1000, 10**7])
def test_golden_episode_scale(eps, n):
    m = M.PrivateEpisodeMean(eps, 0.0, 1.0, seed=0)
    assert rel(m.scale(n), mp_laplace_scale(mp.mpf(1) / n, eps, 1)) < 1e-12


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("horizon", [1, 2, 7, 8, 9, 1000, 10**7])
def test_golden_tree_scale(eps, horizon):
    tree = M.TreeMechanism(eps, horizon, (2,), seed=0)
    levels = int(mp.floor(mp.log(horizon, 2))) + 1
    assert tree.levels == levels
    # the grid is never finer than the largest node's partial sum, 2^(levels - 1), allows
    # each of the levels nodes is snapped: levels (1 + g) / epsilon
    assert rel(tree.scale, mp_laplace_scale(levels, eps, 2 ** (levels - 1), levels)) < 1e-12


@pytest.mark.parametrize("eps", [1e-3, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999999])
@pytest.mark.parametrize("delta", [1e-12, 1e-5, 0.01, 0.5])
def test_golden_classic_gaussian(eps, delta):
    m = M.GaussianMechanism(eps, delta, lower=-1.0, upper=1.0, calibration="classic", seed=0)
    factor = mp.sqrt(2 * mp.log(mp.mpf("1.25") / delta)) / eps
    grid = mp_grid(2 * factor, 1)                    # the grid of the unsnapped calibration
    assert rel(m.grid, grid) == 0
    assert rel(m.sigma, (2 + grid) * factor) < 1e-12  # calibrated for the snapped sensitivity


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 0.01])
def test_golden_analytic_gaussian(eps, delta):
    sigma = M.analytic_gaussian_sigma(1.0, eps, delta)
    assert rel(sigma, mp_analytic_sigma(1.0, eps, delta)) < 1e-12
    m = M.GaussianMechanism(eps, delta, l2_bound=0.5, dim=3, seed=0)
    grid = mp_grid(mp_analytic_sigma(1.0, eps, delta), 0.5)
    assert rel(m.grid, grid) == 0
    assert rel(m.sigma, mp_analytic_sigma(1 + mp.sqrt(3) * grid, eps, delta)) < 1e-12


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0, 2.0, 10.0])
@pytest.mark.parametrize("dim", [1, 2, 3, 10, 100, 400, 1000])
def test_golden_l2_ball_radius(eps, dim):
    gold = (mp.sqrt(mp.pi) / 2) * ((mp.e ** eps + 1) / (mp.e ** eps - 1)) * dim \
        * mp.gamma(mp.mpf(dim + 1) / 2) / mp.gamma(mp.mpf(dim) / 2 + 1)
    assert rel(M.l2_ball_radius(eps, 1.0, dim), gold) < 1e-12


@pytest.mark.parametrize("eps", [1e-3, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0])
@pytest.mark.parametrize("k", [2, 3, 10])
def test_golden_randomized_response(eps, k):
    gold = mp.e ** eps / (mp.e ** eps + k - 1)
    assert rel(M.RandomizedResponse(eps, k, seed=0).p_true, gold) < 1e-12


def test_classic_gaussian_refused_for_large_epsilon():
    with pytest.raises(ValueError, match="epsilon < 1"):
        M.GaussianMechanism(1.0, 1e-5, calibration="classic")


# ----------------------------------------------------------------------------- R4 validation

BAD_REALS = [0.0, -1.0, float("nan"), float("inf"), -float("inf"), True, "1", None]


def _builders():
    return {
        "laplace": lambda eps: M.LaplaceMechanism(eps, 0.0, 1.0),
        "episode": lambda eps: M.PrivateEpisodeMean(eps),
        "tree": lambda eps: M.TreeMechanism(eps, 8, (2,)),
        "gaussian": lambda eps: M.GaussianMechanism(eps, 1e-5),
        "l2ball": lambda eps: M.L2BallMechanism(eps, 1.0, 3),
        "rr": lambda eps: M.RandomizedResponse(eps, 2),
    }


@pytest.mark.parametrize("name", list(_builders()))
@pytest.mark.parametrize("bad", BAD_REALS)
def test_bad_epsilon_is_named(name, bad):
    with pytest.raises((ValueError, TypeError), match="epsilon"):
        _builders()[name](bad)


@given(delta=st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0),
                       st.just(float("nan")), st.booleans()))
@settings(max_examples=40, deadline=None)
def test_bad_delta_is_named(delta):
    with pytest.raises((ValueError, TypeError), match="delta"):
        M.GaussianMechanism(0.5, delta)


@given(lo=st.floats(allow_nan=True, allow_infinity=True), hi=st.floats(allow_nan=True,
                                                                       allow_infinity=True))
@settings(max_examples=60, deadline=None)
def test_bad_bounds_are_named(lo, hi):
    if math.isfinite(lo) and math.isfinite(hi) and hi > lo and math.isfinite(4 * (hi - lo)) \
            and hi - lo >= 1e-200:
        M.LaplaceMechanism(1.0, lo, hi)
    else:
        with pytest.raises(ValueError, match="lower|upper"):
            M.LaplaceMechanism(1.0, lo, hi)


@pytest.mark.parametrize("make", [
    lambda: M.LaplaceMechanism(1.0, 0.0, 5e-324), lambda: M.GaussianMechanism(1.0, 1e-5, upper=5e-324),
    lambda: M.LaplaceMechanism(1e300, 0.0, 1e-100), lambda: M.PrivateEpisodeMean(1.0, 0.0, 1e-250),
    lambda: M.GaussianMechanism(1.0, 1e-310), lambda: M.GaussianMechanism(1.0, 5e-324),
    lambda: M.GaussianStatistics(1.0, 1e-310, {"u": ("vector", 1.0, 50.0)}, dim=2)])
def test_degenerate_bounds_and_deltas_give_one_clear_error(make):
    """Bounds of width 5e-324, noise scales whose grid underflows and subnormal deltas: one
    ValueError naming the parameter, not numpy's or Python's own error."""
    with pytest.raises(ValueError, match="upper - lower|delta|noise scale"):
        make()


@pytest.mark.parametrize("bad", [[float("nan")], [float("inf")], [True, False], ["a"]])
def test_bad_inputs_refused_without_echo(bad):
    for mech in (M.LaplaceMechanism(1.0, seed=0), M.GaussianMechanism(1.0, 1e-5, seed=0)):
        with pytest.raises((ValueError, TypeError), match="x") as err:
            mech(np.array(bad))
        assert "nan" not in str(err.value).split("(")[0].lower() or "NaN or inf" in str(err.value)


def test_other_parameters_are_named():
    with pytest.raises(ValueError, match="dim"):
        M.L2BallMechanism(1.0, 1.0, 0)
    with pytest.raises(ValueError, match="radius"):
        M.L2BallMechanism(1.0, -1.0, 2)
    with pytest.raises(ValueError, match="horizon"):
        M.TreeMechanism(1.0, 0)
    with pytest.raises(ValueError, match="n_categories"):
        M.RandomizedResponse(1.0, 1)
    with pytest.raises(ValueError, match="counts"):
        M.PrivateEpisodeMean(1.0, seed=0).release([1.0], [0])
    with pytest.raises(ValueError, match="calibration"):
        M.GaussianMechanism(1.0, 1e-5, calibration="exact")
    with pytest.raises(ValueError, match="dim"):
        M.L2BallMechanism(1.0, 1.0, 3, seed=0)(np.zeros(2))
    with pytest.raises(ValueError, match="x must lie"):
        M.RandomizedResponse(1.0, 2, seed=0)(np.array([2]))
    with pytest.raises(ValueError, match="horizon"):
        tree = M.TreeMechanism(1.0, 1, (1,), seed=0)
        tree.add([1.0])
        tree.add([1.0])


# ----------------------------------------------------------------------------- R5 grid


def on_grid(values, g):
    k = np.asarray(values) / g
    return np.mean(k == np.rint(k))


@pytest.mark.parametrize("eps,lo,hi", [(1.0, 0.0, 1.0), (0.1, -3.0, 5.0), (7.0, 0.0, 0.01)])
def test_laplace_outputs_on_grid(eps, lo, hi):
    m = M.LaplaceMechanism(eps, lo, hi, seed=3)
    x = np.random.default_rng(0).uniform(lo - 1, hi + 1, 100_000)
    assert on_grid(m(x), m.grid) == 1.0
    # negative control: numpy's textbook Laplace is mostly off the grid (outputs near 1 have
    # a float spacing close to the grid's when the scale is small, hence the loose bound there)
    textbook = x + np.random.default_rng(1).laplace(0.0, m.scale, x.shape)
    assert on_grid(textbook, m.grid) < (0.01 if m.scale >= 1 else 0.5)


def test_episode_and_tree_outputs_on_grid():
    m = M.PrivateEpisodeMean(1.0, seed=0)
    counts = np.arange(1, 1001)
    out = m.release(np.full(1000, 0.3) * counts, counts)
    assert np.all(out / M.grid_step(1.0 / counts) == np.rint(out / M.grid_step(1.0 / counts)))
    tree = M.TreeMechanism(1.0, 16, (100,), seed=0)
    for _ in range(16):
        tree.add(np.full(100, 0.7))
    g = M.grid_step(tree.node_sensitivity / tree.epsilon)
    assert on_grid(tree.released_nodes(), g) == 1.0


# ----------------------------------------------------------------------------- R6/R7 streams


@pytest.mark.parametrize("name", list(_builders()))
def test_same_seed_same_output_other_seed_other_output(name):
    def draw(seed):
        mech = {"laplace": M.LaplaceMechanism(1.0, seed=seed),
                "episode": M.PrivateEpisodeMean(1.0, seed=seed),
                "tree": M.TreeMechanism(1.0, 8, (50,), seed=seed),
                "gaussian": M.GaussianMechanism(1.0, 1e-5, seed=seed),
                "l2ball": M.L2BallMechanism(1.0, 1.0, 3, seed=seed),
                "rr": M.RandomizedResponse(1.0, 3, seed=seed)}[name]
        if name == "episode":
            return mech.release(np.full(50, 2.0), np.full(50, 4))
        if name == "tree":
            return mech.add(np.full(50, 0.5))
        if name == "l2ball":
            return mech(np.full((50, 3), 0.2))
        if name == "rr":
            return mech(np.zeros(50, dtype=int))
        return mech(np.full(50, 0.5))
    a, b, c = draw(11), draw(11), draw(12)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_secure_mode_refuses_seeds_and_draws():
    with pytest.raises(TypeError, match="secure"):
        M.LaplaceMechanism(1.0, seed=1, secure=True)
    m = M.LaplaceMechanism(1.0, secure=True)
    out = m(np.full(1000, 0.5))
    assert on_grid(out, m.grid) == 1.0
    assert np.std(out) > 0.5
    g = M.GaussianMechanism(1.0, 1e-5, secure=True)
    assert g(np.zeros(10)).shape == (10,)
    assert M.L2BallMechanism(1.0, 1.0, 4, secure=True)(np.zeros((5, 4))).shape == (5, 4)
    assert set(np.unique(M.RandomizedResponse(1.0, 3, secure=True)(np.zeros(300, int)))) <= {0, 1, 2}


def test_bool_seed_refused():
    with pytest.raises(TypeError, match="seed"):
        M.LaplaceMechanism(1.0, seed=True)


# ----------------------------------------------------------------------------- R8 distributions


@pytest.mark.parametrize("dim,n", [(2, 400_000), (5, 400_000), (50, 100_000), (500, 10_000)])
def test_l2_ball_unbiased(dim, n):
    m = M.L2BallMechanism(1.0, 2.0, dim, seed=dim)
    x = np.linspace(-1, 1, dim)
    x *= 1.4 / np.linalg.norm(x)  # inside the ball, norm 0.7 R
    out = m(np.broadcast_to(x, (n, dim)))
    z = (out.mean(0) - x) / (out.std(0, ddof=1) / math.sqrt(n))
    crit = stats.norm.isf(1e-6 / (2 * dim))  # Bonferroni: total false alarm 1e-6
    assert np.abs(z).max() < crit
    assert np.allclose(np.linalg.norm(out, axis=1), m.output_radius)


def test_l2_ball_clips_in_l2():
    m = M.L2BallMechanism(1.0, 1.0, 3, seed=0)
    out = m(np.broadcast_to([50.0, 0.0, 0.0], (200_000, 3)))
    # clipped to R e1: mean R e1 (not 50 e1)
    assert abs(out[:, 0].mean() - 1.0) < 6 * out[:, 0].std() / math.sqrt(200_000)


def test_symmetric_noise_matrix_variances():
    """R8: the noise matrix W of an outer part (the release of x = 0) is symmetric with
    variance sigma^2 on and off the diagonal."""
    rng = np.random.default_rng(5)
    sigma, d, n = 1.7, 4, 50_000
    m = M.GaussianStatistics(1.0, 0.5, {"W": ("outer", 1.0, sigma)}, dim=d, seed=5)
    g = m.release("W", np.zeros((n, d)))
    assert np.array_equal(g, np.swapaxes(g, -1, -2))
    var = g.var(axis=0, ddof=1) / sigma**2
    # (n-1) s^2 / sigma^2 ~ chi2(n-1) for each of the d(d+1)/2 distinct entries
    k = d * (d + 1) // 2
    lo = stats.chi2.ppf(1e-6 / (2 * k), n - 1) / (n - 1)
    hi = stats.chi2.isf(1e-6 / (2 * k), n - 1) / (n - 1)
    iu = np.triu_indices(d)
    assert np.all((var[iu] > lo) & (var[iu] < hi)), var
    # the broken symmetrisation (G + G^T)/2 halves the off-diagonal variance and is caught
    raw = rng.standard_normal((n, d, d)) * sigma
    bad = (raw + np.swapaxes(raw, -1, -2)) / 2
    bad_var = bad.var(axis=0, ddof=1) / sigma**2
    assert not np.all((bad_var[iu] > lo) & (bad_var[iu] < hi))


def test_gaussian_clips_in_l2_not_per_coordinate():
    m = M.GaussianMechanism(1.0, 1e-5, l2_bound=1.0, dim=4, seed=0)
    clipped = m.clip(np.ones(4))
    assert np.isclose(np.linalg.norm(clipped), 1.0)


def test_tree_prefix_sums_match_sequential_definition():
    rng = np.random.default_rng(0)
    tree = M.TreeMechanism(1e6, 64, (3,), seed=1)  # huge epsilon: noise negligible
    x = rng.random((64, 3))
    for i in range(64):
        sums = tree.add(x[i])
        assert np.allclose(sums, x[: i + 1].sum(0), atol=1e-3)


def test_recording_traces_calls():
    m = M.LaplaceMechanism(1.0, 0.0, 1.0, seed=0)
    with M.recording() as trace:
        m(np.array([5.0, 0.5]))
    assert len(trace) == 1
    rec = trace[0]
    assert rec["epsilon"] == 1.0 and float(rec["sensitivity"].max()) == 1.0
    assert np.allclose(rec["input"], [1.0, 0.5])  # clipped


def test_tree_masked_adds_keep_each_streams_prefix_sums():
    """Adds to some streams only (the agents' case: one arm per run): every stream's noisy
    prefix sums are its own (noise made negligible with a huge epsilon), and the nodes closed
    are traced once per element added."""
    rng = np.random.default_rng(0)
    T, S = 200, 6
    x = rng.random((S, T))
    truth = np.cumsum(x, axis=1)
    tree = M.TreeMechanism(1e9, T, (S,), seed=1)
    n = np.zeros(S, int)
    with M.recording() as trace:
        for _ in range(400):
            mask = (rng.random(S) < 0.5) & (n < T)
            out = tree.add(np.where(mask, x[np.arange(S), np.minimum(n, T - 1)], 0.0), mask)
            n[mask] += 1
            done = np.flatnonzero(n > 0)
            assert np.allclose(out[done], truth[done, n[done] - 1], atol=1e-4)
    assert sum(r["input"].size for r in trace) == n.sum()
    assert np.array_equal(tree.counts, n)


def test_tree_noise_law():
    """The noisy prefix sum at i carries popcount(i) node noises (variance ratio test,
    false-alarm rate 1e-6)."""
    n, i = 200_000, 13
    seq = M.TreeMechanism(1.0, 16, (n,), seed=1)
    for _ in range(i):
        seq.add(np.zeros(n))
    want = 3 * 2 * seq.scale**2  # popcount(13) = 3 Laplace variances of 2 b^2
    # a sum of 3 Laplace(b): E S^4 = 144 b^4, so sd(sample var / want) = sqrt(3 / n);
    # |z| < 5 has a false-alarm rate below 1e-6
    assert abs(seq.noisy_sums.var() / want - 1) < 5 * math.sqrt(3 / n)


def test_overflowing_noise_scale_is_refused():
    with pytest.raises(ValueError, match="overflows"):
        M.LaplaceMechanism(1e-3, -1e307, 1e307)
    with pytest.raises(ValueError, match="upper - lower"):
        M.LaplaceMechanism(1.0, -1e308, 1e308)


def test_compiled_releases_at_an_index_are_the_releases_of_the_row():
    """``release_vector``/``release_outer`` writing at ``at`` into whole buffers (the kernels'
    form) give bitwise the releases of the row and its noise; the l2 clip leaves vectors of
    norm <= bound as they are, and takes longer ones to the bound (the factor's branch)."""
    from ldp_gym.wrappers.mechanisms import compiled as C
    rng = np.random.default_rng(3)
    grid = 2.0**-20
    x = rng.standard_normal((4, 5, 3)) * np.array([0.1, 0.5, 1.0, 9.0])[:, None, None]  # in to out
    noise_v = np.rint(rng.standard_normal((4, 5, 3)) / grid) * grid
    noise_m = np.rint(rng.standard_normal((4, 5, 6)) / grid) * grid
    out_v, out_m = np.zeros((4, 5, 3)), np.zeros((4, 5, 3, 3))
    for s in range(4):
        for n in range(5):
            C.release_vector(x[s, n], 1.5, noise_v, grid, out_v, (s, n))
            C.release_outer(x[s, n], 1.5, noise_m, grid, out_m, (s, n))
            row_v, row_m = np.empty(3), np.empty((3, 3))
            C.release_vector(x[s, n], 1.5, noise_v[s, n], grid, row_v)
            C.release_outer(x[s, n], 1.5, noise_m[s, n], grid, row_m)
            assert np.array_equal(out_v[s, n], row_v) and np.array_equal(out_m[s, n], row_m)
    clipped = np.empty(3)
    for v in (np.array([0.3, 0.4, 0.0]), np.array([3.0, 4.0, 0.0]), np.zeros(3),
              np.array([0.6, 0.8, 0.0]) * 0.5, np.array([0.6, 0.8, 0.0]) * 0.9):
        C.clip_l2_into(v, 0.5, clipped)
        norm = math.sqrt(sum(float(a) * float(a) for a in v))  # the kernel's sum, in order
        expect = v if norm <= 0.5 else v * (0.5 / norm)
        assert np.array_equal(clipped, expect), (v, clipped)


@pytest.mark.parametrize("p", [3e-19, 9.1e-13, 1e-4, 0.05, 1 / 3, 0.6, 1.0])
def test_compiled_discrete_laplace_is_numpys_and_refuses_a_shape(p):
    """The discrete Laplace streams' compiled draw gives bitwise the numbers of numpy's
    geometric pairs ``(g[0::2] - g[1::2]) grid``, across both of numpy's geometric samplers
    (search for p >= 1/3, inversion below) and where numpy's draws saturate at int64 (tiny
    p), and leaves the generator where numpy would; a shape instead of a count, and a p numpy
    refuses, are refused."""
    from ldp_gym.wrappers.mechanisms.noise import draw_discrete_laplace

    grid = 2.0 ** -38
    for count in (0, 1, 4097):
        a, b = np.random.default_rng(5), np.random.default_rng(5)
        g = b.geometric(p, size=2 * count)
        assert np.array_equal(draw_discrete_laplace(a, count, p=p, grid=grid),
                              (g[0::2] - g[1::2]) * grid)
        assert a.random() == b.random()
    with pytest.raises(TypeError):
        draw_discrete_laplace(np.random.default_rng(0), (2, 3), p=p, grid=grid)
    for bad in (0.0, -p, 1.5, np.nan, np.inf):
        with pytest.raises(ValueError, match="p <= 0"):
            draw_discrete_laplace(np.random.default_rng(0), 3, p=bad, grid=grid)


def test_draw_normals_are_numpys_and_refuse_a_shape():
    """The compiled draw gives ``standard_normal``'s numbers and leaves the generator where
    it would; a shape instead of a count is refused (it would repeat numbers across rows)."""
    from ldp_gym.wrappers.mechanisms.noise import draw_grid_normals, draw_normals
    for count in (0, 1, 7, 4097):
        a, b = np.random.default_rng(11), np.random.default_rng(11)
        assert np.array_equal(draw_normals(a, count), b.standard_normal(count))
        assert a.random() == b.random()
    for draw in (draw_normals, lambda rng, c: draw_grid_normals(rng, c, sd=1.0, grid=2.0**-20)):
        with pytest.raises(TypeError):
            draw(np.random.default_rng(0), (2, 3))
