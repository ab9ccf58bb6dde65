"""The agent contract as public checks, like Gymnasium's ``check_env`` and river's
``check_estimator``: :func:`check_agent` runs an agent class through the checks every built-in
agent passes, and :func:`audit_agent` audits a local-DP agent's user-side report.

An agent class gets checked on every registered env id (``LDP*``) whose action space and
setting its ``from_env`` accepts, with each of its parameter sets (``_unit_test_params``,
``test_params`` first). Each check raises :class:`AgentCheckError` (an ``AssertionError``)
naming the check, the parameters and the env id.

Example:
    >>> from ldp_gym.agents import UCB1
    >>> from ldp_gym.checks import check_agent
    >>> [name for name, _ in check_agent(UCB1, env_ids=["LDPMAB-v0"])][:3]
    ['valid actions', 'least authority', 'reports pass the server']
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space

__all__ = ["AgentAudit", "AgentCheckError", "audit_agent", "check_agent", "supported_env_ids"]

#: rounds each check plays (the checks stay fast)
ROUNDS = 20


class AgentCheckError(AssertionError):
    """An agent failed a check of the contract; the message names the check."""


def _require(condition: Any, message: str) -> None:
    if not condition:
        raise AgentCheckError(message)


# ----------------------------------------------------------------------------- playing


def single(cls: type, params: dict, env_id: str, seed: int = 0) -> tuple[Any, Any]:
    """A single env of ``env_id`` (reset) and the agent built for it by ``from_env``."""
    env = gym.make(env_id, max_episode_steps=ROUNDS)
    agent = cls.from_env(env, seed=seed, **params)  # type: ignore[attr-defined]
    start(env, agent)
    return env, agent


def vector(cls: type, params: dict, env_id: str, n: int, seed: int = 0) -> tuple[Any, Any]:
    """A native vector env of ``n`` runs of ``env_id`` (reset) and the agent built for it."""
    venv = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point",
                        max_episode_steps=ROUNDS)
    agent = cls.from_env(venv, seed=seed, **params)  # type: ignore[attr-defined]
    start(venv, agent)
    return venv, agent


def start(env: Any, agent: Any, seed: int = 0) -> Any:
    """Reset ``env`` and give an agent that uses auxiliary data (``receive_auxiliary``) this
    episode's datasets, as ``ldp_gym.run`` does; the first observation."""
    obs, _ = env.reset(seed=seed)
    receive = getattr(agent, "receive_auxiliary", None)
    if receive is not None:
        receive(env.unwrapped.auxiliary_datasets())
    return obs


def play(env: Any, agent: Any, steps: int = ROUNDS, seed: int = 0) -> np.ndarray:
    """Play ``steps`` rounds on a single or vector env; the actions (steps, ...)."""
    obs = start(env, agent, seed)
    actions = []
    for _ in range(steps):
        a = agent.act(obs)
        nxt, r, terminated, truncated, _ = env.step(a)
        agent.observe(obs, a, r, nxt)
        actions.append(np.array(a))
        obs = nxt
        if not hasattr(env, "num_envs") and (terminated or truncated):  # (a recommendation)
            obs = env.reset()[0]
    return np.array(actions)


def rounds(obs_space: spaces.Space, n: int | None, steps: int, seed: int = 0) -> list[tuple]:
    """Synthetic feedback ``(obs, rewards, next_obs)`` of ``steps`` rounds for n runs.

    With n None, for a single run."""
    space = obs_space if n is None else batch_space(obs_space, n)
    space.seed(seed)
    obs = [space.sample() for _ in range(steps + 1)]
    rewards = np.random.default_rng(seed).random((steps, n or 1))
    return [(obs[t], float(rewards[t, 0]) if n is None else rewards[t], obs[t + 1])
            for t in range(steps)]


def matching(agent: Any, action: Any, nxt: Any) -> Any:
    """Semi-bandit feedback must match the action: rebuilt from the synthetic ``nxt`` for
    MultiBinary agents.

    Such feedback is the outcomes of the played base arms, then the mask of the super arm."""
    if not isinstance(agent.action_space, spaces.MultiBinary):
        return nxt
    a = np.asarray(action, dtype=np.float32)
    x = np.clip(np.asarray(nxt)[..., :a.shape[-1]], 0.0, 1.0)
    return np.concatenate([x * a, a], axis=-1).astype(np.float32)


def drive(agent: Any, feedback: Sequence[tuple]) -> np.ndarray:
    """The agent's actions on the given rounds, learning from each."""
    actions = []
    for obs, r, nxt in feedback:
        a = agent.act(obs)
        agent.observe(obs, a, r, matching(agent, a, nxt))
        actions.append(np.array(a))
    return np.array(actions)


def state(agent: Any) -> dict[str, Any]:
    """The agent's whole state, generators and mechanisms included, last report aside."""
    return {k: v for k, v in vars(agent).items() if k != "last_report"}


def same(x: Any, y: Any, seen: dict | None = None) -> bool:
    """Bitwise equality of two object graphs: arrays by bytes, generators by their state."""
    seen = {} if seen is None else seen
    if (id(x), id(y)) in seen:  # cycles; the pair is kept alive so that ids are not reused
        return True
    seen[id(x), id(y)] = (x, y)
    if type(x) is not type(y):
        return False
    if isinstance(x, (np.ndarray, np.generic)):
        return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
    if isinstance(x, np.random.Generator):
        return same(x.bit_generator.state, y.bit_generator.state, seen)
    if isinstance(x, np.random.SeedSequence):
        return (x.entropy, x.spawn_key, x.n_children_spawned) == \
            (y.entropy, y.spawn_key, y.n_children_spawned)
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k], seen) for k in x)
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(same(u, v, seen) for u, v in zip(x, y))
    if isinstance(x, float):
        return np.float64(x).tobytes() == np.float64(y).tobytes()
    if hasattr(x, "__dict__") and not isinstance(x, (type, types.FunctionType, types.MethodType)):
        return same(vars(x), vars(y), seen)
    return bool(x is y or x == y)


def arrays(agent: Any) -> dict[str, np.ndarray]:
    """The agent's array attributes: its statistics."""
    return {k: v for k, v in vars(agent).items() if isinstance(v, np.ndarray)}


def _global_numpy_state() -> Any:
    return np.random.get_state()  # noqa: NPY002 - read to prove it untouched


def _same_global_state(a: Any, b: Any) -> bool:
    return all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y for x, y in zip(a, b))


# ----------------------------------------------------------------------------- the checks


def check_valid_actions(cls: type, params: dict, env_id: str) -> None:
    """Actions lie in the action space, and nothing touches the global numpy state.

    On the single path an action is a Python int; the batched path plays batches of 7."""
    before = _global_numpy_state()
    env, agent = single(cls, params, env_id)
    actions = play(env, agent)
    space = env.action_space
    probes = [agent.act(obs) for obs, *_ in rounds(env.observation_space, None, 2)]
    if isinstance(space, spaces.Discrete):
        _require(all(type(a) is int for a in probes), "single-run act must return a Python int")
        _require(all(space.contains(int(a)) for a in actions), "an action outside the space")
    else:
        _require(all(type(a) is np.ndarray and a.dtype == space.dtype for a in probes),
                 f"single-run act must return an array of dtype {space.dtype}")
        _require(all(space.contains(a) for a in list(actions) + probes),
                 "an action outside the space")
    venv, batched = vector(cls, params, env_id, 7)
    actions = play(venv, batched)
    _require(actions.shape == (ROUNDS, 7) + space.shape
             and all(venv.action_space.contains(a) for a in actions),
             "batched actions must be (7,) + the space's shape, inside the space")
    _require(_same_global_state(before, _global_numpy_state()),
             "the agent used the global numpy random state")


def check_seeded_reproducibility(cls: type, params: dict, env_id: str) -> None:
    """Two agents of one seed play the same actions; a seeded reset replays them."""
    env, a1 = single(cls, params, env_id, seed=5)
    env2, a2 = single(cls, params, env_id, seed=5)
    first = play(env, a1)
    _require(np.array_equal(first, play(env2, a2)), "the same seed gave other actions")
    a1.reset(seed=5)
    _require(getattr(a1, "last_report", None) is None, "reset must forget the last report")
    _require(np.array_equal(play(env, a1), first), "a seeded reset did not replay the actions")


def check_batch_of_one(cls: type, params: dict, env_id: str) -> None:
    """Same code, same numbers: a batch of one is the single agent with a batch dimension."""
    env, one = single(cls, params, env_id, seed=9)
    _, batched = vector(cls, params, env_id, 1, seed=9)
    for obs, r, nxt in rounds(env.observation_space, None, ROUNDS):
        a = one.act(obs)
        b = batched.act(obs[None])
        _require(b.shape == (1,) + one.action_space.shape and np.array_equal(a, b[0]),
                 "a batch of one chose another action than the single agent")
        nxt = matching(one, a, nxt)
        one.observe(obs, a, r, nxt)
        batched.observe(obs[None], b, np.array([r]), nxt[None])
    mine, theirs = arrays(one), arrays(batched)
    _require(mine.keys() == theirs.keys() and all(np.array_equal(mine[k], theirs[k]) for k in mine),
             "a batch of one learned other statistics than the single agent")


def check_pickle_and_copy(cls: type, params: dict, env_id: str) -> None:
    """Pickled and deep-copied agents continue bitwise as the original."""
    venv, agent = vector(cls, params, env_id, 3, seed=4)
    feedback = rounds(venv.single_observation_space, 3, 2 * ROUNDS, seed=1)
    drive(agent, feedback[:ROUNDS])
    clones = [pickle.loads(pickle.dumps(agent)), copy.deepcopy(agent)]
    ref = drive(agent, feedback[ROUNDS:])
    for clone in clones:
        _require(np.array_equal(drive(clone, feedback[ROUNDS:]), ref)
                 and same(state(clone), state(agent)),
                 "a pickled or copied agent does not continue as the original")


def check_no_aliasing(cls: type, params: dict, env_id: str) -> None:
    """Public state is read-only; scribbling over returned actions, reports, the public state's
    dict and the inputs after the call changes nothing: the agent continues as its twin."""
    venv, a = vector(cls, params, env_id, 3, seed=2)
    _, b = vector(cls, params, env_id, 3, seed=2)
    space = venv.single_action_space
    for obs, r, nxt in rounds(venv.single_observation_space, 3, ROUNDS, seed=3):
        act_a, act_b = a.act(obs.copy()), b.act(obs)
        _require(np.array_equal(act_a, act_b), "twin agents chose differently (does the agent "
                 "hand out its own arrays, e.g. return a state array from _act?)")
        nxt = matching(a, act_b, nxt)
        obs_a, r_a, nxt_a = obs.copy(), r.copy(), nxt.copy()
        sent = act_a.copy()
        act_a[...] = (act_a + 1) % space.n if isinstance(space, spaces.Discrete) else 0
        a.observe(obs_a, sent, r_a, nxt_a)
        b.observe(obs, act_b, r, nxt)
        for x in (sent, obs_a, r_a, nxt_a):
            x[...] = 0
        if hasattr(a, "public_state"):
            for v in (a.last_report or {}).values():
                v[...] = 0
            public = a.public_state()
            for v in public.values():
                _require(not v.flags.writeable, "public_state must be read-only")
                try:
                    v.flags.writeable = True
                except ValueError:
                    pass
                else:
                    raise AgentCheckError("public_state can be made writeable again")
            public.clear()
    _require(same(state(a), state(b)), "writing into returned or given arrays changed the agent "
             "(does it hand out its own arrays, e.g. return a state array from _act?)")


def check_reports_pass_the_server(cls: type, params: dict, env_id: str) -> None:
    """A local-DP agent's server accepts its own users' reports: ``update(local_report(...))``
    over real rounds.

    Each report is checked against ``report_schema``. There is nothing to check for other
    agents."""
    venv, agent = vector(cls, params, env_id, 3, seed=6)
    if not callable(getattr(agent, "report_schema", None)):
        return
    obs = start(venv, agent, seed=6)
    for _ in range(5):
        action = agent.act(obs)
        nxt, reward, *_ = venv.step(action)
        report = agent.local_report(obs, action, reward, nxt, agent.public_state())
        try:
            agent.update(report)
        except (TypeError, ValueError) as exc:
            raise AgentCheckError(f"the server refuses its own users' report ({exc}): "
                                  f"report_schema does not describe what local_report "
                                  f"sends") from None
        obs = nxt


def check_least_authority(cls: type, params: dict, env_id: str) -> None:
    """After ``from_env``, single and batched, nothing in the agent refers to an env, its
    core or an array of theirs: the agent holds what it may read as its own data."""
    for env, agent in (single(cls, params, env_id), vector(cls, params, env_id, 2)):
        found = _reachable_env_parts(agent, env)
        _require(not found, f"the agent holds parts of the env: {found[:3]}")


def _env_parts(env: Any) -> tuple[set[int], set[int]]:
    """The ids of the env, its wrappers and its core, and of the base arrays of the env's
    and the core's arrays."""
    raw = env.unwrapped
    core = getattr(raw, "core", None)
    forbidden = {id(env), id(raw)} | ({id(core)} if core is not None else set())
    wrapper = env
    while hasattr(wrapper, "env"):
        forbidden.add(id(wrapper))
        wrapper = wrapper.env
    roots = {id(_base_array(v)) for owner in (raw, core) if owner is not None
             for v in vars(owner).values() if isinstance(v, np.ndarray)}
    return forbidden, roots


def _base_array(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _children(x: Any, path: str) -> list[tuple[Any, str]]:
    """What an object refers to, with the paths to it.

    It follows containers, bound methods and attributes, and nothing of classes, modules and
    functions."""
    if isinstance(x, dict):
        return [(v, f"{path}[{k!r}]") for k, v in x.items()]
    if isinstance(x, (list, tuple, set, frozenset)):
        return [(v, f"{path}[{i}]") for i, v in enumerate(x)]
    if isinstance(x, types.MethodType):
        return [(x.__self__, f"{path}.__self__")]
    if isinstance(x, (type, types.ModuleType, types.FunctionType, np.ndarray)):
        return []
    return [(v, f"{path}.{k}") for k, v in _attributes(x)]


def _reachable_env_parts(agent: Any, env: Any) -> list[str]:
    """Paths from the agent's attributes to the env or a wrapper, its core, or an array
    of the env or its core.

    An array is found by identity, or as a view of one."""
    forbidden, roots = _env_parts(env)
    found: list[str] = []
    seen: set[int] = set()
    stack = [(agent, type(agent).__name__)]
    while stack and len(found) <= 10:
        x, path = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if id(x) in forbidden or (isinstance(x, np.ndarray) and id(_base_array(x)) in roots):
            found.append(path)
            continue
        stack.extend(_children(x, path))
    return found


def _attributes(x: Any) -> list[tuple[str, Any]]:
    """An object's attributes: its ``__dict__`` and its ``__slots__`` along the MRO."""
    items = list(vars(x).items()) if hasattr(x, "__dict__") else []
    for klass in type(x).__mro__:
        for name in getattr(klass, "__slots__", ()):
            if hasattr(x, name):
                items.append((name, getattr(x, name)))
    return items


def check_unsupported_spaces(cls: type) -> None:
    """``from_env`` refuses action spaces the agent does not support, with one line naming
    the agent and the space."""
    for space in (spaces.MultiBinary(4), spaces.Box(0.0, 1.0, (2,)),
                  spaces.MultiDiscrete([2, 3]), spaces.Discrete(5, start=1)):
        if isinstance(space, cls.supported_action_spaces) and not (  # type: ignore[attr-defined]
                isinstance(space, spaces.Discrete) and space.start != 0):
            continue
        env = _SpaceEnv(space)
        try:
            cls.from_env(env, **cls.test_params)  # type: ignore[attr-defined]
        except ValueError as exc:
            msg = str(exc)
            _require("\n" not in msg and str(space) in msg,
                     f"the refusal of {space} must be one line naming it, got {msg!r}")
        else:
            raise AgentCheckError(f"from_env accepted the unsupported action space {space}")


class _SpaceEnv(gym.Env):
    """A stand-in env with a given action space."""

    observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)

    def __init__(self, action_space: spaces.Space):
        self.action_space = action_space


def check_parameter_validation(cls: type) -> None:
    """Same bad value, same error everywhere, each naming the parameter.

    Wrong types raise TypeError, e.g. bools and floats where integers are needed. Wrong values
    raise ValueError."""
    cases = [("n_arms", 0, ValueError), ("n_arms", 2.5, TypeError), ("n_arms", True, TypeError),
             ("horizon", 0, ValueError), ("horizon", 1.5, TypeError),
             ("num_envs", 0, ValueError), ("num_envs", True, TypeError),
             ("secure", "yes", TypeError)]
    for param, bad, error in cases:
        kwargs = dict(n_arms=3, horizon=100, **cls.test_params)  # type: ignore[attr-defined]
        kwargs[param] = bad
        try:
            cls(**kwargs)
        except error as exc:
            _require(param in str(exc), f"the {error.__name__} for {param}={bad!r} must name it")
        else:
            raise AgentCheckError(f"{param}={bad!r} was accepted")


#: the checks of one (class, parameters, env id), by name
CASE_CHECKS: dict[str, Callable[[type, dict, str], None]] = {
    "valid actions": check_valid_actions,
    "least authority": check_least_authority,
    "reports pass the server": check_reports_pass_the_server,
    "seeded reproducibility": check_seeded_reproducibility,
    "batch of one": check_batch_of_one,
    "pickle and copy": check_pickle_and_copy,
    "no aliasing": check_no_aliasing,
}
#: the checks of a class, by name
CLASS_CHECKS: dict[str, Callable[[type], None]] = {
    "unsupported action spaces": check_unsupported_spaces,
    "parameter validation": check_parameter_validation,
}


def supported_env_ids(cls: type, params: dict | None = None) -> list[str]:
    """The registered ids (``LDP*``) whose env the class's ``from_env`` accepts."""
    params = cls.test_params if params is None else params  # type: ignore[attr-defined]
    ids = []
    for env_id in (i for i in gym.registry if i.startswith("LDP")):
        try:
            single(cls, params, env_id)
        except ValueError:
            continue
        ids.append(env_id)
    return ids


def check_agent(agent_or_class: Any, env_ids: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """Run the agent contract on an agent class, or on an agent's class.

    Every check of :data:`CASE_CHECKS` runs with each parameter set of the class
    (``_unit_test_params()``, ``test_params`` first) on each env id, then the checks of
    :data:`CLASS_CHECKS` once.

    Args:
        agent_or_class: a subclass of :class:`~ldp_gym.agents.Agent`, or an instance. For an
            instance, its class is checked, with the class's test parameters.
        env_ids: registered ids to play on; default every ``LDP*`` id that ``from_env``
            accepts. At least one must be accepted.

    Returns:
        The checks passed, as ``(check, case)`` pairs.

    Raises:
        AgentCheckError: the first check that fails, or that the agent makes raise an
            error, named with its case.
        TypeError: not an agent class with ``from_env``.
    """
    cls = agent_or_class if isinstance(agent_or_class, type) else type(agent_or_class)
    if not callable(getattr(cls, "from_env", None)):
        raise TypeError(f"check_agent needs an Agent subclass (with from_env), got {cls!r}")
    passed = []
    for params in cls._unit_test_params():  # type: ignore[attr-defined]
        ids = list(env_ids) if env_ids is not None else supported_env_ids(cls, params)
        _require(ids, f"{cls.__name__}: from_env accepts no registered env id")
        for env_id in ids:
            case = f"{cls.__name__}({params}) on {env_id}"
            for name, check in CASE_CHECKS.items():
                _run_check(name, case, check, cls, params, env_id)
                passed.append((name, case))
    for name, class_check in CLASS_CHECKS.items():
        _run_check(name, cls.__name__, class_check, cls)
        passed.append((name, cls.__name__))
    return passed


def _run_check(name: str, case: str, check: Callable, *args: Any) -> None:
    """Run one check; any failure, an error the agent raised included, becomes one
    :class:`AgentCheckError` naming the check and the case."""
    try:
        check(*args)
    except Exception as exc:  # noqa: BLE001 - an agent that crashes a check fails it
        detail = str(exc) if isinstance(exc, AgentCheckError) else f"{type(exc).__name__}: {exc}"
        raise AgentCheckError(f"{name}: {case}: {detail}") from exc


# ----------------------------------------------------------------------------- privacy audit


@dataclasses.dataclass(frozen=True)
class AgentAudit:
    """The outcome of :func:`audit_agent`."""

    #: the split-sample test's result (:class:`~ldp_gym.wrappers.mechanisms.audit.AuditResult`)
    result: Any
    #: the epsilon the agent claims
    claimed: float
    #: whether the certified lower bound stays at or below the claim
    passed: bool

    @property
    def epsilon_lower(self) -> float:
        """The certified lower bound on the report's epsilon."""
        return float(self.result.epsilon_lower)


def audit_agent(agent_class: type, *, env_id: str | None = None, params: dict | None = None,
                neighbours: tuple[tuple, tuple] | None = None, n: int = 200_000,
                alpha: float = 1e-6, statistic: str | Callable = "projection") -> Any:
    """Audit a local-DP agent's user-side report, ``local_report``, statistically.

    Two neighbouring users' rounds are each reported by ``n`` users. By default these rounds
    have the same observation and action, and rewards at the two declared bounds. Every user
    has its own noise: an agent of ``num_envs = n``, freshly seeded per sample. The
    split-sample Clopper-Pearson test of :func:`~ldp_gym.wrappers.mechanisms.audit.audit` then
    certifies a lower bound on epsilon with confidence ``1 - alpha``. A correct agent's bound
    stays at or below its claimed epsilon; the false alarm rate is at most ``alpha``. A
    report that leaks the user's data gives a larger one.

    Args:
        agent_class: a :class:`~ldp_gym.agents.LocalDPAgent` subclass.
        env_id: the env to build it for; default its ``test_env``.
        params: constructor parameters; default its ``test_params``.
        neighbours: two single-user rounds ``(obs, action, reward, next_obs)``; default the
            env's first observation, action 0 and rewards ``lower`` and ``upper``.
        n: reports per side and per half of the test.
        alpha: the failure probability of the certified bound.
        statistic: as :func:`~ldp_gym.wrappers.mechanisms.audit.audit` takes it; the default projects
            each report on the difference of the two sides' mean reports.

    Returns:
        An :class:`AgentAudit`: the test's result, the claimed epsilon and whether the
        certified lower bound stays at or below it.
    """
    from ldp_gym.runner import make_vector_env
    from ldp_gym.wrappers.mechanisms.audit import audit

    if not callable(getattr(agent_class, "local_report", None)):
        raise TypeError(f"audit_agent needs a local-DP agent class (with local_report), got "
                        f"{agent_class!r}")
    env_id = env_id or agent_class.test_env  # type: ignore[attr-defined]
    params = dict(agent_class.test_params if params is None else params)  # type: ignore[attr-defined]
    seeds = iter(range(1, 1 << 62))

    def build(m: int) -> tuple[Any, Any]:
        venv = make_vector_env(env_id, m, 10)
        return venv, agent_class.from_env(venv, seed=next(seeds), **params)  # type: ignore[attr-defined]

    probe_env, probe = build(1)
    if neighbours is None:
        if not isinstance(probe.action_space, spaces.Discrete):
            raise ValueError("neighbours: give the two rounds for an agent whose actions are "
                             "not arms")
        obs = np.asarray(probe_env.reset(seed=0)[0][0])
        neighbours = ((obs, 0, probe.lower, obs), (obs, 0, probe.upper, obs))

    def sampler(round_: tuple) -> Callable[[int], np.ndarray]:
        obs, action, reward, nxt = round_

        def sample(m: int) -> np.ndarray:
            venv, agent = build(m)
            venv.reset(seed=0)
            obs_m, action_m, nxt_m = (np.repeat(np.asarray(x)[None], m, axis=0)
                                      for x in (obs, action, nxt))
            report = agent.local_report(obs_m, action_m, np.full(m, float(reward)), nxt_m,
                                        agent.public_state())
            return np.concatenate([np.asarray(v, dtype=np.float64).reshape(m, -1)
                                   for _, v in sorted(report.items())], axis=1)
        return sample

    result = audit(sampler(neighbours[0]), sampler(neighbours[1]), n=n, alpha=alpha,
                   delta=probe.privacy.delta, statistic=statistic)
    return AgentAudit(result, probe.privacy.epsilon, result.epsilon_lower <= probe.privacy.epsilon)
