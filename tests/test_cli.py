"""The command line: one-line errors (exit code 2) checked before any work, Ctrl-C (exit code
130), and the output folder's safety (``--force`` replaces only what ldp-gym wrote)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ldp_gym
from ldp_gym import cli
from ldp_gym.cli import MARKER, main

TINY = ["--horizon", "50", "--runs", "2", "--quiet"]


def run(out, *extra):
    return main(["run", "LDPMAB-v0", "--agents", "UCB1", *TINY, "--out", str(out), *extra])


def one_line_error(capsys, needle):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ldp-gym: error:") and needle in err, err
    assert "Traceback" not in err
    return err


def tree(folder: Path) -> dict:
    """Every file under ``folder`` with its content (what must survive)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else None
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def user_files(tmp_path):
    """A folder of the user's: files and a subfolder ldp-gym never wrote."""
    folder = tmp_path / "mine"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("precious")
    (folder / "sub" / "data.csv").write_text("1,2,3")
    return folder


# ------------------------------------------------------------------------------- basics
def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "LDPMAB-v0" in out and "AdaP-KLUCB" in out and "azize2022-fig2" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert lines["LDP-UCB"].endswith("local DP (needs --epsilon)")
    assert lines["AdaC-UCB"].endswith("global zCDP (needs --epsilon)")
    assert lines["Dist-DP-SE"].endswith("distributed DP (needs --epsilon)")
    assert lines["JDP-LinUCB"].endswith("joint DP (needs --epsilon)")
    assert lines["UCB1"].endswith("non-private")
    # the descriptions of the experiments start in one column
    starts = {line.index(line.split()[1], len(line.split()[0]) + 2)
              for name, line in lines.items() if name.startswith(("azize", "chowdhury"))}
    assert len(starts) == 1


def test_no_command_prints_usage_exit_2(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: ldp-gym") and "run" in err and "reproduce" in err


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"ldp-gym {ldp_gym.__version__}"


def test_python_m_ldp_gym():
    proc = subprocess.run([sys.executable, "-m", "ldp_gym", "--version"], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"ldp-gym {ldp_gym.__version__}"


def test_a_closed_pipe_is_no_traceback():
    """``ldp-gym list | head -1``: the reader leaves early; the command stops quietly."""
    proc = subprocess.Popen([sys.executable, "-m", "ldp_gym", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # gone before the child (still importing) writes anything
    err = proc.stderr.read().decode()
    proc.wait()
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["run", "reproduce"])
def test_every_option_has_help_with_its_default(command):
    sub = next(a for a in cli._parser()._actions if a.dest == "command").choices[command]
    for action in sub._actions:
        if action.dest == "help":
            continue
        # options state their default, required arguments that they are required
        assert action.help and ("default" in action.help or action.required
                                and "required" in action.help), action.dest


def test_quick_help_states_a_duration():
    sub = next(a for a in cli._parser()._actions if a.dest == "command").choices["reproduce"]
    quick = next(a for a in sub._actions if a.dest == "quick")
    assert cli.QUICK_DURATION in quick.help and "min" in quick.help


def test_run_writes_results_marker_and_umask_permissions(tmp_path, capsys):
    out = tmp_path / "a" / "run"
    old = os.umask(0o002)
    try:
        assert main(["run", "LDPMAB-v0", "--agents", "ucb1,AdaP-UCB", "--epsilon", "0.5,1",
                     "--horizon", "300", "--runs", "3", "--out", str(out), "--wrapper",
                     "laplace", "--quiet"]) == 0
    finally:
        os.umask(old)
    assert {p.name for p in out.iterdir()} == {"results.npz", "table.md", "regret.png", MARKER}
    assert set(json.loads((out / MARKER).read_text())["files"]) == {"results.npz", "table.md",
                                                                   "regret.png"}
    text = capsys.readouterr().out
    assert "AdaP-UCB eps=0.5" in text and "UCB1 + laplace eps=1" in text
    assert (out.stat().st_mode & 0o777) == 0o775 and (out.parent.stat().st_mode & 0o777) == 0o775
    assert (out / "table.md").stat().st_mode & 0o777 == 0o664
    assert [p.name for p in out.parent.iterdir()] == ["run"]  # no temporary folder left


def test_delta_reaches_the_approximate_dp_agents(tmp_path, capsys):
    assert main(["run", "LDPLinearBandit-v0", "--agents", "LDP-OLS,LDP-SGD", "--delta", "0.1",
                 *TINY, "--out", str(tmp_path / "o")]) == 0
    assert "epsilon=1, delta=0.1" in capsys.readouterr().out


# ------------------------------------------------------------------- one-line errors, exit 2
@pytest.mark.parametrize("argv,needle", [
    (["run", "Nope-v0", "--agents", "UCB1"], "Nope-v0"),
    (["run", "LDPMAB-v0", "--agents", "Foo"], "Foo"),
    (["run", "LDPMAB-v0", "--agents", "AdaP-UCB", "--epsilon", "0"], "epsilon"),
    (["run", "LDPMAB-v0", "--agents", "AdaP-UCB", "--epsilon", "nan"], "epsilon"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--horizon", "-5"], "horizon"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--runs", "x"], "runs"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--seed=-1"], "seed"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--jobs", "0"], "jobs"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--wrapper", "gaussian", "--delta", "2"], "delta"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--wrapper", "gaussian", "--delta", "nan"], "delta"),
    # options that do not apply
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--epsilon", "1"], "--epsilon"),
    (["run", "LDPMAB-v0", "--agents", "UCB1,AdaP-UCB", "--delta", "0.01"], "--delta"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--wrapper", "laplace", "--delta", "0.01"],
     "--delta"),
    (["run", "LDPLinearBandit-v0", "--agents", "LDP-SGD", "--delta", "0.01"], "--delta"),
    (["run", "LDPMAB-v0", "--agents", "AdaP-UCB", "--wrapper", "laplace"], "--wrapper"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--secure"], "--secure"),
    (["run", "LDPMAB-v0", "--agents", "LDP-OLS"], "contextual env"),
    (["reproduce", "nope"], "nope"),
    (["reproduce", "azize2022-fig2", "--seed=-1"], "seed"),
    (["reproduce", "azize2022-fig2", "--jobs", "-2"], "jobs"),
])
def test_errors_one_line_exit_2_nothing_written(tmp_path, capsys, argv, needle):
    out = tmp_path / "out"
    assert main(argv + ["--out", str(out)]) == 2
    one_line_error(capsys, needle)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["run", "reproduce"])
def test_out_problems_are_found_before_the_run(tmp_path, capsys, monkeypatch, command):
    def never(*a, **k):
        raise AssertionError("the run started")

    monkeypatch.setattr(ldp_gym, "run", never)
    from ldp_gym.experiments import EXPERIMENTS

    monkeypatch.setitem(EXPERIMENTS, "azize2022-fig2", never)
    argv = ["run", "LDPMAB-v0", "--agents", "UCB1"] if command == "run" \
        else ["reproduce", "azize2022-fig2"]
    (tmp_path / "file.txt").write_text("keep")
    for out, needle in [("file.txt", "is a file"), ("file.txt/sub", "is a file"),
                        ("file.txt/a/b", "is a file")]:
        assert main(argv + ["--out", str(tmp_path / out)]) == 2
        one_line_error(capsys, needle)
    monkeypatch.setattr(cli.os, "access", lambda *a: False)  # as a non-root user would see it
    assert main(argv + ["--out", str(tmp_path / "new" / "out")]) == 2
    one_line_error(capsys, "permission denied")
    assert tree(tmp_path) == {"file.txt": b"keep"}


def test_library_errors_during_the_run_are_one_line_and_leave_nothing(tmp_path, capsys,
                                                                      monkeypatch):
    def fails(**kwargs):
        raise ValueError("n_runs must be <= 10, got 11")

    monkeypatch.setattr(ldp_gym, "run", fails)
    assert run(tmp_path / "a" / "b" / "out") == 2
    one_line_error(capsys, "n_runs")
    assert list(tmp_path.iterdir()) == []  # neither the folder nor the parents made for it


def test_ctrl_c_is_one_line_exit_130_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    def interrupted(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ldp_gym, "run", interrupted)
    assert run(tmp_path / "a" / "out") == 130
    assert capsys.readouterr().err == "ldp-gym: interrupted\n"
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_with_two_jobs(tmp_path):
    """A real SIGINT to the process group (as a terminal sends it) while loky workers run."""
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from ldp_gym.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "run", "LDPMAB-v0", "--agents", "UCB1,KL-UCB", "--horizon",
         "5000000", "--runs", "20", "--jobs", "2", "--quiet", "--out", str(tmp_path / "r" / "o")],
        cwd=tmp_path, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "r").glob(".o.tmp-*")):  # validated: the run starts
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.5)  # the workers are running
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and err == "ldp-gym: interrupted\n", err
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- --force safety
def test_existing_output_needs_force(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    assert run(tmp_path / "x") == 2
    one_line_error(capsys, "exists")


@pytest.mark.parametrize("cwd,outs,message", [
    ("mine", (".", "", "{mine}"), "working folder"),
    ("mine/sub", ("..", "../..", "{tmp}"), "parent of the working folder")])
def test_force_refuses_the_working_folder_and_its_parents(tmp_path, capsys, monkeypatch,
                                                          user_files, cwd, outs, message):
    monkeypatch.chdir(tmp_path / cwd)
    before = tree(tmp_path)
    for out in outs:
        assert run(out.format(mine=user_files, tmp=tmp_path), "--force") == 2
        one_line_error(capsys, message)
    assert tree(tmp_path) == before


def test_force_refuses_home_and_root(tmp_path, capsys, monkeypatch, user_files):
    monkeypatch.setenv("HOME", str(user_files))
    monkeypatch.chdir(tmp_path)
    before = tree(user_files)
    assert run(user_files, "--force") == 2
    one_line_error(capsys, "home folder")
    assert run("/", "--force") == 2
    one_line_error(capsys, "root folder")
    assert tree(user_files) == before


def test_force_refuses_a_symlink(tmp_path, capsys, user_files):
    link = tmp_path / "link"
    link.symlink_to(user_files, target_is_directory=True)
    before = tree(user_files)
    for extra in ((), ("--force",)):
        assert run(link, *extra) == 2
        one_line_error(capsys, "symbolic link")
    assert link.is_symlink() and tree(user_files) == before


def test_force_refuses_a_folder_ldp_gym_did_not_write(tmp_path, capsys, user_files):
    before = tree(user_files)
    assert run(user_files, "--force") == 2
    one_line_error(capsys, MARKER)
    (user_files / MARKER).write_text("not a marker")  # a corrupt or foreign marker
    assert run(user_files, "--force") == 2
    one_line_error(capsys, "did not write")
    (user_files / MARKER).unlink()
    assert tree(user_files) == before


def test_force_refuses_results_with_the_users_files_added(tmp_path, capsys):
    out = tmp_path / "out"
    assert run(out) == 0
    (out / "my-analysis.ipynb").write_text("{}")
    (out / "figs").mkdir()
    (out / "figs" / "a.png").write_bytes(b"png")
    before = tree(out)
    capsys.readouterr()
    assert run(out, "--force") == 2
    one_line_error(capsys, "did not write")
    assert tree(out) == before


def test_force_replaces_an_empty_folder(tmp_path):
    (tmp_path / "out").mkdir()
    assert run(tmp_path / "out", "--force") == 0
    assert (tmp_path / "out" / MARKER).is_file()


def test_force_replaces_its_own_results_atomically(tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert run(out, "--seed", "1") == 0
    old = (out / "results.npz").read_bytes()
    seen = []
    rmtree = cli.shutil.rmtree

    def watch(path, *a, **k):  # when the old folder goes, the new one is complete in place
        if ".old-" in str(path):
            seen.append(sorted(p.name for p in out.iterdir()))
            assert (Path(path) / "results.npz").read_bytes() == old
        return rmtree(path, *a, **k)

    monkeypatch.setattr(cli.shutil, "rmtree", watch)
    assert run(out, "--seed", "2", "--force") == 0
    assert seen == [sorted(["results.npz", "table.md", "regret.png", MARKER])]
    assert (out / "results.npz").read_bytes() != old
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failed_forced_run_keeps_the_old_results(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert run(out) == 0
    before = tree(out)

    def interrupted(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ldp_gym, "run", interrupted)
    assert run(out, "--force") == 130
    assert tree(out) == before and [p.name for p in tmp_path.iterdir()] == ["out"]


# ------------------------------------------------------------------------------- the agents
@pytest.mark.parametrize("delta", [1, 0, -0.1])
def test_ldpsgd_refuses_a_bad_delta(delta):
    from ldp_gym.agents import LDPSGD

    with pytest.raises(ValueError, match="delta"):
        LDPSGD(3, epsilon=1.0, delta=delta, horizon=100)


# ------------------------------------------------------------------------------- third-party
AGENT_MODULE = '''
import numpy as np
from ldp_gym.agents import Agent


class FirstArm(Agent):
    name = "first-arm"

    def _init_state(self, n):
        pass

    def _act(self, obs):
        return np.zeros(obs.shape[0], np.int64)

    def _observe(self, obs, actions, rewards, next_obs):
        pass
'''


def test_third_party_agents_and_env_kwargs(tmp_path, monkeypatch, capsys):
    """``--agents module:Class`` imports the user's class from the current folder;
    ``--env-kwargs`` reaches the env (two arms: the first one, the worse, every round)."""
    (tmp_path / "my_agents.py").write_text(AGENT_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["run", "LDPMAB-v0", "--agents", "my_agents:FirstArm,UCB1", *TINY,
                 "--env-kwargs", '{"means": [0.2, 0.9]}', "--out", "out"]) == 0
    res = ldp_gym.Results.load(tmp_path / "out" / "results.npz")
    assert res.agents == ["first-arm", "UCB1"]
    assert np.allclose(res.regret["first-arm"][:, -1], 0.7 * 50)


@pytest.mark.parametrize("extra,needle", [
    (["--agents", "no_such_module:X"], "--agents: cannot import 'no_such_module'"),
    (["--agents", "json:loads"], "is not an agent class"),
    (["--env-kwargs", "{not json"], "env-kwargs must be a JSON object"),
    (["--env-kwargs", "[1, 2]"], "env-kwargs must be a JSON object"),
    (["--env-kwargs", '{"means": [0.5, 2.0]}'], "--env-kwargs: means"),
    (["--env-kwargs", '{"colour": 1}'], "--env-kwargs: colour: not a parameter of this environment"),
])
def test_third_party_and_env_kwargs_errors_are_one_line(tmp_path, capsys, extra, needle):
    args = ["run", "LDPMAB-v0", "--agents", "UCB1", *TINY, "--out", str(tmp_path / "o")]
    if extra[0] == "--agents":
        args[args.index("--agents") + 1] = extra[1]
    else:
        args += extra
    assert main(args) == 2
    one_line_error(capsys, needle)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("source,needle", [
    ("def broken(:\n",
     "--agents: cannot import 'bad_agents' (SyntaxError: invalid syntax (bad_agents.py, line 1"),
    ("raise RuntimeError('no GPU here')\n",
     "--agents: cannot import 'bad_agents' (RuntimeError: no GPU here)"),
    ("import numpy\n", "--agents: module 'bad_agents' has no 'FirstArm'"),
])
def test_a_third_party_module_that_fails_is_one_line(tmp_path, monkeypatch, capsys, source, needle):
    """A user's module with a syntax error, one that raises on import, or one without the
    class: one line naming the module and the cause, exit code 2, nothing written."""
    (tmp_path / "bad_agents.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "bad_agents", raising=False)
    assert main(["run", "LDPMAB-v0", "--agents", "bad_agents:FirstArm", *TINY, "--out", "o"]) == 2
    one_line_error(capsys, needle)
    assert not (tmp_path / "o").exists()
