"""Multi-armed bandit experiments: Azize & Basu (2022, 2024), Azize et al. (2025), Chowdhury &
Zhou (2023), and the trust models side by side."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldp_gym.results import round_label

from .common import (
    CacheDir,
    Experiment,
    Report,
    caption,
    checkpoints,
    epsilon_axes,
    figure,
    merge_all,
    regret_cell,
    run_by_agent,
)

# --------------------------------------------------------------------------- Azize & Basu


def _formula_variants() -> dict[str, type]:
    """Diagnostic variants of the AdaP agents for the formula choices the text leaves open.

    They are not agents of the library (not in ``AGENTS``): they exist to
    measure which formula choice moves a result away from the paper's figure.
    """
    from ldp_gym.agents.mab import AdaPKLUCB, AdaPUCB, kl_ucb_index

    class AdaPUCBInsideRoot(AdaPUCB):
        """Eq. 7 as the extracted text prints it: the privacy term inside the square root."""

        name = "AdaP-UCB (privacy term inside the root)"

        def index(self, rows, log_t):
            n = np.maximum(self.released_n[rows], 1)
            a = self.alpha * log_t[:, None]
            return self.released[rows] + np.sqrt(a / (2.0 * n) + a / (self.epsilon * n))

    class AdaPKLUCBNoShift(AdaPKLUCB):
        """Eq. 8 as the extracted text prints it: kl index of mu~ itself, no epsilon shift."""

        name = "AdaP-KLUCB (no epsilon shift)"

        def index(self, rows, log_t):
            n = np.maximum(self.released_n[rows], 1)
            return kl_ucb_index(np.clip(self.released[rows], 0.0, 1.0),
                                self.alpha * log_t[:, None] / n)

    class AdaPKLUCBFirstIndex(AdaPKLUCB):
        """Ties between equal indices broken towards the first arm (np.argmax)."""

        name = "AdaP-KLUCB (ties to the first index)"

        def _choose(self, index):
            return index.argmax(axis=1)

    return {c.name: c for c in (AdaPUCBInsideRoot, AdaPKLUCBNoShift, AdaPKLUCBFirstIndex)}


def azize2022_fig2(quick: bool, seed: int, n_jobs: int, progress: bool | None,
                   cache_dir: CacheDir = None) -> Report:
    """Azize and Basu (2022) Fig. 2: DP-UCB, DP-SE, AdaP-UCB, AdaP-KLUCB at eps = 1."""
    from ldp_gym.agents import DPSE, DPUCB, AdaPKLUCB, AdaPUCB
    from ldp_gym.envs.mab import DEFAULT_MEANS, problem_dependent_lower_bound

    horizon, n_runs = (10**5, 20) if quick else (10**7, 20)
    marks = [10**4, 10**5, 10**6, 10**7]
    eps = 1.0
    agents = {cls.name: (cls, {"epsilon": eps}) for cls in (DPUCB, DPSE, AdaPUCB, AdaPKLUCB)}
    res = run_by_agent("LDPMAB-v0", agents, n_jobs, cache_dir, horizon=horizon, n_runs=n_runs,
                       seed=seed, checkpoints=checkpoints(horizon, marks), progress=progress)
    at = [m for m in marks if m <= horizon]
    lower = problem_dependent_lower_bound(DEFAULT_MEANS, res.checkpoints, eps)
    fig, ax = figure()
    res.plot(ax=ax, band="sd", logx=True,
             reference={"lower bound (Table 2, problem-dependent)": lower},
             title=f"Bernoulli {DEFAULT_MEANS}, eps={eps}, {n_runs} runs")
    final = {a: res.at(a, horizon).mean() for a in res.agents}
    order = sorted(final, key=final.__getitem__)
    best = final[order[0]]
    notes = ["ordering at T = {} (lowest first): {}".format(round_label(horizon), " < ".join(order)),
             "ratios to the lowest: " + ", ".join(f"{a} {final[a] / best:.2f}x" for a in order),
             "problem-dependent lower bound at T: {:.1f}".format(float(lower[-1])),
             "decisions per run: " + ", ".join(
                 f"{a} {res.timings[a]['decisions']}" for a in res.agents),
             "seconds per agent: " + ", ".join(
                 f"{a} {res.timings[a]['seconds']:.1f}" for a in res.agents)]
    return Report("Azize & Basu 2022, Fig. 2" + (" (quick)" if quick else ""),
                  res.table(at), {"fig2": res}, fig.figure, notes)


def azize2022_fig3(quick: bool, seed: int, n_jobs: int, progress: bool | None,
                   cache_dir: CacheDir = None) -> Report:
    """Azize and Basu (2022) Fig. 3: AdaP-KLUCB's regret at T against epsilon."""
    from ldp_gym.agents import AdaPKLUCB
    from ldp_gym.envs.mab import problem_dependent_lower_bound
    from ldp_gym.runner import sweep

    means = (0.8, 0.1, 0.1, 0.1, 0.1)
    horizon, n_runs = (10**5, 10) if quick else (10**7, 20)
    epsilons = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0]
    no_shift = _formula_variants()["AdaP-KLUCB (no epsilon shift)"]
    tasks = [dict(env="LDPMAB-v0", agents={f"eps={e:g}": (AdaPKLUCB, {"epsilon": e}),
                                           f"no shift eps={e:g}": (no_shift, {"epsilon": e})},
                  horizon=horizon, n_runs=n_runs, seed=seed, env_kwargs={"means": means},
                  checkpoints=[horizon], progress=progress) for e in epsilons]
    merged = merge_all(sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir))
    mean = np.array([merged.at(f"eps={e:g}", horizon).mean() for e in epsilons])
    sd = np.array([merged.at(f"eps={e:g}", horizon).std(ddof=1) for e in epsilons])
    ns_mean = np.array([merged.at(f"no shift eps={e:g}", horizon).mean() for e in epsilons])
    ns_sd = np.array([merged.at(f"no shift eps={e:g}", horizon).std(ddof=1) for e in epsilons])
    lower = np.array([float(problem_dependent_lower_bound(means, horizon, e)) for e in epsilons])
    T = round_label(horizon)
    lines = [f"| epsilon | AdaP-KLUCB, regret at T = {T} | diagnostic: eq. 8 without the "
             f"epsilon shift, regret at T = {T} | lower bound at T = {T} |", "|---|---|---|---|"]
    lines += [f"| {e:g} | {regret_cell(merged.at(f'eps={e:g}', horizon))} | "
              f"{regret_cell(merged.at(f'no shift eps={e:g}', horizon))} | {lb:.1f} |"
              for e, lb in zip(epsilons, lower)]
    lines += ["", caption(horizon, n_runs, "\n".join(lines))]
    fig, ax = figure()
    ax.errorbar(epsilons, mean, yerr=sd, marker="o", label="AdaP-KLUCB (eq. 8 with the epsilon shift)")
    ax.errorbar(epsilons, ns_mean, yerr=ns_sd, marker="s", ls=":",
                label="diagnostic: no epsilon shift in eq. 8")
    ax.plot(epsilons, lower, "k--", lw=1, label="lower bound (Table 2)")
    ax.set_title(f"Bernoulli {means}, {n_runs} runs")
    epsilon_axes(ax, horizon, what=f"mean ± sd over {n_runs} runs")
    notes = []
    for label, m in (("AdaP-KLUCB", mean), ("no-shift diagnostic", ns_mean)):
        knee = next((e for e, v in zip(epsilons, m) if v <= 1.1 * m[-1]), epsilons[-1])
        notes.append(f"{label}: regret is within 10% of its eps={epsilons[-1]:g} value from "
                     f"eps={knee:g} on")
    notes.append("regret of the episodic agents is quantised: every arm's count is a power of 2, "
                 "so many runs end with identical regret (an sd of 0 where all do)")
    return Report("Azize & Basu 2022, Fig. 3" + (" (quick)" if quick else ""),
                  "\n".join(lines), {"fig3": merged}, fig.figure, notes)


def azize2022_ablation(quick: bool, seed: int, n_jobs: int, progress: bool | None,
                       cache_dir: CacheDir = None) -> Report:
    """Fig. 2's instance with the formula choices the paper's text leaves open, side by side."""
    from ldp_gym.agents import AdaPKLUCB, AdaPUCB

    horizon, n_runs = (10**5, 20) if quick else (10**7, 20)
    agents: dict[str, tuple[type, dict[str, float]]] = {
        "AdaP-UCB": (AdaPUCB, {"epsilon": 1.0}), "AdaP-KLUCB": (AdaPKLUCB, {"epsilon": 1.0})}
    agents.update({name: (cls, {"epsilon": 1.0}) for name, cls in _formula_variants().items()})
    marks = [10**5, 10**6, 10**7]
    res = run_by_agent("LDPMAB-v0", agents, n_jobs, cache_dir, horizon=horizon, n_runs=n_runs,
                       seed=seed, checkpoints=checkpoints(horizon, marks), progress=progress)
    fig, ax = figure()
    res.plot(ax=ax, band="sd", logx=True, title="formula choices, eps=1")
    return Report("Azize & Basu 2022, formula choices on Fig. 2's instance"
                  + (" (quick)" if quick else ""), res.table([m for m in marks if m <= horizon]),
                  {"ablation": res}, fig.figure)


# --------------------------------------------------------------------------- local vs global


def mab_local_vs_global(quick: bool, seed: int, n_jobs: int, progress: bool | None,
                        cache_dir: CacheDir = None) -> Report:
    """Regret against epsilon for local DP (LDP-UCB; Tsallis-INF and UCB1 on the Laplace
    reward wrapper) and global DP (AdaP-KLUCB, DP-SE) on the same instances."""
    from ldp_gym.agents import DPSE, LDPUCB, UCB1, AdaPKLUCB, TsallisINF
    from ldp_gym.runner import sweep
    from ldp_gym.wrappers.reward import VectorLaplaceReward

    horizon, n_runs = (10**4, 10) if quick else (10**5, 20)
    epsilons = [0.2, 0.5, 1.0, 2.0, 5.0]
    tasks = []
    for e in epsilons:
        tasks.append(dict(env="LDPMAB-v0", horizon=horizon, n_runs=n_runs, seed=seed,
                          checkpoints=[horizon], progress=progress, agents={
                              f"LDP-UCB (local) eps={e:g}": (LDPUCB, {"epsilon": e}),
                              f"AdaP-KLUCB (global) eps={e:g}": (AdaPKLUCB, {"epsilon": e}),
                              f"DP-SE (global) eps={e:g}": (DPSE, {"epsilon": e})}))
        tasks.append(dict(env="LDPMAB-v0", horizon=horizon, n_runs=n_runs, seed=seed,
                          checkpoints=[horizon], progress=progress,
                          wrappers=[(VectorLaplaceReward, {"epsilon": e})], agents={
                              f"Tsallis-INF + Laplace wrapper (local) eps={e:g}": TsallisINF,
                              f"UCB1 + Laplace wrapper (local) eps={e:g}": UCB1}))
    merged = merge_all(sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir))
    families = ["LDP-UCB (local)", "Tsallis-INF + Laplace wrapper (local)",
                "UCB1 + Laplace wrapper (local)", "AdaP-KLUCB (global)", "DP-SE (global)"]
    lines = ["| agent | " + " | ".join(f"eps={e:g}" for e in epsilons) + " |",
             "|---|" + "---|" * len(epsilons)]
    fig, ax = figure()
    for fam in families:
        vals = [merged.at(f"{fam} eps={e:g}", horizon) for e in epsilons]
        lines.append(f"| {fam} | " + " | ".join(regret_cell(v, 0) for v in vals) + " |")
        ax.plot(epsilons, [v.mean() for v in vals], marker="o", label=fam)
    lines += ["", caption(horizon, n_runs, "\n".join(lines))]
    epsilon_axes(ax, horizon, logy=True, what=f"mean over {n_runs} runs")
    return Report("Local vs global DP on LDPMAB-v0" + (" (quick)" if quick else ""),
                  "\n".join(lines), {"local_vs_global": merged}, fig.figure,
                  [f"T = {round_label(horizon)}, {n_runs} runs, Bernoulli means "
                   "(0.75, 0.625, 0.5, 0.375, 0.25)"])


# --------------------------------------------------------------------------- Azize et al. 2025

#: the four Bernoulli instances of Azize et al. (2025), arm 0 optimal
AZIZE2025_INSTANCES = {
    "mu1": (0.75, 0.70, 0.70, 0.70, 0.70),
    "mu2": (0.75, 0.625, 0.5, 0.375, 0.25),
    "mu3": (0.75, 0.53125, 0.375, 0.28125, 0.25),
    "mu4": (0.75, 0.71875, 0.625, 0.46875, 0.25),
}


#: (T, runs) of azize2025-optimal; the DP-KLUCB ratio runs go to 10 T
AZIZE2025_SIZES = {"quick": (10**5, 20), "full": (10**6, 100)}


def _starved(regret: np.ndarray, means: tuple[float, ...], horizon: int) -> tuple[float, float]:
    """Bounds on the fraction of runs that played the best arm fewer than T/2 times.

    The regret is ``sum_a Delta_a N_a``, so more than T/2 sub-optimal pulls give a regret above
    ``Delta_min T/2`` and a regret above ``Delta_max T/2`` needs them. The two bounds agree
    when every gap is the same (mu1).
    """
    gaps = max(means) - np.asarray(means)
    gaps = gaps[gaps > 0]
    surely, maybe = regret > gaps.max() * horizon / 2, regret > gaps.min() * horizon / 2
    return float(surely.mean()), float(maybe.mean())


def azize2025_optimal(quick: bool, seed: int, n_jobs: int, progress: bool | None,
                      cache_dir: CacheDir = None) -> Report:
    """Azize et al. (2025): DP-KLUCB and DP-IMED against the epsilon-global-DP baselines.

    The grid of the paper: four Bernoulli instances and epsilon in {0.01, 0.1, 0.5, 1}, with
    DP-KLUCB, DP-IMED, AdaP-KLUCB, AdaP-UCB and DP-SE. It also runs DP-KLUCB at a ten times
    longer horizon to compare its median regret over log T with the lower bound, and an
    ablation over the phase ratio alpha.
    """
    from ldp_gym.agents import DPIMED, DPKLUCB, DPSE, AdaPKLUCB, AdaPUCB
    from ldp_gym.envs.mab import optimal_lower_bound
    from ldp_gym.runner import sweep

    horizon, n_runs = AZIZE2025_SIZES["quick" if quick else "full"]
    long_horizon = 10 * horizon
    epsilons = (0.01, 0.1, 0.5, 1.0)
    alphas = (1.1, 1.5, 2.0, 3.0)
    classes = (DPKLUCB, DPIMED, AdaPKLUCB, AdaPUCB, DPSE)
    common = dict(env="LDPMAB-v0", n_runs=n_runs, seed=seed, progress=progress)
    keys, tasks = [], []
    for inst, mu in AZIZE2025_INSTANCES.items():
        for eps in epsilons:
            keys.append(("grid", inst, eps))
            tasks.append(dict(common, horizon=horizon, checkpoints=[horizon],
                              env_kwargs={"means": mu},
                              agents={c.name: (c, {"epsilon": eps}) for c in classes}))
            keys.append(("long", inst, eps))
            tasks.append(dict(common, horizon=long_horizon, checkpoints=[long_horizon],
                              env_kwargs={"means": mu}, agents={
                                  f"DP-KLUCB alpha={a:g}": (DPKLUCB, {"epsilon": eps, "alpha": a})
                                  for a in (1.5, 2.0)}))
    keys.append(("ablation", "mu2", 0.5))
    tasks.append(dict(common, horizon=horizon, checkpoints=[horizon],
                      env_kwargs={"means": AZIZE2025_INSTANCES["mu2"]},
                      agents={f"{c.name} alpha={a:g}": (c, {"epsilon": 0.5, "alpha": a})
                              for c in (DPKLUCB, DPIMED) for a in alphas}))
    results = dict(zip(keys, sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir)))

    names = [c.name for c in classes]
    lines = ["| instance | epsilon | lower bound | " + " | ".join(names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    checks, imed_lines = [], []
    for inst, mu in AZIZE2025_INSTANCES.items():
        for eps in epsilons:
            res = results[("grid", inst, eps)]
            final = {n: res.at(n, horizon) for n in names}
            lb = float(optimal_lower_bound(mu, horizon, eps))
            lines.append(f"| {inst} | {eps:g} | {lb:.0f} | "
                         + " | ".join(regret_cell(final[n], 0) for n in names) + " |")
            kl, imed, adap = final["DP-KLUCB"], final["DP-IMED"], final["AdaP-KLUCB"]
            se = kl.std(ddof=1) / np.sqrt(kl.size)
            checks.append((inst, eps, kl.mean() + 2 * se < adap.mean(),
                           np.median(imed) < np.median(kl), np.median(imed) < np.median(adap)))
            lo, hi = _starved(imed, mu, horizon)
            imed_lines.append(f"| {inst} | {eps:g} | {np.median(kl):.0f} | {np.median(imed):.0f} | "
                              f"{imed.mean():.0f} ± {imed.std(ddof=1) / np.sqrt(imed.size):.0f} | "
                              + (f"{lo:.2f}" if lo == hi else f"{lo:.2f}-{hi:.2f}") + " |")
    lines += ["", caption(horizon, n_runs, "\n".join(lines)),
              "", "DP-IMED is heavy-tailed: medians, its mean with its standard error, and the "
              "fraction of runs that played the best arm fewer than T/2 times (bounds from the "
              "regret where the gaps differ).", "",
              "| instance | epsilon | DP-KLUCB median | DP-IMED median | DP-IMED mean ± se | "
              "DP-IMED starved |", "|---|---|---|---|---|---|", *imed_lines]

    ratio_lines = ["| instance | epsilon | alpha | median regret / log T over the lower bound | "
                   "(alpha - 1)/ln alpha |", "|---|---|---|---|---|"]
    in_band = []
    for inst, mu in AZIZE2025_INSTANCES.items():
        for eps in epsilons:
            res = results[("long", inst, eps)]
            coef = float(optimal_lower_bound(mu, math.e, eps))
            for a in (1.5, 2.0):
                ratio = np.median(res.at(f"DP-KLUCB alpha={a:g}", long_horizon)) / np.log(
                    long_horizon) / coef
                target = (a - 1) / np.log(a)
                if eps >= 0.1:
                    in_band.append(0.85 * target <= ratio <= 1.15 * target)
                ratio_lines.append(f"| {inst} | {eps:g} | {a:g} | {ratio:.2f} | {target:.2f} |")

    ab = results[("ablation", "mu2", 0.5)]
    ab_lines = ["| alpha | DP-KLUCB mean | DP-KLUCB median | DP-IMED mean | DP-IMED median |",
                "|---|---|---|---|---|"]
    for a in alphas:
        kl, imed = ab.at(f"DP-KLUCB alpha={a:g}", horizon), ab.at(f"DP-IMED alpha={a:g}", horizon)
        ab_lines.append(f"| {a:g} | {kl.mean():.0f} | {np.median(kl):.0f} | {imed.mean():.0f} | "
                        f"{np.median(imed):.0f} |")

    fig, axes = figure(ncols=len(AZIZE2025_INSTANCES))
    for ax, (inst, mu) in zip(axes, AZIZE2025_INSTANCES.items()):
        for n in names:
            ax.plot(epsilons, [results[("grid", inst, eps)].at(n, horizon).mean() for eps in epsilons],
                    marker="o", label=n)
        ax.plot(epsilons, [float(optimal_lower_bound(mu, horizon, eps)) for eps in epsilons], "k--",
                lw=1, label="lower bound (Thm 1)")
        ax.set_title(inst)
        epsilon_axes(ax, horizon, logy=True, what=f"mean over {n_runs} runs")

    passed = sum(c[2] for c in checks)
    notes = [
        f"DP-KLUCB's mean + 2 se below AdaP-KLUCB's mean in {passed} of {len(checks)} cells"
        + ("" if passed == len(checks) else ": not in " + ", ".join(
            f"{i} eps={eps:g}" for i, eps, ok, *_ in checks if not ok)),
        f"DP-IMED's median below DP-KLUCB's in {sum(c[3] for c in checks)} of {len(checks)} "
        f"cells, below AdaP-KLUCB's in {sum(c[4] for c in checks)}",
        f"median regret / log T at T = {round_label(long_horizon)} over the lower bound within "
        f"15% of (alpha - 1)/ln alpha for DP-KLUCB in {sum(in_band)} of {len(in_band)} cells "
        "with epsilon >= 0.1 (alpha 1.5 and 2)",
        "not run: Lazy-DP-TS (Hu and Hegde 2022) and non-private IMED, baselines of the paper "
        "that ldp-gym does not implement; the COV-BOOST instance",
    ]
    table = "\n".join(lines + ["", f"DP-KLUCB at T = {round_label(long_horizon)}:", "",
                               *ratio_lines, "", f"Phase ratio alpha on mu2, epsilon = 0.5, "
                               f"T = {round_label(horizon)}:", "", *ab_lines])
    saved = {f"{kind}-{inst}-eps{eps:g}": res for (kind, inst, eps), res in results.items()}
    return Report("Azize et al. 2025: optimal regret under global DP"
                  + (" (quick)" if quick else ""), table, saved, fig.figure, notes)


#: (T, runs) of azize2024-zcdp
AZIZE2024_SIZES = {"quick": (10**5, 20), "full": (10**6, 100)}
#: the delta at which zCDP and pure DP are matched in (epsilon, delta)
ZCDP_DELTA = 1e-6


def azize2024_zcdp(quick: bool, seed: int, n_jobs: int, progress: bool | None,
                   cache_dir: CacheDir = None) -> Report:
    """Azize and Basu (2024): AdaC-UCB (rho-zCDP) against AdaP-UCB (epsilon-DP).

    Two matchings on the four instances of Azize et al. (2025), rho in {0.001, 0.01, 0.1, 1}:
    AdaP-UCB at ``epsilon = sqrt(2 rho)``, whose epsilon-DP implies the same rho-zCDP; and at
    the epsilon of AdaC-UCB's own ``(epsilon, 1e-6)``-DP, converted by dp-accounting.
    """
    from ldp_gym.agents import AdaCUCB, AdaPUCB
    from ldp_gym.runner import sweep
    from ldp_gym.wrappers.mechanisms.privacy import zcdp_epsilon

    horizon, n_runs = AZIZE2024_SIZES["quick" if quick else "full"]
    rhos = (0.001, 0.01, 0.1, 1.0)
    keys, tasks = [], []
    for inst, mu in AZIZE2025_INSTANCES.items():
        for rho in rhos:
            eps_rho, eps_dp = math.sqrt(2 * rho), zcdp_epsilon(rho, ZCDP_DELTA)
            keys.append((inst, rho, eps_rho, eps_dp))
            tasks.append(dict(env="LDPMAB-v0", horizon=horizon, n_runs=n_runs, seed=seed,
                              progress=progress, checkpoints=[horizon], env_kwargs={"means": mu},
                              agents={"AdaC-UCB": (AdaCUCB, {"rho": rho}),
                                      "AdaP-UCB, same rho": (AdaPUCB, {"epsilon": eps_rho}),
                                      "AdaP-UCB, same (eps, delta)": (AdaPUCB, {"epsilon": eps_dp})}))
    results = dict(zip(keys, sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir)))
    names = ("AdaC-UCB", "AdaP-UCB, same rho", "AdaP-UCB, same (eps, delta)")
    lines = ["| instance | rho | eps = sqrt(2 rho) | eps at delta = 1e-6 | " + " | ".join(names) + " |",
             "|---|---|---|---|" + "---|" * len(names)]
    wins_rho = wins_dp = 0
    for (inst, rho, eps_rho, eps_dp), res in results.items():
        final = {n: res.at(n, horizon) for n in names}
        lines.append(f"| {inst} | {rho:g} | {eps_rho:.3g} | {eps_dp:.3g} | "
                     + " | ".join(regret_cell(final[n], 0) for n in names) + " |")
        wins_rho += final["AdaC-UCB"].mean() < final[names[1]].mean()
        wins_dp += final["AdaC-UCB"].mean() < final[names[2]].mean()
    lines += ["", caption(horizon, n_runs, "\n".join(lines))]
    fig, axes = figure(ncols=len(AZIZE2025_INSTANCES))
    for ax, inst in zip(axes, AZIZE2025_INSTANCES):
        for n in names:
            ax.plot(rhos, [results[k].at(n, horizon).mean() for k in keys if k[0] == inst],
                    marker="o", label=n)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rho")
        ax.set_ylabel(f"regret at T = {round_label(horizon)}")
        ax.set_title(inst)
        ax.legend(fontsize="small")
    notes = [f"AdaC-UCB below AdaP-UCB at the same rho in {wins_rho} of {len(keys)} cells, "
             f"at the same (epsilon, 1e-6) in {wins_dp}",
             "AdaP-UCB at the same rho is the stronger guarantee in (epsilon, delta) terms: "
             "epsilon-DP for every delta, against AdaC-UCB's epsilon at delta = 1e-6 in the "
             "fourth column"]
    saved = {f"{inst}-rho{rho:g}": res for (inst, rho, *_), res in results.items()}
    return Report("Azize & Basu 2024: zCDP against pure DP" + (" (quick)" if quick else ""),
                  "\n".join(lines), saved, fig.figure, notes)


#: (T, runs) of shuffle-mab
SHUFFLE_SIZES = {"quick": (10**5, 10), "full": (10**6, 20)}


def shuffle_mab(quick: bool, seed: int, n_jobs: int, progress: bool | None,
                cache_dir: CacheDir = None) -> Report:
    """The price of each trust model on the same instances: local, shuffle, distributed and
    central DP.

    LDP-UCB (local: each reward privatised by its user), Shuffle-SE (shuffle: a trusted
    shuffler, (epsilon, 1e-6)-DP per reward), Dist-DP-SE (distributed: secure aggregation,
    pure epsilon-DP, no trusted party), DP-SE (central: Sajed and Sheffet's elimination on a
    trusted learner) and DP-KLUCB (central, the best known), at the same epsilon.
    """
    from ldp_gym.agents import DPKLUCB, DPSE, LDPUCB, DistDPSE, ShuffleSE
    from ldp_gym.envs.mab import DEFAULT_MEANS
    from ldp_gym.runner import sweep

    horizon, n_runs = SHUFFLE_SIZES["quick" if quick else "full"]
    epsilons = (0.5, 1.0, 2.0, 4.0)
    instances = {"default": DEFAULT_MEANS, "mu1": AZIZE2025_INSTANCES["mu1"]}
    agents = (("local", LDPUCB), ("shuffle", ShuffleSE), ("distributed", DistDPSE),
              ("central", DPSE), ("central", DPKLUCB))
    names = [f"{cls.name} ({model})" for model, cls in agents]
    keys = [(inst, e) for inst in instances for e in epsilons]
    tasks: list[dict[str, Any]] = [
        dict(env="LDPMAB-v0", horizon=horizon, n_runs=n_runs, seed=seed, progress=progress,
             checkpoints=[horizon], env_kwargs={"means": instances[inst]},
             agents={n: (cls, {"epsilon": e}) for n, (_, cls) in zip(names, agents)})
        for inst, e in keys]
    # Shuffle-SE's elimination without privacy (epsilon = 50 makes gamma below 1e-18): the
    # floor that separates the price of the trust model from that of the algorithm
    floor = "Shuffle-SE at eps=50 (no noise)"
    tasks += [dict(env="LDPMAB-v0", horizon=horizon, n_runs=n_runs, seed=seed, progress=progress,
                   checkpoints=[horizon], env_kwargs={"means": instances[inst]},
                   agents={floor: (ShuffleSE, {"epsilon": 50.0})}) for inst in instances]
    done = sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir)
    results = dict(zip(keys, done))
    floors = {inst: res.at(floor, horizon) for inst, res in zip(instances, done[len(keys):])}
    lines = ["| instance | epsilon | " + " | ".join(names) + " |",
             "|---|---|" + "---|" * len(names)]
    for (inst, e), res in results.items():
        lines.append(f"| {inst} | {e:g} | "
                     + " | ".join(regret_cell(res.at(n, horizon), 0) for n in names) + " |")
    lines += [f"| {inst} | (none) | | {regret_cell(floors[inst], 0)} (eps = 50) |"
              + " |" * (len(names) - 2) for inst in instances]
    lines += ["", caption(horizon, n_runs, "\n".join(lines))]
    fig, axes = figure(ncols=len(instances))
    for ax, inst in zip(axes, instances):
        for n in names:
            ax.plot(epsilons, [results[(inst, e)].at(n, horizon).mean() for e in epsilons],
                    marker="o", label=n)
        ax.set_title(f"{inst} {instances[inst]}")
        epsilon_axes(ax, horizon, logy=True, what=f"mean over {n_runs} runs")
    notes = []
    for inst in instances:
        ratio = [results[(inst, e)].at(names[0], horizon).mean()
                 / results[(inst, e)].at(names[1], horizon).mean() for e in epsilons]
        cost = [results[(inst, e)].at(names[1], horizon).mean()
                / results[(inst, e)].at(names[3], horizon).mean() for e in epsilons]
        dist = [results[(inst, e)].at(names[2], horizon).mean()
                / results[(inst, e)].at(names[3], horizon).mean() for e in epsilons]
        notes.append(f"{inst}: local over shuffle regret " + ", ".join(
            f"{r:.2f}x at eps={e:g}" for r, e in zip(ratio, epsilons)) + "; Shuffle-SE over "
            "DP-SE (both eliminations, with their own epochs) " + ", ".join(f"{c:.2f}x" for c in cost)
            + "; Dist-DP-SE over DP-SE " + ", ".join(f"{c:.2f}x" for c in dist))
    notes += [f"{inst}: Shuffle-SE without privacy (eps = 50) {floors[inst].mean():.0f}: the "
              "elimination's own regret, which the shuffle model's noise adds to" for inst in instances]
    saved = {f"{inst}-eps{e:g}": res for (inst, e), res in results.items()}
    saved.update({f"{inst}-no-noise": res for inst, res in zip(instances, done[len(keys):])})
    return Report("Local, shuffle, distributed and central DP on the same instances"
                  + (" (quick)" if quick else ""), "\n".join(lines), saved, fig.figure, notes)


#: (T, runs) of chowdhury2023-distributed
CHOWDHURY2023_SIZES = {"quick": (10**5, 5), "full": (10**6, 20)}


def chowdhury2023_instances() -> dict[str, list[float]]:
    """The easy and hard instances of Chowdhury and Zhou (2023): K = 10 means drawn uniformly
    in ``0.5 -+ gap/2`` (gap 0.5 and 0.1), with the authors' recipe for run 0
    (numpy's legacy Mersenne Twister seeded with 0, then ``gap * rand(10) + 0.5 - gap/2``)."""
    out = {}
    for name, gap in (("easy", 0.5), ("hard", 0.1)):
        draw = np.random.RandomState(0).rand(10)
        out[name] = [round(float(v), 6) for v in gap * draw + 0.5 - gap / 2]
    return out


def chowdhury2023_distributed(quick: bool, seed: int, n_jobs: int, progress: bool | None,
                              cache_dir: CacheDir = None) -> Report:
    """Chowdhury and Zhou (2023): Dist-DP-SE (distributed, pure DP) against DP-SE (central).

    The authors' setting: Gaussian rewards of sd 0.1, clipped to [0, 1] by the agents, on
    the easy and hard instances of :func:`chowdhury2023_instances`, epsilon in {0.1, 0.5, 1},
    and their confidence 0.1 for both algorithms (DP-SE's ``beta``). Dist-DP-SE at epsilon =
    10, the largest its sampler serves, is the elimination with almost no noise (sd 0.14 on
    a batch sum): the floor under the price of privacy.
    """
    from ldp_gym.agents import DPSE, DistDPSE
    from ldp_gym.runner import sweep

    horizon, n_runs = CHOWDHURY2023_SIZES["quick" if quick else "full"]
    instances, epsilons = chowdhury2023_instances(), (0.1, 0.5, 1.0)
    names = ("Dist-DP-SE (distributed)", "DP-SE (central)")
    floor = "Dist-DP-SE at eps=10 (almost no noise)"

    def task(mu: list[float], agents: dict[str, Any]) -> dict[str, Any]:
        return dict(env="LDPMAB-v0", horizon=horizon, n_runs=n_runs, seed=seed, progress=progress,
                    checkpoints=checkpoints(horizon, [horizon]), agents=agents,
                    env_kwargs={"means": mu, "distribution": "gaussian", "sigma": 0.1})

    keys = [(inst, e) for inst in instances for e in epsilons]
    tasks = [task(instances[inst], {names[0]: (DistDPSE, {"epsilon": e}),
                                    names[1]: (DPSE, {"epsilon": e, "beta": 0.1})})
             for inst, e in keys]
    tasks += [task(instances[inst], {floor: (DistDPSE, {"epsilon": 10.0})}) for inst in instances]
    done = sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir)
    results = dict(zip(keys, done))
    floors = {inst: res.at(floor, horizon) for inst, res in zip(instances, done[len(keys):])}
    lines = ["| instance | epsilon | " + " | ".join(names) + " | Dist-DP-SE / DP-SE |",
             "|---|---|" + "---|" * (len(names) + 1)]
    ratios = {}
    for (inst, e), res in results.items():
        final = [res.at(n, horizon) for n in names]
        ratios[(inst, e)] = final[0].mean() / final[1].mean()
        lines.append(f"| {inst} | {e:g} | " + " | ".join(regret_cell(f, 0) for f in final)
                     + f" | {ratios[(inst, e)]:.2f} |")
    lines += [f"| {inst} | (none) | {regret_cell(floors[inst], 0)} (eps = 10) | | |"
              for inst in instances]
    lines += ["", caption(horizon, n_runs, "\n".join(lines))]
    fig, axes = figure(ncols=len(instances))
    for ax, inst in zip(axes, instances):
        for e in epsilons:
            res = results[(inst, e)]
            for n, style in zip(names, ("-", "--")):
                ax.plot(res.checkpoints, res.regret[n].mean(axis=0) / res.checkpoints, style,
                        label=f"{n.split(' ')[0]}, eps={e:g}")
        ax.set_xscale("log")
        ax.set_xlabel("round t")
        ax.set_ylabel(f"time-averaged regret Reg_t / t (mean over {n_runs} runs)")
        ax.set_title(f"{inst} (K = 10, Gaussian sd 0.1)")
        ax.legend(fontsize=7)
    below = sum(r <= 1.0 for r in ratios.values())
    notes = [f"Dist-DP-SE at or below DP-SE in {below} of {len(ratios)} cells; its regret over "
             "DP-SE's: " + ", ".join(f"{inst} eps={e:g} {r:.2f}x" for (inst, e), r in ratios.items()),
             "the two algorithms have their own schedules (Dist-DP-SE batches 4^b, DP-SE the "
             "epochs of Sajed and Sheffet), so the ratio is not the price of distributing trust "
             "alone"]
    notes += [f"{inst}: the elimination with almost no noise (eps = 10) {floors[inst].mean():.0f}"
              for inst in instances]
    saved = {f"{inst}-eps{e:g}": res for (inst, e), res in results.items()}
    saved.update({f"{inst}-no-noise": res for inst, res in zip(instances, done[len(keys):])})
    return Report("Chowdhury & Zhou 2023: distributed against central DP"
                  + (" (quick)" if quick else ""), "\n".join(lines), saved, fig.figure, notes)


EXPERIMENTS = (
    Experiment("azize2022-fig2", "Azize & Basu 2022 Fig. 2: global-DP agents, eps=1, T=1e7",
               azize2022_fig2),
    Experiment("azize2022-fig3", "Azize & Basu 2022 Fig. 3: AdaP-KLUCB regret vs epsilon",
               azize2022_fig3),
    Experiment("azize2022-ablation", "Fig. 2's instance: eq. 7/8 variants and tie-breaking",
               azize2022_ablation),
    Experiment("mab-local-vs-global", "Regret vs epsilon, local and global DP on one instance",
               mab_local_vs_global),
    Experiment("azize2025-optimal", "Azize et al. 2025: DP-KLUCB and DP-IMED on the paper's grid",
               azize2025_optimal),
    Experiment("azize2024-zcdp", "Azize & Basu 2024: AdaC-UCB (zCDP) against AdaP-UCB, matched",
               azize2024_zcdp),
    Experiment("shuffle-mab", "Local, shuffle, distributed and central DP on the same "
               "instances: each trust model's price", shuffle_mab),
    Experiment("chowdhury2023-distributed", "Chowdhury & Zhou 2023: Dist-DP-SE (no trusted "
               "party, pure DP) against central DP-SE", chowdhury2023_distributed),
)
