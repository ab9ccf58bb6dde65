"""ldp_gym.experiments.compare: the planning behind ``ldp-gym run`` as a library function,
with typed errors naming the option."""

import pytest

from ldp_gym.agents import UCB1
from ldp_gym.experiments.compare import PlanError, compare, plan_comparison

SMALL = dict(horizon=100, n_runs=2, progress=False)


def test_private_agents_at_every_epsilon_and_plain_ones_behind_the_wrapper():
    plan = plan_comparison("LDPMAB-v0", ["AdaP-UCB", UCB1], epsilons=[0.5, 1.0],
                           wrapper="laplace", **SMALL)
    assert plan.n_agents == 4
    res = plan.run()
    assert sorted(res.agents) == ["AdaP-UCB eps=0.5", "AdaP-UCB eps=1", "UCB1 + laplace eps=0.5",
                                  "UCB1 + laplace eps=1"]


def test_compare_is_the_plan_run():
    a = compare("LDPMAB-v0", ["UCB1"], env_kwargs={"means": [0.2, 0.9]}, **SMALL)
    b = plan_comparison("LDPMAB-v0", ["ucb1"], env_kwargs={"means": [0.2, 0.9]}, **SMALL).run()
    assert a.agents == b.agents == ["UCB1"]
    assert (a.regret["UCB1"] == b.regret["UCB1"]).all()


@pytest.mark.parametrize("env,agents,options,option", [
    ("Nope-v0", ["UCB1"], {}, "env"),
    ("LDPMAB-v0", [], {}, "agents"),
    ("LDPMAB-v0", ["Foo"], {}, "agents"),
    ("LDPMAB-v0", ["no_such_module:X"], {}, "agents"),
    ("LDPMAB-v0", [42], {}, "agents"),
    ("LDPMAB-v0", ["LDP-OLS"], {}, "agents"),
    ("LDPMAB-v0", ["UCB1"], {"epsilons": [1.0]}, "epsilons"),
    ("LDPMAB-v0", ["AdaP-UCB"], {"wrapper": "laplace"}, "wrapper"),
    ("LDPMAB-v0", ["UCB1"], {"wrapper": "cauchy"}, "wrapper"),
    ("LDPMAB-v0", ["UCB1", "AdaP-UCB"], {"delta": 0.01}, "delta"),
    ("LDPMAB-v0", ["UCB1"], {"secure": True}, "secure"),
    ("LDPMAB-v0", ["UCB1"], {"env_kwargs": {"means": [0.5, 2.0]}}, "env_kwargs"),
])
def test_errors_name_the_option(env, agents, options, option):
    with pytest.raises(PlanError) as info:
        plan_comparison(env, agents, **options, **SMALL)
    assert info.value.option == option and str(info.value).startswith(option)
    assert str(info.value) == f"{option}{' ' + info.value.value if info.value.value else ''}: " \
        f"{info.value.detail}"
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("options,option", [
    ({"horizon": 0}, "horizon"), ({"horizon": 2.5}, "horizon"), ({"n_runs": 0}, "n_runs"),
    ({"seed": -1}, "seed"), ({"n_jobs": 0}, "n_jobs"), ({"n_jobs": -2}, "n_jobs"),
])
def test_the_run_sizes_are_checked_when_planning(options, option):
    with pytest.raises(PlanError) as info:
        plan_comparison("LDPMAB-v0", ["UCB1"], **{**SMALL, **options})
    assert info.value.option == option


def test_a_bad_epsilon_is_blamed_on_epsilons():
    with pytest.raises(PlanError) as info:
        plan_comparison("LDPMAB-v0", ["LDP-UCB"], epsilons=[-1.0], **SMALL)
    assert info.value.option == "epsilons"


def test_a_zcdp_agent_is_labelled_by_its_rho():
    """From the outside audit of 2026-11-26: AdaC-UCB's rows said "eps=1" for a rho-zCDP
    guarantee; the label now states the rho the epsilon gave."""
    plan = plan_comparison("LDPMAB-v0", ["AdaC-UCB", "Dist-DP-SE"], epsilons=[1.0], **SMALL)
    assert sorted(plan.run().agents) == ["AdaC-UCB rho=0.5 (from eps=1)", "Dist-DP-SE eps=1"]
