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
