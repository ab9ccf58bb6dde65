"""Draws made ahead in a background thread, only where a core is spare.

The runner draws the next block of rounds, and some agents their next chunk of noise, in a
second thread while a compiled kernel plays the current one (the kernels and numpy's
generators release the GIL). The draws come in the same order either way, so the numbers never
depend on whether the thread is used; only the time does.

The thread pays only on a core that nothing else uses. Where every core already runs a
worker, it competes with them: measured on two cores, it cost 10-25 % more CPU time for a
wall time 0-15 % shorter with one worker, and it made the timings jumpier. So the thread is
used only when the process may run on more than one core (``os.sched_getaffinity``) and is not
a worker of a parallel run or sweep (:func:`filled`): the workers are there to fill the cores.

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
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

__all__ = ["background", "filled", "spare_core"]

_FILLED: contextvars.ContextVar[bool] = contextvars.ContextVar("ldp_gym_cores_filled",
                                                              default=False)
#: the one background thread, created at first use; a forked child makes its own, as the
#: parent's thread does not exist in it
_POOL: list[ThreadPoolExecutor] = []
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL.clear)


def spare_core() -> bool:
    """Whether draws ahead go to the background thread: the process may run on more than one
    core, and is not inside :func:`filled`."""
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
    """The background thread (one worker): check :func:`spare_core` before handing it work."""
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="ldp-gym-draws"))
    return _POOL[0]
