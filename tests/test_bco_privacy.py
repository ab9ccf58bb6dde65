"""The releases of bandit convex optimisation (Zheng et al. 2020, Alg 1 and Alg 2): what leaves
the user, calibration, and the audits of the two-point release with their mutants.

Audits certify a lower bound on epsilon at alpha = 1e-6 (one audit's false-alarm rate), with
fixed seeds (deterministic)."""

import math

import gymnasium as gym
import numpy as np
import pytest

import ldp_gym
from ldp_gym.wrappers import TwoPointGaussian, VectorTwoPointGaussian, one_point
from ldp_gym.wrappers.mechanisms.audit import audit, audit_gaussian_epsilon, off_lattice

D = 5


def two_point(eps=1.0, delta=1e-5, **kw):
    return TwoPointGaussian(gym.make("LDPMultiPointBCO-v0", dim=D), epsilon=eps, delta=delta,
                            seed=3, **kw)


def pair(gap):
    """An action whose two points lie ``gap`` apart inside the unit ball."""
    x = np.zeros(2 * D)
    x[0], x[D] = gap / 2, -gap / 2
    return x


def sampler(wrapper, action, diff):
    """k releases of one user's round: the two points of ``action``, losses differing by diff."""
    def draw(k):
        losses = np.zeros((k, 2))
        losses[:, 0] = diff
        return wrapper._released(np.broadcast_to(action, (k, 2 * D)), losses)
    return draw


def test_one_point_is_zhengs_alg1_calibration():
    env = gym.make("LDPBCO-v0")
    b = env.unwrapped.core.loss_bound
    w = one_point(env, epsilon=0.5, delta=1e-5, seed=0)
    assert w.mechanism.lower == -b and w.mechanism.upper == b
    assert math.isclose(w.mechanism.sigma, 2 * b * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5)
    assert one_point(env, epsilon=2.0, delta=1e-5).mechanism.calibration == "analytic"
    obs, _ = w.reset(seed=0)
    obs, reward, *_ , info = w.step(np.zeros(D))
    assert info == {} and obs.tolist() == [0.0]  # the observation carries nothing private
    with pytest.raises(ValueError, match="one-point"):
        one_point(gym.make("LDPMultiPointBCO-v0"), epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="bandit convex"):
        one_point(gym.make("LDPMAB-v0"), epsilon=1.0, delta=1e-5)


def test_two_point_releases_only_the_noisy_difference():
    w = two_point(eps=0.5)
    core = w.unwrapped.core
    g = core.lipschitz
    assert math.isclose(w.mechanism.sigma, 2 * g * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5)
    w.reset(seed=0)
    obs, reward, terminated, truncated, info = w.step(pair(0.5))
    assert reward == 0.0 and info == {} and obs[0] == -obs[1]
    assert w.observation_space.contains(obs)
    assert w.privacy.unit == "loss"
    # D = gap * M(diff / gap): on the mechanism's grid scaled by the public gap
    rel = sampler(w, pair(0.5), 0.1)(1000) / 0.5
    assert off_lattice(rel[:, None], bits=40).max() == 0 or np.all(
        np.abs(rel / w.mechanism.grid - np.rint(rel / w.mechanism.grid)) < 1e-6)


def test_two_point_noise_law():
    """n^T (x1 - x2) with n ~ N(0, sigma^2 I): D - diff has sd sigma ||x1 - x2|| (z-test on the
    variance: 5 standard errors, false alarm < 1e-6)."""
    w = two_point(eps=2.0)
    for gap in (0.2, 1.0):
        d = sampler(w, pair(gap), 0.05)(200_000) - 0.05
        sd = w.mechanism.sigma * gap
        assert abs(d.mean()) < 5 * sd / math.sqrt(d.size)
        assert abs(d.var() / sd**2 - 1) < 5 * math.sqrt(2 / d.size)


def test_two_point_wrapper_refuses_other_envs():
    with pytest.raises(ValueError, match="2 points"):
        TwoPointGaussian(gym.make("LDPMultiPointBCO-v0", points=3), epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="bandit convex"):
        TwoPointGaussian(gym.make("LDPMAB-v0"), epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="epsilon"):
        TwoPointGaussian(gym.make("LDPMultiPointBCO-v0"), epsilon=0.0, delta=1e-5)


def test_vector_two_point_matches_and_autoresets_release_nothing():
    venv = VectorTwoPointGaussian(ldp_gym.make_vector_env("LDPMultiPointBCO-v0", 4, 2),
                                  epsilon=1.0, delta=1e-5, seed=0)
    obs, _ = venv.reset(seed=0)
    acts = np.tile(pair(0.5), (4, 1))
    for _ in range(2):
        obs, rewards, _, truncated, info = venv.step(acts)
        assert info == {} and (rewards == 0).all() and (obs[:, 0] == -obs[:, 1]).all()
    assert truncated.all()
    obs, *_ = venv.step(acts)  # every run autoresets: nothing released
    assert (obs == 0).all()


# ----------------------------------------------------------------------------- audits

def _audit(wrapper, gap, d0, d1):
    return audit(sampler(wrapper, pair(gap), d0), sampler(wrapper, pair(gap), d1), n=400_000,
                 delta=0.01)


@pytest.mark.audit
@pytest.mark.parametrize("gap,neighbours", [(0.5, "lipschitz"), (1.0, "out_of_bound"),
                                             (0.05, "non_lipschitz")])
def test_two_point_audit(gap, neighbours):
    w = two_point(eps=1.0)
    g = w.unwrapped.core.lipschitz
    d0, d1 = {"lipschitz": (g * gap, -g * gap), "out_of_bound": (1e6, -1e6),
              "non_lipschitz": (50 * g * gap, -50 * g * gap)}[neighbours]
    claim = audit_gaussian_epsilon(w.mechanism.sensitivity, w.mechanism.sigma, 0.01)
    assert _audit(w, gap, d0, d1).epsilon_lower <= claim


@pytest.mark.audit
def test_two_point_mutants_flagged():
    w = two_point(eps=1.0)
    g = w.unwrapped.core.lipschitz
    claim = audit_gaussian_epsilon(w.mechanism.sensitivity, w.mechanism.sigma, 0.01)

    class Unclipped(TwoPointGaussian):  # the difference is not clipped to G ||x1 - x2||
        def make_mechanism(self, seed):
            m = super().make_mechanism(seed)
            m.lower, m.upper = -1e9, 1e9
            m.sensitivity = 2e9
            return m
    bad = Unclipped(gym.make("LDPMultiPointBCO-v0", dim=D), epsilon=1.0, delta=1e-5, seed=4)
    bad.mechanism.sigma = w.mechanism.sigma
    assert _audit(bad, 0.5, 2 * g, -2 * g).epsilon_lower > claim

    bad = two_point(eps=1.0)  # noise 10% short
    bad.mechanism.sigma *= 0.9
    assert _audit(bad, 0.25, g * 0.25, -g * 0.25).epsilon_lower > claim


# ----------------------------------------------------------------------------- findings of the
# external black-box audit of these releases (each test fails on the code before its fix)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_reward_wrappers_refuse_private_observations_through_gymnasium_vector_envs(mode):
    from ldp_gym.wrappers import VectorLaplaceReward

    venv = gym.make_vec("LDPMultiPointBCO-v0", num_envs=2, vectorization_mode=mode)
    with pytest.raises(ValueError, match="observation carries private feedback"):
        VectorLaplaceReward(venv, epsilon=1.0)
    venv.close()


def test_gaussian_releases_never_return_negative_zero():
    """The sign of a zero output must not depend on the input: a snapped input in (-g/2, 0)
    plus a zero draw used to give -0.0, a positive one +0.0."""
    from ldp_gym.wrappers.mechanisms import GaussianMechanism, GaussianStatistics

    class Zero(np.random.Generator):
        def __init__(self):
            super().__init__(np.random.PCG64(0))

        def standard_normal(self, size=None, *args, **kwargs):
            return np.full(size, -1e-300)

    m = GaussianMechanism(1.0, 1e-5, lower=-1.0, upper=1.0, seed=Zero())
    out = m(np.array([-m.grid / 4, m.grid / 4, 0.0]))
    assert (out == 0).all() and not np.signbit(out).any()
    s = GaussianStatistics(1.0, 0.01, {"u": ("vector", 1.0, 8.0)}, dim=2, seed=0)
    s.streams["u"]._buf, s.streams["u"]._pos = np.full(16, -0.0), 0
    out = s.release("u", np.array([[-s.parts["u"].grid / 4, 0.0]]))  # the compiled transform
    assert (out == 0).all() and not np.signbit(out).any()


@pytest.mark.parametrize("eps,delta,secure", [(1.0, 1e-20, True), (40.0, 1e-5, True),
                                              (100.0, 1e-5, False)])
def test_gaussian_refuses_what_the_sampler_tail_cannot_deliver(eps, delta, secure):
    from ldp_gym.wrappers.mechanisms import GaussianMechanism

    with pytest.raises(ValueError, match="sampler's tail"):
        GaussianMechanism(eps, delta, secure=secure)
    with pytest.raises(ValueError, match="sampler's tail"):
        TwoPointGaussian(gym.make("LDPMultiPointBCO-v0"), epsilon=eps, delta=delta, secure=secure)


def test_two_point_release_uses_the_points_the_env_plays():
    """A huge coordinate used to overflow the wrapper's own norm (gap taken as 0 or wrong)."""
    w = two_point(eps=2.0)
    far = np.zeros(2 * D)
    far[0], far[D] = 1e200, -0.5          # played: (1, 0, ...) and (-0.5, 0, ...)
    near = np.zeros(2 * D)
    near[0], near[D] = 1.0, -0.5
    d_far = sampler(w, far, -0.3)(20_000)
    d_near = sampler(w, near, -0.3)(20_000)
    assert abs(d_far.mean() - d_near.mean()) < 5 * w.mechanism.sigma * 1.5 / math.sqrt(20_000)


def test_partial_reset_resets_the_masked_runs_only():
    venv = ldp_gym.make_vector_env("LDPMultiPointBCO-v0", 3, 10)
    venv.reset(seed=0)
    venv.step(np.tile(pair(0.5), (3, 1)))
    before = venv.unwrapped.core.comparator.copy()
    venv.reset(options={"reset_mask": np.array([True, False, False])})
    assert venv.unwrapped.t.tolist() == [0, 1, 1]
    after = venv.unwrapped.core.comparator
    assert not np.array_equal(before[0], after[0]) and np.array_equal(before[1:], after[1:])
    with pytest.raises(ValueError, match="reset_mask"):
        venv.reset(options={"reset_mask": [1, 0, 0]})


def test_cli_wrapper_on_bco_clips_to_the_declared_bounds(tmp_path, capsys):
    from ldp_gym.cli import main

    assert main(["run", "LDPBCO-v0", "--agents", "FKM", "--wrapper", "gaussian", "--horizon",
                 "50", "--runs", "2", "--quiet", "--out", str(tmp_path / "a")]) == 0
    from ldp_gym.results import Results

    b = gym.make("LDPBCO-v0").unwrapped.core.loss_bound
    assert f"'lower': {-b}, 'upper': {b}" in Results.load(tmp_path / "a" / "results.npz").meta[
        "wrappers"][0]
    capsys.readouterr()
    assert main(["run", "LDPMultiPointBCO-v0", "--agents", "ADX", "--wrapper", "laplace",
                 "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--wrapper laplace" in err and not (tmp_path / "b").exists()


# ----------------------------------------------------------------------------- the block path

class Stepped(gym.vector.VectorWrapper):
    """A wrapper that declares nothing: the runner steps it round by round."""


@pytest.mark.parametrize("release,env_id,agent", [
    (one_point, "LDPBCO-v0", "FKM"), (VectorTwoPointGaussian, "LDPMultiPointBCO-v0", "ADX")])
def test_block_path_releases_what_the_wrapper_releases(release, env_id, agent):
    """The runner's block path applies the wrapper's release itself (``block_release``): the
    mechanism's calls it traces (inputs, sensitivity, noise, budget, one call per round) are
    those of the wrapper's ``step``, so the audits of the release cover both paths."""
    from ldp_gym.agents import AGENTS
    from ldp_gym.wrappers.mechanisms import recording

    traces = []
    for force in (False, True):
        with recording() as trace:
            ldp_gym.run(env_id, {"a": AGENTS[agent]}, horizon=700, n_runs=3, seed=5,
                        progress=False, wrappers=[(release, {"epsilon": 1.0, "delta": 1e-5})]
                        + ([(Stepped, {})] if force else []))
        traces.append(trace)
    block, rounds = traces
    assert len(block) == len(rounds) == 700
    for b, r in zip(block, rounds):
        assert b["mechanism"] == r["mechanism"] == "GaussianMechanism"
        assert np.array_equal(b["input"], r["input"]) and b["shape"] == r["shape"] == (3,)
        assert b["sensitivity"] == r["sensitivity"] and b["noise"] == r["noise"]
        assert (b["epsilon"], b["delta"]) == (r["epsilon"], r["delta"]) == (1.0, 1e-5)


def test_block_release_is_the_step_release():
    """One round released by ``block_release``'s compiled feedback equals ``step``'s (the same
    noise: the block's is drawn ahead by the same mechanism)."""
    for make, env_id, width in ((lambda v: one_point(v, 1.0, 1e-5, seed=4), "LDPBCO-v0", 5),
                                (lambda v: VectorTwoPointGaussian(v, 1.0, 1e-5, seed=4),
                                 "LDPMultiPointBCO-v0", 10)):
        x = np.random.default_rng(0).uniform(-0.6, 0.6, (4, width))
        x[0, :width // 2] = 3.0                      # a point outside X: projected
        stepped = make(ldp_gym.make_vector_env(env_id, 4, 10))
        stepped.reset(seed=0)
        obs, rewards, *_ = stepped.step(x)
        env = make(ldp_gym.make_vector_env(env_id, 4, 10))
        env.reset(seed=0)
        base = env.unwrapped
        losses_obs, env_rewards, *_ = base.step(x)
        rel = env.block_release(1)
        core = base.core
        seen, mech = np.zeros((4, 1 + core.points)), np.zeros(4)
        rel.feedback(np.ascontiguousarray(x), np.ascontiguousarray(core.last_losses),
                     env_rewards, rel.noise[0], rel.params, seen, mech)
        assert np.array_equal(seen[:, 0], rewards)
        if core.points == 2:
            assert np.array_equal(seen[:, 1:], obs)
