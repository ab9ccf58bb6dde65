"""Nonparametric contextual bandits under LDP with transfer: Ma et al. (2025), section 4.

Synthetic setting (``LDPNonparametricBandit-v0``, defaults): d = 2, X uniform on
[0, 1]^2, K = 3 bumps ``f_k(x) = 2 e^{-a_k}/(1 + e^{-a_k})``,
``a_k = 2 K^2 (x_1 - (k+1)/(K+1))^2``, Bernoulli rewards; a "large eps" of 1024
stands for the non-private case, as in the authors' scripts. Auxiliary data:
covariate shift with density proportional to ``||x - 1/2||_inf^gamma`` and the
behaviour policy ``linspace(kappa/K, (2 - kappa)/K, K)``.

* ``ma2025-fig7``: regret at n against n, for eps in {1, 2, 4, 8, 1024}. Each n is run
  separately, since the algorithm's constants depend on n. The agents are LDPMAB without
  auxiliary data, LDPMABAux with M = 2 datasets of n_m = 5000, eps_m = 8, gamma = 0, as
  in the authors' script, and the uniform policy.
* ``ma2025-fig6``: the jump-start: global average regret R_t / t and, at the point
  x0 = (1/3, 1/3), the local average regret of the policy and its probability of
  the best arm, over t, without, with effective (n_m = 500, eps_m = 8) and with weak
  (n_m = 500, eps_m = 1) auxiliary data, at eps = 1, n = 10^4.
* ``ma2025-fig8-9``: regret at n against eps_m (Fig 8), gamma and kappa (Fig 9a-b),
  each for a low and a high eps_m, and the order of two auxiliary datasets: eps_m = 8
  first against eps_m = 2 first (Fig 9c).
* ``ma2025-real``: the real-data table on the datasets bundled with scikit-learn, as in
  the paper's Table 2. ``LDPClassificationBandit-v0`` serves digits, wine, breast_cancer
  and iris, reduced to d = 2 by principal components. It reports the mean cumulative
  reward of LDPMAB without and with auxiliary data, Linear and the uniform policy, each
  as a ratio to the non-private ABSE. The auxiliary data are M = 1 dataset with
  covariate shift gamma = 1. Linear is Han et al.'s multi-parameter LDP-SGD, logistic.
  The paper's Adult, Jobs and Taxi data cannot be fetched. Its exact grid of eps and
  eps_m was lost from our copy of the text, so the grid here is our choice, stated in
  the notes. The NN baseline and Linear with auxiliary data are not in the library.
* ``ma2025-ablation``: the faithful, private LDPMAB against LDPMAB with the public
  code's departures, each alone and both, and the uniform policy, at every eps. The
  departures, ``departures=("reused_sums", "noise_in_bin")``, are NOT private.

What is reported is what the code measures, next to the paper's claims, including
where the faithful algorithm does not beat the uniform policy. The notes of each
report compare every configuration with the uniform policy on the same instances,
with a paired difference and two standard errors. These are common random numbers:
the same seed gives every agent the same contexts and rewards.

Why the faithful algorithm often does not learn at small eps: a diagnosis, measured
with LDPMAB at n = 2e4, 6 runs, on a 25 x 25 grid of points, after the run. The best
arm had been eliminated at 62% (eps = 1), 59% (eps = 2), 35% (eps = 8) and 0%
(eps = 1024) of the points, with one active arm left nearly everywhere at eps <= 8.
Eliminating all but one arm uniformly at random would lose the best arm at 2/3 of the
points. The cause: every user reports a noisy slot for every active bin and arm, so
``sum V~`` carries Laplace noise of standard deviation ``4 sqrt(2) sqrt(N(A))/eps``.
The radius of eq. 14, with the public code's ``C sqrt(ln n) = sqrt(2 log2 n)``, is
``sqrt(2 log2 n) sqrt(N(A))/eps / sum U~`` once ``N(A)/eps^2 > sum U~``. That is about
0.8 to 1 noise standard deviation of the unclipped ratio ``r^ = sum V~ / sum U~`` for n
between 1e3 and 1e5. The test runs after every user and ``r^`` is a ratio of noisy sums,
with heavy tails while ``sum U~`` is small. So eliminations driven by noise are frequent
and, children inheriting their parent's arms, permanent. At large eps the noise is
negligible and the algorithm is slow instead: it must refine to depth 4 or 5 before a
gap of the bumps exceeds ``2 tau_j``. The public code's departures change both: its
re-added cumulative sums shrink the radius with the number of batches, and its noise
only inside the user's bin removes the noise of all other slots. ``ma2025-ablation``
measures each. Those variants are NOT private and serve for diagnosis only.

Measured with the full versions, seed 0, ``ldp-gym reproduce NAME``. Regret is
cumulative, the mean of 20 runs unless said:

* ``ma2025-fig7``, n = 1e5 (uniform 41,393): LDPMAB 38,295 (eps 1), 33,396 (2),
  25,869 (4), 22,836 (8), 12,486 (1024): below the uniform policy at every eps and
  falling with eps, as the paper says. At eps = 1 it is only just below: paired
  difference -3,098 +- 3,026. With the auxiliary data: 21,226, 17,732, 21,274, 20,063,
  17,972. That is lower than without at every eps <= 8, but flat in eps, since the
  auxiliary data dominate. It is above LDPMAB at eps = 1024: their noisy eliminations
  persist.
* ``ma2025-fig6`` (eps = 1, n = 1e4): effective auxiliary data give the jump-start at
  x0. The best arm is chosen with probability 0.77 at t = 2,600 and 0.90 at 1e4,
  against 0.45 without and 0.40 with the weak data. Global average regret: 0.322
  (effective), 0.362 (without), 0.401 (weak), 0.414 (uniform).
* ``ma2025-fig8-9``, n = 4e4, eps = 2: no auxiliary data give 14,648 and uniform 16,584.
  Regret falls with eps_m: 15,098 at eps_m = 1, 8,288 at 8, 2,461 at 1024. It rises with
  gamma at eps_m = 2, from 11,258 at gamma = 0 to 14,028 at 1.5, and is flat at
  eps_m = 8. It falls with kappa at eps_m = 8, from 15,393 at kappa = 0 to about 8,000
  from kappa = 0.6, with no trend at eps_m = 2. Order (n = 1e4): high-quality first
  2,356 against low-quality first 3,651, as the paper says. The target's eps hardly
  matters in this panel, 2,355 to 2,356 for eps 1 to 8: after the jump-start most bins
  keep one arm, so the target users' reports change almost nothing.
* ``ma2025-real``, n = 2e4, as the ratio of cumulative reward to ABSE's: with auxiliary
  data at eps_m = 8, LDPMAB reaches 0.52 on digits, 0.82 on wine, 0.89 on breast_cancer
  and 0.77 on iris. That is above LDPMAB without, at 0.41 to 0.78, and above Linear, at
  0.37 to 0.59. Linear is not distinguishable from the uniform policy on most cells.
  Auxiliary data at eps_m = 2 help less, and at eps = 4 they lower the reward on wine
  and iris.
* ``ma2025-ablation``, n = 2e4, 10 runs, uniform 8,258: the faithful agent is not
  distinguishable from the uniform policy at eps <= 2 (8,115 and 7,828). The two
  departures together, which are NOT private, give 7,489, 5,470, 3,545 and 2,390 at
  eps 1, 2, 4 and 8, against the faithful 8,115, 7,828, 6,105 and 5,328: they drive the
  published curves. The re-added sums alone drive the non-private gain: 2,116 against
  6,024 at eps = 1024.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp_gym.results import Results
from ldp_gym.runner import sweep

from .common import CacheDir, Experiment, Report, figure, regret_cell, ticks_at

ENV = "LDPNonparametricBandit-v0"
#: the eps grid (1024: the "non-private" large eps of the authors' scripts)
EPSILONS = (1.0, 2.0, 4.0, 8.0, 1024.0)
#: Fig 7: (n grid, runs); full: n up to 1e5, 20 runs
FIG7_QUICK = ((2_000, 5_000), 3)
FIG7_FULL = ((10_000, 20_000, 40_000, 60_000, 80_000, 100_000), 20)
FIG7_QUICK_EPS = (1.0, 8.0, 1024.0)
#: Fig 7 (b): M = 2 auxiliary datasets of n_m users at eps_m (the authors' script)
FIG7_AUX: dict[str, Any] = {"M": 2, "n": 5_000, "epsilon": 8.0, "gamma": 0.0, "kappa": 1.0}
FIG7_AUX_QUICK_N = 1_000
#: Fig 6: target n, eps, runs, the point x0, and the auxiliary settings (name -> spec or None)
FIG6: dict[str, Any] = {"n": 10_000, "epsilon": 1.0, "runs": 20, "x0": (1 / 3, 1 / 3), "chunk": 100}
FIG6_QUICK: dict[str, Any] = {"n": 2_000, "epsilon": 1.0, "runs": 3, "x0": (1 / 3, 1 / 3), "chunk": 100}
FIG6_SETTINGS: dict[str, dict[str, float] | None] = {
    "without": None,
    "effective (n_m=500, eps_m=8)": {"n": 500, "epsilon": 8.0, "gamma": 0.0, "kappa": 1.0},
    "weak (n_m=500, eps_m=1)": {"n": 500, "epsilon": 1.0, "gamma": 0.0, "kappa": 1.0},
}
#: Fig 8-9: target n, eps, runs, M, n_m (authors' scripts: n = 4e4, eps = 2, M = 2)
FIG89: dict[str, Any] = {"n": 40_000, "epsilon": 2.0, "runs": 20, "M": 2, "n_m": 20_000}
FIG89_QUICK: dict[str, Any] = {"n": 3_000, "epsilon": 2.0, "runs": 3, "M": 2, "n_m": 1_500}
EPS_M = (1.0, 2.0, 4.0, 8.0, 1024.0)
EPS_M_QUICK = (2.0, 1024.0)
GAMMAS = (0.0, 0.5, 1.0, 1.5, 2.0)
GAMMAS_QUICK = (0.0, 2.0)
KAPPAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
KAPPAS_QUICK = (0.2, 1.0)
#: eps_m of the low- and high-quality datasets in the gamma, kappa and order panels
LOW_HIGH = (2.0, 8.0)
#: the gamma of the kappa panel (the authors' script)
KAPPA_GAMMA = 0.2
#: Fig 9c: target n, target eps grid, n_m grid, runs
ORDER: dict[str, Any] = {"n": 10_000, "epsilons": (1.0, 2.0, 4.0, 8.0), "n_m": (10_000, 50_000), "runs": 20}
ORDER_QUICK: dict[str, Any] = {"n": 2_000, "epsilons": (1.0, 8.0), "n_m": (2_000,), "runs": 3}
#: real data: datasets, dim, horizon, runs, target eps grid, eps_m grid, aux size, aux gamma
REAL_DATASETS = ("digits", "wine", "breast_cancer", "iris", "phishing", "banana", "segment",
                 "shuttle")  # scikit-learn's, then river's
REAL: dict[str, Any] = {"datasets": REAL_DATASETS, "dim": 2, "n": 20_000,
        "runs": 20, "epsilons": (1.0, 4.0), "eps_m": (2.0, 8.0), "n_m": 10_000, "gamma": 1.0}
REAL_QUICK: dict[str, Any] = {"datasets": REAL_DATASETS, "dim": 2, "n": 2_000,
              "runs": 2, "epsilons": (4.0,), "eps_m": (8.0,), "n_m": 1_000, "gamma": 1.0}
#: ablation: n, runs, eps grid
ABLATION: dict[str, Any] = {"n": 20_000, "runs": 10, "epsilons": EPSILONS}
ABLATION_QUICK: dict[str, Any] = {"n": 3_000, "runs": 3, "epsilons": (1.0, 8.0)}
#: the ablation's variants: label -> departures
VARIANTS: dict[str, tuple[str, ...]] = {
    "faithful (private)": (), "reused_sums (NOT private)": ("reused_sums",),
    "noise_in_bin (NOT private)": ("noise_in_bin",),
    "both departures (NOT private)": ("reused_sums", "noise_in_bin")}


def _aux(m: int, n: int, eps: float, gamma: float = 0.0, kappa: float = 1.0) -> list[dict]:
    return [{"n": n, "epsilon": eps, "gamma": gamma, "kappa": kappa} for _ in range(m)]


def _fmt(x: np.ndarray) -> str:
    return regret_cell(x)


def _cells(runs: int) -> str:
    """What the regret cells are; n counts users, the horizon T of the other settings."""
    return (f"cells: cumulative regret after n users (n: the horizon), mean ± sd over {runs} "
            "runs (sd of the runs, not of the mean)")


def _vs_uniform(label: str, regret: np.ndarray, uniform: np.ndarray) -> str:
    """Mean regret against the uniform policy's on the same instances (paired)."""
    diff = regret - uniform
    se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else np.inf
    verdict = ("below uniform" if diff.mean() + 2 * se < 0 else
               "above uniform" if diff.mean() - 2 * se > 0 else "not distinguishable from uniform")
    return f"{label}: regret {regret.mean():.1f} vs uniform {uniform.mean():.1f} ({verdict}, " \
           f"paired difference {diff.mean():.1f} ± {2 * se:.1f}, 2 standard errors)"


def _title(text: str, quick: bool) -> str:
    return text + (" (quick)" if quick else "")


# =========================================================================== Fig 7


def ma2025_fig7(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Regret at n against n, without and with auxiliary data, at every eps; uniform drawn."""
    from ldp_gym.agents import LDPMAB, LDPMABAux, UniformRandom

    horizons, n_runs = FIG7_QUICK if quick else FIG7_FULL
    epsilons = FIG7_QUICK_EPS if quick else EPSILONS
    spec = FIG7_AUX
    n_m = FIG7_AUX_QUICK_N if quick else int(spec["n"])
    aux = _aux(int(spec["M"]), n_m, float(spec["epsilon"]), float(spec["gamma"]),
               float(spec["kappa"]))
    tasks, keys = [], []
    for n in horizons:
        agents: dict[str, Any] = {"Uniform": UniformRandom}
        for eps in epsilons:
            agents[f"LDPMAB eps={eps:g}"] = (LDPMAB, {"epsilon": eps})
            agents[f"LDPMAB-aux eps={eps:g}"] = (LDPMABAux, {"epsilon": eps})
        tasks.append(dict(env=ENV, agents=agents, horizon=n, n_runs=n_runs, seed=seed,
                          checkpoints=[n], progress=progress, env_kwargs={"auxiliary": aux}))
        keys.append(n)
    out = sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir)
    final = {n: {a: res.regret[a][:, -1] for a in res.agents} for n, res in zip(keys, out)}
    lines = ["| agent | " + " | ".join(f"n={n:g}" for n in horizons) + " |",
             "|---|" + "---|" * len(horizons)]
    labels = ["Uniform"] + [f"{p} eps={e:g}" for e in epsilons for p in ("LDPMAB", "LDPMAB-aux")]
    for a in labels:
        lines.append(f"| {a} | " + " | ".join(_fmt(final[n][a]) for n in horizons) + " |")
    n_top = horizons[-1]
    notes = [_cells(n_runs), f"each n run separately, {n_runs} runs, seed {seed}; auxiliary: M={spec['M']} "
             f"datasets of n_m={n_m}, eps_m={spec['epsilon']:g}, gamma={spec['gamma']:g}, "
             f"kappa={spec['kappa']:g}; eps=1024 stands for non-private",
             "paper's claims: regret sub-linear in n, smaller for larger eps, and smaller with "
             "auxiliary data"]
    notes += [_vs_uniform(f"n={n_top:g} {a}", final[n_top][a], final[n_top]["Uniform"])
              for a in labels[1:]]
    for p in ("LDPMAB", "LDPMAB-aux"):
        means = [final[n_top][f"{p} eps={e:g}"].mean() for e in epsilons]
        order = all(x >= y for x, y in zip(means, means[1:]))
        notes.append(f"{p}: regret at n={n_top:g} {'decreases' if order else 'does NOT decrease'}"
                     f" monotonically in eps ({', '.join(f'{m:.0f}' for m in means)})")
    for e in epsilons:
        w, wo = final[n_top][f"LDPMAB-aux eps={e:g}"], final[n_top][f"LDPMAB eps={e:g}"]
        notes.append(f"eps={e:g}: auxiliary data {'lowers' if w.mean() < wo.mean() else 'does NOT lower'}"
                     f" the regret at n={n_top:g} ({w.mean():.0f} vs {wo.mean():.0f})")
    fig, ax = figure()
    x = np.array(horizons, float)
    ax.plot(x, [final[n]["Uniform"].mean() for n in horizons], "k--", label="uniform")
    for e in epsilons:
        for p, ls in (("LDPMAB", "-"), ("LDPMAB-aux", ":")):
            ax.plot(x, [final[n][f"{p} eps={e:g}"].mean() for n in horizons], ls, marker="o",
                    label=f"{p} eps={e:g}")
    ax.set_xlabel("n")
    ax.set_ylabel("regret at n (mean)")
    ax.set_title("Ma et al. 2025 Fig 7: regret against n")
    ax.legend(fontsize=6)
    return Report(_title("Ma et al. 2025, Fig 7: regret against n", quick), "\n".join(lines),
                  {f"n{n}": res for n, res in zip(keys, out)}, fig.figure, notes)


# =========================================================================== Fig 6


def _fig6_run(setting: dict[str, float] | None, cfg: dict[str, Any], seed: int) -> dict:
    """One setting of Fig 6, played block by block on drawn contexts and rewards, with the
    policy's local regret and best-arm probability at x0 after every chunk."""
    from ldp_gym.agents import LDPMAB, LDPMABAux
    from ldp_gym.envs.nonparametric import behaviour_policy, bump_rewards, sample_auxiliary_contexts

    n, runs, k, d, chunk = int(cfg["n"]), int(cfg["runs"]), 3, 2, int(cfg["chunk"])
    rng = np.random.default_rng(np.random.SeedSequence([seed, 6]))
    kwargs: dict[str, Any] = {}
    if setting is not None:
        sets = []
        for _ in range(runs):
            x = sample_auxiliary_contexts(rng, int(setting["n"]), d, float(setting["gamma"]))
            a = rng.choice(k, size=int(setting["n"]), p=behaviour_policy(k, float(setting["kappa"])))
            y = (rng.random(int(setting["n"])) < bump_rewards(x, k)[np.arange(len(a)), a]) * 1.0
            sets.append([(x, a.astype(np.int64), y)])
        kwargs = {"auxiliary": sets, "aux_epsilons": [float(setting["epsilon"])]}
    cls = LDPMAB if setting is None else LDPMABAux  # without: the plain algorithm (Alg 2)
    agent = cls(k, epsilon=float(cfg["epsilon"]), dim=d, horizon=n, num_envs=runs,
                      seed=np.random.SeedSequence([seed, 66]), **kwargs)
    agent.reset()
    x0 = np.tile(np.array(cfg["x0"], float), (runs, 1))
    f0 = bump_rewards(x0[:1], k)[0]
    gaps0 = f0.max() - f0
    best0 = int(np.argmax(f0))
    contexts = rng.random((runs, n + 1, d))
    means = bump_rewards(contexts[:, :n].reshape(-1, d), k).reshape(runs, n, k)
    rewards = (rng.random((runs, n, k)) < means) * 1.0
    ts, glob, local, ratio = [], [], [], []
    regret = np.zeros(runs)
    rows = np.arange(runs)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        acts = agent.play_block(contexts[:, start:stop + 1], rewards[:, start:stop])
        m = means[:, start:stop]
        regret += (m.max(axis=2) - np.take_along_axis(m, acts[..., None], 2)[..., 0]).sum(axis=1)
        arms = agent.arms[rows, agent.bin_of(x0)]
        probs = arms / arms.sum(axis=1, keepdims=True)
        ts.append(stop)
        glob.append(regret / stop)
        local.append(probs @ gaps0)
        ratio.append(probs[:, best0])
    return {"t": np.array(ts), "global": np.array(glob).T, "local": np.array(local).T,
            "ratio": np.array(ratio).T}


def ma2025_fig6(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """The jump-start: average regret over time, global and at x0, without, with effective
    and with weak auxiliary data."""
    cfg = FIG6_QUICK if quick else FIG6
    out = {name: _fig6_run(s, cfg, seed) for name, s in FIG6_SETTINGS.items()}
    t = next(iter(out.values()))["t"]
    marks = sorted({int(t[i]) for i in np.unique(np.linspace(0, len(t) - 1, 5).round().astype(int))})
    idx = [int(np.searchsorted(t, m)) for m in marks]
    lines = ["| setting | metric | " + " | ".join(f"t={m}" for m in marks) + " |",
             "|---|---|" + "---|" * len(marks)]
    for name, r in out.items():
        for metric, label in (("global", "global avg regret R_t/t"),
                              ("local", "local avg regret at x0"),
                              ("ratio", "P(best arm at x0)")):
            lines.append(f"| {name} | {label} | " +
                         " | ".join(f"{r[metric][:, i].mean():.3f}" for i in idx) + " |")
    k = 3
    from ldp_gym.envs.nonparametric import bump_rewards
    f0 = bump_rewards(np.array([cfg["x0"]]), k)[0]
    xs = np.random.default_rng(0).random((200_000, 2))
    fx = bump_rewards(xs, k)
    uniform_global = float((fx.max(axis=1) - fx.mean(axis=1)).mean())
    x0 = tuple(round(v, 3) for v in cfg["x0"])
    notes = [f"n={cfg['n']}, eps={cfg['epsilon']:g}, {cfg['runs']} runs, x0={x0}; "
             f"a uniform policy has global average regret {uniform_global:.3f}, local average "
             f"regret {float(f0.max() - f0.mean()):.3f} and P(best arm at x0) = 1/3",
             "paper's claim: with auxiliary data the local and global average regret fall "
             "faster (a jump-start), more with better data",
             "the weak setting's eps_m and n_m are our choice (the paper's were lost from our "
             "copy of the text)"]
    for name, r in out.items():
        notes.append(f"{name}: final global avg regret {r['global'][:, -1].mean():.3f} "
                     f"(uniform {uniform_global:.3f}), P(best at x0) {r['ratio'][:, -1].mean():.2f}")
    fig, ax = figure()
    for name, r in out.items():
        ax.plot(r["t"], r["global"].mean(axis=0), label=f"{name}: global")
        ax.plot(r["t"], r["local"].mean(axis=0), ls=":", label=f"{name}: local at x0")
    ax.axhline(uniform_global, color="k", ls="--", lw=0.8, label="uniform (global)")
    ax.set_xlabel("t")
    ax.set_ylabel("average regret")
    ax.set_title("Ma et al. 2025 Fig 6: the jump-start")
    ax.legend(fontsize=6)
    # the global cumulative regret of every run at the chunk ends, one results file per setting
    saved = {name: Results(checkpoints=r["t"], regret={name: r["global"] * r["t"]},
                           meta={"env": "Ma et al. 2025 Fig 6 (bump rewards, d = 2, K = 3)",
                                 "horizon": int(r["t"][-1]), "seed": seed})
             for name, r in out.items()}
    return Report(_title("Ma et al. 2025, Fig 6: jump-start with auxiliary data", quick),
                  "\n".join(lines), saved, fig.figure, notes)


# =========================================================================== Fig 8-9


def ma2025_fig8_9(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Regret at n against eps_m, gamma and kappa, and the order of two auxiliary datasets."""
    from ldp_gym.agents import LDPMAB, LDPMABAux, UniformRandom

    cfg = FIG89_QUICK if quick else FIG89
    ocfg = ORDER_QUICK if quick else ORDER
    n, eps, runs, m, n_m = (int(cfg["n"]), float(cfg["epsilon"]), int(cfg["runs"]),
                            int(cfg["M"]), int(cfg["n_m"]))
    panels = _fig89_panels(quick, m, n_m)
    tasks, keys = [], []
    # the references on the same instances: no auxiliary data, and uniform
    tasks.append(dict(env=ENV, agents={"LDPMAB": (LDPMAB, {"epsilon": eps}),
                                       "Uniform": UniformRandom},
                      horizon=n, n_runs=runs, seed=seed, checkpoints=[n], progress=progress))
    keys.append(("ref", "", ""))
    for panel, row, aux, group in panels:
        tasks.append(dict(env=ENV, agents={"LDPMAB-aux": (LDPMABAux, {"epsilon": eps})},
                          horizon=n, n_runs=runs, seed=seed, checkpoints=[n], progress=progress,
                          env_kwargs={"auxiliary": aux}))
        keys.append((panel, row, group))
    order_tasks, order_keys = _order_tasks(ocfg, seed, progress)
    tasks += order_tasks
    keys += order_keys
    out = sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir)
    ref = out[0]
    base, unif = ref.regret["LDPMAB"][:, -1], ref.regret["Uniform"][:, -1]
    lines = [f"| panel | setting | group | regret at n={n:g} |", "|---|---|---|---|",
             f"| reference | no auxiliary data | - | {_fmt(base)} |",
             f"| reference | uniform policy | - | {_fmt(unif)} |"]
    notes = [_cells(runs), f"target n={n}, eps={eps:g}, {runs} runs; M={m} auxiliary datasets of n_m={n_m} "
             f"each (the panel's eps_m, gamma, kappa); order panel: target n={int(ocfg['n'])}, datasets "
             f"eps_m=8 and eps_m=2 of the given n_m, {ocfg['runs']} runs",
             "paper's claims: regret falls with eps_m, rises with gamma and falls with kappa, "
             "more so for high-quality data; high-quality data first beats low-quality first",
             _vs_uniform("no auxiliary data", base, unif)]
    finals: dict[tuple, np.ndarray] = {}
    order_unif: dict[str, np.ndarray] = {}
    for (panel, row, group), res in zip(keys[1:], out[1:]):
        r = res.regret["LDPMAB-aux"][:, -1]
        finals[(panel, row, group)] = r
        if "Uniform" in res.regret:
            order_unif[row] = res.regret["Uniform"][:, -1]
        lines.append(f"| {panel} | {row} | {group} | {_fmt(r)} |")
    for (panel, row, group), r in finals.items():
        if panel != "order":
            notes.append(_vs_uniform(f"{panel} {row} ({group})", r, unif))
    for row in order_unif:
        hi, lo = finals[("order", row, "high first")], finals[("order", row, "low first")]
        verdict = "high first better" if hi.mean() < lo.mean() else "high first NOT better"
        notes.append(f"order {row}: high-quality first {hi.mean():.1f}, low-quality first "
                     f"{lo.mean():.1f} ({verdict}); "
                     + _vs_uniform("high first", hi, order_unif[row]))
    ax = _fig89_figure(finals, unif, base, n)
    results = {"reference": ref}
    for (panel, row, group), res in zip(keys[1:], out[1:]):
        results[_file_name(panel, row, group)] = res
    return Report(_title("Ma et al. 2025, Fig 8-9: quality and order of auxiliary data", quick),
                  "\n".join(lines), results, ax.figure, notes)


def _fig89_panels(quick: bool, m: int, n_m: int) -> list[tuple[str, str, list[dict], str]]:
    """Fig 8-9's panels, each a tuple of panel, row label, auxiliary specifications and group."""
    panels = []
    for e in (EPS_M_QUICK if quick else EPS_M):
        panels.append(("eps_m", f"eps_m={e:g}", _aux(m, n_m, e), "gamma=0, kappa=1"))
    for e in LOW_HIGH:
        for g in (GAMMAS_QUICK if quick else GAMMAS):
            panels.append(("gamma", f"gamma={g:g}", _aux(m, n_m, e, gamma=g), f"eps_m={e:g}"))
        for kp in (KAPPAS_QUICK if quick else KAPPAS):
            panels.append(("kappa", f"kappa={kp:g}", _aux(m, n_m, e, gamma=KAPPA_GAMMA, kappa=kp),
                           f"eps_m={e:g}, gamma={KAPPA_GAMMA:g}"))
    return panels


def _order_tasks(ocfg: dict, seed: int, progress: bool | None) -> tuple[list[dict], list[tuple]]:
    """The order panel's runs and their keys: two datasets, eps_m = 8 and 2, in both orders."""
    from ldp_gym.agents import LDPMABAux, UniformRandom

    tasks, keys = [], []
    on = int(ocfg["n"])
    for e in ocfg["epsilons"]:
        for size in ocfg["n_m"]:
            for order in ((8.0, 2.0), (2.0, 8.0)):
                aux = [{"n": size, "epsilon": order[0]}, {"n": size, "epsilon": order[1]}]
                agents: dict[str, Any] = {"LDPMAB-aux": (LDPMABAux, {"epsilon": e})}
                if order == (8.0, 2.0):
                    agents["Uniform"] = UniformRandom
                tasks.append(dict(env=ENV, agents=agents, horizon=on, n_runs=int(ocfg["runs"]),
                                  seed=seed, checkpoints=[on], progress=progress,
                                  env_kwargs={"auxiliary": aux}))
                keys.append(("order", f"eps={e:g}, n_m={size}",
                             "high first" if order[0] > order[1] else "low first"))
    return tasks, keys


def _fig89_figure(finals: dict, unif: np.ndarray, base: np.ndarray, n: int) -> Any:
    """Fig 8-9's axes, one panel per parameter (eps_m on a log axis, gamma and kappa on linear
    ones): regret at n against the parameter, with the uniform policy and no auxiliary data."""
    fig, axes = figure(ncols=3)
    for ax, panel in zip(axes, ("eps_m", "gamma", "kappa")):
        for group in sorted({g for p, _, g in finals if p == panel}):
            rows = [(row, r.mean()) for (p, row, g), r in finals.items() if p == panel and g == group]
            ax.plot([float(row.split("=")[1]) for row, _ in rows], [v for _, v in rows], marker="o",
                    label=group)
        ax.axhline(unif.mean(), color="k", ls="--", lw=0.8, label="uniform")
        ax.axhline(base.mean(), color="grey", ls=":", lw=0.8, label="no auxiliary data")
        if panel == "eps_m":
            ax.set_xscale("log")
        ticks_at(ax, {float(row.split("=")[1]) for p, row, _ in finals if p == panel})
        ax.set_xlabel(panel)
        ax.set_ylabel(f"regret at n = {n:g}")
        ax.set_title({"eps_m": "Fig 8: eps_m", "gamma": "Fig 9a: gamma",
                      "kappa": "Fig 9b: kappa"}[panel])
        ax.legend(fontsize=6)
    fig.suptitle("Ma et al. 2025 Fig 8-9: quality of the auxiliary data")
    fig.tight_layout()
    return axes[0]


def _file_name(*parts: str) -> str:
    """A results file's name from a table row's cells: ``order_eps-1_n_m-100_high-first``."""
    return "_".join(p.replace(", ", "_").replace(" ", "-").replace("=", "-") for p in parts if p)


# =========================================================================== real data


def ma2025_real(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """Table 2 on the bundled datasets (scikit-learn's and river's): mean cumulative reward
    relative to ABSE."""
    from ldp_gym.agents import ABSE, LDPMAB, LDPMABAux, LDPMultiSGD, UniformRandom

    cfg = REAL_QUICK if quick else REAL
    n, runs = int(cfg["n"]), int(cfg["runs"])
    tasks, keys = [], []
    for ds in cfg["datasets"]:
        for e in cfg["epsilons"]:
            for em in cfg["eps_m"]:
                agents: dict[str, Any] = {
                    "ABSE": ABSE, "Uniform": UniformRandom,
                    "LDPMAB wo": (LDPMAB, {"epsilon": e}),
                    "LDPMAB w": (LDPMABAux, {"epsilon": e}),
                    "Linear wo": (LDPMultiSGD, {"epsilon": e})}
                aux = [{"n": int(cfg["n_m"]), "epsilon": em, "gamma": float(cfg["gamma"])}]
                tasks.append(dict(env="LDPClassificationBandit-v0", agents=agents, horizon=n,
                                  n_runs=runs, seed=seed, checkpoints=[n], progress=progress,
                                  env_kwargs={"dataset": ds, "dim": int(cfg["dim"]),
                                              "auxiliary": aux}))
                keys.append((ds, e, em))
    out = sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir)
    cols = ("LDPMAB w", "LDPMAB wo", "Linear wo", "Uniform")
    lines = ["| dataset | eps | eps_m | " + " | ".join(cols) + " | ABSE mean reward |",
             "|---|---|---|" + "---|" * (len(cols) + 1)]
    notes = [f"horizon {n}, {runs} runs; contexts: rows drawn with replacement, features "
             f"reduced to d={cfg['dim']} by PCA; auxiliary: M=1 dataset of n_m={cfg['n_m']} "
             f"rows, covariate shift gamma={cfg['gamma']:g}, uniform behaviour policy",
             "ratios: mean cumulative reward (n - regret) over ABSE's (non-private); > 1 beats "
             "ABSE", "not run: NN, and Linear with auxiliary data (not in the library); the "
             "paper's Adult/Jobs/Taxi data and its exact (eps, eps_m) grid are not available here",
             "paper's claims: LDPMAB with auxiliary data best, LDPMAB without beats Linear, "
             "private methods below ABSE"]
    for (ds, e, em), res in zip(keys, out):
        reward = {a: n - res.regret[a][:, -1] for a in res.agents}
        abse = reward["ABSE"].mean()
        lines.append(f"| {ds} | {e:g} | {em:g} | " +
                     " | ".join(f"{reward[c].mean() / abse:.3f}" for c in cols) + f" | {abse / n:.3f} |")
        for c in ("LDPMAB w", "LDPMAB wo", "Linear wo"):
            notes.append(f"{ds} eps={e:g} eps_m={em:g}: " +
                         _vs_uniform(c, res.regret[c][:, -1], res.regret["Uniform"][:, -1]))
    fig, ax = figure()
    width = 0.8 / len(cols)
    for j, c in enumerate(cols):
        ratios = [(n - res.regret[c][:, -1]).mean() / (n - res.regret["ABSE"][:, -1]).mean()
                  for res in out]
        ax.bar(np.arange(len(keys)) + (j - (len(cols) - 1) / 2) * width, ratios, width, label=c)
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label="ABSE (non-private)")
    ax.set_xticks(np.arange(len(keys)),
                  [f"{ds}\neps={e:g}\neps_m={em:g}" for ds, e, em in keys], fontsize=7)
    ax.set_ylabel(f"cumulative reward over ABSE's at n={n} (mean of {runs} runs)")
    ax.set_title("Ma et al. 2025 Table 2 on bundled datasets")
    ax.legend(fontsize=7)
    return Report(_title("Ma et al. 2025, Table 2 on bundled datasets", quick), "\n".join(lines),
                  {f"{ds}_eps{e:g}_epsm{em:g}": res for (ds, e, em), res in zip(keys, out)},
                  fig.figure, notes)


# =========================================================================== ablation


def ma2025_ablation(quick, seed, n_jobs, progress, cache_dir: CacheDir = None) -> Report:
    """The faithful LDPMAB against the public code's departures, at every eps.

    The departures are NOT private."""
    from ldp_gym.agents import LDPMAB, UniformRandom

    cfg = ABLATION_QUICK if quick else ABLATION
    n, runs = int(cfg["n"]), int(cfg["runs"])
    tasks = []
    for e in cfg["epsilons"]:
        agents: dict[str, Any] = {f"{v} eps={e:g}": (LDPMAB, {"epsilon": e, "departures": d})
                                  for v, d in VARIANTS.items()}
        agents["Uniform"] = UniformRandom
        tasks.append(dict(env=ENV, agents=agents, horizon=n, n_runs=runs, seed=seed,
                          checkpoints=[n], progress=progress))
    out = sweep(tasks, n_jobs=n_jobs, cache_dir=cache_dir)
    lines = ["| eps | " + " | ".join(VARIANTS) + " | uniform |",
             "|---|" + "---|" * (len(VARIANTS) + 1)]
    notes = [_cells(runs), f"n={n}, {runs} runs, LDPMAB without auxiliary data; the departures' batch is "
             "100 users (the public code's); the agents with departures are NOT locally "
             "private (their epsilon is nominal): this is a diagnostic, not a method"]
    for e, res in zip(cfg["epsilons"], out):
        unif = res.regret["Uniform"][:, -1]
        lines.append(f"| {e:g} | " + " | ".join(_fmt(res.regret[f"{v} eps={e:g}"][:, -1])
                                                for v in VARIANTS) + f" | {_fmt(unif)} |")
        notes += [_vs_uniform(f"eps={e:g} {v}", res.regret[f"{v} eps={e:g}"][:, -1], unif)
                  for v in VARIANTS]
    fig, ax = figure()
    eps = np.array(cfg["epsilons"], float)
    for v in VARIANTS:
        ax.plot(eps, [res.regret[f"{v} eps={e:g}"][:, -1].mean() for e, res in zip(eps, out)],
                marker="o", label=v)
    ax.plot(eps, [res.regret["Uniform"][:, -1].mean() for res in out], "k--", label="uniform")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel(f"regret at n={n:g}")
    ax.set_title("LDPMAB: faithful against the public code's departures")
    ax.legend(fontsize=6)
    return Report(_title("Ma et al. 2025: ablation of the public code's departures", quick),
                  "\n".join(lines), {f"eps{e:g}": res for e, res in zip(cfg["epsilons"], out)},
                  fig.figure, notes)


EXPERIMENTS = (
    Experiment("ma2025-fig7", "Ma et al. 2025 Fig 7: LDPMAB regret against n, eps 1 to 8 and "
               "1024, with and without auxiliary data, and uniform", ma2025_fig7),
    Experiment("ma2025-fig6", "Ma et al. 2025 Fig 6: jump-start, local and global average "
               "regret without, with effective and with weak auxiliary data", ma2025_fig6),
    Experiment("ma2025-fig8-9", "Ma et al. 2025 Fig 8-9: regret against eps_m, gamma, kappa, "
               "and the order of two auxiliary datasets", ma2025_fig8_9),
    Experiment("ma2025-real", "Ma et al. 2025 Table 2 on scikit-learn's and river's bundled "
               "datasets: LDPMAB w/wo auxiliary data, Linear, uniform, over ABSE", ma2025_real),
    Experiment("ma2025-ablation", "LDPMAB faithful against the public code's departures "
               "(NOT private), at every eps", ma2025_ablation),
)
