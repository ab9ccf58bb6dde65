"""The package as static tools read it: mypy sees the real classes of ``ldp_gym.agents`` and
``ldp_gym.wrappers`` (the folders ``agents/`` and ``wrappers/``, linked into ``ldp_gym/``),
and the import graph (grimp) shows the design's dependency direction."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROBE = """\
from ldp_gym.agents import UCB1, LDPOLS
from ldp_gym.wrappers.mechanisms import LaplaceMechanism
from ldp_gym.wrappers.reward import LaplaceReward
reveal_type(UCB1)
reveal_type(LDPOLS)
reveal_type(LaplaceMechanism)
reveal_type(LaplaceReward)
"""


def test_mypy_reveals_the_real_classes_from_outside_the_repository(tmp_path):
    """From a folder outside the repository (the installed package, as a user's project and
    its IDE see it), with the project's mypy configuration: no ``Any``."""
    (tmp_path / "probe.py").write_text(PROBE)
    out = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                          str(ROOT / "pyproject.toml"), "--cache-dir",
                          str(ROOT / ".mypy_cache"), "probe.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300).stdout
    revealed = [line for line in out.splitlines() if "Revealed type" in line]
    assert len(revealed) == 4, out
    for line, name in zip(revealed, ("agents.mab.UCB1", "agents.glm.LDPOLS",
                                     "wrappers.mechanisms.base.LaplaceMechanism",
                                     "wrappers.reward.LaplaceReward")):
        assert line.rstrip('"').endswith(f"-> ldp_gym.{name}"), line
        assert "Any" not in line.split("->")[-1]


@pytest.fixture(scope="module")
def graph():
    grimp = pytest.importorskip("grimp")
    return grimp.build_graph("ldp_gym")


def _imports(graph, importers: str, imported: str) -> list[tuple[str, str]]:
    return [(a, b) for a in graph.modules if a.startswith(importers)
            for b in graph.find_modules_directly_imported_by(a) if b.startswith(imported)]


def test_the_import_graph_sees_agents_importing_wrappers(graph):
    assert len(_imports(graph, "ldp_gym.agents", "ldp_gym.wrappers")) >= 10


def test_the_dependency_direction_holds(graph):
    """ldp_gym (envs, runner) <- ldp_gym.wrappers <- ldp_gym.agents; only the CLI and the
    experiment catalogue (the composition roots) and the contract checks import agents or
    wrappers."""
    assert not _imports(graph, "ldp_gym.wrappers", "ldp_gym.agents")
    roots = ("ldp_gym.cli", "ldp_gym.experiments", "ldp_gym.checks")
    for prefix in ("ldp_gym.agents", "ldp_gym.wrappers"):
        outside = [(a, b) for a, b in _imports(graph, "ldp_gym", prefix)
                   if not a.startswith(("ldp_gym.agents", "ldp_gym.wrappers") + roots)]
        assert not outside, outside


def test_one_source_for_the_version_and_the_test_command():
    """The version is the package metadata's (CITATION.cff states the same); the CI script,
    the README and the getting-started page run one test command (the page includes the
    README's)."""
    import importlib.metadata
    import re

    import ldp_gym

    version = importlib.metadata.version("ldp-gym")
    assert ldp_gym.__version__ == version
    assert f"version: {version}" in (ROOT / "CITATION.cff").read_text()
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"\[start:test-command\] -->\n```bash\n(.*?)\n```", readme, re.S).group(1)
    assert command in (ROOT / ".ci" / "run").read_text()
    assert '--8<-- "README.md:test-command"' in (ROOT / "docs" / "getting-started.md").read_text()


@pytest.mark.parametrize("module", ["noise", "calibration", "continual", "compiled", "audit",
                                    "privacy"])
def test_the_old_paths_of_the_primitives_still_work_with_a_warning(module):
    """The primitives moved to ``ldp_gym.wrappers.mechanisms``; the old import paths work for
    one release, with a DeprecationWarning naming the new one."""
    import importlib

    new = importlib.import_module(f"ldp_gym.wrappers.mechanisms.{module}")
    sys.modules.pop(f"ldp_gym.wrappers.{module}", None)
    with pytest.warns(DeprecationWarning, match=f"ldp_gym.wrappers.mechanisms.{module}"):
        old = importlib.import_module(f"ldp_gym.wrappers.{module}")
    assert all(getattr(old, name) is getattr(new, name) for name in new.__all__)
