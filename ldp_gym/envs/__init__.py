"""Bandit environments, one module per setting."""

from .base import BanditCore, BanditEnv, BanditVectorEnv
from .bco import BCOEnv, BCOVectorEnv, MultiPointBCOEnv, MultiPointBCOVectorEnv
from .best_arm import BestArmEnv, BestArmVectorEnv
from .combinatorial import CombinatorialEnv, CombinatorialVectorEnv
from .glm import GLMEnv, GLMVectorEnv, MultiParamGLMEnv, MultiParamGLMVectorEnv
from .mab import AdversarialMABEnv, AdversarialMABVectorEnv, MABEnv, MABVectorEnv
from .nonparametric import (
    ClassificationBanditEnv,
    ClassificationBanditVectorEnv,
    NonparametricEnv,
    NonparametricVectorEnv,
)

__all__ = ["AdversarialMABEnv", "AdversarialMABVectorEnv", "BCOEnv", "BCOVectorEnv", "BanditCore",
           "BanditEnv", "BanditVectorEnv", "BestArmEnv", "BestArmVectorEnv", "ClassificationBanditEnv",
           "ClassificationBanditVectorEnv", "CombinatorialEnv", "CombinatorialVectorEnv", "GLMEnv",
           "GLMVectorEnv", "MABEnv", "MABVectorEnv", "MultiParamGLMEnv", "MultiParamGLMVectorEnv",
           "MultiPointBCOEnv", "MultiPointBCOVectorEnv", "NonparametricEnv", "NonparametricVectorEnv"]
