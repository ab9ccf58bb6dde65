"""Registration of every environment id on ``import ldp_gym`` (Gymnasium 1.x has no plugins).

Each id has a single-env entry point and a native ``vector_entry_point``, so
``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``
steps N runs in numpy. Registration is guarded: re-importing never warns.
"""

from __future__ import annotations

import gymnasium as gym

#: id -> (module:class of the single env, module:class of the vector env, max_episode_steps)
ENV_SPECS: dict[str, tuple[str, str, int]] = {
    "LDPMAB-v0": ("ldp_gym.envs.mab:MABEnv", "ldp_gym.envs.mab:MABVectorEnv", 100_000),
    "LDPAdversarialMAB-v0": ("ldp_gym.envs.mab:AdversarialMABEnv",
                             "ldp_gym.envs.mab:AdversarialMABVectorEnv", 100_000),
}


def register_envs() -> None:
    """Register every id of :data:`ENV_SPECS` that is not registered yet."""
    for env_id, (entry, vector_entry, steps) in ENV_SPECS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry, vector_entry_point=vector_entry,
                         max_episode_steps=steps)
