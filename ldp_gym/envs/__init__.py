"""Bandit environments, one module per setting (DESIGN.md section 1)."""

from .base import BanditCore, BanditEnv, BanditVectorEnv
from .mab import AdversarialMABEnv, AdversarialMABVectorEnv, MABEnv, MABVectorEnv

__all__ = ["AdversarialMABEnv", "AdversarialMABVectorEnv", "BanditCore", "BanditEnv",
           "BanditVectorEnv", "MABEnv", "MABVectorEnv"]
