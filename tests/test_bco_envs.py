"""Bandit convex optimisation envs (``LDPBCO-v0``, ``LDPMultiPointBCO-v0``): the Gymnasium contract,
the declared loss constants, the projection onto the ball, the exact adversarial regret against a
brute-force recomputation, and bad input. Deterministic (fixed seeds)."""

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from scipy import optimize

import ldp_gym
from ldp_gym.envs import bco
from ldp_gym.envs.bco import BCOCore, BCOEnv, BCOVectorEnv, MultiPointBCOEnv, MultiPointBCOVectorEnv

IDS = ["LDPBCO-v0", "LDPMultiPointBCO-v0"]
LOSSES = bco.LOSSES
SETTINGS = [(loss, regime) for loss in LOSSES for regime in bco.REGIMES]
INFO = {"expected_reward", "optimal_reward", "regret", "projected"}


# ----------------------------------------------------------------------------- independent losses
# Written from the documented formulas, not from the env's code.

def side_of(t):
    """Instance of round t (0-based) of the adversarial sequence: phase floor(log2(t + 1)), odd: b."""
    return ((t + 1).bit_length() - 1) % 2


def loss_at(core, run, x, side):
    """Noise-free f of ``run``'s instance ``side`` at the points x (..., d) of X."""
    x = np.asarray(x, dtype=np.float64)
    if core.loss == "logistic":
        z = 2.0 * (x @ core.direction[run] - core.offsets[run, side]) / core.radius
        return np.logaddexp(0.0, z) + np.logaddexp(0.0, -z) - 2.0 * math.log(2.0)
    diff = x - core.centres[run, side]
    if core.loss == "quadratic":
        return 0.5 * core.mu * (diff**2).sum(axis=-1)
    return np.abs(diff).sum(axis=-1) / math.sqrt(core.dim)


def project(points, radius):
    norms = np.linalg.norm(points, axis=-1, keepdims=True)
    return points * np.minimum(1.0, radius / norms)


def best_fixed(core, run, counts):
    """Brute force ``min_{x in X} sum_s f_s(x)`` for counts (n_a, n_b) of the two instances."""
    n_a, n_b = counts
    R, d = core.radius, core.dim

    def total(x):
        return n_a * loss_at(core, run, x, 0) + n_b * loss_at(core, run, x, 1)

    if core.loss == "quadratic":  # smooth, unconstrained minimiser inside X
        res = optimize.minimize(total, np.zeros(d), method="BFGS", options={"gtol": 1e-12})
        assert np.linalg.norm(res.x) <= R
        return res.fun
    if core.loss == "absolute":   # a linear program in (x, s_a, s_b): a lower bound of the min on X
        c = np.r_[np.zeros(d), np.full(d, n_a), np.full(d, n_b)] / math.sqrt(d)
        eye, zero = np.eye(d), np.zeros((d, d))
        rows, rhs = [], []
        for j, centre in enumerate(core.centres[run]):
            s = [zero, zero]
            s[j] = -eye
            rows += [np.hstack([eye, *s]), np.hstack([-eye, *s])]
            rhs += [centre, -centre]
        res = optimize.linprog(c, A_ub=np.vstack(rows), b_ub=np.concatenate(rhs),
                               bounds=[(None, None)] * (3 * d), method="highs")
        return res.fun
    # logistic: f depends on x through y = <u, x> only, and y ranges over [-R, R] on X
    u = core.direction[run]
    res = optimize.minimize_scalar(lambda y: total(y * u), bounds=(-R, R), method="bounded",
                                   options={"xatol": 1e-12})
    return res.fun


# ----------------------------------------------------------------------------- the contract

@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("loss,regime", SETTINGS)
def test_gymnasium_env_checker(env_id, loss, regime):
    env = gym.make(env_id, loss=loss, regime=regime)
    check_env(env.unwrapped, skip_render_check=True)


@pytest.mark.parametrize("env_id", IDS)
def test_registered_with_native_vector_env(env_id):
    spec = gym.spec(env_id)
    assert spec.max_episode_steps == 100_000 and env_id in ldp_gym.ENV_SPECS
    venv = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point",
                        max_episode_steps=2)
    assert isinstance(venv.unwrapped, (BCOVectorEnv, MultiPointBCOVectorEnv))
    obs, _ = venv.reset(seed=0)
    assert obs.dtype == venv.single_observation_space.dtype and venv.observation_space.contains(obs)
    for step in range(2):
        obs, rew, term, trunc, info = venv.step(venv.action_space.sample())
        assert rew.shape == (3,) and not term.any() and trunc.all() == (step == 1)
        assert set(info) == INFO | {f"_{k}" for k in INFO}
        assert np.array_equal(venv.unwrapped.last_regret, info["regret"])
    before = venv.unwrapped.core.comparator.copy()
    obs, rew, term, trunc, info = venv.step(venv.action_space.sample())  # next-step autoreset
    assert (rew == 0).all() and not info["_regret"].any() and (obs == 0).all()
    assert not np.array_equal(before, venv.unwrapped.core.comparator)    # fresh instances


@pytest.mark.parametrize("cls", [BCOEnv, MultiPointBCOEnv])
@pytest.mark.parametrize("loss,regime", SETTINGS)
def test_info_keys_types_and_spaces(cls, loss, regime):
    env = cls(loss=loss, regime=regime, dim=4, radius=2.0)
    core = env.core
    k = core.points
    assert env.action_space == gym.spaces.Box(-2.0, 2.0, (k * 4,), np.float64)
    obs, info = env.reset(seed=1)
    assert info == {} and env.observation_space.contains(obs)
    assert obs.dtype == (np.float32 if k == 1 else np.float64)  # the losses: float64
    assert (obs == 0).all() and obs.shape == ((1,) if k == 1 else (k,))
    env.action_space.seed(0)
    for _ in range(20):
        obs, reward, term, trunc, info = env.step(env.action_space.sample())
        assert set(info) == INFO and type(reward) is float and type(info["projected"]) is bool
        assert all(type(info[key]) is float for key in INFO - {"projected"})
        assert info["regret"] == pytest.approx(info["optimal_reward"] - info["expected_reward"])
        assert env.observation_space.contains(obs) and term is False and trunc is False
        if k > 1:  # the k observed losses; the reward is minus their mean
            assert np.array_equal(obs, core.last_losses[0])
            assert reward == pytest.approx(-core.last_losses[0].mean())
        else:
            assert obs.tolist() == [0.0] and reward == -core.last_losses[0, 0]
    assert core.bounded_rewards == (-core.loss_bound, core.loss_bound) == core.reward_range


def test_vector_env_of_one_run_is_the_single_env():
    """Same seed, same actions: bitwise the same rounds (one stream, drawn in the same order)."""
    for cls, vcls in ((BCOEnv, BCOVectorEnv), (MultiPointBCOEnv, MultiPointBCOVectorEnv)):
        for loss, regime in SETTINGS:
            env, venv = cls(loss=loss, regime=regime), vcls(num_envs=1, loss=loss, regime=regime)
            o1, _ = env.reset(seed=7)
            o2, _ = venv.reset(seed=7)
            assert np.array_equal(o1, o2[0])
            actions = np.random.default_rng(0).uniform(-1, 1, (30,) + env.action_space.shape)
            for a in actions:
                o1, r1, _, _, i1 = env.step(a)
                o2, r2, _, _, i2 = venv.step(a[None])
                assert np.array_equal(o1, o2[0]) and r1 == r2[0]
                assert all(i1[key] == i2[key][0] for key in INFO)


def test_vector_env_runs_are_single_envs_with_their_instances():
    """N runs share one generator, so they are not N single envs seeded alike; each run is the
    single env holding its instance (noise-free: the noise is the only draw of a round)."""
    venv = BCOVectorEnv(num_envs=4, loss="absolute", noise=0.0)
    venv.reset(seed=3)
    envs = [BCOEnv(loss="absolute", noise=0.0) for _ in range(4)]
    for i, env in enumerate(envs):
        env.reset(seed=100 + i)
        env.core.centres[0] = venv.core.centres[i]
    actions = np.random.default_rng(1).uniform(-1, 1, (25, 4, 5))
    for a in actions:
        _, rewards, _, _, info = venv.step(a)
        for i, env in enumerate(envs):
            _, r, _, _, single = env.step(a[i])
            assert r == rewards[i] and all(single[key] == info[key][i] for key in INFO)


# ----------------------------------------------------------------------------- declared constants

CONSTANT_CASES = [("quadratic", 5, 1.0, 1.0), ("quadratic", 3, 0.7, 2.5), ("absolute", 5, 1.0, 1.0),
                  ("absolute", 2, 1.5, 1.0), ("logistic", 5, 1.0, 1.0), ("logistic", 1, 0.8, 1.0),
                  ("quadratic", 1, 2.0, 0.5)]


def _points_in_ball(rng, n, d, radius):
    g = rng.standard_normal((n, d))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    r = np.where(rng.random((n, 1)) < 0.3, 1.0, rng.random((n, 1)) ** (1.0 / d))  # boundary too
    return radius * r * g


@pytest.mark.parametrize("loss,dim,radius,mu", CONSTANT_CASES)
def test_declared_constants_hold_on_random_points(loss, dim, radius, mu):
    n, m = 400, 50
    core = BCOCore(loss=loss, dim=dim, radius=radius, mu=mu, noise=0.05, regime="adversarial")
    core.reset(np.random.default_rng(0), np.arange(n), n)
    rng = np.random.default_rng(1)
    x = _points_in_ball(rng, n * m, dim, radius).reshape(n, m, dim)
    y = _points_in_ball(rng, n * m, dim, radius).reshape(n, m, dim)
    y[:, :10] = x[:, :10] + 1e-3 * rng.standard_normal((n, 10, dim))  # close pairs
    y = project(y, radius)
    mid = (x + y) / 2
    b0, g = core.loss_bound - 0.05, core.lipschitz
    mu_, beta = core.strong_convexity, core.smoothness
    for side in (0, 1):
        fx, fy, fm = (core.losses(p, side) for p in (x, y, mid))
        assert np.allclose(fx, loss_at_all(core, x, side), rtol=1e-12, atol=1e-14)
        assert (fx >= 0).all() and (fx <= b0).all()
        dist = np.linalg.norm(x - y, axis=2)
        assert (np.abs(fx - fy) <= g * dist * (1 + 1e-9) + 1e-15).all()
        gap = (fx + fy) / 2 - fm  # midpoint convexity gap: within [mu, beta] ||x - y||^2 / 8
        assert (gap >= mu_ * dist**2 / 8 * (1 - 1e-9) - 1e-13).all()
        if beta < math.inf:
            assert (gap <= beta * dist**2 / 8 * (1 + 1e-9) + 1e-13).all()
    assert core.loss_bound == pytest.approx(b0 + 0.05)


def loss_at_all(core, x, side):
    return np.stack([loss_at(core, i, x[i], side) for i in range(x.shape[0])])


@pytest.mark.parametrize("loss", LOSSES)
def test_declared_constants_are_attained(loss):
    """No constant can be lowered: B, G (and beta, mu where declared) are reached in the family."""
    d, R, mu = 4, 1.3, 2.0
    core = BCOCore(loss=loss, dim=d, radius=R, mu=mu, noise=0.0)
    core.reset(np.random.default_rng(0), np.arange(1), 1)
    v = np.full(d, 1.0 / math.sqrt(d))
    if loss == "logistic":
        core.direction[0], core.offsets[0, 0] = v, -R / 2
    else:
        core.centres[0, 0] = -(R / 2) * v
    far = R * v
    assert core.losses(far[None, None])[0, 0] == pytest.approx(core.loss_bound, rel=1e-12)
    h = 1e-6  # slope along v at the far point (the Lipschitz constant is the sup of the slope)
    pts = np.stack([far, far - h * v])[None]
    f = core.losses(pts)[0]
    assert (f[0] - f[1]) / h == pytest.approx(core.lipschitz, rel=1e-5)
    if core.smoothness < math.inf:  # curvature along v at the minimiser
        h = 1e-3
        pts = np.stack([-(R / 2) * v + s * h * v for s in (-1, 0, 1)])[None]
        f = core.losses(pts)[0]
        assert (f[0] - 2 * f[1] + f[2]) / h**2 == pytest.approx(core.smoothness, rel=1e-5)
    assert core.strong_convexity == {"quadratic": mu, "absolute": 0.0, "logistic": 0.0}[loss]
    assert core.smoothness == {"quadratic": mu, "absolute": math.inf, "logistic": 2 / R**2}[loss]


def test_logistic_in_one_dimension_is_strongly_convex():
    core = BCOCore(loss="logistic", dim=1, radius=1.0)
    assert core.strong_convexity == pytest.approx(2.0 / math.cosh(1.5) ** 2)
    core.reset(np.random.default_rng(0), np.arange(1), 1)
    core.direction[0], core.offsets[0, 0] = 1.0, -0.5
    h = 1e-3   # the least curvature on X is at the far end, x = 1
    f = core.losses(np.array([[[1 - 2 * h], [1 - h], [1.0]]]))[0]
    assert (f[0] - 2 * f[1] + f[2]) / h**2 == pytest.approx(core.strong_convexity, rel=1e-2)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("loss", LOSSES)
def test_rewards_and_observations_stay_in_declared_bounds(env_id, loss):
    venv = gym.make_vec(env_id, num_envs=200, vectorization_mode="vector_entry_point",
                        loss=loss, noise=0.3)
    b = venv.unwrapped.core.loss_bound
    venv.reset(seed=0)
    venv.action_space.seed(0)
    for _ in range(20):
        obs, rewards, *_ = venv.step(venv.action_space.sample() * 3)   # far outside X too
        assert ((-b <= rewards) & (rewards <= b)).all() and venv.observation_space.contains(obs)


# ----------------------------------------------------------------------------- the regimes

@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("loss", LOSSES)
def test_stochastic_regret_of_the_optimum_is_zero(env_id, loss):
    venv = gym.make_vec(env_id, num_envs=6, vectorization_mode="vector_entry_point", loss=loss)
    venv.reset(seed=2)
    core = venv.unwrapped.core
    best = np.tile(core.comparator, (1, core.points))
    regrets, rewards = [], []
    for _ in range(50):
        _, r, _, _, info = venv.step(best)
        regrets.append(info["regret"])
        rewards.append(r)
        assert (info["optimal_reward"] == 0).all() and not info["projected"].any()
    assert np.abs(regrets).max() < 1e-12
    assert np.std(rewards) > 0.01 and np.abs(rewards).max() <= 0.1 + 1e-12   # the noise alone


def test_stochastic_noise_is_bounded_zero_mean_and_shared_by_the_points():
    venv = MultiPointBCOVectorEnv(num_envs=500, points=3, noise=0.2, loss="logistic")
    venv.reset(seed=4)
    core = venv.unwrapped.core
    actions = np.random.default_rng(0).uniform(-0.5, 0.5, (500, 15))
    clean = core.losses(actions.reshape(500, 3, 5))
    z = []
    for _ in range(20):
        _, rewards, _, _, info = venv.step(actions)
        noise = core.last_losses - clean
        assert np.allclose(noise, noise[:, :1], atol=1e-12)          # one z_t per round
        assert np.allclose(rewards, info["expected_reward"] - noise[:, 0], atol=1e-12)
        z.append(noise[:, 0])
    z = np.concatenate(z)
    assert np.abs(z).max() <= 0.2 and abs(z.mean()) < 5 * 0.2 / math.sqrt(3 * z.size)
    assert z.var() == pytest.approx(0.2**2 / 3, rel=0.05)


@pytest.mark.parametrize("points", [1, 2])
@pytest.mark.parametrize("loss", LOSSES)
def test_adversarial_regret_is_exact_at_every_checkpoint(loss, points):
    """Cumulative reported regret = sum_t mean_i f_t(x_{t,i}) - min_{x in X} sum_t f_t(x), with f_t
    and the minimum recomputed independently (scipy), at several t; the comparator attains it."""
    n, T, d = 3, 260, 5
    venv = MultiPointBCOVectorEnv(num_envs=n, points=points, loss=loss, regime="adversarial",
                                  mu=1.7, dim=d) if points > 1 else \
        BCOVectorEnv(num_envs=n, loss=loss, regime="adversarial", mu=1.7, dim=d)
    venv.reset(seed=5)
    core = venv.core
    rng = np.random.default_rng(6)
    actions = rng.uniform(-0.8, 0.8, (T, n, points * d))
    actions[::7] *= 2.0                       # some outside X (and the box): projected
    played, cum = np.zeros(n), np.zeros(n)
    checkpoints = {1, 2, 3, 4, 7, 8, 50, 127, 128, T}
    for t in range(T):
        _, _, _, _, info = venv.step(actions[t])
        side = side_of(t)
        pts = project(actions[t].reshape(n, points, d), core.radius)
        f = np.stack([loss_at(core, i, pts[i], side) for i in range(n)])   # (n, points)
        assert np.allclose(info["expected_reward"], -f.mean(axis=1), rtol=1e-12, atol=1e-14)
        played += f.mean(axis=1)
        cum += info["regret"]
        if t + 1 in checkpoints:
            n_b = sum(side_of(s) for s in range(t + 1))
            counts = (t + 1 - n_b, n_b)
            assert (core.n_b == n_b).all() and (core.t == t + 1).all()
            comp = core.comparator
            for i in range(n):
                best = best_fixed(core, i, counts)
                exact = played[i] - best
                assert cum[i] == pytest.approx(exact, rel=1e-9, abs=1e-9), (t, i)
                at_comparator = counts[0] * loss_at(core, i, comp[i], 0) \
                    + counts[1] * loss_at(core, i, comp[i], 1)
                assert np.linalg.norm(comp[i]) <= core.radius * (1 + 1e-12)
                assert at_comparator == pytest.approx(best, rel=1e-9, abs=1e-9)
    assert (np.diff([side_of(t) for t in range(8)]) != 0).sum() == 3   # phases 1, 2, 4, ... long


def test_adversarial_sequence_is_oblivious():
    """The losses of round t do not depend on the actions played before it."""
    rounds = []
    for scale in (0.0, 1.0):
        venv = BCOVectorEnv(num_envs=4, loss="quadratic", regime="adversarial")
        venv.reset(seed=9)
        probe = np.zeros((4, 3, 5))
        seen = []
        for t in range(40):
            seen.append(venv.core.losses(probe))
            venv.step(scale * np.random.default_rng(t).uniform(-1, 1, (4, 5)))
        rounds.append(np.array(seen))
    assert np.array_equal(rounds[0], rounds[1])


# ----------------------------------------------------------------------------- projection

def test_projection_is_radial_and_reported():
    env = BCOEnv(dim=3, radius=2.0, noise=0.0, loss="absolute")
    env.reset(seed=0)
    core = env.core
    cases = [(np.array([1.5, 1.5, 1.5]), True),       # inside the box, outside the ball
             (np.array([3.0, -4.0, 0.0]), True),      # outside the box
             (np.array([5.0, 0.0, 0.0]), True),       # axis-aligned: lands on the sphere
             (np.array([1e300, 1e300, -1e300]), True),  # its squared norm overflows
             (np.array([0.5, -0.5, 0.2]), False),
             (np.array([2.0, 0.0, 0.0]), False)]      # on the sphere
    for action, outside in cases:
        unit = action / np.abs(action).max()
        expected = 2.0 * unit / np.linalg.norm(unit) if outside else action
        f = core.losses(expected[None, None])[0, 0]
        _, reward, _, _, info = env.step(action)
        assert info["projected"] is outside and reward == pytest.approx(-f, rel=1e-12)
    _, _, _, _, info = env.step(np.array([1.2, 1.2, 1.2], dtype=np.float32))
    assert info["projected"]
    _, _, _, _, info = env.step(np.array([0, 1, -1]))  # integers are real points
    assert not info["projected"]
    # a point outside X by rounding only is brought onto X without a report
    x = np.array([2.0, 0.0, 0.0]) * (1 + 2e-16)
    assert not env.step(x)[4]["projected"]


def test_projection_in_the_vector_env_is_per_run():
    venv = MultiPointBCOVectorEnv(num_envs=3, dim=2, noise=0.0)
    venv.reset(seed=0)
    a = np.array([[0.1, 0.1, 0.2, 0.2], [0.1, 0.1, 0.9, 0.9], [0.1, 0.1, 7.0, 0.0]])
    expected = venv.core.losses(project(a.reshape(3, 2, 2), 1.0))
    _, rewards, _, _, info = venv.step(a)
    assert info["projected"].tolist() == [False, True, True]
    assert np.allclose(venv.core.last_losses, expected, rtol=1e-12)
    _, _, _, _, info = venv.step(np.zeros((3, 4)))   # the report does not stick
    assert not info["projected"].any()


# ----------------------------------------------------------------------------- bad input

BAD_ACTIONS = [(np.array([np.nan, 0, 0, 0, 0]), ValueError, "finite"),
               (np.array([np.inf, 0, 0, 0, 0]), ValueError, "finite"),
               (np.array([0.0, -np.inf, 0, 0, 0], dtype=np.float32), ValueError, "finite"),
               (np.zeros(4), ValueError, "shape"), (np.zeros((1, 5)), ValueError, "shape"),
               (np.zeros(10), ValueError, "shape"), (np.zeros(5, bool), TypeError, "real"),
               (np.array(["0"] * 5), TypeError, "real"), (0.5, ValueError, "shape"),
               (None, TypeError, "real"), ([[0.0], [0.0, 1.0]], ValueError, "rectangular")]


@pytest.mark.parametrize("action,error,msg", BAD_ACTIONS, ids=repr)
def test_single_env_refuses_bad_actions(action, error, msg):
    env = gym.make("LDPBCO-v0", max_episode_steps=5)
    env.reset(seed=0)
    with pytest.raises(error, match=msg) as info:
        env.step(action)
    assert "\n" not in str(info.value) and "action" in str(info.value)
    assert env.unwrapped.core.t[0] == 0 and not env.unwrapped.core._forced.any()  # nothing played
    env.step(np.zeros(5))


def test_vector_env_refuses_bad_actions():
    venv = gym.make_vec("LDPMultiPointBCO-v0", num_envs=3, vectorization_mode="vector_entry_point")
    venv.reset(seed=0)
    bad = [(np.full((3, 10), np.nan), ValueError), (np.zeros((3, 5)), ValueError),
           (np.zeros((2, 10)), ValueError), (np.zeros(30), ValueError),
           (np.zeros((3, 10), bool), TypeError), (np.full((3, 10), "x"), TypeError)]
    big = np.zeros((3, 10))
    big[1, 0] = np.inf
    bad.append((big, ValueError))
    for actions, error in bad:
        with pytest.raises(error) as info:
            venv.step(actions)
        assert "\n" not in str(info.value) and "actions" in str(info.value)
    assert (venv.unwrapped.core.t == 0).all()
    venv.step(np.zeros((3, 10), np.float32))


@pytest.mark.parametrize("env_id,kwargs,error,msg", [
    ("LDPBCO-v0", {"radius": 0.0}, ValueError, "radius"),
    ("LDPBCO-v0", {"radius": -1.0}, ValueError, "radius"),
    ("LDPBCO-v0", {"radius": float("inf")}, ValueError, "radius"),
    ("LDPBCO-v0", {"radius": True}, TypeError, "radius"),
    ("LDPBCO-v0", {"mu": -0.5}, ValueError, "mu"),
    ("LDPBCO-v0", {"mu": -0.5, "loss": "absolute"}, ValueError, "mu"),
    ("LDPBCO-v0", {"mu": 0.0}, ValueError, "mu"),
    ("LDPBCO-v0", {"mu": "1"}, TypeError, "mu"),
    ("LDPBCO-v0", {"loss": "hinge"}, ValueError, "loss"),
    ("LDPBCO-v0", {"loss": None}, ValueError, "loss"),
    ("LDPBCO-v0", {"regime": "bandit"}, ValueError, "regime"),
    ("LDPBCO-v0", {"noise": -0.1}, ValueError, "noise"),
    ("LDPBCO-v0", {"noise": float("nan")}, ValueError, "noise"),
    ("LDPBCO-v0", {"dim": 0}, ValueError, "dim"),
    ("LDPBCO-v0", {"dim": 2.0}, TypeError, "dim"),
    ("LDPBCO-v0", {"points": 0}, ValueError, "points"),
    ("LDPMultiPointBCO-v0", {"points": 1}, ValueError, "points"),
    ("LDPMultiPointBCO-v0", {"points": 2.5}, TypeError, "points"),
    ("LDPMultiPointBCO-v0", {"points": True}, TypeError, "points"),
])
def test_bad_parameters(env_id, kwargs, error, msg):
    with pytest.raises(error, match=msg) as info:
        gym.make(env_id, **kwargs)
    assert "\n" not in str(info.value)
    with pytest.raises(error, match=msg):
        gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", **kwargs)


def test_absolute_and_logistic_accept_mu_zero_and_declare_their_own():
    core = BCOCore(loss="absolute", mu=0.0)
    assert core.strong_convexity == 0.0 and core.smoothness == math.inf
    assert MultiPointBCOEnv().core.points == 2


# ----------------------------------------------------------------------------- the block path


def test_project_points_is_the_radial_projection():
    """The compiled projection (shared by the env's step, its block round and the two-point
    release) against numpy's formula: to rounding, flags and box included."""
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(2000, 5)) * rng.choice([0.1, 0.5, 2.0, 1e300], size=(2000, 1))
    out, flags = bco.project_points(pts, 1.5)
    norms = np.linalg.norm(pts / np.abs(pts).max(axis=1, keepdims=True), axis=1) \
        * np.abs(pts).max(axis=1)
    ref = np.where((norms > 1.5)[:, None], pts * (1.5 / np.where(norms > 1.5, norms, 1.0))[:, None],
                   pts)
    assert np.allclose(out, ref, rtol=1e-14, atol=0) and np.abs(out).max() <= 1.5
    assert np.array_equal(flags, norms > 1.5 * np.sqrt(1 + 1e-12))
    assert bco.project_points(pts.reshape(40, 50, 5), 1.5)[0].shape == (40, 50, 5)
    unit = rng.normal(size=(2000, 5))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    for scale, outside in ((1 - 1e-10, False), (1 + 1e-10, True)):   # at the boundary
        near = unit * 1.5 * scale
        out, flags = bco.project_points(near, 1.5)
        assert (flags == outside).all()
        assert np.array_equal(out, near) if not outside else np.allclose(out, unit * 1.5)


@pytest.mark.parametrize("noise", [0.1, 0.0])
@pytest.mark.parametrize("points", [1, 2])
def test_draw_world_and_round_kernel_are_the_steps(points, noise):
    """``draw_world`` draws what ``step`` draws, in order; the compiled round on it gives the
    step's rewards, losses, regrets and flags and moves the core's state the same way
    (the adversary included)."""
    kw = dict(num_envs=3, max_episode_steps=50, points=points, noise=noise,
              regime="adversarial", loss="logistic")
    stepped = (MultiPointBCOVectorEnv if points == 2 else BCOVectorEnv)(**kw)
    drawn = (MultiPointBCOVectorEnv if points == 2 else BCOVectorEnv)(**kw)
    stepped.reset(seed=0)
    drawn.reset(seed=0)
    rng = np.random.default_rng(1)
    xs = rng.uniform(-0.7, 0.7, size=(6, 3, 5 * points))
    xs[2, 1, :5] = 4.0                                   # outside the box: admitted
    world = drawn.core.draw_world(drawn.np_random, 6)
    assert world.shape == ((6, 3) if noise else (6, 0))
    rk = drawn.core.round_kernel()
    for s in range(6):
        _, rewards, _, _, info = stepped.step(xs[s])
        assert rk.play(xs[s].copy(), world[s], *rk.args)
        assert np.array_equal(rk.rewards, rewards) and np.array_equal(rk.regret, info["regret"])
        assert np.array_equal(rk.projected, info["projected"])
        assert np.array_equal(rk.losses, stepped.core.last_losses)
    assert rk.projected.dtype == bool and np.array_equal(drawn.core.t, stepped.core.t)
    assert np.array_equal(drawn.core.comparator, stepped.core.comparator)
    bad = xs[0].copy()
    bad[0, 0] = np.nan
    assert not rk.play(bad, world[0], *rk.args)           # refused, nothing played
    assert np.array_equal(drawn.core.t, stepped.core.t)


def test_box_status_is_the_reference_on_any_shape_and_every_special_value():
    """box_status (one branch-free pass) against its definition in numpy: -1 if a value is
    NaN or infinite, else 1 if one leaves [-r, r], else 0; on the boundary, -0.0, NaN and
    infinities at every place, and arrays of 1 to 3 dimensions, views included."""
    rng = np.random.default_rng(3)
    specials = [np.nan, np.inf, -np.inf, 1.0, -1.0, np.nextafter(1.0, 2.0), -np.nextafter(1.0, 2.0),
                -0.0, 0.5]
    cases = 0
    for shape in [(7,), (3, 4), (2, 3, 5)]:
        for special in specials:
            for place in range(0, int(np.prod(shape)), 3):
                x = rng.uniform(-0.99, 0.99, shape)
                x.reshape(-1)[place] = special
                for view in (x, x[..., ::2]):
                    expected = -1 if not np.isfinite(view).all() else \
                        int(bool((np.abs(view) > 1.0).any()))
                    assert bco.box_status(view, 1.0) == expected, (shape, special, place)
                    cases += 1
    assert cases > 300
