"""The examples, the experiments end to end and doctests (the command line's own tests: test_cli.py)."""

import doctest
import importlib
import runpy
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
    "ldp_gym.agents.mab", "ldp_gym.agents.adapters", "ldp_gym.wrappers.mechanisms.base",
    "ldp_gym.wrappers.mechanisms.noise", "ldp_gym.wrappers.mechanisms.continual",
    "ldp_gym.wrappers.reward", "ldp_gym.wrappers.mechanisms.audit"])
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


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


@pytest.mark.parametrize("name,sizes,needles,n_results", [
    ("azize2025-optimal", "AZIZE2025_SIZES",
     ("| mu4 | 1 |", "DP-IMED starved", "(alpha - 1)/ln alpha"), 33),
    ("azize2024-zcdp", "AZIZE2024_SIZES", ("| mu4 | 1 | 1.41 | ", "same (eps, delta)"), 16),
    ("shuffle-mab", "SHUFFLE_SIZES",
     ("Shuffle-SE (shuffle)", "Dist-DP-SE (distributed)", "| mu1 | 4 |", "eps = 50"), 10),
    ("chowdhury2023-distributed", "CHOWDHURY2023_SIZES",
     ("| hard | 0.1 |", "Dist-DP-SE / DP-SE", "eps = 10"), 8),
    ("trust-spectrum-linear", "TRUST_SIZES",
     ("| d=5, K=20 | 8 |", "JDP-LinUCB (joint)", "LinUCB (non-private)"), 10),
])
def test_experiments_beyond_the_papers_run_small(monkeypatch, tmp_path, name, sizes, needles,
                                                 n_results):
    """The experiments beyond the five papers end to end on a tiny size (the numbers are the
    results pages')."""
    from ldp_gym.experiments import EXPERIMENTS, glm, mab

    module = glm if sizes == "TRUST_SIZES" else mab
    monkeypatch.setitem(getattr(module, sizes), "quick", (300 if module is glm else 2000, 2))
    report = EXPERIMENTS[name](quick=True, seed=0, n_jobs=1, progress=False)
    report.write(tmp_path)
    text = (tmp_path / "table.md").read_text()
    assert all(needle in text for needle in needles)
    assert len(list(tmp_path.glob("*.npz"))) == n_results


def test_readme_and_results_index_list_every_experiment():
    """The README's list is the catalogue's, in its order; every experiment has a results row."""
    import re

    from ldp_gym.experiments import EXPERIMENTS

    readme = (ROOT / "README.md").read_text()
    listed = re.search(r"Experiments \(`ldp-gym list`, in this order\): (.*?)\.\n", readme, re.S)
    assert re.findall(r"`([a-z0-9.-]+)`", listed.group(1)) == list(EXPERIMENTS)
    index = (ROOT / "docs" / "results" / "index.md").read_text()
    assert all(f"`{name}`" in index for name in EXPERIMENTS)
