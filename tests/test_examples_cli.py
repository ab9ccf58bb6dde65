"""The examples, the command line (errors: one line, exit code 2, nothing written) and doctests."""

import doctest
import importlib
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from ldp_gym.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_example_runs(tmp_path, capsys):
    mod = runpy.run_path(str(ROOT / "examples" / "quickstart.py"))
    res = mod["main"](out=str(tmp_path / "q.png"), horizon=500, n_runs=3)
    assert (tmp_path / "q.png").exists() and len(res.agents) == 3
    assert "the server received" in capsys.readouterr().out


@pytest.mark.parametrize("module", [
    "ldp_gym", "ldp_gym.runner", "ldp_gym.results", "ldp_gym.envs.mab", "ldp_gym.experiments",
    "ldp_gym.agents.mab", "ldp_gym.agents.adapters", "ldp_gym.wrappers.mechanisms",
    "ldp_gym.wrappers.noise", "ldp_gym.wrappers.continual",
    "ldp_gym.wrappers.reward", "ldp_gym.wrappers.audit"])
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_cli_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "LDPMAB-v0" in out and "AdaP-KLUCB" in out and "azize2022-fig2" in out


def test_cli_run_writes_results(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["run", "LDPMAB-v0", "--agents", "ucb1,AdaP-UCB", "--epsilon", "0.5,1", "--horizon",
                 "300", "--runs", "3", "--out", str(out), "--wrapper", "laplace", "--quiet"])
    assert code == 0
    assert {p.name for p in out.iterdir()} == {"results.npz", "table.md", "regret.png"}
    text = capsys.readouterr().out
    assert "AdaP-UCB eps=0.5" in text and "UCB1 + laplace eps=1" in text
    assert not list(tmp_path.glob(".run.tmp-*"))


@pytest.mark.parametrize("argv,needle", [
    (["run", "Nope-v0", "--agents", "UCB1"], "Nope-v0"),
    (["run", "LDPMAB-v0", "--agents", "Foo"], "Foo"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--epsilon", "0"], "epsilon"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--epsilon", "nan"], "epsilon"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--horizon", "-5"], "horizon"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--runs", "x"], "runs"),
    (["run", "LDPMAB-v0", "--agents", "UCB1", "--wrapper", "gaussian", "--delta", "2"], "delta"),
    (["reproduce", "nope"], "nope"),
    ([], "command"),
])
def test_cli_errors_one_line_exit_2_nothing_written(tmp_path, capsys, argv, needle):
    out = tmp_path / "out"
    extra = ["--out", str(out)] if argv[:1] in (["run"], ["reproduce"]) else []
    assert main(argv + extra) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ldp-gym: error:") and needle in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_cli_refuses_existing_output(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    assert main(["run", "LDPMAB-v0", "--agents", "UCB1", "--out", str(tmp_path / "x")]) == 2
    assert "exists" in capsys.readouterr().err


def test_console_script_entry_point():
    proc = subprocess.run([sys.executable, "-m", "ldp_gym.cli", "list"], capture_output=True, text=True)
    assert proc.returncode == 0 and "LDPMAB-v0" in proc.stdout


def test_reproduce_quick_local_vs_global(tmp_path, capsys):
    out = tmp_path / "lvg"
    assert main(["reproduce", "mab-local-vs-global", "--quick", "--out", str(out), "--quiet",
                 "--jobs", "1"]) == 0
    assert {"table.md", "figure.png", "local_vs_global.npz"} <= {p.name for p in out.iterdir()}
    assert "LDP-UCB (local)" in (out / "table.md").read_text()


@pytest.mark.parametrize("name", ["han2021-single", "han2021-multi", "han2021-logistic",
                                  "han2021-poisson", "zheng2020-rates"])
def test_glm_experiments_run_small(monkeypatch, tmp_path, name):
    """The GLM catalogue code end to end on a tiny size (the numbers are the notes' business)."""
    from ldp_gym.experiments import EXPERIMENTS, glm

    monkeypatch.setattr(glm, "QUICK", (300, 2))
    monkeypatch.setattr(glm, "RATES_QUICK", (300, 2))
    monkeypatch.setattr(glm, "STEP_GRID", (0.3, 3.0))
    monkeypatch.setattr(glm, "TUNING_RUNS", 2)
    report = EXPERIMENTS[name](quick=True, n_jobs=1, progress=False)
    paths = report.write(tmp_path)
    assert (tmp_path / "table.md").exists() and (tmp_path / "figure.png").exists() and len(paths) >= 3
    assert "LDP-" in report.table


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    import re

    code = re.search(r"## 30 seconds\n\n```python\n(.*?)```", (ROOT / "README.md").read_text(),
                     re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "local DP, epsilon=1 per reward via VectorLaplaceReward" in out \
        and (tmp_path / "regret.png").exists()


@pytest.mark.parametrize("name,expected", [
    ("lab_local_vs_global", ("server received", "released means", "AdaP-KLUCB (global)")),
    ("lab_glm_ldp", ("server received M", "angle to theta*", "LDP-SGD eps=0.5", "(-1: hidden)")),
    ("lab_bco_two_point", ("server received D", "reward 0.0, info {}", "eps=0.5"))])
def test_teaching_notebooks_run(capsys, name, expected):
    """Execute a lab notebook's code cells in order (no Jupyter needed)."""
    import json

    import matplotlib

    matplotlib.use("Agg")
    nb = json.loads((ROOT / "examples" / f"{name}.ipynb").read_text())
    scope: dict = {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), name, "exec"), scope)
    out = capsys.readouterr().out
    assert all(e in out for e in expected)


def test_cli_contextual_agent_on_mab_env_is_a_user_error(tmp_path, capsys):
    assert main(["run", "LDPMAB-v0", "--agents", "LDP-OLS", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "contextual env" in err and not (tmp_path / "o").exists()
