"""Results of a run: cumulative regret at checkpoints for every agent and run.

Example:
    >>> import numpy as np
    >>> r = Results(np.array([1, 10]), {"A": np.array([[0.5, 2.0], [0.5, 4.0]])}, {})
    >>> r.mean("A").tolist()
    [0.5, 3.0]
"""

from __future__ import annotations

import json
import math
import os
import secrets
import stat
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BANDS", "MERGE_CHECKS", "STOP_ZERO_SD_NOTE", "NoPlot", "Results", "regret_cell", "round_label",
           "tidy_log_axes"]

#: What :meth:`Results.merge` refuses unless told (``allow_different``): results of different
#: envs (id or keyword arguments), horizons, numbers of runs or root seeds, and an agent name
#: in both.
MERGE_CHECKS = ("env", "horizon", "n_runs", "seed", "agents")
#: The run settings in ``meta``; where merged results differ, ``meta["per_agent"][key]``
#: gives each agent's.
_SETTINGS = ("env", "env_kwargs", "wrappers", "horizon", "n_runs", "seed", "secure")
#: The note under a table of stopping times with an sd of 0.
STOP_ZERO_SD_NOTE = ("sd 0 (marked °): every run stopped after the same number of pulls, as DP-SE "
                     "does when every run ends in the same epoch.")
#: What a plot's band is, by ``kind`` of :meth:`Results.band`.
BANDS = {"ci": "95 % confidence interval of the mean", "sd": "± 1 sd of the runs",
         "half-sd": "± 0.5 sd of the runs"}
#: The note under a table with an sd of 0.
ZERO_SD_NOTE = ("sd 0 (marked °): every run has exactly the same regret there, the agent's "
                "plays up to that round did not depend on the random draws (e.g. DP-SE, which "
                "pulls every active arm a fixed number of times per epoch: until the runs "
                "eliminate different arms, they all pull the same arms equally often)")


def regret_cell(values: np.ndarray, digits: int = 1,
                spec: tuple[str, str] | None = None) -> str:
    """A table cell of regret over the runs: ``mean ± sd``, with the sd of the runs (ddof 1).

    The cell is marked ``°`` when the sd is 0 over several runs; :data:`ZERO_SD_NOTE` explains
    it. It has ``digits`` decimals, or the format specs ``spec`` of the mean and the sd, e.g.
    ``(".5g", ".2g")`` for small regrets."""
    values = np.asarray(values, dtype=np.float64)
    sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
    mean_spec, sd_spec = spec or (f".{digits}f", f".{digits}f")
    return f"{values.mean():{mean_spec}} ± {sd:{sd_spec}}" + ("°" if sd == 0 and values.size > 1
                                                              else "")


def round_label(t: Any) -> str:
    """A round or horizon as tables and plots write it, in one notation: ``10,000,000``."""
    return f"{int(t):,}"


class NoPlot:
    """A figure or axes on which every call does nothing.

    :func:`ldp_gym.experiments.common.figure` returns it when matplotlib is not installed;
    matplotlib comes with the ``plot`` extra. An experiment then still makes its tables and
    results: nothing is drawn, and :meth:`~ldp_gym.experiments.common.Report.write` writes no
    figure."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> NoPlot:
        """Draw nothing; return the placeholder again."""
        return self

    def __iter__(self) -> Any:  # ``(line,) = ax.plot(...)``
        return iter((self,))


def tidy_log_axes(ax: Any) -> None:
    """Tick labels of ``ax``'s log axes that do not overlap.

    When an axis spans two decades or more, its minor ticks get no labels and the decades are
    labelled. Otherwise, of the minor ticks, those at 2 and 5 x 10^k are labelled too (an
    axis of less than two decades shows one decade label or none)."""
    if isinstance(ax, NoPlot):
        return
    from matplotlib.ticker import FuncFormatter, NullFormatter

    def two_and_five(x: float, _pos: Any = None) -> str:
        if x <= 0:
            return ""
        exponent = math.floor(math.log10(x) + 1e-9)
        mantissa = round(x / 10**exponent, 6)
        return f"{x:g}" if mantissa in (2.0, 5.0) else ""

    for axis, lims in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if axis.get_scale() != "log":
            continue
        lo, hi = sorted(lims)
        wide = lo > 0 and hi / lo >= 100
        axis.set_minor_formatter(NullFormatter() if wide else FuncFormatter(two_and_five))


@dataclass
class Results:
    """Cumulative regret of every agent, shape (n_runs, len(checkpoints)).

    Attributes:
        checkpoints: the rounds at which regret was recorded.
        regret: agent name -> array (n_runs, len(checkpoints)).
        meta: env, horizon, seed, privacy of every agent. Part of equality.
        timings: wall-clock seconds and decisions per agent. Not part of equality.
        stops: best-arm identification only: agent name -> ``{"stopping_time": (n_runs,) the
            pulls before the recommendation, -1 for a run that did not stop within the
            horizon; "recommendation": (n_runs,) the arm, -1 without a stop; "correct":
            (n_runs,) whether it is a best arm}``. Part of equality; empty otherwise.
    """

    checkpoints: np.ndarray
    regret: dict[str, np.ndarray]
    meta: dict[str, Any]
    timings: dict[str, dict[str, Any]] = field(default_factory=dict)
    stops: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Results):
            return NotImplemented
        return (np.array_equal(self.checkpoints, other.checkpoints)
                and self.regret.keys() == other.regret.keys()
                and all(np.array_equal(self.regret[k], other.regret[k]) for k in self.regret)
                and self.meta == other.meta
                and self.stops.keys() == other.stops.keys()
                and all(self.stops[a].keys() == other.stops[a].keys()
                        and all(np.array_equal(v, other.stops[a][k])
                                for k, v in self.stops[a].items()) for a in self.stops))

    def __repr__(self) -> str:
        """One line: the env, the runs and rounds, and each agent's final mean regret (or, in
        best-arm identification, its mean stopping time)."""
        last = int(self.checkpoints[-1]) if len(self.checkpoints) else 0
        env = self.meta.get("env", "?")
        runs = self.runs_label() if self.regret else "no agents"
        if self.stops:
            times = ", ".join(f"{a}: {self.stopping_times(a).mean():.4g}" for a in self.stops)
            return f"Results(env={env!r}, {runs}, budget {last}; mean stopping time: {times})"
        finals = ", ".join(f"{a}: {self.regret[a][:, -1].mean():.4g}" for a in self.regret)
        return (f"Results(env={env!r}, {runs}, T={last}, "
                f"{len(self.checkpoints)} checkpoints; mean regret at T: {finals})")

    def stopping_times(self, agent: str) -> np.ndarray:
        """The sample complexity of ``agent``'s runs that stopped (best-arm identification):
        the pulls before each recommendation. :meth:`identification` counts the others."""
        rounds = self._stops(agent)["stopping_time"]
        return rounds[rounds >= 0]

    def identification(self, agent: str) -> dict[str, Any]:
        """``agent``'s best-arm identification in numbers.

        Returns:
            ``runs``, ``stopped`` (runs that recommended within the horizon), ``errors`` (wrong
            recommendations), ``risk`` (the agent's delta, None if unknown), ``error_upper``
            (the one-sided 95 % Clopper-Pearson upper bound of the error rate over the runs,
            a run without a stop counted as no error) and ``p_value``: of the binomial test
            of "error rate <= risk", ``P(Binomial(runs, risk) >= errors)``; small values
            contradict the agent's guarantee.
        """
        from scipy import stats

        s = self._stops(agent)
        runs, stopped = len(s["correct"]), int((s["recommendation"] >= 0).sum())
        errors = int(((s["recommendation"] >= 0) & ~s["correct"]).sum())
        risk = self.meta.get("risk", {}).get(agent)
        upper = 1.0 if errors == runs else float(stats.beta.ppf(0.95, errors + 1, runs - errors))
        p = None if risk is None else float(stats.binom.sf(errors - 1, runs, risk))
        return {"runs": runs, "stopped": stopped, "errors": errors, "risk": risk,
                "error_upper": upper, "p_value": p}

    def _stops(self, agent: str) -> dict[str, np.ndarray]:
        if agent not in self.stops:
            raise ValueError(f"agent: no stops of {agent!r}; these results are not of best-arm "
                             f"identification, or of another agent ({list(self.stops)})")
        return self.stops[agent]

    def stop_cells(self, agent: str) -> list[str]:
        """Table cells of ``agent``'s identification: stopping time (mean ± sd of the runs that
        stopped, :func:`regret_cell`), its median, the runs without a stop, ``errors / runs``."""
        times, n = self.stopping_times(agent), self.identification(agent)
        return [regret_cell(times, 0) if times.size else "–",
                f"{np.median(times):,.0f}" if times.size else "–",
                str(n["runs"] - n["stopped"]), f"{n['errors']} / {n['runs']}"]

    def p_cell(self, agent: str) -> str:
        """The cell of the binomial test's p of :meth:`identification`, "–" without a risk."""
        p = self.identification(agent)["p_value"]
        return "–" if p is None else f"{p:.3g}"

    def identification_table(self) -> str:
        """The best-arm identification as a Markdown table, as the CLI prints it: per agent,
        the stopping time over the runs that stopped, the runs without a stop, the wrong
        recommendations against the agent's risk."""
        horizon = self.meta.get("horizon")
        lines = ["| agent | privacy | stopping time | median | no stop | errors | risk delta | "
                 "error rate ≤ (95 %) | p (error rate ≤ delta) |", "|" + "---|" * 9]
        for a in self.stops:
            n = self.identification(a)
            risk = "–" if n["risk"] is None else f"{n['risk']:g}"
            lines.append(f"| {a} | {self.meta.get('privacy', {}).get(a, '')} | "
                         f"{' | '.join(self.stop_cells(a))} | {risk} | {n['error_upper']:.3f} | "
                         f"{self.p_cell(a)} |")
        lines += ["", f"Stopping time: pulls before the recommendation, mean ± sd over the runs "
                  f"that stopped within the budget of {round_label(horizon or 0)} rounds. "
                  f"Errors: wrong recommendations. The error rate's 95 % upper bound is "
                  f"Clopper-Pearson's; p is that of the binomial test of error rate ≤ delta."]
        if any("°" in line for line in lines):
            lines.append(STOP_ZERO_SD_NOTE)
        unstopped = [a for a in self.stops if (self.stops[a]["recommendation"] < 0).any()]
        if unstopped:
            lines.append(f"Runs without a stop ({', '.join(unstopped)}) made no recommendation: "
                         f"their errors are unknown, and the errors and p count them as "
                         f"correct. Raise the budget (the horizon) to judge them.")
        return "\n".join(lines)

    @property
    def agents(self) -> list[str]:
        """The agents' names, in the order they ran."""
        return list(self.regret)

    def mean(self, agent: str) -> np.ndarray:
        """The mean cumulative regret of ``agent`` over its runs, at every checkpoint."""
        return self.regret[agent].mean(axis=0)

    def sd(self, agent: str) -> np.ndarray:
        """The standard deviation over runs of ``agent``'s regret; zeros for a single run."""
        r = self.regret[agent]
        return r.std(axis=0, ddof=1) if r.shape[0] > 1 else np.zeros(r.shape[1])

    def band(self, agent: str, kind: str = "ci") -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper band of ``agent``'s regret, by ``kind``.

        ``'ci'`` is the 95% normal confidence band of the mean, ``'sd'`` is +- 1 sd, and
        ``'half-sd'`` is +- 0.5 sd, as in Han et al.'s plots."""
        m, s = self.mean(agent), self.sd(agent)
        w = {"ci": 1.96 * s / math.sqrt(self.regret[agent].shape[0]), "sd": s,
             "half-sd": 0.5 * s}.get(kind)
        if w is None:
            raise ValueError(f"kind must be 'ci', 'sd' or 'half-sd', got {kind!r}")
        return m - w, m + w

    def at(self, agent: str, t: int) -> np.ndarray:
        """Regret of every run at checkpoint ``t``."""
        hits = np.flatnonzero(self.checkpoints == t)
        if hits.size == 0:
            raise ValueError(f"t={t} is not a checkpoint")
        return self.regret[agent][:, hits[0]]

    def summary(self, at: list[int] | None = None) -> list[dict[str, Any]]:
        """One row per agent: privacy and regret mean/sd at the given checkpoints.

        By default, at the last checkpoint."""
        at = [int(self.checkpoints[-1])] if at is None else at
        rows = []
        for a in self.regret:
            row: dict[str, Any] = {"agent": a, "privacy": self.meta.get("privacy", {}).get(a, "")}
            for t in at:
                v = self.at(a, t)
                row[f"mean@{t}"] = float(v.mean())
                row[f"sd@{t}"] = float(v.std(ddof=1)) if v.size > 1 else 0.0
            rows.append(row)
        return rows

    def to_frame(self) -> Any:
        """A tidy :class:`pandas.DataFrame`: one row per agent, run and checkpoint, with the
        columns ``agent``, ``run``, ``checkpoint``, ``regret`` (cumulative) and ``privacy``
        (the agent's guarantee as text, "none" for a non-private one), for pandas or seaborn.
        Needs pandas (the ``plot`` extra).

        Example:
            >>> import ldp_gym
            >>> from ldp_gym.agents import UCB1
            >>> res = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=100, n_runs=2, seed=0,
            ...                   checkpoints=[50, 100], progress=False)
            >>> frame = res.to_frame()
            >>> list(frame.columns), len(frame)
            (['agent', 'run', 'checkpoint', 'regret', 'privacy'], 4)
            >>> frame.groupby("checkpoint")["regret"].mean().round(1).tolist()
            [8.7, 16.9]
        """
        try:
            import pandas as pd
        except ImportError as err:  # pragma: no cover - the test extra installs it
            raise ImportError('Results.to_frame needs pandas: pip install "ldp-gym[plot]"') \
                from err
        frames = []
        for agent, r in self.regret.items():
            runs, points = np.meshgrid(np.arange(r.shape[0]), self.checkpoints, indexing="ij")
            frames.append(pd.DataFrame({
                "agent": agent, "run": runs.ravel(), "checkpoint": points.ravel().astype(np.int64),
                "regret": r.ravel(),
                "privacy": str(self.meta.get("privacy", {}).get(agent) or "none")}))
        columns = ["agent", "run", "checkpoint", "regret", "privacy"]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)

    def table(self, at: list[int] | None = None) -> str:
        """The summary as a Markdown table, as the CLI prints it.

        There is one column per round of ``at``, by default the last checkpoint. Cells give the
        cumulative regret as mean ± sd over the runs. A line under the table says so, and
        explains an sd of 0, marked °.

        Headers write rounds one way: ``t = 10,000`` for a round, ``T = 100,000`` for the
        horizon. Results of best-arm identification give :meth:`identification_table`."""
        if self.stops:
            return self.identification_table()
        rows = self.summary(at)
        ts = [int(self.checkpoints[-1])] if at is None else [int(t) for t in at]
        horizon = self.meta.get("horizon")
        runs = {a: r.shape[0] for a, r in self.regret.items()}
        same_runs = len(set(runs.values())) == 1
        heads = [f"regret at {'T' if t == horizon else 't'} = {round_label(t)}" for t in ts]
        head = ["agent", "privacy"] + ([] if same_runs else ["runs"]) + heads
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rows:
            cells = [r["agent"], r["privacy"]] + ([] if same_runs else [str(runs[r["agent"]])])
            cells += [regret_cell(self.at(r["agent"], t)) for t in ts]
            lines.append("| " + " | ".join(cells) + " |")
        over = f"{next(iter(runs.values()))} runs" if same_runs else "the runs of each agent"
        lines.append("")
        lines.append(f"Cells: cumulative regret, mean ± sd over {over} (sd of the runs, not of "
                     f"the mean); t: round, T: horizon.")
        if any("°" in line for line in lines):
            lines.append(ZERO_SD_NOTE + ".")
        return "\n".join(lines)

    def merge(self, other: Results, allow_different: Collection[str] | bool = ()) -> Results:
        """Agents of both results in one object; the checkpoints must always be the same.

        Other differences are refused unless ``allow_different`` names them. It is a collection
        of :data:`MERGE_CHECKS`, or ``True`` for all. ``"env"`` allows results of different
        envs, by id or keyword arguments. ``"horizon"`` allows different horizons, and
        ``"n_runs"`` different numbers of runs. ``"seed"`` allows different root seeds: these
        are other instances, so not a comparison on the same runs. ``"agents"`` allows an agent
        name in both; ``other``'s then replaces it.

        Settings that differ are kept per agent in ``meta["per_agent"][setting]`` instead of
        ``meta[setting]``. These are the settings above, and the wrappers or secure mode, which
        may always differ.
        """
        allowed = set(MERGE_CHECKS) if allow_different is True else \
            set() if allow_different is False else set(allow_different)
        if allowed - set(MERGE_CHECKS):
            raise ValueError(f"allow_different must name some of {MERGE_CHECKS}, got "
                             f"{sorted(allowed - set(MERGE_CHECKS))}")
        if not np.array_equal(self.checkpoints, other.checkpoints):
            raise ValueError("results have different checkpoints")
        clash = [a for a in other.regret if a in self.regret]
        if clash and "agents" not in allowed:
            raise ValueError(f"agent {clash[0]!r} is in both results; rename it, or merge with "
                             f"allow_different=['agents'] to keep the other's")
        mine, theirs = self._settings(), other._settings()
        runs = {a: r.shape[0] for a, r in self.regret.items()}
        runs_other = {a: r.shape[0] for a, r in other.regret.items()}
        for check, keys in (("env", ("env", "env_kwargs")), ("horizon", ("horizon",)),
                            ("seed", ("seed",))):
            if check in allowed:
                continue
            for key in keys:
                known = {_key(v) for v in (*mine[key].values(), *theirs[key].values())
                         if v is not None}  # (results built by hand may not say)
                if len(known) > 1:
                    raise ValueError(f"results have different {key} ({_listing(mine[key])} "
                                     f"and {_listing(theirs[key])}); merge with "
                                     f"allow_different=[{check!r}] to compare them anyway")
        if "n_runs" not in allowed and len({*runs.values(), *runs_other.values()}) > 1:
            raise ValueError(f"results have different numbers of runs ({sorted(set(runs.values()))} "
                             f"and {sorted(set(runs_other.values()))}); merge with "
                             f"allow_different=['n_runs'] to compare them anyway")
        regret = {**{a: r for a, r in self.regret.items() if a not in other.regret},
                  **other.regret}
        meta = {k: v for k, v in self.meta.items() if k != "per_agent"}
        meta["privacy"] = {**self.meta.get("privacy", {}), **other.meta.get("privacy", {})}
        if "risk" in self.meta or "risk" in other.meta:  # best-arm identification's deltas
            meta["risk"] = {**self.meta.get("risk", {}), **other.meta.get("risk", {})}
        per_agent = {}
        for key in _SETTINGS:
            values = {**mine[key], **theirs[key]}
            values = {a: values[a] for a in regret}
            if len({_key(v) for v in values.values()}) <= 1:
                if values and (key in self.meta or key in other.meta):
                    meta[key] = next(iter(values.values()))
            else:
                meta.pop(key, None)
                per_agent[key] = values
        if per_agent:
            meta["per_agent"] = per_agent
        stops = {**{a: v for a, v in self.stops.items() if a not in other.regret}, **other.stops}
        return Results(self.checkpoints, regret, meta, {**self.timings, **other.timings}, stops)

    def _settings(self) -> dict[str, dict[str, Any]]:
        """Each run setting of :data:`_SETTINGS`, by agent."""
        per_agent = self.meta.get("per_agent", {})
        return {key: dict(per_agent[key]) if key in per_agent else
                {a: self.meta.get(key) for a in self.regret} for key in _SETTINGS}

    def runs_label(self) -> str:
        """``20 runs``, or ``10-20 runs`` when the agents have different numbers of runs."""
        counts = sorted({r.shape[0] for r in self.regret.values()})
        return f"{counts[0]} runs" if len(counts) == 1 else f"{counts[0]}-{counts[-1]} runs"

    def to_dataframe(self) -> Any:
        """Long table with columns agent, t, mean, sd, ci_low, ci_high. Needs pandas."""
        import pandas as pd

        frames = []
        for a in self.regret:
            lo, hi = self.band(a)
            frames.append(pd.DataFrame({"agent": a, "t": self.checkpoints, "mean": self.mean(a),
                                        "sd": self.sd(a), "ci_low": lo, "ci_high": hi}))
        return pd.concat(frames, ignore_index=True)

    def plot(self, ax: Any = None, band: str = "sd", logx: bool = False, logy: bool = False,
             reference: dict[str, np.ndarray] | None = None, title: str | None = None) -> Any:
        """Regret curves with bands; needs matplotlib.

        The legend says what the band is and over how many runs. ``band`` is a kind of
        :meth:`band`: by default ``"sd"``, the spread of the runs that :meth:`table` prints
        next to the means (``"ci"`` is the 95 % interval of the mean). ``reference`` gives
        extra curves: lower bounds. Results of best-arm identification are drawn as the
        stopping times of each agent's runs that stopped, a box per agent, on a log axis."""
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(6.4, 4.4))
        if self.stops:
            agents = list(self.stops)
            times = [self.stopping_times(a) for a in agents]
            ax.boxplot(times, showmeans=True)
            ax.set_xticks(range(1, len(agents) + 1), agents, rotation=20, fontsize=8)
            if any(t.size for t in times):
                ax.set_yscale("log")
            else:
                ax.text(0.5, 0.5, "no run stopped within the budget", ha="center",
                        transform=ax.transAxes)
            ax.set_ylabel("stopping time (pulls before the recommendation)")
            ax.set_title(title or f"{self.runs_label()}: the runs that stopped; box: quartiles, "
                                  f"triangle: mean", fontsize=9)
            return ax
        for a in self.regret:
            lo, hi = self.band(a, band)
            (line,) = ax.plot(self.checkpoints, self.mean(a), label=a)
            ax.fill_between(self.checkpoints, lo, hi, alpha=0.2, color=line.get_color())
        for name, curve in (reference or {}).items():
            ax.plot(self.checkpoints, curve, "k--", lw=1, label=name)
        ax.set_xlabel("round t")
        ax.set_ylabel("cumulative regret")
        if logx:
            ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        if title:
            ax.set_title(title)
        ax.legend(fontsize=8, title=f"mean of {self.runs_label()}; band: {BANDS[band]}",
                  title_fontsize=8)
        tidy_log_axes(ax)
        return ax

    def save(self, path: str | Path) -> Path:
        """Save the arrays to ``.npz``, with JSON metadata inside; returns the path written.

        ``.npz`` is appended to a path without it. The data go to a temporary file in the same
        folder, which is renamed over ``path``. So an existing file is replaced only by a
        complete one: a full disk keeps the old file, and the temporary file is removed."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        arrays: dict[str, Any] = {f"regret/{k}": v for k, v in self.regret.items()}
        arrays.update({f"stops/{a}/{k}": v for a, s in self.stops.items() for k, v in s.items()})
        meta = np.array(json.dumps({"meta": self.meta, "timings": self.timings,
                                    "agents": list(self.regret)}))
        tmp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}")
        try:
            with open(tmp, "xb") as f:
                np.savez_compressed(f, checkpoints=self.checkpoints, meta=meta, **arrays)
            try:  # the old file's permissions (a new file gets the umask's, as open gives)
                os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
            except FileNotFoundError:
                pass
            os.replace(tmp, path)
        except BaseException:
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
            raise
        return path

    @classmethod
    def load(cls, path: str | Path) -> Results:
        """Read results written by :meth:`save`. No pickle is loaded. As :meth:`save` does,
        ``.npz`` is appended to a path without it."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        with np.load(path, allow_pickle=False) as f:
            info = json.loads(str(f["meta"]))
            regret = {a: f[f"regret/{a}"] for a in info["agents"]}
            stops: dict[str, dict[str, np.ndarray]] = {}
            for key in f.files:
                if key.startswith("stops/"):
                    agent, _, name = key[len("stops/"):].rpartition("/")
                    stops.setdefault(agent, {})[name] = f[key]
            return cls(f["checkpoints"], regret, info["meta"], info["timings"], stops)


def _key(value: Any) -> str:
    """A comparable form of a setting. Settings are JSON-able: lists, dicts, numbers."""
    return json.dumps(value, sort_keys=True, default=repr)


def _listing(values: dict[str, Any]) -> str:
    distinct = {_key(v): v for v in values.values()}
    return ", ".join(repr(v) for v in distinct.values())
