"""The nonparametric agents: LDPMAB (Ma et al. 2025, Alg 1-2), LDPMAB with auxiliary data
(Alg 3), ABSE (Perchet and Rigollet 2013) and the uniform policy.

Partition logic, estimator and radius on hand cases, elimination and its propagation, the
refinement cap, the uniform policy over the active arms, the message schema, the audits of
the user-side reports (each with a mutant it flags), the compiled block path against per-user
play (a statistical test with its false-alarm rate), regret against the uniform policy, and
bad input. Every test is deterministic (fixed seeds).
"""

import math

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

import ldp_gym
from ldp_gym.agents import ABSE, LDPMAB, LDPMABAux, UniformRandom
from ldp_gym.agents import nonparametric as NP
from ldp_gym.wrappers.mechanisms import LaplaceMechanism, recording
from ldp_gym.wrappers.mechanisms.audit import audit

ENV = "LDPNonparametricBandit-v0"
K = 3


def split(agent, node, u, run=0):
    """Refine ``node`` of ``run`` with the tie-breaking uniform ``u`` (Alg 1)."""
    NP._split(run, node, u, agent._partition(),
              NP.BinSums(agent.indicator_sums, agent.reward_sums, agent.bin_users,
                         agent.reused_sums))


def active_bins(agent, run=0):
    return agent.bins[run, :agent.n_active[run]].tolist()


def zero_report(agent, source=0):
    """A message of zeros for every active slot: the server counts one user and checks."""
    b = int(agent.n_active.max())
    return {"bins": agent.bins[:, :b].copy(), "U": np.zeros((agent._n, b, K)),
            "V": np.zeros((agent._n, b, K)), "source": np.full(agent._n, source)}


# ----------------------------------------------------------------------------- partition


def test_max_edge_split_ties_and_children():
    agent = LDPMAB(K, epsilon=1.0, horizon=1000, num_envs=1, seed=0)
    split(agent, 0, 0.3)  # a square: both edges tie, floor(0.3 * 2) = 0 -> the first coordinate
    assert agent.split[0, 0] == 0 and agent.left[0, 0] == 1 and not agent.active[0, 0]
    assert agent.lo[0, 1].tolist() == [0.0, 0.0] and agent.hi[0, 1].tolist() == [0.5, 1.0]
    assert agent.lo[0, 2].tolist() == [0.5, 0.0] and agent.hi[0, 2].tolist() == [1.0, 1.0]
    assert active_bins(agent) == [1, 2] and agent.depth[0, 1] == agent.depth[0, 2] == 1
    split(agent, 1, 0.0)  # 0.5 x 1: the longest edge only, whatever u
    assert agent.split[0, 1] == 1 and agent.hi[0, 3].tolist() == [0.5, 0.5]
    assert active_bins(agent) == [2, 3, 4]  # the parent leaves the list, its children close it
    split(agent, 2, 0.99)
    assert agent.split[0, 2] == 1
    # a cube: three tied edges, floor(3 u)
    cube = LDPMAB(K, epsilon=1.0, horizon=1000, dim=3, num_envs=1, seed=0)
    dims = []
    for u in (0.0, 0.34, 0.67):
        c = LDPMAB(K, epsilon=1.0, horizon=1000, dim=3, num_envs=1, seed=0)
        split(c, 0, u)
        dims.append(int(c.split[0, 0]))
    assert dims == [0, 1, 2] and cube.n_active[0] == 1


def test_ties_broken_uniformly_from_the_decision_stream():
    """Every run's root refined at the same message (tiny radius, warm-up 1): the coordinate,
    uniform over the two tied edges, comes from each run's decision uniform: Binomial(n, 1/2)
    (two-sided z-test, false-alarm rate 1e-6)."""
    n = 4000
    agent = LDPMAB(K, epsilon=1e9, horizon=1000, num_envs=n, seed=3, warmup=1, max_depth=1)
    agent.indicator_sums[:, 0, 0] = 1e6
    agent.update(zero_report(agent))
    assert (agent.split[:, 0] >= 0).all() and (agent.n_active == 2).all()
    z = (np.sum(agent.split[:, 0] == 0) - n / 2) / math.sqrt(n / 4)
    assert abs(z) < stats.norm.isf(0.5e-6)


def test_bin_lookup_left_below_the_midpoint():
    agent = LDPMAB(K, epsilon=1.0, horizon=1000, num_envs=4, seed=0)
    for run in range(4):
        split(agent, 0, 0.0, run)  # first coordinate at 1/2
        split(agent, 2, 0.0, run)  # the right half at x_2 = 1/2
    x = np.array([[0.49, 0.9], [0.5, 0.49], [0.5, 0.5], [1.0, 1.0]])
    assert agent.bin_of(x).tolist() == [1, 3, 4, 4]


# ----------------------------------------------------------------------------- estimator


def test_constants_of_the_paper():
    agent = LDPMAB(K, epsilon=2.0, horizon=100_000, dim=2)
    assert agent.warmup == 16 ** 2
    assert math.isclose(agent.radius_factor, math.sqrt(2 * math.log2(100_000)), rel_tol=1e-12)
    n, eps, d = 100_000, 2.0, 2
    cap = min(math.log2(2 * n) * d / (2 + d), math.log2(2 * n * eps ** 2) * d / (2 + 2 * d))
    assert agent.max_depth == math.floor(cap) == 6
    assert LDPMAB(K, epsilon=1e-3, horizon=10).max_depth == 0  # log2(2 n eps^2) < 0
    assert np.array_equal(agent.taus, 2.0 ** (-np.arange(7) / 2))
    assert math.isclose(LDPMAB(K, epsilon=2.0, horizon=100, C=3.0).radius_factor,
                        3.0 * math.sqrt(math.log(100)))


def test_estimate_and_radius_on_hand_cases():
    """eq. 13-14: r^ = sum V / sum U, sqrt(max{sum U, N/eps^2}) / sum U (per C sqrt(ln n)),
    infinite radius for a non-positive sum U."""
    su = np.array([10.0, 20.0, -1.0]).reshape(1, 1, 1, 3)
    sv = np.array([5.0, 4.0, 3.0]).reshape(1, 1, 1, 3)
    cnt = np.full((1, 1, 1), 100)
    eps = np.array([2.0])
    got = [NP._estimate(su, sv, cnt, eps, 10, False, 0, 0, k) for k in range(3)]
    assert got[0] == (0.5, math.sqrt(25.0) / 10.0)  # N/eps^2 = 25 > 10
    assert got[1] == (0.2, math.sqrt(25.0) / 20.0)
    assert got[2][1] == math.inf


def test_multi_source_estimator_weights_and_radius():
    """eq. 26-28: lambda_s = min{1, eps_s^2 sum U_s / N_s} for sources past the warm-up
    (0 otherwise), weighted sums and radius."""
    su = np.array([[40.0], [30.0], [25.0]]).reshape(1, 1, 3, 1)
    sv = np.array([[20.0], [12.0], [5.0]]).reshape(1, 1, 3, 1)
    cnt = np.array([50, 200, 400]).reshape(1, 1, 3)
    eps = np.array([1.0, 0.5, 4.0])
    est, rad = NP._estimate(su, sv, cnt, eps, 100, True, 0, 0, 0)
    lam = np.array([0.0, min(1, 0.25 * 30 / 200), min(1, 16 * 25 / 400)])  # source 0: N <= 100
    s_u, s_v = su.ravel(), sv.ravel()
    assert math.isclose(est, (lam * s_v).sum() / (lam * s_u).sum(), rel_tol=1e-12)
    var = (lam ** 2 * np.maximum(s_u, cnt.ravel() / eps ** 2)).sum()
    assert math.isclose(rad, math.sqrt(var) / (lam * s_u).sum(), rel_tol=1e-12)
    # one source is the single-source estimator, whatever its weight
    one = NP._estimate(su[:, :, 1:2], sv[:, :, 1:2], cnt[:, :, 1:2], eps[1:2], 100, True, 0, 0, 0)
    single = NP._estimate(su[:, :, 1:2], sv[:, :, 1:2], cnt[:, :, 1:2], eps[1:2], 100, False, 0,
                          0, 0)
    assert np.allclose(one, single, rtol=1e-12)


# ----------------------------------------------------------------------------- server rules


def crafted(max_depth=2, warmup=1, **kw):
    """One run, eps so large that N/eps^2 vanishes: radius C sqrt(ln n)/sqrt(sum U)."""
    return LDPMAB(K, epsilon=1e9, horizon=1000, num_envs=1, seed=0, warmup=warmup,
                  max_depth=max_depth, **kw)


def test_elimination_then_refinement_propagates_to_descendants():
    agent = crafted()
    # root (tau = 1): r^ = (2.5, 2.0, 0.1), radius ~ 5.3/sqrt(1e4) < 1: arm 2's upper bound 1.1 is
    # below arm 0's lower bound 1.5 (eliminated); arm 1's 3.0 is not
    agent.indicator_sums[0, 0, 0] = 1e4
    agent.reward_sums[0, 0, 0] = [2.5e4, 2.0e4, 1e3]
    agent.update(zero_report(agent))
    assert agent.arms[0, 0].tolist() == [True, True, False]
    assert active_bins(agent) == [1, 2]  # then refined: every active radius below tau_0
    assert agent.arms[0, 1].tolist() == agent.arms[0, 2].tolist() == [True, True, False]
    assert (agent.indicator_sums[0, 1:3] == 0).all()  # data not reused
    assert (agent.bin_users[0, 1:3] == 0).all()
    agent.indicator_sums[0, 1, 0] = 1e4
    agent.update(zero_report(agent))
    assert active_bins(agent) == [2, 3, 4]
    assert agent.arms[0, 3].tolist() == agent.arms[0, 4].tolist() == [True, True, False]


def test_elimination_is_strict_and_keeps_an_arm():
    agent = crafted(max_depth=0, C=1e-9)
    agent.indicator_sums[0, 0, 0] = 1.0
    agent.reward_sums[0, 0, 0] = [3.0, 1.0, 1.0]  # lower bound 3 - 1 = 2 == upper bound 1 + 1: kept
    agent.update(zero_report(agent))
    assert agent.arms[0, 0].all()
    agent.reward_sums[0, 0, 0] = [3.0 + 1e-9, 1.0, -5.0]
    agent.update(zero_report(agent))
    assert agent.arms[0, 0].tolist() == [True, False, False]


def test_refinement_cap():
    agent = crafted(max_depth=1)
    agent.indicator_sums[0, 0, 0] = 1e6
    agent.update(zero_report(agent))
    assert active_bins(agent) == [1, 2]
    agent.indicator_sums[0, 1:3, 0] = 1e6  # radius far below tau_1, but depth 1 is the cap
    for _ in range(3):
        agent.update(zero_report(agent))
    assert active_bins(agent) == [1, 2] and agent.n_nodes[0] == 3
    # the node arrays never exceed the full tree of the cap, however long the run
    venv = ldp_gym.make_vector_env(ENV, 3, 3000)
    venv.reset(seed=0)
    fast = LDPMAB.from_env(venv, epsilon=8.0, seed=0, max_depth=3)
    fast.play_block(*venv.draw_block(3000)[:2])
    assert fast.lo.shape[1] <= 2 ** 4 - 1 and (fast.depth[fast.active] <= 3).all()


def test_warmup_gates_the_checks():
    agent = crafted(max_depth=3, warmup=3)
    agent.indicator_sums[0, 0, 0] = 1e6
    agent.update(zero_report(agent))
    agent.update(zero_report(agent))
    assert active_bins(agent) == [0]  # N(A) = 2 < 3
    agent.update(zero_report(agent))
    assert active_bins(agent) == [1, 2]


def test_policy_is_uniform_over_the_active_arms():
    """Arms 0 and 2 active: each with probability 1/2 (z-test, false-alarm rate 1e-6); one
    active arm: always it."""
    n = 20_000
    agent = LDPMAB(K, epsilon=1.0, horizon=1000, num_envs=n, seed=1, max_depth=1)
    agent.arms[:, 0] = [True, False, True]
    x = np.random.default_rng(0).random((n, 2))
    a = agent.act(x)
    assert set(np.unique(a)) == {0, 2}
    z = (np.sum(a == 0) - n / 2) / math.sqrt(n / 4)
    assert abs(z) < stats.norm.isf(0.5e-6)
    agent.arms[:, 0] = [False, True, False]
    assert (agent.act(x) == 1).all()


# ----------------------------------------------------------------------------- the message


def three_bins(n=1, eps=1.0, cls=LDPMAB, seed=0, **kw):
    """An agent of n runs whose partition is {x_1 < 1/2, (x_1 >= 1/2, x_2 < 1/2), the rest}."""
    agent = cls(K, epsilon=eps, horizon=1000, num_envs=n, seed=seed, max_depth=2, **kw)
    for run in range(n):
        split(agent, 0, 0.0, run)
        split(agent, 2, 0.0, run)
    return agent


def test_message_layout_does_not_depend_on_the_data():
    """R9: every user sends K slots of U and of V for every active bin, in the public order,
    all noised and on the mechanisms' grids, whatever its bin, arm and reward (in or out of
    bounds)."""
    agent = three_bins()
    layouts = []
    for x, arm, y in [([0.1, 0.1], 0, 0.0), ([0.9, 0.1], 2, 1.0), ([0.9, 0.9], 1, 1000.0),
                      ([0.5, 0.5], 0, -3.0)]:
        msg = agent.local_report(np.array([x]), np.array([arm]), np.array([y]), np.array([x]),
                                 agent.public_state())
        layouts.append({k: (v.shape, v.dtype) for k, v in msg.items()})
        assert msg["bins"].tolist() == [[1, 3, 4]] and msg["source"].tolist() == [0]
        for part, mech in zip(("U", "V"), agent.mechanisms[0]):
            assert np.all(msg[part] != 0.0)
            assert np.array_equal(msg[part] / mech.grid, np.rint(msg[part] / mech.grid))
    assert all(lay == layouts[0] for lay in layouts)


def test_replay_neighbours_within_the_budget():
    """Same seed, neighbouring users (bin, arm and reward changed, out of bounds included):
    the same mechanism calls with the same shapes and noise scales, inputs apart by at most 2
    in l1 per part (4 coordinates of sensitivity 1, eps/4 each: eps in all)."""
    rng = np.random.default_rng(0)
    n = 500
    x0, x1 = rng.random((n, 2)), rng.random((n, 2))
    a0, a1 = rng.integers(0, K, n), rng.integers(0, K, n)
    y0, y1 = rng.uniform(-2, 3, n), rng.uniform(-2, 3, n)
    y1[:10] = 1e6

    def trace(x, a, y):
        agent = three_bins(n, eps=2.0, seed=5)
        with recording() as rec:
            agent.local_report(x, a, y, x, agent.public_state())
        return rec, agent
    t0, agent = trace(x0, a0, y0)
    t1, _ = trace(x1, a1, y1)
    assert [c["mechanism"] for c in t0] == [c["mechanism"] for c in t1] == ["LaplaceMechanism"] * 2
    spent = np.zeros(n)
    for c0, c1 in zip(t0, t1):
        assert c0["shape"] == c1["shape"] == (n, 3, K) and np.array_equal(c0["noise"], c1["noise"])
        gap = np.abs(c0["input"] - c1["input"]).reshape(n, -1)
        assert gap.max() <= c0["sensitivity"] == 1.0
        spent += gap.sum(axis=1) * c0["epsilon"]
    assert spent.max() <= agent.privacy.epsilon * (1 + 1e-12)


# ----------------------------------------------------------------------------- audits


class QuietSlots(LDPMAB):
    """Mutant: slot noise of scale 3.6/eps instead of 4/eps (claim unchanged)."""

    def _init_state(self, n):
        super()._init_state(n)
        self.mechanisms = [(LaplaceMechanism(e / 3.6, 0.0, 1.0, **self.noise_source()),
                            LaplaceMechanism(e / 3.6, 0.0, 1.0, **self.noise_source()))
                           for e in self.source_epsilons]


class OwnBinNoise(LDPMAB):
    """Mutant: the public code's departure, noise only in the user's own bin (the other bins'
    slots sent as exact zeros)."""

    def local_report(self, obs, actions, rewards, next_obs, public_state, source=0):
        msg = super().local_report(obs, actions, rewards, next_obs, public_state, source)
        p = {k: np.asarray(v) for k, v in public_state.items()}
        rows = np.ascontiguousarray(obs, dtype=float)[:, None]
        mine = [NP._leaf(rows, i, 0, p["lo"], p["hi"], p["split"], p["left"], p["active"])
                for i in range(len(obs))]
        own = msg["bins"] == np.array(mine)[:, None]
        for part in ("U", "V"):
            msg[part] = np.where(own[..., None], msg[part], 0.0)
        return msg


def report_sampler(cls, x, arm, y, seed, eps=2.0, source=0, **kw):
    """``n -> messages`` (U and V flattened) of n users at x with the public state frozen (two
    bins, x_1 below and above 1/2, broadcast to the n runs); a fresh agent and seed per call,
    so every call draws fresh noise."""
    halves = LDPMAB(K, epsilon=eps, horizon=1000, num_envs=1, max_depth=2)
    split(halves, 0, 0.0)
    public = halves.public_state()
    calls = [0]

    def draw(n):
        calls[0] += 1
        agent = cls(K, epsilon=eps, horizon=1000, num_envs=n, seed=[seed, calls[0]],
                    max_depth=2, **kw)
        agent._fed = True  # (LDPMABAux) the partition is frozen: no jump-start here
        state = {k: np.repeat(v, n, axis=0) for k, v in public.items()}
        obs = np.tile(np.asarray(x, float), (n, 1))
        msg = agent.local_report(obs, np.full(n, arm), np.full(n, float(y)), obs, state,
                                 source=source)
        assert (msg["source"] == source).all() and (msg["bins"] == [1, 2]).all()
        return np.concatenate([msg["U"].reshape(n, -1), msg["V"].reshape(n, -1)], axis=1)
    return draw


#: neighbours: another bin and another arm with reward 1 in both (two slots of U and two of V
#: change by 1: the whole budget); another bin, arm and reward, out of bounds (clipped)
PAIRS = {"bin-arm": (([0.2, 0.5], 0, 1.0), ([0.9, 0.1], 1, 1.0)),
         "bin-arm-reward": (([0.2, 0.5], 2, 1000.0), ([0.9, 0.9], 0, -5.0))}


@pytest.mark.audit
@pytest.mark.parametrize("pair", PAIRS)
def test_user_report_audit(pair):
    (u0, u1) = PAIRS[pair]
    res = audit(report_sampler(LDPMAB, *u0, 1), report_sampler(LDPMAB, *u1, 2), n=200_000,
                statistic="laplace")
    assert res.epsilon_lower <= 2.0


@pytest.mark.audit
def test_user_report_mutants_flagged():
    u0, u1 = PAIRS["bin-arm"]
    # 11% too much loss on an event of probability about 1/16: more samples to resolve it
    quiet = audit(report_sampler(QuietSlots, *u0, 3), report_sampler(QuietSlots, *u1, 4),
                  n=500_000, statistic="laplace")
    assert quiet.epsilon_lower > 2.0
    own = audit(report_sampler(OwnBinNoise, *u0, 5), report_sampler(OwnBinNoise, *u1, 6),
                n=50_000, statistic=lambda y: (y[:, :K] == 0).all(axis=1).astype(float))
    assert own.epsilon_lower > 2.0


@pytest.mark.audit
def test_auxiliary_user_report_audit():
    """An auxiliary user of dataset 1 is released with its own budget eps_1 = 0.5."""
    u0, u1 = PAIRS["bin-arm"]
    kw = dict(eps=4.0, source=1, aux_epsilons=[0.5], aux_sizes=[1])  # one dataset, eps_1 = 0.5
    res = audit(report_sampler(LDPMABAux, *u0, 7, **kw), report_sampler(LDPMABAux, *u1, 8, **kw),
                n=200_000, statistic="laplace")
    assert res.epsilon_lower <= 0.5


# ----------------------------------------------------------------------------- block path


class QuietServer(LDPMAB):
    """Mutant of the block path: half the noise in the server's sums."""

    def _init_state(self, n):
        super()._init_state(n)
        self.mechanisms = [(LaplaceMechanism(e / 2.0, 0.0, 1.0, **self.noise_source()),
                            LaplaceMechanism(e / 2.0, 0.0, 1.0, **self.noise_source()))
                           for e in self.source_epsilons]


def trajectories(cls, fast, seed, n=600, horizon=500):
    """Regret, nodes and active (bin, arm) slots at the horizon of n runs, played by the block
    path (``play_block``) or user by user (``act``, ``local_report`` and ``update``)."""
    venv = ldp_gym.make_vector_env(ENV, n, horizon)
    venv.reset(seed=seed)
    obs, rewards, regrets = venv.draw_block(horizon)
    agent = cls.from_env(venv, seed=seed + 1, epsilon=8.0, C=0.6)
    rows = np.arange(n)
    if fast:
        acts = agent.play_block(obs, rewards)
    else:
        acts = np.empty((n, horizon), np.int64)
        for s in range(horizon):
            a = acts[:, s] = agent.act(obs[:, s])
            agent.observe(obs[:, s], a, rewards[rows, s, a], obs[:, s + 1])
    regret = np.take_along_axis(regrets, acts[..., None], 2)[..., 0].sum(axis=1)
    slots = [agent.arms[i, agent.bins[i, :agent.n_active[i]]].sum() for i in range(n)]
    return regret, agent.n_nodes.copy(), np.array(slots)


def test_block_path_has_the_law_of_per_user_play():
    """The compiled block path against per-user play on independent runs: regret, partition
    size and active slots at the horizon, two-sample Kolmogorov-Smirnov tests at 1e-3/3 each
    (Bonferroni: false-alarm rate at most 1e-3; the statistics are discrete, where KS is
    conservative). Its mutant (half the noise in the server's sums) is flagged."""
    ref = trajectories(LDPMAB, False, 10)
    fast = trajectories(LDPMAB, True, 20)
    assert min(stats.ks_2samp(a, b).pvalue for a, b in zip(ref, fast)) > 1e-3 / 3
    assert np.mean(ref[1]) > 10  # refinements and eliminations do happen
    bad = trajectories(QuietServer, True, 30)
    assert min(stats.ks_2samp(a, b).pvalue for a, b in zip(ref, bad)) < 1e-3 / 3


def test_block_path_does_not_depend_on_the_block_split():
    venv = ldp_gym.make_vector_env(ENV, 5, 1200)
    venv.reset(seed=2)
    obs, rewards, _ = venv.draw_block(1200)
    one, two = (LDPMAB.from_env(venv, epsilon=4.0, seed=3) for _ in range(2))
    a1 = one.play_block(obs, rewards)
    a2 = np.concatenate([two.play_block(obs[:, :301], rewards[:, :300]),
                         two.play_block(obs[:, 300:], rewards[:, 300:])], axis=1)
    assert np.array_equal(a1, a2) and np.array_equal(one.indicator_sums, two.indicator_sums)
    assert np.array_equal(one.t, two.t) and one.t[0] == 1200


def test_block_with_rewards_outside_the_bounds_is_played_user_by_user():
    venv = ldp_gym.make_vector_env(ENV, 2, 100)
    venv.reset(seed=0)
    obs, rewards, _ = venv.draw_block(20)
    agent = LDPMAB.from_env(venv, epsilon=1.0, seed=0, upper=0.5)
    acts = agent.play_block(obs, rewards)
    assert acts.shape == (2, 20) and agent.t.tolist() == [20, 20]
    assert agent.last_report is not None  # the per-user path ran


# ----------------------------------------------------------------------------- auxiliary data


def aux_env(n_runs, horizon=500, specs=({"n": 600, "epsilon": 4.0, "gamma": 1.0},)):
    venv = ldp_gym.make_vector_env(ENV, n_runs, horizon, auxiliary=list(specs))
    venv.reset(seed=4)
    return venv


def test_auxiliary_data_received_as_data_and_fed_once():
    venv = aux_env(3)
    agent = LDPMABAux.from_env(venv, epsilon=1.0, seed=0)
    assert agent.aux_epsilons == (4.0,) and agent.aux_sizes == (600,)
    obs = venv.reset(seed=4)[0]
    with pytest.raises(RuntimeError, match="receive_auxiliary"):  # nothing to feed yet
        agent.act(obs)
    agent.reset(seed=0)
    data = venv.auxiliary_datasets()
    agent.receive_auxiliary(data)
    assert agent.bin_users.sum() == 0  # fed at the first round, not before
    agent.act(obs)
    fed = agent.bin_users[:, :, 1].copy()
    assert (fed[:, 0] > 0).all() and agent.t.tolist() == [0, 0, 0]
    assert agent._received is None  # not kept
    agent.act(obs)
    assert np.array_equal(agent.bin_users[:, :, 1], fed)  # one pass
    with pytest.raises(ValueError, match=r"fed its datasets already; at a new episode call "
                                         r"agent.reset\(\)"):
        agent.receive_auxiliary(data)
    # the same datasets given explicitly: bitwise the same jump-start
    explicit = LDPMABAux.from_env(venv, epsilon=1.0, seed=0, auxiliary=data,
                                  aux_epsilons=[4.0])
    explicit.act(obs)
    assert np.array_equal(explicit.indicator_sums, agent.indicator_sums)
    assert np.array_equal(explicit.arms, agent.arms)
    # reset: received again for the new episode
    agent.reset(seed=0)
    assert agent.bin_users.sum() == 0
    agent.receive_auxiliary(data)
    agent.act(obs)
    assert np.array_equal(agent.bin_users[:, :, 1], fed)
    with pytest.raises(ValueError, match="sizes"):
        LDPMABAux.from_env(venv, epsilon=1.0).receive_auxiliary(
            [[(x[:5], a[:5], y[:5]) for x, a, y in run] for run in data])


def test_the_runner_gives_the_datasets_of_each_episode():
    """ldp_gym.run hands every chunk's datasets to the agent after the env's reset: the same
    regret as feeding them explicitly."""
    kw = dict(horizon=300, n_runs=2, seed=3, progress=False,
              env_kwargs={"auxiliary": [{"n": 400, "epsilon": 4.0, "gamma": 1.0}]})
    res = ldp_gym.run(ENV, {"A": (LDPMABAux, {"epsilon": 1.0})}, **kw)
    assert res.regret["A"][:, -1].min() > 0


def test_auxiliary_feeding_has_the_law_of_per_user_feeding():
    """Partition size and active slots after the jump-start, compiled against user by user
    (``local_report(..., source=1)`` and ``update``), two-sample KS tests at 1e-3/2 each
    (false-alarm rate at most 1e-3)."""
    def after_feeding(per_user, seed, n=500):
        rng = np.random.default_rng(seed)
        size = 300
        x = rng.random((n, size, 2))
        a = rng.integers(0, K, (n, size))
        y = (rng.random((n, size)) < np.where(a == 0, x[..., 0], 0.3)).astype(float)
        agent = LDPMABAux(K, epsilon=1.0, horizon=500, num_envs=n, seed=seed + 1, C=0.6,
                          auxiliary=[[(x[i], a[i], y[i])] for i in range(n)], aux_epsilons=[8.0])
        agent._fed = True
        agent.feed(1, x, a, y, per_user=per_user)
        slots = [agent.arms[i, agent.bins[i, :agent.n_active[i]]].sum() for i in range(n)]
        return agent.n_nodes.copy(), np.array(slots)
    ref, fast = after_feeding(True, 1), after_feeding(False, 2)
    assert np.mean(ref[0]) > 3
    assert min(stats.ks_2samp(u, v).pvalue for u, v in zip(ref, fast)) > 1e-3 / 2


@pytest.mark.parametrize("mutate,match", [
    (lambda d: [[(d[0][0][0][:, :1], d[0][0][1], d[0][0][2])]] + d[1:], r"auxiliary\[0\]\[0\]"),
    (lambda d: [[(d[0][0][0], d[0][0][1][:-1], d[0][0][2])]] + d[1:], r"auxiliary\[0\]\[0\]"),
    (lambda d: d[:1], r"auxiliary must be a per-run list of 2"),
    (lambda d: [d[0], []], r"auxiliary\[1\] must be a list of 1"),
    (lambda d: [d[0], [(d[1][0][0][:5], d[1][0][1][:5], d[1][0][2][:5])]],
     r"auxiliary\[1\]: every run needs datasets of the same sizes"),
    (lambda d: [[(d[0][0][0] + 1.0, d[0][0][1], d[0][0][2])], d[1]], r"auxiliary\[0\]\[0\]: X"),
    (lambda d: [[(d[0][0][0], d[0][0][1] + K, d[0][0][2])], d[1]], r"auxiliary\[0\]\[0\]: A"),
])
def test_auxiliary_datasets_whose_shapes_do_not_match_are_refused(mutate, match):
    rng = np.random.default_rng(0)
    data = [[(rng.random((20, 2)), rng.integers(0, K, 20), rng.random(20))] for _ in range(2)]
    with pytest.raises(ValueError, match=match):
        LDPMABAux(K, epsilon=1.0, horizon=100, num_envs=2, auxiliary=mutate(data),
                  aux_epsilons=[1.0])


def test_auxiliary_parameters_are_validated():
    data = [[(np.zeros((3, 2)), np.zeros(3, int), np.zeros(3))]]
    with pytest.raises(ValueError, match="aux_epsilons"):
        LDPMABAux(K, epsilon=1.0, horizon=100, auxiliary=data)
    with pytest.raises(ValueError, match="aux_epsilons"):
        LDPMABAux(K, epsilon=1.0, horizon=100, auxiliary=data, aux_epsilons=[0.0])
    with pytest.raises(ValueError, match="aux_sizes"):
        LDPMABAux(K, epsilon=1.0, horizon=100, aux_epsilons=[1.0], aux_sizes=[3, 4])
    with pytest.raises(ValueError, match="not both"):
        LDPMABAux(K, epsilon=1.0, horizon=100, auxiliary=data, aux_epsilons=[1.0],
                  aux_sizes=[3])
    with pytest.raises(ValueError, match="source"):
        LDPMABAux(K, epsilon=1.0, horizon=100, auxiliary=data, aux_epsilons=[1.0]).feed(
            2, np.zeros((1, 3, 2)), np.zeros((1, 3), int), np.zeros((1, 3)))


def test_depth_cap_and_warmup_over_the_sources():
    agent = LDPMABAux.from_env(aux_env(1, horizon=1000,
                                       specs=({"n": 50_000, "epsilon": 8.0},
                                              {"n": 500, "epsilon": 0.5})), epsilon=1.0)
    d, m = 2, 2
    caps = [min(math.log2(2 * n * (m + 1)) * d / (2 + d),
                math.log2(2 * n * e ** 2 * (m + 1)) * d / (2 + 2 * d))
            for n, e in ((1000, 1.0), (50_000, 8.0), (500, 0.5))]
    assert agent.max_depth == math.floor(max(caps))
    assert agent.warmup == math.floor(math.log2(50_000)) ** 2  # n: the largest sample size
    assert agent.source_epsilons.tolist() == [1.0, 8.0, 0.5]


# ----------------------------------------------------------------------------- ABSE and uniform


def abse_rounds(agent, rounds, x):
    """``rounds`` rounds of successive elimination in x's bin: arms 0 and 1 pay 1, arm 2 pays
    0; the arms pulled in each round."""
    pulled = []
    for _ in range(rounds):
        this = []
        for _ in range(int(agent.arms[0, agent.n_nodes[0] - 1].sum())):
            a = agent.act(x)
            this.append(int(a[0]))
            agent.observe(x, a, np.array([0.0 if a[0] == 2 else 1.0]), x)
        pulled.append(this)
    return pulled


def test_abse_round_robin_and_elimination():
    """One bin (no split): arms pulled in turn; arm 2 (gap 1) eliminated at the end of the
    first round tau with U(tau, T) = 2 sqrt(2 max(1, log(T/tau))/tau) < 1."""
    horizon = 10_000
    agent = ABSE(K, horizon=horizon, max_depth=0, num_envs=1, seed=0)
    x = np.array([[0.3, 0.3]])
    first = next(t for t in range(1, 1000)
                 if 2 * math.sqrt(2 * max(1.0, math.log(horizon / t)) / t) < 1.0)
    pulled = abse_rounds(agent, first - 1, x)
    assert pulled == [[0, 1, 2]] * (first - 1) and agent.arms[0, 0].all()
    abse_rounds(agent, 1, x)
    assert agent.arms[0, 0].tolist() == [True, True, False] and agent.rounds[0, 0] == first
    assert abse_rounds(agent, 2, x) == [[0, 1]] * 2 and agent.n_nodes[0] == 1


def test_abse_split_into_hypercubes():
    """After l = ceil(c max(1, log T)) rounds with two or more arms, the unit cube splits into
    its 2^d half-side cubes, which inherit the arms; their children after
    ceil(c 4 max(1, log(T / 16))) rounds."""
    horizon, c = 10_000, 0.5
    agent = ABSE(K, horizon=horizon, split_constant=c, num_envs=1, seed=0)
    x = np.array([[0.3, 0.7]])
    length = math.ceil(c * max(1.0, math.log(horizon)))
    abse_rounds(agent, length - 1, x)
    assert agent.n_nodes[0] == 1
    abse_rounds(agent, 1, x)
    assert agent.n_nodes[0] == 5 and not agent.active[0, 0] and agent.child[0, 0] == 1
    assert agent.side[0, 1:5].tolist() == [0.5] * 4
    assert agent.lo[0, 1:5].tolist() == [[0.0, 0.0], [0.5, 0.0], [0.0, 0.5], [0.5, 0.5]]
    assert (agent.arms[0, 1:5] == agent.arms[0, 0]).all() and (agent.pulls[0, 1:5] == 0).all()
    length = math.ceil(c * 4 * max(1.0, math.log(horizon * 0.5 ** 4)))
    abse_rounds(agent, length, x)
    assert agent.n_nodes[0] == 9 and agent.child[0, 3] == 5  # x lies in the third child


def test_abse_and_uniform_block_path_are_their_per_round_path():
    venv = ldp_gym.make_vector_env(ENV, 3, 3000)
    venv.reset(seed=5)
    obs, rewards, _ = venv.draw_block(3000)
    rows = np.arange(3)
    for cls in (ABSE, UniformRandom):
        fast, ref = (cls.from_env(venv, seed=7) for _ in range(2))
        acts = fast.play_block(obs, rewards)
        for s in range(3000):
            a = ref.act(obs[:, s])
            ref.observe(obs[:, s], a, rewards[rows, s, a], obs[:, s + 1])
            assert np.array_equal(a, acts[:, s]), (cls.name, s)
    assert fast.t.tolist() == ref.t.tolist() == [3000] * 3
    abse = ABSE.from_env(venv, seed=7)
    abse.play_block(obs, rewards)
    assert abse.n_nodes.min() > 1 and (abse.depth[abse.active] <= abse.max_depth).all()


def test_uniform_policy_frequencies():
    """Chi-square test of the K frequencies (false-alarm rate 1e-6)."""
    agent = UniformRandom(4, num_envs=50_000, seed=2)
    counts = np.bincount(agent.act(np.zeros((50_000, 1))), minlength=4)
    assert stats.chisquare(counts).pvalue > 1e-6


# ----------------------------------------------------------------------------- regret


def test_regret_below_the_uniform_policy_at_eps_8():
    """n = 2e4, eps = 8, 10 runs on the same instances: LDPMAB's mean regret at most 0.75 of
    the uniform policy's (measured: about 0.55), ABSE's at most 0.5."""
    n = 20_000
    res = ldp_gym.run(ENV, {"Uniform": UniformRandom, "LDPMAB": (LDPMAB, {"epsilon": 8.0}),
                            "ABSE": ABSE}, horizon=n, n_runs=10, seed=0, progress=False)
    uniform = res.at("Uniform", n).mean()
    assert res.at("LDPMAB", n).mean() < 0.75 * uniform
    assert res.at("ABSE", n).mean() < 0.5 * uniform


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("cls", [LDPMAB, LDPMABAux, ABSE])
def test_contexts_outside_the_cube_are_refused(cls):
    venv = ldp_gym.make_vector_env(ENV, 2, 100)
    agent = cls.from_env(venv, seed=0, **cls.test_params)
    obs = venv.reset(seed=0)[0].astype(np.float64)
    bad = obs.copy()
    bad[1, 0] = 1.5
    with pytest.raises(ValueError, match=r"obs must lie in \[0, 1\]\^d"):
        agent.act(bad)
    with pytest.raises(ValueError, match="obs"):
        agent.observe(bad, np.zeros(2, int), np.ones(2), obs)
    with pytest.raises(ValueError, match="obs"):
        agent.play_block(np.stack([bad, obs], axis=1), np.ones((2, 1, K)))
    if isinstance(agent, LDPMAB):
        with pytest.raises(ValueError, match="obs"):
            agent.local_report(-obs, np.zeros(2, int), np.ones(2), obs, agent.public_state())
    with pytest.raises(ValueError, match="obs must have shape"):
        agent.act(np.zeros((2, 3)))


@pytest.mark.parametrize("kwargs,param", [
    ({"epsilon": 0.0}, "epsilon"), ({"epsilon": -1.0}, "epsilon"), ({"C": 0.0}, "C"),
    ({"C": -2.0}, "C"), ({"C": float("nan")}, "C"), ({"dim": 0}, "dim"),
    ({"max_depth": -1}, "max_depth"), ({"warmup": 0}, "warmup"), ({"upper": -1.0}, "upper")])
def test_ldpmab_parameters_are_validated(kwargs, param):
    base = {"epsilon": 1.0, "horizon": 100}
    for cls in (LDPMAB, LDPMABAux):
        with pytest.raises((ValueError, TypeError), match=param):
            cls(K, **{**base, **kwargs})


def test_other_settings_are_refused_in_one_line():
    for cls in (LDPMAB, LDPMABAux, ABSE):
        with pytest.raises(ValueError, match=r"contexts in \[0, 1\]\^d") as info:
            cls.from_env(gym.make("LDPLinearBandit-v0"), epsilon=1.0)
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="split_constant"):
        ABSE(K, horizon=100, split_constant=0.0)
    with pytest.raises(ValueError, match="report"):
        agent = three_bins()
        agent.update({"bins": np.array([[0]]), "U": np.zeros((1, 1, K)),
                      "V": np.zeros((1, 1, K)), "source": np.zeros(1, int)})


def test_departures_cannot_be_relabelled_private():
    """The ablation's departures are fixed at construction: the label cannot be switched back
    to a privacy claim while the kernel still runs them, and secure runs refuse such agents."""
    agent = LDPMAB(2, epsilon=1.0, horizon=100, num_envs=1, seed=0, departures=("noise_in_bin",))
    with pytest.raises(AttributeError):
        agent.departures = ()
    assert agent.privacy is None and "NOT PRIVATE" in repr(agent)
    with pytest.raises(ValueError, match="secure"):
        ldp_gym.run("LDPNonparametricBandit-v0", {"a": agent}, horizon=10, n_runs=1,
                    secure=True, progress=False)
