"""Faults found by an outside audit, one class per section: each test failed on the code before
its fix."""

import faulthandler
import os
import signal
from contextlib import contextmanager

import numpy as np
import pytest

from ldp_gym import runner
from ldp_gym.agents import LDPUCB, UCB1, AdaPKLUCB, AdaPUCB
from ldp_gym.cli import main
from ldp_gym.experiments import EXPERIMENTS
from ldp_gym.results import Results
from ldp_gym.runner import run, sweep
from ldp_gym.wrappers.reward import VectorLaplaceReward

# =========================================================================== 14 and 15
# 14: an interrupted sweep, experiment or `reproduce --resume` runs only the tasks it had not
# finished, with bitwise the results of an uninterrupted run; a cache entry of another
# configuration is never used. 15: a Dask task that kills every worker it runs on (as an
# out-of-memory kill does) ends the sweep with one error naming it, instead of hanging.

#: the runner's own task function (the tests wrap it to count or interrupt tasks)
_RUN_KWARGS = runner._run_kwargs


def _tasks() -> list[dict]:
    """Six tiny tasks: round by round, committed blocks, a wrapper, env kwargs, seeds."""
    tasks = []
    for eps in (0.5, 1.0):
        tasks.append(dict(env="LDPMAB-v0", horizon=60, n_runs=2, seed=0, progress=False,
                          agents={"LDP-UCB": (LDPUCB, {"epsilon": eps}),
                                  "AdaP-KLUCB": (AdaPKLUCB, {"epsilon": eps})}))
        tasks.append(dict(env="LDPMAB-v0", horizon=60, n_runs=2, seed=[1, 2], progress=False,
                          agents={"UCB1 + Laplace": UCB1}, checkpoints=[10, 60],
                          wrappers=[(VectorLaplaceReward, {"epsilon": eps, "seed": 3})]))
        tasks.append(dict(env="LDPMAB-v0", horizon=60, n_runs=2, seed=4, progress=False,
                          agents={"UCB1": UCB1},
                          env_kwargs={"means": np.array([0.9, 0.5, eps / 2])}))
    return tasks


def _assert_bitwise(expected: list[Results], got: list[Results]) -> None:
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        assert list(a.regret) == list(b.regret)
        assert np.array_equal(a.checkpoints, b.checkpoints)
        assert a.checkpoints.dtype == b.checkpoints.dtype
        for name in a.regret:
            assert np.array_equal(a.regret[name], b.regret[name])
            assert a.regret[name].dtype == b.regret[name].dtype
            assert a.regret[name].tobytes() == b.regret[name].tobytes(), name
        assert a.meta == b.meta
        assert list(a.timings) == list(b.timings)
        assert a.table() == b.table()


class _Counting:
    """``runner._run_kwargs`` that records which tasks run (by their position in ``tasks``)
    and raises KeyboardInterrupt when the ``stop_after + 1``-th starts."""

    def __init__(self, tasks: list[dict], stop_after: int | None = None):
        self.tasks, self.stop_after, self.ran = tasks, stop_after, []
        self.real = _RUN_KWARGS

    def __call__(self, kwargs, sink=None, offset=0):
        if self.stop_after is not None and len(self.ran) == self.stop_after:
            raise KeyboardInterrupt
        self.ran.append(next(i for i, t in enumerate(self.tasks) if t is kwargs))
        return self.real(kwargs, sink, offset)


def test_sweep_resumed_after_an_interrupt_is_bitwise_and_skips_the_finished_tasks(
        tmp_path, monkeypatch):
    tasks = _tasks()
    expected = sweep(tasks, n_jobs=1)
    cache = tmp_path / "cache"
    interrupted = _Counting(tasks, stop_after=4)
    monkeypatch.setattr(runner, "_run_kwargs", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sweep(tasks, n_jobs=1, cache_dir=cache)
    assert interrupted.ran == [0, 1, 2, 3]
    assert len(list(cache.glob("*.npz"))) == 4
    assert not [p for p in cache.iterdir() if p.suffix != ".npz"]  # no temporary file left
    resumed = _Counting(tasks)
    monkeypatch.setattr(runner, "_run_kwargs", resumed)
    out = sweep(tasks, n_jobs=1, cache_dir=cache)
    assert resumed.ran == [4, 5]  # the four finished tasks were not run again
    _assert_bitwise(expected, out)
    again = _Counting(tasks)
    monkeypatch.setattr(runner, "_run_kwargs", again)
    _assert_bitwise(expected, sweep(tasks, n_jobs=1, cache_dir=cache))
    assert again.ran == []


def test_sweep_cache_in_parallel_workers_is_bitwise(tmp_path):
    tasks = _tasks()
    expected = sweep(tasks, n_jobs=1)
    _assert_bitwise(expected, sweep(tasks, n_jobs=2, cache_dir=tmp_path))
    assert len(list(tmp_path.glob("*.npz"))) == len(tasks)
    _assert_bitwise(expected, sweep(tasks, n_jobs=2, cache_dir=tmp_path))


def _variants() -> dict[str, dict]:
    """A base task and, by name, tasks that differ from it in one thing that changes results."""
    base = dict(env="LDPMAB-v0", horizon=50, n_runs=2, seed=0, checkpoints=[10, 50],
                env_kwargs={"means": [0.9, 0.5, 0.1]},
                agents={"A": (AdaPUCB, {"epsilon": 1.0})},
                wrappers=[(VectorLaplaceReward, {"epsilon": 1.0, "seed": 1})])
    return {
        "base": base,
        "env": {**base, "env": "LDPAdversarialMAB-v0", "env_kwargs": {}},
        "env kwargs": {**base, "env_kwargs": {"means": [0.9, 0.5, 0.2]}},
        "env kwargs type": {**base, "env_kwargs": {"means": np.array([0.9, 0.5, 0.1])}},
        "agent kwargs": {**base, "agents": {"A": (AdaPUCB, {"epsilon": 2.0})}},
        "agent class": {**base, "agents": {"A": (AdaPKLUCB, {"epsilon": 1.0})}},
        "agent name": {**base, "agents": {"B": (AdaPUCB, {"epsilon": 1.0})}},
        "horizon": {**base, "horizon": 60},
        "runs": {**base, "n_runs": 3},
        "seed": {**base, "seed": 1},
        "seed sequence": {**base, "seed": np.random.SeedSequence(0, spawn_key=(1,))},
        "checkpoints": {**base, "checkpoints": [20, 50]},
        "wrapper kwargs": {**base, "wrappers": [(VectorLaplaceReward, {"epsilon": 2.0, "seed": 1})]},
        "no wrapper": {**base, "wrappers": []},
    }


def test_a_cache_entry_of_another_configuration_is_never_used(tmp_path, monkeypatch):
    variants = _variants()
    sweep([variants["base"]], n_jobs=1, cache_dir=tmp_path)
    for name, task in variants.items():
        if name == "base":
            continue
        count = _Counting([task])
        monkeypatch.setattr(runner, "_run_kwargs", count)
        got = sweep([task], n_jobs=1, cache_dir=tmp_path)
        assert count.ran == [0], name  # recomputed, not the base's entry
        monkeypatch.setattr(runner, "_run_kwargs", count.real)
        _assert_bitwise(sweep([task], n_jobs=1), got)
    # what does not change results does not change the key; the library's version does
    count = _Counting([{**variants["base"], "progress": False, "label": "x"}])
    monkeypatch.setattr(runner, "_run_kwargs", count)
    sweep(count.tasks, n_jobs=1, cache_dir=tmp_path)
    assert count.ran == []
    monkeypatch.setattr(runner, "_versions", lambda: ("0.0.0", "another source"))
    sweep(count.tasks, n_jobs=1, cache_dir=tmp_path)
    assert count.ran == [0]


def _agent_at(eps: float):
    def build(venv):
        return AdaPUCB.from_env(venv, epsilon=eps)
    return build


def test_closures_and_local_classes_of_one_name_are_told_apart(tmp_path, monkeypatch):
    def local_class(eps: float) -> type:
        class Tuned(AdaPUCB):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **{**kwargs, "epsilon": eps})
        return Tuned

    base = dict(env="LDPMAB-v0", horizon=50, n_runs=2, seed=0, progress=False)
    for make in (_agent_at, local_class):
        tasks = [{**base, "agents": {"A": make(eps)}} for eps in (0.5, 4.0)]
        count = _Counting(tasks)
        monkeypatch.setattr(runner, "_run_kwargs", count)
        got = [sweep([t], n_jobs=1, cache_dir=tmp_path)[0] for t in tasks]
        assert count.ran == [0, 1], make  # the second is not the first's entry
        assert not np.array_equal(got[0].regret["A"], got[1].regret["A"])
        _assert_bitwise(got, [sweep([t], n_jobs=1, cache_dir=tmp_path)[0] for t in tasks])
        assert count.ran == [0, 1]


def test_tasks_that_cannot_be_keyed_run_every_time_with_a_warning(tmp_path, monkeypatch):
    task = dict(env="LDPMAB-v0", horizon=20, n_runs=2, progress=False,
                agents={"UCB1": lambda venv: UCB1.from_env(venv)})
    count = _Counting([task])
    monkeypatch.setattr(runner, "_run_kwargs", count)
    for _ in range(2):
        with pytest.warns(UserWarning, match="sweep task 0 is run without cache_dir: a lambda"):
            sweep([task], n_jobs=1, cache_dir=tmp_path)
    assert count.ran == [0, 0]
    assert not list(tmp_path.glob("*.npz"))


def test_run_by_agent_is_bitwise_run():
    from ldp_gym.experiments.common import run_by_agent
    from ldp_gym.experiments.mab import _formula_variants

    agents = {"AdaP-UCB": (AdaPUCB, {"epsilon": 1.0}), "UCB1": UCB1,
              **{name: (cls, {"epsilon": 1.0}) for name, cls in _formula_variants().items()}}
    kwargs = dict(horizon=300, n_runs=3, seed=5, progress=False)
    expected = run("LDPMAB-v0", agents, **kwargs)
    _assert_bitwise([expected], [run_by_agent("LDPMAB-v0", agents, n_jobs=1, **kwargs)])


def test_experiment_resumed_after_an_interrupt_is_bitwise(tmp_path, monkeypatch):
    experiment = EXPERIMENTS["azize2022-fig3"]  # quick: ten tasks, well under a second
    expected = experiment(quick=True, n_jobs=1, progress=False)
    real = _RUN_KWARGS
    ran = []

    def interrupt_after_three(kwargs, sink=None, offset=0):
        if len(ran) == 3:
            raise KeyboardInterrupt
        ran.append(kwargs["agents"])
        return real(kwargs, sink, offset)

    monkeypatch.setattr(runner, "_run_kwargs", interrupt_after_three)
    with pytest.raises(KeyboardInterrupt):
        experiment(quick=True, n_jobs=1, progress=False, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 3
    rerun = []

    def count(kwargs, sink=None, offset=0):
        rerun.append(kwargs["agents"])
        return real(kwargs, sink, offset)

    monkeypatch.setattr(runner, "_run_kwargs", count)
    got = experiment(quick=True, n_jobs=1, progress=False, cache_dir=tmp_path)
    assert len(rerun) == 7 and not [a for a in rerun if a in ran]
    assert got.title == expected.title and got.table == expected.table
    assert got.notes == expected.notes
    assert list(got.results) == list(expected.results)
    _assert_bitwise(list(expected.results.values()), list(got.results.values()))


def test_reproduce_resume_keeps_the_finished_tasks_until_the_results_are_written(
        tmp_path, monkeypatch, capsys):
    out = tmp_path / "fig3"
    cache = tmp_path / ".fig3.resume"
    argv = ["reproduce", "azize2022-fig3", "--quick", "--jobs", "1", "--quiet", "--out", str(out)]
    assert main([*argv[:-1], str(tmp_path / "whole")]) == 0
    real = _RUN_KWARGS
    calls = []

    def interrupt_after_four(kwargs, sink=None, offset=0):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(kwargs, sink, offset)

    monkeypatch.setattr(runner, "_run_kwargs", interrupt_after_four)
    capsys.readouterr()
    assert main(argv) == 130
    assert not out.exists() and len(list(cache.glob("*.npz"))) == 4
    assert "--resume" in capsys.readouterr().err
    monkeypatch.setattr(runner, "_run_kwargs", real)
    # without --resume: one line, exit 2, the kept tasks untouched
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--resume" in err and str(cache) in err
    assert len(list(cache.glob("*.npz"))) == 4
    calls.clear()
    monkeypatch.setattr(runner, "_run_kwargs", lambda *a: (calls.append(1), real(*a))[1])
    assert main([*argv, "--resume"]) == 0
    assert len(calls) == 6  # the four kept tasks were not run again
    assert not cache.exists()  # removed once the results are written
    whole = Results.load(tmp_path / "whole" / "fig3.npz")
    resumed = Results.load(out / "fig3.npz")
    _assert_bitwise([whole], [resumed])
    assert (out / "table.md").read_text() == (tmp_path / "whole" / "table.md").read_text()


# --------------------------------------------------------------------------- Dask


@contextmanager
def _deadline(seconds: int):
    """Fail (TimeoutError) instead of hanging past ``seconds``; should even that hang, the
    process ends itself with a traceback ``seconds`` later."""

    def expire(signum, frame):
        raise TimeoutError(f"no answer within {seconds} s: the sweep hangs")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    faulthandler.dump_traceback_later(2 * seconds, exit=True)
    try:
        yield
    finally:
        signal.alarm(0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("n_workers", [1, 2])
def test_a_dask_task_that_kills_its_worker_ends_the_sweep_with_one_error_naming_it(n_workers):
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("dask.distributed")
    caller = os.getpid()

    def kill_my_worker(venv):  # (pickled by value: the worker needs no test module)
        if os.getpid() == caller:  # (joblib runs the tasks here when the cluster has 1 thread)
            raise RuntimeError("the task ran in the caller's process, not on a Dask worker")
        os.kill(os.getpid(), signal.SIGKILL)

    tasks = [dict(env="LDPMAB-v0", horizon=20, n_runs=2, seed=0, progress=False,
                  agents={"UCB1": UCB1}),
             dict(env="LDPMAB-v0", horizon=20, n_runs=2, seed=0, progress=False,
                  agents={"greedy for memory": kill_my_worker})]
    # the scheduler gives up on a task at its first killed worker; one task at a time on
    # a worker, so that only the culprit is running on the worker it kills
    config = {"distributed.scheduler.allowed-failures": 0,
              "distributed.scheduler.worker-saturation": 1.0}
    with _deadline(150), dask.config.set(config), \
            distributed.LocalCluster(n_workers=n_workers, processes=True, threads_per_worker=1,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        with pytest.raises(RuntimeError) as info:
            sweep(tasks, n_jobs=2, backend="dask")
    message = str(info.value)
    assert "\n" not in message
    assert "sweep task 1 (agents 'greedy for memory')" in message
    assert "allowed-failures" in message
