"""Third-party learners: a stable-baselines3 model trained on a (privatised) env runs through the
runner beside the papers' agents (adapters)."""

import gymnasium as gym
import numpy as np
import pytest

import ldp_gym
from ldp_gym.agents import AdaPKLUCB
from ldp_gym.agents.adapters import PerRunAgent, PredictAgent, SB3Agent
from ldp_gym.wrappers.reward import LaplaceReward

sb3 = pytest.importorskip("stable_baselines3")


def test_ppo_on_private_env_runs_in_runner():
    env = LaplaceReward(gym.make("LDPMAB-v0", max_episode_steps=64), epsilon=1.0)
    model = sb3.PPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=128)
    res = ldp_gym.run("LDPMAB-v0", {"PPO": lambda venv: SB3Agent(model),
                                    "AdaP-KLUCB": (AdaPKLUCB, {"epsilon": 1.0})},
                      horizon=100, n_runs=4, seed=0, progress=False)
    assert res.regret["PPO"].shape == (4, len(res.checkpoints))
    assert np.isfinite(res.regret["PPO"]).all()


def test_sb3_agent_refuses_non_models():
    with pytest.raises(TypeError, match="stable-baselines3"):
        SB3Agent(object())


def test_predict_and_per_run_adapters():
    fixed = PredictAgent(lambda obs: np.full(len(obs), 1))
    per_run = PerRunAgent(lambda seed: AdaPKLUCB(5, epsilon=1.0, seed=seed), num_envs=3)
    res = ldp_gym.run("LDPMAB-v0", {"fixed": fixed, "per-run": per_run}, horizon=50, n_runs=3,
                      seed=0, progress=False, env_kwargs={"order": "given"})
    assert np.allclose(res.regret["fixed"][:, -1], 50 * 0.125)
    with pytest.raises(TypeError, match="predict"):
        PredictAgent(object())


def test_ppo_glm_example_runs():
    import runpy
    from pathlib import Path

    mod = runpy.run_path(str(Path(__file__).resolve().parents[1] / "examples" / "sb3_ppo_glm.py"))
    res = mod["main"](train_steps=256, horizon=50, n_runs=2)
    assert len(res.agents) == 3 and np.isfinite(res.regret["PPO on Laplace rewards (eps=1)"]).all()


@pytest.mark.filterwarnings("ignore:Your action space has dtype float64")
def test_sac_trains_on_bco_and_runs_in_runner():
    """SAC learns on the one-point BCO env (Box actions, reward -loss) under Zheng's Alg 1
    release, then plays through the runner."""
    from ldp_gym.wrappers import one_point

    env = one_point(gym.make("LDPBCO-v0", max_episode_steps=500), epsilon=1.0, delta=1e-5)
    model = sb3.SAC("MlpPolicy", env, learning_starts=100, batch_size=32, seed=0, device="cpu",
                    policy_kwargs={"net_arch": [32, 32]})
    model.learn(total_timesteps=400)
    res = ldp_gym.run("LDPBCO-v0", {"SAC": lambda venv: SB3Agent(model)}, horizon=50, n_runs=2,
                      seed=0, progress=False)
    assert np.isfinite(res.regret["SAC"]).all() and (res.regret["SAC"][:, -1] >= 0).all()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("env_id", list(ldp_gym.ENV_SPECS))
def test_ppo_trains_on_every_registered_id(env_id):
    """PPO (Discrete, MultiBinary and Box actions: every id's space) learns for 256 steps on
    the env as Gymnasium makes it; on the combinatorial env it sends float 0/1 super arms,
    which the env takes as the integers they are (strict=False maps infeasible ones)."""
    if env_id == "LDPClassificationBandit-v0":
        pytest.importorskip("sklearn")
    kwargs = {"strict": False} if "Combinatorial" in env_id else {}
    env = gym.make(env_id, max_episode_steps=64, **kwargs)
    model = sb3.PPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu",
                    policy_kwargs={"net_arch": [16]})
    model.learn(total_timesteps=256)
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, deterministic=True)
    env.step(action)


def test_the_default_mab_instance_has_no_fixed_best_arm():
    """The paper's means in an order drawn at reset: the best arm moves with the seed."""
    envs = [gym.make("LDPMAB-v0") for _ in range(20)]
    best = set()
    for seed, env in enumerate(envs):
        env.reset(seed=seed)
        best.add(int(env.unwrapped.core.best_arm[0]))
        assert sorted(env.unwrapped.core.means[0]) == [0.25, 0.375, 0.5, 0.625, 0.75]
    assert len(best) >= 3
