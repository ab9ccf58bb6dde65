"""The public contract checks (``ldp_gym.checks``): they pass the built-in agents and reject
deliberately broken ones; the privacy audit of a local-DP agent flags a leaking mutant."""

import numpy as np
import pytest

from ldp_gym.agents import LDPUCB, UCB1, Agent
from ldp_gym.checks import AgentCheckError, audit_agent, check_agent

MAB = ["LDPMAB-v0"]


def test_a_builtin_agent_passes_every_check():
    passed = check_agent(UCB1, env_ids=MAB)
    assert {name for name, _ in passed} >= {"valid actions", "seeded reproducibility",
                                            "batch of one", "pickle and copy", "no aliasing",
                                            "least authority", "parameter validation",
                                            "unsupported action spaces"}
    assert check_agent(UCB1(3), env_ids=MAB) == passed  # an instance: its class


class OffByOne(UCB1):
    """Broken: plays arm K now and then."""

    name = "off-by-one"

    def _act(self, obs):
        actions = super()._act(obs)
        return np.where(self.rng.random(actions.shape) < 0.3, self.n_arms, actions)


class GlobalRandom(UCB1):
    """Broken: breaks ties with the global numpy generator."""

    name = "global-random"

    def _act(self, obs):
        np.random.random()  # noqa: NPY002 - the defect under test
        return super()._act(obs)


class HoldsTheEnv(UCB1):
    """Broken: keeps the env's core (which knows the arms' means)."""

    name = "holds-the-env"

    @classmethod
    def from_env(cls, env, **kwargs):
        agent = super().from_env(env, **kwargs)
        agent.core = env.unwrapped.core
        return agent


class Unseeded(UCB1):
    """Broken: its generator ignores the seed."""

    name = "unseeded"

    def _fresh_streams(self):
        super()._fresh_streams()
        self.rng = np.random.default_rng()


@pytest.mark.parametrize("broken,check", [(OffByOne, "valid actions"),
                                          (GlobalRandom, "valid actions"),
                                          (Unseeded, "seeded reproducibility"),
                                          (HoldsTheEnv, "least authority")])
def test_broken_agents_are_rejected(broken, check):
    with pytest.raises(AgentCheckError, match=check):
        check_agent(broken, env_ids=MAB)


def test_a_missing_method_is_named_at_construction():
    class NoObserve(Agent):
        def _init_state(self, n):
            pass

        def _act(self, obs):
            return np.zeros(obs.shape[0], np.int64)

    with pytest.raises(TypeError, match="_observe"):
        NoObserve(3)
    with pytest.raises(TypeError, match="from_env"):
        check_agent(object)


class Leaky(LDPUCB):
    """Mutant: the report carries a share of the raw reward."""

    def _report(self, obs, actions, rewards, next_obs, public_state):
        msg = super()._report(obs, actions, rewards, next_obs, public_state)
        return {**msg, "reward": msg["reward"] + 0.5 * rewards}


@pytest.mark.audit
def test_audit_agent_passes_ldp_ucb_and_flags_a_leak():
    """False alarm rate 1e-6 (alpha) for the correct agent."""
    ok = audit_agent(LDPUCB, n=100_000)
    assert ok.passed and ok.claimed == 1.0 and ok.epsilon_lower <= 1.0
    bad = audit_agent(Leaky, n=100_000)
    assert not bad.passed and bad.epsilon_lower > 1.0
    with pytest.raises(TypeError, match="local_report"):
        audit_agent(UCB1)


class WrongSchema(LDPUCB):
    """Broken: its schema leaves out a part its users send."""

    def report_schema(self):
        schema = super().report_schema()
        del schema["reward"]
        return schema


def test_a_report_its_own_server_refuses_is_caught():
    with pytest.raises(AgentCheckError, match="reports pass the server"):
        check_agent(WrongSchema, env_ids=MAB)
