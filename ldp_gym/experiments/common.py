"""Shared pieces of the experiment catalogue: reports, experiments, checkpoints, figures."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ldp_gym.results import Results

__all__ = ["Experiment", "Report", "checkpoints", "epsilon_axes", "figure", "merge_all"]


@dataclass
class Report:
    """What an experiment produced: tables to print and write, results to save, a figure."""

    title: str
    table: str
    results: dict[str, Results]
    figure: Any = None
    notes: list[str] = field(default_factory=list)

    def write(self, folder: Path) -> list[Path]:
        """Write ``table.md``, one ``.npz`` per results object and ``figure.png`` into ``folder``."""
        paths = [folder / "table.md"]
        text = f"# {self.title}\n\n{self.table}\n"
        if self.notes:
            text += "\n" + "\n".join(f"- {n}" for n in self.notes) + "\n"
        paths[0].write_text(text)
        for name, res in self.results.items():
            paths.append(res.save(folder / f"{name}.npz"))
        if self.figure is not None:
            paths.append(folder / "figure.png")
            self.figure.savefig(paths[-1], dpi=120, bbox_inches="tight")
        return paths


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    function: Callable[..., Report]

    def __call__(self, quick: bool = False, seed: int = 0, n_jobs: int = 2,
                 progress: bool | None = None) -> Report:
        return self.function(quick=quick, seed=seed, n_jobs=n_jobs, progress=progress)


def checkpoints(horizon: int, marks: list[int]) -> np.ndarray:
    """About 25 log-spaced rounds from 10 to ``horizon``, plus the ``marks`` within the horizon."""
    base = np.round(np.geomspace(min(10, horizon), horizon, 25)).astype(np.int64)
    return np.unique(np.concatenate([base, np.array([m for m in marks if m <= horizon], np.int64)]))


def figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(6.4, 4.4))




def epsilon_axes(ax, horizon: int, logy: bool = False) -> None:
    """Label a plot of regret at T against epsilon (log x axis)."""
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel(f"regret at T={horizon:g}")
    ax.legend(fontsize=8)


def merge_all(results: list[Results]) -> Results:
    """One :class:`Results` with the agents of all (same checkpoints and runs)."""
    merged = results[0]
    for r in results[1:]:
        merged = merged.merge(r)
    return merged
