"""Shared pieces of the experiment catalogue: reports, experiments, checkpoints, figures."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ldp_gym.results import (
    ZERO_SD_NOTE,
    NoPlot,
    Results,
    regret_cell,
    round_label,
    tidy_log_axes,
)

__all__ = ["Experiment", "Report", "caption", "checkpoints", "epsilon_axes", "figure", "log_slope",
           "merge_all", "regret_cell", "run_by_agent", "ticks_at"]

#: where an experiment keeps its finished tasks (``sweep``'s ``cache_dir``), or None
CacheDir = str | os.PathLike | None


@dataclass
class Report:
    """What an experiment produced: tables to print and write, results to save, a figure."""

    title: str
    table: str
    results: dict[str, Results]
    figure: Any = None
    notes: list[str] = field(default_factory=list)

    @property
    def has_figure(self) -> bool:
        """Whether there is a figure to write; none without matplotlib, see :class:`NoPlot`."""
        return self.figure is not None and not isinstance(self.figure, NoPlot)

    def write(self, folder: Path) -> list[Path]:
        """Write ``table.md``, one ``.npz`` per results object and ``figure.png`` into ``folder``,
        then close the figure.

        Without matplotlib there is no figure; see :attr:`has_figure`."""
        paths = [folder / "table.md"]
        text = f"# {self.title}\n\n{self.table}\n"
        if self.notes:
            text += "\n" + "\n".join(f"- {n}" for n in self.notes) + "\n"
        paths[0].write_text(text)
        for name, res in self.results.items():
            paths.append(res.save(folder / f"{name}.npz"))
        if self.has_figure:
            for ax in self.figure.get_axes():  # the final limits: minor labels that fit
                tidy_log_axes(ax)
            paths.append(folder / "figure.png")
            self.figure.savefig(paths[-1], dpi=120, bbox_inches="tight")
            import matplotlib.pyplot as plt

            plt.close(self.figure)  # written: a sweep of experiments keeps no figure open
        return paths


@dataclass(frozen=True)
class Experiment:
    """A named experiment: its one-line description and the function that runs it."""

    name: str
    description: str
    function: Callable[..., Report]

    def __call__(self, quick: bool = False, seed: int = 0, n_jobs: int = 2,
                 progress: bool | None = None, cache_dir: CacheDir = None) -> Report:
        """Run the experiment.

        ``cache_dir`` is a folder that keeps each finished task, as in :func:`ldp_gym.sweep`.
        The same call after an interruption then runs only the tasks that had not finished,
        with bitwise the same results."""
        return self.function(quick=quick, seed=seed, n_jobs=n_jobs, progress=progress,
                             cache_dir=cache_dir)


def run_by_agent(env: str, agents: Mapping[str, Any], n_jobs: int, cache_dir: CacheDir = None,
                 label: str = "", **kwargs: Any) -> Results:
    """:func:`ldp_gym.run` of ``agents`` as one :func:`ldp_gym.sweep` task per agent, merged.

    ``kwargs`` are the run's other arguments. The regret and meta are bitwise the same as one
    run's, since an agent's numbers depend only on the root seed and its name. With
    ``cache_dir``, each agent's run is kept as it ends."""
    from ldp_gym.runner import sweep

    tasks = [dict(env=env, agents={name: spec}, **kwargs) for name, spec in agents.items()]
    return merge_all(sweep(tasks, n_jobs=n_jobs, label=label, cache_dir=cache_dir))


def checkpoints(horizon: int, marks: list[int]) -> np.ndarray:
    """About 25 log-spaced rounds from 10 to ``horizon``, plus the ``marks`` within the horizon."""
    base = np.round(np.geomspace(min(10, horizon), horizon, 25)).astype(np.int64)
    return np.unique(np.concatenate([base, np.array([m for m in marks if m <= horizon], np.int64)]))


def figure(ncols: int | None = None):
    """``(fig, ax)``, or with ``ncols`` ``(fig, axes)``: an array of ``ncols`` side by side.

    Without matplotlib, which comes with the ``plot`` extra, these are
    :class:`~ldp_gym.results.NoPlot` stand-ins, so that the experiment still makes its tables
    and results."""
    try:
        import matplotlib
    except ImportError:
        return NoPlot(), (NoPlot() if ncols is None else [NoPlot() for _ in range(ncols)])

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if ncols is None:
        return plt.subplots(figsize=(6.4, 4.4))
    fig, axes = plt.subplots(1, ncols, figsize=(6.0 * ncols, 4.4))
    return fig, np.atleast_1d(axes)


def log_slope(x: Any, y: Any) -> float:
    """Least-squares slope of log y on log x: the rate an experiment reads off its regret.

    Values of y are floored at 1e-12. With fewer than two points the slope is nan."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.size < 2:
        return float("nan")
    return float(np.polyfit(np.log(x), np.log(np.maximum(y, 1e-12)), 1)[0])


def ticks_at(ax, xs: Any) -> None:
    """Tick ``ax``'s x axis at the values ``xs`` only, labelled plainly (``0.2``, ``1024``),
    with no minor ticks: a parameter axis shows the values that were run."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.xaxis.set_major_locator(FixedLocator(sorted(xs)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos=None: f"{x:g}"))
    ax.xaxis.set_minor_locator(NullLocator())


def epsilon_axes(ax, horizon: int, logy: bool = False, what: str = "mean") -> None:
    """Label a plot of regret at T against epsilon, on a log x axis.

    ``what`` says what the points, and any bars, are, e.g. ``"mean ± sd over 20 runs"``. The
    x ticks are the epsilons plotted (:func:`ticks_at`)."""
    ax.set_xscale("log")
    xs = {float(x) for line in ax.get_lines() if line.get_transform() == ax.transData
          for x in line.get_xdata() if x > 0}  # data lines, not axhline
    if xs:
        ticks_at(ax, xs)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel(f"regret at T = {round_label(horizon)} ({what})")
    ax.legend(fontsize=8)
    tidy_log_axes(ax)


def caption(horizon: int, n_runs: int, table: str = "") -> str:
    """The line under a table of :func:`regret_cell` cells saying what they are.

    If ``table`` has a cell marked ``°``, the line also says what an sd of 0 means."""
    text = (f"Cells: cumulative regret at T = {round_label(horizon)}, mean ± sd over {n_runs} "
            f"runs (sd of the runs, not of the mean).")
    return text + ("\n" + ZERO_SD_NOTE + "." if "°" in table else "")


def merge_all(results: list[Results], allow_different: Any = ()) -> Results:
    """One :class:`Results` with the agents of all.

    They must have the same checkpoints. Unless ``allow_different`` says otherwise, they must
    also have the same env, horizon and runs, and distinct agent names, as in
    :meth:`Results.merge`."""
    merged = results[0]
    for r in results[1:]:
        merged = merged.merge(r, allow_different=allow_different)
    return merged
