"""Faults found by an outside audit, one class per section: each test failed on the code before
its fix.

9: SIGTERM/SIGHUP stop the workers and leave nothing; a killed worker is one line, exit 2.
10: a closed or full stdout never touches the finished results.
11: Results.save replaces an existing file only by a complete one.
12: a full disk is found before the run.
13: two runs into the same --out: the second is refused at once.
17: reproduce without matplotlib writes its tables and results.
19: run(n_jobs=0) refused; merging results of different seeds refused unless told.
"""

import errno
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

import ldp_gym
from ldp_gym import cli
from ldp_gym.cli import MARKER, main
from ldp_gym.results import Results

FAULTS_TINY = ["--horizon", "50", "--runs", "2", "--quiet"]


def _faults_one_line(text: str, needle: str) -> None:
    assert text.count("\n") == 1 and needle in text and "Traceback" not in text, text


def _faults_complete(folder: Path) -> None:
    """``folder`` is a published results folder: the marker lists exactly what is there."""
    listed = set(json.loads((folder / MARKER).read_text())["files"])
    assert listed and listed == {p.name for p in folder.iterdir()} - {MARKER}, listed


def _faults_never(*args, **kwargs):
    raise AssertionError("the run started")


def _faults_argv(command: str, out: Path) -> list[str]:
    if command == "run":
        return ["run", "LDPMAB-v0", "--agents", "UCB1", *FAULTS_TINY, "--out", str(out)]
    return ["reproduce", "azize2022-ablation", "--quick", "--quiet", "--jobs", "1",
            "--out", str(out)]


# ------------------------------------------------------------------ 9: SIGTERM, SIGHUP, kill
def _faults_session(sid: int) -> dict[int, tuple[str, int, str, float]]:
    """The live processes of session ``sid``: pid -> (state, ppid, command line, cpu seconds)."""
    found = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # gone meanwhile
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # zombies compute nothing
            found[int(entry.name)] = (fields[0], int(fields[1]), cmd,
                                      (int(fields[11]) + int(fields[12])) / tick)
    return found


def _faults_workers(pid: int) -> list[tuple[int, float]]:
    return [(p, cpu) for p, (_, ppid, cmd, cpu) in _faults_session(pid).items()
            if ppid == pid and "popen_loky" in cmd]


def _faults_signal_a_run(tmp_path: Path, send, quiet: bool = True) -> tuple[int, str]:
    """Start ``ldp-gym run --jobs 2`` in its own session, wait until both workers compute,
    ``send(main_pid, workers)``, and return the exit code and stderr once no process of the
    session is left. ``quiet=False``: with the progress (its line every 30 s comes later),
    whose multiprocessing manager is one more process."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ldp_gym", "run", "LDPMAB-v0", "--agents", "UCB1,KL-UCB",
         "--horizon", "5000000", "--runs", "20", "--jobs", "2", *["--quiet"] * quiet,
         "--out", str(tmp_path / "r" / "o")],
        cwd=tmp_path, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        deadline = time.monotonic() + 120
        while True:  # both workers exist and have done some work (imports, then the runs)
            workers = _faults_workers(proc.pid)
            if len(workers) == 2 and min(cpu for _, cpu in workers) >= 1.0:
                break
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)
        send(proc.pid, [p for p, _ in workers])
        _, err = proc.communicate(timeout=60)
        deadline = time.monotonic() + 10
        while _faults_session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _faults_session(proc.pid)  # no worker left computing
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in _faults_session(proc.pid):
            os.kill(pid, signal.SIGKILL)
    return proc.returncode, err


needs_proc_and_joblib = pytest.mark.skipif(
    not Path("/proc/self/stat").exists() or not hasattr(signal, "SIGHUP"),
    reason="reads /proc, sends POSIX signals")


@needs_proc_and_joblib
@pytest.mark.parametrize("name,code,group", [("SIGTERM", 143, False), ("SIGHUP", 129, False),
                                             ("SIGTERM", 143, True), ("SIGINT", 130, False),
                                             ("SIGINT", 130, True)])
def test_signals_stop_the_workers_and_leave_nothing(tmp_path, name, code, group):
    """To the main process, or (as Slurm's scancel, or Ctrl-C in a terminal) to every process
    of the job, the progress' manager too."""
    pytest.importorskip("joblib")
    signum = getattr(signal, name)
    kill = os.killpg if group else os.kill
    returncode, err = _faults_signal_a_run(tmp_path, lambda pid, _: kill(pid, signum),
                                           quiet=not group)
    line = "ldp-gym: interrupted\n" if name == "SIGINT" else f"ldp-gym: stopped by {name}\n"
    assert returncode == code and err == line, (returncode, err)
    assert list(tmp_path.iterdir()) == []  # no tmp folder, no lock, no parents made for out


@needs_proc_and_joblib
def test_a_killed_worker_is_one_line_exit_2(tmp_path):
    pytest.importorskip("joblib")
    returncode, err = _faults_signal_a_run(
        tmp_path, lambda _, workers: os.kill(workers[0], signal.SIGKILL))
    assert returncode == 2, (returncode, err)
    _faults_one_line(err, "worker process died")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------- 10: a closed stdout
@pytest.mark.parametrize("command", ["run", "reproduce"])
@pytest.mark.parametrize("stdout", ["closed pipe", "full disk"])
def test_a_closed_or_full_stdout_keeps_the_finished_results(tmp_path, command, stdout):
    argv = [sys.executable, "-m", "ldp_gym", *_faults_argv(command, tmp_path / "r")]
    if stdout == "closed pipe":  # `ldp-gym ... | true`
        proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.stdout.close()
        err = proc.stderr.read() if proc.stderr else ""
        proc.wait(timeout=120)
        assert proc.returncode == 141 and err == "", (proc.returncode, err)
    else:  # `ldp-gym ... > /dev/full`
        if not Path("/dev/full").exists():
            pytest.skip("no /dev/full")
        with open("/dev/full", "w") as full:
            proc = subprocess.run(argv, cwd=tmp_path, stdout=full, stderr=subprocess.PIPE,
                                  text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        _faults_one_line(proc.stderr, "cannot print to stdout")
    _faults_complete(tmp_path / "r")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no tmp folder, no lock


# ------------------------------------------------------------- 11: save over an existing file
def test_save_on_a_full_disk_keeps_the_existing_file(tmp_path, monkeypatch):
    old = Results(np.array([1, 10]), {"A": np.ones((2, 2))}, {"seed": 0})
    path = old.save(tmp_path / "results.npz")
    before = path.read_bytes()

    def full_disk(file, *args, **kwargs):  # writes part, then the disk is full
        handle = open(file, "wb") if isinstance(file, (str, os.PathLike)) else file
        handle.write(b"PK\x03\x04 partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", full_disk)
    new = Results(np.array([1, 10]), {"B": np.zeros((2, 2))}, {"seed": 1})
    with pytest.raises(OSError, match="No space"):
        new.save(path)
    assert path.read_bytes() == before and Results.load(path) == old
    assert [p.name for p in tmp_path.iterdir()] == ["results.npz"]  # no temp file left
    monkeypatch.undo()
    assert new.save(path) == path and Results.load(path) == new  # and a save replaces it


# --------------------------------------------------------------------------- 12: disk room
@pytest.mark.parametrize("command", ["run", "reproduce"])
def test_a_full_disk_is_refused_before_the_run(tmp_path, capsys, monkeypatch, command):
    from ldp_gym.experiments import EXPERIMENTS

    monkeypatch.setattr(ldp_gym, "run", _faults_never)
    monkeypatch.setitem(EXPERIMENTS, "azize2022-ablation", _faults_never)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(cli.shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 1000, 1000))
    assert main(_faults_argv(command, tmp_path / "a" / "out")) == 2
    _faults_one_line(capsys.readouterr().err, "free")
    assert list(tmp_path.iterdir()) == []


def test_the_disk_room_asked_for_grows_with_the_results(tmp_path, capsys, monkeypatch):
    """10^5 runs x 31 checkpoints of float64 (25 MB) do not fit in 20 MB, do in 1 GB."""
    class Started(Exception):
        pass

    def started(**kwargs):
        raise Started

    monkeypatch.setattr(ldp_gym, "run", started)
    usage = namedtuple("usage", "total used free")
    argv = ["run", "LDPMAB-v0", "--agents", "UCB1", "--horizon", "10000000", "--runs",
            "100000", "--quiet", "--out", str(tmp_path / "out")]
    monkeypatch.setattr(cli.shutil, "disk_usage", lambda path: usage(10**12, 0, 20 * 10**6))
    assert main(argv) == 2
    _faults_one_line(capsys.readouterr().err, "free")
    monkeypatch.setattr(cli.shutil, "disk_usage", lambda path: usage(10**12, 0, 10**9))
    with pytest.raises(Started):
        main(argv)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------- 13: one run per --out
@pytest.mark.parametrize("force", [False, True])
def test_a_second_run_into_the_same_out_is_refused_at_once(tmp_path, capsys, monkeypatch,
                                                             force):
    out = tmp_path / "out"
    if force:
        assert main(_faults_argv("run", out)) == 0
        capsys.readouterr()
    lock = tmp_path / ".out.lock"
    holder = os.open(lock, os.O_RDWR | os.O_CREAT)  # another run holds it
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with monkeypatch.context() as m:
            m.setattr(ldp_gym, "run", _faults_never)
            assert main(_faults_argv("run", out) + ["--force"] * force) == 2
        _faults_one_line(capsys.readouterr().err, "another ldp-gym run")
        assert lock.exists()  # the holder's, left alone
    finally:
        os.close(holder)  # the holder ends (its lock file stays behind, as a killed run's)
    assert main(_faults_argv("run", out) + ["--force"] * force) == 0  # a stale lock file
    _faults_complete(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the lock file removed


# ----------------------------------------------------------------- 17: without matplotlib
def test_reproduce_without_matplotlib_writes_tables_and_results(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text('import sys\nsys.modules["matplotlib"] = None\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(shim)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, "-m", "ldp_gym",
                           *_faults_argv("reproduce", tmp_path / "r")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    _faults_one_line(proc.stderr, "ldp-gym[plot]")
    assert "| agent |" in proc.stdout
    _faults_complete(tmp_path / "r")
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [MARKER, "ablation.npz",
                                                                 "table.md"]


# ------------------------------------------------------------ 19: n_jobs=0, merged seeds
def test_run_refuses_n_jobs_0():
    from ldp_gym.agents import UCB1

    with pytest.raises(ValueError, match="n_jobs") as info:
        ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=10, n_runs=1, n_jobs=0,
                    progress=False)
    assert "\n" not in str(info.value)


def test_merge_refuses_different_seeds_unless_told():
    def results(agent, seed):
        return Results(np.array([10, 100]), {agent: np.ones((3, 2))},
                       {"env": "LDPMAB-v0", "horizon": 100, "n_runs": 3, "seed": seed})

    with pytest.raises(ValueError, match="seed") as info:
        results("A", 0).merge(results("B", 1))
    assert "allow_different" in str(info.value) and "\n" not in str(info.value)
    merged = results("A", 0).merge(results("B", 1), allow_different=("seed",))
    assert merged.meta["per_agent"]["seed"] == {"A": 0, "B": 1}
    assert results("A", 0).merge(results("B", 0)).meta["seed"] == 0


# =========================================================================== 14 and 15
# 14: an interrupted sweep, experiment or `reproduce --resume` runs only the tasks it had not
# finished, with bitwise the results of an uninterrupted run; a cache entry of another
# configuration is never used. 15: a Dask task that kills every worker it runs on (as an
# out-of-memory kill does) ends the sweep with one error naming it, instead of hanging.

import faulthandler  # noqa: E402
from contextlib import contextmanager  # noqa: E402

from ldp_gym import runner, sweep_cache  # noqa: E402
from ldp_gym.agents import LDPUCB, UCB1, AdaPKLUCB, AdaPUCB  # noqa: E402
from ldp_gym.experiments import EXPERIMENTS  # noqa: E402
from ldp_gym.runner import run, sweep  # noqa: E402
from ldp_gym.wrappers.reward import VectorLaplaceReward  # noqa: E402

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
    monkeypatch.setattr(sweep_cache, "_versions", lambda: ("0.0.0", "another source"))
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
    assert "\n" not in message and "allowed-failures" in message
    # one task per worker: the culprit is named; on one worker the task queued beside it
    # may be given up on first (the scheduler cannot tell them apart)
    named = ["sweep task 1 (agents 'greedy for memory')"] + \
        (["sweep task 0 (agents 'UCB1')"] if n_workers == 1 else [])
    assert any(n in message for n in named), message


def test_compiled_functions_are_keyed_by_their_name_and_module():
    """numba's dispatchers and ufuncs (held by their module under their name) key a task like
    functions do, instead of making it uncacheable."""
    import hashlib

    from ldp_gym.agents.mab_kernels import kl_ucb, kl_ucb_index

    for f in (kl_ucb, kl_ucb_index):
        sweep_cache._feed(hashlib.sha256(), {"index": f}, [])
