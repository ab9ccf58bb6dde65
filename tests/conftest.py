"""Fixtures shared by the test modules."""

import gymnasium as gym
import pytest


def _pull(env_id, space):
    """A random action of ``space``; in best-arm identification a pull, since a
    recommendation (the upper half of the actions) ends the episode."""
    a = space.sample()
    if "BestArm" not in env_id:
        return a
    return a % (space.n // 2 if isinstance(space, gym.spaces.Discrete) else space.nvec // 2)


@pytest.fixture
def pull():
    """:func:`_pull`: a random action that does not end a best-arm identification run."""
    return _pull
