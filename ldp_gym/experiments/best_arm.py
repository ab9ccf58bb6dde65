"""Private best-arm identification with fixed confidence: Azize, Jourdan, Al Marjani and Basu
(NeurIPS 2023), section 6, as their public code runs it.

``azize2023-bai``: the stopping time of TT-UCB (non-private), AdaP-TT and DP-SE (global DP)
and CTB-TT (local DP) against epsilon, at delta = 0.1, on Bernoulli arms with the means of
the authors' ``experiment.py``: ``linspace(0, 1, 5)``, active there, and (0.75, 0.625, 0.5,
0.375, 0.25), one of its alternatives. Beside them, the lower bound every delta-correct
algorithm obeys, ``T*_KL(mu) kl(delta, 1 - delta)`` (Garivier and Kaufmann 2016), and the
privacy scale of the private lower bound's second term, ``T*_TV(mu) kl(delta, 1 - delta) /
epsilon``, whose constants are left out. The error rate of each agent is tested against delta.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp_gym.envs.best_arm import characteristic_time
from ldp_gym.envs.mab import bernoulli_kl
from ldp_gym.results import STOP_ZERO_SD_NOTE, Results, round_label
from ldp_gym.runner import sweep

from .common import CacheDir, Experiment, Report, figure, ticks_at

#: (epsilons, runs, budget) of azize2023-bai
BAI_SIZES = {"quick": ((0.5, 1.0), 10, 400_000), "full": ((0.1, 0.5, 1.0), 50, 2_000_000)}
#: The means of the authors' experiment.py: the active instance and one alternative.
BAI_INSTANCES = {"linspace(0, 1, 5)": [float(m) for m in np.linspace(0.0, 1.0, 5)],
                 "mu2 = (0.75, ..., 0.25)": [0.75, 0.625, 0.5, 0.375, 0.25]}
RISK = 0.1


def azize2023_bai(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Sample complexity against epsilon, with the lower bound, and the error rates.

    Quick: the first instance, epsilon in {0.5, 1}, 10 runs, a budget of 400,000 rounds.
    Full: both instances, epsilon in {0.1, 0.5, 1} as the authors' last commit, 50 runs (they
    ran 10), a budget of 2,000,000 rounds; a run that has not stopped by then is reported as
    such.
    """
    from ldp_gym.agents import CTBTT, AdaPTT, DPSEBestArm, TopTwo

    epsilons, n_runs, budget = BAI_SIZES["quick" if quick else "full"]
    instances = dict(list(BAI_INSTANCES.items())[:1]) if quick else BAI_INSTANCES
    private = {"AdaP-TT (global)": AdaPTT, "DP-SE (global)": DPSEBestArm,
               "CTB-TT (local)": CTBTT}

    def task(means: list[float], agents: dict[str, Any]) -> dict[str, Any]:
        return dict(env="LDPBestArm-v0", env_kwargs={"means": means, "order": "shuffled"},
                    agents=agents, horizon=budget, n_runs=n_runs, seed=seed, progress=progress,
                    checkpoints=[budget])

    keys = [(inst, e, name) for inst in instances for e in epsilons for name in private]
    tasks = [task(instances[inst], {name: (private[name], {"epsilon": e, "risk": RISK})})
             for inst, e, name in keys]
    tasks += [task(means, {"TT-UCB (none)": (TopTwo, {"risk": RISK})})
              for means in instances.values()]
    done = sweep(tasks, n_jobs=n_jobs, label="runs", cache_dir=cache_dir)
    results = dict(zip(keys, done))
    plain = dict(zip(instances, done[len(keys):]))
    kl_delta = float(bernoulli_kl(RISK, 1 - RISK))
    bound = {inst: characteristic_time(m) * kl_delta for inst, m in instances.items()}
    tv = {inst: characteristic_time(m, "tv") * kl_delta for inst, m in instances.items()}

    lines = ["| instance | epsilon | agent | stopping time | median | no stop | errors | "
             "p (error rate ≤ delta) |", "|---|---|---|---|---|---|---|---|"]

    def row(inst: str, e: str, name: str, res: Results) -> str:
        return f"| {inst} | {e} | {name} | {' | '.join(res.stop_cells(name))} | {res.p_cell(name)} |"

    for inst in instances:
        lines.append(row(inst, "–", "TT-UCB (none)", plain[inst]))
        lines += [row(inst, f"{e:g}", name, results[(inst, e, name)])
                  for e in epsilons for name in private]
    lines += ["", f"Stopping time: pulls before the recommendation, mean ± sd over the runs that "
              f"stopped within the budget of {round_label(budget)} rounds (of {n_runs}); "
              f"delta = {RISK:g}. p: the binomial test of error rate ≤ delta, "
              f"P(Binomial({n_runs}, {RISK:g}) ≥ errors)."
              + (" " + STOP_ZERO_SD_NOTE if any("°" in x for x in lines) else "")]
    lines += [f"Lower bound on {inst}: T*_KL kl(delta, 1 - delta) = {bound[inst]:,.0f} pulls for "
              f"every delta-correct agent; privacy scale T*_TV kl(delta, 1 - delta) / epsilon = "
              + ", ".join(f"{tv[inst] / e:,.0f} (eps={e:g})" for e in epsilons)
              for inst in instances]

    fig, axes = figure(ncols=len(instances))
    for ax, inst in zip(axes, instances):
        for name in private:
            means = [_mean_time(results[(inst, e, name)], name) for e in epsilons]
            ax.plot(epsilons, means, marker="o", label=name)
        ax.axhline(_mean_time(plain[inst], "TT-UCB (none)"), color="k", ls="--", lw=0.8,
                   label="TT-UCB (none)")
        ax.axhline(bound[inst], color="grey", ls=":", lw=1.0,
                   label="lower bound T*_KL kl(δ, 1-δ)")
        ax.plot(epsilons, [tv[inst] / e for e in epsilons], color="grey", ls="-.", lw=1.0,
                label="privacy scale T*_TV kl(δ, 1-δ)/ε")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks_at(ax, epsilons)
        ax.set_xlabel("epsilon")
        ax.set_ylabel(f"stopping time (mean over the runs that stopped, of {n_runs})")
        ax.set_title(inst)
        ax.legend(fontsize=7)
    notes = []
    for (inst, e, name), res in results.items():
        n = res.identification(name)
        if n["stopped"] < n["runs"]:
            notes.append(f"{name} at eps={e:g} on {inst}: {n['runs'] - n['stopped']} of "
                         f"{n['runs']} runs did not stop within {round_label(budget)} rounds")
    saved = {f"{_slug(inst)}-eps{e:g}-{_slug(name)}": res
             for (inst, e, name), res in results.items()}
    saved.update({f"{_slug(inst)}-tt-ucb": res for inst, res in plain.items()})
    return Report("Private best-arm identification (Azize et al. 2023)"
                  + (" (quick)" if quick else ""), "\n".join(lines), saved, fig.figure, notes)


def _mean_time(res: Results, name: str) -> float:
    times = res.stopping_times(name)
    return float(times.mean()) if times.size else float("nan")


def _slug(text: str) -> str:
    """A file name's part: ``linspace`` or ``mu2`` of an instance, ``AdaP-TT`` of an agent."""
    return text.split(" ")[0].split("(")[0]


EXPERIMENTS = (
    Experiment("azize2023-bai", "Azize et al. 2023: private best-arm identification, stopping "
               "time against epsilon with the lower bound", azize2023_bai),
)
