"""DP-KLUCB and DP-IMED (Azize, Wu, Honda, Orabona, Ito and Basu 2025) and their divergence.

The closed form of ``d_epsilon`` against a brute-force search, its limits, the lower bound,
the phase grid, the degenerate budgets (epsilon -> infinity gives the non-private batched
rule action for action; epsilon -> 0 gives linear regret) and the privacy audit with a
mutant (in tests/test_audit.py). Every test has a fixed seed.
"""

import numpy as np
import pytest
from scipy import optimize

from ldp_gym.agents import DPIMED, DPKLUCB
from ldp_gym.agents.mab import dp_klucb_index, phase_grid
from ldp_gym.envs.mab import (
    bernoulli_kl,
    d_epsilon,
    optimal_lower_bound,
    problem_dependent_lower_bound,
)

INSTANCES = {  # the paper's four Bernoulli instances (BEYOND: also in Azize's DP_BAI code)
    "mu1": [0.75, 0.70, 0.70, 0.70, 0.70],
    "mu2": [0.75, 0.625, 0.5, 0.375, 0.25],
    "mu3": [0.75, 0.53125, 0.375, 0.28125, 0.25],
    "mu4": [0.75, 0.71875, 0.625, 0.46875, 0.25],
}


# ----------------------------------------------------------------------------- d_epsilon


def test_d_epsilon_matches_a_brute_force_search():
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(300):
        x, y = rng.random(2)
        eps = 10 ** rng.uniform(-3, 1)
        z = np.linspace(min(x, y), max(x, y), 100_001)
        brute = np.min(eps * np.abs(z - x) + bernoulli_kl(z, y))
        worst = max(worst, abs(d_epsilon(x, y, eps) - brute) / max(brute, 1e-300))
    assert worst < 1e-6  # the grid's resolution (2.7e-8 measured)


def test_d_epsilon_limits():
    rng = np.random.default_rng(1)
    x, y = rng.random(1000), rng.random(1000)
    eps = 10 ** rng.uniform(-3, 1, 1000)
    d = d_epsilon(x, y, eps)
    assert np.all(d <= np.minimum(bernoulli_kl(x, y), eps * np.abs(x - y)) * (1 + 1e-12) + 1e-15)
    assert np.allclose(d_epsilon(x, y, 1e12), bernoulli_kl(x, y), rtol=1e-9, atol=1e-15)
    assert np.allclose(d_epsilon(x, y, np.inf), bernoulli_kl(x, y), rtol=1e-12, atol=0)
    small = 1e-7
    assert np.allclose(d_epsilon(x, y, small) / small, np.abs(x - y), rtol=1e-4, atol=1e-9)
    assert np.allclose(d_epsilon(x, 1.0, eps), eps * (1 - x))
    assert d_epsilon(0.4, 0.4, 0.3) == 0.0


def test_d_epsilon_is_kl_exactly_in_the_kl_regime():
    """kl iff epsilon >= |logit(y) - logit(x)|: at mu = [0.9, 0.85, 0.7], eps = 0.5, the 0.85
    arm is in the kl regime and the 0.7 arm is not."""
    assert d_epsilon(0.85, 0.9, 0.5) == pytest.approx(bernoulli_kl(0.85, 0.9), rel=1e-12)
    assert d_epsilon(0.7, 0.9, 0.5) < 0.99 * bernoulli_kl(0.7, 0.9)


@pytest.mark.parametrize("bad", [dict(x=1.5), dict(y=-0.1), dict(epsilon=0.0)])
def test_d_epsilon_refuses_bad_input(bad):
    args = dict(x=0.5, y=0.6, epsilon=1.0) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        d_epsilon(**args)


def test_lower_bound_improves_azize_basu_2022_at_every_epsilon():
    """Never below the old bound; strictly above once an arm is in its privacy regime
    (6 epsilon Delta < kl), where d_eps < 6 epsilon Delta; equal where both are kl."""
    for mu in INSTANCES.values():
        for eps in (0.01, 0.1, 0.5, 1.0, 10.0):
            new = optimal_lower_bound(mu, 1e6, eps)
            old = problem_dependent_lower_bound(mu, 1e6, eps)
            assert new >= old * (1 - 1e-12)
            if eps <= 0.1:  # d_eps <= eps Delta is below both kl and 6 eps Delta here
                assert new > 1.5 * old
    # as epsilon -> 0 it tends to (K - 1)/epsilon times log T: 401-408 at eps = 0.01
    coef = [optimal_lower_bound(mu, np.e, 0.01) for mu in INSTANCES.values()]
    assert all(400 < c < 409 for c in coef), coef


# ----------------------------------------------------------------------------- the rule


def test_phase_grid():
    assert phase_grid(2.0, up_to=100).tolist() == [1, 2, 4, 8, 16, 32, 64, 128]
    pow_grid = phase_grid(1.1, "pow", up_to=60)
    assert pow_grid[38] == 39 and pow_grid[39] > 40  # its first 39 phases have length 1
    assert phase_grid(1.1, "mult", up_to=20).tolist() == list(range(1, 12)) + [13, 15, 17, 19, 21]
    with pytest.raises(ValueError, match="alpha"):
        phase_grid(1.0)
    with pytest.raises(ValueError, match="grid"):
        phase_grid(2.0, "linear")
    with pytest.raises(ValueError, match="alpha"):
        DPKLUCB(3, epsilon=1.0, alpha=0.5)


def test_dp_klucb_index_is_the_largest_mean_in_the_set():
    rng = np.random.default_rng(2)
    x, level = rng.random(200), 10 ** rng.uniform(-3, 0.5, 200)
    for eps in (0.1, 1.0, 5.0):
        u = dp_klucb_index(x, level, eps)
        for xi, li, ui in zip(x, level, u):
            if eps * (1 - xi) <= li:
                assert ui == 1.0
            else:
                root = optimize.brentq(lambda m, x=xi, e=eps, v=li: d_epsilon(x, m, e) - v, xi, 1.0,
                                       xtol=1e-15)
                assert ui == pytest.approx(root, abs=1e-12)


def play(agent, table, horizon):
    """Feed committed phases from a shared reward table: the k-th pull of arm a gets
    ``table[a, k]``. Returns the (arm, length) of every phase."""
    phases, pulls = [], np.zeros(table.shape[0], int)
    obs = np.zeros((1, 1))
    while pulls.sum() < horizon:
        a = int(agent.act(obs)[0])
        c = int(min(agent.commitment()[0], horizon - pulls.sum()))
        s = table[a, pulls[a]:pulls[a] + c].sum()
        agent.observe_committed(np.array([a]), np.array([c]), np.array([s]), reward_bounds=(0.0, 1.0))
        pulls[a] += c
        phases.append((a, c))
    return phases


def reference(rule, table, horizon, first_order):
    """Non-private batched KL-UCB or IMED on the doubling grid, written from the paper's
    description: each arm once (in ``first_order``), then whole phases to the arm of the best
    index, the index computed from all of the arm's rewards with t = rounds played + 1."""
    k = table.shape[0]
    n, s = np.zeros(k, int), np.zeros(k)
    phases = []
    for a in first_order:
        n[a], s[a] = 1, table[a, 0]
        phases.append((a, 1))
    while n.sum() < horizon:
        mu, log_t = s / n, np.log(n.sum() + 1.0)
        if rule == "klucb":
            idx = [optimize.brentq(lambda q, m=m, v=log_t / c: bernoulli_kl(m, q) - v, m, 1 - 1e-15)
                   if bernoulli_kl(m, 1 - 1e-15) > log_t / c else 1.0 for m, c in zip(mu, n)]
            a = int(np.argmax(idx))
        else:
            a = int(np.argmin(n * bernoulli_kl(mu, mu.max()) + np.log(n)))
        length = min(n[a], horizon - n.sum())  # doubling: the phase ends at 2 n
        s[a] += table[a, n[a]:n[a] + length].sum()
        n[a] += length
        phases.append((a, int(length)))
    return phases


@pytest.mark.parametrize("cls,rule", [(DPKLUCB, "klucb"), (DPIMED, "imed")])
def test_huge_epsilon_gives_the_non_private_batched_rule(cls, rule):
    rng = np.random.default_rng(3)
    horizon, means = 3000, np.array([0.6, 0.5, 0.45, 0.3])
    table = np.clip(means[:, None] + rng.uniform(-0.3, 0.3, (4, horizon)), 0, 1)  # no ties
    agent = cls(4, epsilon=1e9, num_envs=1, seed=4)
    got = play(agent, table, horizon)
    want = reference(rule, table, horizon, [a for a, _ in got[:4]])
    assert got == want


@pytest.mark.parametrize("cls", [DPKLUCB, DPIMED])
def test_tiny_epsilon_gives_linear_regret(cls):
    import ldp_gym

    res = ldp_gym.run("LDPMAB-v0", {cls.name: (cls, {"epsilon": 1e-4})}, horizon=20_000, n_runs=8,
                      seed=5, env_kwargs={"means": INSTANCES["mu2"]})
    gaps = 0.75 - np.array(INSTANCES["mu2"])
    # a learner would keep regret logarithmic; here it is a sizeable share of uniform play's
    assert res.regret[cls.name][:, -1].mean() > 0.3 * gaps.mean() * 20_000


def test_committed_counts_beyond_the_phase_are_refused():
    agent = DPKLUCB(2, epsilon=1.0, num_envs=1, seed=0)
    a = agent.act(np.zeros((1, 1)))
    with pytest.raises(ValueError, match="commitment"):
        agent.observe_committed(a, np.array([5]), np.array([2.0]), reward_bounds=(0.0, 1.0))
