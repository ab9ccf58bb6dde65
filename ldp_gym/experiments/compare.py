"""Compare agents on one environment, privately or not: the planning behind ``ldp-gym run``,
as a function that notebooks call too.

:func:`plan_comparison` checks that the options fit together and builds the calls of
:func:`ldp_gym.run`, before any work. Private agents run at every epsilon. The
(epsilon, delta)-DP ones also run at the given ``delta``, if any. Non-private agents run as they
are, or behind a reward privacy wrapper at every epsilon. :func:`compare` runs the plan and
merges the results.

Example:
    >>> from ldp_gym.experiments.compare import compare
    >>> res = compare("LDPMAB-v0", ["UCB1", "LDP-UCB"], epsilons=[1.0], horizon=200,
    ...               n_runs=2, progress=False)
    >>> res.agents
    ['LDP-UCB eps=1', 'UCB1']
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Sequence
from typing import Any

__all__ = ["Plan", "PlanError", "WRAPPER_DELTA", "compare", "is_private", "plan_comparison",
           "resolve_agent"]

#: the delta of the Gaussian reward wrapper when none is given
WRAPPER_DELTA = 1e-5


class PlanError(ValueError):
    """Options of a comparison that do not fit together, or a bad one.

    ``option`` names the parameter: ``env``, ``env_kwargs``, ``agents``, ``epsilons``,
    ``wrapper``, ``delta``, ``secure``, ``horizon``, ``n_runs``, ``seed`` or ``n_jobs``.
    ``value`` is the value in question where it helps, such as the wrapper's name. ``detail``
    says what is wrong."""

    def __init__(self, option: str, detail: str, value: str = ""):
        super().__init__(f"{option}{' ' + value if value else ''}: {detail}")
        self.option, self.detail, self.value = option, detail, value


def resolve_agent(agent: Any) -> type:
    """An agent class from a class, a registered name or ``"module:Class"``, which is imported.

    A registered name is one of ``ldp_gym.agents.AGENTS``, in any case.

    Raises:
        PlanError: an unknown name, a module that does not import, or not an agent class.
    """
    from ldp_gym.agents import AGENTS

    if isinstance(agent, type):
        cls: Any = agent
    elif isinstance(agent, str) and ":" in agent:
        module_name, _, attr = agent.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - not found, or broken (a syntax error, ...)
            raise PlanError("agents", f"cannot import {module_name!r} "
                                      f"({type(exc).__name__}: {exc})") from None
        if not hasattr(module, attr):
            raise PlanError("agents", f"module {module_name!r} has no {attr!r}")
        cls = getattr(module, attr)
    elif isinstance(agent, str):
        by_lower = {k.lower(): v for k, v in AGENTS.items()}
        if agent.lower() not in by_lower:
            raise PlanError("agents", f"unknown agent {agent!r}; `ldp-gym list` shows them, and "
                                      f"your own classes are given as module:Class")
        cls = by_lower[agent.lower()]
    else:
        raise PlanError("agents", f"an agent is a class, a name or 'module:Class', got "
                                  f"{type(agent).__name__}")
    if not (isinstance(cls, type) and callable(getattr(cls, "from_env", None))):
        raise PlanError("agents", f"{agent!r} is not an agent class (a subclass of "
                                  f"ldp_gym.agents.Agent, with from_env)")
    return cls


def _label(cls: type) -> str:
    return getattr(cls, "name", cls.__name__)


def is_private(cls: type) -> bool:
    """Whether an agent class gives a privacy guarantee: local, shuffle, distributed or global
    DP."""
    from ldp_gym.agents.base import trust_model

    return trust_model(cls) is not None


def _check_numbers(horizon: Any, n_runs: Any, seed: Any, n_jobs: Any, epsilons: Any) -> None:
    """The run's sizes and the budgets, each refused by the option's name."""
    from ldp_gym.validation import check_epsilon, check_int

    for option, value, low in (("horizon", horizon, 1), ("n_runs", n_runs, 1), ("seed", seed, 0),
                               ("n_jobs", n_jobs, -1)):
        try:
            check_int(option, value, low=low)
        except (TypeError, ValueError) as exc:
            raise PlanError(option, str(exc)) from None
    if n_jobs == 0:
        raise PlanError("n_jobs", "n_jobs must be -1 (every core) or >= 1, got 0")
    for eps in epsilons or ():
        try:
            check_epsilon(eps)
        except (TypeError, ValueError) as exc:
            raise PlanError("epsilons", str(exc)) from None


def _sorted_agents(agents: Sequence[Any]) -> tuple[dict[str, type], dict[str, type]]:
    """The agents resolved (:func:`resolve_agent`) and sorted into private and plain ones."""
    if not agents:
        raise PlanError("agents", "no agent given")
    classes = {(a if isinstance(a, str) else _label(resolve_agent(a))): resolve_agent(a)
               for a in agents}
    private = {k: c for k, c in classes.items() if is_private(c)}
    return private, {k: c for k, c in classes.items() if k not in private}


def _check_options(private: dict, plain: dict, epsilons: Any, wrapper: Any, secure: bool) -> bool:
    """Refuse the options nothing uses; whether the plain agents run behind the wrapper."""
    if wrapper not in (None, "laplace", "gaussian"):
        raise PlanError("wrapper", f"one of None, 'laplace' or 'gaussian', got {wrapper!r}")
    if wrapper is not None and not plain:
        raise PlanError("wrapper", "every agent is private already (the wrapper privatises the "
                                   "rewards of non-private agents)", str(wrapper))
    wrapped = bool(plain) and wrapper is not None
    if epsilons is not None and not private and not wrapped:
        raise PlanError("epsilons", "no agent is private and no wrapper is given, so nothing "
                                    "uses them")
    if secure and not private and not wrapped:
        raise PlanError("secure", "no agent or wrapper draws privacy noise (give a private "
                                  "agent or a wrapper)")
    return wrapped


@dataclasses.dataclass(frozen=True)
class Plan:
    """The calls of :func:`ldp_gym.run` of a comparison, as their keyword arguments."""

    tasks: tuple[dict[str, Any], ...]

    @property
    def n_agents(self) -> int:
        """The number of agent curves the comparison records."""
        return sum(len(t["agents"]) for t in self.tasks)

    def run(self) -> Any:
        """Run every call and merge the results (:class:`~ldp_gym.results.Results`)."""
        import ldp_gym

        results = [ldp_gym.run(**task) for task in self.tasks]
        merged = results[0]
        for res in results[1:]:
            merged = merged.merge(res)
        return merged


def plan_comparison(env: str, agents: Sequence[Any], *, epsilons: Sequence[float] | None = None,
                    wrapper: str | None = None, delta: float | None = None,
                    horizon: int = 10_000, n_runs: int = 10, seed: int = 0, n_jobs: int = 1,
                    secure: bool = False, env_kwargs: dict | None = None,
                    progress: bool | None = None, risk: float | None = None) -> Plan:
    """Check a comparison's options and build its calls of :func:`ldp_gym.run`, before any
    work.

    Every agent is built once for the env, which checks its parameters. An option that nothing
    uses is an error, not silently ignored.

    Args:
        env: a registered env id.
        agents: agent classes, registered names or ``"module:Class"`` strings.
        epsilons: the budgets of the private agents and of the wrapper (default ``[1.0]``).
        wrapper: ``None``, ``"laplace"`` or ``"gaussian"``: the reward privacy wrapper the
            non-private agents run behind, at every epsilon.
        delta: the delta of the (epsilon, delta)-DP agents and of the Gaussian wrapper. By
            default, the agents' own, and :data:`WRAPPER_DELTA` for the wrapper.
        horizon: as :func:`ldp_gym.run`.
        n_runs: as :func:`ldp_gym.run`.
        seed: as :func:`ldp_gym.run`.
        n_jobs: as :func:`ldp_gym.run`.
        secure: as :func:`ldp_gym.run`.
        progress: as :func:`ldp_gym.run`.
        env_kwargs: the env's keyword arguments.
        risk: the confidence delta of the best-arm identification agents (default their
            own, 0.1).

    Returns:
        The :class:`Plan`.

    Raises:
        PlanError: naming the option (``PlanError.option``) that is bad or unused.
    """
    import ldp_gym
    from ldp_gym.wrappers.reward import VectorGaussianReward, VectorLaplaceReward

    if env not in ldp_gym.ENV_SPECS:
        raise PlanError("env", f"{env!r} is unknown; `ldp-gym list` shows the ids")
    _check_numbers(horizon, n_runs, seed, n_jobs, epsilons)
    private, plain = _sorted_agents(agents)
    wrapped = _check_options(private, plain, epsilons, wrapper, secure)
    env_kwargs = dict(env_kwargs or {})
    try:
        probe = ldp_gym.make_vector_env(env, 1, horizon, **env_kwargs)
    except (ValueError, TypeError) as exc:
        raise PlanError("env_kwargs", str(exc)) from None

    def build(cls: Any, **kw: Any) -> Any:  # every agent's parameters, checked before any work
        try:
            return cls.from_env(probe, secure=secure, **kw)
        except (ValueError, TypeError) as exc:
            raise PlanError("agents", f"{_label(cls)}: {exc}") from None

    eps_list = list(epsilons or [1.0])
    approximate = {name for name, cls in private.items()
                   if (getattr(build(cls, epsilon=eps_list[0]), "delta", 0.0) or 0.0) > 0}
    if delta is not None and not approximate and not (wrapped and wrapper == "gaussian"):
        raise PlanError("delta", "nothing uses it (no (epsilon, delta)-DP agent and no Gaussian "
                                 "wrapper)")
    def takes_risk(cls: Any) -> bool:  # the best-arm identification agents
        return risk is not None and "risk" in inspect.signature(cls).parameters

    if risk is not None and not any(takes_risk(c) for c in (*private.values(), *plain.values())):
        raise PlanError("risk", "nothing uses it (no best-arm identification agent)")
    common = dict(env=env, env_kwargs=env_kwargs, horizon=horizon, n_runs=n_runs, seed=seed,
                  progress=progress, n_jobs=n_jobs, secure=secure)
    tasks: list[dict[str, Any]] = []
    lower, upper = probe.unwrapped.core.bounded_rewards or (0.0, 1.0)
    for eps in eps_list:
        runs = {}
        for name, cls in private.items():
            params: dict[str, Any] = {"epsilon": eps,
                                      **({"delta": delta} if name in approximate and
                                         delta is not None else {}),
                                      **({"risk": risk} if takes_risk(cls) else {})}
            rho = build(cls, **params).privacy.rho  # a zCDP agent's label states its rho
            budget = f"eps={eps:g}" if rho is None else f"rho={rho:g} (from eps={eps:g})"
            runs[f"{_label(cls)} {budget}"] = (cls, params)
        if runs:
            tasks.append(dict(common, agents=runs))
        if wrapped:
            # rewards are clipped to the bounds the setting declares (BCO: [-B, B]), else [0, 1]
            kwargs: dict[str, Any] = {"epsilon": eps, "lower": lower, "upper": upper}
            spec: tuple[Any, dict[str, Any]] = (VectorLaplaceReward, kwargs) \
                if wrapper == "laplace" else (VectorGaussianReward, dict(
                    kwargs, delta=WRAPPER_DELTA if delta is None else delta))
            try:
                spec[0](probe, **spec[1])
            except (ValueError, TypeError) as exc:
                raise PlanError("wrapper", str(exc), str(wrapper)) from None
            tasks.append(dict(common, wrappers=[spec], agents={
                f"{_label(c)} + {wrapper} eps={eps:g}": c for c in plain.values()}))
    if plain and not wrapped:
        tasks.append(dict(common, agents={_label(c): (c, {"risk": risk}) if takes_risk(c) else c
                                          for c in plain.values()}))
    return Plan(tuple(tasks))


def compare(env: str, agents: Sequence[Any], **options: Any) -> Any:
    """Run a comparison: :func:`plan_comparison` with the same arguments, then every call of
    :func:`ldp_gym.run`, merged into one :class:`~ldp_gym.results.Results`.

    Raises:
        PlanError: naming the option that is bad or unused, before any work.
    """
    return plan_comparison(env, agents, **options).run()
