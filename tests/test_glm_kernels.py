"""The LDP contextual agents' block path against their per-round methods: one kernel each, so
the same seed gives bitwise the same actions, messages and state on both paths."""

import gymnasium as gym
import numpy as np
import pytest

import ldp_gym
from ldp_gym.agents import LDPGLOC, LDPOLS, LDPSGD, LDPLinUCB, LDPMultiOLS, LDPMultiSGD
from ldp_gym.protocols import BlockPlay
from ldp_gym.wrappers.mechanisms import GaussianStatistics, L2BallMechanism

CASES = [(LDPOLS, "LDPLinearBandit-v0", {}), (LDPLinUCB, "LDPLinearBandit-v0", {}),
         (LDPGLOC, "LDPGLMBandit-v0", {}), (LDPGLOC, "LDPLinearBandit-v0", {"link": "poisson"}),
         (LDPSGD, "LDPLinearBandit-v0", {}), (LDPSGD, "LDPGLMBandit-v0", {}),
         (LDPMultiOLS, "LDPMultiParamLinearBandit-v0", {}),
         (LDPMultiSGD, "LDPMultiParamGLMBandit-v0", {})]
#: single-parameter agents on block contexts x (x) e_a (D = K d = 6: LAPACK inverses)
BLOCK_CASES = [(LDPLinUCB, "LDPMultiParamLinearBandit-v0", {}),
               (LDPGLOC, "LDPMultiParamGLMBandit-v0", {}),
               (LDPSGD, "LDPMultiParamLinearBandit-v0", {})]


def _both_paths(cls, env_id, env_kwargs, dim, agent_kwargs=None, rounds=400, runs=3):
    """Play the same drawn rounds with play_block (two blocks) and with act/observe."""
    venv = ldp_gym.make_vector_env(env_id, runs, rounds, dim=dim, **env_kwargs)
    venv.reset(seed=1)
    obs, rewards, _ = venv.draw_block(rounds)
    kw = {"epsilon": 1.0, **(agent_kwargs or {})}
    fast, ref = (cls.from_env(venv, seed=7, **kw) for _ in range(2))
    half = rounds // 2
    acts = np.concatenate([fast.play_block(obs[:, :half + 1], rewards[:, :half]),
                           fast.play_block(obs[:, half:], rewards[:, half:])], axis=1)
    ref_acts = []
    for s in range(rounds):
        a = ref.act(obs[:, s])
        ref.observe(obs[:, s], a, rewards[np.arange(runs), s, a], obs[:, s + 1])
        ref_acts.append(a)
    for name, msg in ref.last_report.items():  # the block's last message, kept on both paths
        assert np.array_equal(fast.last_report[name], msg), name
    return fast, ref, acts, np.stack(ref_acts, axis=1)


@pytest.mark.parametrize("cls,env_id,env_kwargs", CASES)
def test_block_path_is_bitwise_the_per_round_path_at_d2(cls, env_id, env_kwargs):
    fast, ref, acts, ref_acts = _both_paths(cls, env_id, env_kwargs, dim=2)
    assert np.array_equal(acts, ref_acts)
    assert len(np.unique(acts)) > 1  # the agents do move
    for name in ("theta", "V", "u", "inv", "theta_hat", "theta_warm", "pulls", "updates", "t"):
        if hasattr(ref, name):
            assert np.array_equal(getattr(fast, name), getattr(ref, name)), name


@pytest.mark.parametrize("cls,env_id,env_kwargs,dim", [c + (5,) for c in CASES[::2]]
                         + [c + (2,) for c in BLOCK_CASES])
def test_block_path_is_the_per_round_path_with_clipping(cls, env_id, env_kwargs, dim):
    """Declared bounds below the env's, so that the user side clips contexts and rewards; for
    D > 2 the inverse is LAPACK's, the same call on both paths."""
    bounds = {"context_bound": 0.7, "reward_bound": 0.4}
    fast, ref, acts, ref_acts = _both_paths(cls, env_id, env_kwargs, dim=dim, agent_kwargs=bounds)
    assert np.array_equal(acts, ref_acts)
    assert np.array_equal(fast.theta, ref.theta)


@pytest.mark.parametrize("cls,env_id,env_kwargs", CASES)
def test_single_run_loop_is_the_block_path_and_refusals_change_nothing(cls, env_id, env_kwargs):
    """The single-run Gymnasium loop (float32 observations, the round calls' fast path) gives
    bitwise the block path's actions and state, with a refused observe (NaN in next_obs or
    obs) before every round: past the noise streams' refills (4096 values drawn ahead), where
    the refused round must draw nothing either."""
    rounds = 4200
    venv = ldp_gym.make_vector_env(env_id, 1, rounds, **env_kwargs)
    venv.reset(seed=2)
    obs, rewards, _ = venv.draw_block(rounds)
    block = cls.from_env(venv, seed=5, epsilon=1.0)
    acts = block.play_block(obs, rewards)[0]
    loop = cls.from_env(gym.make(env_id, max_episode_steps=rounds, **env_kwargs), seed=5,
                        epsilon=1.0)
    assert loop.num_envs is None
    bad = np.full(obs.shape[2], np.nan, dtype=np.float32)
    for s in range(rounds):
        x, nxt = np.ascontiguousarray(obs[0, s]), np.ascontiguousarray(obs[0, s + 1])
        a = loop.act(x)
        assert a == acts[s]
        for args, name in (((x, a, 0.5, bad), "next_obs"), ((bad, a, 0.5, nxt), "obs")):
            with pytest.raises(ValueError, match=name):
                loop.observe(*args)
        loop.observe(x, a, float(rewards[0, s, a]), nxt)
    for name in ("theta", "V", "u", "inv", "theta_hat", "theta_warm", "pulls", "updates", "t"):
        if hasattr(loop, name):
            assert np.array_equal(getattr(block, name), getattr(loop, name)), name
    for name, msg in loop.last_report.items():
        assert np.array_equal(block.last_report[name], msg), name


def test_runner_compiled_path_equals_its_per_round_block_path():
    """The runner's compiled path (play_block, prefetch thread) and its per-round loop over the
    same drawn blocks record bitwise the same regret."""
    class PerRound(LDPGLOC):
        block_play = BlockPlay.ROUNDS

    kw = dict(horizon=1200, n_runs=4, seed=3, progress=False)
    fast = ldp_gym.run("LDPGLMBandit-v0", {"A": (LDPGLOC, {"epsilon": 1.0})}, **kw)
    slow = ldp_gym.run("LDPGLMBandit-v0", {"A": (PerRound, {"epsilon": 1.0})}, **kw)
    assert np.array_equal(fast.regret["A"], slow.regret["A"])
    assert fast.regret["A"][:, -1].min() > 0


def test_mechanism_noise_is_the_noise_of_the_calls():
    """A mechanism's noise drawn ahead (``noise``, ``draws``) is bitwise what its calls add."""
    gs1, gs2 = (GaussianStatistics(1.0, 0.01, {"M": ("outer", 1.0, 13.0), "u": ("vector", 1.1, 7.0)},
                                   dim=2, seed=4) for _ in range(2))
    calls = np.stack([gs1.release("M", np.zeros((3, 2)))[:, [0, 0, 1], [0, 1, 1]] for _ in range(5)])
    assert np.array_equal(calls, gs2.noise("M", (5, 3, 3)))
    b1, b2 = (L2BallMechanism(1.0, 1.0, 2, seed=5) for _ in range(2))
    v = np.array([[0.3, -0.2]] * 3)
    out = np.stack([b1(v) for _ in range(4)])
    d = b2.draws(12)
    assert d["sphere"].shape == (12, 2) and d["sign"].shape == (12,)
    z = d["sphere"] / np.linalg.norm(d["sphere"], axis=-1, keepdims=True)
    assert np.allclose(np.abs(out.reshape(12, 2)), b2.output_radius * np.abs(z))


def test_play_block_validates():
    agent = LDPOLS(10, dim=2, epsilon=1.0, horizon=10, num_envs=2, seed=0)
    with pytest.raises(ValueError, match="obs must have shape"):
        agent.play_block(np.zeros((2, 4, 20)), np.zeros((2, 4, 10)))
    with pytest.raises(ValueError, match="rewards must have shape"):
        agent.play_block(np.zeros((2, 5, 20)), np.zeros((2, 4, 9)))
    multi = LDPMultiOLS(3, dim=2, epsilon=1.0, horizon=10, num_envs=2, seed=0)
    assert multi.block_play is BlockPlay.PLAYS_BLOCKS
    with pytest.raises(ValueError, match=r"\(2, 5, 2\)"):
        multi.play_block(np.zeros((2, 5, 6)), np.zeros((2, 4, 3)))


@pytest.mark.parametrize("d", [1, 2, 5, 20])
def test_solve_gives_theta_and_the_inverse_of_the_shifted_matrix(d):
    """``_solve``: the closed form (d <= 2), the Cholesky factor (positive definite) and the
    general inverse (the summed noise outweighs the shift) agree with numpy's solve."""
    from ldp_gym.agents.glm_kernels import _solve

    rng = np.random.default_rng(d)
    x = rng.standard_normal((d, d))
    u = rng.standard_normal(d)
    for V, shift in ((x @ x.T, 0.5), (x + x.T, 0.1)):  # positive definite; indefinite
        a = V + shift * np.eye(d)
        if np.linalg.cond(a) > 1e8:
            continue
        inv, theta, work = np.empty((d, d)), np.empty(d), np.empty((2, d, d))
        _solve(V, u, shift, inv, theta, work)
        assert np.allclose(theta, np.linalg.solve(a, u), rtol=1e-9, atol=1e-9)
        assert np.allclose(inv, np.linalg.inv(a), rtol=1e-9, atol=1e-9)
        greedy = np.empty(d)
        _solve(V, u, shift, np.empty((0, 0)), greedy, work)  # theta only
        assert np.allclose(greedy, theta, rtol=1e-12, atol=1e-12)
