"""Solutions of lab_own_private_agent.ipynb: each ``# Exercise N`` block replaces that cell."""
import numpy as np

from ldp_gym.agents import LocalDPAgent
from ldp_gym.agents.base import readonly
from ldp_gym.validation import Part
from ldp_gym.wrappers.mechanisms import LaplaceMechanism


# Exercise 1
class PrivateGreedy(LocalDPAgent):
    """Greedy on the noisy means; each user's reward is epsilon-LDP."""

    name, test_params = "private-greedy", {"epsilon": 1.0}

    def __init__(self, n_arms, *, epsilon, **kwargs):
        self.declare_privacy("local", epsilon, 0.0, "reward", 0.0, 1.0)
        super().__init__(n_arms, **kwargs)

    def _init_state(self, n):
        self.counts, self.sums = np.zeros((n, self.n_arms)), np.zeros((n, self.n_arms))
        self.mechanism = LaplaceMechanism(self.epsilon, 0.0, 1.0, **self.noise_source())

    def _act(self, obs):
        return self.public_state()["means"].argmax(axis=1)

    def public_state(self):
        return readonly(means=np.where(self.counts > 0, self.sums / np.maximum(self.counts, 1), 1.0))

    def _report(self, obs, actions, rewards, next_obs, public_state):
        return {"arm": actions.astype(np.int64), "reward": self.mechanism(rewards)}

    def report_schema(self):
        return {"arm": Part((self._n,), "int", 0, self.n_arms - 1),
                "reward": Part((self._n,), bound=self.mechanism.release_bound())}

    def _fold(self, report):
        self.counts[self._rows, report["arm"]] += 1
        self.sums[self._rows, report["arm"]] += report["reward"]


# Exercise 2
class Leaky(PrivateGreedy):
    """A broken copy: its report leaks more than epsilon."""

    def _report(self, obs, actions, rewards, next_obs, public_state):
        noise = self.mechanism.rng.laplace(0.0, 0.5 / self.epsilon, size=np.shape(rewards))
        return {"arm": actions.astype(np.int64), "reward": np.clip(rewards, 0.0, 1.0) + noise}
