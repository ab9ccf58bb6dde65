"""The labs of examples/labs: each runs with its solutions, and its checks fail without them.

Every exercise cell of a lab (a code cell tagged ``exercise``) starts with a line
``# Exercise N``; the lab's file in ``solutions/`` has a block under the same line, which
replaces the cell. The checks themselves (``ldp_gym.labs``) are tested on wrong answers below.
"""

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from ldp_gym import labs

LABS = Path(__file__).resolve().parents[1] / "examples" / "labs"
NOTEBOOKS = sorted(LABS.glob("*.ipynb"))


def _solutions(notebook: Path) -> dict[str, str]:
    """``# Exercise N`` -> the solution block of that exercise."""
    text = (LABS / "solutions" / f"{notebook.stem}.py").read_text()
    parts = re.split(r"^(# Exercise \d+)\n", text, flags=re.M)
    return {parts[i]: parts[i] + "\n" + parts[i + 1].rstrip() + "\n"
            for i in range(1, len(parts), 2)}


def _run(nb) -> None:
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(LABS)}}).execute()


def test_every_setting_has_a_lab_with_exercises_and_solutions():
    assert [p.stem for p in NOTEBOOKS] == [
        "lab_bco_two_point", "lab_combinatorial", "lab_glm_ldp", "lab_mab_local_vs_global",
        "lab_nonparametric_transfer", "lab_own_private_agent"]
    for notebook in NOTEBOOKS:
        nb = nbformat.read(notebook, as_version=4)
        heads = [c.source.splitlines()[0] for c in nb.cells
                 if "exercise" in c.metadata.get("tags", [])]
        assert len(heads) >= 2 and heads == sorted(_solutions(notebook)), notebook.name
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), notebook.name


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_lab_runs_with_its_solutions(notebook):
    nb = nbformat.read(notebook, as_version=4)
    solutions = _solutions(notebook)
    for cell in nb.cells:
        if "exercise" in cell.metadata.get("tags", []):
            cell.source = solutions[cell.source.splitlines()[0]]
    _run(nb)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_lab_as_shipped_fails_its_first_check(notebook):
    """Without the solutions the first check says the exercise is not written yet."""
    nb = nbformat.read(notebook, as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if "exercise" in c.metadata.get("tags", []))
    nb.cells = nb.cells[:first + 2]  # up to the first check
    with pytest.raises(CellExecutionError, match="not written yet"):
        _run(nb)


# ----------------------------------------------------------------------------- the checks


def test_the_checks_flag_wrong_answers():
    """A wrong answer of each kind fails its check with a hint (one per check)."""
    wrong = [
        (labs.check_local_report, lambda r, e, rng: r + rng.laplace(0, 1 / e, np.shape(r))),  # no clip
        (labs.check_local_report,  # Gaussian noise of the same sd
         lambda r, e, rng: np.clip(r, 0, 1) + rng.normal(0, 2 ** 0.5 / e, np.shape(r))),
        (labs.check_local_report,  # its own stream, not the rng given
         lambda r, e, rng: np.clip(r, 0, 1) + np.random.default_rng().laplace(0, 1 / e, np.shape(r))),
        (labs.check_episode_release, lambda s, n, e, rng: s / n + rng.laplace(0, 1 / e, np.shape(s))),
        (labs.check_server_estimate, lambda m, u, reg: np.linalg.solve(m, u)),
        (labs.check_greedy_arm, lambda theta, x: int(np.argmin(x @ theta))),
        (labs.check_two_point_release, lambda f1, f2, x1, x2, g, s, rng: f1 - f2),
        (labs.check_gradient_estimate, lambda d_value, u, rho, d: d_value * u / rho),
        (labs.check_grid_cell, lambda x, bins: (x * bins).astype(int).sum(axis=1)),
        (labs.check_pooled_mean, lambda nt, mt, na, ma: (mt + ma) / 2),
        (labs.check_top_k, lambda s, k: (np.argsort(s)[:k, None] == np.arange(8)).any(0).astype(int)),
        (labs.check_cucb_index, lambda m, c, t: m + np.sqrt(3 * np.log(t) / (2 * np.maximum(c, 1)))),
        # found by a student's trial: one noise value for every entry; a generator of one's
        # own; Laplace noise of the Gaussian's sd; ties taking more than k arms; ceil - 1
        (labs.check_episode_release, lambda s, n, e, rng: s / n + rng.laplace(0, 1 / (e * n))),
        (labs.check_local_report,
         lambda r, e, rng: np.clip(r, 0, 1) + np.random.default_rng(0).laplace(0, 1 / e, np.shape(r))),
        (labs.check_two_point_release, lambda f1, f2, x1, x2, g, s, rng: float(
            np.clip(f1 - f2, -g * np.linalg.norm(x1 - x2), g * np.linalg.norm(x1 - x2))
            + rng.laplace(0, s / np.sqrt(2), len(x1)) @ (x1 - x2))),
        (labs.check_top_k, lambda s, k: (s >= np.sort(s)[-k]).astype(int)),
        (labs.check_grid_cell,
         lambda x, b: (np.ceil(x * b).astype(int) - 1) @ (b ** np.arange(x.shape[1])[::-1])),
        (labs.check_greedy_arm, lambda theta, x: np.flatnonzero(x @ theta == (x @ theta).max()).tolist()),
    ]
    for check, answer in wrong:
        with pytest.raises(labs.LabCheckError, match="Hint"):
            check(answer)


def test_the_checks_pass_the_solutions(capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("mab",
                                                  LABS / "solutions" / "lab_mab_local_vs_global.py")
    mab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mab)
    labs.check_local_report(mab.local_report)
    labs.check_episode_release(mab.episode_release)
    assert capsys.readouterr().out.count("\n") == 2
