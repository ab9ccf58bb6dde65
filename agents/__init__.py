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
                                  **_NONPARAMETRIC_AGENTS, **_COMBINATORIAL_AGENTS}

__all__ = ["ABSE", "AGENTS", "CUCB", "CUCBDP", "CUCBLDP1", "CUCBLDP2", "CombinatorialAgent", "DPIMED",
           "DPKLUCB", "DPSE", "DPUCB", "FKM", "GLOC", "KLUCB", "LDPGLOC", "LDPMAB", "LDPOLS", "LDPSGD",
           "LDPUCB", "UCB1", "AdaCUCB", "AdaPKLUCB", "AdaPUCB", "Agent", "BCOAgent", "DistDPSE",
           "DistributedDPAgent", "Exp3", "GlobalDPAgent", "JointDPAgent", "GreedyOLS", "GreedySGD",
           "HazanLevy", "JDPLinUCB", "LDPLinUCB", "LDPMABAux", "LDPMultiOLS", "LDPMultiSGD", "LinUCB",
           "LocalDPAgent", "Privacy", "SDPLinUCB", "SahaTewari", "ShuffleDPAgent", "ShuffleSE",
           "ThompsonSampling", "TsallisINF", "TwoPointGD", "UniformRandom", "argmax_random"]
