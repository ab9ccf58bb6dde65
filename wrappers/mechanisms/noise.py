"""Randomness and noise primitives of the mechanisms.

* generators: :class:`SecureGenerator` draws from the OS CSPRNG, and :func:`make_rng`
  builds domain-separated streams from a user's seed under ``MECHANISM_KEY``;
* :class:`NoiseStream`, noise drawn ahead in chunks, and its draw helpers
  (``draw_grid_normals``, ``draw_normals``, ``draw_uniforms``, ``draw_words``);
* float-safe noise on a grid: :func:`snap` and :func:`gaussian_grid_noise`;
* :func:`clip_l2`, clipping in the l2 norm, and ``upper_indices``;
* tracing for the replay test: :func:`recording`, :func:`tracing` and
  :func:`record_release`.

The mechanisms live in :mod:`ldp_gym.wrappers.mechanisms`, which re-exports
the public names.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import numbers
import operator
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
from numba import njit

from ldp_gym.background import background, spare_core
from ldp_gym.validation import check_bool

__all__ = [
    "MECHANISM_KEY",
    "NoiseStream",
    "SecureGenerator",
    "clip_l2",
    "draw_discrete_laplace",
    "draw_grid_normals",
    "draw_normals",
    "draw_uniforms",
    "draw_words",
    "gaussian_grid_noise",
    "make_rng",
    "record_release",
    "recording",
    "snap",
    "tracing",
    "upper_indices",
]

# --------------------------------------------------------------------------- randomness


class SecureGenerator:
    """Draws from the operating system's CSPRNG (``os.urandom``).

    Implements the subset of :class:`numpy.random.Generator` the mechanisms use
    (``random``, ``standard_normal``, ``geometric``, ``integers``). It has no
    seed: it cannot be replayed, which is the point.
    """

    def _words(self, n: int) -> np.ndarray:
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)

    def words(self, count: int) -> np.ndarray:
        """``count`` words of 64 random bits (uint64), as ``Generator.integers(0, 2**64,
        count, dtype=np.uint64)`` gives."""
        return self._words(count)

    def random(self, size: Any = None) -> np.ndarray:
        """Uniform doubles in (0, 1): 52 random bits, offset by half a step (never 0 or 1: with
        53 bits the top word's half step rounded to 1.0)."""
        n = int(np.prod(size)) if size is not None else 1
        u = ((self._words(n) >> np.uint64(12)).astype(np.float64) + 0.5) * 2.0**-52
        return u.reshape(size) if size is not None else u[0]

    def standard_normal(self, size: Any = None) -> np.ndarray:
        """Standard normals by the Box-Muller transform."""
        n = int(np.prod(size)) if size is not None else 1
        u1, u2 = self.random(n), self.random(n)
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        return z.reshape(size) if size is not None else z[0]

    def geometric(self, p: Any, size: Any = None) -> np.ndarray:
        """Geometric counts on {1, 2, ...} by inversion."""
        shape = size if size is not None else np.shape(p)
        u = self.random(shape)
        return np.ceil(np.log(u) / np.log1p(-np.asarray(p, dtype=np.float64))).astype(np.int64)

    def integers(self, low: Any, high: Any = None, size: Any = None) -> np.ndarray:
        """Integers in [low, high), drawn rejection-free for the small ranges used here."""
        if high is None:
            low, high = 0, low
        span = np.asarray(high) - np.asarray(low)
        return (np.asarray(low) + np.floor(self.random(size) * span)).astype(np.int64)


#: Spawn-key word under which a mechanism derives its stream from a user's seed, so that a
#: mechanism and an env given the same integer never draw the same numbers.
MECHANISM_KEY = 0x4D454348  # "MECH"


def make_rng(seed: Any = None, *, secure: bool = False) -> Any:
    """Return the generator a mechanism draws from.

    An int or a :class:`numpy.random.SeedSequence` is domain-separated: the stream is
    that of the sequence's child under the key ``MECHANISM_KEY``, never the stream an env
    (``env.reset(seed=...)``) or any other component builds from the same seed. A
    ``Generator`` is used as it is: the caller owns it. Seeded noise is for simulation:
    whoever knows the seed knows every draw, and the same seed replays them; deploy with
    ``secure=True``.

    Args:
        seed: ``None``, an int, a :class:`numpy.random.SeedSequence` or an existing
            ``Generator``. Spawn one sequence per mechanism from the run's sequence.
        secure: draw from the OS CSPRNG instead; then ``seed`` must be ``None``.

    Raises:
        TypeError: secure mode with a seed, or a seed of the wrong type.
    """
    check_bool("secure", secure)
    if secure:
        if seed is not None:
            raise TypeError("secure mode draws from the OS CSPRNG and refuses seeds; pass seed=None")
        return SecureGenerator()
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError("seed must be None, an int, a SeedSequence or a Generator, not bool")
    if isinstance(seed, (np.random.Generator, SecureGenerator)):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, numbers.Integral):
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {int(seed)}")
        seed = np.random.SeedSequence(int(seed))
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(np.random.SeedSequence(
            seed.entropy, spawn_key=tuple(seed.spawn_key) + (MECHANISM_KEY,),
            pool_size=seed.pool_size))
    raise TypeError(f"seed must be None, an int, a SeedSequence or a Generator, "
                    f"got {type(seed).__name__}")


# --------------------------------------------------------------------------- tracing

_TRACE: contextvars.ContextVar[list | None] = contextvars.ContextVar("ldp_gym_trace", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[dict]]:
    """Record every mechanism call made inside the block, for the replay test.

    Each record holds the mechanism name, the clipped input, the declared
    sensitivity, the noise parameter and the budget charged.

    Example:
        >>> from ldp_gym.wrappers.mechanisms import LaplaceMechanism, recording
        >>> m = LaplaceMechanism(1.0, 0.0, 1.0, seed=1)
        >>> with recording() as trace:
        ...     _ = m([0.5])
        >>> trace[0]["mechanism"], trace[0]["epsilon"]
        ('LaplaceMechanism', 1.0)
    """
    trace: list[dict] = []
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)


def tracing() -> bool:
    """Whether a :func:`recording` block is active; callers skip building trace records
    otherwise."""
    return _TRACE.get() is not None


def record_release(name: str, clipped: np.ndarray, sensitivity: Any, noise: Any, epsilon: float,
                   delta: float) -> None:
    """Record one release for the replay test, inside a :func:`recording` block only: the
    mechanism's name, its clipped input, sensitivity, noise scale and guarantee."""
    trace = _TRACE.get()
    if trace is not None:
        trace.append({"mechanism": name, "input": np.array(clipped, copy=True),
                      "shape": np.shape(clipped), "sensitivity": np.array(sensitivity, copy=True),
                      "noise": np.array(noise, copy=True), "epsilon": epsilon, "delta": delta})


# --------------------------------------------------------------------------- grid noise


def snap(x: np.ndarray, grid: Any) -> np.ndarray:
    """``x`` rounded to the nearest multiple of the power-of-two ``grid``, exact in float64."""
    return np.rint(x / grid) * grid


def gaussian_grid_noise(z: np.ndarray, sigma: Any, grid: Any) -> np.ndarray:
    """Gaussian noise on the grid: ``rint(sigma z / grid) grid`` for standard normals ``z``.

    Added to an input snapped to the same grid it gives ``snap(x) + k g`` with ``k`` a
    function of ``z`` only: the rounding to the grid of the Gaussian mechanism's output
    ``snap(x) + sigma z``, i.e. post-processing of that mechanism.
    """
    return np.rint(z * (sigma / grid)) * grid + 0.0  # + 0.0: never -0.0, whose sign
    # snap(x) + (-0.0) would pass on from a snapped x in (-g/2, 0)


# --------------------------------------------------------------------------- l2 clipping


@functools.lru_cache(maxsize=64)
def upper_indices(dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The row and column indices of the upper triangle of a ``dim`` x ``dim`` matrix (cached)."""
    return np.triu_indices(dim)


def clip_l2(x: np.ndarray, bound: float) -> np.ndarray:
    """Scale every vector of x (..., d) down to l2 norm at most ``bound``, never per coordinate.

    The l2 norm is the norm of every l2 sensitivity in this library.
    """
    sq = np.einsum("...i,...i->...", x, x)[..., None]
    return x * np.minimum(1.0, bound / np.sqrt(np.maximum(sq, 1e-300)))


# --------------------------------------------------------------------------- noise streams


class NoiseStream:
    """A stream of noise values drawn ahead in chunks from one generator.

    ``take(count)`` returns the next ``count`` values of the stream. They are bitwise
    the values that drawing them one call at a time would give, since numpy's
    generators fill arrays sequentially. So a round drawn alone and a block of
    rounds drawn at once see the same noise. Drawing ahead makes a single round cheap.

    Args:
        rng: the generator: a substream of one mechanism, or the OS CSPRNG.
        draw: ``(rng, count) -> values`` (1-D float64).
        chunk: values drawn per refill at least.
    """

    def __init__(self, rng: Any, draw: Any, chunk: int = 4096):
        self.rng, self.draw, self.chunk = rng, draw, chunk
        self._set_buffer(np.empty(0), 0)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_mem"]  # memoryviews do not pickle: rebuilt from the buffer
        if isinstance(self.rng, SecureGenerator):  # a copy must not hold (or share) the
            state["_buf"], state["_pos"] = np.empty(0), 0  # secure noise drawn ahead
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._mem = self._buf.data

    def _set_buffer(self, buf: np.ndarray, pos: int) -> None:
        self._buf, self._pos = buf, pos
        self._mem = buf.data  # a memoryview, for take_into: a copy without numpy's overhead

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` values, as a read-only array."""
        end = self._pos + count
        if end > self._buf.shape[0]:
            end = self._refill(count)
        out = self._buf[self._pos:end]
        self._pos = end
        return out

    def _refill(self, count: int) -> int:
        """Draw a chunk after the values left and return where ``count`` of them end.

        The values left are kept in the new buffer, so that the values of a take always lie in
        one buffer (:meth:`give_back`).
        """
        left = self._buf[self._pos:]
        fresh = self.draw(self.rng, max(count - left.shape[0], self.chunk))
        buf = np.concatenate([left, fresh]) if left.shape[0] else fresh
        buf.flags.writeable = False
        self._set_buffer(buf, 0)
        return count

    def take_into(self, out: memoryview) -> None:
        """Copy the next ``len(out)`` values into ``out``, a memoryview of a 1-D float64 array.

        These are the values of ``take(len(out))``, without a new array per call. ``out`` is a
        per-round path's buffer.
        """
        count = len(out)
        end = self._pos + count
        if end > self._buf.shape[0]:
            end = self._refill(count)
        out[:] = self._mem[self._pos:end]
        self._pos = end

    def give_back(self, count: int) -> None:
        """Undo the last take of ``count`` values: the stream serves them again.

        This is for a per-round path whose input was refused after its noise was copied: it
        uses none of that noise. The values stay those the stream serves next, also where that
        take drew the next chunk. The generator then stays advanced: it drew what the stream
        serves.
        """
        if not 0 <= count <= self._pos:
            raise ValueError(f"count must be in [0, {self._pos}], got {count}")
        self._pos -= count


def draw_grid_normals(rng: Any, count: int, *, sd: float, grid: float) -> np.ndarray:
    """``count`` Gaussian noise values of standard deviation ``sd`` on the ``grid`` (a
    :class:`NoiseStream`'s draw): :func:`gaussian_grid_noise` of ``rng``'s normals."""
    count = operator.index(count)  # a shape would repeat numbers across a row
    if type(rng) is np.random.Generator:  # drawn and put on the grid in one compiled pass
        out = np.empty(count)
        _grid_normals_into(rng, sd / grid, grid, out)
        return out
    return gaussian_grid_noise(rng.standard_normal(count), sd, grid)


@njit(cache=True, nogil=True)
def _grid_normals_into(rng: np.random.Generator, ratio: float, grid: float,
                       out: np.ndarray) -> None:  # pragma: no cover - compiled
    """:func:`gaussian_grid_noise` of ``len(out)`` standard normals of ``rng``, drawn here:
    bitwise ``gaussian_grid_noise(rng.standard_normal(len(out)), sigma, grid)``.

    Numba's generator draws numpy's numbers, and with ``ratio = sigma / grid`` the operations
    are the same.
    """
    for i in range(out.shape[0]):
        out[i] = np.rint(rng.standard_normal() * ratio) * grid + 0.0


def draw_normals(rng: Any, count: int) -> np.ndarray:
    """``count`` standard normals of ``rng`` (a :class:`NoiseStream`'s draw).

    A numpy ``Generator``'s are drawn in one compiled pass: numba's generator draws numpy's
    numbers, bitwise, and leaves the generator where numpy's call would, at about a third of
    the cost per number. The BCO agents' block path draws its unit vectors with it."""
    count = operator.index(count)  # a shape would repeat numbers across a row
    if type(rng) is np.random.Generator:
        out = np.empty(count)
        _normals_into(rng, out)
        return out
    return rng.standard_normal(count)


@njit(cache=True, nogil=True)
def _normals_into(rng: np.random.Generator, out: np.ndarray) -> None:  # pragma: no cover
    """``len(out)`` standard normals of ``rng``: bitwise ``rng.standard_normal(len(out))``."""
    for i in range(out.shape[0]):
        out[i] = rng.standard_normal()


def draw_uniforms(rng: Any, count: int) -> np.ndarray:
    """``count`` uniforms on [0, 1) of ``rng`` (a :class:`NoiseStream`'s draw)."""
    return rng.random(count)


def draw_words(rng: Any, count: int) -> np.ndarray:
    """``count`` words of 64 random bits (uint64) of ``rng`` (a :class:`NoiseStream`'s draw):
    the input of the exact integer samplers of :mod:`~ldp_gym.wrappers.mechanisms.compiled`."""
    if isinstance(rng, SecureGenerator):
        return rng.words(count)
    return rng.integers(0, 2**64, size=count, dtype=np.uint64)


def draw_discrete_laplace(rng: Any, count: int, *, p: float, grid: float) -> np.ndarray:
    """``count`` discrete Laplace values on the grid: ``(G1 - G2) grid`` for geometric pairs of
    success probability ``p``, drawn as consecutive pairs.

    The draws thus form a stream: chunk sizes do not matter. A numpy ``Generator``'s pairs are
    drawn in one compiled pass (:func:`_discrete_laplace_into`): numba's generator draws
    numpy's geometric numbers, bitwise, in 40-65 % of the time (no temporary arrays). That
    pass takes a float ``grid`` and ``p >= 2^-50``, where no geometric draw overflows int64
    (numba's would wrap where numpy's saturates); other values, and a ``p`` numpy refuses,
    go to numpy. The mechanisms' ``p`` is about 2^-40 or more.
    """
    count = operator.index(count)  # a shape would repeat numbers across a row
    if type(rng) is np.random.Generator and isinstance(grid, float) and 2.0 ** -50 <= p <= 1.0:
        out = np.empty(count)
        _discrete_laplace_into(rng, p, grid, out)
        return out
    g = rng.geometric(p, size=2 * count)
    return (g[0::2] - g[1::2]) * grid


@njit(cache=True, nogil=True)
def _discrete_laplace_into(rng: np.random.Generator, p: float, grid: float,
                           out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``len(out)`` values of :func:`draw_discrete_laplace`, drawn here: bitwise
    ``(g[0::2] - g[1::2]) * grid`` for ``g = rng.geometric(p, size=2 * len(out))``."""
    for i in range(out.shape[0]):
        first = rng.geometric(p)
        out[i] = (first - rng.geometric(p)) * grid


class DrawnAhead:
    """Values drawn ahead in fixed chunks of ``chunk`` and used in order by compiled kernels
    (``values[pos[0]:]`` unused), so that the stream does not depend on how the rounds are split
    into calls. ``draw(count)`` is the source: a mechanism's noise or a decision stream's
    uniforms. For a mechanism it is ``mechanism(zeros(count))``, the audited draw. It is passed
    to each call: the buffer holds arrays only, so agents that own one pickle and copy as before.

    :meth:`prefetch` draws the next chunk in the background thread while a kernel runs, where a
    core is spare (:mod:`ldp_gym.background`); else :meth:`ensure` draws it when needed. Chunks
    are drawn one after the other whatever the timing, and :meth:`settle` folds a chunk still
    drawing into the buffer, so that nothing is pending between calls. A source is thus never
    used by two threads at once.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> buf = DrawnAhead(chunk=4)
        >>> buf.ensure(6, rng.random)
        >>> buf.values.shape, int(buf.pos[0])
        ((8,), 0)
    """

    def __init__(self, chunk: int):
        self.chunk = int(chunk)
        self.values = np.zeros(0)
        self.pos = np.zeros(1, dtype=np.int64)
        self._pending: Any = None

    def _next(self, draw: Any) -> np.ndarray:
        if self._pending is not None:
            chunk, self._pending = self._pending.result(), None
            return chunk
        return draw(self.chunk)

    def ensure(self, need: int, draw: Any) -> None:
        """At least ``need`` unused values from ``pos`` on."""
        left = self.values[int(self.pos[0]):]
        if left.shape[0] >= need:
            return
        parts = [left]
        have = left.shape[0]
        while have < need:
            parts.append(self._next(draw))
            have += self.chunk
        self.values = np.ascontiguousarray(np.concatenate(parts))
        self.pos[0] = 0

    def prefetch(self, draw: Any) -> None:
        """Start drawing the next chunk in the background thread, unless two are left or no
        core is spare."""
        if self._pending is None and self.values.shape[0] - int(self.pos[0]) < 2 * self.chunk \
                and spare_core():
            self._pending = background().submit(draw, self.chunk)

    def settle(self) -> None:
        """Fold a chunk drawing in the background into the buffer."""
        if self._pending is not None:
            chunk, self._pending = self._pending.result(), None
            self.values = np.concatenate([self.values[int(self.pos[0]):], chunk])
            self.pos[0] = 0
