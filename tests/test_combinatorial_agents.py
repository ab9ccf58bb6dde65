"""Combinatorial semi-bandit agents (CUCB, CUCB-LDP1/2, CUCB-DP) and the Laplace semi-bandit
release: index formulas, oracle calls, LDP2's single update, the K = 1 law of LDP-UCB, feedback
validation, regret against a uniform feasible baseline, audits with a mutant each.

Until ``ldp_gym.oracles`` and ``LDPCombinatorialBandit-v0`` exist, the unit tests use a local
top-K family (``TopK``) and stand-in envs; the tests on the registered env skip without it.
"""

import math

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

import ldp_gym
from ldp_gym.agents import AGENTS, CUCB, CUCBDP, CUCBLDP1, CUCBLDP2, LDPUCB
from ldp_gym.agents.combinatorial import oracle_weights
from ldp_gym.protocols import BlockPlay
from ldp_gym.wrappers.mechanisms import LaplaceMechanism
from ldp_gym.wrappers.mechanisms.audit import audit
from ldp_gym.wrappers.semibandit import LaplaceSemiBandit, VectorLaplaceSemiBandit

gym.register_envs(ldp_gym)
ENV_ID = "LDPCombinatorialBandit-v0"
HAS_ENV = ENV_ID in gym.registry
needs_env = pytest.mark.skipif(not HAS_ENV, reason=f"{ENV_ID} not registered yet")
PRIVATE = [CUCBLDP1, CUCBLDP2, CUCBDP]


class TopK:
    """Stand-in family: super arms of exactly K base arms, linear reward, exact oracle
    (the K largest weights; among equal weights the smallest indices)."""

    alpha = beta = 1.0

    def __init__(self, m, K):
        self.m, self.K = m, K
        self.calls = []

    def oracle(self, weights):
        self.calls.append(np.array(weights))
        order = np.argsort(-np.asarray(weights), axis=1, kind="stable")[:, :self.K]
        s = np.zeros(np.shape(weights), bool)
        np.put_along_axis(s, order, True, axis=1)
        return s

    def feasible(self, s):
        return np.asarray(s).sum(-1) == self.K

    def expected_reward(self, s, mu):
        return (np.asarray(s) * mu).sum(-1)

    def optimum(self, mu):
        return np.sort(mu)[::-1][:self.K].sum()


def make(cls, m=6, K=2, n=None, T=1000, seed=0, **kw):
    if cls is not CUCB:
        kw.setdefault("epsilon", 1.0)
    return cls(m, family=TopK(m, K), horizon=T, num_envs=n, seed=seed, **kw)


def feedback(actions, outcomes):
    """The env's observation (N, 2m) for super arms (N, m) and outcomes (N, m)."""
    s = np.asarray(actions, np.float64)
    return np.concatenate([s * outcomes, s], axis=1)


def simulate(agent, means, T, seed):
    """Play T rounds of Bernoulli(means) outcomes; the expected reward of each round (T, N)."""
    rng = np.random.default_rng(seed)
    n, m = agent._n, len(means)
    obs = np.zeros((n, 2 * m))
    got = np.empty((T, n))
    for t in range(T):
        a = agent.act(obs)
        x = (rng.random((n, m)) < means).astype(np.float64)
        nxt = feedback(a, x)
        agent.observe(obs, a, (a * x).sum(1), nxt)
        got[t] = a @ means
        obs = nxt
    return got


# ----------------------------------------------------------------------------- indices


def test_width_constants_are_the_papers():
    T, eps, K, m = 1000, 0.5, 3, 7
    assert make(CUCBLDP1, m, K, T=T, epsilon=eps).width == pytest.approx(
        4 * math.sqrt(2 * K ** 2 * math.log(T) / eps ** 2), rel=1e-15)
    assert make(CUCBLDP2, m, K, T=T, epsilon=eps).width == pytest.approx(
        4 * math.sqrt(2 * math.log(T) / eps ** 2), rel=1e-15)
    dp = make(CUCBDP, m, K, T=T, epsilon=eps)
    assert dp._c1 == pytest.approx(4 * math.log(m * T))
    assert dp._c2 == pytest.approx(12 * K * math.log(T) ** 3 / eps) and CUCBDP.c == 12
    # Lap(2K log T/eps) per node: the tree runs at eps/(2K) with levels >= log2 T nodes per path
    assert dp.tree.levels >= math.log2(T)
    assert dp.tree.scale >= 2 * K * math.log2(T) / eps


@pytest.mark.parametrize("cls", [CUCB, CUCBLDP1, CUCBLDP2, CUCBDP])
def test_index_formula_and_unpulled_arms(cls):
    T, eps, K, m = 500, 40.0, 2, 6
    agent = make(cls, m, K, n=3, T=T, **({} if cls is CUCB else {"epsilon": eps}))
    simulate(agent, np.linspace(0.1, 0.9, m), 60, seed=1)
    n = np.maximum(agent.counts, 1)
    if cls is CUCB:
        t = agent.t[:, None]
        raw = agent.sums / n + np.sqrt(3 * np.log(t) / (2 * n))
    elif cls is CUCBDP:
        raw = agent.tree.noisy_sums / n + np.sqrt(4 * math.log(m * T) / n) \
            + 12 * K * math.log(T) ** 3 / (n * eps)
    else:
        k2 = K ** 2 if cls is CUCBLDP1 else 1
        raw = agent.noisy_sums / n + 4 * np.sqrt(2 * k2 * math.log(T) / (eps ** 2 * n))
    expected = np.where(agent.counts > 0, np.minimum(raw, 1.0), 1.0)
    np.testing.assert_allclose(agent.index(), expected, rtol=1e-12)
    if cls is not CUCBDP:
        assert (expected < 1).any()  # the uncapped branch is exercised
    fresh = make(cls, m, K, n=2)
    assert (fresh.index() == 1.0).all()  # infinite width: min(inf, 1)


def test_oracle_weights_break_ties_at_random_unpulled_first():
    rng = np.random.default_rng(0)
    index = np.array([[0.3, 1.0, 0.7, 1.0, 1.0, 0.2]] * 4000)
    pulled = np.array([[True, True, True, True, False, False]] * 4000)
    w = oracle_weights(rng, index, pulled)
    assert (w <= 1.0).all()
    np.testing.assert_array_equal(w[:, [0, 2]], index[:, [0, 2]])  # uncapped: kept exactly
    assert (w[:, [1, 3]].min(1) > 0.7).all()                        # capped above uncapped
    assert (w[:, [4, 5]].min(1) > w[:, [1, 3]].max(1)).all()        # unpulled above capped
    first = (w[:, 4] > w[:, 5]).mean()                              # uniform within a group
    assert abs(first - 0.5) < 0.05 and abs((w[:, 1] > w[:, 3]).mean() - 0.5) < 0.05


def test_oracle_called_once_per_act_on_weights_and_its_set_played():
    agent = make(CUCBLDP1, 6, 2, n=4)
    obs = np.zeros((4, 12))
    for t in range(5):
        a = agent.act(obs)
        calls = agent.family.calls
        assert len(calls) == t + 1 and calls[-1].shape == (4, 6)
        np.testing.assert_array_equal(a, agent.family.oracle(calls[-1]).astype(np.int8))
        agent.family.calls.pop()
        assert a.dtype == np.int8 and (a.sum(1) == 2).all()
        agent.observe(obs, a, np.zeros(4), feedback(a, np.full((4, 6), 0.5)))
    # unpulled arms first: 6 arms, K = 2, three rounds pull every arm once
    assert (make_after(CUCBLDP1, 3).counts == 1).all()


def make_after(cls, rounds):
    agent = make(cls, 6, 2, n=5)
    simulate(agent, np.full(6, 0.5), rounds, seed=2)
    return agent


# ----------------------------------------------------------------------------- LDP2 update


def test_ldp2_updates_only_the_least_pulled_arm_of_s():
    agent = make(CUCBLDP2, 5, 3, n=2, seed=3)
    agent.counts[:] = [[4, 2, 7, 2, 0], [1, 1, 1, 1, 1]]
    before = agent.counts.copy()
    s = np.array([[1, 1, 1, 1, 0], [0, 1, 1, 1, 0]], np.int8)
    obs = np.zeros((2, 10))
    agent.observe(obs, s, np.zeros(2), feedback(s, np.full((2, 5), 0.5)))
    assert agent.last_report["arm"].tolist() == [1, 1]  # argmin over S, ties: smallest index
    diff = agent.counts - before
    assert diff.tolist() == [[0, 1, 0, 0, 0], [0, 1, 0, 0, 0]]
    assert (agent.noisy_sums[:, [0, 2, 3, 4]] == 0).all()
    assert agent.last_report["value"].shape == (2,)


def test_ldp1_reports_every_arm_of_s_and_nothing_else():
    agent = make(CUCBLDP1, 5, 3, n=2, seed=4)
    s = np.array([[1, 0, 1, 1, 0], [0, 1, 0, 0, 1]], np.int8)
    agent.observe(np.zeros((2, 10)), s, np.zeros(2), feedback(s, np.full((2, 5), 0.5)))
    rep = agent.last_report
    np.testing.assert_array_equal(rep["mask"], s.astype(bool))
    assert (rep["values"][~s.astype(bool)] == 0).all()
    np.testing.assert_array_equal(agent.counts, s)
    np.testing.assert_array_equal(agent.noisy_sums, rep["values"])
    assert agent.mechanism.epsilon == pytest.approx(1.0 / 3) and agent.privacy.epsilon == 1.0


# ----------------------------------------------------------------------------- K = 1 law


@pytest.mark.parametrize("cls", [CUCBLDP1, CUCBLDP2])
def test_k1_has_the_law_of_ldp_ucb(cls):
    """K = 1 (top-1, m arms): the same index (4 sqrt(2 ln T/(eps^2 n))), the same noise
    (Lap(1/eps) on [0, 1]), argmax with ties at random and unpulled arms first. Deterministic
    part: after m rounds every arm was pulled once by both. Law: two-sample KS tests on the
    pulls of every arm after T rounds, Bonferroni over m arms at a total false-alarm rate 1e-3."""
    m, T, n, eps = 4, 150, 3000, 2.0
    means = np.array([0.2, 0.4, 0.5, 0.8])
    cucb = cls(m, family=TopK(m, 1), epsilon=eps, horizon=T, num_envs=n, seed=10)
    ldp = LDPUCB(m, epsilon=eps, horizon=T, num_envs=n, seed=11)
    rng = np.random.default_rng(12)
    zero1, zero2 = np.zeros((n, 1)), np.zeros((n, 2 * m))
    for t in range(T):
        x = (rng.random((n, m)) < means).astype(np.float64)
        a = cucb.act(zero2)
        cucb.observe(zero2, a, (a * x).sum(1), feedback(a, x))
        b = ldp.act(zero1)
        ldp.observe(zero1, b, x[np.arange(n), b], zero1)
        if t == m - 1:
            assert (cucb.counts == 1).all() and (ldp.counts == 1).all()
    assert cucb.width == pytest.approx(ldp.width)
    for i in range(m):
        p = stats.ks_2samp(cucb.counts[:, i], ldp.counts[:, i]).pvalue
        assert p > 1e-3 / m, (i, p)


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize("cls", [CUCB, CUCBLDP1, CUCBLDP2, CUCBDP])
def test_feedback_that_contradicts_the_action_is_refused(cls):
    agent = make(cls, 5, 2, n=2)
    obs = np.zeros((2, 10))
    a = agent.act(obs)
    good = feedback(a, np.full((2, 5), 0.5))
    wrong_mask = good.copy()
    wrong_mask[:, 5:] = 1 - wrong_mask[:, 5:]
    high = feedback(a, np.full((2, 5), 1.5))
    low = feedback(a, np.full((2, 5), -0.1))
    before = {k: v.copy() for k, v in vars(agent).items() if isinstance(v, np.ndarray)}
    for nxt, what in ((wrong_mask, "contradicts the action"), (high, r"\[0, 1\]"),
                      (low, r"\[0, 1\]"), (good[:, :-1], "length")):
        with pytest.raises(ValueError, match=what) as info:
            agent.observe(obs[:, :nxt.shape[1]], a, np.zeros(2), nxt)
        assert "next_obs" in str(info.value) and "\n" not in str(info.value)
    nan = good.copy()
    nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="next_obs"):
        agent.observe(obs, a, np.zeros(2), nan)
    after = {k: v for k, v in vars(agent).items() if isinstance(v, np.ndarray)}
    assert all(np.array_equal(before[k], after[k]) for k in before)
    agent.observe(obs, a, np.zeros(2), good)  # still fine
    assert agent.t.tolist() == [1, 1]


def test_bad_family_and_unpulled_outcomes_elsewhere():
    with pytest.raises(ValueError, match="family"):
        CUCBLDP1(5, epsilon=1.0, horizon=10)
    with pytest.raises(ValueError, match="family"):
        CUCBLDP1(5, family=TopK(4, 2), epsilon=1.0, horizon=10)
    with pytest.raises(ValueError, match="family"):
        CUCB(3, family=TopK(3, 4))
    with pytest.raises(ValueError, match="epsilon"):
        CUCBLDP2(5, family=TopK(5, 2), epsilon=0.0, horizon=10)


# ----------------------------------------------------------------------------- contract
# The generic suite (tests/test_agents.py) drives agents with feedback drawn independently of
# the action, which a semi-bandit agent refuses (the mask must be S): the same checks here with
# feedback of the super arm played.

ALL = [CUCB, CUCBLDP1, CUCBLDP2, CUCBDP]


def drive(agent, steps, seed, single=False, scribble=False):
    """Actions of ``steps`` rounds of consistent feedback (outcomes from ``seed``)."""
    rng = np.random.default_rng(seed)
    n, m = agent._n, agent.n_arms
    obs = np.zeros((n, 2 * m))
    out = []
    for _ in range(steps):
        a = agent.act(obs[0] if single else obs)
        a2 = np.asarray(a)[None] if single else a
        x = rng.random((n, m))
        nxt = feedback(a2, x)
        r = (a2 * x).sum(1)
        sent = a2.copy()
        if single:
            agent.observe(obs[0], sent[0], float(r[0]), nxt[0])
        else:
            agent.observe(obs, sent, r, nxt)
        out.append(a2.copy())
        if scribble:
            for arr in (a2, sent, r, nxt, obs):
                arr[...] = 0
            for v in (agent.last_report or {}).values() if hasattr(agent, "local_report") else ():
                v[...] = 0
            if hasattr(agent, "local_report"):
                assert all(not v.flags.writeable for v in agent.public_state().values())
        obs = nxt
    return np.array(out)


def arrays(agent):
    return {k: v for k, v in vars(agent).items() if isinstance(v, np.ndarray)}


@pytest.mark.parametrize("cls", ALL)
def test_batch_of_one_is_the_single_agent(cls):
    one, batched = make(cls, seed=9), make(cls, n=1, seed=9)
    a, b = drive(one, 30, seed=1, single=True), drive(batched, 30, seed=1)
    assert np.array_equal(a, b)
    x, y = arrays(one), arrays(batched)
    assert x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)
    assert type(one.act(np.zeros(12))) is np.ndarray


@pytest.mark.parametrize("cls", ALL)
def test_pickle_deepcopy_and_no_aliasing(cls):
    import copy
    import pickle
    agent = make(cls, n=3, seed=4)
    drive(agent, 20, seed=2)
    clones = [pickle.loads(pickle.dumps(agent)), copy.deepcopy(agent)]
    ref = drive(agent, 20, seed=3)
    for clone in clones:
        assert np.array_equal(drive(clone, 20, seed=3), ref)
    a, b = make(cls, n=3, seed=5), make(cls, n=3, seed=5)
    assert np.array_equal(drive(a, 20, seed=6, scribble=True), drive(b, 20, seed=6))
    x, y = arrays(a), arrays(b)
    assert all(np.array_equal(x[k], y[k]) for k in x)


@pytest.mark.parametrize("cls", ALL)
def test_observe_refuses_bad_actions(cls):
    agent = make(cls, 4, 2, n=2)
    obs = np.zeros((2, 8))
    good = np.array([[1, 1, 0, 0], [0, 1, 1, 0]], np.int8)
    for bad, error in ((good * 2, ValueError), (good - 1, ValueError), (good * 1.5, ValueError),
                       (good.astype(bool), TypeError), (good[:, :3], ValueError),
                       (good[:1], ValueError)):
        with pytest.raises(error, match="action") as info:
            agent.observe(obs, bad, np.zeros(2), feedback(good, np.full((2, 4), 0.5)))
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="reward"):
        agent.observe(obs, good, np.array([np.nan, 0.0]), feedback(good, np.full((2, 4), 0.5)))
    with pytest.raises(ValueError, match="obs"):
        agent.act(np.full((2, 8), np.nan))
    assert (agent.t == 0).all()


# ----------------------------------------------------------------------------- regret


@pytest.mark.parametrize("cls,kw", [(CUCB, {}), (CUCBLDP1, {"epsilon": 8.0}),
                                    (CUCBLDP2, {"epsilon": 4.0}), (CUCBDP, {"epsilon": 500.0})])
def test_regret_sublinear_and_far_below_uniform(cls, kw):
    """Top-2 of 6 Bernoulli arms, 6 runs, T = 2000: the regret over T rounds is below half a
    uniformly random feasible super arm's, and the second half adds less than the first
    (measured: at most a quarter)."""
    m, K, T, n = 6, 2, 2000, 6
    means = np.array([0.1, 0.2, 0.3, 0.4, 0.7, 0.9])
    agent = cls(m, family=TopK(m, K), horizon=T, num_envs=n, seed=5, **kw)
    opt = TopK(m, K).optimum(means)
    regret = np.cumsum(opt - simulate(agent, means, T, seed=6), axis=0).mean(axis=1)
    uniform = T * (opt - K * means.mean())
    assert regret[-1] < uniform / 2, (regret[-1], uniform)  # measured: 0.06 to 0.23
    assert regret[-1] - regret[T // 2 - 1] < regret[T // 2 - 1], regret[[T // 2 - 1, -1]]


# ----------------------------------------------------------------------------- wrapper


class StandInEnv(gym.Env):
    """A semi-bandit env stand-in: top-K family, Bernoulli outcomes (or fixed ones)."""

    def __init__(self, m=5, K=2, outcomes=None):
        self.action_space = gym.spaces.MultiBinary(m)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2 * m,), np.float32)
        self.setting = {"family": TopK(m, K)}  # the public description agents read
        self.m, self.outcomes = m, outcomes

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2 * self.m, np.float32), {"regret": 0.0}

    def step(self, action):
        x = self.np_random.random(self.m) if self.outcomes is None else self.outcomes
        a = np.asarray(action, np.float64)
        return feedback(a[None], x[None])[0].astype(np.float32), float(a @ x), False, False, \
            {"regret": 0.5}


def test_wrapper_release():
    env = LaplaceSemiBandit(StandInEnv(5, 2), epsilon=1.0, seed=0)
    obs, info = env.reset(seed=0)
    assert info == {} and (obs == 0).all() and obs.shape == (10,)
    a = np.array([0, 1, 0, 1, 0], np.int8)
    obs, r, _, _, info = env.step(a)
    assert info == {} and env.observation_space.contains(obs)
    assert (obs[[0, 2, 4]] == 0).all() and obs[5:].tolist() == a.tolist()
    assert r == pytest.approx(obs[:5].sum())
    assert env.mechanism.epsilon == 0.5 and env.privacy.epsilon == 1.0
    assert env.privacy.model == "local"
    zero = LaplaceSemiBandit(StandInEnv(5, 2), epsilon=1.0, seed=0, reward="zero",
                             oracle_info=True)
    zero.reset(seed=0)
    _, r, _, _, info = zero.step(a)
    assert r == 0.0 and info == {"regret": 0.5}
    with pytest.raises(ValueError, match="reward"):
        LaplaceSemiBandit(StandInEnv(), epsilon=1.0, reward="env")
    with pytest.raises(ValueError, match="env"):
        LaplaceSemiBandit(gym.make("LDPMAB-v0"), epsilon=1.0)
    # CUCB runs on the release, reading unbounded outcomes off the wrapper's space
    agent = CUCB.from_env(env, horizon=50, seed=0)
    assert agent.outcome_bounds == (-math.inf, math.inf)
    obs, _ = env.reset(seed=1)
    for _ in range(20):
        act = agent.act(obs)
        nxt, r, *_ = env.step(act)
        agent.observe(obs, act, r, nxt)
        obs = nxt
    assert agent.counts.sum() == 40


def test_vector_wrapper_release():
    venv = gym.vector.SyncVectorEnv([lambda: StandInEnv(4, 2)] * 3)
    venv.unwrapped.setting = StandInEnv(4, 2).setting  # the family (a native vector env has one)
    w = VectorLaplaceSemiBandit(venv, epsilon=2.0, seed=0)
    obs, info = w.reset(seed=0)
    assert obs.shape == (3, 8) and (obs == 0).all() and info == {}
    a = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]], np.int8)
    obs, r, *_ = w.step(a)
    np.testing.assert_array_equal(obs[:, 4:], a)
    assert (obs[:, :4][a == 0] == 0).all()
    np.testing.assert_allclose(r, obs[:, :4].sum(1))


# ----------------------------------------------------------------------------- registered env


@needs_env
@pytest.mark.parametrize("cls", list(AGENTS[n] for n in ("CUCB", "CUCB-LDP1", "CUCB-LDP2")))
def test_on_the_registered_env(cls):
    venv = gym.make_vec(ENV_ID, num_envs=4, vectorization_mode="vector_entry_point",
                        max_episode_steps=200)
    agent = cls.from_env(venv, seed=0, **cls.test_params)
    assert agent.family is venv.unwrapped.core.family
    obs, _ = venv.reset(seed=0)
    for _ in range(200):
        a = agent.act(obs)
        nxt, r, *_ = venv.step(a)
        agent.observe(obs, a, r, nxt)
        obs = nxt
    assert (agent.t == 200).all()


@needs_env
@pytest.mark.parametrize("cls,kw", [(CUCB, {}), (CUCBLDP2, {"epsilon": 4.0})])
def test_regret_on_the_registered_env_against_uniform(cls, kw):
    """Top-2 of 8 base arms, 4 runs, T = 2000: the regret is below a third of the one of a
    uniformly random feasible super arm (the action space's ``sample``), and the second half of
    the rounds adds less regret than the first."""
    T = 2000
    venv = gym.make_vec(ENV_ID, num_envs=4, vectorization_mode="vector_entry_point",
                        max_episode_steps=T, n_arms=8, max_size=2)
    core = venv.unwrapped.core
    agent = cls.from_env(venv, seed=0, **kw)
    obs, _ = venv.reset(seed=1)
    mu = np.asarray(core.means, np.float64)
    opt = core.family.optimum(mu)
    regret = np.empty(T)
    for t in range(T):
        a = agent.act(obs)
        nxt, r, *_ = venv.step(a)
        agent.observe(obs, a, r, nxt)
        obs = nxt
        regret[t] = np.mean(opt - core.family.expected_reward(a.astype(bool), mu))
    space = venv.single_action_space
    space.seed(0)
    samples = np.array([space.sample() for _ in range(400)], bool)
    uniform = np.mean([opt[i] - core.family.expected_reward(samples, np.tile(mu[i], (400, 1)))
                       for i in range(len(mu))])
    total = np.cumsum(regret)
    assert total[-1] < T * uniform / 3, (total[-1], T * uniform)
    assert total[-1] - total[T // 2 - 1] < total[T // 2 - 1]


# ----------------------------------------------------------------------------- audits

N_SCALAR = 400_000
N_VECTOR = 200_000


def ldp1_report(cls, value, k, seed, K=3):
    """CUCB-LDP1's message on S = the first K of 5 arms, every outcome of S equal to
    ``value``; output the K released coordinates."""
    agent = cls(5, family=TopK(5, K), epsilon=1.0, horizon=1000, num_envs=k, seed=seed)
    s = np.zeros((k, 5), np.int8)
    s[:, :K] = 1
    nxt = np.concatenate([s * value, s], axis=1).astype(np.float64)
    return agent.local_report(nxt, s, np.zeros(k), nxt, agent.public_state())["values"][:, :K]


def ldp2_report(cls, value, k, seed):
    agent = cls(5, family=TopK(5, 3), epsilon=1.0, horizon=1000, num_envs=k, seed=seed)
    s = np.zeros((k, 5), np.int8)
    s[:, 1:4] = 1
    nxt = np.concatenate([s * value, s], axis=1).astype(np.float64)
    rep = agent.local_report(nxt, s, np.zeros(k), nxt, agent.public_state())
    assert (rep["arm"] == 1).all()
    return rep["value"]


class LDP1PerCoordinateEps(CUCBLDP1):
    """Mutant: Lap(1/eps) per coordinate (the budget not split over the K coordinates)."""

    def _init_state(self, n):
        super()._init_state(n)
        self.mechanism = LaplaceMechanism(self.epsilon, 0.0, 1.0, seed=self.spawn())


class UnclippedLaplace(LaplaceMechanism):
    """Mutant mechanism: no clipping to [lower, upper]."""

    def __call__(self, x):
        x = np.asarray(x, np.float64)
        return np.rint(x / self.grid) * self.grid + self.noise(x.size).reshape(x.shape)


class LDP2Unclipped(CUCBLDP2):
    """Mutant: the outcome is not clipped to [0, 1]."""

    def _init_state(self, n):
        super()._init_state(n)
        self.mechanism = UnclippedLaplace(self.epsilon, 0.0, 1.0, seed=self.spawn())


@pytest.mark.audit
@pytest.mark.parametrize("hi", [1.0, 1001.0])
def test_ldp1_report_audit(hi):
    res = audit(lambda k: ldp1_report(CUCBLDP1, 0.0, k, 1), lambda k: ldp1_report(CUCBLDP1, hi, k, 2),
                n=N_VECTOR, statistic="laplace")
    assert 0.5 < res.epsilon_lower <= 1.0


@pytest.mark.audit
def test_ldp1_mutant_flagged():
    res = audit(lambda k: ldp1_report(LDP1PerCoordinateEps, 0.0, k, 3),
                lambda k: ldp1_report(LDP1PerCoordinateEps, 1.0, k, 4),
                n=N_VECTOR, statistic="laplace")
    assert res.epsilon_lower > 1.0


@pytest.mark.audit
@pytest.mark.parametrize("hi", [1.0, 1001.0])
def test_ldp2_report_audit(hi):
    res = audit(lambda k: ldp2_report(CUCBLDP2, 0.0, k, 5), lambda k: ldp2_report(CUCBLDP2, hi, k, 6),
                n=N_SCALAR)
    assert 0.7 < res.epsilon_lower <= 1.0


@pytest.mark.audit
def test_ldp2_mutant_flagged():
    res = audit(lambda k: ldp2_report(LDP2Unclipped, 0.0, k, 7),
                lambda k: ldp2_report(LDP2Unclipped, 2.0, k, 8), n=N_SCALAR)
    assert res.epsilon_lower > 1.0


class PerCoordinateRelease(LaplaceSemiBandit):
    """Mutant wrapper: Lap(1/eps) per coordinate of S."""

    def make_mechanism(self, seed):
        return LaplaceMechanism(self.epsilon, 0.0, 1.0, seed=seed, secure=self.secure)


def wrapper_release(cls, value, k, seed, K=3):
    env = cls(StandInEnv(5, K), epsilon=1.0, seed=seed)
    s = np.zeros((k, 5))
    s[:, 2:] = 1
    out, rewards = env._release_batch(np.concatenate([s * value, s], axis=1))
    assert (out[:, :2] == 0).all()
    return out[:, 2:5]


@pytest.mark.audit
@pytest.mark.parametrize("hi", [1.0, 1001.0])
def test_wrapper_release_audit(hi):
    res = audit(lambda k: wrapper_release(LaplaceSemiBandit, 0.0, k, 9),
                lambda k: wrapper_release(LaplaceSemiBandit, hi, k, 10),
                n=N_VECTOR, statistic="laplace")
    assert 0.5 < res.epsilon_lower <= 1.0


@pytest.mark.audit
def test_wrapper_mutant_flagged():
    res = audit(lambda k: wrapper_release(PerCoordinateRelease, 0.0, k, 11),
                lambda k: wrapper_release(PerCoordinateRelease, 1.0, k, 12),
                n=N_VECTOR, statistic="laplace")
    assert res.epsilon_lower > 1.0


@needs_env
@pytest.mark.filterwarnings("ignore:.*(infinity|different from the unwrapped)")
def test_wrappers_on_the_registered_env():
    """The release on the native vector env: CUCB runs on it (black-box LDP), runs that
    autoreset release zeros, info is empty; the single wrapper passes Gymnasium's checker."""
    from gymnasium.utils.env_checker import check_env

    venv = VectorLaplaceSemiBandit(
        gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point",
                     max_episode_steps=5), epsilon=1.0, seed=0)
    agent = CUCB.from_env(venv, seed=0)
    assert agent.outcome_bounds == (-math.inf, math.inf) and agent.K == 4
    obs, info = venv.reset(seed=0)
    assert info == {} and (obs == 0).all()
    for t in range(6):
        a = agent.act(obs)
        nxt, r, _, trunc, info = venv.step(a)
        assert info == {}
        if t == 5:  # the step after truncation: every run starts afresh
            assert venv.autoreset.all() and (nxt == 0).all() and (r == 0).all()
            break
        np.testing.assert_array_equal(nxt[:, 20:], a)
        np.testing.assert_allclose(r, nxt[:, :20].sum(1))
        agent.observe(obs, a, r, nxt)
        obs = nxt
    single = LaplaceSemiBandit(gym.make(ENV_ID), epsilon=1.0)  # noise from the reset seed
    check_env(single, skip_render_check=True)


# ----------------------------------------------------------------------------- compiled paths


@needs_env
@pytest.mark.parametrize("cls", ALL)
def test_compiled_act_is_the_reference_bitwise(cls):
    """``act`` (one compiled pass for the index and the tie-breaking, the family's oracle
    unchecked) gives bitwise the reference ``family.oracle(oracle_weights(rng, index(),
    counts > 0))`` with the same decision stream, at every round of a run."""
    env = gym.make_vec(ENV_ID, num_envs=6, vectorization_mode="vector_entry_point",
                       max_episode_steps=300, n_arms=10, max_size=3)
    agent = cls.from_env(env, seed=2, **({} if cls is CUCB else {"epsilon": 4.0}))
    obs, _ = env.reset(seed=1)
    for _ in range(150):
        state = agent.rng.bit_generator.state
        weights = oracle_weights(agent.rng, agent.index(), agent.counts > 0)
        want = agent.family.oracle(weights).astype(np.int8)
        agent.rng.bit_generator.state = state
        a = agent.act(obs)
        assert a.dtype == np.int8 and np.array_equal(a, want)
        nxt, r, *_ = env.step(a)
        agent.observe(obs, a, r, nxt)
        obs = nxt
    assert (agent.index() < 1).any() or cls is not CUCB  # the uncapped branch is exercised


@pytest.mark.parametrize("cls", ALL)
def test_compiled_observe_is_the_checked_observe(cls):
    """The runner's batch (int8 actions) is checked in one compiled pass; int64 actions take
    the base class's checks: both learn the same state, draw for draw."""
    fast, ref = make(cls, n=4, seed=3), make(cls, n=4, seed=3)
    rng = np.random.default_rng(5)
    obs = np.zeros((4, 12))
    for _ in range(40):
        a = fast.act(obs)
        assert np.array_equal(a, ref.act(obs))
        nxt = feedback(a, (rng.random((4, 6)) < 0.5).astype(np.float64))
        fast.observe(obs, a, nxt[:, :6].sum(1), nxt)
        ref.observe(obs, a.astype(np.int64), nxt[:, :6].sum(1), nxt)
        obs = nxt
    x, y = arrays(fast), arrays(ref)
    assert all(np.array_equal(x[k], y[k]) for k in x)
    bad = feedback(a, np.full((4, 6), 0.5))
    bad[0, 6:] = 1 - bad[0, 6:]  # a mask that is not the action: refused, nothing learned
    with pytest.raises(ValueError, match="next_obs"):
        fast.observe(obs, a, bad[:, :6].sum(1), bad)
    assert np.array_equal(fast.counts, ref.counts)


# --------------------------------------------------------------------------- the block path
# ``play_outcomes`` (the runner's block path on ScoresBlocks settings) against act/observe.

BLOCK_FAMILIES = [{"family": "topk"}, {"family": "paths"},
                  {"family": "coverage", "n_arms": 8, "max_size": 2}]


def per_round(agent, outcomes, mechanism=None):
    """act/observe over drawn outcomes (N, L, m), the feedback built as the env builds it."""
    n, length, m = outcomes.shape
    obs = np.zeros((n, 2 * m), np.float32)
    actions = np.empty(outcomes.shape, np.int8)
    for s in range(length):
        a = actions[:, s] = agent.act(obs)
        nxt = np.concatenate([np.where(a == 1, outcomes[:, s], 0.0), a], axis=1)
        nxt = nxt.astype(np.float32)
        agent.observe(obs, a, (a * outcomes[:, s]).sum(axis=1), nxt)
        obs = nxt
    return actions


class Replay:
    """Test double of a user's LaplaceMechanism: its release ``snap(clip(x)) + noise`` on the
    noise the block path draws ahead (chunks of ``mechanism(zeros(CHUNK))`` of a twin), used
    in order: per-round play on the block path's noise stream."""

    def __init__(self, twin):
        from ldp_gym.agents.combinatorial import CHUNK
        from ldp_gym.wrappers.mechanisms.noise import DrawnAhead

        self.ahead, self.twin, self.grid = DrawnAhead(CHUNK), twin, twin.grid
        self.lower, self.upper = twin.lower, twin.upper

    def __call__(self, x):
        x = np.clip(np.asarray(x, np.float64), self.lower, self.upper)
        self.ahead.ensure(x.size, lambda count: self.twin(np.zeros(count)))
        p = int(self.ahead.pos[0])
        self.ahead.pos[0] += x.size
        return np.rint(x / self.grid) * self.grid + self.ahead.values[p:p + x.size] + 0.0


def block_env(n, length, seed=0, **kwargs):
    from ldp_gym.envs import CombinatorialVectorEnv

    env = CombinatorialVectorEnv(num_envs=n, max_episode_steps=10 * length, **kwargs)
    env.reset(seed=seed)
    return env


@pytest.mark.parametrize("kwargs", BLOCK_FAMILIES + [{"distribution": "beta"}])
@pytest.mark.parametrize("cls", [CUCB, CUCBLDP1, CUCBLDP2])
def test_block_path_is_bitwise_per_round_play_on_the_same_noise(cls, kwargs):
    """``play_outcomes`` over blocks of any split gives bitwise the super arms and the server
    state of act/observe on the same outcomes: CUCB as it is, the LDP agents with their
    mechanism replaced by :class:`Replay` (per-round play on the block path's noise)."""
    n, length = 6, 300
    env = block_env(n, length, **kwargs)
    x = env.draw_outcomes(length)
    kw = {} if cls is CUCB else {"epsilon": 40.0}  # widths that let indices leave the cap
    fast, ref = (cls.from_env(env, seed=3, horizon=1000, **kw) for _ in range(2))
    assert fast.block_play is BlockPlay.PLAYS_OUTCOMES
    if cls is not CUCB:
        twin = cls.from_env(env, seed=3, horizon=1000, **kw).mechanism
        ref.mechanism = Replay(twin)
    want = per_round(ref, x)
    got = np.concatenate([fast.play_outcomes(x[:, a:b])
                          for a, b in ((0, 1), (1, 77), (77, 77), (77, 300))], axis=1)
    assert got.dtype == np.int8 and np.array_equal(got, want)
    assert np.array_equal(fast.counts, ref.counts) and np.array_equal(fast.t, ref.t)
    sums = "sums" if cls is CUCB else "noisy_sums"
    assert np.array_equal(getattr(fast, sums), getattr(ref, sums))
    assert (fast.index() < 1).any()  # the uncapped branch ran too
    # and both continue with the same decisions
    assert np.array_equal(fast.act(np.zeros((n, 2 * env.core.n_arms))),
                          ref.act(np.zeros((n, 2 * env.core.n_arms))))


@pytest.mark.parametrize("kwargs", BLOCK_FAMILIES)
def test_cucb_dp_block_path_is_bitwise_per_round_play(kwargs):
    """CUCB-DP's trees take their noise from the tree mechanism's own stream on both paths
    (the block path gives back what it did not use): ``play_outcomes`` over blocks of any
    split is bitwise act/observe on the same outcomes (super arms, trees, noise stream), and
    traces the same closed nodes."""
    from ldp_gym.wrappers.mechanisms import recording

    n, length = 6, 300
    env = block_env(n, length, **kwargs)
    x = env.draw_outcomes(length)
    fast, ref = (CUCBDP.from_env(env, seed=3, horizon=1000, epsilon=40.0) for _ in range(2))
    with recording() as ref_trace:
        want = per_round(ref, x)
    with recording() as fast_trace:
        got = np.concatenate([fast.play_outcomes(x[:, a:b])
                              for a, b in ((0, 1), (1, 77), (77, 77), (77, 300))], axis=1)
    assert np.array_equal(got, want)
    for name in ("counts", "noisy_sums", "_alpha", "_noisy"):
        assert np.array_equal(getattr(fast.tree, name), getattr(ref.tree, name)), name
    assert np.array_equal(fast.counts, ref.counts) and np.array_equal(fast.t, ref.t)
    assert np.array_equal(fast.tree.noise(5), ref.tree.noise(5))  # the streams at one place
    assert np.array_equal(np.concatenate([r["input"] for r in fast_trace]),
                          np.concatenate([r["input"] for r in ref_trace]))
    assert np.array_equal(fast.act(np.zeros((n, 2 * env.core.n_arms))),
                          ref.act(np.zeros((n, 2 * env.core.n_arms))))
    with pytest.raises(ValueError, match="horizon"):
        fast.play_outcomes(env.draw_outcomes(701))


@pytest.mark.parametrize("cls", [CUCBLDP1, CUCBLDP2])
def test_block_report_is_local_report_on_the_same_noise(cls):
    """The block path's report step (``block_report``, the kernel's ``ldp*_report_row``) is
    bitwise ``local_report`` with the real mechanism where both draw the same noise: one chunk
    of CHUNK values is one call of the mechanism on CHUNK inputs."""
    from ldp_gym.agents.combinatorial import CHUNK

    m, K = 5, 4
    n = CHUNK // K if cls is CUCBLDP1 else CHUNK
    block, ref = (cls(m, family=TopK(m, K), epsilon=1.0, horizon=100, num_envs=n, seed=8)
                  for _ in range(2))
    rng = np.random.default_rng(0)
    S = (np.argsort(rng.random((n, m)), axis=1) < K).astype(np.int8)
    x = rng.random((n, m)).astype(np.float32)
    x[:, 0] = rng.integers(0, 2, n)  # edges of [0, 1] too
    nxt = np.concatenate([np.where(S == 1, x, 0.0), S], axis=1).astype(np.float32)
    counts = rng.integers(0, 3, (n, m))
    ref.counts[:], block.counts[:] = counts, counts
    want = ref.local_report(nxt, S, np.zeros(n), nxt, ref.public_state())
    got = block.block_report(S, x) if cls is CUCBLDP1 else \
        block.block_report(S, x, block.public_state())
    assert want.keys() == got.keys()
    for k in want:
        assert np.array_equal(np.asarray(want[k]), got[k]), k


def block_ldp1_report(value, k, seed, K=3):
    agent = CUCBLDP1(5, family=TopK(5, K), epsilon=1.0, horizon=1000, num_envs=k, seed=seed)
    s = np.zeros((k, 5), np.int8)
    s[:, :K] = 1
    return agent.block_report(s, np.full((k, 5), value))["values"][:, :K]


def block_ldp2_report(value, k, seed):
    agent = CUCBLDP2(5, family=TopK(5, 3), epsilon=1.0, horizon=1000, num_envs=k, seed=seed)
    s = np.zeros((k, 5), np.int8)
    s[:, 1:4] = 1
    rep = agent.block_report(s, np.full((k, 5), value), agent.public_state())
    assert (rep["arm"] == 1).all()
    return rep["value"]


@pytest.mark.audit
def test_block_path_releases_audit():
    """What the block path releases (its report step on its noise) passes the audits of
    ``local_report``'s messages (values in [0, 1]: the block path refuses others)."""
    res = audit(lambda k: block_ldp1_report(0.0, k, 21), lambda k: block_ldp1_report(1.0, k, 22),
                n=N_VECTOR, statistic="laplace")
    assert 0.5 < res.epsilon_lower <= 1.0
    res = audit(lambda k: block_ldp2_report(0.0, k, 23), lambda k: block_ldp2_report(1.0, k, 24),
                n=N_SCALAR)
    assert 0.7 < res.epsilon_lower <= 1.0


@pytest.mark.parametrize("cls", [CUCBLDP1, CUCBLDP2])
def test_block_path_has_the_law_of_per_round_play(cls):
    """With the real mechanisms (the block path draws its noise in chunks, another stream):
    the final regret of 300 runs by blocks and of 300 runs round by round (act, the env's
    step, observe; other seeds) are two samples of one law: two-sample Kolmogorov-Smirnov
    test, false-alarm rate 1e-3 per agent."""
    n, length, kw = 300, 200, {"n_arms": 6, "max_size": 2}
    env = block_env(n, length, seed=1, **kw)
    agent = cls.from_env(env, seed=2, epsilon=4.0, horizon=length)
    x = env.draw_outcomes(length)
    by_blocks = env.score_block(agent.play_outcomes(x), x)[1].sum(axis=1)
    venv = block_env(n, length, seed=3, **kw)
    agent = cls.from_env(venv, seed=4, epsilon=4.0, horizon=length)
    obs, total = venv.core.observe(), np.zeros(n)
    for _ in range(length):
        a = agent.act(obs)
        nxt, r, _, _, info = venv.step(a)
        agent.observe(obs, a, r, nxt)
        obs, total = nxt, total + info["regret"]
    assert stats.ks_2samp(by_blocks, total).pvalue > 1e-3
    assert by_blocks.mean() < 0.9 * length * np.mean(venv.core.opt)  # it learns


def test_block_path_declared_only_where_it_runs():
    """Agents on a family without a compiled oracle play round by round; the block path
    refuses outcomes it cannot play as the per-round path does."""
    env = block_env(2, 10)
    assert CUCBDP.from_env(env, epsilon=1.0).block_play is BlockPlay.PLAYS_OUTCOMES
    assert make(CUCB).block_play is BlockPlay.ROUNDS  # the local stand-in family
    with pytest.raises(ValueError, match="no block path"):
        make(CUCB, n=2).play_outcomes(np.zeros((2, 3, 6)))
    agent = CUCBLDP1.from_env(env, epsilon=1.0)
    for bad, msg in ((np.zeros((2, 3, 5)), "shape|float"), (np.zeros((2, 3, 20), int), "float"),
                     (np.full((2, 3, 20), 1.5), r"\[0, 1\]"),
                     (np.full((2, 3, 20), np.nan), r"\[0, 1\]")):
        with pytest.raises(ValueError, match=msg):
            agent.play_outcomes(bad)
    assert (agent.counts == 0).all() and (agent.t == 0).all()


def test_ldp1_reports_refuse_more_than_k_arms_and_block_report_unit_outcomes():
    """epsilon/K per released outcome adds up to epsilon only for |S| <= K: a super arm with
    more base arms is refused by the agent's report and by the wrapper; the block path's
    report step refuses outcomes outside [0, 1] (it does not clip)."""
    from ldp_gym.wrappers import VectorLaplaceSemiBandit

    env = gym.make("LDPCombinatorialBandit-v0")
    agent = CUCBLDP1.from_env(env, epsilon=1.0, seed=0, num_envs=1)
    too_many = np.zeros((1, agent.n_arms), np.int8)
    too_many[0, :agent.K + 1] = 1
    obs = np.zeros((1, 2 * agent.n_arms))
    with pytest.raises(ValueError, match="more than K"):
        agent.local_report(obs, too_many, np.zeros(1), obs, agent.public_state())
    with pytest.raises(ValueError, match="outcomes must be finite and in"):
        agent.block_report((np.arange(agent.n_arms) < agent.K)[None].astype(np.int8),
                           np.full((1, agent.n_arms), 2.0))
    venv = ldp_gym.make_vector_env("LDPCombinatorialBandit-v0", 1, 10)
    wrapped = VectorLaplaceSemiBandit(venv, epsilon=1.0, seed=0)
    feedback = np.concatenate([np.full((1, agent.n_arms), 0.5), too_many.astype(float)], axis=1)
    with pytest.raises(ValueError, match="more than K"):
        wrapped._release_batch(feedback)


@pytest.mark.parametrize("cls", [CUCBLDP1, CUCBLDP2])
def test_block_report_refuses_outcomes_or_counts_of_another_shape(cls):
    """The compiled report step reads the outcomes (and CUCB-LDP2's counts) by index: rows or
    arms that do not match the super arms used to be read and written out of bounds (the
    process aborted in malloc). Each mismatch is now one ValueError naming the input."""
    env = gym.make("LDPCombinatorialBandit-v0")
    agent = cls.from_env(env, epsilon=1.0, seed=0, num_envs=1)
    m, K = agent.n_arms, agent.K
    S = np.zeros((1, m), np.int8)
    S[0, :K] = 1
    counts = {"counts": np.zeros((1, m), np.int64)}
    extra = (counts,) if cls is CUCBLDP2 else ()
    for actions, outcomes, msg in ((S, np.full((2, m), 0.5), "outcomes must have the shape"),
                                   (np.repeat(S, 2, 0), np.full((1, m), 0.5), "outcomes must"),
                                   (S[:, :-1], np.full((1, m - 1), 0.5), "actions must be super"),
                                   (S[0], np.full(m, 0.5), "actions must be super")):
        with pytest.raises(ValueError, match=msg):
            agent.block_report(actions, outcomes, *extra)
    if cls is CUCBLDP2:
        with pytest.raises(ValueError, match=r"public_state\['counts'\] must have the shape"):
            agent.block_report(S, np.full((1, m), 0.5), {"counts": np.zeros((2, m), np.int64)})
    assert set(agent.block_report(S, np.full((1, m), 0.5), *extra)) == (
        {"mask", "values"} if cls is CUCBLDP1 else {"arm", "value"})
