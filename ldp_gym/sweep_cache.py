"""The cache of :func:`~ldp_gym.runner.sweep` (``cache_dir``): each finished task's results on
disk, keyed by everything that determines them, so that an interrupted sweep resumes where
it stopped with bitwise the same results (``ldp-gym reproduce NAME --resume``).

A key is the SHA-256 of the task's arguments and of the library's version, source files,
numpy's and Python's versions. The arguments are the env and its kwargs, the agents by class
and kwargs, horizon, runs, seed, checkpoints, wrappers and secure mode; progress, label, n_jobs
and backend are left out. Classes and functions count by their module's source, and local ones
also by their code and what they capture. A task that cannot be keyed runs every time, with a
warning: ``seed=None``, agent objects, or lambdas whose code cannot be read.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import types
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .results import Results
from .validation import seed_sequence

#: the layout of a cache entry (a new layout ignores the old entries)
_CACHE_FORMAT = 1
#: what a task dict may say that does not change its results (left out of its key)
_NOT_IN_KEY = frozenset({"progress", "label", "n_jobs", "backend"})


class Uncacheable(Exception):
    """Something in a task that a cache key cannot cover; its message says what."""


class TaskCache:
    """The folder of :func:`~ldp_gym.runner.sweep`'s ``cache_dir``: one ``<key>.npz`` per finished task.

    An entry holds the regret arrays, checkpoints, and meta and timings as JSON; no pickles.
    ``key`` is the SHA-256 of everything that determines the task's results (:meth:`key`)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def key(self, i: int, task: dict[str, Any]) -> str | None:
        """The task's key, or None with a warning when it cannot have one."""
        h = hashlib.sha256()
        try:
            if task.get("seed", 0) is None:
                raise Uncacheable("seed=None draws fresh entropy")
            agents = task.get("agents")
            for spec in agents.values() if isinstance(agents, Mapping) else ():
                if not isinstance(spec, type) and hasattr(spec, "act"):
                    raise Uncacheable(f"agent {type(spec).__name__} is an object (give its "
                                       f"class and keyword arguments)")
            _feed(h, ("ldp-gym task", _CACHE_FORMAT, _versions()), [])
            for name in sorted(set(task) - _NOT_IN_KEY):
                value = task[name]
                if name == "seed" and value is not None:
                    try:
                        root = seed_sequence(value)
                    except ValueError:  # run() refuses it, with its own message
                        raise Uncacheable("its seed is not one") from None
                    value = ("SeedSequence", root.entropy, tuple(root.spawn_key), root.pool_size)
                _feed(h, (name, value), [])
        except Uncacheable as exc:
            warnings.warn(f"sweep task {i} is run without cache_dir: {exc}", stacklevel=3)
            return None
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.npz"

    def load(self, key: str) -> Results | None:
        """The results kept under ``key``; None if there are none or they are unreadable."""
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as f:
                info = json.loads(str(f["info"]))
                if info["format"] != _CACHE_FORMAT or info["key"] != key:
                    return None
                regret = {a: f[f"regret/{k}"] for k, a in enumerate(info["agents"])}
                return Results(f["checkpoints"], regret, info["meta"], info["timings"])
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile):
            return None  # (run again and written anew)

    def save(self, key: str, res: Results) -> None:
        """Keep ``res`` under ``key``: written to a temporary file, then renamed into place.

        An interrupted write leaves no entry. If its meta would not read back exactly, it is
        not kept and a warning says so."""
        meta = json.dumps(res.meta)
        if not _same(json.loads(meta), res.meta):
            warnings.warn(f"a sweep task's results are not kept in {self.folder}: their meta "
                          f"does not read back from JSON exactly", stacklevel=3)
            return
        info = {"format": _CACHE_FORMAT, "key": key, "agents": list(res.regret),
                "meta": res.meta, "timings": json.loads(json.dumps(res.timings, default=repr))}
        arrays: dict[str, Any] = {f"regret/{k}": v for k, v in enumerate(res.regret.values())}
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, checkpoints=res.checkpoints, info=np.array(json.dumps(info)),
                         **arrays)
            os.replace(tmp, self._path(key))
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp)
            raise


def _same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` equal, with the same types all the way down; floats bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a.hex() == b.hex()
    return bool(a == b)


@lru_cache(maxsize=1)
def _versions() -> tuple[str, ...]:
    """ldp-gym's version, a digest of its source files, numpy's and Python's versions.

    The source files are the envs, agents, wrappers and runner: an edit anywhere starts every
    cache afresh."""
    import importlib.util

    from . import __version__

    h = hashlib.sha256()
    for package in ("ldp_gym", "ldp_gym.agents", "ldp_gym.wrappers"):
        spec = importlib.util.find_spec(package)
        for folder in sorted(spec.submodule_search_locations or ()) if spec else ():
            for path in sorted(Path(folder).rglob("*.py")):
                h.update(f"{package}/{path.relative_to(folder).as_posix()}\0".encode())
                h.update(path.read_bytes())
    return (__version__, h.hexdigest(), np.__version__, sys.version)


#: what every class holds that says nothing of what it does (left out of a class's key)
_CLASS_BOOKKEEPING = frozenset({"__dict__", "__weakref__", "__module__", "__qualname__", "__doc__",
                                "__abstractmethods__", "_abc_impl", "__annotations__",
                                "__firstlineno__", "__static_attributes__", "__parameters__",
                                "__orig_bases__"})


def _by_name(obj: Any) -> bool:
    """Whether the class or function ``obj`` is what its module holds under its qualified name.

    Then its module's source pins it down. A local one or one made at run time is not."""
    target: Any = sys.modules.get(obj.__module__)
    for part in obj.__qualname__.split("."):
        target = getattr(target, part, None)
    return target is obj


def _named_global(obj: Any) -> bool:
    """Whether ``obj``, not a class or function, is held by its module under its qualified
    name and that module's source is known: its name and source pin it down."""
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return isinstance(module, str) and isinstance(name, str) and bool(_module_digest(module)) \
        and _by_name(obj)


@lru_cache(maxsize=256)
def _module_digest(module: str) -> str:
    """SHA-256 of the source file of ``module``; "" when it has none, as builtins or a notebook."""
    file = getattr(sys.modules.get(module), "__file__", None)
    try:
        return hashlib.sha256(Path(file).read_bytes()).hexdigest() if file else ""
    except OSError:
        return ""


def _feed(h: Any, value: Any, stack: list[int]) -> None:
    """Feed ``value`` into the hash ``h``, canonically and unambiguously.

    Every part is typed and length-prefixed. It feeds the types and values of numbers,
    strings, arrays with their dtype, shape and bytes, lists, tuples, dicts in order and
    SeedSequences; classes and functions by qualified name, their module's source and, for
    functions and local classes, their defaults and closures; other objects by what pickling
    them would keep (``__reduce_ex__``). Raises :class:`Uncacheable` for what it cannot cover."""

    def tag(kind: str, payload: bytes = b"") -> None:
        h.update(b"%s%d:" % (kind.encode(), len(payload)) + payload)

    if value is None or isinstance(value, (bool, np.bool_)):
        tag("N" if value is None else "b", b"1" if value else b"0")
    elif isinstance(value, int):
        tag("i", str(value).encode())
    elif isinstance(value, float):
        tag("f", value.hex().encode())
    elif isinstance(value, (str, bytes)):
        tag("s" if isinstance(value, str) else "y",
            value.encode() if isinstance(value, str) else value)
    elif isinstance(value, complex):
        tag("c", repr(value).encode())
    elif isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        tag("a" if isinstance(value, np.ndarray) else "g", f"{arr.dtype.str}{arr.shape}".encode())
        if arr.dtype.hasobject:
            for item in arr.ravel():
                _feed(h, item, stack)
        else:
            tag("d", np.ascontiguousarray(arr).tobytes())
    elif isinstance(value, np.random.SeedSequence):
        _feed(h, ("SeedSequence", value.entropy, tuple(value.spawn_key), value.pool_size), stack)
    else:
        if id(value) in stack:
            if isinstance(value, type):  # a method's __class__ cell (super())
                tag("R", value.__qualname__.encode())
                return
            raise Uncacheable(f"a {type(value).__name__} refers to itself")
        stack.append(id(value))
        try:
            _feed_container(h, value, stack, tag)
        finally:
            stack.pop()


def _feed_class(h: Any, value: type, stack: list[int], tag: Callable) -> None:
    """:func:`_feed` of a class: its name, the source of every class it inherits from, and
    what a class made at run time holds."""
    tag("T", f"{value.__module__}.{value.__qualname__}".encode())
    for cls in value.__mro__:
        tag("M", _module_digest(cls.__module__).encode())
        if _by_name(cls):
            continue
        for name, attr in vars(cls).items():  # local, or made at run time: what it holds
            if name in _CLASS_BOOKKEEPING:
                continue
            if isinstance(attr, (staticmethod, classmethod)):
                attr = attr.__func__
            elif isinstance(attr, property):
                attr = (attr.fget, attr.fset, attr.fdel)
            tag("A", name.encode())
            _feed(h, attr, stack)


def _feed_function(h: Any, value: types.FunctionType, stack: list[int], tag: Callable) -> None:
    """:func:`_feed` of a function: its name and module source, the code they do not pin,
    its defaults and its closure."""
    if value.__name__ == "<lambda>":
        raise Uncacheable("a lambda has no name to key it by (use a named function)")
    tag("F", f"{value.__module__}.{value.__qualname__}".encode())
    tag("M", _module_digest(value.__module__).encode())
    if not _module_digest(value.__module__) or not _by_name(value):
        _feed(h, value.__code__, stack)  # code its name and source do not pin
    _feed(h, (value.__defaults__, value.__kwdefaults__), stack)
    for cell in value.__closure__ or ():
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell
            content = None
        _feed(h, content, stack)


def _feed_container(h: Any, value: Any, stack: list[int], tag: Callable) -> None:
    """:func:`_feed` of lists, tuples, dicts, sets, classes, functions and other objects."""
    if isinstance(value, (list, tuple)):
        tag("l" if isinstance(value, list) else "t", str(len(value)).encode())
        for item in value:
            _feed(h, item, stack)
    elif isinstance(value, dict):
        tag("m", str(len(value)).encode())
        for k, v in value.items():
            _feed(h, k, stack)
            _feed(h, v, stack)
    elif isinstance(value, (set, frozenset)):
        parts = []
        for item in value:
            part = hashlib.sha256()
            _feed(part, item, stack)
            parts.append(part.digest())
        tag("S", b"".join(sorted(parts)))
    elif isinstance(value, type):
        _feed_class(h, value, stack, tag)
    elif isinstance(value, types.FunctionType):
        _feed_function(h, value, stack, tag)
    elif isinstance(value, types.CodeType):
        tag("K", value.co_code)
        _feed(h, (value.co_names, value.co_consts), stack)
    elif isinstance(value, types.MethodType):
        tag("Mt")
        _feed(h, (value.__func__, value.__self__), stack)
    elif isinstance(value, types.BuiltinFunctionType):
        owner = getattr(value, "__self__", None)
        tag("B", f"{getattr(value, '__module__', '')}.{value.__qualname__}".encode())
        if owner is not None and not isinstance(owner, types.ModuleType):
            _feed(h, owner, stack)
    elif _named_global(value):  # e.g. numba's compiled functions and ufuncs
        tag("G", f"{value.__module__}.{value.__qualname__}".encode())
        tag("M", _module_digest(value.__module__).encode())
    else:
        _feed_reduced(h, value, stack, tag)


def _feed_reduced(h: Any, value: Any, stack: list[int], tag: Callable) -> None:
    """:func:`_feed` of any other object: its type and what pickling it would store."""
    try:
        reduced = value.__reduce_ex__(4)
    except Exception as exc:  # (whatever refuses to pickle)
        raise Uncacheable(f"a {type(value).__name__} cannot be keyed ({exc})") from None
    if isinstance(reduced, str):  # a global, pickled by its name
        tag("G", f"{type(value).__module__}.{reduced}".encode())
        return
    if len(reduced) < 2:
        raise Uncacheable(f"a {type(value).__name__} cannot be keyed")
    tag("o")
    _feed(h, type(value), stack)
    _feed(h, tuple(list(part) if isinstance(part, Iterator) else part
                   for part in reduced), stack)
