"""Environment contract for every registered id."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from scipy import stats

import ldp_gym
from ldp_gym.envs.mab import MABVectorEnv, minimax_lower_bound, problem_dependent_lower_bound
from ldp_gym.protocols import DrawsStretches

IDS = list(ldp_gym.ENV_SPECS)
#: the ids with Discrete actions (arms); the Box actions of the BCO ids and the super arms of
#: the combinatorial id are checked in tests/test_bco_envs.py and test_combinatorial_envs.py
ARM_IDS = [i for i in IDS if "BCO" not in i and "Combinatorial" not in i]


def info_keys(env_id):
    """The oracle keys of an id's info: the best arm of arm settings, the projection flag of
    the BCO ones (whose best point is an array: ``core.comparator``)."""
    if "Combinatorial" in env_id:  # the (alpha, beta) of its oracle; super arms are arrays
        return {"expected_reward", "optimal_reward", "regret", "alpha", "beta", "projected"}
    extra = "projected" if "BCO" in env_id else "optimal_action"
    stops = {"recommendation"} if "BestArm" in env_id else set()
    return {"expected_reward", "optimal_reward", "regret", extra} | stops


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_check_env(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)


@pytest.mark.filterwarnings("ignore:.*render_mode='video'")
@pytest.mark.parametrize("env_id", IDS)
def test_render_modes(env_id, capsys, pull):
    """Every id renders as Gymnasium users expect: the checker passes with each mode; "ansi"
    returns the round, the regret so far and the pulls, "human" prints them, "rgb_array" is
    an image; None renders nothing; an unknown mode is refused by name."""
    for mode in ("ansi", "human", "rgb_array"):
        check_env(gym.make(env_id, render_mode=mode).unwrapped)
    capsys.readouterr()
    env = gym.make(env_id, render_mode="ansi")
    env.reset(seed=0)
    regret = sum(env.step(pull(env_id, env.action_space))[4]["regret"] for _ in range(3))
    text = env.render()
    assert "round 3" in text and f"cumulative regret {regret:.3f}" in text
    assert ("pulls:" in text) == ("BCO" not in env_id)
    human = gym.make(env_id, render_mode="human")
    human.reset(seed=0)
    assert human.render() is None and "round 0" in capsys.readouterr().out
    image = gym.make(env_id, render_mode="rgb_array")
    image.reset(seed=0)
    frame = image.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    plain = gym.make(env_id)
    plain.reset(seed=0)
    assert plain.render() is None
    with pytest.raises(ValueError, match="render_mode"):
        gym.make(env_id, render_mode="video")


@pytest.mark.parametrize("env_id", IDS)
def test_playing_before_reset_is_refused(env_id):
    """Gymnasium's ResetNeeded from the raw env and every method of the vector env that plays
    or draws rounds: the compiled kernels never see a state with no instance drawn."""
    env = gym.make(env_id).unwrapped
    with pytest.raises(gym.error.ResetNeeded):
        env.step(env.action_space.sample())
    venv = ldp_gym.make_vector_env(env_id, 2, 10)
    calls = [lambda: venv.step(venv.action_space.sample()),
             lambda: venv.reset(options={"reset_mask": np.array([True, False])})]
    calls += [lambda m=m: getattr(venv, m)(3) for m in ("draw_block", "draw_outcomes")
              if hasattr(venv.core, m)]  # the settings that draw blocks
    calls += [lambda m=m: getattr(venv, m)(np.zeros(2, np.int64), np.ones(2, np.int64))
              for m in ("draw_sums", "advance") if isinstance(venv.core, DrawsStretches)]
    for call in calls:
        with pytest.raises(gym.error.ResetNeeded):
            call()
    venv.reset(seed=0)
    venv.step(venv.action_space.sample())


@pytest.mark.parametrize("env_id", IDS)
def test_sb3_check_env(env_id):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(gym.make(env_id), warn=True)


@pytest.mark.parametrize("env_id", IDS)
def test_make_vec_native(env_id, pull):
    venv = gym.make_vec(env_id, num_envs=4, vectorization_mode="vector_entry_point",
                        max_episode_steps=3)
    assert "autoreset_mode" in venv.metadata
    obs, _ = venv.reset(seed=0)
    assert obs.dtype == venv.single_observation_space.dtype and venv.observation_space.contains(obs)
    for step in range(3):
        obs, rew, term, trunc, info = venv.step(pull(env_id, venv.action_space))
        assert rew.shape == (4,) and not term.any()
        assert trunc.all() == (step == 2)
        assert set(info) == info_keys(env_id) | {f"_{k}" for k in info_keys(env_id)}
        # the runner's regret, kept by the env itself (privacy wrappers drop info)
        assert np.array_equal(venv.unwrapped.last_regret, info["regret"])
        assert venv.unwrapped.last_regret is not info["regret"]
    # next-step autoreset: the step after truncation is a reset step with zero reward
    obs, rew, term, trunc, info = venv.step(venv.action_space.sample())
    assert (rew == 0).all() and not trunc.any() and not info["_regret"].any()
    assert (venv.unwrapped.last_regret == 0).all()


@pytest.mark.parametrize("env_id", IDS)
def test_single_env_contract(env_id, pull):
    env = gym.make(env_id, max_episode_steps=5)
    obs, info = env.reset(seed=3)
    assert info == {} and obs.dtype == env.observation_space.dtype
    assert obs.dtype == (np.float64 if "MultiPoint" in env_id else np.float32)
    infos = []
    for t in range(5):
        obs, rew, term, trunc, info = env.step(pull(env_id, env.action_space))
        assert type(rew) is float and term is False and type(trunc) is bool
        assert trunc == (t == 4)
        infos.append(info)
    assert infos[0] is not infos[1]  # a fresh dict each call
    assert set(infos[0]) == info_keys(env_id)


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


BAD_ACTIONS = [(-1, ValueError), ("K", ValueError), (1.5, TypeError), (float("nan"), TypeError),
               (float("inf"), TypeError), (True, TypeError), ("0", TypeError), (None, TypeError),
               (np.array([0]), ValueError), (np.array(1.0), TypeError)]


@pytest.mark.parametrize("env_id", ARM_IDS)
@pytest.mark.parametrize("action,error", BAD_ACTIONS, ids=repr)
def test_single_env_refuses_bad_actions(env_id, action, error):
    """One clear line naming the action: -1 and K out of range, 1.5, NaN and bools are not
    integers, wrong shapes; nothing is played."""
    env = gym.make(env_id, max_episode_steps=5)
    env.reset(seed=0)
    k = env.action_space.n
    with pytest.raises(error) as info:
        env.step(k if isinstance(action, str) and action == "K" else action)
    assert "\n" not in str(info.value) and "action" in str(info.value)
    env.step(k - 1)  # still usable, nothing was played
    assert env.unwrapped.core.observe().shape[0] == 1


def _bad_batches(n, k):
    return [(np.full(n, -1), ValueError), (np.full(n, k), ValueError), (np.full(n, 1.5), TypeError),
            (np.full(n, np.nan), TypeError), (np.zeros(n, bool), TypeError),
            (np.zeros((n, 1), np.int64), ValueError), (np.zeros(n - 1, np.int64), ValueError),
            (np.zeros(n + 1, np.int64), ValueError), ([[0], [0, 1]], ValueError),
            ([0] * (n - 1) + [k], ValueError), (np.array(["0"] * n), TypeError)]


@pytest.mark.parametrize("env_id", ARM_IDS)
def test_vector_env_refuses_bad_actions(env_id):
    """The native vector env used to play -1 as the last arm and raise a raw IndexError for
    K; now one clear line naming the actions, before anything is played."""
    venv = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point",
                        max_episode_steps=5)
    venv.reset(seed=0)
    k = venv.single_action_space.n
    for actions, error in _bad_batches(3, k):
        with pytest.raises(error) as info:
            venv.step(actions)
        assert "\n" not in str(info.value) and "actions" in str(info.value), actions
    assert (venv.unwrapped.t == 0).all()
    arms = k // 2 if "BestArm" in env_id else k  # (recommendations would end the runs)
    venv.step(np.full(3, arms - 1))  # valid: int64, a list, other integer dtypes
    venv.step([0, 1, 0])
    venv.step(np.zeros(3, np.uint8))
    assert (venv.unwrapped.t == 3).all()


@pytest.mark.parametrize("env_id,kwargs,error,msg", [
    ("LDPMAB-v0", {"means": "random", "n_arms": 2.5}, TypeError, "n_arms"),
    ("LDPMAB-v0", {"means": "random", "n_arms": True}, TypeError, "n_arms"),
    ("LDPMAB-v0", {"means": "random", "n_arms": 0}, ValueError, "n_arms"),
    ("LDPMAB-v0", {"sigma": True, "distribution": "gaussian"}, TypeError, "sigma"),
    ("LDPMAB-v0", {"sigma": "1"}, TypeError, "sigma"),
    ("LDPMAB-v0", {"means": [True, False]}, TypeError, "means"),
    ("LDPMAB-v0", {"means": [0.5, float("inf")]}, ValueError, "means"),
    ("LDPAdversarialMAB-v0", {"n_arms": 3.0}, TypeError, "n_arms"),
    ("LDPAdversarialMAB-v0", {"gap": float("nan")}, ValueError, "gap"),
    ("LDPAdversarialMAB-v0", {"reward_table": [[0.5, float("inf")]]}, ValueError, "reward_table"),
    ("LDPLinearBandit-v0", {"dim": 2.0}, TypeError, "dim"),
    ("LDPLinearBandit-v0", {"n_arms": False}, TypeError, "n_arms"),
    ("LDPLinearBandit-v0", {"noise": -0.1}, ValueError, "noise"),
    ("LDPLinearBandit-v0", {"theta": [float("nan"), 0.0]}, ValueError, "theta"),
    ("LDPMultiParamGLMBandit-v0", {"theta": [[True, False]] * 3}, TypeError, "theta"),
    ("LDPGLMBandit-v0", {"reward_bound": 0.0}, ValueError, "reward_bound"),
])
def test_env_parameter_types_and_values(env_id, kwargs, error, msg):
    """Same bad value, same error as the agents: TypeError for wrong types (bools, floats where
    integers are needed), ValueError for wrong values."""
    with pytest.raises(error, match=msg):
        gym.make(env_id, **kwargs)


@pytest.mark.parametrize("kwargs,error,msg", [
    ({"num_envs": 0}, ValueError, "num_envs"), ({"num_envs": True}, TypeError, "num_envs"),
    ({"num_envs": 2.0}, TypeError, "num_envs"), ({"max_episode_steps": 0}, ValueError, "max_episode_steps"),
    ({"max_episode_steps": 1.5}, TypeError, "max_episode_steps"),
])
def test_vector_env_parameters(kwargs, error, msg):
    with pytest.raises(error, match=msg):
        MABVectorEnv(**kwargs)


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


@pytest.mark.parametrize("env_id", ["LDPLinearBandit-v0", "LDPMultiParamGLMBandit-v0"])
@pytest.mark.parametrize("contexts,link", [("sphere", "identity"), ("ball", "logistic"),
                                           ("gaussian", "poisson")])
def test_glm_block_is_its_pieces(env_id, contexts, link):
    """The GLM setting's block, drawn and scored in one compiled pass, is bitwise what its
    pieces give: ``sample_contexts``'s contexts, then ``_outcomes`` on the uniforms drawn after
    them (the Poisson rewards drawn from the means last)."""
    from ldp_gym.envs.glm import sample_contexts

    def fresh():
        venv = ldp_gym.make_vector_env(env_id, 3, 100, contexts=contexts, link=link)
        venv.reset(seed=5)
        return venv

    obs, rewards, regret = fresh().draw_block(7)
    venv = fresh()
    core, rng = venv.core, venv.np_random
    x = sample_contexts(rng, contexts, (3, 7) + core._context_shape)
    xs = np.concatenate([core.x[:, None], x], axis=1)
    u = None if link == "poisson" else rng.random((3, 7, core.n_arms))
    means, ref_rewards, ref_regret = core._outcomes(xs[:, :7], u)
    if link == "poisson":
        ref_rewards = core._rewards(rng, means)
    assert np.array_equal(obs, xs.reshape(3, 8, -1).astype(np.float32))
    assert np.array_equal(rewards, ref_rewards) and np.array_equal(regret, ref_regret)


@pytest.mark.parametrize("env_id", IDS)
def test_the_setting_description_is_frozen_and_holds_nothing_of_the_instance(env_id):
    """``env.unwrapped.setting``, what agents' ``from_env`` read: read-only, and no reference
    to the env, its core or their arrays (the instance's means, parameters, labels)."""
    from ldp_gym.checks import _reachable_env_parts

    env = gym.make(env_id)
    env.reset(seed=0)
    setting = env.unwrapped.setting
    with pytest.raises(TypeError):
        setting["dim"] = 3
    assert not _reachable_env_parts(dict(setting), env)
    assert set(setting) == set(env.unwrapped.core.public)
