"""Bandit convex optimisation under LDP: the regret rates of Zheng et al. (2020), Table 1.

The paper has no experiments; its results are rates. ``zheng2020-bco``
measures them. It takes each loss family of ``LDPBCO-v0`` with its matching
one-point black box:

* the absolute loss with FKM, rate T^{3/4};
* the logistic loss, convex and smooth, with Saha-Tewari, rate T^{2/3};
* the quadratic loss, strongly convex and smooth, with Hazan-Levy, rate T^{1/2}.

On each family it also runs the two-point method of Agarwal, Dekel and Xiao, with
rate T^{1/2}, or log T when the loss is strongly convex. It runs every horizon T
of a log grid *separately*, because the schedules are tuned for the horizon, as
the theorems are stated. Each horizon runs non-private, and under Zheng's Alg 1 for one
point or Alg 2 for two points at several epsilon. It reports

* the slope of log mean regret on log T over the last two decades of the
  grid, next to the theory's exponent;
* the epsilon dependence at the largest T: the slope of log regret on
  log(1/epsilon), next to the theory's 1 for one point and 2 for two points.

Rates are upper bounds and asymptotic. A measured slope below the exponent is
not a contradiction: the bound may be loose for the instance, or the noise
term not yet dominant. One above it over the fitted range would be, and the
notes say so. What the code measured is reported as it is.

Measured with the full version: T = 1e3 to 1e6, 20 runs, seed 0, ``ldp-gym reproduce
zheng2020-bco``. It took 152 s with 2 jobs. Before Saha-Tewari and Hazan-Levy played
compiled blocks, it took 41 min on one core. The non-private slopes match the theory: FKM 0.77
for 3/4, Saha-Tewari 0.69 for 2/3, Hazan-Levy 0.56 for 1/2 with its log factor, ADX 0.50
and 0.49 for 1/2, flat for log T. Under LDP the two-point method reaches its rate from
eps = 4. Its slopes are 0.54 and 0.50 on the absolute loss at eps 4 and 8, and 0.59 and
0.53 on the logistic one; on the quadratic loss they are 0.17 and 0.14, against log T. Its
regret at T = 1e6 falls with eps like eps^-1.3 to eps^-1.7, where the theory says 2. The
one-point methods are still above their exponents at every eps, by 0.13 to 0.24 at eps = 8
down to 0.5, with slopes 0.63 to 0.99. Their eps dependence is 0.28 to 0.65, where the
theory says 1: their regret is still in its linear regime. The released losses' range is about
B + sigma sqrt(2 ln 2T) with sigma about 10 B / eps at delta = 1e-5, so the bounds'
constants are some 50 times the non-private ones, and a c T^{3/4} bound falls below the
trivial linear regret only beyond T of order c^4.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldp_gym.results import round_label
from ldp_gym.runner import sweep

from .common import CacheDir, Experiment, Report, caption, figure, log_slope, merge_all

#: (horizons, runs) of the quick and the full versions
QUICK = ((1_000, 3_000, 10_000), 5)
FULL = (tuple(int(t) for t in np.round(np.geomspace(1e3, 1e6, 7))), 20)
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
DELTA = 1e-5
#: family -> (env kwargs, one-point black box, predicted exponent one point, two points)
FAMILIES: dict[str, tuple[dict[str, Any], str, str, str]] = {
    "absolute": ({"loss": "absolute"}, "FKM", "3/4", "1/2"),
    "logistic": ({"loss": "logistic"}, "SahaTewari", "2/3", "1/2"),
    "quadratic": ({"loss": "quadratic"}, "HazanLevy", "1/2", "log T"),
}


def _wrappers(feedback: str, eps: float | None) -> list:
    """Zheng's release of the feedback: Alg 1 for one point, Alg 2 for two points.

    It is calibrated as the releases default: classic below epsilon 1, analytic from 1 on.
    """
    from ldp_gym.wrappers import VectorTwoPointGaussian, one_point

    if eps is None:
        return []
    release = one_point if feedback == "one" else VectorTwoPointGaussian
    return [(release, {"epsilon": eps, "delta": DELTA})]


#: the theory's exponent of T (``log T``: 0)
_EXPONENTS = {"3/4": 0.75, "2/3": 2 / 3, "1/2": 0.5, "log T": 0.0}


def zheng2020_bco(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Regret against T of the one-point and two-point black boxes, private and not."""
    import ldp_gym.agents as agents

    horizons, n_runs = QUICK if quick else FULL
    levels: list[float | None] = [None, *EPSILONS]
    tasks, keys = [], []
    for family, (env_kwargs, box, _, _) in FAMILIES.items():
        for feedback, env, cls in (("one", "LDPBCO-v0", getattr(agents, box)),
                                   ("two", "LDPMultiPointBCO-v0", agents.TwoPointGD)):
            for eps in levels:
                for t in horizons:
                    label = f"{family} {feedback}-point " + ("non-private" if eps is None
                                                             else f"eps={eps:g}")
                    tasks.append(dict(env=env, agents={label: cls}, horizon=t, n_runs=n_runs,
                                      seed=seed, checkpoints=[t], progress=progress,
                                      env_kwargs=env_kwargs,
                                      wrappers=_wrappers(feedback, eps)))
                    keys.append((family, feedback, eps, t, label))
    out = sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir)
    regret: dict[tuple, np.ndarray] = {}
    by_horizon: dict[int, list] = {}
    for (family, feedback, eps, t, label), res in zip(keys, out):
        regret[(family, feedback, eps, t)] = res.regret[label][:, -1]
        by_horizon.setdefault(t, []).append(res)
    T = np.array(horizons, dtype=np.float64)
    fit = T >= T[-1] / 100  # the last two decades
    last_t = round_label(horizons[-1])
    lines = [f"| family | feedback | privacy | regret at T = {last_t} | slope on log T | theory |",
             "|---|---|---|---|---|---|"]
    eps_lines = [f"| family | feedback | slope of log regret on log(1/eps) at T = {last_t} | "
                 "theory |", "|---|---|---|---|"]
    notes = [f"horizons {list(horizons)}, each run separately, {n_runs} runs each, d = 5, "
             f"delta = {DELTA:g}; slopes fitted over T >= {horizons[-1] / 100:g}"]
    fig, axes = figure()
    for family, (_, box, one_rate, two_rate) in FAMILIES.items():
        for feedback, rate, name in (("one", one_rate, box), ("two", two_rate, "ADX")):
            for eps in levels:
                means = np.array([regret[(family, feedback, eps, t)].mean() for t in horizons])
                last = regret[(family, feedback, eps, horizons[-1])]
                slope = log_slope(T[fit], means[fit])
                priv = "non-private" if eps is None else f"eps={eps:g}"
                lines.append(f"| {family} | {feedback}-point ({name}) | {priv} | "
                             f"{last.mean():.4g} ± {last.std(ddof=1):.2g} | {slope:.2f} | "
                             f"{rate} |")
                exponent = _EXPONENTS[rate]
                if abs(slope - exponent) > 0.1:
                    notes.append(f"{family} {feedback}-point {priv}: slope {slope:.2f} is "
                                 f"{'above' if slope > exponent else 'below'} the theory's "
                                 f"{rate} by {abs(slope - exponent):.2f}")
                if eps == 1.0:
                    axes.loglog(T, means, marker="o",
                                label=f"{family} {feedback}-pt eps=1 ({slope:.2f})")
            finals = np.array([regret[(family, feedback, e, horizons[-1])].mean()
                               for e in EPSILONS])
            eps_slope = log_slope(1 / np.array(EPSILONS), finals)
            eps_lines.append(f"| {family} | {feedback}-point | {eps_slope:.2f} | "
                             f"{'1' if feedback == 'one' else '2'} |")
    firsts = [line.get_ydata()[0] for line in axes.get_lines()]
    anchor = math.exp(np.mean(np.log(firsts))) if firsts else 1.0  # the data's first points
    for exponent in (0.5, 2 / 3, 0.75):  # reference slopes through the data's scale
        axes.loglog(T, anchor * (T / T[0])**exponent, ls=":", color="grey", lw=0.8)
    axes.set_xlabel("horizon T")
    axes.set_ylabel(f"regret at T (mean of {n_runs} runs)")
    axes.set_title("Zheng et al. 2020, BCO: regret against T (dotted: T^1/2, T^2/3, T^3/4)")
    axes.legend(fontsize=6)
    table = "\n".join(lines) + "\n\n" + caption(horizons[-1], n_runs) + "\n\n" + \
        "\n".join(eps_lines)
    # one file per horizon: the loss families (env kwargs) and one- and two-point envs differ
    results = {f"T{t}": merge_all(rs, allow_different=["env"]) for t, rs in by_horizon.items()}
    return Report("Zheng et al. 2020: bandit convex optimisation rates" + (" (quick)" if quick else ""),
                  table, results, fig.figure, notes)


EXPERIMENTS = (
    Experiment("zheng2020-bco", "Zheng et al. 2020: BCO regret rates, one and two points, "
               "eps 0.5 to 8 and non-private", zheng2020_bco),
)
