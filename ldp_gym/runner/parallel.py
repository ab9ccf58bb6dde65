"""The parallel backends: tasks run in this process, through joblib (loky, threading,
multiprocessing, ray) or through the futures of a Dask client, each result as it finishes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..background import filled


def is_parallel(n_tasks: int, n_jobs: int) -> bool:
    """Whether :func:`parallel` hands ``n_tasks`` tasks to joblib.

    It does when joblib is installed and there is more than one task and more than one job."""
    if n_jobs == 1 or n_tasks <= 1:
        return False
    try:
        import joblib  # noqa: F401
    except ImportError:  # joblib is optional: run sequentially
        return False
    return True


def parallel(fn: Callable, tasks: list[tuple], n_jobs: int, backend: str | None,
             names: list[str] | None = None) -> list:
    """``[fn(*t) for t in tasks]``, in parallel as :func:`completed` runs them."""
    out: list[Any] = [None] * len(tasks)
    for i, result in completed(fn, tasks, n_jobs, backend, names):
        out[i] = result
    return out


def completed(fn: Callable, tasks: list[tuple], n_jobs: int, backend: str | None,
              names: list[str] | None = None) -> Iterator[tuple[int, Any]]:
    """``(i, fn(*tasks[i]))`` for every task, as each finishes.

    Run sequentially, the tasks go in this process, in order. Else they go through joblib, or
    through the futures of the Dask client when the backend in force is Dask; see
    :func:`_dask_completed`. ``names[i]`` says what task ``i`` is in errors."""
    if not is_parallel(len(tasks), n_jobs):
        for i, t in enumerate(tasks):
            yield i, fn(*t)
        return
    import joblib
    from joblib.parallel import get_active_backend

    if backend == "ray":
        from ray.util.joblib import register_ray

        register_ray()
    # backend None: the backend of an enclosing joblib.parallel_config (joblib's default, loky,
    # without one), so that experiments that sweep inside run where their caller says
    config = joblib.parallel_config(n_jobs=n_jobs) if backend is None else \
        joblib.parallel_config(backend=backend, n_jobs=n_jobs)
    with config:
        active = get_active_backend()[0]
        client = getattr(active, "client", None) if backend_in_force(backend) == "dask" else None
        if client is not None:
            yield from _dask_completed(client, fn, tasks, n_jobs, names,
                                       getattr(active, "submit_kwargs", None) or {})
            return
        # results as they finish where the backend can (loky, threading, dask), so that a
        # sweep keeps each one (cache_dir) before the others end; at the end on the others
        # (multiprocessing, ray)
        streams = getattr(active, "supports_return_generator", False)
        yield from joblib.Parallel(return_as="generator_unordered" if streams else "list")(
            joblib.delayed(_indexed)(i, fn, t) for i, t in enumerate(tasks))


def _indexed(i: int, fn: Callable, args: tuple) -> tuple[int, Any]:
    return i, _in_worker(fn, *args)


def _in_worker(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` as a worker of a parallel call: the workers are meant to fill the cores,
    so draws ahead stay in the worker's thread (:func:`~ldp_gym.background.filled`)."""
    with filled():
        return fn(*args)


def _dask_completed(client: Any, fn: Callable, tasks: list[tuple], n_jobs: int,
                    names: list[str] | None, submit_kwargs: dict) -> Iterator[tuple[int, Any]]:
    """:func:`completed` through the futures of a ``distributed.Client``, each result as it
    finishes.

    At most ``n_jobs`` tasks are in flight; with -1, all of them. A task the scheduler gave up
    on ends the whole call with one ``RuntimeError`` naming it. The scheduler gives up on a
    task that killed ``distributed.scheduler.allowed-failures`` + 1 workers, as an
    out-of-memory kill does. Joblib's Dask backend would wait for it forever. What is still in
    flight is cancelled when the call ends early."""
    from distributed import KilledWorker, as_completed

    limit = len(tasks) if n_jobs < 1 else n_jobs
    waiting = iter(range(len(tasks)))
    flying: dict[Any, tuple[int, Any]] = {}  # future key -> (task, future)

    def submit() -> Any:
        i = next(waiting, None)
        if i is None:
            return None
        future = client.submit(_in_worker, fn, *tasks[i], pure=False, **submit_kwargs)
        flying[future.key] = (i, future)
        return future

    running = as_completed([submit() for _ in range(min(limit, len(tasks)))])
    try:
        for future in running:
            i, _ = flying.pop(future.key)
            try:
                result = future.result()
            except KilledWorker as exc:
                what = names[i] if names else f"task {i}"
                _, last, allowed = (*exc.args, None, None, None)[:3]
                raise RuntimeError(
                    f"{what} was on a Dask worker that died (killed by it or by a task beside "
                    f"it, as an out-of-memory kill does) more often than the scheduler allows "
                    f"(distributed.scheduler.allowed-failures = {allowed}), so it gave up on it "
                    f"(last worker: {last}); the sweep is stopped") from None
            following = submit()
            if following is not None:
                running.add(following)
            yield i, result
    finally:
        if flying:
            client.cancel([f for _, f in flying.values()])


def backend_in_force(backend: str | None) -> str | None:
    """``backend``, else the name of the backend of an enclosing ``joblib.parallel_config``
    (``"dask"``, ``"ray"``, ``"threading"``, ...); ``None`` for joblib's default (loky), or
    without joblib."""
    if backend is not None:
        return backend
    try:
        from joblib.parallel import BACKENDS, get_active_backend
    except ImportError:
        return None
    active = type(get_active_backend()[0])
    return next((name for name, cls in BACKENDS.items() if cls is active and name != "loky"), None)
