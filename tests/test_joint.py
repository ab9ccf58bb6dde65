"""Joint DP for linear contextual bandits: the Gaussian tree of Gram matrices (its calibration,
its sums, its audit with a mutant) and JDP-LinUCB. Fixed seeds; each statistical test's
false-alarm rate is 1e-6."""

import math

import numpy as np
import pytest
from scipy import stats

import ldp_gym
from ldp_gym.agents import JDPLinUCB, LinUCB
from ldp_gym.wrappers.mechanisms import GramTreeMechanism
from ldp_gym.wrappers.mechanisms.audit import audit
from ldp_gym.wrappers.mechanisms.calibration import gaussian_delta


def test_sigma_is_the_exact_calibration_of_the_whole_tree():
    tree = GramTreeMechanism(1.0, 1e-5, horizon=100, size=3, bound=2.0, streams=1)
    assert tree.levels == 7 and tree.sensitivity == pytest.approx(math.sqrt(2) * 4)
    total = math.sqrt(7) * (tree.sensitivity + math.sqrt(6) * tree.grid)
    assert tree.snapped_sensitivity == pytest.approx(total)
    assert gaussian_delta(1.0, total, tree.sigma) <= 1e-5 * (1 + 1e-9)
    assert gaussian_delta(1.0, total, 0.999 * tree.sigma) > 1e-5


def test_prefix_sums_are_the_gram_matrix_plus_the_nodes_noise():
    """The release at count i is the exact Gram matrix (snapped) plus one Gaussian per binary
    digit of i, entry by entry: unbiased, with variance (number of digits) sigma^2; past the
    horizon a fresh tree continues on the full one's total."""
    n, horizon = 20_000, 6
    tree = GramTreeMechanism(2.0, 1e-3, horizon=horizon, size=2, bound=1.0, streams=n, seed=0)
    rng = np.random.default_rng(1)
    exact = np.zeros((n, 2, 2))
    for i in range(1, 2 * horizon + 2):
        z = rng.normal(size=(n, 2)) * 0.4
        z /= np.maximum(1.0, np.linalg.norm(z, axis=1, keepdims=True))
        exact += z[:, :, None] * z[:, None, :]
        gram = tree.add(z)
        assert (gram == gram.transpose(0, 2, 1)).all()
        err = (gram - exact)[:, 0, 1]
        j = (i - 1) % horizon + 1
        digits = bin(j).count("1") + bin(horizon).count("1") * ((i - 1) // horizon)
        assert abs(err.mean()) < 5.3 * tree.sigma * math.sqrt(digits / n)
        chi = (n - 1) * err.var(ddof=1) / (digits * tree.sigma ** 2)
        assert stats.chi2.sf(chi, n - 1) > 5e-7 and stats.chi2.cdf(chi, n - 1) > 5e-7


def test_bad_input_is_refused_and_vectors_are_clipped():
    tree = GramTreeMechanism(1.0, 1e-5, horizon=8, size=2, bound=1.0, streams=2, seed=0)
    with pytest.raises(ValueError, match="z must have shape"):
        tree.add(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="z"):
        tree.add(np.full((2, 2), np.nan))
    for kw, name in (({"epsilon": 0.0}, "epsilon"), ({"delta": 1.0}, "delta"),
                     ({"horizon": 0}, "horizon"), ({"bound": -1.0}, "bound"),
                     ({"size": 1.5}, "size"), ({"streams": 0}, "streams")):
        with pytest.raises((ValueError, TypeError), match=name):
            GramTreeMechanism(**{"epsilon": 1.0, "delta": 1e-5, "horizon": 8, "size": 2,
                                 "bound": 1.0, **kw})
    tree.add(np.array([[30.0, 40.0], [0.0, 0.5]]))  # the first clipped to norm 1: (0.6, 0.8)
    assert tree._alpha[:, 0] == pytest.approx(np.array([[0.36, 0.48, 0.64], [0.0, 0.0, 0.25]]))


def node_sums(sigma_factor, first, n, seed):
    """Sum over the 4 levels of a tree of horizon 8 (epsilon = 1, delta = 0.05: an audit at a
    large delta has the power to certify the mutant) of the released node entry (0, 0), when
    the first element is ``first * e_0`` (norm 1) and the 7 others are 0: every node holds
    the first element. ``sigma_factor`` scales the calibrated sigma (a mutant below 1)."""
    def sample(k):
        tree = GramTreeMechanism(1.0, 0.05, horizon=8, size=2, bound=1.0, streams=k, seed=seed)
        tree.sigma *= sigma_factor
        z = np.zeros((k, 2))
        z[:, 0] = first
        total = np.zeros(k)
        for i in range(1, 9):
            tree.add(z if i == 1 else np.zeros((k, 2)))
            if i in (1, 2, 4, 8):  # the node of level log2(i) closes: it holds element 1
                total += tree.released_nodes()[:, i.bit_length() - 1, 0]
        return total
    return sample


@pytest.mark.audit
def test_tree_audit_and_single_node_calibration_mutant():
    """The mutant calibrates each node for the whole budget (sigma / sqrt(levels)): it forgets
    that one element is in every level's node."""
    ok = audit(node_sums(1.0, 0.0, 200_000, 1), node_sums(1.0, 1.0, 200_000, 2), n=200_000,
               delta=0.05)
    assert ok.epsilon_lower <= 1.0
    bad = audit(node_sums(0.5, 0.0, 200_000, 3), node_sums(0.5, 1.0, 200_000, 4), n=200_000,
                delta=0.05)
    assert bad.epsilon_lower > 1.0


def test_agent_releases_its_tree_of_user_vectors():
    """The billboard holds z = (x, y) clipped: context to context_bound, reward to reward_bound,
    and the tree's bound is their joint norm."""
    agent = JDPLinUCB(3, dim=2, epsilon=1.0, delta=1e-5, horizon=50, context_bound=0.5,
                      reward_bound=0.4, num_envs=2, seed=0)
    assert agent.tree.bound == pytest.approx(math.sqrt(0.25 + 0.16)) and agent.tree.size == 3
    obs = np.tile(np.array([3.0, 4.0, 0.0, 0.0, 0.0, 1.0]), (2, 1))
    agent.observe(obs, np.array([0, 0]), np.array([9.0, -9.0]), obs)
    node = agent.tree._alpha[:, 0]  # the exact sum of the first node: z z^T, upper triangle
    z = np.array([[0.3, 0.4, 0.4], [0.3, 0.4, -0.4]])
    assert node == pytest.approx(np.stack([np.outer(v, v)[np.triu_indices(3)] for v in z]))
    assert agent.privacy.model == "joint" and agent.privacy.unit == "user"


def test_regret_falls_with_epsilon_and_tiny_epsilon_is_linear():
    """The degenerate budgets: at epsilon = 1e-3 the billboard is noise and the regret is that
    of a uniform choice; the regret falls as epsilon grows (epsilon = 60, delta = 0.5 is the
    largest the Gaussian sampler's tail allows; the conservative regulariser bounds keep it
    above LinUCB's)."""
    kw = dict(horizon=3000, n_runs=6, seed=2, progress=False)
    agents = {f"eps={e:g}": (JDPLinUCB, {"epsilon": e, "delta": d})
              for e, d in ((1e-3, 1e-5), (1.0, 1e-5), (60.0, 0.5))}
    res = ldp_gym.run("LDPLinearBandit-v0", {**agents, "LinUCB": LinUCB}, **kw)
    final = {a: res.regret[a][:, -1].mean() for a in res.agents}
    uniform = ldp_gym.run("LDPLinearBandit-v0", {"U": ldp_gym.agents.UniformRandom}, **kw)
    assert final["eps=0.001"] > 0.7 * uniform.regret["U"][:, -1].mean()
    assert final["eps=0.001"] > final["eps=1"] > final["eps=60"] > final["LinUCB"]


def test_outside_audit_findings_are_fixed():
    """From the independent audit of 2026-11-27: a vector whose squared norm overflows was
    clipped to 0, not to the bound; the returned arrays were the tree's own; bounds whose
    squares overflow failed with unnamed errors; sigma could sit 1e-12 on the wrong side of
    delta."""
    tree = GramTreeMechanism(60.0, 0.1, horizon=8, size=2, bound=1.0, streams=1, seed=0)
    first = tree.add(np.array([[1e200, 0.0]]))
    assert tree._alpha[0, 0] == pytest.approx([1.0, 0.0, 0.0])  # clipped to (1, 0)
    first[:] = 7.0
    tree.released_nodes()[:] = 7.0
    assert (tree.add(np.zeros((1, 2))) != 7.0).any() and (tree.released_nodes() != 7.0).any()
    for bound in (1e-200, 1e160):
        with pytest.raises(ValueError, match="bound"):
            GramTreeMechanism(1.0, 1e-5, horizon=8, size=2, bound=bound)
    with pytest.raises(ValueError, match="context_bound"):
        JDPLinUCB(3, epsilon=1.0, horizon=10, context_bound=1e155)
    small = GramTreeMechanism(0.1, 1e-8, horizon=200, size=1, bound=0.5)
    assert gaussian_delta(0.1, small.snapped_sensitivity, small.sigma) < 1e-8
