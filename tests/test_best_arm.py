"""Best-arm identification: the env's stops, the runner's record, the agents' guarantees."""

import math

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

import ldp_gym
from ldp_gym.agents import CTBTT, UCB1, AdaPTT, DPSEBestArm, TopTwo
from ldp_gym.agents.best_arm import adap_threshold, top_two_threshold
from ldp_gym.envs.best_arm import characteristic_time
from ldp_gym.results import Results


def test_a_recommendation_ends_the_episode_and_the_next_step_needs_a_reset():
    env = gym.make("LDPBestArm-v0", means=[0.2, 0.8], render_mode="ansi")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(0)
    assert not terminated and info["recommendation"] == -1 and info["regret"] == pytest.approx(0.6)
    obs, reward, terminated, truncated, info = env.step(3)  # recommend arm 1
    assert terminated and not truncated and reward == 0.0 and info["regret"] == 0.0
    assert info["recommendation"] == 1 == info["optimal_action"]
    assert "stopped: recommends arm 1" in env.render() and "pulls: 1 0" in env.render()
    with pytest.raises(gym.error.ResetNeeded, match="ended with a recommendation"):
        env.step(0)
    env.reset(seed=1)
    assert not env.step(1)[2]


def test_the_vector_env_terminates_a_run_and_restarts_it_on_its_next_step():
    venv = ldp_gym.make_vector_env("LDPBestArm-v0", 3, 100, means=[0.2, 0.8])
    venv.reset(seed=0)
    _, rewards, terminated, truncated, info = venv.step(np.array([0, 1, 2]))
    assert terminated.tolist() == [False, False, True] and not truncated.any()
    assert venv.unwrapped.last_recommendation.tolist() == [-1, -1, 0]
    assert rewards[2] == 0.0 and venv.unwrapped.last_regret[2] == 0.0
    _, rewards, terminated, _, info = venv.step(np.array([0, 0, 2]))  # run 2: the reset step
    assert not terminated.any() and venv.unwrapped.t.tolist() == [2, 2, 0]
    assert venv.unwrapped.last_recommendation.tolist() == [-1, -1, -1]
    assert not info["_recommendation"][2]


def test_blocks_of_the_setting_give_no_reward_and_no_regret_to_a_recommendation():
    venv = ldp_gym.make_vector_env("LDPBestArm-v0", 2, 100, means=[0.2, 0.8])
    venv.reset(seed=0)
    obs, rewards, regrets = venv.unwrapped.draw_block(7)
    assert rewards.shape == regrets.shape == (2, 7, 4) and obs.shape == (2, 8, 1)
    assert (rewards[..., 2:] == 0).all() and (regrets[..., 2:] == 0).all()
    assert set(np.unique(rewards[..., :2])) <= {0.0, 1.0}
    core = venv.unwrapped.core
    assert core.correct(core.best_arm).all() and not core.correct(np.array([-1, -1])).any()
    assert not core.correct(1 - core.best_arm).any()


class Scripted:
    """Pulls arm ``i % 2`` of run i for ``pulls[i]`` rounds, then recommends arm 1 (the best
    with ``order="given"``); a run with pulls -1 never stops."""

    def __init__(self, venv, pulls):
        self.pulls, self.t, self.k = np.asarray(pulls), 0, venv.single_action_space.n // 2

    def act(self, obs):
        n = len(self.pulls)
        arms = np.arange(n) % 2
        stop = (self.pulls >= 0) & (self.t >= self.pulls)
        return np.where(stop, self.k + 1, arms)

    def observe(self, obs, action, reward, next_obs):
        self.t += 1


class Through(gym.vector.VectorWrapper):
    """A third party's wrapper: the runner then plays round by round."""


@pytest.mark.parametrize("wrappers", [(), [(Through, {})]], ids=["blocks", "rounds"])
def test_the_runner_records_the_first_recommendation_and_stops_the_regret_there(wrappers):
    """The stopping time is the pulls before the recommendation; the regret counts those pulls
    only; a run that never stops keeps -1 and its regret grows to the budget; both paths."""
    pulls = [5, 8, 0, -1]
    res = ldp_gym.run("LDPBestArm-v0", {"s": lambda v: Scripted(v, pulls)}, horizon=600,
                      n_runs=4, seed=0, env_kwargs={"means": [0.3, 0.7], "order": "given"},
                      checkpoints=[3, 600], wrappers=wrappers, progress=False)
    stops = res.stops["s"]
    assert stops["stopping_time"].tolist() == [5, 8, 0, -1]
    assert stops["recommendation"].tolist() == [1, 1, 1, -1]
    assert stops["correct"].tolist() == [True, True, True, False]
    gap = 0.4  # runs 0 and 2 pull arm 0, runs 1 and 3 arm 1
    assert res.regret["s"][:, -1] == pytest.approx([5 * gap, 0.0, 0.0, 0.0])
    assert res.regret["s"][:, 0] == pytest.approx([3 * gap, 0.0, 0.0, 0.0])
    n = res.identification("s")
    assert (n["runs"], n["stopped"], n["errors"], n["risk"]) == (4, 3, 0, None)
    assert res.stopping_times("s").tolist() == [5, 8, 0]
    assert "| 1 | 0 / 4 |" in res.table()


def test_the_runner_ends_once_every_run_has_stopped():
    res = ldp_gym.run("LDPBestArm-v0", {"TT-UCB": (TopTwo, {"risk": 0.1})}, horizon=10**6,
                      n_runs=3, seed=0, env_kwargs={"means": [0.1, 0.9]}, progress=False)
    assert res.timings["TT-UCB"]["decisions"] < 10_000
    assert (res.stops["TT-UCB"]["stopping_time"] > 0).all()
    assert res.meta["risk"] == {"TT-UCB": 0.1}


def test_identification_results_survive_save_load_and_merge(tmp_path):
    kw = dict(horizon=50_000, n_runs=3, seed=0, env_kwargs={"means": [0.1, 0.9]}, progress=False)
    a = ldp_gym.run("LDPBestArm-v0", {"TT-UCB": TopTwo}, **kw)
    b = ldp_gym.run("LDPBestArm-v0", {"AdaP-TT": (AdaPTT, {"epsilon": 1.0})}, **kw)
    assert Results.load(a.save(tmp_path / "a")) == a
    both = a.merge(b)
    assert list(both.stops) == ["TT-UCB", "AdaP-TT"] and both.meta["risk"]["AdaP-TT"] == 0.1
    assert Results.load(both.save(tmp_path / "both")) == both
    changed = Results(a.checkpoints, a.regret, a.meta, a.timings,
                      {"TT-UCB": {**a.stops["TT-UCB"], "correct": ~a.stops["TT-UCB"]["correct"]}})
    assert changed != a
    with pytest.raises(ValueError, match="agent"):
        a.identification("AdaP-TT")


def test_each_task_refuses_the_other_tasks_agents():
    with pytest.raises(ValueError, match="best-arm identification"):
        UCB1.from_env(gym.make("LDPBestArm-v0"))
    with pytest.raises(ValueError, match="task"):
        TopTwo.from_env(gym.make("LDPMAB-v0", means=[0.1, 0.2, 0.3, 0.4]))
    with pytest.raises(ValueError, match="Discrete"):
        TopTwo.from_env(gym.make("LDPMAB-v0"))  # five arms: no Discrete(2K)


@pytest.mark.parametrize("risk", [0.0, 1.0, -0.5, float("nan")])
def test_a_risk_outside_the_open_unit_interval_is_refused(risk):
    with pytest.raises(ValueError, match="risk"):
        TopTwo(3, risk=risk)


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="threshold"):
        AdaPTT(3, epsilon=1.0, threshold="exact")
    with pytest.raises(ValueError, match="leader"):
        AdaPTT(3, epsilon=1.0, leader="lucb")
    with pytest.raises(ValueError, match="divergence"):
        characteristic_time([0.5, 0.4], "hellinger")
    with pytest.raises(ValueError, match="unique best"):
        characteristic_time([0.5, 0.5])
    with pytest.raises(ValueError, match="epsilon"):
        characteristic_time([0.5, 0.4], "d_eps")


def test_thresholds_are_the_authors_formulas():
    lg = math.log(10.0)
    assert top_two_threshold(100, 5, 0.1) == pytest.approx(
        math.log((1 + math.log(100)) / 0.1) + 0.5 * math.log(5))
    assert adap_threshold(8, 16, 0.1, 0.5) == pytest.approx(
        lg + math.log(1 + math.log(8)) + math.log(1 + math.log(16)) + (1 / 8 + 1 / 16) * lg ** 2 / 0.25)
    x = 0.5 * math.log(4 * math.pi ** 2 / 6 * 9 / 0.1)
    assert adap_threshold(8, 16, 0.1, 0.5, "theoretical", 5, 3) == pytest.approx(
        2 * (x + math.log(x)) + 2 * math.log(4 + math.log(8)) + 2 * math.log(4 + math.log(16))
        + (1 / 8 + 1 / 16) * math.log(2 * 5 * math.pi ** 2 / 6 * 9 / 0.1) ** 2 / 0.25)


def test_characteristic_times_match_their_closed_forms():
    """Two arms: T*_TV = 2 / gap; kl near 8 sigma^2/gap^2 for close arms; d_eps between TV/eps
    and kl, and kl itself at a huge epsilon; K arms under TV: sum of the optimal weights."""
    assert characteristic_time([0.5, 0.4], "tv") == pytest.approx(20.0)
    assert characteristic_time([0.5, 0.49]) == pytest.approx(8 * 0.25 / 0.01 ** 2, rel=0.01)
    means = np.linspace(0.0, 1.0, 5)
    assert characteristic_time(means, "tv") == pytest.approx(4 + 4 + 2 + 4 / 3 + 1)
    kl = characteristic_time([0.7, 0.3])
    assert characteristic_time([0.7, 0.3], "d_eps", 1e9) == pytest.approx(kl, rel=1e-6)
    # d_eps <= min(kl, eps tv): its time is at least both others, and near tv / eps at small eps
    small = characteristic_time([0.7, 0.3], "d_eps", 0.01)
    tv = characteristic_time([0.7, 0.3], "tv") / 0.01
    assert kl < tv <= small * (1 + 1e-6) and small == pytest.approx(tv, rel=0.05)


def test_dpse_stops_after_its_first_epoch_where_the_authors_code_did():
    """linspace(0, 1, 5), delta = 0.1, eps = 1: R_1 = floor(32 ln(400) / 0.25) + 1 = 767
    pulls per arm, after which every arm but the best is eliminated: 3835 pulls, as the
    authors' committed results for DP-SE at eps = 0.5 and 1."""
    res = ldp_gym.run("LDPBestArm-v0", {"DP-SE": (DPSEBestArm, {"epsilon": 1.0, "risk": 0.1})},
                      horizon=10**5, n_runs=5, seed=0, progress=False,
                      env_kwargs={"means": np.linspace(0, 1, 5).tolist()})
    assert res.stops["DP-SE"]["stopping_time"].tolist() == [3835] * 5
    assert res.stops["DP-SE"]["correct"].all()


@pytest.mark.parametrize("spec", [(TopTwo, {}), (AdaPTT, {"epsilon": 1.0}),
                                  (AdaPTT, {"epsilon": 1.0, "threshold": "theoretical",
                                            "leader": "eb"}),
                                  (DPSEBestArm, {"epsilon": 1.0}), (CTBTT, {"epsilon": 2.0})],
                         ids=["TT-UCB", "AdaP-TT", "AdaP-TT-theory-eb", "DP-SE", "CTB-TT"])
def test_the_error_rate_stays_below_the_risk(spec):
    """40 runs at risk 0.2 on an instance with a gap of 0.2: the errors must not exceed the
    binomial test's critical value at false-alarm rate 1e-3 (for a rate of exactly 0.2)."""
    cls, kw = spec
    res = ldp_gym.run("LDPBestArm-v0", {"a": (cls, {**kw, "risk": 0.2})}, horizon=10**6,
                      n_runs=40, seed=1, progress=False, env_kwargs={"means": [0.3, 0.5, 0.7]})
    n = res.identification("a")
    assert n["stopped"] == 40
    assert n["errors"] <= stats.binom.isf(1e-3, 40, 0.2)


def test_without_noise_adap_tt_is_top_two_with_doubling():
    """Degenerate privacy: at a huge epsilon the releases are the phase means, the privacy
    term of the threshold vanishes, and AdaP-TT stops within a small factor of TT-UCB (its
    phases double the samples, its statistic uses the last phase only)."""
    kw = dict(horizon=10**6, n_runs=20, seed=0, progress=False,
              env_kwargs={"means": [0.3, 0.5, 0.7]})
    plain = ldp_gym.run("LDPBestArm-v0", {"a": TopTwo}, **kw).stopping_times("a").mean()
    free = ldp_gym.run("LDPBestArm-v0", {"a": (AdaPTT, {"epsilon": 1e9})}, **kw)
    assert plain < free.stopping_times("a").mean() < 8 * plain
    # eps -> 0: no stop within the budget (the theoretical threshold; the code's empirical
    # one, calibrated for Gaussian noise, lets a Laplace tail stop a run now and then)
    tight = ldp_gym.run("LDPBestArm-v0", {"a": (AdaPTT, {"epsilon": 1e-3, "threshold": "theoretical"})},
                        **{**kw, "horizon": 4000})
    assert tight.identification("a")["stopped"] == 0


def test_the_ldp_report_is_one_bit_per_user():
    agent = CTBTT(3, epsilon=1.0, num_envs=4, seed=0)
    obs = np.zeros((4, 1))
    report = agent.local_report(obs, np.array([0, 1, 2, 5]), np.array([0.0, 1.0, 0.5, 0.0]), obs,
                                agent.public_state())
    assert sorted(report) == ["arm", "bit"] and set(report["bit"].tolist()) <= {0, 1}
    assert sorted(agent.public_state()) == ["counts", "recommendation", "sums"]


def test_the_experiment_runs_small(monkeypatch, tmp_path):
    """azize2023-bai end to end on a tiny size (the numbers are the results page's)."""
    from ldp_gym.experiments import EXPERIMENTS, best_arm

    monkeypatch.setitem(best_arm.BAI_SIZES, "quick", ((1.0,), 3, 100_000))
    report = EXPERIMENTS["azize2023-bai"](quick=True, seed=0, n_jobs=1, progress=False)
    report.write(tmp_path)
    text = (tmp_path / "table.md").read_text()
    assert "| linspace(0, 1, 5) | 1 | DP-SE (global) | 3835 ± 0° | 3,835 | 0 | 0 / 3 |" in text
    assert "Lower bound on linspace(0, 1, 5): T*_KL kl(delta, 1 - delta) = 20 pulls" in text
    assert "sd 0 (marked °)" in text
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == [
        "linspace-eps1-AdaP-TT.npz", "linspace-eps1-CTB-TT.npz", "linspace-eps1-DP-SE.npz",
        "linspace-tt-ucb.npz"]


def test_results_load_takes_the_path_save_took(tmp_path):
    res = ldp_gym.run("LDPBestArm-v0", {"TT-UCB": TopTwo}, horizon=10_000, n_runs=2, seed=0,
                      env_kwargs={"means": [0.1, 0.9]}, progress=False)
    res.save(tmp_path / "bai")
    assert Results.load(tmp_path / "bai") == res == Results.load(tmp_path / "bai.npz")


def test_the_command_line_takes_the_risk_and_draws_the_stopping_times(tmp_path):
    from ldp_gym.cli import main

    out = tmp_path / "bai"
    assert main(["run", "LDPBestArm-v0", "--agents", "TT-UCB", "--risk", "0.05", "--horizon",
                 "20000", "--runs", "2", "--quiet", "--env-kwargs", '{"means": [0.1, 0.9]}',
                 "--out", str(out)]) == 0
    res = Results.load(out / "results.npz")
    assert res.meta["risk"] == {"TT-UCB": 0.05} and (out / "stopping.png").exists()
    for argv, flag in ((["LDPMAB-v0", "--agents", "UCB1", "--risk", "0.05"], "--risk"),
                       (["LDPBestArm-v0", "--agents", "TT-UCB", "--risk", "1"], "risk")):
        assert main(["run", *argv, "--out", str(tmp_path / "x")]) == 2, flag
        assert not (tmp_path / "x").exists()
