"""Statistical privacy audits with a mutant each audit flags.

Each audit certifies a lower bound on epsilon at alpha = 1e-6 (the false-alarm
rate of one audit), with fixed seeds, so the suite is deterministic. A
correct mechanism must audit at or below its claim; its mutant (a few percent
too much privacy loss) must audit above it.
"""

import math

import numpy as np
import pytest

from ldp_gym.agents import CTBTT, DPIMED, DPKLUCB, DPSE, LDPUCB, AdaCUCB, AdaPKLUCB, AdaPTT, AdaPUCB
from ldp_gym.wrappers import mechanisms as M
from ldp_gym.wrappers.mechanisms.audit import audit, audit_gaussian_epsilon

pytestmark = pytest.mark.audit

N_SCALAR = 1_000_000
N_VECTOR = 200_000


def scalar_audit(mech_fn, x0, x1, n=N_SCALAR, **kw):
    return audit(lambda k: mech_fn(np.full(k, x0)), lambda k: mech_fn(np.full(k, x1)), n=n, **kw)


# ----------------------------------------------------------------------------- Laplace


class ScaledLaplace(M.LaplaceMechanism):
    """Mutant: noise scale x0.95 (epsilon claimed stays 1)."""

    def _noise_stream(self, sensitivity):
        return super()._noise_stream(sensitivity * 0.95)


class UnclippedLaplace(M.LaplaceMechanism):
    """Mutant: clipping removed."""

    def __call__(self, x):
        x = M.check_input(x)
        return np.rint(x / self.grid) * self.grid + self.noise(x.size).reshape(x.shape)


@pytest.mark.parametrize("x1", [1.0, 1001.0])
def test_laplace_audit(x1):
    m = M.LaplaceMechanism(1.0, 0.0, 1.0, seed=1)
    res = scalar_audit(m, 0.0, x1)
    assert 0.8 < res.epsilon_lower <= 1.0


def test_laplace_mutants_flagged():
    assert scalar_audit(ScaledLaplace(1.0, 0.0, 1.0, seed=2), 0.0, 1.0).epsilon_lower > 1.0
    assert scalar_audit(UnclippedLaplace(1.0, 0.0, 1.0, seed=3), 0.0, 2.0).epsilon_lower > 1.0


def test_episode_mean_audit_and_mutant():
    m = M.PrivateEpisodeMean(0.5, seed=4)
    fn = lambda s: m.release(s, np.full(s.shape, 4))  # noqa: E731
    assert scalar_audit(fn, 0.0, 1.0).epsilon_lower <= 0.5

    class Mutant(M.PrivateEpisodeMean):
        def scale(self, counts):  # pragma: no cover - not used by release
            return super().scale(counts)

        def _grid_laplace(self, x, sensitivity):
            return super()._grid_laplace(x, np.asarray(sensitivity) * 0.9)
    bad = Mutant(0.5, seed=5)
    assert scalar_audit(lambda s: bad.release(s, np.full(s.shape, 4)), 0.0, 1.0).epsilon_lower > 0.5


# ----------------------------------------------------------------------------- Gaussian


@pytest.mark.parametrize("calibration,eps,delta", [("analytic", 1.0, 1e-5), ("analytic", 4.0, 1e-5),
                                                   ("classic", 0.9, 0.05)])
def test_gaussian_audit(calibration, eps, delta):
    m = M.GaussianMechanism(eps, delta, calibration=calibration, seed=6)
    claim = audit_gaussian_epsilon(m.sensitivity, m.sigma, 0.01)
    res = scalar_audit(m, 0.0, 1000.0, delta=0.01)
    assert res.epsilon_lower <= claim
    # mutant: sigma x0.9
    bad = M.GaussianMechanism(eps, delta, calibration=calibration, seed=7)
    bad.sigma *= 0.9
    assert scalar_audit(bad, 0.0, 1.0, delta=0.01).epsilon_lower > claim


def test_gaussian_vector_linf_clipping_mutant():
    d = 8
    m = M.GaussianMechanism(1.0, 1e-5, l2_bound=1.0, dim=d, seed=8)
    claim = audit_gaussian_epsilon(m.sensitivity, m.sigma, 0.01)
    x0, x1 = np.ones(d), -np.ones(d)  # R(1, ..., 1) and its antipode

    def run(mech):
        return audit(lambda k: mech(np.broadcast_to(x0, (k, d))),
                     lambda k: mech(np.broadcast_to(x1, (k, d))), n=N_VECTOR,
                     statistic=lambda y: y @ (x0 - x1), delta=0.01)
    assert run(m).epsilon_lower <= claim

    class LinfClip(M.GaussianMechanism):
        def clip(self, x):
            return np.clip(x, -self.l2_bound, self.l2_bound)
    assert run(LinfClip(1.0, 1e-5, l2_bound=1.0, dim=d, seed=9)).epsilon_lower > claim


# ----------------------------------------------------------------------------- l2 ball


@pytest.mark.parametrize("pair", ["antipodal", "orthogonal", "zero", "far", "ones"])
def test_l2_ball_audit(pair):
    d, R = 4, 1.0
    e1, e2 = np.eye(d)[0], np.eye(d)[1]
    x0, x1 = {"antipodal": (R * e1, -R * e1), "orthogonal": (R * e1, R * e2),
              "zero": (0 * e1, R * e1), "far": (50 * R * e1, -50 * R * e1),
              "ones": (R * np.ones(d), -R * np.ones(d))}[pair]
    m = M.L2BallMechanism(1.0, R, d, seed=10)
    res = audit(lambda k: m(np.broadcast_to(x0, (k, d))), lambda k: m(np.broadcast_to(x1, (k, d))),
                n=N_VECTOR, statistic=lambda y: y @ (x0 - x1))
    assert res.epsilon_lower <= 1.0


def test_l2_ball_mutant_flagged():
    d = 4
    bad = M.L2BallMechanism(1.0, 1.0, d, seed=11)
    bad.p_keep_side = np.exp(1.15) / (1 + np.exp(1.15))  # hemisphere at 1.15 epsilon
    x0, x1 = np.eye(d)[0], -np.eye(d)[0]
    res = audit(lambda k: bad(np.broadcast_to(x0, (k, d))),
                lambda k: bad(np.broadcast_to(x1, (k, d))), n=N_VECTOR,
                statistic=lambda y: y @ (x0 - x1))
    assert res.epsilon_lower > 1.0


# ----------------------------------------------------------------------------- randomized response


def test_randomized_response_audit_and_mutant():
    rr = M.RandomizedResponse(1.0, 2, seed=12)
    res = audit(lambda k: rr(np.zeros(k, int)), lambda k: rr(np.ones(k, int)), n=N_SCALAR)
    assert 0.9 < res.epsilon_lower <= 1.0
    bad = M.RandomizedResponse(1.0, 2, seed=13)
    bad.p_true *= 1.05
    res = audit(lambda k: bad(np.zeros(k, int)), lambda k: bad(np.ones(k, int)), n=N_SCALAR)
    assert res.epsilon_lower > 1.0


# ----------------------------------------------------------------------------- tree mechanism


class ShortTree(M.TreeMechanism):
    """Mutant: one level too few in the calibration."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.node_sensitivity = (self.levels - 1) * self.sensitivity


def tree_nodes(cls, first, n, seed):
    """Every node the tree releases over a stream of T = 8 (the node closed at each step)."""
    tree = cls(1.0, 8, (n,), seed=seed)
    out = []
    for i in range(1, 9):
        tree.add(np.full(n, first if i == 1 else 0.0))
        out.append(tree.released_nodes()[:, (i & -i).bit_length() - 1].copy())
    return np.stack(out, axis=1)


def tree_audit(cls, first_hi, seed):
    # the output is every released node; the statistic is the Laplace privacy loss
    return audit(lambda k: tree_nodes(cls, 0.0, k, seed), lambda k: tree_nodes(cls, first_hi, k, seed + 1),
                 n=N_VECTOR, statistic="laplace")


@pytest.mark.parametrize("first_hi", [1.0, 1001.0])
def test_tree_audit(first_hi):
    assert tree_audit(M.TreeMechanism, first_hi, 20).epsilon_lower <= 1.0


def test_tree_mutant_flagged():
    assert tree_audit(ShortTree, 1.0, 30).epsilon_lower > 1.0


# ----------------------------------------------------------------------------- agents' releases


def ldp_ucb_report(agent_cls, reward, k, seed):
    """LDP-UCB's message with the public state frozen; the arm is a function of the public
    state alone, so neighbours differ in the reward (in and out of bounds)."""
    agent = agent_cls(5, epsilon=1.0, horizon=1000, num_envs=k, seed=seed)
    state = agent.public_state()
    arms = agent.act(np.zeros((k, 1)))
    obs = np.zeros((k, 1))
    return agent.local_report(obs, arms, np.full(k, reward), obs, state)["reward"]


@pytest.mark.parametrize("hi", [1.0, 1001.0])
def test_ldp_ucb_user_report_audit(hi):
    res = audit(lambda k: ldp_ucb_report(LDPUCB, 0.0, k, 1), lambda k: ldp_ucb_report(LDPUCB, hi, k, 2),
                n=N_SCALAR)
    assert res.epsilon_lower <= 1.0


def test_ldp_ucb_user_report_mutant_flagged():
    class Mutant(LDPUCB):
        def _init_state(self, n):
            super()._init_state(n)
            self.mechanism = ScaledLaplace(1.0, 0.0, 1.0, seed=self.spawn())
    res = audit(lambda k: ldp_ucb_report(Mutant, 0.0, k, 3), lambda k: ldp_ucb_report(Mutant, 1.0, k, 4),
                n=N_SCALAR)
    assert res.epsilon_lower > 1.0


def adap_releases(cls, first_reward, n, seed, read="released", **budget):
    """One arm: episodes end at counts 1, 2, 4, 8, 16; output = the five releases (or, with
    ``read="noisy_sums"``, DP-KLUCB's private sum after each, their post-processing).
    Neighbours differ in the very first reward."""
    agent = cls(1, **(budget or {"epsilon": 1.0}), num_envs=n, seed=seed)
    out, obs = [], np.zeros((n, 1))
    for step in range(1, 17):
        agent.observe(obs, np.zeros(n, int), np.full(n, first_reward if step == 1 else 0.0), obs)
        if step in (1, 2, 4, 8, 16):
            out.append(getattr(agent, read)[:, 0].copy())
    return np.stack(out, axis=1)


def cumulative(base):
    """Mutant of an episodic agent (AdaP-UCB, AdaC-UCB): releases the mean of all the arm's
    rewards so far (not the last episode's)."""

    class Cumulative(base):
        def _init_state(self, n):
            super()._init_state(n)
            self.total = np.zeros(n)

        def _update(self, actions, counts, reward_sums):
            self.total += reward_sums
            ends = self.counts[self._rows, self.arm] + counts >= self.target
            super()._update(actions, counts, reward_sums)
            if ends.any():
                r = np.flatnonzero(ends)
                self.released[r, 0] = self.mechanism.release(self.total[r], self.counts[r, 0])

    return Cumulative


CumulativeAdaP = cumulative(AdaPUCB)


@pytest.mark.parametrize("cls", [AdaPUCB, AdaPKLUCB])
def test_adap_per_episode_release_audit(cls):
    res = audit(lambda k: adap_releases(cls, 0.0, k, 40), lambda k: adap_releases(cls, 1001.0, k, 41),
                n=N_VECTOR, statistic="laplace")
    assert res.epsilon_lower <= 1.0


def test_adap_cumulative_mutant_flagged():
    res = audit(lambda k: adap_releases(CumulativeAdaP, 0.0, k, 42),
                lambda k: adap_releases(CumulativeAdaP, 1.0, k, 43), n=N_VECTOR, statistic="laplace")
    assert res.epsilon_lower > 1.0


def dpse_releases(cls, first_reward, n, seed):
    """Two arms with identical data but arm 0's first reward; output = arm 0's releases of
    epochs 1 and 2 (each epoch fed through committed stretches)."""
    agent = cls(2, epsilon=1.0, horizon=10**6, beta=0.5, num_envs=n, seed=seed)
    out = []
    for epoch in (1, 2):
        for arm in (0, 1):
            counts = agent.commitment()
            sums = np.full(n, first_reward if (epoch, arm) == (1, 0) else 0.0)
            agent.observe_committed(np.full(n, arm), counts, np.clip(sums, 0, counts),
                                    reward_bounds=(0.0, 1.0))
        out.append(agent.released[:, 0].copy())
    return np.stack(out, axis=1)


class NoResetDPSE(DPSE):
    """Mutant: epoch sums are not reset, so a reward enters every later release."""

    def _update(self, actions, counts, reward_sums):
        keep = self.epoch_sums.copy()
        super()._update(actions, counts, reward_sums)
        self.epoch_sums = np.where(self.epoch_counts == 0, keep + 0.0, self.epoch_sums)
        self.epoch_sums[self._rows, actions] = np.where(
            self.epoch_counts[self._rows, actions] == 0,
            keep[self._rows, actions] + reward_sums, self.epoch_sums[self._rows, actions])


def test_dpse_epoch_release_audit_and_mutant():
    ok = audit(lambda k: dpse_releases(DPSE, 0.0, k, 50), lambda k: dpse_releases(DPSE, 1.0, k, 51),
               n=N_VECTOR, statistic="laplace")
    assert ok.epsilon_lower <= 1.0
    bad = audit(lambda k: dpse_releases(NoResetDPSE, 0.0, k, 52),
                lambda k: dpse_releases(NoResetDPSE, 1.0, k, 53), n=N_VECTOR, statistic="laplace")
    assert bad.epsilon_lower > 1.0


# ----------------------------------------------------------------------------- beyond the papers


class RenoisedDPKLUCB(DPKLUCB):
    """Mutant: at each phase's end, S~ is the whole sum so far plus fresh noise (every reward
    is released again at every phase), the pitfall the paper's Line 10 avoids."""

    def _init_state(self, n):
        super()._init_state(n)
        self.total = np.zeros(n)

    def _update(self, actions, counts, reward_sums):
        self.total += reward_sums
        before = self.phase.copy()
        super()._update(actions, counts, reward_sums)
        r = np.flatnonzero((self.phase != before).any(axis=1))
        if len(r):
            c = self.counts[r, 0]
            self.noisy_sums[r, 0] = self.mechanism.release(self.total[r], c) * c


@pytest.mark.parametrize("cls", [DPKLUCB, DPIMED])
def test_dp_klucb_phase_release_audit(cls):
    res = audit(lambda k: adap_releases(cls, 0.0, k, 60, "noisy_sums"),
                lambda k: adap_releases(cls, 1.0, k, 61, "noisy_sums"), n=N_VECTOR,
                statistic="laplace")
    assert res.epsilon_lower <= 1.0


def test_dp_klucb_renoised_cumulative_sum_mutant_flagged():
    res = audit(lambda k: adap_releases(RenoisedDPKLUCB, 0.0, k, 62, "noisy_sums"),
                lambda k: adap_releases(RenoisedDPKLUCB, 1.0, k, 63, "noisy_sums"), n=N_VECTOR,
                statistic="laplace")
    assert res.epsilon_lower > 1.0


def test_adac_ucb_episode_release_audit_and_mutant():
    claim = audit_gaussian_epsilon(1.0, 1.0 / math.sqrt(2 * 0.5), 0.01)  # one reward, rho = 0.5
    ok = audit(lambda k: adap_releases(AdaCUCB, 0.0, k, 70, rho=0.5),
               lambda k: adap_releases(AdaCUCB, 1.0, k, 71, rho=0.5),
               n=N_VECTOR, delta=0.01, statistic="lda")
    assert ok.epsilon_lower <= claim
    bad_cls = cumulative(AdaCUCB)
    bad = audit(lambda k: adap_releases(bad_cls, 0.0, k, 72, rho=0.5),
                lambda k: adap_releases(bad_cls, 1.0, k, 73, rho=0.5),
                n=N_VECTOR, delta=0.01, statistic="lda")
    assert bad.epsilon_lower > claim


# ----------------------------------------------------------------------------- best-arm identification


def adap_tt_releases(cls, first_reward, n, seed):
    """AdaP-TT on two arms, arm 0 pulled 16 times: its phases end at counts 1, 2, 4, 8, 16;
    output = arm 0's five releases. Neighbours differ in the very first reward (arm 1 is never
    released, so the stopping rule never runs)."""
    agent = cls(2, epsilon=1.0, num_envs=n, seed=seed)
    out, obs = [], np.zeros((n, 1))
    for step in range(1, 17):
        agent.observe(obs, np.zeros(n, int), np.full(n, first_reward if step == 1 else 0.0), obs)
        if step in (1, 2, 4, 8, 16):
            out.append(agent.released[:, 0].copy())
    return np.stack(out, axis=1)


class CumulativeAdaPTT(AdaPTT):
    """Mutant: each phase's release is the mean of every reward of the arm so far (older
    phases are not forgotten), with the phase's noise."""

    def _learn(self, rows, arms, rewards):
        total = getattr(self, "total", np.zeros_like(self.phase_sums))
        total[rows, arms] += rewards
        self.total = total
        super()._learn(rows, arms, rewards)
        closed = self.counts == self.done
        self.released = np.where(closed & (self.done > 0),
                                 self.mechanism.release(np.clip(total, 0, np.maximum(self.done, 1)),
                                                        np.maximum(self.done, 1)), self.released)


def test_adap_tt_phase_release_audit_and_mutant():
    ok = audit(lambda k: adap_tt_releases(AdaPTT, 0.0, k, 60),
               lambda k: adap_tt_releases(AdaPTT, 1001.0, k, 61), n=N_VECTOR, statistic="laplace")
    assert ok.epsilon_lower <= 1.0
    bad = audit(lambda k: adap_tt_releases(CumulativeAdaPTT, 0.0, k, 62),
                lambda k: adap_tt_releases(CumulativeAdaPTT, 1.0, k, 63), n=N_VECTOR,
                statistic="laplace")
    assert bad.epsilon_lower > 1.0


def ctb_tt_report(cls, reward, k, seed):
    """CTB-TT's message for a pull of arm 0: its bit, for neighbouring rewards."""
    agent = cls(3, epsilon=1.0, num_envs=k, seed=seed)
    obs = np.zeros((k, 1))
    return agent.local_report(obs, np.zeros(k, int), np.full(k, reward), obs,
                              agent.public_state())["bit"]


class RawBitCTBTT(CTBTT):
    """Mutant: the Bernoulli bit of the reward goes out a little more often than randomised
    response keeps it."""

    def _init_state(self, n):
        super()._init_state(n)
        self.mechanism.p_true *= 1.05


def test_ctb_tt_user_report_audit_and_mutant():
    ok = audit(lambda k: ctb_tt_report(CTBTT, 0.0, k, 70), lambda k: ctb_tt_report(CTBTT, 1.0, k, 71),
               n=N_SCALAR)
    assert 0.9 < ok.epsilon_lower <= 1.0
    outside = audit(lambda k: ctb_tt_report(CTBTT, -5.0, k, 72),
                    lambda k: ctb_tt_report(CTBTT, 7.0, k, 73), n=N_SCALAR)
    assert outside.epsilon_lower <= 1.0  # out-of-bounds rewards are clipped
    bad = audit(lambda k: ctb_tt_report(RawBitCTBTT, 0.0, k, 74),
                lambda k: ctb_tt_report(RawBitCTBTT, 1.0, k, 75), n=N_SCALAR)
    assert bad.epsilon_lower > 1.0
