"""The shuffle model: the privacy blanket's exact delta, its audit with a mutant, and
Shuffle-SE's degenerate budgets. Fixed seeds; each audit's false-alarm rate is alpha = 1e-6."""

import math

import numpy as np
import pytest
from scipy import stats

import ldp_gym
from ldp_gym.agents import ShuffleSE
from ldp_gym.wrappers.mechanisms.audit import audit
from ldp_gym.wrappers.mechanisms.shuffle import ShuffleBitSum, blanket_delta, blanket_gamma


def view_delta(gamma, n, eps):
    """The delta of the view (M, W), by enumerating every M and k."""
    e, total = math.exp(eps), 0.0
    for m in range(n):
        b = stats.binom.pmf(np.arange(m + 2), m, 0.5)
        shifted = np.concatenate([[0.0], b[:-1]])
        p1 = gamma / 2 * b + (1 - gamma / 2) * shifted
        p0 = (1 - gamma / 2) * b + gamma / 2 * shifted
        worst = max(np.maximum(p1 - e * p0, 0).sum(), np.maximum(p0 - e * p1, 0).sum())
        total += stats.binom.pmf(m, n - 1, gamma) * worst
    return total


def count_delta(gamma, n, eps):
    """The delta of what the analyser sees, the count, at the worst data of the other users."""
    e, worst = math.exp(eps), 0.0
    for c in range(n):
        others = np.convolve(stats.binom.pmf(np.arange(c + 1), c, 1 - gamma / 2),
                             stats.binom.pmf(np.arange(n - c), n - 1 - c, gamma / 2))
        p1 = np.convolve(others, [gamma / 2, 1 - gamma / 2])
        p0 = np.convolve(others, [1 - gamma / 2, gamma / 2])
        worst = max(worst, np.maximum(p1 - e * p0, 0).sum(), np.maximum(p0 - e * p1, 0).sum())
    return worst


@pytest.mark.parametrize("gamma,n,eps", [(0.3, 20, 0.5), (0.1, 50, 1.0), (0.05, 200, 1.0), (0.5, 30, 0.2)])
def test_blanket_delta_is_exact_for_its_view_and_bounds_the_count(gamma, n, eps):
    d = blanket_delta(gamma, n, eps)
    assert d == pytest.approx(view_delta(gamma, n, eps), rel=1e-9, abs=1e-15)
    assert count_delta(gamma, n, eps) <= d


def test_blanket_gamma_is_the_smallest_that_meets_delta():
    g = blanket_gamma(1000, 1.0, 1e-6)
    assert blanket_delta(g, 1000, 1.0) <= 1e-6 < blanket_delta(g * (1 - 1e-6), 1000, 1.0)
    assert blanket_gamma(1000, 2.0, 1e-6) < g < blanket_gamma(100, 1.0, 1e-6)


def test_channel_is_unbiased_and_refuses_bad_input():
    ch = ShuffleBitSum(500, 1.0, 1e-4, seed=0)
    bits = (np.random.default_rng(1).random((4000, 500)) < 0.3).astype(np.int8)
    estimates = ch.analyze(ch.shuffle(ch.randomize(bits)))
    assert abs((estimates - bits.sum(axis=1)).mean()) < 0.5  # unbiased (sd of the mean ~0.2)
    with pytest.raises(ValueError, match="bits"):
        ch.randomize([0, 2])
    with pytest.raises(ValueError, match="epsilon"):
        ShuffleBitSum(10, 0.0, 1e-6)
    with pytest.raises(ValueError, match="n"):
        ShuffleBitSum(0, 1.0, 1e-6)


def batch_counts(first_bit, gamma, n, seed):
    """The shuffled count of a batch whose other n - 1 users hold 0: each of them sends a 1
    with probability gamma/2, the first user with 1 - gamma/2 (bit 1) or gamma/2 (bit 0).
    The same law as ``ShuffleBitSum.randomize`` then a sum, drawn directly."""
    rng = np.random.default_rng(seed)
    q = 1 - gamma / 2 if first_bit else gamma / 2

    def sample(k):
        return (rng.binomial(n - 1, gamma / 2, k) + (rng.random(k) < q)).astype(np.float64)
    return sample


def test_batch_counts_law_is_the_channels():
    n, g = 50, 0.3
    ch = ShuffleBitSum(n, 1.0, 1e-3, seed=0)
    ch.gamma = g
    bits = np.zeros((100_000, n), dtype=np.int8)
    bits[:, 0] = 1
    direct, channel = batch_counts(1, g, n, 9)(100_000), ch.analyze(ch.randomize(bits)) * (1 - g) + g * n / 2
    assert stats.ks_2samp(direct, channel).pvalue > 1e-6  # false alarm 1e-6


@pytest.mark.audit
def test_batch_audit_and_half_gamma_mutant():
    n, eps, delta = 200, 1.0, 1e-3
    g = ShuffleBitSum(n, eps, delta).gamma
    ok = audit(batch_counts(0, g, n, 1), batch_counts(1, g, n, 2), n=1_000_000, delta=delta)
    assert ok.epsilon_lower <= eps
    bad = audit(batch_counts(0, g / 2, n, 3), batch_counts(1, g / 2, n, 4), n=1_000_000, delta=delta)
    assert bad.epsilon_lower > eps


def reference_se(table, horizon, beta):
    """Non-private successive elimination with Shuffle-SE's epochs and widths at gamma = 0,
    on a shared table of bits: the k-th pull of arm a gets ``table[a, k]``."""
    k = table.shape[0]
    active, pulls, actions, e = np.ones(k, bool), np.zeros(k, int), [], 1
    while len(actions) < horizon:
        arms = np.flatnonzero(active)
        if len(arms) == 1:
            actions += [int(arms[0])] * (horizon - len(actions))
            break
        log_term = math.log(4 * len(arms) * e ** 2 / beta)
        R = math.ceil(8 * log_term * 4 ** e)
        sums = {}
        for a in arms:
            take = min(R, horizon - len(actions))
            actions += [int(a)] * take
            sums[a] = table[a, pulls[a]:pulls[a] + R].sum()
            pulls[a] += take
        if len(actions) >= horizon:
            break
        mu = {a: sums[a] / R for a in arms}
        best, width = max(mu.values()), math.sqrt(log_term / (2 * R))
        for a in arms:
            active[a] = best - mu[a] <= 2 * width
        e += 1
    return actions[:horizon]


def test_huge_epsilon_is_non_private_successive_elimination():
    rng = np.random.default_rng(5)
    horizon, means = 6000, np.array([0.7, 0.5, 0.4])
    table = (rng.random((3, horizon)) < means[:, None]).astype(float)
    agent = ShuffleSE(3, epsilon=50.0, delta=1e-6, horizon=horizon, num_envs=1, seed=6)
    assert float(agent.gamma[0]) < 1e-15
    pulls, got, obs = np.zeros(3, int), [], np.zeros((1, 1))
    for _ in range(horizon):
        a = int(agent.act(obs)[0])
        agent.observe(obs, np.array([a]), np.array([table[a, pulls[a]]]), obs)
        pulls[a] += 1
        got.append(a)
    assert got == reference_se(table, horizon, 1.0 / horizon)


def test_tiny_epsilon_gives_linear_regret():
    res = ldp_gym.run("LDPMAB-v0", {"S": (ShuffleSE, {"epsilon": 1e-3})}, horizon=20_000, n_runs=4,
                      seed=1, env_kwargs={"means": [0.75, 0.5, 0.25]})
    assert res.regret["S"][:, -1].mean() > 0.3 * 0.375 * 20_000


def test_shuffle_agent_refuses_pure_dp():
    with pytest.raises(ValueError, match="delta"):
        ShuffleSE(3, epsilon=1.0, delta=0.0, horizon=100)


def test_outside_audit_findings_are_refused():
    """From the independent audit of 2026-11-26: a batch of the wrong size would get less
    privacy than stated; unchecked parameters claimed perfect privacy; a round-by-round
    private agent took sums it cannot privatise."""
    ch = ShuffleBitSum(1000, 1.0, 1e-6, seed=0)
    for bad in (np.ones(1), np.ones((3, 999))):
        with pytest.raises(ValueError, match="n=1000"):
            ch.randomize(bad)
    with pytest.raises(ValueError, match="messages"):
        ch.analyze(np.full(1000, 5.0))
    for call, name in ((lambda: blanket_delta(0.5, 100, float("nan")), "epsilon"),
                       (lambda: blanket_gamma(100, float("nan"), 1e-6), "epsilon"),
                       (lambda: blanket_gamma(100, 1.0, -1.0), "delta"),
                       (lambda: blanket_gamma(2.5, 1.0, 1e-6), "n"),
                       (lambda: blanket_delta(True, 100, 1.0), "gamma")):
        with pytest.raises((ValueError, TypeError), match=name):
            call()
    agent = ShuffleSE(2, epsilon=1.0, horizon=1000, num_envs=4, seed=0)
    x = agent.act(np.zeros((4, 1)))
    with pytest.raises(TypeError, match="observe_committed"):
        agent.observe_committed(1 - x, np.full(4, 864), np.full(4, 432.0), reward_bounds=(0, 1))
