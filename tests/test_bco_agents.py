"""The bandit convex optimisation agents (FKM, Saha-Tewari, Hazan-Levy, ADX): update formulas
against hand computations, unbiased gradient estimates, iterates inside the ball, regret on the
envs, batch of one, parameter validation.

Every test is deterministic (fixed seeds). The statistical tests state the false-alarm rate a
correct implementation would have under a fresh seed.
"""

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import ldp_gym
from ldp_gym.agents import AGENTS, FKM, HazanLevy, SahaTewari, TwoPointGD
from ldp_gym.agents.bco import ellipsoid_point
from ldp_gym.wrappers import VectorGaussianReward

gym.register_envs(ldp_gym)

ONE, TWO = "LDPBCO-v0", "LDPMultiPointBCO-v0"


def barrier_hessian(x, radius):
    """grad^2 of -ln(radius^2 - ||x||^2) at one point, written out."""
    s = radius ** 2 - x @ x
    return (2.0 / s) * np.eye(len(x)) + (4.0 / s ** 2) * np.outer(x, x)


def matrix_power(m, p):
    """m^p of a symmetric positive definite matrix, by eigendecomposition."""
    vals, vecs = np.linalg.eigh(m)
    return (vecs * vals ** p) @ vecs.T


def project(y, cap):
    n = np.linalg.norm(y, axis=-1, keepdims=True)
    return y * np.minimum(1.0, cap / np.maximum(n, 1e-300))


# ----------------------------------------------------------------------------- schedules


def test_fkm_schedules_are_the_stated_formulas():
    T, d, R, B, G, mu = 10_000, 3, 2.0, 1.5, 2.5, 0.8
    convex = FKM(dim=d, radius=R, loss_bound=B, lipschitz=G, horizon=T, schedule="convex")
    rho = T ** -0.25 * math.sqrt(R * R * d * B / (3 * (G * R + B)))     # FKM 2005, r = R
    assert convex.rho == pytest.approx(rho) and convex.xi == pytest.approx(rho / R)
    assert convex.step_size(7) == pytest.approx(R / (B * math.sqrt(T)) * rho / d)  # nu rho / d
    strong = FKM(dim=d, radius=R, loss_bound=B, lipschitz=G, strong_convexity=mu, horizon=T)
    assert strong.schedule == "strongly_convex"                        # auto: mu > 0
    rho = ((d * B) ** 2 * (1 + math.log(T)) / (3 * mu * G * T)) ** (1 / 3)
    assert strong.rho == pytest.approx(rho) and strong.step_size(7) == pytest.approx(1 / (mu * 7))
    # a short horizon in high dimension: rho capped at r / 2
    assert FKM(dim=50, radius=R, loss_bound=B, lipschitz=G, horizon=2).rho == R / 2


def test_adx_schedule_is_zhengs_alg_2():
    T, R = 40_000, 1.5
    agent = TwoPointGD(dim=4, radius=R, horizon=T, schedule="convex")
    assert agent.step_size(3) == pytest.approx(1 / math.sqrt(T))
    assert agent.rho == pytest.approx(math.log(T) / T) and agent.xi == pytest.approx(agent.rho / R)
    strong = TwoPointGD(dim=4, radius=R, horizon=T, strong_convexity=2.0)
    assert strong.schedule == "strongly_convex" and strong.step_size(5) == pytest.approx(0.1)
    assert strong.rho == agent.rho


def test_barrier_schedules_are_the_stated_formulas():
    T, d, R, B, beta, mu = 10 ** 6, 5, 1.0, 1.2, 1.0, 0.5
    st = SahaTewari(dim=d, radius=R, loss_bound=B, smoothness=beta, horizon=T)
    delta = (2 * math.sqrt(2) * d * B * math.sqrt(math.log(T) / T) / (beta * R * R)) ** (1 / 3)
    assert st.delta == pytest.approx(delta)
    assert st.eta == pytest.approx(delta * math.sqrt(math.log(T) / (2 * T)) / (d * B))
    hl = HazanLevy(dim=d, radius=R, loss_bound=B, smoothness=beta, strong_convexity=mu, horizon=T)
    assert hl.eta == pytest.approx(math.sqrt((1 + 2 * beta / mu) * math.log(T)
                                             / (2 * d * d * B * B * T)))


def test_one_point_schedules_are_tuned_for_the_released_losses():
    """Behind Zheng's Alg 1 release the black box sees losses of range about
    B + sigma sqrt(2 ln 2T) (their Thm 3): from_env reads sigma off the reward wrapper."""
    import gymnasium as gym

    from ldp_gym.wrappers import VectorTwoPointGaussian, one_point

    env = gym.make("LDPBCO-v0", max_episode_steps=10_000)
    plain = FKM.from_env(env)
    private = FKM.from_env(one_point(env, epsilon=0.5, delta=1e-5))
    sigma = one_point(env, epsilon=0.5, delta=1e-5).mechanism.sigma
    assert plain.loss_noise == 0.0 and private.loss_noise == sigma
    assert private.loss_range == pytest.approx(plain.loss_bound
                                               + sigma * math.sqrt(2 * math.log(2 * 10_000)))
    assert private.rho > plain.rho  # more exploration against the noisier losses
    venv = ldp_gym.make_vector_env("LDPMultiPointBCO-v0", 2, 100)
    two = VectorTwoPointGaussian(venv, epsilon=1.0, delta=1e-5)
    assert TwoPointGD.from_env(two).loss_noise == 0.0  # the two-point release is not a reward's
    with pytest.raises(ValueError, match="loss_noise"):
        FKM(horizon=10, loss_noise=-1.0)


# ----------------------------------------------------------------------------- hand computations


def test_fkm_update_by_hand():
    d, R, T = 3, 2.0, 400
    agent = FKM(dim=d, radius=R, loss_bound=1.5, lipschitz=2.0, horizon=T, schedule="convex",
                num_envs=2, seed=1)
    rho, eta, cap = agent.rho, agent.step_size(1), (1 - agent.xi) * R
    obs = np.zeros((2, 1))
    y = np.zeros((2, d))
    for rewards in (np.array([-0.7, 0.4]), np.array([1.5, -1.5]), np.array([0.2, 0.0])):
        x = agent.act(obs)
        u = agent.u.copy()
        assert np.allclose(np.linalg.norm(u, axis=1), 1.0)
        assert np.allclose(x, y + rho * u)                             # x_t = y_t + rho u_t
        agent.observe(obs, x, rewards, obs)
        g = (d / rho) * (-rewards)[:, None] * u                        # f = -reward
        y = project(y - eta * g, cap)
        assert np.allclose(agent.y, y, rtol=1e-13, atol=1e-15)


def test_one_dimensional_points_stay_in_the_box_despite_rounding():
    """At d = 1, y projected onto the shrunk ball of radius ``R - rho`` can land an ulp past
    it, and ``y - rho`` then an ulp past -R, which the action space refuses: this run used to
    fail at its rounds with "actions must lie in Box(-1.0, 1.0, ...)". Such a coordinate is put
    on the box, on the block path and round by round alike."""
    kw = {"dim": 1, "loss": "logistic"}
    regrets = [ldp_gym.run("LDPBCO-v0", {"a": FKM}, horizon=1025, n_runs=2, seed=11,
                           progress=False, env_kwargs=kw, wrappers=wrappers).regret["a"]
               for wrappers in ([], [(Stepped, {})])]   # the block path, then round by round
    assert np.isfinite(regrets[0]).all() and np.array_equal(*regrets)


def test_fkm_strongly_convex_step_projects_onto_the_shrunk_ball():
    agent = FKM(dim=2, radius=1.0, loss_bound=1.0, lipschitz=1.0, strong_convexity=1.0,
                horizon=1000, seed=0)
    x = agent.act(np.zeros(1))
    u = agent.u[0].copy()
    agent.observe(np.zeros(1), x, -1.0, np.zeros(1))                  # f = 1: y = -(d/rho) u
    cap = (1 - agent.xi) * 1.0
    assert np.allclose(agent.y[0], -cap * u)                           # projected radially
    assert np.linalg.norm(agent.y[0]) == pytest.approx(cap)


def test_adx_update_by_hand_from_the_loss_difference_only():
    d, R, T = 3, 1.0, 1000
    agent = TwoPointGD(dim=d, radius=R, horizon=T, schedule="convex", num_envs=2, seed=3)
    rho, eta, cap = agent.rho, agent.step_size(1), (1 - agent.xi) * R
    theta = np.array([[0.3, -0.1, 0.2], [-0.4, 0.0, 0.1]])
    obs = np.zeros((2, 2), np.float32)
    y = np.zeros((2, d))
    for _ in range(3):
        a = agent.act(obs)
        u = agent.u.copy()
        x1, x2 = a[:, :d], a[:, d:]
        assert np.allclose(x1, y + rho * u) and np.allclose(x2, y - rho * u)
        f = np.stack([((x1 - theta) ** 2).sum(1), ((x2 - theta) ** 2).sum(1)], axis=1)
        agent.observe(obs, a, np.array([5.0, -3.0]), f)               # the reward is ignored
        g = d / (2 * rho) * (f[:, 0] - f[:, 1])[:, None] * u
        y = project(y - eta * g, cap)
        assert np.allclose(agent.y, y, rtol=1e-12, atol=1e-15)


def test_adx_needs_the_two_losses():
    agent = TwoPointGD(dim=2, horizon=10, seed=0)
    a = agent.act(np.zeros(1))
    with pytest.raises(ValueError, match="next_obs") as info:
        agent.observe(np.zeros(1), a, 0.0, np.zeros(1))
    assert "\n" not in str(info.value) and agent.t == 0


def test_adx_learns_only_from_the_difference():
    """Zheng's Alg 2 wrapper hands over (D/2, -D/2) and a reward of 0: the agent must not use the
    reward nor the level of the losses."""
    runs = [TwoPointGD(dim=2, horizon=100, num_envs=3, seed=7, loss_bound=10.0)  # losses inside
            for _ in range(3)]
    rng = np.random.default_rng(0)
    for _ in range(20):
        obs = np.zeros((3, 2))
        acts = [agent.act(obs) for agent in runs]
        assert all(np.allclose(acts[0], a, rtol=1e-10, atol=1e-12) for a in acts)
        f = rng.normal(size=(3, 2))
        level = rng.normal(size=(3, 1))
        runs[0].observe(obs, acts[0], np.zeros(3), f)
        runs[1].observe(obs, acts[1], rng.normal(size=3), f + level)
        diff = f[:, :1] - f[:, 1:]
        runs[2].observe(obs, acts[2], np.zeros(3), np.concatenate([diff / 2, -diff / 2], axis=1))
    assert np.allclose(runs[0].y, runs[1].y, rtol=1e-10, atol=1e-12)
    assert np.allclose(runs[0].y, runs[2].y, rtol=1e-10, atol=1e-12)


def test_ellipsoid_closed_form_matches_the_eigendecomposition():
    rng = np.random.default_rng(0)
    R = 1.7
    for lam in (0.0, 0.3, 25.0):
        x = rng.normal(size=(50, 4))
        x *= (R * rng.random((50, 1)) ** 0.1) / np.linalg.norm(x, axis=1, keepdims=True)
        x[0] = 0.0                                                     # the centre, exactly
        u = rng.normal(size=(50, 4))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        y, w = ellipsoid_point(x, u, R, lam, 0.5)
        for i in range(50):
            m = barrier_hessian(x[i], R) + lam * np.eye(4)
            assert np.allclose(y[i], x[i] + 0.5 * matrix_power(m, -0.5) @ u[i], rtol=1e-9)
            assert np.allclose(w[i], matrix_power(m, 0.5) @ u[i], rtol=1e-9)
        assert (np.linalg.norm(y, axis=1) < R).all()
    # the Dikin ellipsoid of radius 1 lies inside the ball, also next to the boundary
    x = np.array([[R * (1 - 1e-3), 0.0, 0.0, 0.0]] * 2)
    u = np.array([[1.0, 0.0, 0.0, 0.0], [0.6, 0.8, 0.0, 0.0]])
    assert (np.linalg.norm(ellipsoid_point(x, u, R)[0], axis=1) < R).all()


def test_saha_tewari_by_hand():
    d, R = 3, 1.3
    agent = SahaTewari(dim=d, radius=R, loss_bound=2.0, smoothness=1.5, horizon=500, num_envs=2,
                       seed=2)
    delta, eta = agent.delta, agent.eta
    agent.x[:] = [[0.4, -0.5, 0.2], [0.0, 0.0, -1.1]]               # any interior points
    s_sum = np.zeros((2, d))
    for rewards in (np.array([0.3, -1.2]), np.array([-2.0, 0.7])):
        x = agent.x.copy()
        y = agent.act(np.zeros((2, 1)))
        u = agent.u.copy()
        for i in range(2):
            h = barrier_hessian(x[i], R)
            assert np.allclose(y[i], x[i] + delta * matrix_power(h, -0.5) @ u[i])
            assert np.allclose(agent.w[i], d / delta * matrix_power(h, 0.5) @ u[i])
        agent.observe(np.zeros((2, 1)), y, rewards, np.zeros((2, 1)))
        s_sum += -rewards[:, None] * agent.w                          # g = d f A^-1 u
        nx = agent.x
        assert (np.linalg.norm(nx, axis=1) < R).all()
        # first-order condition of argmin eta S^T x - ln(R^2 - ||x||^2)
        s = R * R - (nx * nx).sum(1, keepdims=True)
        assert np.allclose(eta * s_sum + 2 * nx / s, 0.0, atol=1e-12)
        assert np.allclose(agent.grad_sum, s_sum)


def test_hazan_levy_by_hand():
    d, R, mu = 3, 1.0, 2.0
    agent = HazanLevy(dim=d, radius=R, loss_bound=5.0, smoothness=2.0, strong_convexity=mu,
                      horizon=200, num_envs=2, seed=4)  # the losses below lie in [-5, 5]
    eta = agent.eta
    rng = np.random.default_rng(1)
    gs, xs = [], []
    for t in range(1, 31):
        x = agent.x.copy()
        y = agent.act(np.zeros((2, 1)))
        u = agent.u.copy()
        for i in range(2):
            m = barrier_hessian(x[i], R) + eta * mu * t * np.eye(d)  # B_t^-2
            assert np.allclose(y[i], x[i] + matrix_power(m, -0.5) @ u[i])
            assert np.allclose(agent.w[i], d * matrix_power(m, 0.5) @ u[i])
        rewards = rng.uniform(-1, 1, 2) * 5
        agent.observe(np.zeros((2, 1)), y, rewards, np.zeros((2, 1)))
        gs.append(-rewards[:, None] * agent.w)
        xs.append(x)
        nx = agent.x
        s = R * R - (nx * nx).sum(1, keepdims=True)
        assert (s > 0).all()
        # first-order condition of sum_s (g_s^T x + mu/2 ||x - x_s||^2) + R(x)/eta, from history
        linear = sum(g + mu * (nx - xs_) for g, xs_ in zip(gs, xs))
        barrier = (2 / eta) * nx / s
        assert np.abs(linear + barrier).max() < 1e-10 * max(np.abs(linear).max(), 1.0)
    assert agent.newton_steps <= agent.newton_iterations


# ----------------------------------------------------------------------------- unbiasedness

N = 200_000          # samples (runs of one batched round)
Z = 4.5              # |z| per coordinate; false alarm <= d * 6.8e-6 per check under the CLT


def assert_mean(samples, target):
    """Each coordinate's sample mean within Z standard errors of the target."""
    z = (samples.mean(axis=0) - target) / (samples.std(axis=0, ddof=1) / math.sqrt(len(samples)))
    assert np.all(np.abs(z) < Z), z


LOSSES = {  # name: (f(points (N, d)), gradient at p) with f linear or quadratic in d = 3
    "linear": (lambda x: x @ np.array([0.5, -1.0, 0.25]) + 0.3,
               lambda p: np.array([0.5, -1.0, 0.25])),
    "quadratic": (lambda x: ((x - np.array([0.2, 0.1, -0.3])) ** 2).sum(-1),
                  lambda p: 2 * (p - np.array([0.2, 0.1, -0.3]))),
}


@pytest.mark.parametrize("loss", LOSSES)
def test_fkm_estimate_is_unbiased(loss):
    """E[(d/rho) f(y + rho u) u] is the gradient of the smoothed loss, which for linear and
    quadratic f is the gradient of f at y. The agent's own g_t is read off its step."""
    f, grad = LOSSES[loss]
    agent = FKM(dim=3, loss_bound=3.0, lipschitz=3.0, horizon=1000, schedule="convex",
                num_envs=N, seed=11)
    p = np.array([0.3, -0.2, 0.1])
    agent.y[:] = p
    x = agent.act(np.zeros((N, 1)))
    agent.observe(np.zeros((N, 1)), x, -f(x), np.zeros((N, 1)))
    assert np.linalg.norm(agent.y, axis=1).max() < (1 - agent.xi)   # no projection
    assert_mean((p - agent.y) / agent.step_size(1), grad(p))


@pytest.mark.parametrize("loss", LOSSES)
def test_adx_estimate_is_unbiased(loss):
    f, grad = LOSSES[loss]
    agent = TwoPointGD(dim=3, horizon=10 ** 6, schedule="convex", num_envs=N, seed=12)
    p = np.array([-0.1, 0.4, 0.2])
    agent.y[:] = p
    a = agent.act(np.zeros((N, 2)))
    losses = np.stack([f(a[:, :3]), f(a[:, 3:])], axis=1)
    agent.observe(np.zeros((N, 2)), a, np.zeros(N), losses)
    assert np.linalg.norm(agent.y, axis=1).max() < (1 - agent.xi)
    assert_mean((p - agent.y) / agent.step_size(1), grad(p))


@pytest.mark.parametrize("cls", [SahaTewari, HazanLevy])
@pytest.mark.parametrize("loss", LOSSES)
def test_ellipsoidal_estimate_is_unbiased(cls, loss):
    """E[d f(x + A u) A^-1 u] is the gradient of E_v f(x + A v) (v uniform in the ball): for
    linear and quadratic f, the gradient of f at x, for the ellipsoid of an off-centre x."""
    f, grad = LOSSES[loss]
    agent = cls(dim=3, loss_bound=3.0, smoothness=2.0, strong_convexity=2.0, horizon=1000,
                num_envs=N, seed=13)
    p = np.array([0.5, -0.3, 0.4])
    agent.x[:] = p
    y = agent.act(np.zeros((N, 1)))
    assert_mean(f(y)[:, None] * agent.w, grad(p))


# ----------------------------------------------------------------------------- inside the ball


@pytest.mark.parametrize("cls,schedule", [(FKM, "convex"), (FKM, "strongly_convex"),
                                          (TwoPointGD, "convex"), (TwoPointGD, "strongly_convex")])
def test_gradient_descent_iterates_stay_in_the_shrunk_ball(cls, schedule):
    """Adversarial feedback at the largest magnitudes: y_t in (1 - xi) X, every point in X (the
    agent's own observe accepts its actions: they lie in the Box)."""
    agent = cls(dim=4, radius=0.8, loss_bound=2.0, lipschitz=2.0, strong_convexity=1.0,
                horizon=500, schedule=schedule, num_envs=16, seed=5)
    rng = np.random.default_rng(2)
    obs = np.zeros((16, agent.points if agent.points > 1 else 1))
    for _ in range(500):
        a = agent.act(obs)
        points = a.reshape(16, agent.points, 4)
        assert np.linalg.norm(points, axis=2).max() <= 0.8 * (1 + 1e-12)
        sign = rng.choice([-1.0, 1.0], 16)
        nxt = np.stack([2.0 * sign, -2.0 * sign], axis=1) if agent.points == 2 else obs
        agent.observe(obs, a, 2.0 * sign, nxt)
        assert np.linalg.norm(agent.y, axis=1).max() <= (1 - agent.xi) * 0.8 * (1 + 1e-12)


@pytest.mark.parametrize("cls", [SahaTewari, HazanLevy])
def test_barrier_iterates_stay_strictly_inside(cls):
    """A linear loss pulling hard towards the boundary: x_t strictly inside the ball, y_t in it
    (strictly inside in exact arithmetic; at x_t within rounding of the boundary, y_t may land
    on it)."""
    R = 1.0
    agent = cls(dim=3, radius=R, loss_bound=1.0, smoothness=1.0, strong_convexity=0.01,
                horizon=3000, num_envs=8, seed=6)
    a = np.array([3.0, -4.0, 0.0])
    obs = np.zeros((8, 1))
    for _ in range(3000):
        y = agent.act(obs)
        assert (np.linalg.norm(y, axis=1) <= R * (1 + 1e-12)).all()
        agent.observe(obs, y, -(y @ a), obs)
        assert (np.linalg.norm(agent.x, axis=1) < R).all()
    if cls is SahaTewari:  # and it went where the loss pulls, towards -a / ||a|| (a linear
        # loss is convex and smooth; it is not strongly convex, Hazan-Levy's assumption, and
        # its iterates wander along the boundary there)
        assert (agent.x @ -a > 0).all()


# ----------------------------------------------------------------------------- batch of one


@pytest.mark.parametrize("name", ["FKM", "Saha-Tewari", "Hazan-Levy", "ADX"])
def test_batch_of_one_is_the_single_agent(name):
    cls = AGENTS[name]
    kw = dict(dim=3, loss_bound=2.0, smoothness=1.0, strong_convexity=1.0, horizon=300, seed=8)
    one, batch = cls(**kw), cls(num_envs=1, **kw)
    k = one.points
    obs = np.zeros(k if k > 1 else 1)
    for t in range(60):
        a, b = one.act(obs), batch.act(obs[None])
        assert type(a) is np.ndarray and a.dtype == np.float64 and b.shape == (1, k * 3)
        assert np.array_equal(a, b[0])
        f = np.array([math.sin(t + i) for i in range(k)])
        one.observe(obs, a, -f.mean(), f if k > 1 else obs)
        batch.observe(obs[None], b, np.array([-f.mean()]), (f if k > 1 else obs)[None])
    state = [k for k, v in vars(one).items() if isinstance(v, np.ndarray)]
    assert all(np.array_equal(getattr(one, k), getattr(batch, k)) for k in state)


# ----------------------------------------------------------------------------- on the envs


def test_from_env_reads_the_core_and_overrides_win():
    env = gym.make(ONE, loss="logistic", dim=3, radius=2.0)
    core = env.unwrapped.core
    agent = SahaTewari.from_env(env, seed=0)
    assert (agent.dim, agent.radius, agent.points) == (3, 2.0, 1)
    assert (agent.loss_bound, agent.lipschitz, agent.smoothness, agent.strong_convexity) == \
        (core.loss_bound, core.lipschitz, core.smoothness, core.strong_convexity)
    assert agent.horizon == env.spec.max_episode_steps and agent.privacy is None
    assert SahaTewari.from_env(env, loss_bound=9.0).loss_bound == 9.0
    venv = gym.make_vec(TWO, num_envs=4, vectorization_mode="vector_entry_point",
                        max_episode_steps=50)
    adx = TwoPointGD.from_env(venv, seed=0)
    assert adx.num_envs == 4 and adx.horizon == 50 and adx.action_space == venv.single_action_space
    # every default env is strongly convex and smooth: auto picks the strongly convex schedule
    assert FKM.from_env(gym.make(ONE)).schedule == "strongly_convex"
    assert FKM.from_env(gym.make(ONE, loss="absolute")).schedule == "convex"


@pytest.mark.parametrize("cls,env_id,kwargs,param", [
    (FKM, TWO, {}, "points"), (SahaTewari, TWO, {}, "points"), (TwoPointGD, ONE, {}, "points"),
    (TwoPointGD, TWO, {"points": 3}, "points"),
    (HazanLevy, ONE, {"loss": "logistic"}, "strong_convexity"),
    (HazanLevy, ONE, {"loss": "absolute"}, "strong_convexity"),
    (SahaTewari, ONE, {"loss": "absolute"}, "smoothness"),
    (FKM, "LDPMAB-v0", {}, "Discrete"),
])
def test_from_env_refuses_other_settings_with_one_line(cls, env_id, kwargs, param):
    with pytest.raises(ValueError, match=param) as info:
        cls.from_env(gym.make(env_id, **kwargs))
    assert "\n" not in str(info.value)


class _BoxEnv(gym.Env):
    observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)

    def __init__(self, space):
        self.action_space = space


@pytest.mark.parametrize("space", [spaces.Box(0.0, 1.0, (5,)), spaces.Box(-1.0, 1.0, (2, 3)),
                                   spaces.Box(np.array([-1.0, -2.0]), np.array([1.0, 2.0]), dtype=np.float64),
                                   spaces.Box(-3, 3, (5,), np.int64), spaces.Box(-1.0, 1.0, (5,))])
def test_from_env_refuses_boxes_that_are_not_a_ball_env(space):
    """Not Box(-R, R, (d,)) of floats: refused naming the space; the right Box without a BCO core:
    refused naming the env."""
    with pytest.raises(ValueError) as info:
        FKM.from_env(_BoxEnv(space))
    msg = str(info.value)
    assert "\n" not in msg and "FKM" in msg and (str(space) in msg or "env" in msg)


def _run(env_id, agents, horizon, **kw):
    return ldp_gym.run(env_id, agents, horizon=horizon, n_runs=3, seed=0,
                       checkpoints=[horizon], progress=False, **kw)


# Growth of the regret from T = 1e3 to 1e4 (separate runs: the schedules are tuned for T) below
# 10^slope, and the regret at T = 1e4 below a fraction of random play's. Theory: T^{2/3}
# (FKM strongly convex, Saha-Tewari), sqrt(T ln T) (Hazan-Levy), ln T (ADX). Measured on these
# seeds: growth 2.5, 5.9, 4.3, 1.0 (Saha-Tewari's delta is capped at 1 for T = 1e3) and
# fractions 0.06, 0.36, 0.11, 0.001: the thresholds leave margins of 25% or more.
REGRET_CASES = {
    "FKM": (ONE, FKM, 0.8, 0.2), "Saha-Tewari": (ONE, SahaTewari, 0.9, 0.6),
    "Hazan-Levy": (ONE, HazanLevy, 0.8, 0.3), "ADX": (TWO, TwoPointGD, 0.5, 0.01),
}


@pytest.mark.parametrize("name", REGRET_CASES)
def test_regret_is_sublinear_and_beats_random_points(name):
    """On the default quadratic family (mu = 1, R = 1, d = 5): a random point of the ball loses at
    least (mu/2) E||x||^2 = d / (2 (d + 2)) per round whatever the minimiser, so random play has
    regret >= 0.357 T; the agents stay below ``fraction`` of it at T = 1e4."""
    env_id, cls, slope, fraction = REGRET_CASES[name]
    small = _run(env_id, {name: cls}, 1000).mean(name)[-1]
    large = _run(env_id, {name: cls}, 10_000).mean(name)[-1]
    assert 0 < large < fraction * 10_000 * 5 / 14
    assert large / small < 10 ** slope


def test_fkm_convex_schedule_is_sublinear_on_the_absolute_loss():
    """Convex, not smooth: T^{3/4} in theory (growth 10^0.75 = 5.6 a decade; measured 5.7)."""
    small = _run(ONE, {"FKM": (FKM, {})}, 1000, env_kwargs={"loss": "absolute"}).mean("FKM")[-1]
    large = _run(ONE, {"FKM": (FKM, {})}, 10_000, env_kwargs={"loss": "absolute"}).mean("FKM")[-1]
    assert large / small < 10 ** 0.9


def test_agents_run_behind_the_privacy_wrappers():
    """Zheng's Alg 1 and Alg 2: the same agents, the feedback privatised by the wrappers."""
    bco = pytest.importorskip("ldp_gym.wrappers.bco")
    bound = gym.make(ONE).unwrapped.core.loss_bound
    res = _run(ONE, {"FKM": FKM}, 500, wrappers=[(VectorGaussianReward, {
        "epsilon": 1.0, "delta": 1e-5, "lower": -bound, "upper": bound})])
    assert np.isfinite(res.mean("FKM")).all()
    res = _run(TWO, {"ADX": TwoPointGD}, 500,
               wrappers=[(bco.VectorTwoPointGaussian, {"epsilon": 1.0, "delta": 1e-5})])
    assert np.isfinite(res.mean("ADX")).all()


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize("cls,kwargs,param,error", [
    (FKM, {"radius": 0.0}, "radius", ValueError), (FKM, {"radius": -1.0}, "radius", ValueError),
    (FKM, {"radius": float("nan")}, "radius", ValueError),
    (TwoPointGD, {"radius": float("inf")}, "radius", ValueError),
    (FKM, {"strong_convexity": -0.1}, "strong_convexity", ValueError),
    (HazanLevy, {"strong_convexity": -1.0}, "strong_convexity", ValueError),
    (FKM, {"loss_bound": 0.0}, "loss_bound", ValueError),
    (SahaTewari, {"loss_bound": -1.0}, "loss_bound", ValueError),
    (FKM, {"lipschitz": 0.0}, "lipschitz", ValueError),
    (TwoPointGD, {"lipschitz": -2.0}, "lipschitz", ValueError),
    (SahaTewari, {"smoothness": 0.0}, "smoothness", ValueError),
    (SahaTewari, {"smoothness": math.inf}, "smoothness", ValueError),
    (HazanLevy, {"smoothness": math.inf}, "smoothness", ValueError),
    (HazanLevy, {"strong_convexity": 0.0}, "strong_convexity", ValueError),
    (FKM, {"schedule": "adagrad"}, "schedule", ValueError),
    (TwoPointGD, {"schedule": None}, "schedule", ValueError),
    (FKM, {"schedule": "strongly_convex", "strong_convexity": 0.0}, "strong_convexity", ValueError),
    (FKM, {"points": 2}, "points", ValueError), (TwoPointGD, {"points": 1}, "points", ValueError),
    (TwoPointGD, {"points": 3}, "points", ValueError),
    (FKM, {"dim": 0}, "dim", ValueError), (FKM, {"dim": 2.5}, "dim", TypeError),
    (HazanLevy, {"radius": True}, "radius", TypeError), (FKM, {"horizon": None}, "horizon", ValueError),
])
def test_parameters_are_validated_with_one_clear_error(cls, kwargs, param, error):
    base = dict(dim=3, horizon=100, smoothness=1.0, strong_convexity=1.0)
    with pytest.raises(error, match=param) as info:
        cls(**{**base, **kwargs})
    assert "\n" not in str(info.value)


def test_docstrings_state_paper_and_privacy():
    for cls in (FKM, SahaTewari, HazanLevy, TwoPointGD):
        doc = cls.__doc__
        assert "Privacy: none" in doc and "Zheng et al." in doc and "Example:" in doc
        assert cls(dim=2, horizon=10, smoothness=1.0, strong_convexity=1.0).privacy is None
        assert cls.needs_horizon and cls.supported_action_spaces == (spaces.Box,)


# ----------------------------------------------------------------------------- the block path
# FKM and ADX play blocks of the BCO envs in one compiled kernel (``play_world``, the runner's
# ``_Evaluated`` player); a wrapper that does not declare needs_round_by_round (``Stepped``)
# forces the round-by-round path, which must give bitwise the same numbers.


class Stepped(gym.vector.VectorWrapper):
    """A wrapper that declares nothing: the runner steps it round by round."""


def _one_point_release():
    from ldp_gym.wrappers import one_point
    return [(one_point, {"epsilon": 1.0, "delta": 1e-5})]


def _two_point_release():
    from ldp_gym.wrappers import VectorTwoPointGaussian
    return [(VectorTwoPointGaussian, {"epsilon": 1.0, "delta": 1e-5})]


def _both_paths(env_id, cls, wrappers, horizon=1100, n_runs=5, **env_kwargs):
    """The regret of every round and the agent of the block path and of round-by-round play."""
    out = []
    for force in (False, True):
        agent = cls.from_env(ldp_gym.make_vector_env(env_id, n_runs, horizon, **env_kwargs))
        res = ldp_gym.run(env_id, {"a": agent}, horizon=horizon, n_runs=n_runs, seed=7,
                          checkpoints=np.arange(1, horizon + 1), progress=False,
                          env_kwargs=env_kwargs,
                          wrappers=list(wrappers) + ([(Stepped, {})] if force else []))
        out.append((res.regret["a"], agent))
    return out


@pytest.mark.parametrize("private", [False, True])
@pytest.mark.parametrize("regime", ["stochastic", "adversarial"])
@pytest.mark.parametrize("loss", ["quadratic", "absolute", "logistic"])
@pytest.mark.parametrize("cls", [FKM, TwoPointGD, SahaTewari, HazanLevy])
def test_block_path_is_bitwise_round_by_round(cls, loss, regime, private):
    """Every round's regret and the agent's state, over blocks of 512 rounds and a partial one,
    with and without Zheng et al.'s release (the same noise)."""
    env_id = TWO if cls is TwoPointGD else ONE
    try:
        cls.from_env(gym.make(env_id, loss=loss, regime=regime))
    except ValueError:  # the barrier agents refuse non-smooth (and HL non-strongly convex) losses
        pytest.skip(f"{cls.name} is not made for the {loss} loss")
    release = (_two_point_release() if cls is TwoPointGD else _one_point_release()) \
        if private else []
    (blocks, a), (rounds, b) = _both_paths(env_id, cls, release, loss=loss, regime=regime)
    assert np.array_equal(blocks, rounds)
    state = ("y",) if cls in (FKM, TwoPointGD) else ("x", "w", "grad_sum", "c", "newton_steps")
    for name in state + ("u", "t"):
        if hasattr(b, name):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.t == 1100


def test_block_path_is_chosen_by_what_agents_and_wrappers_declare():
    from ldp_gym.runner.blocks import block_player
    from ldp_gym.wrappers import VectorGaussianReward

    def player(env_id, cls, wrappers=(), **kw):
        venv = ldp_gym.make_vector_env(env_id, 3, 100, wrappers)
        return type(block_player(cls.from_env(venv, **kw), venv, 100)).__name__

    assert player(ONE, FKM) == player(TWO, TwoPointGD) == "_Evaluated"
    assert player(ONE, FKM, _one_point_release()) == "_Evaluated"
    assert player(TWO, TwoPointGD, _two_point_release()) == "_Evaluated"
    assert player(ONE, FKM, [(Stepped, {})]) == "NoneType"            # a third party's wrapper
    assert player(ONE, SahaTewari, smoothness=1.0) == player(ONE, HazanLevy) == "_Evaluated"
    bound = gym.make(ONE).unwrapped.core.loss_bound
    asym = [(VectorGaussianReward, {"epsilon": 1.0, "delta": 1e-5, "lower": -bound,
                                    "upper": bound})]
    assert player(ONE, FKM, asym) == "NoneType"   # the plain reward wrapper: round by round
    assert player(ONE, FKM, _one_point_release() * 2) == "NoneType"   # two releases


def _world_and_rounds(cls, env_id, y0, length=6, n=4):
    """``play_world`` from y0 against act / the vector env's step / observe from y0: (regrets,
    projected flags, the agent) of each, or the error each raised."""
    out = []
    for block in (True, False):
        venv = ldp_gym.make_vector_env(env_id, n, 10_000)   # rho < 0.25
        venv.reset(seed=1)
        agent = cls.from_env(venv, seed=2)
        agent.y[:] = y0
        try:
            if block:
                core = venv.unwrapped.core
                regrets, flags, _ = agent.play_world(core.draw_world(venv.np_random, length),
                                                     core.round_kernel(), None)
            else:
                obs, regrets, flags = venv.observation_space.sample() * 0, [], []
                for _ in range(length):
                    x = agent.act(obs)
                    nxt, r, _, _, info = venv.step(x)
                    agent.observe(obs, x, r, nxt)
                    regrets.append(info["regret"])
                    flags.append(info["projected"])
                    obs = nxt
            out.append((np.asarray(regrets), np.asarray(flags), agent))
        except ValueError as e:
            out.append(str(e))
    return out


@pytest.mark.parametrize("cls,env_id", [(FKM, ONE), (TwoPointGD, TWO)])
def test_block_path_projects_flags_and_refuses_as_round_by_round(cls, env_id):
    y = np.zeros((4, 5))
    y[0] = 0.6                               # outside the ball, inside the box: projected
    y[2] = [0.65, -0.65, 0.65, -0.65, 0.0]
    (rb, fb, a), (rr, fr, b) = _world_and_rounds(cls, env_id, y)
    assert fb[0, 0] and fb[0, 2] and not fb[0, 1] and not fb[1:].any()
    assert np.array_equal(fb, fr) and np.array_equal(rb, rr) and np.array_equal(a.y, b.y)
    bad = np.zeros((4, 5))
    bad[1, 0] = 1.5                         # the action leaves the box: observe refuses it
    block, rounds = _world_and_rounds(cls, env_id, bad)
    assert isinstance(block, str) and block == rounds and "must lie in" in block
    bad[1, 0] = np.nan                      # the env refuses it
    block, rounds = _world_and_rounds(cls, env_id, bad)
    assert isinstance(block, str) and block == rounds and "finite" in block
