"""Environment contract (DESIGN.md section 2) for every registered id."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from scipy import stats

import ldp_gym
from ldp_gym.envs.mab import MABVectorEnv, minimax_lower_bound, problem_dependent_lower_bound

IDS = list(ldp_gym.ENV_SPECS)


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_check_env(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)


@pytest.mark.parametrize("env_id", IDS)
def test_sb3_check_env(env_id):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(gym.make(env_id), warn=True)


@pytest.mark.parametrize("env_id", IDS)
def test_make_vec_native(env_id):
    venv = gym.make_vec(env_id, num_envs=4, vectorization_mode="vector_entry_point",
                        max_episode_steps=3)
    assert "autoreset_mode" in venv.metadata
    obs, _ = venv.reset(seed=0)
    assert obs.dtype == np.float32 and venv.observation_space.contains(obs)
    for step in range(3):
        obs, rew, term, trunc, info = venv.step(venv.action_space.sample())
        assert rew.shape == (4,) and not term.any()
        assert trunc.all() == (step == 2)
        assert set(info) >= {"regret", "_regret", "optimal_action"}
        # the runner's regret, kept by the env itself (privacy wrappers drop info)
        assert np.array_equal(venv.unwrapped.last_regret, info["regret"])
        assert venv.unwrapped.last_regret is not info["regret"]
    # next-step autoreset: the step after truncation is a reset step with zero reward
    obs, rew, term, trunc, info = venv.step(venv.action_space.sample())
    assert (rew == 0).all() and not trunc.any() and not info["_regret"].any()
    assert (venv.unwrapped.last_regret == 0).all()


@pytest.mark.parametrize("env_id", IDS)
def test_single_env_contract(env_id):
    env = gym.make(env_id, max_episode_steps=5)
    obs, info = env.reset(seed=3)
    assert info == {} and obs.dtype == np.float32
    infos = []
    for t in range(5):
        obs, rew, term, trunc, info = env.step(env.action_space.sample())
        assert type(rew) is float and term is False and type(trunc) is bool
        assert trunc == (t == 4)
        infos.append(info)
    assert infos[0] is not infos[1]  # a fresh dict each call
    assert set(infos[0]) == {"expected_reward", "optimal_reward", "regret", "optimal_action"}


def test_seeded_reset_reproducible_and_instances_random():
    env = gym.make("LDPMAB-v0", means="random", n_arms=4)
    env.reset(seed=1)
    a = env.unwrapped.core.means.copy()
    env.reset(seed=1)
    assert np.array_equal(a, env.unwrapped.core.means)
    env.reset(seed=2)
    assert not np.array_equal(a, env.unwrapped.core.means)


@pytest.mark.parametrize("kwargs,msg", [
    ({"means": [0.5, 1.5]}, "means"), ({"means": []}, "means"), ({"means": "x"}, "means"),
    ({"means": [0.5, float("nan")]}, "means"), ({"distribution": "poisson"}, "distribution"),
    ({"means": "random"}, "n_arms"), ({"sigma": -1.0, "distribution": "gaussian"}, "sigma"),
    ({"means": [0.0, 0.5], "distribution": "beta"}, "means"), ({"means": [0.2], "n_arms": 2}, "n_arms"),
])
def test_bad_env_parameters(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        gym.make("LDPMAB-v0", **kwargs)


def test_bad_adversarial_parameters():
    with pytest.raises(ValueError, match="reward_table"):
        gym.make("LDPAdversarialMAB-v0", reward_table=[[0.5, 2.0]])
    with pytest.raises(ValueError, match="growth"):
        gym.make("LDPAdversarialMAB-v0", growth=1.0)
    with pytest.raises(ValueError, match="num_envs"):
        MABVectorEnv(num_envs=0)


def test_invalid_action_rejected():
    env = gym.make("LDPMAB-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(7)


@pytest.mark.parametrize("distribution", ["bernoulli", "gaussian", "beta"])
def test_committed_stretch_matches_rounds_in_distribution(distribution):
    """A committed stretch of n rounds draws the reward sum exactly: its mean and variance
    match n per-round draws (z-tests at a total false-alarm rate of 1e-6)."""
    n_runs, n = 20_000, 7
    venv = MABVectorEnv(num_envs=n_runs, distribution=distribution, means=[0.3, 0.6])
    venv.reset(seed=4)
    actions = np.ones(n_runs, dtype=np.int64)
    _, sums, regret = venv.step_committed(actions, np.full(n_runs, n))
    assert np.allclose(regret, 0.0) and (venv.t == n).all()
    rounds = np.zeros(n_runs)
    for _ in range(n):
        rounds += venv.step(actions)[1]
    z = (sums.mean() - rounds.mean()) / np.sqrt(sums.var() / n_runs + rounds.var() / n_runs)
    assert abs(z) < stats.norm.isf(0.5e-6 / 2)
    ratio = sums.var(ddof=1) / rounds.var(ddof=1)
    f_lo, f_hi = stats.f.ppf(0.25e-6, n_runs - 1, n_runs - 1), stats.f.isf(0.25e-6, n_runs - 1, n_runs - 1)
    assert f_lo < ratio < f_hi


@pytest.mark.parametrize("env_id,kwargs,bounds", [
    ("LDPMAB-v0", {}, (0.0, 1.0)), ("LDPMAB-v0", {"distribution": "beta"}, (0.0, 1.0)),
    ("LDPMAB-v0", {"distribution": "gaussian"}, None), ("LDPAdversarialMAB-v0", {}, (0.0, 1.0)),
    ("LDPAdversarialMAB-v0", {"reward_table": [[0.0, 1.0]]}, (0.0, 1.0)),
])
def test_settings_declare_bounded_rewards(env_id, kwargs, bounds):
    """The interval every reward is guaranteed to lie in (None: no guarantee), and the rewards
    of a few thousand rounds lie in it."""
    venv = gym.make_vec(env_id, num_envs=2000, vectorization_mode="vector_entry_point",
                        max_episode_steps=1, **kwargs)
    assert venv.unwrapped.core.bounded_rewards == bounds
    venv.reset(seed=0)
    rewards = venv.step(np.zeros(2000, dtype=np.int64))[1]
    if bounds is not None:
        assert ((bounds[0] <= rewards) & (rewards <= bounds[1])).all()


def test_committed_stretch_refuses_passing_horizon():
    venv = MABVectorEnv(num_envs=2, max_episode_steps=5)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match="max_episode_steps"):
        venv.step_committed(np.zeros(2, int), np.array([6, 1]))


def test_reward_table_regret_is_against_best_fixed_arm():
    table = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    env = gym.make("LDPAdversarialMAB-v0", reward_table=table, max_episode_steps=3)
    env.reset(seed=0)
    regrets = [env.step(1)[4]["regret"] for _ in range(3)]
    assert regrets == [1.0, 1.0, -1.0] and sum(regrets) == table[:, 0].sum() - table[:, 1].sum()


def test_lower_bounds():
    assert np.isclose(minimax_lower_bound(10**4, 5, 1.0), max(np.sqrt(4e4) / 27, 4 / 131))
    assert np.isclose(minimax_lower_bound(10, 5, 1e-3), 4 / (131 * 1e-3))
    lb = problem_dependent_lower_bound([0.8, 0.1], [10, 100], 1.0)
    assert lb[1] / lb[0] == pytest.approx(2.0)
    # stronger privacy, larger bound
    assert problem_dependent_lower_bound([0.8, 0.1], 100, 0.01) > lb[1]
