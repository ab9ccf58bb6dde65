"""Draws made ahead in a background thread, where a core is spare.

The runner draws the next block of rounds, and some agents their next chunk of noise, in a
second thread while a compiled kernel plays the current one (the kernels and numpy's
generators release the GIL). The draws come in the same order either way, so the numbers never
depend on whether the thread is used; only the time does.

The thread pays only on a core that nothing else uses. Where the cores already run workers, it
competes with them: measured on two cores, it cost 10-25 % more CPU time for a wall time 0-15 %
shorter with one worker, and it made the timings jumpier. So the thread is used only when

* the calling thread may run on more than one core (its affinity, ``os.sched_getaffinity``;
  a CPU quota of a container, which the affinity does not show, is not seen), and
* it is not a worker of a parallel run or sweep (:func:`filled`). Such workers are meant to
  fill the cores (``n_jobs=-1``), so they draw in their own thread even when ``n_jobs`` is
  below the number of cores, and
* it is not the background thread itself, which would otherwise wait on itself.

Example:
    >>> from ldp_gym.background import filled, spare_core
    >>> with filled():
    ...     spare_core()
    False
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

__all__ = ["background", "filled", "spare_core"]

_FILLED: contextvars.ContextVar[bool] = contextvars.ContextVar("ldp_gym_cores_filled",
                                                              default=False)
#: the one background thread, created at first use; a forked child makes its own, as the
#: parent's thread does not exist in it
_POOL: list[ThreadPoolExecutor] = []
_CREATING = threading.Lock()


def _forked() -> None:
    global _CREATING
    _POOL.clear()
    _CREATING = threading.Lock()  # (a lock held by a parent's thread stays held in the child)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def spare_core() -> bool:
    """Whether draws ahead go to the background thread: the calling thread may run on more
    than one core, and is neither inside :func:`filled` nor the background thread."""
    if _FILLED.get():
        return False
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(
        os.cpu_count() or 1)
    return len(cores) > 1


@contextlib.contextmanager
def filled() -> Iterator[None]:
    """Within it, in this thread, the cores are taken by a parallel run's workers: no draw
    goes to the background thread."""
    token = _FILLED.set(True)
    try:
        yield
    finally:
        _FILLED.reset(token)


def background() -> ThreadPoolExecutor:
    """The background thread (one worker): check :func:`spare_core` before handing it work.
    Work running on it sees no spare core."""
    with _CREATING:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="ldp-gym-draws",
                                            initializer=_FILLED.set, initargs=(True,)))
        return _POOL[0]
