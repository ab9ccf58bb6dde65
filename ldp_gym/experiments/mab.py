"""Multi-armed bandit experiments: Azize & Basu (2022) Fig. 2 and 3, local vs global DP."""

from __future__ import annotations

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


EXPERIMENTS = (
    Experiment("azize2022-fig2", "Azize & Basu 2022 Fig. 2: global-DP agents, eps=1, T=1e7",
               azize2022_fig2),
    Experiment("azize2022-fig3", "Azize & Basu 2022 Fig. 3: AdaP-KLUCB regret vs epsilon",
               azize2022_fig3),
    Experiment("azize2022-ablation", "Fig. 2's instance: eq. 7/8 variants and tie-breaking",
               azize2022_ablation),
    Experiment("mab-local-vs-global", "Regret vs epsilon, local and global DP on one instance",
               mab_local_vs_global),
)
