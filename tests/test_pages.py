"""Results pages regenerated from the experiments' own output (ldp_gym.experiments.pages)."""

import json
import shutil
from pathlib import Path

import pytest

from ldp_gym.cli import MARKER, main
from ldp_gym.experiments import EXPERIMENTS
from ldp_gym.experiments.pages import main as pages_main
from ldp_gym.experiments.pages import measured_block, regenerate

PAGES = Path(__file__).resolve().parents[1] / "docs" / "results"
NAMES = sorted(p.stem for p in PAGES.glob("*.md") if p.stem != "index")


def test_every_experiment_has_a_page_with_a_measured_section():
    """One page per experiment, each with one Measured section (a table, or the run's figure
    then its table) followed by a section written by people."""
    assert NAMES == sorted(EXPERIMENTS)
    for name in NAMES:
        page = (PAGES / f"{name}.md").read_text()
        block = measured_block(page)
        first = [line for line in block.split("\n") if line and not line.startswith("![")][0]
        assert first.startswith(("|", "Cells:")), name
        assert page.index("## Measured") < page.index("\n## ", page.index("## Measured"))


def fake_out(tmp_path, name, table="# T\n\n| a |\n|---|\n| 1 |\n", experiment=None):
    out = tmp_path / "out"
    out.mkdir()
    (out / "table.md").write_text(table)
    (out / "figure.png").write_bytes(b"png")
    (out / MARKER).write_text(json.dumps({"written_by": "ldp-gym",
                                          "experiment": experiment or name, "quick": True}))
    return out


def test_regenerate_replaces_the_measured_section_only(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    shutil.copy(PAGES / "zheng2020-bco.md", pages)  # a page that embeds its figure
    before = (pages / "zheng2020-bco.md").read_text()
    out = fake_out(tmp_path, "zheng2020-bco")
    path, quick = regenerate("zheng2020-bco", out, pages)
    after = path.read_text()
    assert quick and measured_block(after) == "![Regret against T](zheng2020-bco.png)\n\n" \
        "| a |\n|---|\n| 1 |"
    head, tail = before.split("## Measured")[0], before[before.index("## Compared"):]
    assert after.startswith(head) and after.endswith(tail)
    assert (pages / "zheng2020-bco.png").read_bytes() == b"png"
    assert regenerate("zheng2020-bco", out, pages)[0].read_text() == after  # idempotent


def test_bad_input_is_refused_and_nothing_is_written(tmp_path, capsys):
    pages = tmp_path / "pages"
    pages.mkdir()
    shutil.copy(PAGES / "shuffle-mab.md", pages)
    before = (pages / "shuffle-mab.md").read_text()
    out = fake_out(tmp_path, "shuffle-mab", experiment="azize2022-fig2")
    for args, message in ((["nope", str(out)], "name: no experiment"),
                          (["shuffle-mab", str(out)], "holds the output of azize2022-fig2"),
                          (["shuffle-mab", str(tmp_path)], "does not exist"),
                          (["chowdhury2023-distributed", str(out)], "page:")):
        assert pages_main(args + ["--pages", str(pages)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
    (pages / "broken.md").write_text("# x\n\n## Measured\n\nno section after\n")
    with pytest.raises(ValueError, match="followed by"):
        measured_block((pages / "broken.md").read_text())
    assert (pages / "shuffle-mab.md").read_text() == before
    assert sorted(p.name for p in pages.iterdir()) == ["broken.md", "shuffle-mab.md"]


def test_a_fresh_quick_run_regenerates_its_page(tmp_path, monkeypatch):
    """End to end: ``ldp-gym reproduce zheng2020-bco --quick`` marks its folder with the
    experiment, and the page's Measured section becomes exactly that run's table."""
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "zheng2020-bco", "--quick", "--quiet", "--jobs", "1",
                 "--out", "run"]) == 0
    marker = json.loads((tmp_path / "run" / MARKER).read_text())
    assert (marker["experiment"], marker["quick"], marker["seed"]) == ("zheng2020-bco", True, 0)
    pages = tmp_path / "pages"
    pages.mkdir()
    shutil.copy(PAGES / "zheng2020-bco.md", pages)
    regenerate("zheng2020-bco", tmp_path / "run", pages)
    table = (tmp_path / "run" / "table.md").read_text().strip("\n").split("\n", 1)[1]
    block = measured_block((pages / "zheng2020-bco.md").read_text())
    assert block.endswith(table.strip("\n"))
    assert (pages / "zheng2020-bco.png").read_bytes() == (tmp_path / "run" / "figure.png").read_bytes()


def test_the_index_states_each_page_s_version():
    """The index's version column and command are those of each page's Run line."""
    index = (PAGES / "index.md").read_text()
    for name in NAMES:
        run = (PAGES / f"{name}.md").read_text().split("**Run**: the ", 1)[1]
        version = run.split(" ", 1)[0]
        assert version in ("quick", "full"), name
        command = f"`ldp-gym reproduce {name}{' --quick' if version == 'quick' else ''}`"
        assert f"| {version} | {command} |" in index, name
        assert ("!!! note \"Short version\"" in (PAGES / f"{name}.md").read_text()) == \
            (version == "quick"), name


def test_new_user_findings_are_fixed(tmp_path, capsys):
    """From a new user's trial (2026-11-27): a marker that is JSON but not an object crashed;
    a page whose figure the folder lacks kept the stale figure; pages lost their permissions;
    a failed write left the figure replaced and a traceback."""
    pages = tmp_path / "pages"
    pages.mkdir()
    shutil.copy(PAGES / "zheng2020-bco.md", pages)
    (pages / "zheng2020-bco.md").chmod(0o644)
    before = (pages / "zheng2020-bco.md").read_text()
    out = fake_out(tmp_path, "zheng2020-bco")
    (out / MARKER).write_text("[1, 2]")
    assert pages_main(["zheng2020-bco", str(out), "--pages", str(pages)]) == 2
    assert "holds the output of no experiment" in capsys.readouterr().err
    (out / MARKER).write_text(json.dumps({"experiment": "zheng2020-bco"}))
    (out / "figure.png").unlink()
    assert pages_main(["zheng2020-bco", str(out), "--pages", str(pages)]) == 2
    assert "no figure.png" in capsys.readouterr().err
    (out / "figure.png").write_bytes(b"png")
    (pages / "zheng2020-bco.png").mkdir()  # the figure cannot be written
    assert pages_main(["zheng2020-bco", str(out), "--pages", str(pages)]) == 2
    assert "cannot write" in capsys.readouterr().err
    assert (pages / "zheng2020-bco.md").read_text() == before
    assert sorted(p.name for p in pages.iterdir()) == ["zheng2020-bco.md", "zheng2020-bco.png"]
    (pages / "zheng2020-bco.png").rmdir()
    regenerate("zheng2020-bco", out, pages)
    assert (pages / "zheng2020-bco.md").stat().st_mode & 0o777 == 0o644
