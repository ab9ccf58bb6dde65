"""Contextual linear and GLM experiments: Han et al. (2021) section 5, Zheng et al. (2020) rates,
and the trust models side by side.

Step sizes of LDP-GLOC and LDP-SGD are tuned the same way, as Han et al.
did: for each setting and epsilon, every step on the grid ``STEP_GRID`` is
run for the whole horizon with ``TUNING_RUNS`` runs on seeds disjoint from
the reported runs, and the step with the lowest mean regret is kept. The
tuned steps are reported, flagged when they sit at the grid's edge. A tenth
of the horizon, tried first, favoured small steps whose 1/t schedule then
stalls at the full horizon. Three runs per step, also tried first, were too few
for LDP-SGD, whose regret is heavy-tailed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ldp_gym.results import round_label
from ldp_gym.runner import sweep

from .common import (
    CacheDir,
    Experiment,
    Report,
    caption,
    checkpoints,
    epsilon_axes,
    figure,
    log_slope,
    merge_all,
    regret_cell,
    run_by_agent,
)

if TYPE_CHECKING:  # the agents are imported where they run (the core does not import them)
    from ldp_gym.agents.base import Agent

#: label -> (agent class, its keyword arguments, tune its step?)
Families = dict[str, tuple["type[Agent]", dict[str, Any], bool]]

STEP_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
#: runs per step when tuning (on seeds disjoint from the reported runs)
TUNING_RUNS = 10
EPSILONS = (0.5, 1.0)
#: (horizon, runs) of the quick and the full versions (T = 1e5 and 10 runs as in the issue)
QUICK, FULL = (10**4, 5), (10**5, 10)
#: the rates are fitted over [T/100, T] of a longer horizon (the papers' code went up to 1e6)
RATES_QUICK, RATES_FULL = (10**4, 5), (10**6, 10)


def _tuned_steps(env: str, requests: dict[Any, tuple[type, dict]], horizon: int, seed: int,
                 n_jobs: int, progress: bool | None,
                 env_kwargs: dict | None = None, cache_dir: CacheDir = None) -> dict[Any, float]:
    """The step of ``STEP_GRID`` with the lowest mean regret at ``horizon`` for each request.

    ``requests`` maps a key to an agent class and its keyword arguments. All are tuned in
    one sweep, with one progress display."""
    keys = list(requests)
    tasks = [dict(env=env, agents={f"step={s:g}": (cls, {**kwargs, "step": s})}, horizon=horizon,
                  n_runs=TUNING_RUNS, seed=seed + 10_000, checkpoints=[horizon],
                  progress=progress, env_kwargs=env_kwargs or {})
             for cls, kwargs in requests.values() for s in STEP_GRID]
    if not tasks:
        return {}
    out = sweep(tasks, n_jobs=n_jobs, label="tuning the steps", cache_dir=cache_dir)
    steps = {}
    for i, key in enumerate(keys):
        block = out[i * len(STEP_GRID):(i + 1) * len(STEP_GRID)]
        finals = [r.regret[f"step={s:g}"][:, -1].mean() for r, s in zip(block, STEP_GRID)]
        steps[key] = STEP_GRID[int(np.argmin(finals))]
    return steps


def _compare(title: str, env: str, families: Families, delta: float,
             quick: bool, seed: int, n_jobs: int, progress: bool | None,
             env_kwargs: dict | None = None, cache_dir: CacheDir = None) -> Report:
    """Every family at each epsilon on the same instances.

    ``families`` maps a label to a class, its kwargs and whether to tune its step."""
    horizon, n_runs = QUICK if quick else FULL
    marks = [10**3, 10**4, 10**5]
    specs = {(label, eps): (cls, {"epsilon": eps,
                                  **({"delta": delta} if "delta" in cls.test_params else {}), **kw})
             for eps in EPSILONS for label, (cls, kw, _) in families.items()}
    steps = _tuned_steps(env, {key: specs[key] for key in specs if families[key[0]][2]}, horizon,
                         seed, n_jobs, progress, env_kwargs, cache_dir)
    tasks = []
    for eps in EPSILONS:
        agents = {}
        for label in families:
            cls, kwargs = specs[(label, eps)]
            if (label, eps) in steps:
                kwargs = {**kwargs, "step": steps[(label, eps)]}
            agents[f"{label} eps={eps:g}"] = (cls, kwargs)
        tasks.append(dict(env=env, agents=agents, horizon=horizon, n_runs=n_runs, seed=seed,
                          checkpoints=checkpoints(horizon, marks), progress=progress,
                          env_kwargs=env_kwargs or {}))
    res = merge_all(sweep(tasks, n_jobs=n_jobs, label="runs", cache_dir=cache_dir))
    at = sorted({m for m in marks if m <= horizon} | {horizon})
    fig, ax = figure()
    res.plot(ax=ax, band="half-sd", logx=True, title=f"{title}: {n_runs} runs")
    notes = [f"T = {round_label(horizon)}, {n_runs} runs, delta={delta:g}"]
    notes += [f"tuned step of {label} at eps={eps:g}: {s:g} (grid {STEP_GRID})"
              + (" -- at the grid's edge" if s in (STEP_GRID[0], STEP_GRID[-1]) else "")
              for (label, eps), s in steps.items()]
    for eps in EPSILONS:
        final = {label: res.at(f"{label} eps={eps:g}", horizon).mean() for label in families}
        notes.append(f"eps={eps:g}, lowest first: " + " < ".join(
            f"{a} ({final[a]:.0f})" for a in sorted(final, key=final.__getitem__)))
    lo, hi = min(EPSILONS), max(EPSILONS)
    worse = [label for label in families
             if res.at(f"{label} eps={lo:g}", horizon).mean() > res.at(f"{label} eps={hi:g}", horizon).mean()]
    notes.append(f"worse at eps={lo:g} than at eps={hi:g}: {', '.join(worse) or 'none'}")
    return Report(title + (" (quick)" if quick else ""), res.table(at), {"results": res}, fig.figure,
                  notes)


def han2021_single(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Han et al. (2021) Fig. 2, single parameter: d = 2, K = 10, delta = 0.01."""
    from ldp_gym.agents import LDPGLOC, LDPOLS, LDPSGD, LDPLinUCB

    families: Families = {"LDP-UCB": (LDPLinUCB, {}, False), "LDP-GLOC": (LDPGLOC, {}, True),
                "LDP-OLS": (LDPOLS, {}, False), "LDP-SGD": (LDPSGD, {}, True)}
    return _compare("Han et al. 2021, single-parameter linear bandit", "LDPLinearBandit-v0",
                    families, 0.01, quick, seed, n_jobs, progress, cache_dir=cache_dir)


def han2021_multi(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Han et al. (2021) Fig. 2, multi parameter: d = 2, K = 3, delta = 0.1.

    LDP-UCB and LDP-GLOC run on block contexts."""
    from ldp_gym.agents import LDPGLOC, LDPLinUCB, LDPMultiOLS, LDPMultiSGD

    families: Families = {"LDP-UCB": (LDPLinUCB, {}, False), "LDP-GLOC": (LDPGLOC, {}, True),
                "LDP-OLS": (LDPMultiOLS, {}, False), "LDP-SGD": (LDPMultiSGD, {}, True)}
    return _compare("Han et al. 2021, multi-parameter linear bandit",
                    "LDPMultiParamLinearBandit-v0", families, 0.1, quick, seed, n_jobs, progress,
                    cache_dir=cache_dir)


def han2021_logistic(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Han et al. (2021): LDP-GLOC against LDP-SGD with a logistic link (d = 2, K = 10)."""
    from ldp_gym.agents import LDPGLOC, LDPSGD

    families: Families = {"LDP-GLOC": (LDPGLOC, {}, True), "LDP-SGD": (LDPSGD, {}, True)}
    return _compare("Han et al. 2021, logistic bandit", "LDPGLMBandit-v0", families, 0.01,
                    quick, seed, n_jobs, progress, cache_dir=cache_dir)


def han2021_poisson(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Han et al. (2021): LDP-GLOC against LDP-SGD with a Poisson link, rewards clipped to 5."""
    from ldp_gym.agents import LDPGLOC, LDPSGD

    families: Families = {"LDP-GLOC": (LDPGLOC, {}, True), "LDP-SGD": (LDPSGD, {}, True)}
    return _compare("Han et al. 2021, Poisson bandit", "LDPGLMBandit-v0", families, 0.01,
                    quick, seed, n_jobs, progress, env_kwargs={"link": "poisson"},
                    cache_dir=cache_dir)


def zheng2020_rates(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Slope of log regret against log T for the four LDP agents, single-parameter linear at
    eps = 1. Zheng et al. predict T^{3/4} for LDP-UCB / LDP-GLOC, Han et al. T^{1/2} for
    LDP-OLS / LDP-SGD."""
    from ldp_gym.agents import LDPGLOC, LDPOLS, LDPSGD, LDPLinUCB

    horizon, n_runs = RATES_QUICK if quick else RATES_FULL
    env = "LDPLinearBandit-v0"
    steps = _tuned_steps(env, {"LDP-GLOC": (LDPGLOC, {"epsilon": 1.0}),
                               "LDP-SGD": (LDPSGD, {"epsilon": 1.0})}, horizon, seed, n_jobs,
                         progress, cache_dir=cache_dir)
    agents = {"LDP-UCB": (LDPLinUCB, {"epsilon": 1.0}),
              "LDP-GLOC": (LDPGLOC, {"epsilon": 1.0, "step": steps["LDP-GLOC"]}),
              "LDP-OLS": (LDPOLS, {"epsilon": 1.0}),
              "LDP-SGD": (LDPSGD, {"epsilon": 1.0, "step": steps["LDP-SGD"]})}
    cps = np.unique(np.round(np.geomspace(horizon / 100, horizon, 12)).astype(np.int64))
    res = run_by_agent(env, agents, n_jobs, cache_dir, label="runs", horizon=horizon,
                       n_runs=n_runs, seed=seed, checkpoints=cps, progress=progress)
    lines = ["| agent | slope of log mean regret on log t, t in [T/100, T] | in [T/10, T] | "
             "predicted |", "|---|---|---|---|"]
    predicted = {"LDP-UCB": "3/4", "LDP-GLOC": "3/4", "LDP-OLS": "1/2", "LDP-SGD": "1/2"}
    late = cps >= horizon / 10
    fig, ax = figure()
    for a in agents:
        slope = log_slope(cps, res.mean(a))
        late_slope = log_slope(cps[late], res.mean(a)[late])
        lines.append(f"| {a} | {slope:.2f} | {late_slope:.2f} | {predicted[a]} |")
        ax.loglog(cps, res.mean(a), marker="o", label=f"{a} (slope {slope:.2f})")
    ax.set_xlabel("round t")
    ax.set_ylabel(f"cumulative regret (mean of {n_runs} runs)")
    ax.legend(fontsize=8)
    lines += ["", f"Slopes of a least-squares line through (log t, log mean regret over {n_runs} "
              f"runs) at the checkpoints; T = {round_label(horizon)}."]
    return Report("Regret rates (Zheng et al. 2020; Han et al. 2021)" + (" (quick)" if quick else ""),
                  "\n".join(lines), {"rates": res}, fig.figure,
                  [f"T = {round_label(horizon)}, {n_runs} runs, eps=1, delta=0.01",
                   "tuned steps: " + ", ".join(f"{a} {s:g}" for a, s in steps.items())])


#: (T, runs) of trust-spectrum-linear
TRUST_SIZES = {"quick": (2000, 4), "full": (20_000, 20)}


def trust_spectrum_linear(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Linear contextual bandits under each trust model on the same instances.

    Non-private LinUCB; joint DP (a trusted learner with a private billboard): JDP-LinUCB;
    shuffle DP (a trusted shuffler of batches of 20 users): SDP-LinUCB; local DP (no trusted
    party): LDP-OLS, LDP-LinUCB and LDP-GLOC (its default step, not tuned). At epsilon in
    {0.5, 1, 2, 8} and delta = 0.01 for every agent, on Han et al.'s default instance of
    ``LDPLinearBandit-v0`` (d = 2, K = 10) and on d = 5, K = 20.
    """
    from ldp_gym.agents import LDPGLOC, LDPOLS, JDPLinUCB, LDPLinUCB, LinUCB, SDPLinUCB

    horizon, n_runs = TRUST_SIZES["quick" if quick else "full"]
    epsilons, delta = (0.5, 1.0, 2.0, 8.0), 0.01
    instances = {"d=2, K=10": {}, "d=5, K=20": {"dim": 5, "n_arms": 20}}
    private = {"JDP-LinUCB (joint)": JDPLinUCB, "SDP-LinUCB (shuffle)": SDPLinUCB,
               "LDP-OLS (local)": LDPOLS,
               "LDP-LinUCB (local)": LDPLinUCB, "LDP-GLOC (local)": LDPGLOC}

    def task(env_kwargs: dict[str, Any], agents: dict[str, Any]) -> dict[str, Any]:
        return dict(env="LDPLinearBandit-v0", env_kwargs=env_kwargs, agents=agents,
                    horizon=horizon, n_runs=n_runs, seed=seed, progress=progress,
                    checkpoints=[horizon])

    def calibrates(cls: type, e: float) -> bool:  # LDP-OLS's classic sigma fails at eps = 8
        try:
            cls(2, epsilon=e, delta=delta, horizon=10)
        except ValueError:
            return False
        return True

    refused = {(name, e) for name, cls in private.items() for e in epsilons
               if not calibrates(cls, e)}
    keys = [(inst, e) for inst in instances for e in epsilons]
    tasks = [task(instances[inst], {name: (cls, {"epsilon": e, "delta": delta})
                                    for name, cls in private.items() if (name, e) not in refused})
             for inst, e in keys]
    tasks += [task(kw, {"LinUCB (none)": LinUCB}) for kw in instances.values()]
    done = sweep(tasks, n_jobs=n_jobs, label="runs", cache_dir=cache_dir)
    results = dict(zip(keys, done))
    plain = {inst: res.at("LinUCB (none)", horizon) for inst, res in zip(instances, done[len(keys):])}
    names = list(private)
    lines = ["| instance | epsilon | " + " | ".join(names) + " |",
             "|---|---|" + "---|" * len(names)]
    for (inst, e), res in results.items():
        lines.append(f"| {inst} | {e:g} | " + " | ".join(
            "refused" if (n, e) in refused else regret_cell(res.at(n, horizon), 0)
            for n in names) + " |")
    lines += [f"| {inst} | (none) | LinUCB (non-private): {regret_cell(plain[inst], 0)} |"
              + " |" * (len(names) - 1) for inst in instances]
    lines += ["", caption(horizon, n_runs, "\n".join(lines))]
    fig, axes = figure(ncols=len(instances))
    for ax, inst in zip(axes, instances):
        for n in names:
            ran = [e for e in epsilons if (n, e) not in refused]
            ax.plot(ran, [results[(inst, e)].at(n, horizon).mean() for e in ran], marker="o",
                    label=n)
        ax.axhline(plain[inst].mean(), color="k", ls="--", lw=0.8, label="LinUCB (none)")
        ax.set_title(inst)
        epsilon_axes(ax, horizon, logy=True, what=f"mean over {n_runs} runs")
    notes = []
    for (inst, e), res in results.items():
        final = {n: res.at(n, horizon).mean() for n in names if (n, e) not in refused}
        notes.append(f"{inst}, eps={e:g}, lowest first: " + " < ".join(
            f"{n} ({final[n]:.0f})" for n in sorted(final, key=final.__getitem__)))
    notes += [f"refused: {n} at eps={e:g}: its paper's classic Gaussian calibration does not "
              f"give (eps, {delta:g})-DP there" for n, e in sorted(refused)]
    saved = {f"{inst.replace(', ', '_').replace('=', '')}-eps{e:g}": res
             for (inst, e), res in results.items()}
    saved.update({f"{inst.replace(', ', '_').replace('=', '')}-linucb": res
                  for inst, res in zip(instances, done[len(keys):])})
    return Report("Linear contextual bandits across the trust models"
                  + (" (quick)" if quick else ""), "\n".join(lines), saved, fig.figure, notes)


EXPERIMENTS = (
    Experiment("han2021-single", "Han et al. 2021: LDP agents, single-parameter linear, eps 0.5/1",
               han2021_single),
    Experiment("han2021-multi", "Han et al. 2021: LDP agents, multi-parameter linear, eps 0.5/1",
               han2021_multi),
    Experiment("han2021-logistic", "Han et al. 2021: LDP-GLOC vs LDP-SGD, logistic link",
               han2021_logistic),
    Experiment("han2021-poisson", "Han et al. 2021: LDP-GLOC vs LDP-SGD, Poisson link",
               han2021_poisson),
    Experiment("zheng2020-rates", "Slopes of log regret vs log T of the four LDP agents",
               zheng2020_rates),
    Experiment("trust-spectrum-linear", "Linear contextual bandits: no privacy, joint, shuffle "
               "and local DP on the same instances", trust_spectrum_linear),
)
