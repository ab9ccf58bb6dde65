"""zCDP as a privacy model: the guarantee type, its conversion to (epsilon, delta) and the
Gaussian episode mean's audit with a mutant (alpha = 1e-6 per audit, fixed seeds)."""

import math

import dp_accounting
import numpy as np
import pytest

from ldp_gym.wrappers.mechanisms import GaussianEpisodeMean, Privacy
from ldp_gym.wrappers.mechanisms.audit import audit, audit_gaussian_epsilon
from ldp_gym.wrappers.mechanisms.privacy import rho_from_epsilon, zcdp_epsilon


@pytest.mark.parametrize("rho", [1e-3, 0.05, 0.5, 2.0])
@pytest.mark.parametrize("delta", [1e-8, 1e-5, 0.01])
def test_conversion_is_dp_accountings_and_beats_the_textbook_bound(rho, delta):
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(dp_accounting.ZCDpEvent(rho))
    assert zcdp_epsilon(rho, delta) == accountant.get_epsilon(delta)
    assert Privacy("global", rho=rho).to_epsilon_delta(delta) == (accountant.get_epsilon(delta), delta)
    assert zcdp_epsilon(rho, delta) <= rho + 2 * math.sqrt(rho * math.log(1 / delta))  # Prop. 1.3


def test_pure_dp_implies_half_epsilon_squared():
    assert rho_from_epsilon(2.0) == 2.0
    with pytest.raises(ValueError, match="epsilon"):
        rho_from_epsilon(0.0)


def test_privacy_type_states_rho_and_never_an_epsilon():
    p = Privacy("global", rho=0.25)
    assert str(p) == "global zCDP, rho=0.25 per reward"
    assert p.epsilon is None and p.to_dict()["rho"] == 0.25
    assert Privacy("global", 1.0).to_epsilon_delta(1e-5) == (1.0, 0.0)
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        Privacy("global", 1.0, rho=0.5)
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        Privacy("global")
    with pytest.raises(ValueError, match="rho"):
        Privacy("global", rho=-1.0)
    with pytest.raises(ValueError, match="no delta"):
        Privacy("global", rho=0.5, delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        Privacy("global", 1.0, 1e-3).to_epsilon_delta(1e-6)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf])
def test_mechanism_refuses_a_bad_rho(bad):
    with pytest.raises(ValueError, match="rho"):
        GaussianEpisodeMean(bad)


def test_release_is_float_safe_and_calibrated():
    m = GaussianEpisodeMean(0.5, seed=0)
    grid, sigma = m.calibration(4)
    assert sigma == pytest.approx((0.25 + grid) / 1.0) and grid < 1e-10
    y = m.release(np.full(200_000, 2.0), 4)
    assert np.all(y / grid == np.rint(y / grid))  # every output on the grid
    assert y.std() == pytest.approx(sigma, rel=0.01) and y.mean() == pytest.approx(0.5, abs=0.003)
    with pytest.raises(ValueError, match="sums"):
        m.release(5.0, 4)  # a reward above the bound entered the sum


def _claim(rho, counts, delta_audit=0.01):
    """The epsilon at delta_audit of a Gaussian mechanism with exactly rho-zCDP: its sd is
    s/sqrt(2 rho) for the mean's sensitivity s = 1/counts."""
    s = 1.0 / counts
    return audit_gaussian_epsilon(s, s / math.sqrt(2 * rho), delta_audit)


@pytest.mark.audit
@pytest.mark.parametrize("rho", [0.1, 1.0])
def test_gaussian_episode_mean_audit_and_mutant(rho):
    counts = 4
    m = GaussianEpisodeMean(rho, seed=1)
    res = audit(lambda k: m.release(np.zeros(k), counts), lambda k: m.release(np.full(k, 1.0), counts),
                n=1_000_000, delta=0.01)
    assert res.epsilon_lower <= _claim(rho, counts)

    class Mutant(GaussianEpisodeMean):
        """sigma x0.9: 1.23 rho claimed as rho."""

        def calibration(self, counts):
            grid, sigma = super().calibration(counts)
            return grid, 0.9 * sigma

    bad = Mutant(rho, seed=2)
    res = audit(lambda k: bad.release(np.zeros(k), counts),
                lambda k: bad.release(np.full(k, 1.0), counts), n=1_000_000, delta=0.01)
    assert res.epsilon_lower > _claim(rho, counts)


# ----------------------------------------------------------------------------- AdaC-UCB


def test_adac_ucb_takes_rho_or_the_rho_of_epsilon():
    from ldp_gym.agents import AdaCUCB

    assert AdaCUCB(3, rho=0.2).rho == 0.2 and AdaCUCB(3, epsilon=2.0).rho == 2.0
    for kwargs in ({}, {"rho": 0.5, "epsilon": 1.0}):
        with pytest.raises(ValueError, match="exactly one of rho"):
            AdaCUCB(3, **kwargs)
    with pytest.raises(ValueError, match="rho"):
        AdaCUCB(3, rho=-0.1)


def test_adac_ucb_huge_rho_plays_as_the_non_private_episodes():
    """rho -> inf: the noise and the privacy term vanish, so the episodes and index are
    AdaP-UCB's at a huge epsilon (both then the non-private doubling UCB), action for action."""
    from ldp_gym.agents import AdaCUCB, AdaPUCB

    rng = np.random.default_rng(0)
    horizon, means = 4000, np.array([0.6, 0.5, 0.45, 0.3])
    table = np.clip(means[:, None] + rng.uniform(-0.3, 0.3, (4, horizon)), 0, 1)
    plays = []
    for agent in (AdaCUCB(4, rho=1e18, num_envs=1, seed=3), AdaPUCB(4, epsilon=1e9, num_envs=1, seed=3)):
        pulls, seq, obs = np.zeros(4, int), [], np.zeros((1, 1))
        for _ in range(horizon):
            a = int(agent.act(obs)[0])
            agent.observe(obs, np.array([a]), np.array([table[a, pulls[a]]]), obs)
            pulls[a] += 1
            seq.append(a)
        plays.append(seq)
    assert plays[0] == plays[1]


def test_adac_ucb_tiny_rho_gives_linear_regret():
    import ldp_gym
    from ldp_gym.agents import AdaCUCB

    res = ldp_gym.run("LDPMAB-v0", {"AdaC": (AdaCUCB, {"rho": 1e-9})}, horizon=20_000, n_runs=8,
                      seed=1, env_kwargs={"means": [0.75, 0.5, 0.25]})
    assert res.regret["AdaC"][:, -1].mean() > 0.3 * 0.375 * 20_000


def test_outside_audit_findings_on_budgets_are_refused():
    from ldp_gym.agents import DPKLUCB, AdaCUCB
    from ldp_gym.envs.mab import d_epsilon, optimal_lower_bound

    for call, name in ((lambda: Privacy("global", rho=True), "rho"),
                       (lambda: zcdp_epsilon(True, 1e-5), "rho"),
                       (lambda: rho_from_epsilon(True), "epsilon"),
                       (lambda: rho_from_epsilon(1e200), "epsilon"),
                       (lambda: rho_from_epsilon(1e-300), "epsilon"),
                       (lambda: AdaCUCB(2, epsilon=1e200), "epsilon"),
                       (lambda: DPKLUCB(2, epsilon=1.0, alpha=1.0000001), "alpha"),
                       (lambda: optimal_lower_bound([0.5, 0.4], 0.5, 1.0), "horizon"),
                       (lambda: optimal_lower_bound([], 10, 1.0), "means")):
        with pytest.raises((ValueError, TypeError), match=name):
            call()
    assert d_epsilon(0.5, 0.0, 100.0) == 50.0 and d_epsilon(1.0, 0.0, math.inf) == math.inf
    agent = DPKLUCB(2, epsilon=1.0, num_envs=1, seed=0)
    with pytest.raises(ValueError, match="reward_bounds"):
        agent.observe_committed(agent.act(np.zeros((1, 1))), np.array([1]), np.array([1.0]),
                                reward_bounds=(False, True))
