"""Runner and Results: reproducibility, committed stretches, save/load, plotting, sweeps."""

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

import ldp_gym
from ldp_gym import Results
from ldp_gym.agents import DPSE, DPUCB, LDPOLS, UCB1, AdaPKLUCB, AdaPUCB, TsallisINF
from ldp_gym.wrappers.reward import VectorLaplaceReward

AGENTS = {"UCB1": UCB1, "AdaP-UCB": (AdaPUCB, {"epsilon": 1.0}), "DP-SE": (DPSE, {"epsilon": 1.0})}


def test_same_seed_bitwise_identical_results_and_global_state_untouched():
    state = np.random.get_state()  # noqa: NPY002 - reads the global state to prove it untouched
    a = ldp_gym.run("LDPMAB-v0", AGENTS, horizon=500, n_runs=5, seed=3, progress=False)
    b = ldp_gym.run("LDPMAB-v0", AGENTS, horizon=500, n_runs=5, seed=3, progress=False)
    c = ldp_gym.run("LDPMAB-v0", AGENTS, horizon=500, n_runs=5, seed=4, progress=False)
    assert a == b and a != c
    after = np.random.get_state()  # noqa: NPY002 - reads the global state to prove it untouched
    assert all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
               for x, y in zip(state, after))


def test_adding_an_agent_leaves_the_others_unchanged():
    a = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=300, n_runs=3, seed=0, progress=False)
    b = ldp_gym.run("LDPMAB-v0", {"TS": TsallisINF, "UCB1": UCB1}, horizon=300, n_runs=3, seed=0,
                    progress=False)
    assert np.array_equal(a.regret["UCB1"], b.regret["UCB1"])


def test_committed_path_matches_per_round_path_in_distribution():
    """AdaP-UCB through committed stretches and through the per-round loop: regret at T has the
    same distribution (Welch z-test, false-alarm rate 1e-6)."""
    class PerRound(AdaPUCB):
        commits = False  # force the per-round path
    kw = dict(horizon=3000, n_runs=400, progress=False)
    fast = ldp_gym.run("LDPMAB-v0", {"A": (AdaPUCB, {"epsilon": 1.0})}, seed=1, **kw)
    slow = ldp_gym.run("LDPMAB-v0", {"A": (PerRound, {"epsilon": 1.0})}, seed=2, **kw)
    x, y = fast.at("A", 3000), slow.at("A", 3000)
    z = (x.mean() - y.mean()) / np.sqrt(x.var() / x.size + y.var() / y.size)
    assert abs(z) < stats.norm.isf(0.5e-6)
    assert fast.timings["A"]["decisions"] < 200 < slow.timings["A"]["decisions"]


def test_regret_recorded_at_checkpoints_exactly():
    res = ldp_gym.run("LDPMAB-v0", {"A": (AdaPKLUCB, {"epsilon": 1.0})}, horizon=1000, n_runs=4,
                      seed=0, checkpoints=[1, 10, 999, 1000], progress=False)
    gaps = 0.75 - np.array([0.75, 0.625, 0.5, 0.375, 0.25])
    assert res.regret["A"].shape == (4, 4)
    # regret is a sum of gaps: at t=1 it is one gap
    assert set(np.round(res.regret["A"][:, 0], 9)) <= set(np.round(gaps, 9))
    assert (np.diff(res.regret["A"], axis=1) >= 0).all()


def test_wrappers_make_any_agent_private_and_are_labelled():
    res = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=200, n_runs=3, seed=0, progress=False,
                      wrappers=[(VectorLaplaceReward, {"epsilon": 0.5})])
    assert "VectorLaplaceReward, epsilon=0.5" in res.meta["privacy"]["UCB1"]


@pytest.mark.parametrize("kwargs,msg", [
    ({"horizon": 0}, "horizon"), ({"n_runs": 0}, "n_runs"), ({"checkpoints": [5, 3]}, "checkpoints"),
    ({"checkpoints": [1, 10**9]}, "checkpoints"), ({"agents": {}}, "agents"), ({"env": "Nope-v0"}, "Nope"),
])
def test_run_validates(kwargs, msg):
    args = dict(env="LDPMAB-v0", agents={"UCB1": UCB1}, horizon=100, n_runs=2, progress=False)
    args.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        ldp_gym.run(**args)


def test_results_save_load_dataframe_plot(tmp_path):
    res = ldp_gym.run("LDPMAB-v0", AGENTS, horizon=300, n_runs=3, seed=0, progress=False)
    path = res.save(tmp_path / "r.npz")
    back = Results.load(path)
    assert back == res and back.timings.keys() == res.timings.keys()
    df = res.to_dataframe()
    assert set(df["agent"]) == set(AGENTS) and {"mean", "ci_low", "ci_high"} <= set(df.columns)
    lo, hi = res.band("UCB1")
    assert (lo <= res.mean("UCB1")).all() and (res.mean("UCB1") <= hi).all()
    import matplotlib

    matplotlib.use("Agg")
    ax = res.plot(logx=True, reference={"bound": np.ones(len(res.checkpoints))})
    assert len(ax.get_lines()) == 4
    assert "regret at T=300" in res.table()
    with pytest.raises(ValueError, match="checkpoint"):
        res.at("UCB1", 7777)


def test_sweep_parallel_equals_sequential():
    tasks = [dict(env="LDPMAB-v0", agents={"A": (AdaPKLUCB, {"epsilon": e})}, horizon=500,
                  n_runs=3, seed=0, progress=False) for e in (0.5, 2.0)]
    seq = ldp_gym.sweep(tasks, n_jobs=1)
    par = ldp_gym.sweep(tasks, n_jobs=2)
    assert seq == par


def test_third_party_agent_object_runs():
    class Fixed:
        def act(self, obs):
            return np.zeros(len(obs), dtype=np.int64)

        def observe(self, *args):
            pass
    res = ldp_gym.run("LDPMAB-v0", {"fixed": Fixed()}, horizon=50, n_runs=2, seed=0, progress=False)
    assert np.allclose(res.regret["fixed"], 0.0)  # arm 0 is the best arm of the default instance


def test_dp_ucb_speculative_path_matches_per_round_in_distribution():
    """DP-UCB through speculative stretches (draw_stretch/observe_stretch) and through the
    per-round loop: regret at T has the same law (Welch z-test, false-alarm rate 1e-6)."""
    class PerRound(DPUCB):
        speculates = False
    kw = dict(horizon=3000, n_runs=200, progress=False)
    fast = ldp_gym.run("LDPMAB-v0", {"A": (DPUCB, {"epsilon": 1.0})}, seed=1, **kw)
    slow = ldp_gym.run("LDPMAB-v0", {"A": (PerRound, {"epsilon": 1.0})}, seed=2, **kw)
    x, y = fast.at("A", 3000), slow.at("A", 3000)
    z = (x.mean() - y.mean()) / np.sqrt(x.var() / x.size + y.var() / y.size)
    assert abs(z) < stats.norm.isf(0.5e-6)
    assert fast.timings["A"]["decisions"] < slow.timings["A"]["decisions"] / 5


@pytest.mark.parametrize("env,spec", [("LDPMAB-v0", UCB1),
                                      ("LDPLinearBandit-v0", (LDPOLS, {"epsilon": 1.0}))])
def test_block_path_matches_step_path_in_distribution(env, spec):
    """Rounds drawn ahead in blocks (draw_block) and stepped one by one give the same law of
    regret at T (Welch z-test, false-alarm rate 1e-6)."""
    def per_round(num_envs, max_episode_steps, **kw):  # a vector env without draw_block
        venv = ldp_gym.make_vector_env(env, num_envs, max_episode_steps)
        return gym.wrappers.vector.RecordEpisodeStatistics(venv)
    kw = dict(horizon=400, n_runs=50, progress=False)  # blocks are used up to 50 runs
    fast = [ldp_gym.run(env, {"A": spec}, seed=s, **kw).at("A", 400) for s in range(6)]
    slow = [ldp_gym.run(per_round, {"A": spec}, seed=100 + s, **kw).at("A", 400) for s in range(6)]
    x, y = np.concatenate(fast), np.concatenate(slow)
    z = (x.mean() - y.mean()) / np.sqrt(x.var() / x.size + y.var() / y.size)
    assert abs(z) < stats.norm.isf(0.5e-6)


def test_draw_block_is_consistent_with_step():
    venv = ldp_gym.make_vector_env("LDPGLMBandit-v0", 3, 100)
    obs0, _ = venv.reset(seed=0)
    obs, rewards, regrets = venv.draw_block(5)
    assert obs.shape == (3, 6, 20) and rewards.shape == (3, 5, 10) and regrets.shape == (3, 5, 10)
    assert np.array_equal(obs[:, 0], obs0) and np.array_equal(obs[:, -1], venv.core.observe())
    assert set(np.unique(rewards)) <= {0.0, 1.0} and (regrets >= 0).all()
    assert np.allclose(regrets.min(axis=-1), 0.0) and (venv.t == 5).all()


@pytest.mark.parametrize("spec", [(AdaPUCB, {"epsilon": 1.0}), (DPUCB, {"epsilon": 1.0}),
                                  (DPSE, {"epsilon": 1.0}), UCB1])
def test_every_mab_agent_runs_on_the_adversarial_env(spec):
    """Settings without committed/speculative stretches fall back to round-by-round play."""
    res = ldp_gym.run("LDPAdversarialMAB-v0", {"a": spec}, horizon=300, n_runs=3, seed=0,
                      progress=False)
    assert np.isfinite(res.regret["a"]).all() and res.timings["a"]["decisions"] == 300


def _fits(cls, env_id):
    from ldp_gym.agents.glm import ContextualAgent

    contextual = "Bandit" in env_id
    if issubclass(cls, ContextualAgent):
        return contextual and ("MultiParam" in env_id or cls.blocks)
    return True  # MAB agents run context-blind anywhere


@pytest.mark.parametrize("env_id", list(ldp_gym.ENV_SPECS))
def test_every_agent_runs_or_refuses_clearly_on_every_env(env_id):
    """The agent x env matrix through the runner: runs, or a ValueError naming the mismatch."""
    from ldp_gym.agents import AGENTS

    for name, cls in AGENTS.items():
        spec = (cls, dict(cls.test_params))
        if _fits(cls, env_id):
            res = ldp_gym.run(env_id, {name: spec}, horizon=60, n_runs=2, seed=0, progress=False)
            assert np.isfinite(res.regret[name]).all(), name
        else:
            with pytest.raises(ValueError, match="env|multi_parameter"):
                ldp_gym.run(env_id, {name: spec}, horizon=60, n_runs=2, seed=0, progress=False)
