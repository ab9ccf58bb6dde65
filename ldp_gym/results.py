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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Results"]


@dataclass
class Results:
    """Cumulative regret of every agent, shape (n_runs, len(checkpoints)).

    Attributes:
        checkpoints: the rounds at which regret was recorded.
        regret: agent name -> array (n_runs, len(checkpoints)).
        meta: env, horizon, seed, privacy of every agent (part of equality).
        timings: wall-clock seconds and decisions per agent (not part of equality).
    """

    checkpoints: np.ndarray
    regret: dict[str, np.ndarray]
    meta: dict[str, Any]
    timings: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Results):
            return NotImplemented
        return (np.array_equal(self.checkpoints, other.checkpoints)
                and self.regret.keys() == other.regret.keys()
                and all(np.array_equal(self.regret[k], other.regret[k]) for k in self.regret)
                and self.meta == other.meta)

    @property
    def agents(self) -> list[str]:
        return list(self.regret)

    def mean(self, agent: str) -> np.ndarray:
        return self.regret[agent].mean(axis=0)

    def sd(self, agent: str) -> np.ndarray:
        r = self.regret[agent]
        return r.std(axis=0, ddof=1) if r.shape[0] > 1 else np.zeros(r.shape[1])

    def band(self, agent: str, kind: str = "ci") -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper band: ``'ci'`` 95% normal confidence band of the mean, ``'sd'`` +- 1 sd,
        ``'half-sd'`` +- 0.5 sd (Han et al.'s plots)."""
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
        """One row per agent: privacy and regret mean/sd at the given checkpoints (default: last)."""
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

    def table(self, at: list[int] | None = None) -> str:
        """The summary as a Markdown table (what the CLI prints)."""
        rows = self.summary(at)
        ts = [int(self.checkpoints[-1])] if at is None else at
        head = "| agent | privacy | " + " | ".join(f"regret at T={t:g}" for t in ts) + " |"
        lines = [head, "|" + "---|" * (2 + len(ts))]
        for r in rows:
            cells = [f"{r[f'mean@{t}']:.1f} ± {r[f'sd@{t}']:.1f}" for t in ts]
            lines.append(f"| {r['agent']} | {r['privacy']} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def merge(self, other: Results) -> Results:
        """Agents of both results (same checkpoints and runs) in one object."""
        if not np.array_equal(self.checkpoints, other.checkpoints):
            raise ValueError("results have different checkpoints")
        meta = dict(self.meta)
        meta["privacy"] = {**self.meta.get("privacy", {}), **other.meta.get("privacy", {})}
        return Results(self.checkpoints, {**self.regret, **other.regret}, meta,
                       {**self.timings, **other.timings})

    def to_dataframe(self):
        """Long table: agent, t, mean, sd, ci_low, ci_high (needs pandas)."""
        import pandas as pd

        frames = []
        for a in self.regret:
            lo, hi = self.band(a)
            frames.append(pd.DataFrame({"agent": a, "t": self.checkpoints, "mean": self.mean(a),
                                        "sd": self.sd(a), "ci_low": lo, "ci_high": hi}))
        return pd.concat(frames, ignore_index=True)

    def plot(self, ax: Any = None, band: str = "ci", logx: bool = False, logy: bool = False,
             reference: dict[str, np.ndarray] | None = None, title: str | None = None):
        """Regret curves with bands (needs matplotlib). ``reference``: extra curves (lower bounds)."""
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(6.4, 4.4))
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
        ax.legend(fontsize=8)
        return ax

    def save(self, path: str | Path) -> Path:
        """Save to ``.npz`` (arrays) with JSON metadata inside."""
        path = Path(path)
        arrays: dict[str, Any] = {f"regret/{k}": v for k, v in self.regret.items()}
        np.savez_compressed(path, checkpoints=self.checkpoints,
                            meta=np.array(json.dumps({"meta": self.meta, "timings": self.timings,
                                                      "agents": list(self.regret)})), **arrays)
        return path if path.suffix == ".npz" else path.with_suffix(path.suffix + ".npz")

    @classmethod
    def load(cls, path: str | Path) -> Results:
        with np.load(path, allow_pickle=False) as f:
            info = json.loads(str(f["meta"]))
            regret = {a: f[f"regret/{a}"] for a in info["agents"]}
            return cls(f["checkpoints"], regret, info["meta"], info["timings"])
