"""The progress of a job: one display of every agent's run of every :func:`~ldp_gym.runner.run`
of a :func:`~ldp_gym.runner.sweep`, fed by the runs from this process or from worker processes."""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from .parallel import backend_in_force

#: Seconds between two progress lines when stderr is not a terminal (``progress=None``).
PROGRESS_INTERVAL = 30.0
#: Least seconds between two reports of one agent's run (they may cross processes).
REPORT_INTERVAL = 0.5
#: Characters of an agent's name shown in the progress bar (the bar stays on one line).
_NAME_WIDTH = 28


def progress_mode(enabled: bool | None) -> str | None:
    """How progress is shown: ``"bar"``, ``"lines"`` or ``None``.

    ``"bar"`` is a tqdm bar; ``"lines"`` is a line every :data:`PROGRESS_INTERVAL` seconds.
    ``progress=False`` shows nothing, ``True`` a bar, and ``None`` a bar when stderr is a
    terminal and lines otherwise. Without tqdm, lines replace the bar."""
    if enabled is False:
        return None
    if enabled is None and not _isatty(sys.stderr):
        return "lines"
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return "lines"
    return "bar"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    h, m = s // 3600, s // 60 % 60
    return f"{h}h{m:02d}m" if h else f"{m}m{s % 60:02d}s" if m else f"{s}s"


def _count(x: float) -> str:
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.2f}{suffix}"
    return f"{x:.0f}"


class Job:
    """The progress of a whole job, every agent's run of every :func:`run` of a :func:`sweep`,
    shown once, by the parent process: one tqdm bar on a terminal, else a line on stderr every
    ``interval`` seconds. If any line was written, a last one comes at the end.

    ``tasks`` holds ``(agent name, runs, rounds)`` of every agent's run, in order. The runs
    report ``(task, rounds done by each of its runs)`` through :meth:`put`, from this process
    or, through a queue, from worker processes. The work done is counted in run-rounds, runs x
    rounds, so the time left weighs every task by its size.
    """

    def __init__(self, tasks: list[tuple[str, int, int]], mode: str, label: str = "",
                 stream: Any = None, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.names = [t[0] for t in tasks]
        self.runs = [int(t[1]) for t in tasks]
        self.rounds = [int(t[2]) for t in tasks]
        self.total = sum(r * t for r, t in zip(self.runs, self.rounds))
        self.done = [0] * len(tasks)
        self.running: dict[int, None] = {}  # started, not finished, in order of start
        self.finished = 0
        self.label = label or "ldp-gym"
        self.stream = stream if stream is not None else sys.stderr
        self.interval = PROGRESS_INTERVAL if interval is None else interval
        self.clock = clock
        self.start = self.last_line = clock()
        self.lines = 0
        self.lock = threading.Lock()
        self.bar: Any = None
        if mode == "bar":
            from tqdm.auto import tqdm

            self.bar = tqdm(total=self.total, desc=self.label, leave=False, smoothing=0,
                            unit_scale=True, dynamic_ncols=True, file=self.stream,
                            bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                                       "runs x rounds [{elapsed}<{remaining}]")

    @classmethod
    def create(cls, tasks: list[tuple[str, int, int]], progress: bool | None,
               label: str = "") -> Job | None:
        """A job reporting on ``tasks``, or ``None`` when progress is off or nothing runs."""
        mode = progress_mode(progress)
        return None if mode is None or not tasks else cls(tasks, mode, label)

    def put(self, message: tuple[int, int]) -> None:
        """Task ``message[0]``'s runs have each played ``message[1]`` rounds."""
        task, rounds = message
        with self.lock:
            if self.done[task] < self.rounds[task]:  # (a finished task's reports are late)
                self.done[task] = max(self.done[task], min(int(rounds), self.rounds[task]))
                if self.done[task] >= self.rounds[task]:
                    self.running.pop(task, None)
                    self.finished += 1
                else:
                    self.running[task] = None
            self._show()

    def tick(self) -> None:
        """No news: the line of every ``interval`` seconds is still written on time."""
        with self.lock:
            if self.bar is None:
                self._show()

    def units(self) -> int:
        """Run-rounds done so far, over every task."""
        return sum(d * r for d, r in zip(self.done, self.runs))

    def describe(self) -> str:
        """Which agents are running: ``agent 2/4 DP-SE``, or ``agents 2-3/4 ...`` in parallel."""
        n = len(self.names)
        if not self.running:
            return f"{self.label}: {self.finished}/{n} agents done"
        ids = sorted(self.running)
        names = ", ".join(self._short(self.names[i]) for i in ids[:2]) + (", ..." if len(ids) > 2
                                                                          else "")
        which = f"agent {ids[0] + 1}/{n}" if len(ids) == 1 else \
            f"agents {','.join(str(i + 1) for i in ids[:3])}{',...' if len(ids) > 3 else ''}/{n}"
        done = f" ({self.finished} done)" if self.finished else ""
        return f"{self.label}: {which} {names}{done}"

    @staticmethod
    def _short(name: str) -> str:
        return name if len(name) <= _NAME_WIDTH else name[:_NAME_WIDTH - 3] + "..."

    def line(self) -> str:
        """The progress as one line, as written when stderr is not a terminal."""
        done, elapsed = self.units(), self.clock() - self.start
        left = f"~{_duration(elapsed * (self.total - done) / done)} left" if done else \
            "time left unknown"
        return (f"{self.describe()} | {100 * done / max(self.total, 1):3.0f}% | "
                f"{_count(done)}/{_count(self.total)} runs x rounds | "
                f"{_duration(elapsed)} elapsed, {left}")

    def _show(self) -> None:
        if self.bar is not None:
            self.bar.n = self.units()
            self.bar.set_description_str(self.describe(), refresh=False)
            self.bar.refresh()
        elif self.clock() - self.last_line >= self.interval:
            self.last_line = self.clock()
            self._write(self.line())

    def _write(self, text: str) -> None:
        self.lines += 1
        print(text, file=self.stream, flush=True)

    def close(self) -> None:
        """Close the bar, or write the final line of a job that wrote lines."""
        if self.bar is not None:
            self.bar.close()
        elif self.lines:  # a job long enough to have written lines ends with one
            self._write(self.line())

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Reporter:
    """How one agent's run reports to the job: ``(task, rounds done)`` into ``sink``.

    ``sink`` is the job, or a queue to it from a worker process. Reports go at most every
    :data:`REPORT_INTERVAL` seconds. The runner calls it every few thousand rounds or once a
    block, never once a round."""

    __slots__ = ("sink", "task", "last")

    def __init__(self, sink: Any, task: int):
        self.sink, self.task, self.last = sink, task, -math.inf

    def __call__(self, rounds: int, final: bool = False) -> None:
        """Report ``rounds`` done if the interval has passed or ``final`` is set."""
        now = time.monotonic()
        if final or now - self.last >= REPORT_INTERVAL:
            self.last = now
            self.sink.put((self.task, int(rounds)))


@contextmanager
def bridge(job: Job | None, parallel: bool, backend: str | None) -> Iterator[Any]:
    """Where the tasks report: the job itself, a queue to it, or ``None``.

    In this process and its threads, it is the job itself. With joblib's process backends, it is
    a queue of a :class:`multiprocessing.Manager`, drained into the job by a thread of this
    process. On other backends, such as dask and ray, it is ``None``, so there is no progress:
    their workers may be on other machines."""
    backend = backend_in_force(backend)
    if not isinstance(job, Job) or not parallel or backend == "threading":
        yield job  # in this process, or already a queue (a sweep's task run in parallel)
        return
    if backend not in (None, "loky", "multiprocessing"):
        yield None
        return
    import multiprocessing
    import queue as queue_module

    with multiprocessing.Manager() as manager:
        q = manager.Queue()
        stop = threading.Event()

        def drain() -> None:
            while True:
                try:
                    message = q.get(timeout=1.0)
                except queue_module.Empty:
                    if stop.is_set():
                        return
                    job.tick()
                    continue
                except (EOFError, OSError):  # the manager is gone
                    return
                if message is None:
                    return
                job.put(message)

        thread = threading.Thread(target=drain, daemon=True)
        thread.start()
        try:
            yield q
        finally:
            stop.set()
            q.put(None)
            thread.join(timeout=5.0)


def display(plan: list[tuple[str, int, int]], progress: bool | None, label: str) -> Any:
    """The job's progress as a context manager; ``None`` inside when nothing is shown."""
    job = Job.create(plan, progress, label)
    return nullcontext(None) if job is None else job

