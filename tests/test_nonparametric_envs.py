"""Nonparametric contextual bandits and classification data as bandits (ldp_gym/envs/nonparametric.py).

Statistical checks use fixed seeds; each states its false-alarm rate (the probability
that a correct implementation fails it, over the seeds one could have picked).
"""

from __future__ import annotations

import math
import re
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import VectorWrapper
from scipy import stats

import ldp_gym
from ldp_gym import runner
from ldp_gym.envs.nonparametric import (
    ClassificationBanditCore,
    NonparametricCore,
    NonparametricEnv,
    NonparametricVectorEnv,
    auxiliary_density,
    behaviour_policy,
    bump_rewards,
    check_auxiliary,
    checkerboard_rewards,
    load_classification,
    sample_auxiliary_contexts,
)
from ldp_gym.runner.blocks import block_player

NP_ID = "LDPNonparametricBandit-v0"
CLS_ID = "LDPClassificationBandit-v0"
AUX = [{"n": 300, "epsilon": 1.0, "gamma": 2.0, "kappa": 0.5}, {"n": 200, "epsilon": 4.0}]


def needs_sklearn():
    pytest.importorskip("sklearn")


ENV_CASES = [pytest.param(NP_ID, {}, id="bumps"),
             pytest.param(NP_ID, {"reward": "checkerboard"}, id="checkerboard"),
             pytest.param(NP_ID, {"dim": 1, "n_arms": 5, "auxiliary": AUX}, id="bumps-d1-K5"),
             pytest.param(CLS_ID, {}, id="wine"),
             pytest.param(CLS_ID, {"dataset": "digits", "dim": 4}, id="digits-pca")]


def _skip_without_sklearn(env_id):
    if env_id == CLS_ID:
        needs_sklearn()


# --------------------------------------------------------------------------- env contract


@pytest.mark.parametrize("env_id,kwargs", ENV_CASES)
def test_gymnasium_and_sb3_checkers(env_id, kwargs):
    _skip_without_sklearn(env_id)
    check_env(gym.make(env_id, **kwargs).unwrapped, skip_render_check=True)
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(gym.make(env_id, **kwargs), warn=True)


@pytest.mark.parametrize("env_id,kwargs", ENV_CASES)
def test_single_and_vector_env_contract(env_id, kwargs):
    _skip_without_sklearn(env_id)
    env = gym.make(env_id, max_episode_steps=4, **kwargs)
    obs, info = env.reset(seed=0)
    assert info == {} and obs.dtype == np.float32 and env.observation_space.contains(obs)
    core = env.unwrapped.core
    assert core.bounded_rewards == (0.0, 1.0) and isinstance(env.action_space, gym.spaces.Discrete)
    for t in range(4):
        obs, reward, term, trunc, info = env.step(t % env.action_space.n)
        assert type(reward) is float and reward in (0.0, 1.0) and term is False
        assert trunc == (t == 3) and env.observation_space.contains(obs)
        assert set(info) == {"expected_reward", "optimal_reward", "regret", "optimal_action"}
        assert info["regret"] == info["optimal_reward"] - info["expected_reward"] >= 0.0
    venv = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point",
                        max_episode_steps=2, **kwargs)
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (3, core.dim) and venv.observation_space.contains(obs)
    for step in range(3):
        obs, rewards, term, trunc, info = venv.step(venv.action_space.sample())
        assert rewards.shape == (3,) and not term.any() and trunc.all() == (step == 1)
    assert (rewards == 0).all() and not info["_regret"].any()  # the autoreset step


def test_vector_env_of_one_run_matches_the_single_env():
    """One core for both: the same seed and actions give bitwise the same rounds."""
    env = NonparametricEnv(auxiliary=AUX)
    venv = NonparametricVectorEnv(num_envs=1, auxiliary=AUX)
    obs, _ = env.reset(seed=7)
    vobs, _ = venv.reset(seed=7)
    assert np.array_equal(obs, vobs[0])
    for t in range(3000):  # past the chunk of contexts drawn ahead (2048 rounds)
        a = (t * 7) % 3
        obs, r, _, _, info = env.step(a)
        vobs, vr, _, _, vinfo = venv.step(np.array([a]))
        assert np.array_equal(obs, vobs[0]) and r == vr[0]
        assert all(info[k] == vinfo[k][0] for k in info)
    for (x, a, y), (vx, va, vy) in zip(env.unwrapped.core.auxiliary_data(0),
                                       venv.core.auxiliary_data(0)):
        assert np.array_equal(x, vx) and np.array_equal(a, va) and np.array_equal(y, vy)


def test_info_is_computed_at_the_observed_context():
    """The means are computed from the float32 observation itself."""
    venv = NonparametricVectorEnv(num_envs=50, reward="checkerboard")
    obs, _ = venv.reset(seed=1)
    actions = np.arange(50) % 2
    for _ in range(20):
        means = venv.core.reward_means(obs)
        nxt, rewards, _, _, info = venv.step(actions)
        assert np.array_equal(info["expected_reward"], means[np.arange(50), actions])
        assert np.array_equal(info["optimal_reward"], means.max(axis=1))
        assert np.array_equal(info["optimal_action"], means.argmax(axis=1))
        obs = nxt


# --------------------------------------------------------------------------- reward functions


def test_bump_values_at_known_points():
    k = 3
    f = lambda a: 2 * math.exp(-a) / (1 + math.exp(-a))  # noqa: E731
    x = np.array([[0.25, 0.9], [0.5, 0.1], [0.75, 0.3], [0.0, 0.5], [1.0, 0.5]])
    got = bump_rewards(x, k)
    want = [[f(2 * k * k * (x1 - (j + 1) / (k + 1)) ** 2) for j in range(k)] for x1 in x[:, 0]]
    assert np.allclose(got, want, rtol=1e-14, atol=0)
    assert np.allclose(np.diag(got[:3]), 1.0)  # each bump peaks at 1 at its centre
    assert got[0, 1] == pytest.approx(f(2 * 9 * 0.0625))
    # the first coordinate only; the best arm is the nearest centre
    rng = np.random.default_rng(0)
    pts = rng.random((1000, 3))
    shifted = pts.copy()
    shifted[:, 1:] = rng.random((1000, 2))
    assert np.array_equal(bump_rewards(pts, 4), bump_rewards(shifted, 4))
    centres = np.arange(1, 5) / 5
    assert np.array_equal(bump_rewards(pts, 4).argmax(axis=1),
                          np.abs(pts[:, :1] - centres).argmin(axis=1))
    core = NonparametricCore(dim=3, n_arms=4)
    assert np.array_equal(core.reward_means(pts), bump_rewards(pts, 4))


def test_checkerboard_values_at_known_points():
    x = np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75], [0.5, 0.3],
                  [0.375, 0.25], [0.9, 0.6], [0.0, 0.2], [1.0, 1.0], [0.3, 0.5]])
    want = [[0, 1], [1, 0], [1, 0], [0, 1], [0.5, 0.5], [0.25, 0.75], [0.3, 0.7],
            [0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]
    assert np.allclose(checkerboard_rewards(x), want, rtol=0, atol=1e-15)
    # f_0 + f_1 = 1, values in [0, 1], 2-Lipschitz in the sup norm, x_3 ignored
    rng = np.random.default_rng(1)
    pts = rng.random((5000, 3))
    f = checkerboard_rewards(pts)
    assert np.allclose(f.sum(axis=1), 1.0) and ((f >= 0) & (f <= 1)).all()
    near = np.clip(pts + rng.uniform(-1e-3, 1e-3, pts.shape), 0, 1)
    assert (np.abs(checkerboard_rewards(near) - f).max(axis=1)
            <= 2 * np.abs(near - pts)[:, :2].max(axis=1) + 1e-12).all()
    best = (np.sign((pts[:, 0] - 0.5) * (pts[:, 1] - 0.5)) > 0).astype(int)
    assert np.array_equal(f.argmax(axis=1), best)


def test_block_and_step_kernels_agree_with_the_reward_functions():
    for kwargs in ({}, {"reward": "checkerboard"}, {"dim": 1, "n_arms": 6}):
        venv = NonparametricVectorEnv(num_envs=7, max_episode_steps=100, **kwargs)
        first = venv.reset(seed=2)[0]
        obs, rewards, regrets = venv.draw_block(30)
        assert np.array_equal(obs[:, 0], first)
        means = venv.core.reward_means(obs[:, :30])
        assert np.array_equal(regrets, means.max(axis=-1, keepdims=True) - means)
        assert np.array_equal(obs[:, -1], venv.core.observe()) and (venv.t == 30).all()
        assert set(np.unique(rewards)) <= {0.0, 1.0} and rewards.shape == regrets.shape


# --------------------------------------------------------------------------- auxiliary data


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("gamma", [0.0, 1.0, 4.0])
def test_auxiliary_sampler_has_the_density(gamma, dim):
    """X ~ ((gamma + d)/d) (2 ||x - 1/2||_inf)^gamma, checked through its exact structure: the
    radius r = ||X - 1/2||_inf has CDF (2r)^(gamma + d) (KS test), the face of the cube X lies
    on is uniform over the 2d faces (chi-square), and the other coordinates are uniform on
    [1/2 - r, 1/2 + r] (KS on (x_i - 1/2)/r). Each test at level 1e-4: a family-wise
    false-alarm rate <= 27e-4 over the 9 cases."""
    n = 20_000
    x = sample_auxiliary_contexts(np.random.default_rng(100 + 10 * dim + int(gamma)), n, dim,
                                  gamma)
    assert x.shape == (n, dim) and x.dtype == np.float64 and ((x >= 0) & (x <= 1)).all()
    c = x - 0.5
    axis = np.abs(c).argmax(axis=1)
    r = np.abs(c)[np.arange(n), axis]
    assert stats.kstest(r, lambda s: np.clip(2 * s, 0, 1) ** (gamma + dim)).pvalue > 1e-4
    face = 2 * axis + (c[np.arange(n), axis] > 0)
    assert stats.chisquare(np.bincount(face, minlength=2 * dim)).pvalue > 1e-4
    if dim > 1:
        others = np.ones((n, dim), bool)
        others[np.arange(n), axis] = False
        inner = (c / r[:, None])[others]
        assert stats.kstest(inner, stats.uniform(-1, 2).cdf).pvalue > 1e-4


def test_the_radius_test_has_power():
    """The radius law of a sampler drawing r = U^(1/(d (gamma + 1)))/2 (its density does not
    match the formula for gamma > 0) is refused by the same KS test."""
    gamma, dim, n = 4.0, 2, 20_000
    r = 0.5 * np.random.default_rng(0).random(n) ** (1 / (dim * (gamma + 1)))
    assert stats.kstest(r, lambda s: np.clip(2 * s, 0, 1) ** (gamma + dim)).pvalue < 1e-10


@pytest.mark.parametrize("gamma,dim", [(0.0, 2), (2.5, 3)])
def test_auxiliary_density_integrates_to_one(gamma, dim):
    """E_U[p(U)] = 1 for U uniform on the cube (z-test, false-alarm rate 1e-6)."""
    p = auxiliary_density(np.random.default_rng(3).random((200_000, dim)), gamma)
    assert abs(p.mean() - 1) <= stats.norm.isf(0.5e-6) * p.std() / math.sqrt(p.size)
    assert auxiliary_density(np.full((1, dim), 1.5), gamma)[0] == 0.0


def test_behaviour_policy_and_logged_rewards():
    """Actions at the frequencies linspace(kappa/K, (2 - kappa)/K, K), independent of x
    (chi-square tests), rewards Bernoulli(f_A(X)) (z-test); each at level 1e-5."""
    assert np.allclose(behaviour_policy(3, 0.3), [0.1, 1 / 3, 1.7 / 3])
    assert np.allclose(behaviour_policy(4, 1.0), 0.25) and behaviour_policy(2, 0.0)[0] == 0.0
    n = 60_000
    core = NonparametricCore(auxiliary=[{"n": n, "epsilon": 1.0, "gamma": 1.0, "kappa": 0.3}])
    core.reset(np.random.default_rng(0), np.arange(2), 2)
    (x, a, y), = core.auxiliary_data(1)
    assert x.shape == (n, 2) and a.dtype == np.int64 and y.dtype == np.float64
    counts = np.bincount(a, minlength=3)
    assert stats.chisquare(counts, n * behaviour_policy(3, 0.3)).pvalue > 1e-5
    table = np.stack([np.bincount(a[x[:, 0] < 0.5], minlength=3),
                      np.bincount(a[x[:, 0] >= 0.5], minlength=3)])
    assert stats.chi2_contingency(table).pvalue > 1e-5
    mu = core.reward_means(x)[np.arange(n), a]
    z = (y - mu).sum() / math.sqrt((mu * (1 - mu)).sum())
    assert abs(z) < stats.norm.isf(0.5e-5) and set(np.unique(y)) <= {0.0, 1.0}


def test_auxiliary_data_is_reproducible_per_run_and_episode():
    venv = NonparametricVectorEnv(num_envs=3, max_episode_steps=2, auxiliary=AUX)
    venv.reset(seed=11)
    first = [venv.core.auxiliary_data(i) for i in range(3)]
    assert [len(d) for d in first] == [2, 2, 2]
    assert [(x.shape, a.shape, y.shape) for x, a, y in first[0]] == \
        [((300, 2), (300,), (300,)), ((200, 2), (200,), (200,))]
    same = lambda d, e: all(np.array_equal(u, v) for s, t in zip(d, e) for u, v in zip(s, t))  # noqa: E731
    assert same(first[0], venv.core.auxiliary_data(0))  # drawn again on demand, identically
    assert not same(first[0], first[1]) and not same(first[1], first[2])  # each run its own
    venv.reset(seed=11)
    assert all(same(first[i], venv.core.auxiliary_data(i)) for i in range(3))
    venv.reset(seed=12)
    assert not same(first[0], venv.core.auxiliary_data(0))
    # an autoreset starts a new episode with new data, for the runs that reset only
    venv.reset(seed=11)
    for _ in range(3):
        venv.step(np.zeros(3, np.int64))
    assert all(not same(first[i], venv.core.auxiliary_data(i)) for i in range(3))
    # dataset m depends on its own specification only
    other = NonparametricVectorEnv(num_envs=3, auxiliary=[{**AUX[0], "n": 50}, AUX[1]])
    other.reset(seed=11)
    assert same(first[2][1:], other.core.auxiliary_data(2)[1:])
    # the target stream of a seed is the same with and without auxiliary data
    plain = NonparametricVectorEnv(num_envs=3)
    assert np.array_equal(plain.reset(seed=11)[0], other.reset(seed=11)[0])
    acts = np.array([0, 1, 2])
    assert np.array_equal(plain.step(acts)[1], other.step(acts)[1])
    assert plain.core.auxiliary_data(0) == []


def test_auxiliary_specifications_are_validated_and_completed():
    spec = check_auxiliary([{"n": 5, "epsilon": 2}, {"n": 3, "epsilon": 0.5, "gamma": 1,
                                                     "kappa": 0}])
    assert spec == ({"n": 5, "epsilon": 2.0, "gamma": 0.0, "kappa": 1.0},
                    {"n": 3, "epsilon": 0.5, "gamma": 1.0, "kappa": 0.0})
    assert NonparametricCore(auxiliary=spec).auxiliary == spec


# --------------------------------------------------------------------------- the block path


class _Slabs:
    """A fixed policy: arm floor(3 x_1) (wrong near the bumps' boundaries)."""

    def act(self, obs):
        return np.minimum((np.asarray(obs)[:, 0] * 3).astype(np.int64), 2)

    def observe(self, *args):
        pass


class _RoundByRound(VectorWrapper):
    """A wrapper that changes nothing but makes the runner step round by round."""

    needs_round_by_round = True


def test_block_path_and_round_by_round_give_the_same_regret_law():
    """Mean regret of a fixed policy over T = 200 rounds, through the runner's block path
    (draw_block) and round by round (step), 400 runs each: two-sample z-test at level 1e-6."""
    horizon, n_runs, seeds = 200, 50, range(8)
    plain = runner.make_vector_env(NP_ID, n_runs, horizon)
    assert block_player(_Slabs(), plain, horizon) is not None
    wrapped = [(_RoundByRound, {})]
    assert block_player(_Slabs(), runner.make_vector_env(NP_ID, n_runs, horizon, wrapped),
                                horizon) is None
    blocks = np.concatenate([ldp_gym.run(NP_ID, {"p": _Slabs()}, horizon, n_runs, seed=s,
                                         progress=False).regret["p"][:, -1] for s in seeds])
    rounds = np.concatenate([ldp_gym.run(NP_ID, {"p": _Slabs()}, horizon, n_runs, seed=s,
                                         wrappers=wrapped, progress=False).regret["p"][:, -1]
                             for s in seeds])
    assert rounds.mean() > 1.0  # the policy does lose
    z = (blocks.mean() - rounds.mean()) / math.sqrt(blocks.var() / blocks.size
                                                    + rounds.var() / rounds.size)
    assert abs(z) < stats.norm.isf(0.5e-6)


def test_draw_block_rewards_have_the_law_of_step():
    """The chosen arm's rewards of a drawn block and of stepped rounds (checkerboard, arm 1):
    two-sample z-test on the mean reward at level 1e-6."""
    n, length = 2000, 10
    a = np.ones(n, np.int64)
    venv = NonparametricVectorEnv(num_envs=n, reward="checkerboard")
    venv.reset(seed=0)
    stepped = np.stack([venv.step(a)[1] for _ in range(length)], axis=1).mean(axis=1)
    venv.reset(seed=1)
    _, rewards, _ = venv.draw_block(length)
    drawn = rewards[:, :, 1].mean(axis=1)
    z = (drawn.mean() - stepped.mean()) / math.sqrt(drawn.var() / n + stepped.var() / n)
    assert abs(z) < stats.norm.isf(0.5e-6) and abs(drawn.mean() - 0.5) < 0.02


# --------------------------------------------------------------------------- bad input


BAD = [({"dim": 0}, ValueError, "dim"), ({"dim": 2.0}, TypeError, "dim"),
       ({"dim": True}, TypeError, "dim"), ({"n_arms": 1}, ValueError, "n_arms"),
       ({"n_arms": 2.5}, TypeError, "n_arms"), ({"reward": "waves"}, ValueError, "reward"),
       ({"reward": None}, ValueError, "reward"),
       ({"reward": "checkerboard", "n_arms": 3}, ValueError, "n_arms"),
       ({"reward": "checkerboard", "dim": 1}, ValueError, "dim"),
       ({"auxiliary": {"n": 5, "epsilon": 1.0}}, TypeError, "auxiliary"),
       ({"auxiliary": "n"}, TypeError, "auxiliary"), ({"auxiliary": [3]}, TypeError, "auxiliary[0]"),
       ({"auxiliary": [{"n": 5}]}, ValueError, "auxiliary[0] needs the key 'epsilon'"),
       ({"auxiliary": [{"epsilon": 1.0}]}, ValueError, "auxiliary[0] needs the key 'n'"),
       ({"auxiliary": [{"n": 5, "epsilon": 1.0, "eps": 2}]}, ValueError,
        "auxiliary[0] has unknown keys 'eps'; allowed: n, epsilon, gamma, kappa"),
       ({"auxiliary": [{"n": 0, "epsilon": 1.0}]}, ValueError, "auxiliary[0]['n']"),
       ({"auxiliary": [{"n": 5.0, "epsilon": 1.0}]}, TypeError, "auxiliary[0]['n']"),
       ({"auxiliary": [{"n": 5, "epsilon": 0.0}]}, ValueError, "auxiliary[0]['epsilon']"),
       ({"auxiliary": [{"n": 5, "epsilon": -1.0}]}, ValueError, "auxiliary[0]['epsilon']"),
       ({"auxiliary": [{"n": 5, "epsilon": float("inf")}]}, ValueError, "['epsilon']"),
       ({"auxiliary": [{"n": 5, "epsilon": "1"}]}, TypeError, "['epsilon']"),
       ({"auxiliary": [{"n": 5, "epsilon": 1, "gamma": -0.5}]}, ValueError, "['gamma']"),
       ({"auxiliary": [{"n": 5, "epsilon": 1, "gamma": float("nan")}]}, ValueError, "['gamma']"),
       ({"auxiliary": [{"n": 5, "epsilon": 1}, {"n": 5, "epsilon": 1, "kappa": 1.5}]},
        ValueError, "auxiliary[1]['kappa']"),
       ({"auxiliary": [{"n": 5, "epsilon": 1, "kappa": -0.1}]}, ValueError, "['kappa']"),
       ({"auxiliary": [{"n": 5, "epsilon": 1, "kappa": True}]}, TypeError, "['kappa']")]


@pytest.mark.parametrize("kwargs,error,msg", BAD, ids=repr)
def test_bad_parameters_are_refused_naming_them(kwargs, error, msg):
    for make in (lambda: gym.make(NP_ID, **kwargs),
                 lambda: NonparametricVectorEnv(num_envs=2, **kwargs)):
        with pytest.raises(error, match=re.escape(msg)) as info:
            make()
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("kwargs,error,msg", [
    ({"dataset": "adult"}, ValueError, "dataset"), ({"dataset": 3}, ValueError, "dataset"),
    ({"dim": 0}, ValueError, "dim"), ({"dim": 1.5}, TypeError, "dim"),
    ({"auxiliary": [{"n": 5, "epsilon": 1, "gamma": -1}]}, ValueError, "['gamma']")])
def test_bad_classification_parameters(kwargs, error, msg):
    if "auxiliary" in kwargs:
        needs_sklearn()
    with pytest.raises(error, match=re.escape(msg)):
        ClassificationBanditCore(**kwargs)


def test_classification_dim_above_the_features():
    needs_sklearn()
    with pytest.raises(ValueError, match="dim must be <= 4"):
        ClassificationBanditCore(dataset="iris", dim=5)


def test_bad_runs_for_auxiliary_data():
    core = NonparametricCore(auxiliary=AUX)
    with pytest.raises(RuntimeError, match="reset"):
        core.auxiliary_data(0)
    core.reset(np.random.default_rng(0), np.arange(2), 2)
    for run, error in [(-1, ValueError), (2, ValueError), (1.0, TypeError), (True, TypeError)]:
        with pytest.raises(error, match="run"):
            core.auxiliary_data(run)


def test_missing_scikit_learn_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    load_classification.cache_clear()
    try:
        with pytest.raises(ImportError, match=re.escape("pip install 'ldp-gym[data]'")):
            gym.make(CLS_ID)
    finally:
        load_classification.cache_clear()


# --------------------------------------------------------------------------- real data


@pytest.mark.parametrize("dataset,shape,k", [("iris", (150, 4), 3), ("wine", (178, 13), 3),
                                             ("breast_cancer", (569, 30), 2),
                                             ("digits", (1797, 64), 10)])
def test_bundled_datasets_are_scaled(dataset, shape, k):
    needs_sklearn()
    x, labels = load_classification(dataset)
    assert x.shape == shape and labels.shape == (shape[0],) and labels.max() == k - 1
    assert ((x >= 0) & (x <= 1)).all() and not x.flags.writeable
    assert np.array_equal(x, x.astype(np.float32))  # exactly what the float32 observation shows
    varying = x.max(axis=0) > x.min(axis=0)
    assert (x[:, varying].min(axis=0) == 0).all() and (x[:, varying].max(axis=0) == 1).all()
    assert (x[:, ~varying] == 0).all()  # digits' constant pixels
    core = ClassificationBanditCore(dataset=dataset)
    assert core.n_arms == k and core.dim == shape[1]


@pytest.mark.parametrize("dataset,shape,counts", [
    ("phishing", (1250, 9), [702, 548]), ("banana", (5300, 2), [2924, 2376]),
    ("segment", (2310, 18), [330] * 7), ("shuttle", (49097, 9), [45586, 3511])])
def test_river_datasets_are_read_from_its_wheel_and_scaled(dataset, shape, counts):
    """river's bundled files, read without importing river: rows, features, class sizes
    (ImageSegments balanced, shuttle's anomalies 7 %), scaled like scikit-learn's."""
    pytest.importorskip("river")  # the data and test extras install it
    x, labels = load_classification(dataset)
    assert x.shape == shape and np.bincount(labels).tolist() == counts
    assert ((x >= 0) & (x <= 1)).all() and not x.flags.writeable
    varying = x.max(axis=0) > x.min(axis=0)
    assert (x[:, varying].min(axis=0) == 0).all() and (x[:, varying].max(axis=0) == 1).all()
    env = gym.make(CLS_ID, dataset=dataset, dim=2)
    obs, _ = env.reset(seed=3)
    assert env.action_space.n == len(counts) and obs.shape == (2,)
    again = gym.make(CLS_ID, dataset=dataset, dim=2)
    assert np.array_equal(again.reset(seed=3)[0], obs)  # seeded


def test_missing_river_names_the_extra(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    load_classification.cache_clear()
    try:
        with pytest.raises(ImportError, match=re.escape("pip install 'ldp-gym[data]'")):
            load_classification("phishing")
    finally:
        load_classification.cache_clear()


def test_pca_keeps_the_leading_components():
    """dim=2: affine images of the projections on the two leading principal directions."""
    needs_sklearn()
    from sklearn.datasets import load_wine

    raw = load_wine().data
    z = (raw - raw.min(axis=0)) / (raw.max(axis=0) - raw.min(axis=0))
    z -= z.mean(axis=0)
    proj = z @ np.linalg.svd(z, full_matrices=False)[2][:2].T
    x, _ = load_classification("wine", 2)
    assert x.shape == (178, 2) and x.min() == 0 and x.max() == 1
    for j in range(2):
        assert abs(np.corrcoef(proj[:, j], x[:, j])[0, 1]) > 1 - 1e-6


def test_classification_rewards_are_the_labels():
    needs_sklearn()
    venv = gym.make_vec(CLS_ID, num_envs=40, vectorization_mode="vector_entry_point",
                        dataset="iris")
    obs, _ = venv.reset(seed=0)
    core = venv.unwrapped.core
    rng = np.random.default_rng(0)
    for _ in range(10):
        labels = core.labels[core.state].copy()
        assert np.array_equal(obs, core.features[core.state].astype(np.float32))
        actions = rng.integers(0, 3, 40)
        obs, rewards, _, _, info = venv.step(actions)
        assert np.array_equal(rewards, (actions == labels).astype(float))
        assert np.array_equal(info["regret"], 1.0 - rewards)
        assert np.array_equal(info["optimal_action"], labels) and (info["optimal_reward"] == 1).all()
    obs, rewards, regrets = venv.unwrapped.draw_block(6)
    assert (rewards.sum(axis=-1) == 1).all() and np.array_equal(regrets, 1.0 - rewards)
    shown = core.features.astype(np.float32)
    for point, arm in zip(obs[:, :6].reshape(-1, 4), rewards.argmax(axis=-1).ravel()):
        assert arm in core.labels[(shown == point).all(axis=1)]  # the label of the row shown


def test_classification_auxiliary_data():
    """Rows drawn with probabilities proportional to (2 ||x - 1/2||_inf)^gamma (chi-square over
    five groups of rows at level 1e-5); rewards 1{A = label}."""
    needs_sklearn()
    n = 30_000
    core = ClassificationBanditCore(dataset="wine", auxiliary=[{"n": n, "epsilon": 1.0,
                                                                "gamma": 3.0, "kappa": 0.2}])
    core.reset(np.random.default_rng(0), np.arange(1), 1)
    (x, a, y), = core.auxiliary_data(0)
    rows = np.array([np.flatnonzero((core.features == p).all(axis=1))[0] for p in x[:2000]])
    assert np.array_equal(y[:2000], (a[:2000] == core.labels[rows]).astype(float))
    w = (2 * np.abs(core.features - 0.5).max(axis=1)) ** 3.0
    r = (2 * np.abs(x - 0.5).max(axis=1)) ** 3.0
    edges = np.quantile(w, [0.2, 0.4, 0.6, 0.8])
    expected = np.array([w[np.digitize(w, edges) == g].sum() for g in range(5)]) / w.sum()
    assert stats.chisquare(np.bincount(np.digitize(r, edges), minlength=5),
                           n * expected).pvalue > 1e-5
    assert stats.chisquare(np.bincount(a, minlength=3), n * behaviour_policy(3, 0.2)).pvalue > 1e-5
