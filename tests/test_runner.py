"""Runner and Results: reproducibility, the two paths (round by round, by blocks), save/load,
plotting, sweeps."""

import math
import os
from unittest.mock import ANY

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

import ldp_gym
from ldp_gym import Results, runner
from ldp_gym.agents import DPSE, DPUCB, LDPOLS, UCB1, AdaPKLUCB, AdaPUCB, LinUCB, TsallisINF
from ldp_gym.envs.glm import GLMCore, MultiParamGLMCore
from ldp_gym.envs.mab import AdversarialMABCore, MABCore
from ldp_gym.protocols import BlockPlay, DrawsBlocks, DrawsStretches
from ldp_gym.runner import blocks, loop, progress
from ldp_gym.wrappers.reward import (
    GaussianReward,
    LaplaceReward,
    VectorGaussianReward,
    VectorLaplaceReward,
)

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


def test_a_seed_sequence_is_its_entropy_and_seed_none_is_one_draw_for_every_agent():
    """SeedSequence(3) runs as seed 3 and is left as it was given (no child spawned from it);
    seed=None draws one entropy, recorded, so that every agent faces the same instances."""
    given = np.random.SeedSequence(3)
    a = ldp_gym.run("LDPMAB-v0", AGENTS, horizon=200, n_runs=3, seed=given, progress=False)
    b = ldp_gym.run("LDPMAB-v0", AGENTS, horizon=200, n_runs=3, seed=3, progress=False)
    assert a.regret.keys() == b.regret.keys()
    assert all(np.array_equal(a.regret[k], b.regret[k]) for k in a.regret)
    assert given.n_children_spawned == 0 and a.meta["seed"] == 3
    free = ldp_gym.run("LDPMAB-v0", {"x": UCB1, "y": UCB1}, horizon=200, n_runs=3, seed=None,
                       progress=False)
    again = ldp_gym.run("LDPMAB-v0", {"x": UCB1, "y": UCB1}, horizon=200, n_runs=3,
                        seed=free.meta["seed"], progress=False)
    assert all(np.array_equal(free.regret[k], again.regret[k]) for k in ("x", "y"))


def test_adding_an_agent_leaves_the_others_unchanged():
    a = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=300, n_runs=3, seed=0, progress=False)
    b = ldp_gym.run("LDPMAB-v0", {"TS": TsallisINF, "UCB1": UCB1}, horizon=300, n_runs=3, seed=0,
                    progress=False)
    assert np.array_equal(a.regret["UCB1"], b.regret["UCB1"])


class RoundByRound(gym.vector.VectorWrapper):
    """A transparent wrapper that asks to be stepped round by round (as the privacy wrappers do)."""

    needs_round_by_round = True


class Undeclared(gym.vector.VectorWrapper):
    """A third party's transparent wrapper that declares nothing."""


class BlockSafe(gym.vector.VectorWrapper):
    """A transparent wrapper that lets the block path bypass its step."""

    needs_round_by_round = False


#: One agent per kind of block: committed sums, compiled blocks (DP-UCB with its trees, the
#: LDP-OLS messages), every arm's rewards played through act/observe (up to 50 runs).
BLOCK_KINDS = [("LDPMAB-v0", (AdaPUCB, {"epsilon": 1.0})), ("LDPMAB-v0", (DPUCB, {"epsilon": 1.0})),
               ("LDPLinearBandit-v0", LinUCB), ("LDPLinearBandit-v0", (LDPOLS, {"epsilon": 1.0}))]


@pytest.mark.parametrize("kind,horizon,n_runs,seeds", [
    (0, 3000, 400, 1), (1, 3000, 200, 1), (2, 400, 50, 6), (3, 400, 50, 6)])
def test_block_path_matches_round_by_round_in_distribution(kind, horizon, n_runs, seeds):
    """Each kind of block and the same agent stepped round by round (through a wrapper that
    declares it): regret at T has the same law (Welch z-test, false-alarm rate 1e-6)."""
    env, spec = BLOCK_KINDS[kind]
    kw = dict(horizon=horizon, n_runs=n_runs, progress=False)
    blocks = [ldp_gym.run(env, {"A": spec}, seed=s, **kw) for s in range(seeds)]
    rounds = [ldp_gym.run(env, {"A": spec}, seed=100 + s, wrappers=[(RoundByRound, {})], **kw)
              for s in range(seeds)]
    x, y = (np.concatenate([r.at("A", horizon) for r in runs]) for runs in (blocks, rounds))
    z = (x.mean() - y.mean()) / np.sqrt(x.var() / x.size + y.var() / y.size)
    assert abs(z) < stats.norm.isf(0.5e-6)
    assert all(r.timings["A"]["decisions"] == horizon for r in rounds)
    if kind == 0:  # committed sums: few decisions
        assert all(r.timings["A"]["decisions"] < horizon / 5 for r in blocks)


def _logged(method, name, log):
    """``method``, appending ``name`` to ``log`` at every call."""
    def call(*args):
        log.append(name)
        return method(*args)
    return call


def _spied(env_id, calls):
    """``env_id``'s native vector env, logging its calls of ``step`` and of the draws."""
    def make(num_envs, max_episode_steps, **kw):
        venv = ldp_gym.make_vector_env(env_id, num_envs, max_episode_steps, **kw)
        for name in ("step", "draw_block", "draw_sums"):
            setattr(venv, name, _logged(getattr(venv, name), name, calls))
        return venv
    return make


@pytest.mark.parametrize("env,spec", BLOCK_KINDS)
@pytest.mark.parametrize("wrapper,kw,blocks", [
    (None, {}, True), (BlockSafe, {}, True), (Undeclared, {}, False),
    (RoundByRound, {}, False), (VectorLaplaceReward, {"epsilon": 1.0}, False),
    (VectorGaussianReward, {"epsilon": 1.0, "delta": 1e-5}, False)])
def test_runner_honours_the_wrappers_round_by_round_declaration(env, spec, wrapper, kw, blocks):
    """The block path bypasses the wrappers' step, so it is taken only if every wrapper declares
    needs_round_by_round = False. The privacy wrappers declare True, and one that declares
    nothing is stepped round by round too (the safe default: it may change what the agent
    sees): every round goes through its step, nothing is drawn ahead."""
    calls = []
    wrappers = [] if wrapper is None else [(wrapper, kw)]
    ldp_gym.run(_spied(env, calls), {"A": spec}, horizon=300, n_runs=3, seed=0, progress=False,
                wrappers=wrappers)
    if blocks:
        assert calls and "step" not in calls
    else:
        assert calls == ["step"] * 300


def test_privacy_wrappers_declare_round_by_round_play():
    for cls in (LaplaceReward, GaussianReward, VectorLaplaceReward, VectorGaussianReward):
        assert cls.needs_round_by_round is True


def test_settings_declare_what_can_be_drawn_ahead():
    """Stochastic MAB: blocks of every arm and sums of one arm's rounds; contextual settings and
    the adversarial MAB: blocks (its means move with the rounds: no sums)."""
    assert issubclass(MABCore, DrawsBlocks) and issubclass(MABCore, DrawsStretches)
    for core in (GLMCore, MultiParamGLMCore):
        assert issubclass(core, DrawsBlocks) and not issubclass(core, DrawsStretches)
    core = AdversarialMABCore()
    assert isinstance(core, DrawsBlocks) and not isinstance(core, DrawsStretches)


#: Every agent's declaration and the player the runner's table gives it on its test env, with
#: 2 and 60 runs (``None``: round by round). Written out, not derived: a change of the table
#: (``ldp_gym.runner.blocks.PLAYERS``) or of a declaration shows here.
DECLARED = {
    "UCB1": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMAB-v0
    "KL-UCB": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMAB-v0
    "Thompson": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMAB-v0
    "Exp3": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMAB-v0
    "Tsallis-INF": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMAB-v0
    "LDP-UCB": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMAB-v0
    "DP-UCB": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMAB-v0
    "DP-SE": (BlockPlay.COMMITS, '_Committed', '_Committed'),  # LDPMAB-v0
    "TT-UCB": (BlockPlay.ROUNDS, '_Drawn', None),  # LDPBestArm-v0
    "AdaP-TT": (BlockPlay.ROUNDS, '_Drawn', None),  # LDPBestArm-v0
    "DP-SE (BAI)": (BlockPlay.ROUNDS, '_Drawn', None),  # LDPBestArm-v0
    "CTB-TT": (BlockPlay.ROUNDS, '_Drawn', None),  # LDPBestArm-v0
    "AdaP-UCB": (BlockPlay.COMMITS, '_Committed', '_Committed'),  # LDPMAB-v0
    "AdaP-KLUCB": (BlockPlay.COMMITS, '_Committed', '_Committed'),  # LDPMAB-v0
    "AdaC-UCB": (BlockPlay.COMMITS, '_Committed', '_Committed'),  # LDPMAB-v0
    "DP-KLUCB": (BlockPlay.COMMITS, '_Committed', '_Committed'),  # LDPMAB-v0
    "DP-IMED": (BlockPlay.COMMITS, '_Committed', '_Committed'),  # LDPMAB-v0
    "Shuffle-SE": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMAB-v0
    "Dist-DP-SE": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMAB-v0
    "LinUCB": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPLinearBandit-v0
    "JDP-LinUCB": (BlockPlay.ROUNDS, '_Drawn', None),  # LDPLinearBandit-v0
    "SDP-LinUCB": (BlockPlay.ROUNDS, '_Drawn', None),
    "GLOC": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPLinearBandit-v0
    "Greedy-OLS": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPLinearBandit-v0
    "Greedy-SGD": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPLinearBandit-v0
    "LDP-LinUCB": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPLinearBandit-v0
    "LDP-GLOC": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPGLMBandit-v0
    "LDP-OLS": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPLinearBandit-v0
    "LDP-SGD": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPLinearBandit-v0
    "LDP-OLS (multi)": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMultiParamLinearBandit-v0
    "LDP-SGD (multi)": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMultiParamLinearBandit-v0
    "FKM": (BlockPlay.PLAYS_EVALUATED, '_Evaluated', '_Evaluated'),  # LDPBCO-v0
    "Saha-Tewari": (BlockPlay.PLAYS_EVALUATED, '_Evaluated', '_Evaluated'),  # LDPBCO-v0
    "Hazan-Levy": (BlockPlay.PLAYS_EVALUATED, '_Evaluated', '_Evaluated'),  # LDPBCO-v0
    "ADX": (BlockPlay.PLAYS_EVALUATED, '_Evaluated', '_Evaluated'),  # LDPMultiPointBCO-v0
    "LDPMAB": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPNonparametricBandit-v0
    "LDPMAB-aux": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPNonparametricBandit-v0
    "ABSE": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPNonparametricBandit-v0
    "Uniform": (BlockPlay.PLAYS_BLOCKS, '_Drawn', '_Drawn'),  # LDPMAB-v0
    "CUCB": (BlockPlay.PLAYS_OUTCOMES, '_Scored', '_Scored'),  # LDPCombinatorialBandit-v0
    "CUCB-LDP1": (BlockPlay.PLAYS_OUTCOMES, '_Scored', '_Scored'),  # LDPCombinatorialBandit-v0
    "CUCB-LDP2": (BlockPlay.PLAYS_OUTCOMES, '_Scored', '_Scored'),  # LDPCombinatorialBandit-v0
    "CUCB-DP": (BlockPlay.PLAYS_OUTCOMES, '_Scored', '_Scored'),  # LDPCombinatorialBandit-v0
}


def test_the_dispatch_table_is_the_documented_one():
    """One row per declaration: the setting's protocol it needs and its player."""
    assert {play: (needs.__name__, getattr(make, "__qualname__", "")) for play, (needs, make)
            in blocks.PLAYERS.items()} == {
        BlockPlay.PLAYS_EVALUATED: ("EvaluatesBlocks", "_Evaluated"),
        BlockPlay.PLAYS_OUTCOMES: ("ScoresBlocks", "_Scored"),
        BlockPlay.COMMITS: ("DrawsStretches", "_Committed.where_bounded"),
        BlockPlay.PLAYS_BLOCKS: ("DrawsBlocks", "_Drawn.compiled"),
        BlockPlay.ROUNDS: ("DrawsBlocks", "_Drawn.by_act_observe")}
    doc = blocks.__doc__ or ""
    assert all(play.name in doc for play in BlockPlay)  # the module's table names every row


def test_every_agent_plays_as_the_table_says(monkeypatch):
    """Every agent takes the path of its row of :data:`DECLARED` (blocks where a player is
    named, else round by round), and round by round under a wrapper that does not let blocks
    bypass its ``step``."""
    from ldp_gym.agents import AGENTS

    assert set(DECLARED) == set(AGENTS)
    monkeypatch.setattr(runner, "RUNS_PER_CHUNK", 100)  # 60 runs in one vector env
    taken = []
    for path in ("_round_by_round", "_by_blocks"):
        monkeypatch.setattr(loop, path, _logged(getattr(loop, path), path, taken))
    for name, cls in AGENTS.items():
        play, *players = DECLARED[name]
        assert cls.from_env(gym.make(cls.test_env), **dict(cls.test_params)).block_play is play
        for n_runs, player in zip((2, 60), players):
            venv = ldp_gym.make_vector_env(cls.test_env, n_runs, 40)
            chosen = blocks.block_player(cls.from_env(venv, **dict(cls.test_params)), venv, 40)
            assert (None if chosen is None else type(chosen).__name__) == player, (name, n_runs)
            for wrappers in ((), [(RoundByRound, {})]):
                taken.clear()
                ldp_gym.run(cls.test_env, {name: (cls, dict(cls.test_params))}, horizon=40,
                            n_runs=n_runs, seed=0, progress=False, wrappers=wrappers)
                by_blocks = player is not None and not wrappers
                assert taken == ["_by_blocks" if by_blocks else "_round_by_round"], (name, n_runs)


def test_a_commitment_on_unbounded_rewards_falls_back_to_the_rounds_row():
    """COMMITS needs every reward inside the agent's bounds; else ROUNDS' row (act/observe over
    drawn blocks, few runs) or round by round."""
    venv = ldp_gym.make_vector_env("LDPMAB-v0", 2, 40, distribution="gaussian")
    agent = AdaPUCB.from_env(venv, epsilon=1.0)
    assert type(blocks.block_player(agent, venv, 40)).__name__ == "_Drawn"
    venv = ldp_gym.make_vector_env("LDPMAB-v0", 60, 40, distribution="gaussian")
    assert blocks.block_player(AdaPUCB.from_env(venv, epsilon=1.0), venv, 40) is None


def test_a_declaration_that_is_not_a_block_play_is_refused():
    class Odd(UCB1):
        block_play = "plays_blocks"

    venv = ldp_gym.make_vector_env("LDPMAB-v0", 2, 40)
    with pytest.raises(TypeError, match="block_play must be"):
        blocks.block_player(Odd.from_env(venv), venv, 40)


def test_stretches_end_at_the_horizon_past_the_last_checkpoint():
    """Checkpoints that stop before the horizon: stretches are cut at the horizon."""
    res = ldp_gym.run("LDPMAB-v0", {"A": (AdaPUCB, {"epsilon": 1.0})}, horizon=3000, n_runs=3,
                      seed=0, checkpoints=[1, 10, 100], progress=False)
    assert res.regret["A"].shape == (3, 3) and res.timings["A"]["decisions"] < 600


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
    assert res.meta["privacy"]["UCB1"] == "local DP, epsilon=0.5 per reward via VectorLaplaceReward"


class RoundRobin:
    """A third-party agent whose arms do not depend on the rewards: its regret is known ahead."""

    def __init__(self, n_arms):
        self.n_arms, self.t = n_arms, 0

    def act(self, obs):
        return np.full(len(obs), self.t % self.n_arms)

    def observe(self, *args):
        self.t += 1


def test_regret_under_privacy_wrappers_is_read_from_the_env_not_from_info():
    """Privacy wrappers drop info; the runner reads regret from the env under every wrapper
    (gymnasium's included): the regret computed independently, bitwise, and the same numbers as
    when the wrapper opts in to the oracle info."""
    horizon, cps = 200, ldp_gym.default_checkpoints(200)
    wrappers = [(gym.wrappers.vector.RecordEpisodeStatistics, {}),
                (VectorLaplaceReward, {"epsilon": 1.0})]
    res = ldp_gym.run("LDPMAB-v0", {"RR": RoundRobin(5)}, horizon=horizon, n_runs=3, seed=0,
                      progress=False, wrappers=wrappers, env_kwargs={"order": "given"})
    gaps = 0.75 - np.array([0.75, 0.625, 0.5, 0.375, 0.25])
    expected = np.cumsum(gaps[np.arange(horizon) % 5])[cps - 1]
    assert np.array_equal(res.regret["RR"], np.broadcast_to(expected, (3, len(cps))))
    kw = dict(horizon=2000, n_runs=4, seed=0, progress=False)
    private = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, **kw,
                          wrappers=[(VectorLaplaceReward, {"epsilon": 1.0})])
    oracle = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, **kw,
                         wrappers=[(VectorLaplaceReward, {"epsilon": 1.0, "oracle_info": True})])
    regret = private.regret["UCB1"]
    assert np.array_equal(regret, oracle.regret["UCB1"])
    assert np.isfinite(regret).all() and (np.diff(regret, axis=1) >= 0).all() and (regret[:, -1] > 0).all()


def test_committed_path_only_where_rewards_are_declared_bounded():
    """A sum cannot be clipped reward by reward: committed stretches on Bernoulli arms (declared
    in [0, 1]), round by round on Gaussian arms and on a setting that declares nothing (even
    though its reward_range looks bounded)."""
    def undeclared(num_envs, max_episode_steps):
        venv = ldp_gym.make_vector_env("LDPMAB-v0", num_envs, max_episode_steps)
        venv.core.bounded_rewards = None
        assert venv.core.reward_range == (0.0, 1.0)
        return venv
    kw = dict(agents={"A": (AdaPUCB, {"epsilon": 1.0})}, horizon=2000, n_runs=3, seed=0,
              progress=False)
    assert ldp_gym.run("LDPMAB-v0", **kw).timings["A"]["decisions"] < 200
    gaussian = ldp_gym.run("LDPMAB-v0", env_kwargs={"distribution": "gaussian"}, **kw)
    assert gaussian.timings["A"]["decisions"] == 2000
    assert ldp_gym.run(undeclared, **kw).timings["A"]["decisions"] == 2000


def _unchecked(cls):
    """``cls`` learning from committed sums without the declared-bounds checks (as before them)."""
    def observe_committed(self, actions, counts, reward_sums, **_):
        self._update(np.asarray(actions), np.asarray(counts, np.int64),
                     np.asarray(reward_sums, np.float64))
    return type(cls.__name__, (cls,), {"observe_committed": observe_committed})


def test_declared_bounds_leave_committed_runs_on_bernoulli_arms_unchanged():
    """azize2022-style runs through committed stretches: bitwise the regret and the decisions
    of the unchecked sums (on Bernoulli arms the checks refuse nothing and change nothing)."""
    kw = dict(horizon=20000, n_runs=4, seed=0, progress=False)
    checked = ldp_gym.run("LDPMAB-v0", {"AdaP-UCB": (AdaPUCB, {"epsilon": 1.0}),
                                        "DP-SE": (DPSE, {"epsilon": 1.0})}, **kw)
    unchecked = ldp_gym.run("LDPMAB-v0", {"AdaP-UCB": (_unchecked(AdaPUCB), {"epsilon": 1.0}),
                                          "DP-SE": (_unchecked(DPSE), {"epsilon": 1.0})}, **kw)
    for name in ("AdaP-UCB", "DP-SE"):
        assert np.array_equal(checked.regret[name], unchecked.regret[name])
        assert checked.timings[name]["decisions"] == unchecked.timings[name]["decisions"] < 100


#: DP-SE's epoch 1 with two arms and beta = 0.5: floor(max(32 ln 32 / 0.5^2, 8 ln 16 / 0.5)) + 1.
R1_TWO_ARMS = math.floor(128 * math.log(32)) + 1


def dpse_per_round(means, horizon, n_runs, seed):
    """DP-SE (beta = 0.5: short epochs) played round by round through act/observe on the native
    vector env: final regret, and the number of rounds each run played an eliminated arm."""
    venv = gym.make_vec("LDPMAB-v0", num_envs=n_runs, vectorization_mode="vector_entry_point",
                        max_episode_steps=horizon, means=means)
    agent = DPSE.from_env(venv, epsilon=1.0, beta=0.5, seed=seed)
    obs, _ = venv.reset(seed=seed)
    rows = np.arange(n_runs)
    regret, eliminated = np.zeros(n_runs), np.zeros(n_runs, dtype=np.int64)
    for _ in range(horizon):
        actions = agent.act(obs)
        eliminated += ~agent.active[rows, actions]
        next_obs, rewards, _, _, info = venv.step(actions)
        agent.observe(obs, actions, rewards, next_obs)
        regret += info["regret"]
        obs = next_obs
    return regret, eliminated, agent


def test_dpse_per_round_never_plays_an_eliminated_arm():
    """Arm 0 (0.25) is eliminated after epoch 1 (R_1 = 444 pulls per arm); the survivor, arm 1,
    is played to the end, past the pulls of its epoch (R_2 = 2130, reached at round 3018)."""
    regret, eliminated, agent = dpse_per_round((0.25, 0.75), 3500, 20, seed=0)
    assert (agent.active == [False, True]).all()
    assert (agent.epoch_counts[:, 1] > agent.R).all()  # the survivor had its pulls and more
    assert (eliminated == 0).all() and (regret == 0.5 * R1_TWO_ARMS).all()


def test_dpse_committed_path_plays_the_survivor_across_checkpoints():
    """Checkpoints cut the survivor's last stretch after it has had its epoch's pulls (cut at
    3764 > 3018): regret stays the one of epoch 1, exactly."""
    res = ldp_gym.run("LDPMAB-v0", {"A": (DPSE, {"epsilon": 1.0, "beta": 0.5})}, horizon=5000,
                      n_runs=10, seed=0, env_kwargs={"means": (0.25, 0.75)}, progress=False)
    expected = 0.5 * np.minimum(res.checkpoints, R1_TWO_ARMS)
    assert np.array_equal(res.regret["A"], np.broadcast_to(expected, res.regret["A"].shape))


def test_dpse_per_round_path_matches_committed_path_in_distribution():
    """DP-SE round by round (act/observe) and through committed stretches cut at checkpoints:
    regret at T has the same law (Welch z-test, false-alarm rate 1e-6). Arm 1 survives epoch 1
    in about a third of the runs; in the others arm 2 alone is played from round 1488 and has
    had its epoch's pulls at round 3618 < T = 4000."""
    means, horizon = (0.2, 0.6, 0.75), 4000
    x, eliminated, _ = dpse_per_round(means, horizon, 300, seed=1)
    res = ldp_gym.run("LDPMAB-v0", {"A": (DPSE, {"epsilon": 1.0, "beta": 0.5})}, horizon=horizon,
                      n_runs=300, seed=2, env_kwargs={"means": means}, progress=False)
    y = res.at("A", horizon)
    z = (x.mean() - y.mean()) / np.sqrt(x.var() / x.size + y.var() / y.size)
    assert abs(z) < stats.norm.isf(0.5e-6)
    assert (eliminated == 0).all() and res.timings["A"]["decisions"] < 100


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
    assert "regret at T = 300" in res.table()
    with pytest.raises(ValueError, match="checkpoint"):
        res.at("UCB1", 7777)
    # a one-line repr with the final means, not the arrays
    text = repr(res)
    assert "\n" not in text and text.startswith("Results(env='LDPMAB-v0', 3 runs, T=300")
    assert f"UCB1: {res.at('UCB1', 300).mean():.4g}" in text
    assert "no agents" in repr(Results(np.array([1]), {}, {}))


def test_sweep_parallel_equals_sequential(monkeypatch, capsys):
    """Same numbers; the workers report to the one progress display of the parent (here lines
    on a stderr that is not a terminal, one per report with no interval)."""
    tasks = [dict(env="LDPMAB-v0", agents={"A": (AdaPKLUCB, {"epsilon": e})}, horizon=500,
                  n_runs=3, seed=0, progress=False) for e in (0.5, 2.0)]
    seq = ldp_gym.sweep(tasks, n_jobs=1)
    monkeypatch.setattr(progress, "PROGRESS_INTERVAL", 0.0)
    par = ldp_gym.sweep([{**t, "progress": None} for t in tasks], n_jobs=2, label="sweep")
    assert seq == par
    err = capsys.readouterr().err.splitlines()
    assert err and err[-1].startswith("sweep: 2/2 agents done | 100% | 3.00k/3.00k runs x rounds")


def test_third_party_agent_object_runs():
    class Fixed:
        def act(self, obs):
            return np.zeros(len(obs), dtype=np.int64)

        def observe(self, *args):
            pass
    res = ldp_gym.run("LDPMAB-v0", {"fixed": Fixed()}, horizon=50, n_runs=2, seed=0, progress=False)
    assert np.allclose(res.regret["fixed"], 0.0)  # arm 0 is the best arm of the default instance


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
    """Settings without committed sums play every round (blocks of every arm, or one by one)."""
    res = ldp_gym.run("LDPAdversarialMAB-v0", {"a": spec}, horizon=300, n_runs=3, seed=0,
                      progress=False)
    assert np.isfinite(res.regret["a"]).all() and res.timings["a"]["decisions"] == 300


def _fits(cls, env_id):
    from ldp_gym.agents.bco import BCOAgent
    from ldp_gym.agents.combinatorial import CombinatorialAgent
    from ldp_gym.agents.glm import ContextualAgent

    if ("BestArm" in env_id) != (cls.task != "regret"):  # each task's agents refuse the other's
        return False
    if issubclass(cls, CombinatorialAgent):  # super arms of a family
        return "Combinatorial" in env_id
    if "Combinatorial" in env_id:
        return False  # MultiBinary actions: the other agents refuse them
    if issubclass(cls, BCOAgent):  # their setting, with their number of points per round
        return "BCO" in env_id and (cls.points_per_round > 1) == ("MultiPoint" in env_id)
    if "BCO" in env_id:
        return False  # Box actions: the Discrete agents refuse them
    from ldp_gym.agents.nonparametric import ABSE, LDPMAB

    one_context_ids = ("LDPNonparametricBandit-v0", "LDPClassificationBandit-v0")
    if issubclass(cls, (LDPMAB, ABSE)):  # partitions of contexts in [0, 1]^d
        return env_id in one_context_ids
    contextual = "Bandit" in env_id
    # one context per round: the multi-parameter settings, the nonparametric and classification
    # ones (their cores declare multi_parameter = True)
    one_context = "MultiParam" in env_id or env_id in one_context_ids
    from ldp_gym.agents import SDPLinUCB

    if issubclass(cls, SDPLinUCB):  # a context per arm only: no block contexts
        return contextual and not one_context
    if issubclass(cls, ContextualAgent):
        return contextual and (one_context or cls.blocks)
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
            with pytest.raises(ValueError, match="env|multi_parameter|action spaces|points|task"):
                ldp_gym.run(env_id, {name: spec}, horizon=60, n_runs=2, seed=0, progress=False)


def test_results_state_the_approximation_oracle():
    """The (alpha, beta) of the oracle the regret is measured against goes into Results."""
    from ldp_gym.agents import CUCB

    env_kwargs = {"family": "coverage", "n_arms": 8, "max_size": 2}
    res = ldp_gym.run("LDPCombinatorialBandit-v0", {"CUCB": CUCB}, horizon=20, n_runs=2, seed=0,
                      env_kwargs=env_kwargs, progress=False)
    assert res.meta["oracle"] == {"alpha": pytest.approx(1 - 1 / np.e), "beta": 1.0}
    from ldp_gym.agents import UCB1

    plain = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=20, n_runs=2, seed=0, progress=False)
    assert "oracle" not in plain.meta


# --------------------------------------------------------------------------- progress


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_lines_at_a_steady_interval_over_the_whole_job():
    """Not a terminal: a line every interval (30 s), on news or on a tick, saying which agent
    of how many, runs x rounds done of the whole job and the time left; a last line at the
    end if any was written."""
    import io

    clock, out = FakeClock(), io.StringIO()
    job = progress.Job([("UCB1", 10, 1000), ("DP-SE", 10, 1000)], "lines", stream=out,
                      interval=30.0, clock=clock)
    job.put((0, 0))
    clock.now = 10.0
    job.put((0, 500))
    assert out.getvalue() == ""  # within the interval: silent
    clock.now = 30.0
    job.put((0, 600))
    clock.now = 45.0
    job.put((0, 1000))
    job.put((1, 0))
    clock.now = 60.0
    job.tick()  # no news for a while: the line comes on time all the same
    clock.now = 75.0
    job.put((1, 1000))
    job.close()
    lines = out.getvalue().splitlines()
    assert lines == [
        "ldp-gym: agent 1/2 UCB1 |  30% | 6.00k/20.00k runs x rounds | 30s elapsed, ~1m10s left",
        "ldp-gym: agent 2/2 DP-SE (1 done) |  50% | 10.00k/20.00k runs x rounds | 1m00s elapsed, "
        "~1m00s left",
        "ldp-gym: 2/2 agents done | 100% | 20.00k/20.00k runs x rounds | 1m15s elapsed, "
        "~0s left"]


def test_progress_names_the_agents_running_in_parallel_and_shortens_long_names():
    import io

    job = progress.Job([("A" * 40, 2, 10), ("B", 2, 10), ("C", 2, 10)], "lines",
                      stream=io.StringIO(), clock=FakeClock())
    job.put((1, 3))
    job.put((0, 2))
    assert job.describe() == f"ldp-gym: agents 1,2/3 {'A' * 25}..., B"


def test_a_short_job_writes_nothing_and_quiet_writes_nothing(capsys):
    """Jobs shorter than the interval stay silent when stderr is not a terminal, and
    ``progress=False`` (``--quiet``) never writes."""
    ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=200, n_runs=2, seed=0)
    ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=200, n_runs=2, seed=0, progress=False)
    assert capsys.readouterr().err == ""
    assert progress.progress_mode(False) is None and progress.progress_mode(None) == "lines"


def test_run_reports_every_agent_in_order_to_one_display(monkeypatch, capsys):
    """Both paths (round by round, by blocks) report to the job; the lines name agent i of n."""
    monkeypatch.setattr(progress, "PROGRESS_INTERVAL", 0.0)
    monkeypatch.setattr(progress, "REPORT_INTERVAL", 0.0)
    ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1, "AdaP-UCB": (AdaPUCB, {"epsilon": 1.0})},
                horizon=300, n_runs=2, seed=0, wrappers=[(RoundByRound, {})], label="job")
    ldp_gym.run("LDPMAB-v0", {"DP-UCB": (DPUCB, {"epsilon": 1.0})}, horizon=300, n_runs=2, seed=0)
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith("job: agent 1/2 UCB1 |") for line in err)
    assert any(line.startswith("job: agent 2/2 AdaP-UCB (1 done) |") for line in err)
    assert err.index(next(x for x in err if "job: agent 2/2" in x)) > 0
    assert "job: 2/2 agents done | 100% | 1.20k/1.20k runs x rounds" in err[err.index(
        next(x for x in err if x.startswith("ldp-gym:"))) - 1]
    assert err[-1].startswith("ldp-gym: 1/1 agents done | 100% | 600/600 runs x rounds")


# --------------------------------------------------------------------------- merge, tables, plots


def _results(agents=("A",), n_runs=3, horizon=100, env="LDPMAB-v0", env_kwargs=None,
             wrappers=(), sd=True):
    cps = np.array([10, horizon])
    regret = {a: np.arange(n_runs * 2, dtype=float).reshape(n_runs, 2) * sd + 5 for a in agents}
    meta = {"env": env, "env_kwargs": env_kwargs or {}, "wrappers": list(wrappers),
            "horizon": horizon, "n_runs": n_runs, "seed": 0, "secure": False,
            "privacy": {a: "none" for a in agents}}
    return Results(cps, regret, meta)


@pytest.mark.parametrize("other,allow,msg", [
    (dict(env="LDPGLMBandit-v0"), "env", "different env"),
    (dict(env_kwargs={"means": [0.5, 0.4]}), "env", "different env_kwargs"),
    (dict(horizon=200), "horizon", "different horizon"),
    (dict(n_runs=4), "n_runs", "different numbers of runs"),
    (dict(agents=("A",)), "agents", "'A' is in both"),
])
def test_merge_refuses_different_settings_unless_told(other, allow, msg):
    base = _results()
    kw = {"agents": ("B",), **other}
    if "horizon" in other:  # same checkpoints, different horizons
        kw["horizon"] = 200
    mine = base if "horizon" not in other else Results(np.array([10, 200]), base.regret, base.meta)
    theirs = _results(**kw)
    with pytest.raises(ValueError, match=msg):
        mine.merge(theirs)
    merged = mine.merge(theirs, allow_different=[allow])
    assert set(merged.agents) == set(mine.agents) | set(theirs.agents)
    mine.merge(theirs, allow_different=True)
    with pytest.raises(ValueError, match="allow_different"):
        mine.merge(theirs, allow_different=["nope"])


def test_merge_keeps_differing_settings_per_agent():
    """Wrappers may differ (the one-point reduction next to private agents): kept per agent;
    a setting both share stays in meta; chained merges keep the record."""
    a = _results(("A",))
    b = _results(("B",), wrappers=["VectorLaplaceReward({'epsilon': 1.0})"])
    c = _results(("C",), env_kwargs={"means": [0.1]})
    merged = a.merge(b)
    assert merged.meta["env"] == "LDPMAB-v0" and "wrappers" not in merged.meta
    assert merged.meta["per_agent"]["wrappers"] == {"A": [], "B": b.meta["wrappers"]}
    both = merged.merge(c, allow_different=["env"])
    assert both.meta["per_agent"]["wrappers"]["C"] == []
    assert both.meta["per_agent"]["env_kwargs"] == {"A": {}, "B": {}, "C": {"means": [0.1]}}
    with pytest.raises(ValueError, match="env_kwargs"):
        both.merge(_results(("D",)))
    kept = a.merge(_results(("A",)), allow_different=["agents"])
    assert kept.agents == ["A"]


def test_table_says_what_the_cells_are_and_explains_an_sd_of_zero():
    res = _results(("A",)).merge(_results(("DP-SE",), sd=False))
    table = res.table([10, 100])
    head, rule, a, dpse, blank, cells, zero = table.splitlines()
    assert head == "| agent | privacy | regret at t = 10 | regret at T = 100 |"
    assert a == "| A | none | 7.0 ± 2.0 | 8.0 ± 2.0 |"
    assert dpse == "| DP-SE | none | 5.0 ± 0.0° | 5.0 ± 0.0° |"
    assert cells.startswith("Cells: cumulative regret, mean ± sd over 3 runs")
    assert zero.startswith("sd 0 (marked °): every run has exactly the same regret")
    big = Results(np.array([10**6, 10**7]), {"A": np.ones((2, 2))}, {"horizon": 10**7})
    assert "regret at t = 1,000,000 | regret at T = 10,000,000" in big.table([10**6, 10**7])
    mixed = _results(("A",)).merge(_results(("B",), n_runs=5), allow_different=["n_runs"])
    assert "| agent | privacy | runs |" in mixed.table()
    assert "mean ± sd over the runs of each agent" in mixed.table()


def test_plot_says_what_the_band_is_and_minor_log_labels_do_not_crowd():
    import matplotlib

    matplotlib.use("Agg")
    from ldp_gym.results import tidy_log_axes

    res = _results(("A", "B"))
    for band, text in (("ci", "95 % confidence interval"), ("sd", "± 1 sd"),
                       ("half-sd", "± 0.5 sd")):
        ax = res.plot(band=band, logx=True)
        title = ax.get_legend().get_title().get_text()
        assert text in title and "mean of 3 runs" in title
    ax = res.plot(logx=True)  # by default the sd, the spread the tables print
    assert "± 1 sd" in ax.get_legend().get_title().get_text()
    ax.set_xlim(1000, 9000)  # less than a decade: minor ticks labelled at 2 and 5 only
    tidy_log_axes(ax)

    def shown(ax):
        ax.figure.canvas.draw()
        lo, hi = ax.get_xlim()
        return [t.get_text() for t in ax.xaxis.get_minorticklabels()
                if t.get_text() and lo <= t.get_position()[0] <= hi]
    assert shown(ax) == ["2000", "5000"]
    ax.set_xlim(10, 10**4)  # decades: no minor labels
    tidy_log_axes(ax)
    assert shown(ax) == []


def test_a_third_party_agents_bad_action_names_the_agent_on_both_paths():
    """Whose play failed is in the message, on the block path (which checks the actions as the
    env's step does) and round by round; a negative seed names ``seed`` before any work."""

    class Bad:
        def act(self, obs):
            return np.full(obs.shape[0], 9)

        def observe(self, *args):
            pass

    for wrappers in ((), [(RoundByRound, {})]):
        with pytest.raises(ValueError, match=r"agent 'bad' \(Bad\): action"):
            ldp_gym.run("LDPMAB-v0", {"bad": Bad()}, horizon=10, n_runs=2, progress=False,
                        wrappers=wrappers)
    with pytest.raises(ValueError, match="^seed must be"):
        ldp_gym.run("LDPMAB-v0", {"u": UCB1}, horizon=10, n_runs=2, seed=-1, progress=False)


# --------------------------------------------------------------------------- runs across cores


@pytest.mark.parametrize("spec", [UCB1, (DPUCB, {"epsilon": 1.0}), (AdaPKLUCB, {"epsilon": 1.0})])
def test_runs_split_across_workers_give_bitwise_the_same_results(spec):
    """An agent's runs are cut into chunks of RUNS_PER_CHUNK, each with its own streams: the
    results are bitwise the same for 1, 2 and 3 workers, and the first chunk's runs are those of
    a run of RUNS_PER_CHUNK runs (chunk 0 keeps the seeds of an unsplit run)."""
    n = 2 * runner.RUNS_PER_CHUNK + 7  # three chunks, the last one short
    kw = dict(horizon=300, n_runs=n, seed=5, progress=False)
    one = ldp_gym.run("LDPMAB-v0", {"A": spec}, n_jobs=1, **kw)
    for workers in (2, 3):
        res = ldp_gym.run("LDPMAB-v0", {"A": spec}, n_jobs=workers, **kw)
        assert np.array_equal(res.regret["A"], one.regret["A"]), workers
    assert one.regret["A"].shape == (n, len(one.checkpoints))
    first = ldp_gym.run("LDPMAB-v0", {"A": spec}, **{**kw, "n_runs": runner.RUNS_PER_CHUNK})
    assert np.array_equal(one.regret["A"][:runner.RUNS_PER_CHUNK], first.regret["A"])
    chunk = runner.RUNS_PER_CHUNK
    assert not np.array_equal(one.regret["A"][chunk:2 * chunk], first.regret["A"])  # own streams


def test_a_ready_made_agent_is_one_task_whatever_its_runs():
    n = runner.RUNS_PER_CHUNK + 3
    venv = ldp_gym.make_vector_env("LDPMAB-v0", n, 100)
    res = ldp_gym.run("LDPMAB-v0", {"A": UCB1.from_env(venv)}, horizon=100, n_runs=n, seed=0,
                      progress=False, n_jobs=2)
    assert res.regret["A"].shape[0] == n
    assert runner._plan({"A": UCB1.from_env(venv)}, n) == [("A", ANY, 0, n, "A")]
    plan = runner._plan({"A": UCB1}, n)
    assert [(start, runs, label) for _, _, start, runs, label in plan] == [
        (0, runner.RUNS_PER_CHUNK, f"A [runs 0-{runner.RUNS_PER_CHUNK - 1}]"),
        (runner.RUNS_PER_CHUNK, 3, f"A [runs {runner.RUNS_PER_CHUNK}-{n - 1}]")]


def test_to_frame_is_tidy_and_holds_every_number():
    """One row per agent, run and checkpoint; pivoting back gives the regret arrays."""
    res = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1, "DP-SE": (DPSE, {"epsilon": 1.0})},
                      horizon=300, n_runs=3, seed=4, checkpoints=[100, 200, 300], progress=False)
    frame = res.to_frame()
    assert list(frame.columns) == ["agent", "run", "checkpoint", "regret", "privacy"]
    assert len(frame) == 2 * 3 * 3
    for agent in res.agents:
        part = frame[frame.agent == agent].pivot(index="run", columns="checkpoint",
                                                 values="regret")
        assert np.array_equal(part.to_numpy(), res.regret[agent])
        assert list(part.columns) == [100, 200, 300]
    assert set(frame[frame.agent == "DP-SE"].privacy) == {str(res.meta["privacy"]["DP-SE"])}
    assert set(frame[frame.agent == "UCB1"].privacy) == {"none"}


@pytest.mark.parametrize("bad", [lambda a: a + 5, lambda a: a - 1, lambda a: a.astype(float),
                                 lambda a: a[:, :-1]])
def test_a_block_of_actions_that_are_not_arms_is_refused(bad):
    """The block player reads each chosen arm's regret in one compiled pass, which also checks
    that every action is an arm of the block (an integer in [0, K)) and the shape is (N, L)."""

    class Wrong(UCB1):
        def play_block(self, obs, rewards):
            return bad(super().play_block(obs, rewards))

    with pytest.raises(ValueError, match=r"a block's actions must be arms in \[0, 5\) of shape"):
        ldp_gym.run("LDPMAB-v0", {"W": Wrong}, horizon=50, n_runs=3, seed=0, progress=False)


@pytest.mark.parametrize("name", ["UCB1", "CUCB-DP", "LDPMAB"])
def test_draws_ahead_in_the_background_or_not_give_bitwise_the_same_results(name):
    """Where a core is spare the runner draws the next block (and CUCB-DP and LDPMAB their next
    chunk of noise) in the background thread; in a parallel run's workers (``filled``) they
    draw in the thread that plays. The draws come in the same order, so the results are
    bitwise the same; so are those of a run handed to the background thread itself."""
    from ldp_gym.agents import AGENTS as CATALOGUE
    from ldp_gym.background import background, filled

    cls = CATALOGUE[name]
    kw = dict(horizon=3 * blocks.BLOCK + 5, n_runs=3, seed=2, progress=False)
    spec = (cls, dict(cls.test_params))
    ahead = ldp_gym.run(cls.test_env, {name: spec}, **kw)
    with filled():
        alone = ldp_gym.run(cls.test_env, {name: spec}, **kw)
    assert np.array_equal(ahead.regret[name], alone.regret[name])
    nested = background().submit(ldp_gym.run, cls.test_env, {name: spec}, **kw)
    assert np.array_equal(nested.result(timeout=120).regret[name], alone.regret[name])


def test_a_core_is_spare_only_for_a_single_worker_on_several_cores():
    """No spare core inside ``filled`` (a parallel run's workers), on the background thread
    itself (work there would wait on itself), or for a thread allowed on one core."""
    from ldp_gym.background import background, filled, spare_core
    from ldp_gym.runner.parallel import _in_worker

    cores = os.sched_getaffinity(0)
    assert spare_core() is (len(cores) > 1)
    with filled():
        assert not spare_core()
    assert spare_core() is (len(cores) > 1)
    assert _in_worker(spare_core) is False
    assert background().submit(spare_core).result(timeout=60) is False
    os.sched_setaffinity(0, {min(cores)})
    try:
        assert not spare_core()
    finally:
        os.sched_setaffinity(0, cores)
