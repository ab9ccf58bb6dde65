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

from ldp_gym.validation import check_epsilon, check_real

__all__ = ["MODELS", "UNITS", "Privacy", "rho_from_epsilon", "zcdp_epsilon"]

#: What neighbouring inputs differ in: the unit a guarantee protects.
UNITS: dict[str, str] = {
    "reward": "reward",
    "user": "user (context, action and reward)",
    "loss": "loss function (the losses of one round)",
    "outcomes": "user's outcomes (the base arms of the played super arm, one round)",
}
#: Local DP: every user's message is private, the server never sees raw data. Global DP: the
#: learner sees raw rewards, its released statistics (and so its actions) are private.
#: Shuffle DP: users randomise locally, a trusted shuffler permutes each batch, and the
#: learner sees only the shuffled messages. Distributed DP: users add shares of noise and a
#: secure aggregation protocol reveals only the sum of their messages; no party is trusted.
#: Joint DP: the learner sees raw data; its releases, and so the actions of every other user,
#: are private (each user's own action may depend on that user's own data).
MODELS = ("local", "global", "shuffle", "distributed", "joint")


@dataclass(frozen=True)
class Privacy:
    """A guarantee: ``(epsilon, delta)``-DP or rho-zCDP in the local or global model, per unit.

    Attributes:
        model: ``"local"``, ``"global"``, ``"shuffle"``, ``"distributed"`` or ``"joint"``
            (:data:`MODELS`).
        epsilon: the budget per unit, in (0, inf); ``None`` for a zCDP guarantee.
        delta: 0 for pure DP, else in (0, 1); 0 for zCDP.
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
        rho: the rho of a rho-zCDP guarantee (Bun and Steinke 2016), in (0, inf); ``None``
            for DP. Give exactly one of ``epsilon`` and ``rho``. :meth:`to_epsilon_delta`
            converts it; it is never reported as an epsilon.
    """

    model: str
    epsilon: float | None = None
    delta: float = 0.0
    unit: str = "reward"
    secure: bool = False
    sources: tuple[tuple[str, Privacy], ...] = ()
    rho: float | None = None

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {tuple(UNITS)}, got {self.unit!r}")
        if (self.epsilon is None) == (self.rho is None):
            raise ValueError("give exactly one of epsilon (DP) and rho (zCDP)")
        if self.rho is not None:
            if isinstance(self.rho, bool) or not (isinstance(self.rho, (int, float))
                                                   and 0 < self.rho < math.inf):
                raise ValueError(f"rho must be a finite number > 0, got {self.rho!r}")
            if self.delta != 0:
                raise ValueError("a zCDP guarantee has no delta: convert it with "
                                 "to_epsilon_delta(delta)")
        elif isinstance(self.epsilon, bool) or not (isinstance(self.epsilon, (int, float))
                                                     and 0 < self.epsilon < math.inf):
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
        if self.rho is not None:
            own = f"{self.model} zCDP, rho={self.rho:g} per {UNITS[self.unit]}{s}"
        else:
            own = f"{self.model} DP, epsilon={self.epsilon:g}{d} per {UNITS[self.unit]}{s}"
        return "; ".join([own] + [f"{name}: {p}" for name, p in self.sources])

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for results files; ``sources`` is a list of such dicts, each with a name."""
        return {"model": self.model, "epsilon": self.epsilon, "delta": self.delta,
                "rho": self.rho, "unit": self.unit, "secure": self.secure,
                "sources": [{"name": name, **p.to_dict()} for name, p in self.sources]}

    def to_epsilon_delta(self, delta: float) -> tuple[float, float]:
        """The ``(epsilon, delta)`` this guarantee implies at ``delta``, for its own source.

        A pure or approximate DP guarantee is returned as it is if its delta is at most
        ``delta``. A zCDP guarantee is converted by :func:`zcdp_epsilon`.

        Example:
            >>> from ldp_gym.wrappers.mechanisms.privacy import Privacy
            >>> Privacy("global", 1.0).to_epsilon_delta(1e-6)
            (1.0, 0.0)
            >>> eps, d = Privacy("global", rho=0.125).to_epsilon_delta(1e-6)
            >>> round(eps, 3), d
            (2.419, 1e-06)
        """
        if not 0 < delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        if self.rho is not None:
            return zcdp_epsilon(self.rho, delta), delta
        if self.delta > delta:
            raise ValueError(f"this guarantee's delta={self.delta:g} exceeds delta={delta:g}")
        assert self.epsilon is not None
        return self.epsilon, self.delta


def rho_from_epsilon(epsilon: Any) -> float:
    """The rho of the zCDP that epsilon-DP implies: ``epsilon^2 / 2`` (Bun and Steinke 2016,
    Prop. 1.4).

    Use it to compare a zCDP agent with a pure-DP one at the same rho.

    Example:
        >>> from ldp_gym.wrappers.mechanisms.privacy import rho_from_epsilon
        >>> rho_from_epsilon(1.0)
        0.5
    """
    epsilon = check_epsilon(epsilon)
    rho = 0.5 * epsilon * epsilon
    if not 0 < rho < math.inf:
        raise ValueError(f"epsilon={epsilon!r} gives rho = epsilon^2/2 = {rho!r}, not a finite "
                         "number > 0")
    return rho


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The epsilon of the ``(epsilon, delta)``-DP that rho-zCDP implies.

    The conversion is Google's ``dp-accounting`` (its RDP accountant composing one
    ``ZCDpEvent``), not a formula written here. It is a valid conversion everywhere and
    tighter than the textbook ``rho + 2 sqrt(rho ln(1/delta))`` of Bun and Steinke (2016,
    Prop. 1.3) over the usual range; not at extreme rho (1e-8 or 1e4), where the accountant's
    fixed grid of orders is coarse. It needs the
    ``accounting`` extra: ``pip install "ldp-gym[accounting]"``.

    Example:
        >>> from ldp_gym.wrappers.mechanisms.privacy import zcdp_epsilon
        >>> round(zcdp_epsilon(0.5, 1e-5), 3)
        4.729
    """
    rho = check_real("rho", rho, low=0.0)
    delta = check_real("delta", delta, low=0.0, high=1.0)
    try:
        import dp_accounting
    except ImportError as err:  # pragma: no cover - the test extra installs it
        raise ImportError('converting zCDP to (epsilon, delta) needs dp-accounting: pip install '
                          '"ldp-gym[accounting]"') from err
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(dp_accounting.ZCDpEvent(float(rho)))
    return float(accountant.get_epsilon(float(delta)))
