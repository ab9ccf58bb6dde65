"""Combinatorial semi-bandits: the oracles of ldp_gym.oracles and LDPCombinatorialBandit-v0."""

from itertools import product

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import ldp_gym  # noqa: F401  (registers the ids)
from ldp_gym.envs import CombinatorialEnv, CombinatorialVectorEnv
from ldp_gym.oracles import Coverage, LayeredPaths, TopK, make_family

ENV_ID = "LDPCombinatorialBandit-v0"
FAMILY_KWARGS = [{"family": "topk"}, {"family": "paths"},
                 {"family": "coverage", "n_arms": 10, "max_size": 3}]
INFO_KEYS = {"expected_reward", "optimal_reward", "regret", "alpha", "beta", "projected"}


def all_sets(m, K, family):
    """Every feasible super arm of a small family, by brute force over {0, 1}^m."""
    rows = np.array(list(product([0, 1], repeat=m)), dtype=bool)
    return rows[family.feasible(rows)]


def brute_optimum(family, mu):
    sets = all_sets(family.m, family.K, family)
    return np.array([family.expected_reward(sets, np.repeat(row[None], len(sets), 0)).max()
                     for row in mu])


# --------------------------------------------------------------------------- oracles


def test_family_enumeration_counts():
    assert len(all_sets(6, 2, TopK(6, 2))) == 6 + 15
    assert len(all_sets(6, 2, LayeredPaths(2, 3))) == 9
    assert len(all_sets(5, 3, make_family("coverage", 5, 3))) == 5 + 10 + 10


@pytest.mark.parametrize("family", [TopK(7, 3), TopK(5, 5), TopK(6, 1), LayeredPaths(3, 3),
                                    LayeredPaths(1, 6)], ids=repr)
def test_linear_oracles_exact_against_enumeration(family):
    rng = np.random.default_rng(0)
    mu = rng.random((40, family.m))
    S = family.oracle(mu)
    assert S.dtype == bool and S.shape == mu.shape and family.feasible(S).all()
    best = brute_optimum(family, mu)
    assert np.allclose(family.expected_reward(S, mu), best)
    assert np.allclose(family.optimum(mu), best)
    # signed and infinite weights (agents' indices): still feasible, still the best set
    w = rng.standard_normal((40, family.m))
    w[:5, 0] = np.inf
    S = family.oracle(w)
    assert family.feasible(S).all()
    sets = all_sets(family.m, family.K, family).astype(float)
    finite = np.isfinite(w).all(axis=1)
    assert np.allclose(np.einsum("ij,ij->i", S[finite], w[finite]), (w[finite] @ sets.T).max(axis=1))
    assert S[~finite, 0].all()


@pytest.mark.parametrize("seed", range(4))
def test_greedy_coverage_against_enumeration(seed):
    rng = np.random.default_rng(seed)
    family = make_family("coverage", 8, 3, {"targets": 6, "density": 0.5, "seed": seed})
    mu = rng.random((30, family.m))
    best = brute_optimum(family, mu)
    assert np.allclose(family.optimum(mu), best)
    S = family.oracle(mu)
    assert family.feasible(S).all() and (S.sum(axis=1) == 3).all()
    got = family.expected_reward(S, mu)
    assert (got >= (1 - 1 / np.e) * best - 1e-12).all() and (got <= best + 1e-12).all()
    assert family.alpha == pytest.approx(1 - 1 / np.e) and family.beta == 1.0
    assert family.smoothness == "Binf" and not family.linear


def test_greedy_is_only_approximate_on_a_known_instance():
    # three arms of two targets each; greedy breaks the first tie towards arm 0 and loses
    p = np.array([[0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]], float)
    family = Coverage(3, 2, 4, p)
    mu = np.ones((1, 3))
    assert family.oracle(mu).astype(int).tolist() == [[1, 1, 0]]  # greedy: 3 of 4 targets
    assert family.expected_reward(family.oracle(mu), mu)[0] == 0.75
    assert family.optimum(mu)[0] == 1.0  # {1, 2} covers all four


def test_coverage_reward_is_multilinear_expectation():
    rng = np.random.default_rng(1)
    family = make_family("coverage", 6, 3, 1)
    mu = np.tile(rng.random(6), (200_000, 1))
    S = np.zeros((200_000, 6), bool)
    S[:, [0, 2, 5]] = True
    X = (rng.random(mu.shape) < mu).astype(float)
    assert family.reward(S, X).mean() == pytest.approx(family.expected_reward(S[:1], mu[:1])[0],
                                                       abs=3e-3)
    assert ((family.reward(S, X) >= 0) & (family.reward(S, X) <= 1)).all()


@pytest.mark.parametrize("family", [TopK(9, 4), LayeredPaths(3, 4), make_family("coverage", 9, 4)],
                         ids=repr)
def test_samples_feasible_and_projection(family):
    rng = np.random.default_rng(2)
    samples = family.sample(rng, 500)
    assert samples.dtype == np.int8 and family.feasible(samples).all()
    one = family.sample(rng)
    assert one.shape == (family.m,) and family.feasible(one[None])[0]
    raw = rng.integers(0, 2, size=(500, family.m))
    raw[0] = 0
    proj = family.project(raw)
    assert family.feasible(proj).all()
    ok = family.feasible(raw)
    assert np.array_equal(proj[ok], raw[ok].astype(bool))  # feasible rows unchanged


def test_projection_rule():
    assert TopK(5, 2).project([[1, 1, 1, 0, 1], [0, 0, 0, 0, 0]]).astype(int).tolist() == \
        [[1, 1, 0, 0, 0], [1, 0, 0, 0, 0]]
    assert LayeredPaths(2, 3).project([[0, 1, 1, 0, 0, 0]]).astype(int).tolist() == \
        [[0, 1, 0, 1, 0, 0]]


@pytest.mark.parametrize("call,error,msg", [
    (lambda: TopK(3, 4), ValueError, "K"), (lambda: TopK(3, 0), ValueError, "K"),
    (lambda: TopK(0, 1), ValueError, "m"), (lambda: make_family("trees", 5, 2), ValueError, "family"),
    (lambda: make_family("paths", 5, 2), ValueError, "multiple"),
    (lambda: Coverage(2, 1, 2, [[0.5, 2.0], [0, 0]]), ValueError, "probs"),
    (lambda: Coverage(2, 1, 3, [[0.5, 0.5], [0, 0]]), ValueError, "probs"),
    (lambda: TopK(3, 2).oracle([[np.nan, 0, 0]]), ValueError, "weights"),
    (lambda: TopK(3, 2).oracle([[0, 0]]), ValueError, "weights"),
    (lambda: TopK(3, 2).feasible([[2, 0, 0]]), ValueError, "S"),
    (lambda: TopK(3, 2).expected_reward([[1, 0, 0]], [[1.5, 0, 0]]), ValueError, "mu"),
    (lambda: TopK(3, 2).reward([[1, 0, 0]], [[0, 0]]), ValueError, "X"),
])
def test_family_bad_input(call, error, msg):
    with pytest.raises(error, match=msg):
        call()


# --------------------------------------------------------------------------- env


@pytest.mark.parametrize("kwargs", FAMILY_KWARGS, ids=lambda k: k["family"])
def test_gymnasium_check_env(kwargs):
    check_env(gym.make(ENV_ID, **kwargs).unwrapped, skip_render_check=True)


@pytest.mark.parametrize("kwargs", FAMILY_KWARGS, ids=lambda k: k["family"])
def test_sb3_check_env(kwargs):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(gym.make(ENV_ID, **kwargs), warn=True)


@pytest.mark.parametrize("kwargs", FAMILY_KWARGS, ids=lambda k: k["family"])
def test_single_env_contract(kwargs):
    env = gym.make(ENV_ID, max_episode_steps=5, **kwargs)
    obs, info = env.reset(seed=3)
    m = env.unwrapped.core.n_arms
    assert info == {} and obs.dtype == np.float32 and obs.shape == (2 * m,) and not obs.any()
    lo, hi = env.unwrapped.core.bounded_rewards
    for t in range(5):
        action = env.action_space.sample()
        assert env.action_space.contains(action)
        obs, rew, term, trunc, info = env.step(action)
        assert type(rew) is float and lo <= rew <= hi and term is False and trunc == (t == 4)
        assert set(info) == INFO_KEYS and info["projected"] is False
        assert np.array_equal(obs[m:], action) and not obs[:m][action == 0].any()
        assert env.observation_space.contains(obs)
        if env.unwrapped.core.family.linear:
            assert rew == pytest.approx(obs[:m].sum())
        assert info["regret"] == pytest.approx(info["optimal_reward"] - info["expected_reward"])


def test_bounded_rewards_declared():
    assert CombinatorialEnv(max_size=3).core.bounded_rewards == (0.0, 3.0)
    assert CombinatorialEnv(family="paths").core.bounded_rewards == (0.0, 4.0)
    assert CombinatorialEnv(family="coverage", n_arms=8, max_size=2).core.bounded_rewards == (0.0, 1.0)


@pytest.mark.parametrize("kwargs", FAMILY_KWARGS, ids=lambda k: k["family"])
def test_regret_zero_for_optimal_super_arm(kwargs):
    venv = CombinatorialVectorEnv(num_envs=6, max_episode_steps=50, **kwargs)
    venv.reset(seed=4)
    core = venv.core
    best = core.family.oracle(core.means)
    _, rewards, _, _, info = venv.step(best.astype(np.int8))
    assert np.allclose(info["expected_reward"], core.family.expected_reward(best, core.means))
    if core.family.alpha == 1.0:
        assert np.allclose(info["regret"], 0.0, atol=1e-12)
        assert np.allclose(info["optimal_reward"], info["expected_reward"])
    else:  # greedy: at least alpha opt, so the approximation regret is <= 0
        assert (info["regret"] <= 1e-12).all()
        assert np.allclose(info["optimal_reward"], (1 - 1 / np.e) * core.opt)
        assert np.allclose(core.opt, brute_optimum(core.family, core.means))
    # any other super arm: regret >= 0 for exact oracles
    _, _, _, _, info = venv.step(venv.action_space.sample())
    if core.family.alpha == 1.0:
        assert (info["regret"] >= -1e-12).all()


def test_given_means_and_beta_outcomes():
    mu = np.linspace(0.05, 0.95, 6)
    env = CombinatorialEnv(n_arms=6, max_size=2, means=mu, distribution="beta", concentration=3.0)
    env.reset(seed=0)
    assert np.array_equal(env.core.means[0], mu)
    outs = []
    for _ in range(2000):
        obs, *_ = env.step(np.array([0, 0, 0, 0, 1, 1]))
        outs.append(obs[4:6])
        assert ((obs[:6] > 0) == (obs[6:] > 0)).all() or (obs[:6] == 0).any()
    assert np.mean(outs, axis=0) == pytest.approx(mu[4:], abs=0.03)
    assert not np.isin(np.array(outs), [0.0, 1.0]).all()  # continuous outcomes


def test_strict_mode_refuses_infeasible_actions():
    env = gym.make(ENV_ID, max_size=2, max_episode_steps=5)
    env.reset(seed=0)
    bad = np.zeros(20, np.int8)
    bad[[1, 5, 7]] = 1
    with pytest.raises(ValueError, match=r"action.*\[1, 5, 7\].*K = 2") as err:
        env.step(bad)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="action"):
        env.step(np.zeros(20, np.int8))  # the empty set
    venv = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", family="paths")
    venv.reset(seed=0)
    acts = venv.action_space.sample()
    acts[2, :5] = 1  # two nodes of layer 0 and more
    with pytest.raises(ValueError, match=r"actions\[2\].*layer 0"):
        venv.step(acts)


def test_lenient_mode_projects():
    env = gym.make(ENV_ID, max_size=2, strict=False, means=np.linspace(0, 1, 20))
    env.reset(seed=0)
    bad = np.zeros(20, np.int8)
    bad[[1, 5, 7]] = 1
    obs, reward, _, _, info = env.step(bad)
    assert info["projected"] is True and np.flatnonzero(obs[20:]).tolist() == [1, 5]
    assert info["expected_reward"] == pytest.approx(float(np.linspace(0, 1, 20)[[1, 5]].sum()))
    obs, _, _, _, info = env.step(np.zeros(20, np.int8))
    assert info["projected"] is True and np.flatnonzero(obs[20:]).tolist() == [0]
    good = np.zeros(20, np.int8)
    good[[3]] = 1
    assert env.step(good)[4]["projected"] is False


@pytest.mark.parametrize("action,error", [
    (np.zeros(19, np.int8), ValueError), (np.full(20, 2), ValueError), (np.full(20, -1), ValueError),
    (np.zeros(20, bool), TypeError), (np.full(20, 0.5), ValueError), (np.zeros(20), ValueError),
    (3, ValueError), (None, TypeError), ("abc", TypeError)], ids=repr)
def test_bad_action_shapes_and_dtypes(action, error):
    env = gym.make(ENV_ID, max_episode_steps=5)
    env.reset(seed=0)
    with pytest.raises(error, match="action"):
        env.step(action)


def test_vector_env_refuses_bad_batches():
    venv = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point")
    venv.reset(seed=0)
    good = venv.action_space.sample()
    for actions, error in [(good[:2], ValueError), (good.astype(bool), TypeError),
                           (good.astype(float) / 2, ValueError), (good + 1, ValueError),
                           (good[:, :-1], ValueError), (np.ones_like(good), ValueError)]:
        with pytest.raises(error, match="actions"):
            venv.step(actions)
    venv.step(good)  # still usable


def test_vector_env_matches_single_env():
    """The vector env with one run is the single env, draw for draw (one core, one stream)."""
    env = CombinatorialEnv(family="coverage", n_arms=8, max_size=2)
    venv = CombinatorialVectorEnv(num_envs=1, max_episode_steps=100, family="coverage", n_arms=8,
                                  max_size=2)
    obs1, _ = env.reset(seed=7)
    obs2, _ = venv.reset(seed=7)
    assert np.array_equal(obs1, obs2[0]) and np.array_equal(env.core.means, venv.core.means)
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = env.core.family.sample(rng)
        o1, r1, _, _, i1 = env.step(a)
        o2, r2, _, _, i2 = venv.step(a[None])
        assert np.array_equal(o1, o2[0]) and r1 == r2[0]
        assert all(i1[k] == i2[k][0] for k in INFO_KEYS)


def test_make_vec_native_autoreset_and_partial_reset():
    venv = gym.make_vec(ENV_ID, num_envs=4, vectorization_mode="vector_entry_point",
                        max_episode_steps=3)
    obs, _ = venv.reset(seed=0)
    assert isinstance(venv.action_space, gym.spaces.Box) and venv.observation_space.contains(obs)
    for step in range(3):
        actions = venv.action_space.sample()
        assert venv.action_space.contains(actions)
        obs, rew, term, trunc, info = venv.step(actions)
        assert rew.shape == (4,) and not term.any() and trunc.all() == (step == 2)
        assert set(info) == INFO_KEYS | {f"_{k}" for k in INFO_KEYS}
        assert np.array_equal(venv.unwrapped.last_regret, info["regret"])
    obs, rew, term, trunc, info = venv.step(venv.action_space.sample())
    assert (rew == 0).all() and not info["_regret"].any() and not obs.any()
    before = venv.unwrapped.core.means.copy()
    mask = np.array([True, False, False, False])
    obs, _ = venv.reset(options={"reset_mask": mask})
    after = venv.unwrapped.core.means
    assert not np.array_equal(before[0], after[0]) and np.array_equal(before[1:], after[1:])
    assert np.allclose(venv.unwrapped.core.opt, venv.unwrapped.core.family.optimum(after))


def test_seeded_reset_reproducible_and_coverage_graph_seeded():
    env = CombinatorialEnv()
    env.reset(seed=1)
    a = env.core.means.copy()
    env.reset(seed=1)
    assert np.array_equal(a, env.core.means)
    env.reset(seed=2)
    assert not np.array_equal(a, env.core.means)
    p0 = CombinatorialEnv(family="coverage", n_arms=8, max_size=2).core.family.probs
    assert np.array_equal(p0, CombinatorialEnv(family="coverage", n_arms=8, max_size=2).core.family.probs)
    p1 = CombinatorialEnv(family="coverage", n_arms=8, max_size=2, family_seed=1).core.family.probs
    assert not np.array_equal(p0, p1)


def test_family_instance_accepted():
    fam = LayeredPaths(3, 2)
    env = CombinatorialEnv(family=fam)
    assert env.core.family is fam and env.action_space.n == 6
    with pytest.raises(ValueError, match="n_arms"):
        CombinatorialEnv(family=fam, n_arms=7)


@pytest.mark.parametrize("kwargs,error,msg", [
    ({"max_size": 21}, ValueError, "max_size"), ({"max_size": 0}, ValueError, "max_size"),
    ({"n_arms": 0}, ValueError, "n_arms"), ({"n_arms": 2.5}, TypeError, "n_arms"),
    ({"family": "trees"}, ValueError, "family"), ({"family": 3}, ValueError, "family"),
    ({"family": "paths", "n_arms": 10, "max_size": 3}, ValueError, "multiple"),
    ({"family": "coverage", "n_arms": 60, "max_size": 8}, ValueError, "max_size"),
    ({"means": [0.5] * 19}, ValueError, "means"), ({"means": [1.5] + [0.5] * 19}, ValueError, "means"),
    ({"means": [np.nan] + [0.5] * 19}, ValueError, "means"),
    ({"means": [0.0] + [0.5] * 19, "distribution": "beta"}, ValueError, "means"),
    ({"distribution": "gaussian"}, ValueError, "distribution"),
    ({"concentration": 0.0, "distribution": "beta"}, ValueError, "concentration"),
    ({"strict": "yes"}, TypeError, "strict"), ({"family_params": 3}, TypeError, "family_params"),
    ({"family": "coverage", "family_params": {"probs": np.ones((20, 3)) * 2}}, ValueError, "probs"),
])
def test_bad_env_parameters(kwargs, error, msg):
    with pytest.raises(error, match=msg):
        gym.make(ENV_ID, **kwargs)


# --------------------------------------------------------------------------- compiled paths


def _block_best_reference(w, width, count):
    """The oracles' kernel as first written (K passes of argmax per block), in Python."""
    out = np.zeros(w.shape, dtype=bool)
    for r in range(w.shape[0]):
        for start in range(0, w.shape[1], width):
            for k in range(count):
                best, pick = -np.inf, -1
                for i in range(start, start + width):
                    if not out[r, i] and (pick < 0 or w[r, i] > best):
                        best, pick = w[r, i], i
                if k > 0 and not best > 0.0:
                    break
                out[r, pick] = True
    return out


@pytest.mark.parametrize("seed", range(4))
def test_one_pass_top_k_is_the_k_pass_kernel(seed):
    """The selection of ``_block_best`` picks exactly what K passes of argmax pick, ties (to
    the lowest index), infinities, signed zeros and non-positive weights included: up to 4
    picks per block by the min/max network, more by the insertion."""
    from ldp_gym.oracles import _block_best
    rng = np.random.default_rng(seed)
    for m, K in ((1, 1), (5, 2), (6, 6), (9, 5), (12, 3), (20, 4)):
        for width, count in ((m, K), (m // K, 1) if m % K == 0 else (m, 1),
                             (m // 2, min(K, m // 2)) if m % 2 == 0 else (m, 1)):
            levels = np.array([-np.inf, -1.0, -0.0, 0.0, 0.25, 0.5, 1.0, np.inf])
            for w in (rng.choice(levels, size=(50, m)), rng.normal(size=(50, m))):
                got = _block_best(w, width, count, np.zeros(w.shape, dtype=bool))
                assert np.array_equal(got, _block_best_reference(w, width, count))


@pytest.mark.parametrize("kwargs", FAMILY_KWARGS + [{"distribution": "beta"}])
def test_vector_fast_step_is_the_checked_step(kwargs):
    """int8 super arms take the compiled step, int64 ones the checked step of the base class:
    the same observations, rewards, info, regret and autoresets, draw for draw."""
    kwargs = {"max_episode_steps": 7, **kwargs}
    fast, ref = (CombinatorialVectorEnv(num_envs=5, **kwargs) for _ in range(2))
    o1, _ = fast.reset(seed=3)
    o2, _ = ref.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = fast.core.family.sample(rng, 5)
        s1, s2 = fast.step(a.astype(np.int8)), ref.step(a.astype(np.int64))
        for x, y in zip(s1[:4], s2[:4], strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        assert s1[4].keys() == s2[4].keys()
        assert all(np.array_equal(s1[4][k], s2[4][k]) for k in s1[4])
        assert np.array_equal(fast.last_regret, ref.last_regret) and np.array_equal(fast.t, ref.t)
    bad = np.zeros((5, fast.core.n_arms), np.int8)  # the empty set: refused by the checked path
    with pytest.raises(ValueError, match="infeasible"):
        fast.step(bad)


# --------------------------------------------------------------------------- the block path


@pytest.mark.parametrize("kwargs", FAMILY_KWARGS + [{"distribution": "beta"},
                                                    {"family": "paths", "distribution": "beta"},
                                                    {"distribution": "yeast"}])
def test_block_outcomes_and_scores_are_the_per_round_ones(kwargs):
    """``draw_outcomes`` draws bitwise the outcomes the per-round steps draw (every base arm's,
    float32 as the feedback shows them; read here through super arms that cover every arm),
    and ``score_block`` gives bitwise the per-round regret and the last round's observation."""
    from ldp_gym.protocols import DrawsBlocks, ScoresBlocks

    n, length = 4, 9
    per_round, block = (CombinatorialVectorEnv(num_envs=n, max_episode_steps=50, **kwargs)
                        for _ in range(2))
    per_round.reset(seed=5)
    block.reset(seed=5)
    core = block.core
    assert isinstance(core, ScoresBlocks) and not isinstance(core, DrawsBlocks)
    rng = np.random.default_rng(1)
    actions = np.stack([core.family.sample(rng, n) for _ in range(length)], axis=1)
    regrets, obs = [], None
    for s in range(length):
        obs, _, _, _, info = per_round.step(actions[:, s].copy())
        regrets.append(info["regret"])
    outcomes = block.draw_outcomes(length)
    assert outcomes.dtype == np.float32 and outcomes.shape == (n, length, core.n_arms)
    assert np.array_equal(block.t, per_round.t)
    m = core.n_arms
    seen = np.where(actions == 1, outcomes, 0.0)
    last = np.concatenate([seen[:, -1], actions[:, -1]], axis=1).astype(np.float32)
    assert np.array_equal(obs, last)
    block_obs, regret = block.score_block(actions, outcomes)
    assert np.array_equal(regret, np.stack(regrets, axis=1))
    assert block_obs.dtype == np.float32 and block_obs.shape == (n, 2 * m)
    assert np.array_equal(block_obs, obs) and np.array_equal(block.core.observe(), obs)
    assert np.array_equal(block.last_regret, regrets[-1])
    # the next per-round step continues the same stream
    a = core.family.sample(rng, n)
    assert np.array_equal(per_round.step(a)[0], block.step(a)[0])


def test_yeast_is_a_semi_bandit_from_data():
    """distribution="yeast": 14 base arms whose outcomes each round are one data row's labels,
    means the label frequencies; the env checkers pass; bad combinations are refused."""
    from ldp_gym.envs.combinatorial import yeast_labels

    labels = yeast_labels()
    assert labels.shape == (2417, 14) and set(np.unique(labels)) == {0.0, 1.0}
    check_env(gym.make(ENV_ID, distribution="yeast").unwrapped, skip_render_check=True)
    venv = CombinatorialVectorEnv(num_envs=3, max_episode_steps=100, distribution="yeast",
                                  max_size=14)
    venv.reset(seed=0)
    assert np.allclose(venv.core.means, labels.mean(axis=0))
    everything = np.ones((3, 14), np.int8)  # every label observed
    rows = {tuple(r) for r in labels}
    for _ in range(20):
        obs, rewards, _, _, _ = venv.step(everything)
        assert all(tuple(o) in rows for o in obs[:, :14].astype(float))
        assert np.array_equal(rewards, obs[:, :14].sum(axis=1))
    for kwargs, name in (({"n_arms": 20}, "n_arms"), ({"means": [0.5] * 14}, "means"),
                         ({"family": "coverage", "max_size": 2}, "family")):
        with pytest.raises(ValueError, match=name):
            gym.make(ENV_ID, distribution="yeast", **kwargs)


def test_block_outcomes_cover_every_arm_with_the_per_round_law():
    """Every base arm's outcomes of a block (not only those a super arm reads) are Bernoulli
    of its mean: a binomial check per arm at false-alarm rate 1e-6 each."""
    from scipy import stats

    env = CombinatorialVectorEnv(num_envs=50, max_episode_steps=400, n_arms=6, max_size=2)
    env.reset(seed=0)
    x = env.draw_outcomes(400)
    assert set(np.unique(x)) <= {0.0, 1.0}
    hits, trials = x.sum(axis=1), x.shape[1]
    p = stats.binom.cdf(hits, trials, env.core.means)
    assert (np.minimum(p, 1 - p + stats.binom.pmf(hits, trials, env.core.means)) > 1e-6).all()


def test_score_block_refuses_bad_super_arms_and_draws_stop_at_the_horizon():
    env = CombinatorialVectorEnv(num_envs=2, max_episode_steps=10, n_arms=5, max_size=2)
    env.reset(seed=0)
    x = env.draw_outcomes(4)
    good = np.zeros((2, 4, 5), np.int8)
    good[..., 0] = 1
    for bad, msg in ((good.astype(np.int64), "int8"), (good[:, :3], "int8"),
                     (np.ones((2, 4, 5), np.int8), "run 0, round 0"),
                     (np.zeros((2, 4, 5), np.int8), "run 0, round 0"),
                     (2 * good, "not 0/1")):
        with pytest.raises(ValueError, match=msg):
            env.score_block(bad, x)
    assert env.score_block(good, x)[1].shape == (2, 4)
    env.draw_outcomes(6)
    with pytest.raises(ValueError, match="max_episode_steps"):
        env.draw_outcomes(1)


class _ExactK(TopK):
    """A third party's family: exactly K arms (its own feasibility, not the compiled one)."""

    def _feasible(self, S):
        return np.count_nonzero(S, axis=1) == self.K

    def _first_infeasible(self, S):
        bad = np.flatnonzero(~self._feasible(S))
        return int(bad[0]) if bad.size else -1


def test_fast_paths_ask_the_family_which_super_arms_are_feasible():
    """The int8 fast path of step and the block's score_block refuse what the family's own
    _first_infeasible refuses (a 1-arm set of an exactly-K family), as the checked path does."""
    env = CombinatorialVectorEnv(num_envs=2, max_episode_steps=10, family=_ExactK(6, 3))
    env.reset(seed=0)
    one = np.zeros((2, 6), dtype=np.int8)
    one[:, 0] = 1
    for actions in (one, one.astype(np.int64)):
        with pytest.raises(ValueError, match="not a super arm"):
            env.step(actions)
    with pytest.raises(ValueError, match="run 0, round 0"):
        env.score_block(one[:, None], np.zeros((2, 1, 6)))
    three = np.zeros((2, 6), dtype=np.int8)
    three[:, :3] = 1
    env.step(three)
    two = three.copy()
    two[0, 0] = 2  # not 0/1, whatever the family counts
    with pytest.raises(ValueError):
        env.step(two)
