"""The compiled MAB rules (agents/mab_kernels.py): one kernel on every path."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_gym.agents import DPUCB, KLUCB, LDPUCB, UCB1, Exp3, ThompsonSampling, TsallisINF
from ldp_gym.agents.mab_kernels import kl_ucb, kl_ucb_index

RULES = [(UCB1, {}), (KLUCB, {"c": 0.0}), (KLUCB, {"c": 3.0}), (ThompsonSampling, {}),
         (Exp3, {"horizon": 300}), (Exp3, {}), (TsallisINF, {}),
         (LDPUCB, {"epsilon": 1.0, "horizon": 300}),
         (LDPUCB, {"epsilon": 0.5, "lower": -1.0, "upper": 0.5, "horizon": 300}),
         (DPUCB, {"epsilon": 1.0, "horizon": 300}),
         (DPUCB, {"epsilon": 0.5, "gamma": 0.05, "lower": -1.0, "upper": 0.5, "horizon": 300})]


def _state(agent):
    """The agent's arrays (and its tree's, for DP-UCB)."""
    state = {k: v.copy() for k, v in vars(agent).items() if isinstance(v, np.ndarray)}
    tree = getattr(agent, "tree", None)
    if tree is not None:
        state.update({f"tree.{k}": v.copy() for k, v in vars(tree).items()
                      if isinstance(v, np.ndarray)})
    return state


@pytest.mark.parametrize("cls,kw", RULES, ids=str)
@pytest.mark.parametrize("rewards", ["bernoulli", "fractional", "outside [0, 1]"])
def test_block_path_is_bitwise_the_per_round_path(cls, kw, rewards):
    """play_block over pieces of a drawn block and act/observe round by round (batched, and a
    single-run agent on run 0): the same actions and state, bitwise."""
    n, length, k = 4, 300, 5
    rng = np.random.default_rng(1)
    means = rng.random((n, 1, k))
    u = rng.random((n, length, k))
    rewards = {"bernoulli": (u < means).astype(np.float64), "fractional": u * means,
               "outside [0, 1]": 5.0 * u * means - 2.0}[rewards]
    block = cls(k, num_envs=n, seed=3, **kw)
    actions = np.concatenate([block.play_block(None, rewards[:, a:b])
                              for a, b in ((0, 1), (1, 128), (128, length))], axis=1)
    rounds = cls(k, num_envs=n, seed=3, **kw)
    single = cls(k, seed=3, **kw)
    for s in range(length):
        a = rounds.act(np.zeros((n, 1)))
        assert np.array_equal(a, actions[:, s])
        rounds.observe(np.zeros((n, 1)), a, rewards[np.arange(n), s, a], np.zeros((n, 1)))
    x, y = _state(block), _state(rounds)
    assert x.keys() == y.keys() and all(np.array_equal(x[key], y[key]) for key in x)
    if cls in (LDPUCB, DPUCB):  # the mechanism's stream at the same place: the same next noise
        assert np.array_equal(block.mechanism.noise(7), rounds.mechanism.noise(7))
    single_block = cls(k, num_envs=1, seed=3, **kw).play_block(None, rewards[:1])
    for s in range(length):
        a = single.act([0.0])
        assert a == single_block[0, s]
        single.observe([0.0], a, float(rewards[0, s, a]), [0.0])


def test_play_block_refuses_bad_rewards():
    agent = UCB1(3, num_envs=2, seed=0)
    with pytest.raises(ValueError, match="rewards"):
        agent.play_block(None, np.zeros((2, 4, 2)))
    with pytest.raises(ValueError, match="rewards"):
        agent.play_block(None, np.full((2, 4, 3), np.nan))
    assert (agent.t == 0).all()


@pytest.mark.filterwarnings("ignore:divide by zero")
def test_kl_ucb_matches_bisection():
    """Newton's 10 steps against a 200-step bisection, to 1e-9, over p and levels."""
    for p in np.linspace(0, 1, 41):
        for level in (1e-8, 1e-3, 0.1, 1.0, 10.0, 300.0):
            lo, hi = p, 1.0
            for _ in range(200):
                q = (lo + hi) / 2
                kl = (p * np.log(p / q) if p > 0 else 0.0) + \
                    ((1 - p) * np.log((1 - p) / (1 - q)) if p < 1 else 0.0)
                lo, hi = (q, hi) if kl <= level else (lo, q)
            assert abs(kl_ucb(p, level) - lo) < 1e-9
    assert np.array_equal(kl_ucb_index(np.array([0.2, 0.5]), 0.1),
                          [kl_ucb(0.2, 0.1), kl_ucb(0.5, 0.1)])


def test_ties_are_broken_uniformly():
    """Three equal indices (unpulled arms): each chosen about a third of the time (chi-square,
    false-alarm rate 1e-6), with one draw per tied choice."""
    from scipy import stats

    agent = UCB1(3, num_envs=30_000, seed=0)
    counts = np.bincount(agent.act(np.zeros((30_000, 1))), minlength=3)
    assert stats.chisquare(counts).pvalue > 1e-6


@pytest.mark.parametrize("table", [False, True])
def test_adversarial_blocks_are_bitwise_the_rounds_of_step(table):
    import ldp_gym

    kw = {"reward_table": np.random.default_rng(0).random((40, 4))} if table else {"n_arms": 4}
    envs = [ldp_gym.make_vector_env("LDPAdversarialMAB-v0", 3, 40, **kw) for _ in range(2)]
    for env in envs:
        env.reset(seed=5)
    _, rewards, regrets = envs[0].draw_block(30)
    actions = np.random.default_rng(1).integers(0, 4, (30, 3))
    rows = np.arange(3)
    for s, a in enumerate(actions):
        _, reward, _, _, info = envs[1].step(a)
        assert np.array_equal(reward, rewards[rows, s, a])
        assert np.array_equal(info["regret"], regrets[rows, s, a])


@pytest.mark.parametrize("cls", [LDPUCB, DPUCB])
def test_block_path_records_its_releases_as_the_rounds_do(cls):
    """The replay test's trace: one record per round, the clipped inputs (DP-UCB: the exact
    sums of the nodes its trees close), on both paths."""
    from ldp_gym.wrappers.mechanisms import recording

    rewards = np.random.default_rng(0).uniform(-1, 2, (3, 20, 4))
    traces = []
    for path in ("block", "rounds"):
        agent = cls(4, epsilon=1.0, horizon=50, num_envs=3, seed=1)
        with recording() as trace:
            if path == "block":
                agent.play_block(None, rewards)
            else:
                for s in range(20):
                    a = agent.act(np.zeros((3, 1)))
                    agent.observe(np.zeros((3, 1)), a, rewards[np.arange(3), s, a],
                                  np.zeros((3, 1)))
        traces.append(trace)
    assert len(traces[0]) == len(traces[1]) == 20
    for x, y in zip(*traces):
        assert np.array_equal(x["input"], y["input"]) and x["epsilon"] == y["epsilon"]


def test_kl_ucb_breaks_exact_ties_uniformly():
    """Arms with the same pulls and sums have the same index: each is chosen about a third of
    the time (the shortcut that skips Newton's steps never rules an exact tie out; chi-square,
    false-alarm rate 1e-6)."""
    from scipy import stats

    agent = KLUCB(3, num_envs=30_000, seed=0)
    agent.counts[:] = 1
    agent.t[:] = 3
    counts = np.bincount(agent.act(np.zeros((30_000, 1))), minlength=3)
    assert stats.chisquare(counts).pvalue > 1e-6


def test_committed_rounds_update_the_sums():
    agent = UCB1(3, num_envs=2, seed=0)
    agent.observe_committed(np.array([0, 1]), np.array([4, 2]), np.array([4.0, 1.0]),
                            reward_bounds=(0.0, 1.0))
    assert agent.sums.tolist() == [[4.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def test_secure_noise_drawn_ahead_is_not_copied():
    """A copy (pickle, deepcopy) of a secure mechanism holds none of the noise drawn ahead:
    the original and the copy add independent noise."""
    import copy
    import pickle

    from ldp_gym.wrappers import LaplaceMechanism

    m = LaplaceMechanism(1.0, secure=True)
    m(np.zeros(1))
    for twin in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert not np.array_equal(m(np.full(50, 0.5)), twin(np.full(50, 0.5)))


@pytest.mark.parametrize("c", [0.0, 3.0])
@pytest.mark.parametrize("means", [(0.75, 0.625, 0.5, 0.375, 0.25), (0.5, 0.5, 0.49, 0.1),
                                   (0.99, 0.98, 0.5), (1.3, -0.2, 0.6)])
def test_kl_ucb_cached_bounds_never_change_a_choice(c, means):
    """KL-UCB with its cached index bounds (the leader sure without Newton's steps) and
    without them (the full scan of every round): bitwise the same actions and sums."""
    n, length = 6, 4000
    rng = np.random.default_rng(2)
    m = np.array(means)
    rewards = (rng.random((n, length, m.size)) < np.clip(m, 0, 1)) * np.where(m > 1, m, 1.0) \
        + np.where(m < 0, m, 0.0)
    cached = KLUCB(m.size, c=c, num_envs=n, seed=4)
    full = KLUCB(m.size, c=c, num_envs=n, seed=4)
    full._cache = np.zeros((0, m.size + 1, 4))  # no cache: every round scans every arm
    assert np.array_equal(cached.play_block(None, rewards), full.play_block(None, rewards))
    assert np.array_equal(cached.sums, full.sums) and (cached._cache[:, :-1, 1] > 0).any()


def test_binomial_below_is_the_binomial_cdf():
    from scipy import stats

    from ldp_gym.agents.mab_kernels import binomial_below

    for s, n, x in ((0, 10, 0.3), (3, 40, 0.5), (80, 100, 0.9), (120, 5000, 0.05),
                    (8000, 10_000, 0.85)):
        total, _ = binomial_below(float(s), float(n), x, np.inf)
        assert total == pytest.approx(stats.binom.cdf(s, n, x), rel=1e-9)
        # the inversion: j is where the sum from s down first passes the target
        j = binomial_below(float(s), float(n), x, 0.5 * total)[1]
        assert stats.binom.cdf(s, n, x) - stats.binom.cdf(j - 1, n, x) > 0.5 * total * (1 - 1e-9)
        assert stats.binom.cdf(s, n, x) - stats.binom.cdf(j, n, x) <= 0.5 * total * (1 + 1e-9)


@pytest.mark.parametrize("posteriors", [
    ((900, 100), (80, 20), (29, 19), (0, 0)),       # a likely arm, a rare one, a direct one
    ((4000, 1000), (3960, 1040), (30, 40), (2, 7)),  # a close second: drawn directly
])
def test_thompson_choice_has_the_law_of_the_largest_beta_draw(posteriors):
    """Thompson's kernel draws the leader and only the arms that may pass its threshold; its
    choice has the law of the argmax of every arm's Beta(1 + s, 1 + f) draw: the frequencies
    of 400,000 runs in one state against the integrals P(arm k largest) (chi-square, false-alarm
    rate 1e-6)."""
    from scipy import integrate, stats

    n = 400_000
    s, f = (np.array(v, dtype=float) for v in zip(*posteriors))
    agent = ThompsonSampling(s.size, num_envs=n, seed=7)
    agent.counts[:] = (s + f).astype(np.int64)
    agent.successes[:] = np.append(s[0], np.round(0.5 * s[1:]))  # the leader's, and others'
    agent.act(np.zeros((n, 1)))  # caches filled on those successes, then the state written:
    agent.successes[:] = s       # the tails are keyed on successes as well as pulls
    chosen = np.bincount(agent.act(np.zeros((n, 1))), minlength=s.size)
    dists = [stats.beta(1 + a, 1 + b) for a, b in zip(s, f)]

    def largest(k):
        def density(x):
            return dists[k].pdf(x) * np.prod([d.cdf(x) for j, d in enumerate(dists) if j != k])
        points = sorted({float(np.clip(d.mean(), 1e-6, 1 - 1e-6)) for d in dists})
        return integrate.quad(density, 0, 1, points=points, limit=500, epsabs=1e-13)[0]

    p = np.array([largest(k) for k in range(s.size)])
    assert p.sum() == pytest.approx(1.0, abs=1e-7)
    seen = p * n > 5  # categories too rare to count are merged into the first
    expected = np.append(p[seen] * n, p[~seen].sum() * n)
    observed = np.append(chosen[seen], chosen[~seen].sum())
    keep = expected > 0
    stat = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stat < stats.chi2.isf(1e-6, keep.sum() - 1), (chosen, p * n)
    assert chosen[~seen].sum() <= 5  # rarer than one in 80,000 runs: seen at most a few times


def test_kl_ucb_cache_follows_sums_written_in_place():
    """Sums written in place after a choice (pulls unchanged): the cached bounds are
    recomputed, and the choice is the full scan's."""
    cached, full = KLUCB(2, num_envs=1, seed=0), KLUCB(2, num_envs=1, seed=0)
    full._cache = np.zeros((0, 3, 4))
    for agent in (cached, full):
        agent.counts[:] = [[5000, 100]]
        agent.sums[:] = [[3000.0, 10.0]]
        agent.t[:] = 5100
    assert cached.act(np.zeros((1, 1))) == full.act(np.zeros((1, 1))) == 0
    for agent in (cached, full):
        agent.sums[:] = [[3000.0, 100.0]]  # arm 1 now paid 1 every time
    assert cached.act(np.zeros((1, 1))) == full.act(np.zeros((1, 1))) == 1


def test_thompson_refuses_sums():
    agent = ThompsonSampling(3, num_envs=2, seed=0)
    with pytest.raises(TypeError, match="observe"):
        agent.observe_committed(np.array([0, 1]), np.array([4, 2]), np.array([4.0, 1.0]),
                                reward_bounds=(0.0, 1.0))
