"""The one type that states a privacy guarantee: :class:`Privacy`.

Agents (``agent.privacy``), privacy wrappers (``env.privacy``), the runner
(``Results.meta["privacy"]``) and the command line all report guarantees as a
:class:`Privacy`, with the protected unit taken from a fixed vocabulary
(:data:`UNITS`).

Example:
    >>> from ldp_gym.wrappers.mechanisms.privacy import Privacy
    >>> print(Privacy("local", 1.0, 0.01, "user"))
    local DP, epsilon=1, delta=0.01 per user (context, action and reward)
    >>> Privacy("global", 0.5).unit
    'reward'

A learner that uses several data sources states one guarantee per source: the first for the
users it serves, the others in ``sources``, each named:

    >>> aux = Privacy("local", 8.0, unit="user")
    >>> both = Privacy("local", 1.0, unit="user", sources=(("auxiliary dataset 1", aux),))
    >>> for part in str(both).split("; "):
    ...     print(part)
    local DP, epsilon=1 per user (context, action and reward)
    auxiliary dataset 1: local DP, epsilon=8 per user (context, action and reward)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["MODELS", "UNITS", "Privacy"]

#: What neighbouring inputs differ in: the unit a guarantee protects.
UNITS: dict[str, str] = {
    "reward": "reward",
    "user": "user (context, action and reward)",
    "loss": "loss function (the losses of one round)",
    "outcomes": "user's outcomes (the base arms of the played super arm, one round)",
}
#: Local DP: every user's message is private, the server never sees raw data. Global DP: the
#: learner sees raw rewards, its released statistics (and so its actions) are private.
MODELS = ("local", "global")


@dataclass(frozen=True)
class Privacy:
    """A guarantee: ``(epsilon, delta)``-DP in the local or global model, per unit.

    Attributes:
        model: ``"local"`` or ``"global"`` (:data:`MODELS`).
        epsilon: the budget per unit, in (0, inf).
        delta: 0 for pure DP, else in (0, 1).
        unit: a key of :data:`UNITS`. ``"reward"`` protects one reward. ``"user"`` protects
            one user's context, chosen action and reward. ``"loss"`` protects one round's loss
            function at all the points it is queried at, as in two-point bandit convex
            optimisation. ``"outcomes"`` protects one user's outcomes of the base arms of a
            super arm.
        secure: the noise is drawn from the OS CSPRNG (deployment) rather than seeded.
        sources: the guarantees of the other data sources the learner uses, as ``(name,
            Privacy)`` pairs. Examples are the auxiliary datasets of transfer learning, each
            with its own budget. Empty for a single source. Each guarantee is separate: it
            protects the units of its own source only.
    """

    model: str
    epsilon: float
    delta: float = 0.0
    unit: str = "reward"
    secure: bool = False
    sources: tuple[tuple[str, Privacy], ...] = ()

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {tuple(UNITS)}, got {self.unit!r}")
        if not (isinstance(self.epsilon, (int, float)) and 0 < self.epsilon < math.inf):
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon!r}")
        if not (isinstance(self.delta, (int, float)) and 0 <= self.delta < 1):
            raise ValueError(f"delta must be in [0, 1), got {self.delta!r}")
        if not isinstance(self.sources, tuple) or not all(
                isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) and x[0]
                and isinstance(x[1], Privacy) and not x[1].sources for x in self.sources):
            raise ValueError("sources must be a tuple of (name, Privacy) pairs, each Privacy "
                             "without sources of its own")

    def __str__(self) -> str:
        d = f", delta={self.delta:g}" if self.delta else ""
        s = ", secure noise" if self.secure else ""
        own = f"{self.model} DP, epsilon={self.epsilon:g}{d} per {UNITS[self.unit]}{s}"
        return "; ".join([own] + [f"{name}: {p}" for name, p in self.sources])

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for results files; ``sources`` is a list of such dicts, each with a name."""
        return {"model": self.model, "epsilon": self.epsilon, "delta": self.delta,
                "unit": self.unit, "secure": self.secure,
                "sources": [{"name": name, **p.to_dict()} for name, p in self.sources]}
