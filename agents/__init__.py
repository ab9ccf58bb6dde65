"""The algorithms of the five papers, one module per setting, one ``act``/``observe`` API.

``AGENTS`` maps every display name to its class; the CLI and the contract
test suite read it, so a new agent gets both by being listed here.
"""

from ldp_gym.wrappers.privacy import Privacy

from .base import Agent, GlobalDPAgent, LocalDPAgent, argmax_random
from .glm import AGENTS as _GLM_AGENTS
from .glm import (
    GLOC,
    LDPGLOC,
    LDPOLS,
    LDPSGD,
    GreedyOLS,
    GreedySGD,
    LDPLinUCB,
    LDPMultiOLS,
    LDPMultiSGD,
    LinUCB,
)
from .mab import AGENTS as _MAB_AGENTS
from .mab import (
    DPSE,
    DPUCB,
    KLUCB,
    LDPUCB,
    UCB1,
    AdaPKLUCB,
    AdaPUCB,
    Exp3,
    ThompsonSampling,
    TsallisINF,
)

AGENTS: dict[str, type[Agent]] = {**_MAB_AGENTS, **_GLM_AGENTS}

__all__ = ["AGENTS", "DPSE", "DPUCB", "GLOC", "KLUCB", "LDPGLOC", "LDPOLS", "LDPSGD", "LDPUCB", "UCB1",
           "AdaPKLUCB", "AdaPUCB", "Agent", "Exp3", "GlobalDPAgent", "GreedyOLS", "GreedySGD",
           "LDPLinUCB", "LDPMultiOLS", "LDPMultiSGD", "LinUCB", "LocalDPAgent", "Privacy",
           "ThompsonSampling", "TsallisINF", "argmax_random"]
