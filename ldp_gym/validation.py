"""Validation of parameters and inputs, in one module used by every path.

Envs, agents, mechanisms, wrappers and the runner call these functions; envs
do so through their cores, single and vector alike. So the same bad value gets
the same error everywhere. A wrong type gives a ``TypeError``: bools count as a
wrong type, never taken as numbers. A wrong value gives a ``ValueError``. Both
name the parameter and never echo a private value. Actions are checked against
a Gymnasium action space: :func:`check_action` checks one run's action and
:func:`check_actions` a batch. -1 and K are out of range (ValueError),
1.5, NaN and bools are not integers (TypeError), and wrong shapes are ValueErrors.

Example:
    >>> from ldp_gym.validation import check_int
    >>> check_int("n_arms", 3)
    3
    >>> check_int("n_arms", 2.5)
    Traceback (most recent call last):
    ...
    TypeError: n_arms must be an integer, got float
    >>> from gymnasium.spaces import Discrete
    >>> check_action(Discrete(5), 5)
    Traceback (most recent call last):
    ...
    ValueError: action must lie in {0, ..., 4} (Discrete(5)), got 5
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space
from numba import njit

__all__ = ["MIN_DELTA", "MIN_EPSILON", "Part", "check_action", "check_actions", "check_bool",
           "check_bounds", "check_delta", "check_epsilon", "check_finite", "check_input",
           "check_int", "check_message", "check_optional_int", "check_real", "check_reset_seed",
           "check_share", "finite_into", "plain_floats", "seed_sequence"]

#: Smallest delta accepted: below it the float64 privacy profiles cannot resolve delta.
MIN_DELTA = 1e-100
#: Smallest epsilon accepted: below it the noise scales (1/epsilon and more) leave the range
#: where the float-safe samplers are exact (Laplace noise collapses to exact zeros near 1e-30).
MIN_EPSILON = 1e-12


def check_real(name: str, value: Any, *, low: float | None = None, high: float | None = None,
               low_open: bool = True, high_open: bool = True) -> float:
    """Return ``value`` as a float after checking it is a finite real in the given interval.

    Raises:
        TypeError: for bools and non-numbers.
        ValueError: for NaN, inf and values outside the interval; the message names ``name``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite")
    if low is not None and (v <= low if low_open else v < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {v}")
    if high is not None and (v >= high if high_open else v > high):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {v}")
    return v


def check_int(name: str, value: Any, *, low: int = 1) -> int:
    """Return ``value`` as an int after checking it is an integer ``>= low``; bools are refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {int(value)}")
    return int(value)


def check_optional_int(name: str, value: Any, *, low: int = 1) -> int | None:
    """``None``, or ``value`` checked by :func:`check_int`."""
    return None if value is None else check_int(name, value, low=low)


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` as a bool after checking it is ``True`` or ``False``, numpy bools included."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return bool(value)


def check_epsilon(epsilon: Any) -> float:
    """Validate a privacy budget: a finite real >= :data:`MIN_EPSILON`."""
    return check_real("epsilon", epsilon, low=MIN_EPSILON, low_open=False)


def check_share(name: str, epsilon: float, parts: float) -> float:
    """``epsilon / parts``: the budget of one of ``parts`` mechanisms a learner splits
    ``epsilon`` into.

    ``name`` is the learner's parameter that holds ``epsilon``. A share below
    :data:`MIN_EPSILON` is refused with one line naming ``name``.
    """
    share = epsilon / parts
    if share < MIN_EPSILON:
        raise ValueError(f"{name}={epsilon:g} is split in {parts:g} parts of {share:g}, below the "
                         f"smallest budget {MIN_EPSILON:g}: {name} must be >= "
                         f"{MIN_EPSILON * parts:g}")
    return share


def check_delta(delta: Any, *, allow_zero: bool = False) -> float:
    """Validate an approximate-DP delta: a real in [MIN_DELTA, 1), or exactly 0 with ``allow_zero``.

    :data:`MIN_DELTA` is 1e-100: smaller deltas are beyond what float64 privacy profiles resolve.
    """
    if allow_zero and not isinstance(delta, (bool, np.bool_)) and isinstance(delta, numbers.Real) \
            and delta == 0:
        return 0.0
    d = check_real("delta", delta, low=0.0, high=1.0)
    if d < MIN_DELTA:
        raise ValueError(f"delta must be >= {MIN_DELTA:g} (or exactly 0 for a pure mechanism), "
                         f"got {d:g}")
    return d


def check_bounds(lower: Any, upper: Any) -> tuple[float, float]:
    """Validate declared scalar bounds ``lower < upper``, both finite."""
    lo = check_real("lower", lower)
    hi = check_real("upper", upper)
    if not hi > lo:
        raise ValueError(f"upper must be > lower, got lower={lo}, upper={hi}")
    if not math.isfinite(4.0 * (hi - lo)):  # headroom for the calibration arithmetic
        raise ValueError("upper - lower must be below 4e307 (the sensitivity overflows)")
    if hi - lo < 1e-200:
        raise ValueError("upper - lower must be at least 1e-200 (the noise grid underflows)")
    return lo, hi


#: the float dtypes the compiled checks take (others go through numpy)
_COMPILED_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


@njit(cache=True, nogil=True)
def _all_finite(flat: np.ndarray) -> bool:  # pragma: no cover - compiled
    for v in flat:
        if not math.isfinite(v):
            return False
    return True


@njit(cache=True, nogil=True)
def _box_status(flat: np.ndarray, low: np.ndarray, high: np.ndarray) -> int:  # pragma: no cover
    """0: every value finite and inside its bounds; 1: a NaN or inf; 2: a finite value outside
    the bounds. ``flat`` is runs x ``low.size`` values."""
    m = low.shape[0]
    status = 0
    for i in range(flat.shape[0]):
        v = flat[i]
        if not math.isfinite(v):
            return 1
        if v < low[i % m] or v > high[i % m]:
            status = 2
    return status


def all_finite(arr: np.ndarray) -> bool:
    """Whether a float array holds no NaN or inf.

    Compiled for contiguous float32 and float64 arrays, numpy otherwise. The compiled check
    needs no temporary array, which makes a per-round check cheap.
    """
    if arr.flags.c_contiguous and arr.dtype in _COMPILED_FLOATS:
        return bool(_all_finite(arr.reshape(-1)))
    return bool(np.isfinite(arr).all())



@njit(cache=True, nogil=True)
def finite_into(out: np.ndarray, x: np.ndarray, y: np.ndarray) -> int:  # pragma: no cover
    """Check x then y for NaN and inf: 0 after copying x into out (float64), 1 if x holds a
    NaN or inf, 2 if y does.

    x and y are C-contiguous float arrays of out's size. On 1 or 2, out is untouched.
    Compiled: the per-round calls of agents check and load their inputs with it.
    :func:`plain_floats` tells which inputs it takes.
    """
    src, dst = x.reshape(-1), out.reshape(-1)
    for v in src:
        if not math.isfinite(v):
            return 1
    for v in y.reshape(-1):
        if not math.isfinite(v):
            return 2
    for i in range(src.shape[0]):
        dst[i] = src[i]
    return 0


def plain_floats(x: Any, shape: tuple[int, ...]) -> bool:
    """Whether x is a float32 or float64 array of ``shape``, C-contiguous, aligned and writeable:
    the inputs a compiled per-round call bound to the type ``array(dtype, ndim, C)`` takes as
    they are. A False sends the caller to its general path."""
    return type(x) is np.ndarray and x.shape == shape and x.dtype in _COMPILED_FLOATS \
        and x.flags.carray


def check_finite(x: Any, name: str = "x") -> np.ndarray:
    """Return ``x`` as a real numeric array of any float or integer dtype, not converted; refuse
    bools, non-numbers, NaN and inf without echoing values."""
    arr = x if type(x) is np.ndarray else np.asarray(x)
    kind = arr.dtype.kind
    if kind != "f":  # the common case skips the dtype checks
        if kind == "b":
            raise TypeError(f"{name} must be numeric, not bool")
        if kind not in "iu":
            raise TypeError(f"{name} must be a real numeric array")
        return arr  # integers are finite
    if not all_finite(arr):
        raise ValueError(f"{name} must be finite (NaN or inf found)")
    return arr


def check_input(x: Any, name: str = "x") -> np.ndarray:
    """Return a float64 array of private inputs; refuse bools, NaN and inf without echoing values."""
    return check_finite(x, name).astype(np.float64, copy=False)


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True)
class Part:
    """One part of a local-DP message schema, as a server checks it.

    Attributes:
        shape: the part's whole shape, batch dimension first; ``None`` for a free length.
        kind: ``"real"``, ``"int"`` or ``"mask"``. A real part holds finite numbers, returned
            as float64. An int part holds integers in ``[low, high]``, returned as int64. A
            mask holds 0/1 or bools, with at most ``high`` ones per row, returned as bool.
        low, high: the bounds of ``"int"`` parts; ``high`` the most ones in a row of a mask.
        bound: the largest magnitude of a ``"real"`` part's entries.
    """

    shape: tuple[int | None, ...]
    kind: str = "real"
    low: int = 0
    high: int = 0
    bound: float = math.inf


def check_message(report: Any, schema: Mapping[str, Part],
                  name: str = "report") -> dict[str, np.ndarray]:
    """A copy of ``report`` in the parts' dtypes, after checking it completely against ``schema``.

    ``report`` is a mapping of message parts, called ``name`` in errors. Every part must be
    present and none other, numeric, of its shape, finite and inside its bounds. A wrong type
    raises a ``TypeError``: not a mapping, not numeric, bools for numbers, floats for
    integers. A wrong value raises a ``ValueError``: a missing or unknown part, a wrong
    shape, NaN or inf, a value out of bounds. Both name the part, and no other error is
    raised: a server calls it before touching its state.

    Example:
        >>> schema = {"arm": Part((2,), "int", 0, 4), "reward": Part((2,))}
        >>> check_message({"arm": [0, 4], "reward": [0.5, -1.0]}, schema)["arm"]
        array([0, 4])
        >>> check_message({"arm": [0, 5], "reward": [0.5, -1.0]}, schema)
        Traceback (most recent call last):
        ...
        ValueError: report['arm'] must lie in [0, 4]
    """
    if not isinstance(report, Mapping):
        raise TypeError(f"{name} must be a mapping of the message parts {sorted(schema)}, got "
                        f"{type(report).__name__}")
    unknown = sorted(str(k) for k in report if k not in schema)
    if unknown:
        raise ValueError(f"{name}: unknown part {unknown[0]!r} (the parts are {sorted(schema)})")
    out = {}
    for key, part in schema.items():
        label = f"{name}[{key!r}]"
        if key not in report:
            raise ValueError(f"{label} is missing")
        out[key] = _part_values(_part_array(report[key], part, label), part, label)
    return out


def _part_array(value: Any, part: Part, label: str) -> np.ndarray:
    """``value`` as a plain numeric array of the part's shape, finite, for :func:`check_message`."""
    if isinstance(value, np.ma.MaskedArray):  # its masked entries would be read
        raise TypeError(f"{label} must be a plain array, not a masked array")
    try:
        arr = np.array(value)
    except Exception:  # ragged sequences, objects numpy cannot take
        raise TypeError(f"{label} must be a numeric array") from None
    kind = arr.dtype.kind
    if kind not in "biuf" or (kind == "b" and part.kind != "mask"):
        raise TypeError(f"{label} must be a numeric array, got dtype {arr.dtype}")
    if arr.ndim != len(part.shape) or any(
            want is not None and got != want for got, want in zip(arr.shape, part.shape)):
        want_shape = tuple("*" if w is None else w for w in part.shape)
        raise ValueError(f"{label} must have shape {want_shape}, got {arr.shape}")
    if kind == "f" and not all_finite(arr):
        raise ValueError(f"{label} must be finite (NaN or inf found)")
    return arr


def _part_values(arr: np.ndarray, part: Part, label: str) -> np.ndarray:
    """A part's array checked against its kind's bounds, in its dtype, for :func:`check_message`."""
    if part.kind == "real":
        if arr.size and np.abs(arr).max() > part.bound:
            raise ValueError(f"{label} must lie in [-{part.bound:.6g}, {part.bound:.6g}] (no "
                             f"user's message is larger)")
        return arr.astype(np.float64)
    if part.kind == "int":
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{label} must be integers, got dtype {arr.dtype}")
        if arr.size and (arr.min() < part.low or arr.max() > part.high):
            raise ValueError(f"{label} must lie in [{part.low}, {part.high}]")
        return arr.astype(np.int64)
    if arr.size and not ((arr == 0) | (arr == 1)).all():
        raise ValueError(f"{label} must be 0 or 1")
    mask = arr.astype(bool)
    if mask.size and int(mask.sum(axis=-1).max()) > part.high:
        raise ValueError(f"{label} has a row with more than {part.high} ones")
    return mask


# --------------------------------------------------------------------------- actions


def check_action(space: spaces.Space, action: Any, name: str = "action") -> Any:
    """Return one run's ``action`` after checking it lies in ``space``.

    ``Discrete``: a Python or numpy integer, or a 0-d integer array, returned as a Python
    int. ``MultiBinary``, ``MultiDiscrete``: an integer array of the space's shape; ``Box``: a
    finite real array of its shape; both returned as arrays of the space's dtype. Any other
    space: ``space.contains(action)``, returned unchanged.

    Raises:
        TypeError: bools, floats where integers are needed (1.5, NaN), non-numbers.
        ValueError: a wrong shape, NaN or inf in a ``Box``, a value outside the space (-1, K).
    """
    # the common case, without numpy (a plain int first: no abc check)
    if isinstance(space, spaces.Discrete) and (type(action) is int or isinstance(
            action, numbers.Integral) and not isinstance(action, (bool, np.bool_))):
        lo, value = int(space.start), int(action)
        if not lo <= value < lo + int(space.n):
            raise ValueError(f"{name} must lie in {_describe(space)}, got {value}")
        return value
    if not _is_array_space(space):
        return _check_contains(space, action, name)
    arr = _check_in_space(space, _as_array(action, name), (), name)
    return int(arr) if isinstance(space, spaces.Discrete) else arr


def check_actions(space: spaces.Space, actions: Any, num_envs: int,
                  name: str = "actions") -> Any:
    """Return a batch of ``num_envs`` actions after checking each lies in one run's ``space``.

    For ``Discrete``, ``MultiBinary``, ``MultiDiscrete`` and ``Box``, the batch is an array of
    shape ``(num_envs,) + space.shape``, returned in the space's dtype. Any other space is
    checked with ``batch_space(space, num_envs).contains``. Errors as :func:`check_action`.
    """
    if type(space) is spaces.Discrete and type(actions) is np.ndarray \
            and actions.shape == (num_envs,) and _valid_arms(space, actions):
        return actions.astype(space.dtype, copy=False)  # the runner's case, in one reduction
    if not _is_array_space(space):
        return _check_contains(batch_space(space, num_envs), actions, name)
    return _check_in_space(space, _as_array(actions, name), (num_envs,), name)


_ARRAY_SPACES = (spaces.Discrete, spaces.MultiBinary, spaces.MultiDiscrete, spaces.Box)


def _is_array_space(space: spaces.Space) -> bool:
    return isinstance(space, _ARRAY_SPACES)


def _check_contains(space: spaces.Space, value: Any, name: str) -> Any:
    if not space.contains(value):
        raise ValueError(f"{name} must lie in {space}")
    return value


def _as_array(value: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(value)
    except ValueError:  # ragged nested sequences
        raise ValueError(f"{name} must be a rectangular array") from None


def _check_in_space(space: spaces.Space, arr: np.ndarray, batch: tuple[int, ...],
                    name: str) -> np.ndarray:
    """Check ``arr`` (shape ``batch + space.shape``) against an array space; return it in the
    space's dtype."""
    integral = not isinstance(space, spaces.Box) or space.dtype.kind in "iu"
    kind = arr.dtype.kind
    if kind == "f" and isinstance(space, spaces.MultiBinary):
        # Gymnasium's MultiBinary contains float arrays of exact 0/1, which stable-baselines3's
        # PPO and A2C send: accepted as the integers they are (0.5, NaN refused)
        if not ((arr == 0) | (arr == 1)).all():
            raise ValueError(f"{name} must be 0 or 1 for {space} (floats only when exactly 0 or 1)")
        arr, kind = arr.astype(space.dtype), "i"
    if kind not in ("iu" if integral else "iuf"):  # bools (kind "b") included
        want = ("integers" if arr.ndim else "an integer") if integral \
            else ("real numbers" if arr.ndim else "a real number")
        raise TypeError(f"{name} must be {want} for {space}, got dtype {arr.dtype}")
    shape = batch + tuple(space.shape or ())
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape} for {space}, got {arr.shape}")
    if kind == "f" and isinstance(space, spaces.Box) and arr.flags.c_contiguous \
            and arr.dtype in _COMPILED_FLOATS and space.low.dtype in _COMPILED_FLOATS:
        # a Box's continuous actions in one compiled pass: finite, then inside the bounds
        status = _box_status(arr.reshape(-1), space.low.reshape(-1), space.high.reshape(-1))
        if status == 1:
            raise ValueError(f"{name} must be finite (NaN or inf found)")
        if status == 0:
            return arr.astype(space.dtype, copy=False)
    if kind == "f" and not all_finite(arr):
        raise ValueError(f"{name} must be finite (NaN or inf found)")
    if not _inside(space, arr):
        lo, hi = _space_bounds(space)
        bad = arr[(arr < lo) | (arr > hi)].flat[0]
        raise ValueError(f"{name} must lie in {_describe(space)}, got {bad}")
    return arr.astype(space.dtype, copy=False)


def _inside(space: spaces.Space, arr: np.ndarray) -> bool:
    """Whether every value of ``arr`` lies in the array space's bounds."""
    if isinstance(space, spaces.Discrete):
        return _valid_arms(space, arr)
    lo, hi = _space_bounds(space)
    return not ((arr < lo) | (arr > hi)).any()


#: unsigned integer type of each signed one, of the same size
_UNSIGNED = {np.dtype(t): u for t, u in ((np.int8, np.uint8), (np.int16, np.uint16),
                                         (np.int32, np.uint32), (np.int64, np.uint64))}


def _valid_arms(space: spaces.Discrete, arr: np.ndarray) -> bool:
    """Whether an array holds integers of ``space`` only, in one reduction where the
    space starts at 0: negative integers are huge as unsigned integers of their size."""
    kind = arr.dtype.kind
    if not arr.size:
        return kind in "iu"
    if kind == "u" and space.start == 0:
        return bool(arr.max() < space.n)
    if kind == "i" and space.start == 0 and arr.dtype in _UNSIGNED:
        return bool(arr.view(_UNSIGNED[arr.dtype]).max() < space.n)
    if kind not in "iu":
        return False
    return bool(arr.min() >= space.start and arr.max() < space.start + space.n)


def _describe(space: spaces.Space) -> str:
    if isinstance(space, spaces.Discrete):
        lo = int(space.start)
        return f"{{{lo}, ..., {lo + int(space.n) - 1}}} ({space})"
    return str(space)


def _space_bounds(space: spaces.Space) -> tuple[Any, Any]:
    """Smallest and largest values of an array space, as scalars or arrays of ``space.shape``."""
    if isinstance(space, spaces.Discrete):
        return int(space.start), int(space.start) + int(space.n) - 1
    if isinstance(space, spaces.MultiBinary):
        return 0, 1
    if isinstance(space, spaces.MultiDiscrete):
        return space.start, space.start + space.nvec - 1
    if not isinstance(space, spaces.Box):
        raise TypeError(f"not an array space: {space}")
    return space.low, space.high


def check_reset_seed(seed: Any) -> int | None:
    """The ``seed`` of an env's ``reset``: ``None`` or an integer >= 0, as Gymnasium requires.

    Anything else is refused with the library's usual ``TypeError``/``ValueError`` naming
    ``seed``.
    """
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be None or an integer >= 0, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be None or an integer >= 0, got {int(seed)}")
    return int(seed)


def seed_sequence(seed: Any, name: str = "seed") -> np.random.SeedSequence:
    """``seed`` as a :class:`numpy.random.SeedSequence`, or one clear error naming ``name``.

    ``seed`` may be ``None`` for fresh OS entropy, a non-negative int or a sequence of them.
    A ``SeedSequence`` is used as it is.

    Example:
        >>> seed_sequence(3).entropy
        3
        >>> seed_sequence(-1)
        Traceback (most recent call last):
        ...
        ValueError: seed must be None, a non-negative integer or a numpy SeedSequence, got -1
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, (bool, np.bool_, float, str, bytes)):
        raise ValueError(f"{name} must be None, a non-negative integer or a numpy SeedSequence, "
                         f"got {seed!r}")
    try:
        return np.random.SeedSequence(seed)
    except (ValueError, TypeError):
        raise ValueError(f"{name} must be None, a non-negative integer or a numpy SeedSequence, "
                         f"got {seed!r}") from None
