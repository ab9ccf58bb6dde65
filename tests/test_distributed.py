"""Distributed DP by secure aggregation: the exact law of the analyser's view (pure epsilon-DP
at every residue, and the authors' Gamma scale flagged), the exact integer samplers' laws, the
shares' discrete Laplace sum, the agent's audit with a mutant, and Dist-DP-SE's degenerate
budgets. Fixed seeds; each
statistical test's false-alarm rate is 1e-6."""

import math
from fractions import Fraction

import numpy as np
import pytest
from numba import njit
from scipy import stats

import ldp_gym
from ldp_gym.agents import DistDPSE, ShuffleSE
from ldp_gym.wrappers.mechanisms.audit import audit
from ldp_gym.wrappers.mechanisms.compiled import (
    bernoulli_exp,
    geometric_exp,
    polya_count,
    secagg_rows,
    uniform_below,
)
from ldp_gym.wrappers.mechanisms.distributed import (
    SecAggSum,
    dist_dp_parameters,
)


def test_parameters_are_the_authors():
    """``precision``, ``accuracy`` and ``modulo`` of BatchSEDistDP (MABPrivate.py), delta = 0.1."""
    for n, eps in ((4, 1.0), (1024, 1.0), (64, 0.1), (4**9, 0.5)):
        g, tau, m, s = dist_dp_parameters(n, eps, 0.1)
        assert g == math.ceil(eps * math.sqrt(n))
        assert tau == math.ceil(g * math.log(2 / 0.1) / eps)
        assert m == n * g + 2 * tau + 1
        # the shares' ratio exp(-s/2^40): at most epsilon spent, by under one part in 10^6
        assert Fraction(int(g) * int(s), 2**40) <= eps < (int(g) * (int(s) + 1)) / 2**40
        assert 1 - 1e-6 < int(g) * int(s) / 2**40 / eps


def view_law(xs, eps, beta=0.1, ratio=None):
    """The exact law of SecAgg's output ``(sum x^ + Z) mod m`` for users' rewards ``xs``;
    ``ratio`` replaces the discrete Laplace ratio q (a mutant)."""
    n = len(xs)
    g, _, m, s = (int(v) for v in dist_dp_parameters(n, eps, beta))
    q = math.exp(-s / 2**40)  # the implemented ratio, at most exp(-eps/g)
    q = q if ratio is None else ratio(q)
    s = np.ones(1)
    for x in xs:  # each user's unbiased rounding of x g
        lo, f = math.floor(x * g), x * g - math.floor(x * g)
        user = np.zeros(lo + 2)
        user[lo], user[lo + 1] = 1 - f, f
        s = np.convolve(s, user)
    z = np.arange(-60 * m, 60 * m + 1)
    folded = np.bincount(np.mod(z, m), weights=(1 - q) / (1 + q) * q ** np.abs(z), minlength=m)
    law = np.zeros(m)
    for k, p in enumerate(s):
        law += p * np.roll(folded, k)
    return law


@pytest.mark.parametrize("n,eps,others", [(4, 1.0, 0.5), (16, 1.0, 0.3), (9, 0.5, 0.0), (25, 2.0, 0.7)])
def test_exact_view_is_epsilon_dp_and_the_authors_scale_is_not(n, eps, others):
    worst = []
    for ratio in (None, lambda q: 1 - q):
        p0 = view_law([0.0] + [others] * (n - 1), eps, ratio=ratio)
        p1 = view_law([1.0] + [others] * (n - 1), eps, ratio=ratio)
        assert p0.sum() == pytest.approx(1.0) and p1.sum() == pytest.approx(1.0)
        worst.append(np.abs(np.log(p0) - np.log(p1)).max())
    assert eps - 0.05 < worst[0] <= eps + 1e-9  # tight: the far tail's ratio is e^eps
    assert worst[1] > 1.5 * eps                  # the authors' Gamma scale: far less noise


def test_shares_sum_to_discrete_laplace():
    """Users holding 0 send their shares alone: SecAgg's decoded sum times g is the sum of
    the shares, discrete Laplace of ratio q (within the accuracy tau; the test bins reach 25)."""
    ch = SecAggSum(16, 1.0, beta=1e-4, seed=0)
    assert ch.precision == 4 and ch.accuracy >= 25
    z = np.rint(ch.analyze(ch.aggregate(ch.randomize(np.zeros((200_000, 16))))) * 4)
    q = ch.q
    expected = (1 - q) / (1 + q) * q ** np.abs(np.arange(-25, 26))
    observed = np.histogram(z, np.arange(-25, 27) - 0.5)[0]
    chi = stats.chisquare(np.append(observed, len(z) - observed.sum()),
                          np.append(expected, 1 - expected.sum()) * len(z))
    assert chi.pvalue > 1e-6


def _samples(which, a, b, count, seed):
    """``count`` draws of an exact sampler: 0 Bernoulli(exp(-a/b)), 1 geometric of ratio
    exp(-a/2^40), 2 Polya(1/b, exp(-a/2^40)), 3 uniform below a."""
    words = np.random.default_rng(seed).integers(0, 2**64, size=40 * count, dtype=np.uint64)
    out, cur = _draw(which, a, b, count, words)
    assert cur[1] == 0  # enough words
    return out


@njit(cache=True)
def _draw(which, a, b, count, words):
    cur, out = np.zeros(2, np.int64), np.empty(count, np.int64)
    for i in range(count):
        if which == 0:
            out[i] = bernoulli_exp(a, b, words, cur)
        elif which == 1:
            out[i] = geometric_exp(a, words, cur)
        elif which == 2:
            out[i] = polya_count(b, a, words, cur)
        else:
            out[i] = uniform_below(a, words, cur)
    return out, cur


def _chi2_pvalue(draws, pmf):
    """Chi-square p-value of integer draws against pmf on 0..len(pmf)-1 (the rest one bin)."""
    observed = np.bincount(np.minimum(draws, len(pmf)), minlength=len(pmf) + 1)
    expected = np.append(pmf, max(1 - pmf.sum(), 0.0)) * len(draws)
    keep = expected > 5
    rest = np.array([observed[~keep].sum()]), np.array([expected[~keep].sum()])
    obs, exp = np.append(observed[keep], rest[0]), np.append(expected[keep], rest[1])
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def test_exact_samplers_draw_their_laws():
    """Bernoulli(exp(-gamma)) for gamma below and above 1, the geometric count, the uniform
    integer (a non-power-of-2 range) and the Polya share against scipy's negative binomial."""
    for a, b in ((1, 3), (7, 2), (2**40 - 1, 2**40)):
        draws = _samples(0, a, b, 200_000, a)
        assert stats.binomtest(int(draws.sum()), draws.size, math.exp(-a / b)).pvalue > 1e-6
    for a in (2**40 // 3, 5 * 2**40 // 2):
        q = math.exp(-a / 2**40)
        pmf = (1 - q) * q ** np.arange(40)
        assert _chi2_pvalue(_samples(1, a, 1, 200_000, 1), pmf) > 1e-6
    assert _chi2_pvalue(_samples(3, 7, 1, 70_000, 2), np.full(7, 1 / 7)) > 1e-6
    assert _samples(3, 2**62, 1, 1000, 3).max() < 2**62
    for n, eps in ((1, 1.0), (16, 1.0), (4, 0.1), (1024, 2.0)):
        g, _, _, s = (int(v) for v in dist_dp_parameters(n, eps, 0.1))
        q = math.exp(-s / 2**40)
        pmf = stats.nbinom.pmf(np.arange(200), 1 / n, 1 - q)
        assert _chi2_pvalue(_samples(2, s, n, 200_000, n), pmf) > 1e-6


def test_a_user_whose_words_run_out_starts_again_on_them():
    """The users' messages do not depend on where the buffers of words end: cut anywhere and
    resumed on the user's words extended, they are those of one long buffer."""
    x = np.random.default_rng(2).random(300)
    n, g, s, m = (np.full(300, v, np.int64) for v in (64, 8, 8 * 2**40 // 64, 10**6))
    words = np.random.default_rng(3).integers(0, 2**64, size=40_000, dtype=np.uint64)
    whole, cur = np.empty(300, np.int64), np.zeros(2, np.int64)
    assert secagg_rows(x, n, g, s, m, words, cur, 0, whole) == 300
    for cut in (1, 17, 100, 1234):
        out, cur, done, buf, given = np.empty(300, np.int64), np.zeros(2, np.int64), 0, words[:cut], cut
        while done < 300:
            done = secagg_rows(x, n, g, s, m, buf, cur, done, out)
            buf = np.concatenate([buf[cur[0]:], words[given:given + cut]])
            given += cut
            cur[:] = 0
        assert np.array_equal(out, whole)


def test_channel_is_unbiased_and_refuses_bad_input():
    ch = SecAggSum(256, 1.0, seed=0)
    x = np.random.default_rng(1).random((4000, 256))
    estimates = ch.analyze(ch.aggregate(ch.randomize(x)))
    err = estimates - x.sum(axis=1)
    assert abs(err.mean()) < 5 * err.std() / math.sqrt(4000)  # unbiased
    assert err.std() == pytest.approx(math.sqrt(2 * 256 + 256 / 6) / 16, rel=0.1)  # noise + rounding
    with pytest.raises(ValueError, match="n=256"):
        ch.randomize(np.zeros(255))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ch.randomize(np.full(256, 1.5))
    with pytest.raises(ValueError, match="messages"):
        ch.aggregate(np.full(256, ch.modulus))
    for kw, name in (({"epsilon": 0.0}, "epsilon"), ({"n": 0}, "n"), ({"beta": 1.0}, "beta")):
        with pytest.raises(ValueError, match=name):
            SecAggSum(**{"n": 16, "epsilon": 1.0, **kw})


def first_release(cls, first_reward, n, seed):
    """Arm 0's private mean of batch 1 (4 users each, 2 arms) when its first reward is
    ``first_reward`` and every other reward is 0.5, through the agent's block path."""
    agent = cls(2, epsilon=1.0, horizon=1000, num_envs=n, seed=seed)
    rewards = np.full((n, 8, 2), 0.5)
    rewards[:, 0, 0] = first_reward
    agent.play_block(None, rewards)
    return agent.released[:, 0].copy()


class AuthorsScaleDistDPSE(DistDPSE):
    """Mutant: the Polya shares' Gamma scale of the authors' code, (1 - q)/q: the users draw
    with ratio 1 - q."""

    def _plan(self, rows):
        super()._plan(rows)
        self._p1[rows] = np.floor(-np.log1p(-self.q[rows]) * 2**40)  # ratio 1 - q


@pytest.mark.audit
def test_agent_release_audit_and_authors_scale_mutant():
    ok = audit(lambda k: first_release(DistDPSE, 0.0, k, 1),
               lambda k: first_release(DistDPSE, 1.0, k, 2), n=200_000)
    assert ok.epsilon_lower <= 1.0
    bad = audit(lambda k: first_release(AuthorsScaleDistDPSE, 0.0, k, 3),
                lambda k: first_release(AuthorsScaleDistDPSE, 1.0, k, 4), n=200_000)
    assert bad.epsilon_lower > 1.0


def reference_batched_se(table, horizon, beta):
    """Non-private batched successive elimination with Dist-DP-SE's batches and widths at
    epsilon = infinity (the authors' BatchSE skeleton): the k-th pull of arm a gets
    ``table[a, k]``."""
    k = table.shape[0]
    active, pulls, actions, b = np.ones(k, bool), np.zeros(k, int), [], 1
    while len(actions) < horizon:
        arms = np.flatnonzero(active)
        if len(arms) == 1:
            return (actions + [int(arms[0])] * horizon)[:horizon]
        B = 4 ** b
        for a in arms:
            actions += [int(a)] * B
            pulls[a] += B
        mu = {a: table[a, pulls[a] - B:pulls[a]].sum() / B for a in arms}
        width = math.sqrt(math.log(4 * len(arms) * b * b / beta) / (2 * B))
        for a in arms:
            active[a] = max(mu.values()) - mu[a] <= 2 * width
        b += 1
    return actions[:horizon]


def test_huge_epsilon_is_non_private_batched_elimination_on_both_paths():
    rng = np.random.default_rng(5)
    horizon, means = 6000, np.array([0.7, 0.5, 0.45])
    table = (rng.random((3, horizon)) < means[:, None]).astype(float)
    expected = reference_batched_se(table, horizon, 0.1)
    rounds = DistDPSE(3, epsilon=10.0, horizon=horizon, num_envs=1, seed=6)
    pulls, got, obs = np.zeros(3, int), [], np.zeros((1, 1))
    for _ in range(horizon):
        a = int(rounds.act(obs)[0])
        rounds.observe(obs, np.array([a]), np.array([table[a, pulls[a]]]), obs)
        pulls[a] += 1
        got.append(a)
    assert got == expected
    block = DistDPSE(3, epsilon=10.0, horizon=horizon, num_envs=1, seed=7)
    # a drawn block holds every arm's reward of each round: round t's reward of arm a is the
    # one the k-th pull of a gets in the reference, with k the pulls of a before t
    index = np.zeros((horizon, 3), int)
    for t, a in enumerate(expected):
        index[t:, a] += 1
    index = np.minimum(np.vstack([np.zeros((1, 3), int), index[:-1]]), horizon - 1)
    rewards = table[np.arange(3), index][None]
    got_block = np.concatenate([block.play_block(None, rewards[:, :2500]),
                                block.play_block(None, rewards[:, 2500:])], axis=1)
    assert got_block[0].tolist() == expected


def test_tiny_epsilon_gives_linear_regret_and_bad_budgets_are_refused():
    res = ldp_gym.run("LDPMAB-v0", {"D": (DistDPSE, {"epsilon": 1e-3})}, horizon=20_000, n_runs=4,
                      seed=1, env_kwargs={"means": [0.75, 0.5, 0.25]})
    assert res.regret["D"][:, -1].mean() > 0.3 * 0.375 * 20_000
    for eps in (1e12, 51.0, 1e-7):
        with pytest.raises(ValueError, match="epsilon"):
            DistDPSE(3, epsilon=eps, horizon=10**4)
    with pytest.raises(ValueError, match="beta"):
        DistDPSE(3, epsilon=1.0, beta=0.0, horizon=10**4)
    agent = DistDPSE(2, epsilon=1.0, horizon=1000, num_envs=2, seed=0)
    with pytest.raises(TypeError, match="observe_committed"):
        agent.observe_committed(np.zeros(2, int), np.full(2, 4), np.full(2, 2.0), reward_bounds=(0, 1))


@pytest.mark.parametrize("cls,kw", [(DistDPSE, {"epsilon": 1.0}),
                                    (DistDPSE, {"epsilon": 0.5, "lower": -1.0, "upper": 0.5}),
                                    (ShuffleSE, {"epsilon": 1.0, "beta": 0.5})], ids=str)
def test_block_path_is_bitwise_the_per_round_path(cls, kw):
    """play_block over pieces of a drawn block and act/observe round by round, through
    several epochs' ends: the same actions and state, bitwise (one kernel, one draw order)."""
    n, length, k = 4, 2500, 3
    rng = np.random.default_rng(1)
    rewards = 1.6 * rng.random((n, length, k)) * rng.random((n, 1, k)) - 0.3  # some outside
    block = cls(k, num_envs=n, horizon=length, seed=3, **kw)
    actions = np.concatenate([block.play_block(None, rewards[:, a:b])
                              for a, b in ((0, 1), (1, 700), (700, length))], axis=1)
    rounds = cls(k, num_envs=n, horizon=length, seed=3, **kw)
    obs = np.zeros((n, 1))
    for s in range(length):
        a = rounds.act(obs)
        assert np.array_equal(a, actions[:, s])
        rounds.observe(obs, a, rewards[np.arange(n), s, a], obs)
    assert (block.epoch >= 2).all()  # epochs ended (and arms were eliminated in some runs)
    for key, value in vars(block).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, getattr(rounds, key)), key


def test_outside_audit_findings_are_fixed():
    """From the independent audit of 2026-11-27: the OS-CSPRNG uniform could be exactly 1.0;
    the sum's parameters were unchecked (overflowing moduli); a huge epsilon overflowed the
    blanket's delta. (Its float Polya sampler is gone: see the exact samplers' tests.)"""
    from ldp_gym.wrappers.mechanisms.noise import SecureGenerator
    from ldp_gym.wrappers.mechanisms.shuffle import blanket_delta

    s = SecureGenerator()
    s._words = lambda n: np.full(n, np.uint64(2**64 - 1))
    assert s.random() < 1.0 and s.random(3).max() < 1.0
    for kw, name in (({"epsilon": 1e300}, "epsilon"), ({"n": 2**40, "epsilon": 50.0}, "n"),
                     ({"n": 10**19}, "n")):
        with pytest.raises((ValueError, OverflowError), match=name):
            SecAggSum(**{"n": 4, "epsilon": 1.0, **kw})
    with pytest.raises(ValueError, match="n"):
        dist_dp_parameters(0, 1.0, 0.1)
    assert blanket_delta(0.5, 100, 1e300) == 0.0


def test_second_audit_findings_are_fixed():
    """From the independent audit of the exact samplers (2026-11-27): the compiled samplers
    refused no bad argument (some hung, some returned no noise); ``dist_dp_parameters``
    truncated a non-integer n; epsilon = 0 was refused with the wrong range."""
    words, cur = np.zeros(8, np.uint64), np.zeros(2, np.int64)
    for call in (lambda: uniform_below(-3, words, cur), lambda: uniform_below(0, words, cur),
                 lambda: bernoulli_exp(1, 0, words, cur), lambda: geometric_exp(0, words, cur),
                 lambda: polya_count(0, 2**40, words, cur)):
        with pytest.raises(ValueError):
            call()
    for n in (2.5, np.float64(3.9), True):
        with pytest.raises(ValueError, match="n must be integers"):
            dist_dp_parameters(n, 1.0, 0.1)
    with pytest.raises(ValueError, match=r"epsilon must lie in \[1e-06, 50\]"):
        SecAggSum(8, epsilon=0.0)
