"""Solutions of lab_mab_local_vs_global.ipynb: each ``# Exercise N`` block replaces that cell."""
import numpy as np


# Exercise 1
def local_report(rewards, epsilon, rng):
    """The messages of users with these rewards: clip to [0, 1], add Lap(1/epsilon)."""
    rewards = np.clip(np.asarray(rewards, dtype=np.float64), 0.0, 1.0)
    return rewards + rng.laplace(0.0, 1.0 / epsilon, size=rewards.shape)


# Exercise 2
def episode_release(episode_sum, n, epsilon, rng):
    """The released means of episodes of n rewards summing to episode_sum (an array)."""
    mean = np.asarray(episode_sum, dtype=np.float64) / n
    return mean + rng.laplace(0.0, 1.0 / (epsilon * n), size=mean.shape)
