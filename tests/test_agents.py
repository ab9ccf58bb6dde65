"""The generic agent contract suite: every agent in ``AGENTS`` runs through the same checks.

Like scikit-learn's ``check_estimator``: an agent class declares ``test_env``
and ``test_params`` and gets these checks by being listed in ``AGENTS``.
"""

import re

import gymnasium as gym
import numpy as np
import pytest

import ldp_gym
from ldp_gym.agents import AGENTS, LDPUCB, Agent, GlobalDPAgent, LocalDPAgent, Privacy
from ldp_gym.wrappers.mechanisms import recording

CLASSES = list(AGENTS.values())
IDS = list(AGENTS)


def make(cls, seed=0, **kw):
    env = gym.make(cls.test_env, max_episode_steps=300)
    return env, cls.from_env(env, seed=seed, **cls.test_params, **kw)


def play(env, agent, steps, seed=0):
    obs, _ = env.reset(seed=seed)
    actions = []
    for _ in range(steps):
        a = agent.act(obs)
        nxt, r, term, trunc, info = env.step(a)
        agent.observe(obs, a, r, nxt)
        actions.append(a)
        obs = nxt
    return actions


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_valid_actions_and_types(cls):
    env, agent = make(cls)
    actions = play(env, agent, 300)
    assert all(type(a) is int and env.action_space.contains(a) for a in actions)
    assert isinstance(agent, Agent) and agent.name in AGENTS


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_seeded_reproducibility(cls):
    env, a1 = make(cls, seed=5)
    env2, a2 = make(cls, seed=5)
    assert play(env, a1, 200) == play(env2, a2, 200)
    # reset with a seed replays from scratch
    a1.reset(seed=5)
    assert play(env, a1, 200) == play(env2, a2.__class__.from_env(env2, seed=5, **cls.test_params),
                                      200)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_batched_equals_single(cls):
    """A batch of one is the single agent with a batch dimension (same code, same numbers)."""
    env, single = make(cls, seed=9)
    venv = ldp_gym.make_vector_env(cls.test_env, 1, 300)
    batched = cls.from_env(venv, seed=9, **cls.test_params)
    assert batched.num_envs == 1 and single.num_envs is None
    rng = np.random.default_rng(0)
    space = env.observation_space
    space.seed(1)
    for _ in range(150):
        obs = space.sample()
        a_s = single.act(obs)
        a_b = batched.act(obs[None])
        assert a_b.shape == (1,) and a_s == int(a_b[0])
        r = float(rng.random() < 0.5)
        single.observe(obs, a_s, r, obs)
        batched.observe(obs[None], a_b, np.array([r]), obs[None])


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_batch_of_many(cls):
    venv = ldp_gym.make_vector_env(cls.test_env, 7, 300)
    agent = cls.from_env(venv, seed=1, **cls.test_params)
    obs, _ = venv.reset(seed=0)
    for _ in range(50):
        a = agent.act(obs)
        assert a.shape == (7,) and ((a >= 0) & (a < agent.n_arms)).all()
        nxt, r, *_ = venv.step(a)
        agent.observe(obs, a, r, nxt)
        obs = nxt


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
@pytest.mark.parametrize("param,bad", [("n_arms", 0), ("n_arms", 2.5), ("horizon", 0),
                                       ("num_envs", 0), ("num_envs", True)])
def test_parameter_validation(cls, param, bad):
    kwargs = dict(n_arms=3, horizon=100, **cls.test_params)
    kwargs[param] = bad
    with pytest.raises((ValueError, TypeError), match=param):
        cls(**kwargs)


PRIVATE = [c for c in CLASSES if issubclass(c, (LocalDPAgent, GlobalDPAgent))]


@pytest.mark.parametrize("cls", PRIVATE, ids=[c.name for c in PRIVATE])
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), True, "1"])
def test_private_agents_validate_epsilon(cls, bad):
    with pytest.raises((ValueError, TypeError), match="epsilon"):
        cls(3, horizon=100, epsilon=bad)


@pytest.mark.parametrize("cls", PRIVATE, ids=[c.name for c in PRIVATE])
def test_private_agents_state_their_guarantee(cls):
    _, agent = make(cls)
    assert isinstance(agent.privacy, Privacy)
    assert agent.privacy.epsilon == cls.test_params["epsilon"]
    assert agent.privacy.model == ("local" if issubclass(cls, LocalDPAgent) else "global")
    # the docstring cites the paper (a year) and states the guarantee
    assert "Privacy:" in cls.__doc__ and re.search(r"(19|20)\d\d", cls.__doc__)
    bad_bounds, name = ({"reward_bound": -1.0}, "reward_bound") if hasattr(agent, "reward_bound") \
        else ({"lower": 1.0, "upper": 0.0}, "upper")
    with pytest.raises(ValueError, match=name):
        cls(3, horizon=100, **cls.test_params, **bad_bounds)


def test_non_private_agents_have_no_privacy():
    for cls in CLASSES:
        if cls not in PRIVATE:
            assert make(cls)[1].privacy is None


def test_agents_need_horizon_when_they_use_it():
    with pytest.raises(ValueError, match="horizon"):
        LDPUCB(3, epsilon=1.0)


def test_agents_never_touch_global_numpy_state():
    state = np.random.get_state()  # noqa: NPY002 - reads the global state to prove it untouched
    for cls in CLASSES:
        env, agent = make(cls)
        play(env, agent, 50)
    after = np.random.get_state()  # noqa: NPY002 - reads the global state to prove it untouched
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
               for a, b in zip(state, after))


def test_ldp_ucb_last_report_and_message_schema():
    """R9: the server receives (arm, noisy reward) for every input; the arm is the public choice."""
    env, agent = make(LDPUCB)
    play(env, agent, 3)
    rep = agent.last_report
    assert set(rep) == {"arm", "reward"} and rep["reward"].shape == (1,)
    for reward in (0.0, 1.0, 50.0, -3.0):
        msg = agent.local_report(np.zeros((1, 1)), np.array([2]), np.array([reward]),
                                 agent.public_state())
        assert set(msg) == {"arm", "reward"} and msg["reward"].shape == (1,)


def test_ldp_ucb_replay_neighbours():
    """Replay test (PRIVACY.md): same seed, neighbouring rewards -> identical call traces,
    input distance within the declared sensitivity, budget within the claim."""
    rng = np.random.default_rng(0)
    pairs = [(rng.uniform(-5, 6), rng.uniform(-5, 6)) for _ in range(1000)] + [(0.0, 1.0), (0.0, 1e6)]

    def trace(rewards):
        agent = LDPUCB(5, epsilon=1.0, horizon=100, num_envs=len(rewards), seed=3)
        with recording() as rec:
            agent.observe(np.zeros((len(rewards), 1)), agent.act(np.zeros((len(rewards), 1))),
                          np.asarray(rewards), None)
        return rec, agent.last_report
    t0, r0 = trace([p[0] for p in pairs])
    t1, r1 = trace([p[1] for p in pairs])
    assert len(t0) == len(t1) == 1
    a, b = t0[0], t1[0]
    assert a["mechanism"] == b["mechanism"] and a["shape"] == b["shape"]
    assert np.array_equal(a["noise"], b["noise"]) and a["epsilon"] == b["epsilon"] <= 1.0
    assert np.all(np.abs(a["input"] - b["input"]) <= a["sensitivity"])
    assert np.array_equal(r0["arm"], r1["arm"])


@pytest.mark.parametrize("name,kwargs,param", [
    ("AdaP-UCB", {"alpha": 0.0}, "alpha"), ("AdaP-KLUCB", {"alpha": float("nan")}, "alpha"),
    ("DP-UCB", {"gamma": 1.5}, "gamma"), ("DP-SE", {"beta": 0.0}, "beta"), ("KL-UCB", {"c": -1.0}, "c"),
    ("LDP-UCB", {"lower": float("inf")}, "lower"),
])
def test_algorithm_parameters_are_validated(name, kwargs, param):
    cls = AGENTS[name]
    base = dict(n_arms=3, horizon=100, **cls.test_params)
    with pytest.raises((ValueError, TypeError), match=param):
        cls(**base, **kwargs)


def test_dp_ucb_tree_is_calibrated_for_the_horizon():
    """DP-UCB's per-arm tree: one stream per (run, arm), levels = floor(log2 T) + 1, the agent's
    epsilon for the whole stream (the tree itself is audited in test_audit.py)."""
    agent = AGENTS["DP-UCB"](4, horizon=1000, epsilon=0.5, num_envs=3, seed=0)
    assert agent.tree.streams == (3, 4) and agent.tree.levels == 10
    assert agent.tree.epsilon == 0.5 and agent.tree.node_sensitivity == 10.0


COMMITTING = [c for c in CLASSES if c.commits]


@pytest.mark.parametrize("cls", COMMITTING, ids=[c.name for c in COMMITTING])
def test_observe_committed_takes_sums_only_of_declared_bounded_rewards(cls):
    """One reward of 1000 among 16 rewards of 0.5: clipping their sum to [0, 16] would move a
    released mean from 0.5 to 1. A sum cannot be clipped reward by reward, so it is refused, as
    are missing bounds and bounds wider than the agent's [lower, upper]."""
    agent = cls(3, horizon=1000, num_envs=1, seed=0, **cls.test_params)
    arm = agent.act(np.zeros((1, 1)))
    hidden = np.array([15 * 0.5 + 1000.0])
    for kwargs in ({}, {"reward_bounds": (0.0, 1.0)}, {"reward_bounds": (0.0, 1000.0)},
                   {"reward_bounds": (-1.0, 1.0)}, {"reward_bounds": (0.0,)}):
        with pytest.raises(ValueError, match="reward_bounds"):
            agent.observe_committed(arm, np.array([16]), hidden, **kwargs)
    assert agent.t[0] == 0  # nothing learned from a refused call
    counts = agent.commitment()
    agent.observe_committed(arm, counts, 0.5 * counts, reward_bounds=(0.0, 1.0))
    assert agent.t[0] == counts[0]
