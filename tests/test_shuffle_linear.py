"""The shuffle model's vector sum (PVec) and SDP-LinUCB: the exact binomial noise, the
calibration against an independent computation of the privacy profile, the authors' b
measured, the channel's and the agent's audits with mutants, and the degenerate budgets.
Fixed seeds; each statistical test's false-alarm rate is 1e-6."""

import math

import numpy as np
import pytest
from scipy import stats

import ldp_gym
from ldp_gym.agents import LinUCB, SDPLinUCB
from ldp_gym.wrappers.mechanisms.audit import audit
from ldp_gym.wrappers.mechanisms.shuffle_vector import (
    ShuffleVectorSum,
    binomial_quarter,
    pvec_epsilon,
    pvec_precision,
    pvec_trials,
)


@pytest.mark.parametrize("trials", [1, 63, 64, 65, 300])
def test_binomial_noise_is_exact(trials):
    draws = binomial_quarter(trials, 100_000, np.random.default_rng(trials))
    k = np.arange(trials + 1)
    expected = stats.binom.pmf(k, trials, 0.25) * draws.size
    observed = np.bincount(draws, minlength=trials + 1)
    keep = expected > 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    obs, exp = (obs, exp) if exp[-1] > 0 else (obs[:-1], exp[:-1])
    assert draws.max() <= trials
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-6


def hockey_stick(p, q, eps):
    return np.maximum(p - math.exp(eps) * q, 0.0).sum()


def test_one_coordinate_profile_is_the_exact_hockey_stick():
    """pvec_epsilon for one coordinate against the hockey-stick divergence of the two
    binomial laws summed exactly (both directions): an upper bound, within 0.01."""
    total, shift, delta = 1200, 8, 1e-3
    k = np.arange(total + shift + 1)
    p = stats.binom.pmf(k, total, 0.25)
    q = stats.binom.pmf(k - shift, total, 0.25)
    eps = pvec_epsilon(total, shift, 1, delta)

    def exact(e):
        return max(hockey_stick(p, q, e), hockey_stick(q, p, e))
    assert exact(eps) <= delta < exact(eps - 0.01)


def test_composed_profile_against_monte_carlo():
    """Over 5 coordinates: delta(eps) = E[(1 - e^(eps - L))+] for the summed privacy loss L of
    outputs drawn from one side, by Monte Carlo (1e6 draws, 6 standard errors)."""
    total, shift, coords, delta = 2000, 8, 5, 0.01
    eps = pvec_epsilon(total, shift, coords, delta)
    rng = np.random.default_rng(0)
    tighter = []
    for lower, upper in ((0, shift), (shift, 0)):
        y = rng.binomial(total, 0.25, size=(10**6, coords)) + upper
        loss = (stats.binom.logpmf(y - upper, total, 0.25)
                - stats.binom.logpmf(y - lower, total, 0.25)).sum(axis=1)
        terms = np.maximum(1 - np.exp(eps - loss), 0.0)
        assert terms.mean() <= delta + 6 * terms.std() / 1000  # an upper bound
        terms = np.maximum(1 - np.exp(eps - 0.02 - loss), 0.0)
        tighter.append(terms.mean() - 6 * terms.std() / 1000)
    assert max(tighter) > delta  # and tight within 0.02


def test_calibration_is_the_smallest_private_b_and_smaller_shifts_cost_less():
    b = pvec_trials(2.0, 0.01, 20, 5, 9)
    assert pvec_epsilon(b * 20, 18, 5, 0.01) <= 2.0 < pvec_epsilon((b - 1) * 20, 18, 5, 0.01)
    profile = [pvec_epsilon(b * 20, s, 5, 0.01) for s in (1, 4, 9, 17, 18)]
    assert profile == sorted(profile)  # the worst shift is the largest, 2g


def test_the_authors_b_is_not_private_at_their_budget():
    """LinBanditPrivate.py's b (scale 1) at d = 5 (20 coordinates), B = 20, delta = 0.1,
    epsilon = 1 is (20.5, 0.1)-DP; the calibrated b is 34 times larger. (Their g = 2 sqrt(20)
    is not an integer: a user's count still moves by up to 18 = 2 ceil(g).)"""
    g = max(2 * math.sqrt(20), 5, 4)
    authors = int(g ** 2 * math.log(5 / 0.1) ** 2 / 20)
    assert pvec_precision(20, 5) == 9 and authors == 61
    assert pvec_epsilon(authors * 20, 18, 20, 0.1) > 20
    assert pvec_trials(1.0, 0.1, 20, 20, 9) > 30 * authors


def test_channel_is_unbiased_clips_and_refuses_bad_input():
    ch = ShuffleVectorSum(20, 3, 2.0, epsilon=2.0, delta=0.01, seed=0)
    v = np.random.default_rng(1).uniform(-2, 2, size=(3000, 20, 3))
    err = ch.analyze(ch.shuffle(ch.randomize(v))) - v.sum(axis=1)
    sd = 2.0 / ch.precision * math.sqrt(ch.trials * 20 * 3 / 16)
    assert np.abs(err.mean(axis=0)).max() < 6 * sd / math.sqrt(3000)
    assert err.std() == pytest.approx(sd, rel=0.1)
    big = ch.analyze(ch.shuffle(ch.randomize(np.full((3000, 20, 3), 50.0))))
    assert abs(big.mean() - 40.0) < 6 * sd / math.sqrt(9000)  # clipped to the bound 2
    with pytest.raises(ValueError, match="v must"):
        ch.randomize(np.zeros((19, 3)))
    with pytest.raises(ValueError, match="v must"):
        ch.randomize(np.full((20, 3), np.nan))
    for kw, name in (({"epsilon": 0.0}, "epsilon"), ({"delta": 0.0}, "delta"),
                     ({"bound": -1.0}, "bound"), ({"batch": 0}, "batch"),
                     ({"epsilon": 1e-4, "delta": 1e-9}, "epsilon")):
        with pytest.raises(ValueError, match=name):
            ShuffleVectorSum(**{"batch": 20, "dim": 3, "bound": 1.0, "epsilon": 1.0,
                                "delta": 0.01, **kw})


def channel_release(trials, first, n, seed):
    """Coordinate 0 of the decoded sum of a batch of 4 users, the first holding ``first``, the
    others 0; ``trials`` replaces the calibrated b (a mutant)."""
    ch = ShuffleVectorSum(4, 2, 1.0, epsilon=4.0, delta=1e-3, seed=seed)
    ch.trials = trials or ch.trials
    v = np.zeros((n, 4, 2))
    v[:, 0, 0] = first
    return ch.analyze(ch.shuffle(ch.randomize(v)))[:, 0]


@pytest.mark.audit
def test_channel_audit_and_authors_b_mutant():
    """One coordinate moved by 2g: its loss at delta 0.01 is pvec_epsilon's for one
    coordinate; the authors' b (14 bits here) is flagged above it."""
    b = ShuffleVectorSum(4, 2, 1.0, epsilon=4.0, delta=1e-3).trials
    claim = pvec_epsilon(4 * b, 8, 1, 0.01)
    ok = audit(lambda k: channel_release(None, -1.0, k, 1),
               lambda k: channel_release(None, 1.0, k, 2), n=200_000, delta=0.01)
    assert ok.epsilon_lower <= claim
    bad = audit(lambda k: channel_release(14, -1.0, k, 3),
                lambda k: channel_release(14, 1.0, k, 4), n=200_000, delta=0.01)
    assert bad.epsilon_lower > claim


def agent_release(cls, first_reward, n, seed):
    """The learner's reward vector sum ``b[:, 0]`` after the first batch (4 users, every arm's
    context (1, 0)), when the first user's reward is ``first_reward`` and the others' 0."""
    agent = cls(3, epsilon=4.0, delta=1e-3, batch_size=4, horizon=100, num_envs=n, seed=seed)
    obs = np.tile([1.0, 0.0], (n, 3))
    for s in range(4):
        a = agent.act(obs)
        agent.observe(obs, a, np.full(n, first_reward if s == 0 else 0.0), obs)
    return agent.b[:, 0].copy()


class AuthorsBSDPLinUCB(SDPLinUCB):
    """Mutant: the authors' b, ``g^2 ln(d/delta)^2/(epsilon^2 B)`` (14 bits here)."""

    def _init_state(self, n):
        super()._init_state(n)
        self.trials = int(self.precision ** 2 * math.log(self.D / self.delta) ** 2
                          / (self.epsilon ** 2 * self.batch_size))


@pytest.mark.audit
def test_agent_release_audit_and_authors_b_mutant():
    agent = SDPLinUCB(3, epsilon=4.0, delta=1e-3, batch_size=4, horizon=100)
    claim = pvec_epsilon(4 * agent.trials, 2 * agent.precision, 1, 0.01)
    ok = audit(lambda k: agent_release(SDPLinUCB, -1.0, k, 1),
               lambda k: agent_release(SDPLinUCB, 1.0, k, 2), n=200_000, delta=0.01)
    assert ok.epsilon_lower <= claim
    assert AuthorsBSDPLinUCB(3, epsilon=4.0, delta=1e-3, batch_size=4, horizon=100).trials == 14
    bad = audit(lambda k: agent_release(AuthorsBSDPLinUCB, -1.0, k, 3),
                lambda k: agent_release(AuthorsBSDPLinUCB, 1.0, k, 4), n=200_000, delta=0.01)
    assert bad.epsilon_lower > claim


def test_regret_falls_with_epsilon_and_a_tiny_budget_is_near_uniform():
    """At delta = 1e-6 and epsilon = 0.1 the noise bits (600 000 per user and coordinate) swamp
    the first 1000 users: regret above half the uniform policy's."""
    agents = {f"eps={e:g}": (SDPLinUCB, {"epsilon": e, "delta": 0.01}) for e in (1.0, 16.0)}
    agents["tiny"] = (SDPLinUCB, {"epsilon": 0.1, "delta": 1e-6})
    res = ldp_gym.run("LDPLinearBandit-v0", {**agents, "LinUCB": (LinUCB, {}),
                                             "U": (ldp_gym.agents.UniformRandom, {})},
                      horizon=1000, n_runs=4, seed=3)
    final = {k: v[:, -1].mean() for k, v in res.regret.items()}
    assert final["U"] > final["tiny"] > final["eps=1"] > final["eps=16"] > final["LinUCB"]
    assert final["tiny"] > 0.5 * final["U"]


def test_agent_refuses_bad_parameters():
    for kw, name in (({"batch_size": 0}, "batch_size"), ({"precision": 0}, "precision"),
                     ({"delta": 0.0}, "delta"), ({"context_bound": 1e120}, "context_bound"),
                     ({"theta_bound": -1.0}, "theta_bound")):
        with pytest.raises(ValueError, match=name):
            SDPLinUCB(3, epsilon=1.0, horizon=100, **kw)


def test_outside_audit_findings_are_fixed():
    """From the independent audit of 2026-11-27: pvec_epsilon returned 0 for non-integer
    trials and NaN delta; a bound near 1e308 overflowed the encoding and exposed a user;
    the helpers gave obscure errors."""
    from ldp_gym.wrappers.mechanisms.shuffle_vector import pvec_encode

    for args, name in (((1000.7, 18, 1, 0.01), "total_trials"), ((1000, 0, 5, 0.01), "shift"),
                       ((1000, 18, 0, 0.01), "coords"), ((1000, 18, 1, float("nan")), "delta")):
        with pytest.raises((TypeError, ValueError), match=name):
            pvec_epsilon(*args)
    with pytest.raises(ValueError, match="bound"):
        ShuffleVectorSum(4, 1, 1e308, epsilon=1.0, delta=0.01)
    for call, name in ((lambda: binomial_quarter(0, 3, np.random.default_rng(0)), "trials"),
                       (lambda: binomial_quarter(5, -1, np.random.default_rng(0)), "count"),
                       (lambda: pvec_encode(np.zeros(3), 0.0, 4, np.zeros(3)), "bound"),
                       (lambda: pvec_encode(np.array([np.nan]), 1.0, 4, np.zeros(1)), "finite")):
        with pytest.raises(ValueError, match=name):
            call()
    with pytest.raises(ValueError, match="counts"):
        ShuffleVectorSum(4, 2, 1.0, epsilon=4.0, delta=1e-3).analyze(np.zeros(7))
