"""Registration of every environment id on ``import ldp_gym`` (Gymnasium 1.x has no plugins).

Each id has a single-env entry point and a native ``vector_entry_point``, so
``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``
steps N runs in numpy. Registration is guarded: re-importing never warns.
"""

from __future__ import annotations

import gymnasium as gym

_MAB = "ldp_gym.envs.mab:"
_GLM = "ldp_gym.envs.glm:"
_BCO = "ldp_gym.envs.bco:"
_NP = "ldp_gym.envs.nonparametric:"
_COMB = "ldp_gym.envs.combinatorial:"
_BAI = "ldp_gym.envs.best_arm:"

#: id -> (single env entry point, vector env entry point, max_episode_steps, default kwargs)
ENV_SPECS: dict[str, tuple[str, str, int, dict]] = {
    "LDPMAB-v0": (_MAB + "MABEnv", _MAB + "MABVectorEnv", 100_000, {}),
    "LDPAdversarialMAB-v0": (_MAB + "AdversarialMABEnv", _MAB + "AdversarialMABVectorEnv",
                             100_000, {}),
    "LDPLinearBandit-v0": (_GLM + "GLMEnv", _GLM + "GLMVectorEnv", 100_000,
                           {"link": "identity"}),
    "LDPGLMBandit-v0": (_GLM + "GLMEnv", _GLM + "GLMVectorEnv", 100_000, {"link": "logistic"}),
    "LDPMultiParamLinearBandit-v0": (_GLM + "MultiParamGLMEnv", _GLM + "MultiParamGLMVectorEnv",
                                     100_000, {"link": "identity"}),
    "LDPMultiParamGLMBandit-v0": (_GLM + "MultiParamGLMEnv", _GLM + "MultiParamGLMVectorEnv",
                                  100_000, {"link": "logistic"}),
    "LDPBCO-v0": (_BCO + "BCOEnv", _BCO + "BCOVectorEnv", 100_000, {}),
    "LDPMultiPointBCO-v0": (_BCO + "MultiPointBCOEnv", _BCO + "MultiPointBCOVectorEnv", 100_000,
                            {}),
    "LDPNonparametricBandit-v0": (_NP + "NonparametricEnv", _NP + "NonparametricVectorEnv", 100_000,
                                  {}),
    "LDPClassificationBandit-v0": (_NP + "ClassificationBanditEnv",
                                   _NP + "ClassificationBanditVectorEnv", 100_000, {}),
    "LDPCombinatorialBandit-v0": (_COMB + "CombinatorialEnv", _COMB + "CombinatorialVectorEnv",
                                  100_000, {}),
    # the horizon is the budget of a best-arm identification run: past it, a run did not stop
    "LDPBestArm-v0": (_BAI + "BestArmEnv", _BAI + "BestArmVectorEnv", 1_000_000, {}),
}


def register_envs() -> None:
    """Register every id of :data:`ENV_SPECS` that is not registered yet."""
    for env_id, (entry, vector_entry, steps, kwargs) in ENV_SPECS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry, vector_entry_point=vector_entry,
                         max_episode_steps=steps, kwargs=kwargs)
