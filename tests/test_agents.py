"""The generic agent contract suite: every agent runs through the same checks.

Like river's and scikit-learn's estimator checks: an agent class declares its
parameter sets (``_unit_test_params``, ``test_params`` first) and the action
spaces it supports, and gets these checks by being listed in ``AGENTS``. Every
parameter set runs on every registered env id (``LDP*``) whose action space and
setting the agent accepts; ``from_env`` refuses the others with one clear
``ValueError`` (contextual agents on context-free envs). Checks: valid actions
(single and batched, batches of 7), seeded reproducibility, a batch of one is the
single agent, pickling and deep copies continue bitwise, no aliasing (read-only
public state; changing returned actions, reports or inputs changes nothing),
parameter and input validation, the stated guarantee, the global numpy state
untouched.
"""

import copy
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import ldp_gym
from ldp_gym import checks
from ldp_gym.agents import (
    AGENTS,
    LDPUCB,
    Agent,
    DistributedDPAgent,
    GlobalDPAgent,
    JDPLinUCB,
    JointDPAgent,
    LocalDPAgent,
    Privacy,
    ShuffleDPAgent,
    ShuffleSE,
)
from ldp_gym.agents.base import readonly
from ldp_gym.checks import ROUNDS as T
from ldp_gym.checks import matching, play, same, single, state
from ldp_gym.protocols import BlockPlay
from ldp_gym.wrappers.mechanisms import recording

gym.register_envs(ldp_gym)
CLASSES = list(AGENTS.values())
IDS = list(AGENTS)
ENV_IDS = [i for i in gym.registry if i.startswith("LDP")]


def _refusal(cls, env_id):
    """``None`` if the agent accepts the env, else the ValueError of ``from_env``."""
    try:
        single(cls, cls._unit_test_params()[0], env_id)
    except ValueError as exc:
        return exc
    return None


REFUSALS = {(cls, env_id): _refusal(cls, env_id) for cls in CLASSES for env_id in ENV_IDS}
CASES = [pytest.param(cls, params, env_id, id=f"{cls.name}-{k}-{env_id}")
         for cls in CLASSES for k, params in enumerate(cls._unit_test_params())
         for env_id in ENV_IDS if REFUSALS[cls, env_id] is None]
REFUSED = [pytest.param(cls, env_id, id=f"{cls.name}-{env_id}")
           for (cls, env_id), exc in REFUSALS.items() if exc is not None]


# ----------------------------------------------------------------------------- which envs


def test_every_agent_runs_somewhere_and_on_its_test_env():
    for cls in CLASSES:
        assert REFUSALS[cls, cls.test_env] is None, cls.name
        assert cls._unit_test_params()[0] == cls.test_params, cls.name
    # context-free agents run everywhere (they ignore contexts); contextual ones need contexts
    assert len(CASES) > len(CLASSES)


@pytest.mark.parametrize("cls,env_id", REFUSED)
def test_refusals_are_one_clear_value_error(cls, env_id):
    exc = REFUSALS[cls, env_id]
    assert type(exc) is ValueError and "\n" not in str(exc)


# ----------------------------------------------------------------------------- every case


@pytest.mark.parametrize("cls,params,env_id", CASES)
def test_valid_actions_single_and_batched(cls, params, env_id):
    checks.check_valid_actions(cls, params, env_id)


@pytest.mark.parametrize("cls,params,env_id", CASES)
def test_seeded_reproducibility(cls, params, env_id):
    checks.check_seeded_reproducibility(cls, params, env_id)


@pytest.mark.parametrize("cls,params,env_id", CASES)
def test_batch_of_one_is_the_single_agent(cls, params, env_id):
    checks.check_batch_of_one(cls, params, env_id)


@pytest.mark.parametrize("cls,params,env_id", CASES)
def test_pickle_and_deepcopy_continue_bitwise(cls, params, env_id):
    checks.check_pickle_and_copy(cls, params, env_id)


@pytest.mark.parametrize("cls,params,env_id", CASES)
def test_no_aliasing(cls, params, env_id):
    checks.check_no_aliasing(cls, params, env_id)


@pytest.mark.parametrize("cls,params,env_id", CASES)
def test_least_authority(cls, params, env_id):
    checks.check_least_authority(cls, params, env_id)


# ----------------------------------------------------------------------------- per class


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_parameter_validation(cls):
    checks.check_parameter_validation(cls)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_unsupported_action_spaces_are_refused(cls):
    """UCB1 used to run on MultiBinary(4) as if it had 4 arms and fail on a Box with an
    AttributeError: now one line naming the agent and the space."""
    checks.check_unsupported_spaces(cls)


class SpaceEnv(gym.Env):
    """A stub env with a given action space."""

    observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)

    def __init__(self, action_space):
        self.action_space = action_space


def _bad_feedback(agent, obs):
    """(kwargs of observe, error, argument named) for one round, single or batched."""
    if isinstance(agent.action_space, spaces.Box):
        return _bad_box_feedback(agent, obs)
    if isinstance(agent.action_space, spaces.MultiBinary):
        return _bad_semibandit_feedback(agent, obs)
    k = agent.action_space.n  # (K, but 2K in best-arm identification: K recommends arm 0)
    if agent.num_envs is None:
        good = {"obs": obs, "action": 0, "reward": 0.5, "next_obs": obs}
        bad = [("action", -1, ValueError), ("action", k, ValueError),
               ("action", 1.5, TypeError), ("action", float("nan"), TypeError),
               ("action", True, TypeError), ("action", np.array([0]), ValueError),
               ("action", "0", TypeError), ("reward", float("nan"), ValueError),
               ("reward", float("inf"), ValueError), ("reward", np.array([0.5]), ValueError),
               ("reward", True, TypeError), ("obs", np.full_like(obs, np.nan), ValueError),
               ("next_obs", np.full_like(obs, np.inf), ValueError), ("next_obs", obs[:-1], ValueError)]
    else:
        n = agent.num_envs
        good = {"obs": obs, "action": np.zeros(n, np.int64), "reward": np.full(n, 0.5),
                "next_obs": obs}
        bad = [("action", np.full(n, -1), ValueError), ("action", np.full(n, k), ValueError),
               ("action", np.full(n, 1.5), TypeError), ("action", np.zeros(n, bool), TypeError),
               ("action", np.zeros((n, 1), np.int64), ValueError),
               ("action", np.zeros(n - 1, np.int64), ValueError),
               ("reward", np.full(n, np.nan), ValueError), ("reward", np.full(n - 1, 0.5), ValueError),
               ("obs", np.full_like(obs, np.nan), ValueError), ("obs", obs[:-1], ValueError),
               ("next_obs", np.full_like(obs, np.inf), ValueError)]
    return [({**good, arg: value}, error, arg) for arg, value, error in bad]


def _bad_semibandit_feedback(agent, obs):
    """(kwargs of observe, error, argument named) for one round of a super-arm agent."""
    act = np.array(agent.act(obs))
    batch = () if agent.num_envs is None else (agent.num_envs,)
    nxt = matching(agent, act, np.full(obs.shape, 0.5, np.float32))
    good = {"obs": obs, "action": act, "reward": 0.5 if not batch else np.full(batch, 0.5),
            "next_obs": nxt}
    flipped = nxt.copy()
    flipped[..., act.shape[-1]:] = 1.0 - flipped[..., act.shape[-1]:]   # mask contradicts S
    bad = [("action", act[..., :-1], ValueError), ("action", np.full_like(act, 2), ValueError),
           ("action", act.astype(bool), TypeError), ("action", act.astype(np.float64) + 0.5,
                                                      ValueError),   # floats: exactly 0/1 only
           ("reward", float("nan") if not batch else np.full(batch, np.nan), ValueError),
           ("obs", np.full_like(obs, np.nan), ValueError),
           ("next_obs", np.full_like(nxt, np.inf), ValueError), ("next_obs", flipped, ValueError)]
    return [({**good, arg: value}, error, arg) for arg, value, error in bad]


def _bad_box_feedback(agent, obs):
    """(kwargs of observe, error, argument named) for one round of a Box agent."""
    space = agent.action_space
    batch = () if agent.num_envs is None else (agent.num_envs,)
    zero = np.zeros(batch + space.shape, space.dtype)
    outside = np.full_like(zero, 2.0 * float(np.max(np.abs(space.high))))
    good = {"obs": obs, "action": zero,
            "reward": 0.5 if not batch else np.full(batch, 0.5), "next_obs": obs}
    bad = [("action", outside, ValueError), ("action", np.full_like(zero, np.nan), ValueError),
           ("action", np.full_like(zero, np.inf), ValueError),
           ("action", zero.astype(bool), TypeError), ("action", zero[..., :-1], ValueError),
           ("action", zero.astype(str), TypeError),
           ("reward", float("nan") if not batch else np.full(batch, np.nan), ValueError),
           ("reward", np.array([0.5]) if not batch else np.full(batch[0] - 1, 0.5), ValueError),
           ("obs", np.full_like(obs, np.nan), ValueError),
           ("next_obs", np.full_like(obs, np.inf), ValueError)]
    if batch:
        bad.append(("action", zero[:-1], ValueError))
    return [({**good, arg: value}, error, arg) for arg, value, error in bad]


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
@pytest.mark.parametrize("num_envs", [None, 3])
def test_observe_refuses_bad_feedback(cls, num_envs):
    """Actions -1, K, 1.5, wrong shapes, NaN or inf rewards and contexts: one clear line
    naming the argument, and nothing learned."""
    env = gym.make(cls.test_env, max_episode_steps=T) if num_envs is None else gym.make_vec(
        cls.test_env, num_envs=num_envs, vectorization_mode="vector_entry_point",
        max_episode_steps=T)
    agent = cls.from_env(env, seed=0, **cls.test_params)
    obs = env.reset(seed=0)[0].astype(np.float64)
    cases = _bad_feedback(agent, obs)  # (may act once, for a feasible action)
    before = copy.deepcopy(state(agent))
    for kwargs, error, arg in cases:
        with pytest.raises(error) as info:
            agent.observe(**kwargs)
        msg = str(info.value)
        assert "\n" not in msg and arg.split("_")[0] in msg, (kwargs, msg)
    assert same(state(agent), before)
    with pytest.raises(ValueError, match="obs"):
        agent.act(np.full_like(obs, np.nan))


class Subsets(Agent):
    """A toy agent on MultiBinary(K) (combinatorial semi-bandits): random subsets."""

    name = "Subsets"
    supported_action_spaces = (spaces.MultiBinary,)

    @classmethod
    def space_params(cls, space):
        return {"n_arms": int(space.n)}

    def _make_action_space(self):
        return spaces.MultiBinary(self.n_arms)

    def _init_state(self, n):
        self.sums = np.zeros((n, self.n_arms))

    def _act(self, obs):
        return (self.rng.random((obs.shape[0], self.n_arms)) < 0.5).astype(np.int8)

    def _observe(self, obs, actions, rewards, next_obs):
        self.sums += actions * rewards[:, None]


def test_other_action_spaces_get_arrays_of_their_dtype():
    """No int casts outside Discrete: the single path returns an array of the space's dtype,
    and actions are validated against the agent's own space."""
    env = SpaceEnv(spaces.MultiBinary(4))
    agent = Subsets.from_env(env, seed=0)
    obs = np.zeros(1, np.float32)
    a = agent.act(obs)
    assert type(a) is np.ndarray and a.dtype == np.int8 and env.action_space.contains(a)
    agent.observe(obs, a, 1.0, obs)
    assert np.array_equal(agent.sums[0], a)
    with pytest.raises(ValueError, match="action"):
        agent.observe(obs, np.array([0, 2, 0, 0]), 1.0, obs)
    with pytest.raises(ValueError, match="Subsets supports MultiBinary action spaces only"):
        Subsets.from_env(gym.make("LDPMAB-v0"))


def test_readonly_views():
    x = np.zeros(3)
    out = readonly(index=x, t=5)
    assert not out["index"].flags.writeable and not out["t"].flags.writeable
    with pytest.raises(ValueError):
        out["index"][0] = 1.0
    with pytest.raises(ValueError):  # numpy allows it on a plain view of a writable array
        out["index"].flags.writeable = True
    assert x[0] == 0.0  # nothing reached the server's array
    x[0] = 2.0  # a view: the server's own array stays writable, users see its updates
    assert out["index"][0] == 2.0


PRIVATE = [c for c in CLASSES if issubclass(c, (LocalDPAgent, GlobalDPAgent, ShuffleDPAgent,
                                                DistributedDPAgent))]


@pytest.mark.parametrize("cls", PRIVATE, ids=[c.name for c in PRIVATE])
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), True, "1"])
def test_private_agents_validate_epsilon(cls, bad):
    with pytest.raises((ValueError, TypeError), match="epsilon"):
        cls(3, horizon=100, epsilon=bad)


@pytest.mark.parametrize("cls", PRIVATE, ids=[c.name for c in PRIVATE])
def test_private_agents_state_their_guarantee(cls):
    for params in cls._unit_test_params():
        agent = single(cls, params, cls.test_env)[1]
        assert isinstance(agent.privacy, Privacy)
        if agent.privacy.rho is not None:  # zCDP: rho given, or the rho epsilon-DP implies
            assert agent.privacy.epsilon is None and not hasattr(agent, "epsilon")
            assert agent.privacy.rho == params.get("rho", params.get("epsilon", 0.0) ** 2 / 2)
        else:
            assert agent.privacy.epsilon == params["epsilon"]
        default_delta = {ShuffleSE: 1e-6, JDPLinUCB: 1e-5}.get(cls, 0.0)  # their defaults
        assert agent.privacy.delta == params.get("delta", default_delta)
        assert agent.privacy.model == ("local" if issubclass(cls, LocalDPAgent) else
                                       "shuffle" if issubclass(cls, ShuffleDPAgent) else
                                       "distributed" if issubclass(cls, DistributedDPAgent) else
                                       "joint" if issubclass(cls, JointDPAgent) else "global")
    # the docstring cites the paper (a year) and states the guarantee
    assert "Privacy:" in cls.__doc__ and re.search(r"(19|20)\d\d", cls.__doc__)
    bad_bounds, name = ({"reward_bound": -1.0}, "reward_bound") if hasattr(agent, "reward_bound") \
        else ({"lower": 1.0, "upper": 0.0}, "upper")
    with pytest.raises(ValueError, match=name):
        cls(3, horizon=100, **cls.test_params, **bad_bounds)


def test_non_private_agents_have_no_privacy():
    for cls in CLASSES:
        if cls not in PRIVATE:
            for params in cls._unit_test_params():
                assert single(cls, params, cls.test_env)[1].privacy is None


def test_agents_need_horizon_when_they_use_it():
    with pytest.raises(ValueError, match="horizon"):
        LDPUCB(3, epsilon=1.0)


def test_ldp_ucb_last_report_and_message_schema():
    """R9: the server receives (arm, noisy reward) for every input; the arm is the public choice."""
    env, agent = single(LDPUCB, LDPUCB.test_params, "LDPMAB-v0")
    play(env, agent, 3)
    rep = agent.last_report
    assert set(rep) == {"arm", "reward"} and rep["reward"].shape == (1,)
    for reward in (0.0, 1.0, 50.0, -3.0):
        msg = agent.local_report(np.zeros((1, 1)), np.array([2]), np.array([reward]),
                                 np.zeros((1, 1)), agent.public_state())
        assert set(msg) == {"arm", "reward"} and msg["reward"].shape == (1,)


def test_ldp_ucb_replay_neighbours():
    """Replay test: same seed, neighbouring rewards -> identical call traces,
    input distance within the declared sensitivity, budget within the claim."""
    rng = np.random.default_rng(0)
    pairs = [(rng.uniform(-5, 6), rng.uniform(-5, 6)) for _ in range(1000)] + [(0.0, 1.0), (0.0, 1e6)]

    def trace(rewards):
        agent = LDPUCB(5, epsilon=1.0, horizon=100, num_envs=len(rewards), seed=3)
        with recording() as rec:
            obs = np.zeros((len(rewards), 1))
            agent.observe(obs, agent.act(obs), np.asarray(rewards), obs)
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


COMMITTING = [c for c in CLASSES if c.block_play is BlockPlay.COMMITS]


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
