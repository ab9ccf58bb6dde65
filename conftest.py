"""pytest set-up of the doctests (``--doctest-modules`` over ``ldp_gym/``, ``agents/``, ``wrappers/``).

``agents/`` and ``wrappers/`` are installed as ``ldp_gym.agents`` and
``ldp_gym.wrappers`` (pyproject.toml), but from the source tree pytest would
name their files ``agents.mab``, ``wrappers.reward``, ... and import a second
copy of each module under that name. Before a file there is collected, its
name is bound to the installed module, so the doctests run on the modules
users import, once.

Every module of the three packages must import with the core dependencies
alone (optional extras such as stable-baselines3, matplotlib, joblib or ray
are imported inside the functions that use them); a module that cannot would
be listed in ``collect_ignore``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
#: source directory -> the package it is installed as
INSTALLED_AS = {"agents": "ldp_gym.agents", "wrappers": "ldp_gym.wrappers"}

collect_ignore: list[str] = []


def pytest_collect_file(file_path: Path, parent: object) -> None:
    try:
        rel = file_path.resolve().relative_to(ROOT)
    except ValueError:
        return
    if file_path.suffix != ".py" or rel.parts[0] not in INSTALLED_AS:
        return
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    source_name = ".".join(parts)
    if source_name not in sys.modules:
        installed = ".".join([INSTALLED_AS[parts[0]], *parts[1:]])
        sys.modules[source_name] = importlib.import_module(installed)
