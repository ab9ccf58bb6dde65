"""The algorithms of the five papers, one module per setting, one ``act``/``observe`` API.

``AGENTS`` maps every display name to its class; the CLI and the contract
test suite read it, so a new agent gets both by being listed here.
"""

from ldp_gym.wrappers.mechanisms.privacy import Privacy

from .base import (
    Agent,
    DistributedDPAgent,
    GlobalDPAgent,
    JointDPAgent,
    LocalDPAgent,
    ShuffleDPAgent,
    argmax_random,
)
from .bco import AGENTS as _BCO_AGENTS
from .bco import FKM, BCOAgent, HazanLevy, SahaTewari, TwoPointGD
from .best_arm import AGENTS as _BEST_ARM_AGENTS
from .best_arm import CTBTT, AdaPTT, BestArmAgent, DPSEBestArm, TopTwo
from .combinatorial import AGENTS as _COMBINATORIAL_AGENTS
from .combinatorial import CUCB, CUCBDP, CUCBLDP1, CUCBLDP2, CombinatorialAgent
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
from .joint import AGENTS as _JOINT_AGENTS
from .joint import JDPLinUCB
from .mab import AGENTS as _MAB_AGENTS
from .mab import (
    DPIMED,
    DPKLUCB,
    DPSE,
    DPUCB,
    KLUCB,
    LDPUCB,
    UCB1,
    AdaCUCB,
    AdaPKLUCB,
    AdaPUCB,
    DistDPSE,
    Exp3,
    ShuffleSE,
    ThompsonSampling,
    TsallisINF,
)
from .nonparametric import ABSE, LDPMAB, LDPMABAux, UniformRandom
from .nonparametric import AGENTS as _NONPARAMETRIC_AGENTS
from .shuffle_linear import AGENTS as _SHUFFLE_LINEAR_AGENTS
from .shuffle_linear import SDPLinUCB

AGENTS: dict[str, type[Agent]] = {**_MAB_AGENTS, **_GLM_AGENTS, **_JOINT_AGENTS,
                                  **_SHUFFLE_LINEAR_AGENTS, **_BCO_AGENTS,
                                  **_NONPARAMETRIC_AGENTS, **_COMBINATORIAL_AGENTS,
                                  **_BEST_ARM_AGENTS}

__all__ = ["ABSE", "AGENTS", "AdaCUCB", "AdaPKLUCB", "AdaPTT", "AdaPUCB", "Agent", "BCOAgent",
           "BestArmAgent", "CTBTT", "CUCB", "CUCBDP", "CUCBLDP1", "CUCBLDP2", "CombinatorialAgent",
           "DPIMED", "DPKLUCB", "DPSE", "DPSEBestArm", "DPUCB", "DistDPSE", "DistributedDPAgent",
           "Exp3", "FKM", "GLOC", "GlobalDPAgent", "GreedyOLS", "GreedySGD", "HazanLevy", "JDPLinUCB",
           "JointDPAgent", "KLUCB", "LDPGLOC", "LDPLinUCB", "LDPMAB", "LDPMABAux", "LDPMultiOLS",
           "LDPMultiSGD", "LDPOLS", "LDPSGD", "LDPUCB", "LinUCB", "LocalDPAgent", "Privacy",
           "SDPLinUCB", "SahaTewari", "ShuffleDPAgent", "ShuffleSE", "ThompsonSampling", "TopTwo",
           "TsallisINF", "TwoPointGD", "UCB1", "UniformRandom", "argmax_random"]
