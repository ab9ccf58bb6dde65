"""Float safety of every Gaussian release.

Every Gaussian release of the library (the mechanism, both reward wrappers,
and the messages of LDP-OLS, LDP-LinUCB, LDP-GLOC and multi-parameter LDP-OLS
on the per-round path and on the compiled block path) must

* lie on its declared power-of-two grid (100 % of outputs);
* pass the float-fingerprint audits: the statistics ``off_lattice`` (how many
  coordinates lie off the 2^-53 lattice; a continuous ``x + sigma z`` is on it
  for x = 1 and not for x = 0) and ``trailing_zeros`` (significand trailing
  zero bits), audited like any statistic;
* pass the value audit (linear discriminant of the whole message).

The mutant is the old continuous-float release: a grid of 2^-600 makes the
snapping and the rounding the identity, so the output is ``x + sigma z`` in
floats, bitwise what the library released before. Every fingerprint audit
must flag it. Audits certify at alpha = 1e-6 (the false-alarm rate of one
audit) with fixed seeds, so the outcome is deterministic.
"""


import numpy as np
import pytest

from ldp_gym.agents import LDPGLOC, LDPOLS, LDPLinUCB, LDPMultiOLS
from ldp_gym.wrappers import mechanisms as M
from ldp_gym.wrappers.mechanisms.audit import audit, audit_gaussian_epsilon, off_lattice, trailing_zeros
from ldp_gym.wrappers.reward import GaussianReward, VectorGaussianReward

#: samples per side per half of the value audits of agent messages
N_MESSAGE = 40_000
#: samples per side per half of the fingerprint audits of mechanisms (the mutants certify 4 to 7
#: there) and of agent messages (2.5 to 4)
N_FINGERPRINT = 50_000
N_MESSAGE_FINGERPRINT = 20_000
K, D = 3, 2
DELTA_AUDIT = 0.01
#: the fingerprint audits' delta: a continuous release exposes about 1 % of outputs with
#: certainty when the noise sd is 20 (LDP-GLOC), which a delta of 0.01 would absorb
DELTA_FINGERPRINT = 0.001
#: the mutant's grid: snapping and rounding to it change nothing (continuous floats)
FINE = 2.0**-600


def continuous(mech):
    """The mutant: the same mechanism with the old continuous-float noise."""
    if isinstance(mech, M.GaussianStatistics):
        for name, p in mech.parts.items():
            mech.streams[name].draw = lambda rng, k, p=p: M.gaussian_grid_noise(
                rng.standard_normal(k), p.sd, FINE)
        mech.parts = {k: p._replace(grid=FINE) for k, p in mech.parts.items()}
    else:
        mech.grid = FINE
    return mech


def fingerprints(sample0, sample1, n=N_FINGERPRINT, cols=(0,)):
    """Certified epsilon of both fingerprint statistics, on the whole output and on the
    coordinates ``cols`` where the neighbouring inputs differ (where an auditor looks: the
    other coordinates are the same noise on both sides and only dilute the statistic)."""
    cols = list(cols)
    stats = [off_lattice, trailing_zeros, lambda y: off_lattice(y.reshape(len(y), -1)[:, cols]),
             lambda y: trailing_zeros(y.reshape(len(y), -1)[:, cols])]
    # one selection and one certification draw per side, shared by the four audits (each audit
    # keeps its halves disjoint; four audits at alpha each: false alarms at most 4 alpha)
    draws = [[sample0(n), sample0(n)], [sample1(n), sample1(n)]]

    def replay(side):
        it = iter(draws[side])
        return lambda k: next(it)
    return [audit(replay(0), replay(1), n=n, statistic=s, delta=DELTA_FINGERPRINT).epsilon_lower
            for s in stats]


def on_grid(values, grid):
    return bool(np.all(values / grid == np.rint(values / grid)))


# ----------------------------------------------------------------------------- mechanism and wrappers

MECHANISMS = [dict(epsilon=1.0, delta=1e-5), dict(epsilon=0.5, delta=1e-5, calibration="classic"),
              dict(epsilon=8.0, delta=1e-5), dict(epsilon=1.0, delta=1e-5, secure=True),
              dict(epsilon=1.0, delta=1e-5, l2_bound=1.0, dim=3)]


def mechanism(kw, seed, mutant=False):
    m = M.GaussianMechanism(**kw, seed=None if kw.get("secure") else seed)
    return continuous(m) if mutant else m


def inputs(kw, n, which):
    if "dim" in kw:
        x = np.zeros((n, kw["dim"]))
        x[:, 0] = which
        return x
    return np.full(n, float(which))


@pytest.mark.parametrize("kw", MECHANISMS)
def test_gaussian_mechanism_outputs_on_grid(kw):
    m = mechanism(kw, 0)
    x = np.random.default_rng(1).uniform(-3, 3, size=(1000, kw.get("dim", 1)))
    y = m(x if "dim" in kw else x[:, 0])
    assert on_grid(y, m.grid) and m.grid >= 2.0**-53
    assert not on_grid(continuous(mechanism(kw, 0))(x if "dim" in kw else x[:, 0]), m.grid)


@pytest.mark.audit
@pytest.mark.parametrize("kw", MECHANISMS)
def test_gaussian_mechanism_fingerprint_audit_and_mutant(kw):
    m, bad = mechanism(kw, 1), mechanism(kw, 2, mutant=True)
    claim = audit_gaussian_epsilon(m.snapped_sensitivity, m.sigma, DELTA_FINGERPRINT)
    ok = fingerprints(lambda n: m(inputs(kw, n, 0)), lambda n: m(inputs(kw, n, 1)))
    assert max(ok) <= claim
    flagged = fingerprints(lambda n: bad(inputs(kw, n, 0)), lambda n: bad(inputs(kw, n, 1)))
    assert max(flagged) > claim


def _wrappers(mutant):
    import gymnasium as gym

    import ldp_gym  # noqa: F401

    single = GaussianReward(gym.make("LDPMAB-v0"), epsilon=1.0, delta=1e-5, seed=3)
    vec = VectorGaussianReward(ldp_gym.make_vector_env("LDPMAB-v0", 2, 10), epsilon=1.0,
                               delta=1e-5, seed=4)
    for w in (single, vec):
        if mutant:
            continuous(w.mechanism)
    return {"GaussianReward": (single, lambda n, r: np.array([single.reward(r) for _ in range(n)])),
            "VectorGaussianReward": (vec, lambda n, r: vec.rewards(np.full(n, r)))}


@pytest.mark.audit
@pytest.mark.parametrize("name", ["GaussianReward", "VectorGaussianReward"])
def test_gaussian_reward_wrappers_fingerprint_audit_and_mutant(name):
    n = 5_000 if name == "GaussianReward" else N_FINGERPRINT  # one Python call per reward
    wrapper, draw = _wrappers(False)[name]
    m = wrapper.mechanism
    assert on_grid(draw(1000, 0.0), m.grid) and on_grid(draw(1000, 1.0), m.grid)
    claim = audit_gaussian_epsilon(m.snapped_sensitivity, m.sigma, DELTA_FINGERPRINT)
    assert max(fingerprints(lambda k: draw(k, 0.0), lambda k: draw(k, 1.0), n)) <= claim
    _, bad = _wrappers(True)[name]
    assert max(fingerprints(lambda k: bad(k, 0.0), lambda k: bad(k, 1.0), n)) > claim


# ----------------------------------------------------------------------------- agent messages

AGENTS = [LDPOLS, LDPLinUCB, LDPGLOC, LDPMultiOLS]


def _agent(cls, n, seed, mutant, arm):
    """An agent of n users whose public state makes `arm` the choice for context e1."""
    multi = cls is LDPMultiOLS
    kw = {"warmup": 1} if multi else {}
    agent = cls(K, dim=D, horizon=1000, num_envs=n, seed=seed, epsilon=1.0, **kw)
    if mutant:
        continuous(agent.mechanism)
    if multi:
        agent.t[:] = K  # past the warm-up: every slot is folded in
        agent.theta[:, arm] = np.array([1.0, 0.0])
    else:
        agent.theta[:] = np.array([1.0, 0.0])
    return agent


def _obs(cls, arm, n):
    if cls is LDPMultiOLS:
        return np.tile([1.0, 0.0], (n, 1))
    obs = -np.ones((n, K, D)) * np.array([1.0, 0.0])
    obs[:, arm] = np.array([1.0, 0.0])
    return obs.reshape(n, K * D)


def _flatten(cls, parts):
    rows, cols = np.triu_indices(D)
    out = [parts["M"][..., rows, cols]] + [parts[k] for k in ("u", "zx", "grad") if k in parts]
    n = len(out[0])
    return np.concatenate([p.reshape(n, -1) for p in out], axis=1)


def per_round_message(cls, n, reward, seed, mutant=False, arm=0):
    """The user's message (``local_report``) with the server state frozen: upper triangles of
    the matrix parts and the vector parts, flattened."""
    agent = _agent(cls, n, seed, mutant, arm)
    obs = _obs(cls, arm, n)
    actions = agent.act(obs)
    assert (actions == arm).all()
    return _flatten(cls, agent.local_report(obs, actions, np.full(n, reward), obs,
                                            agent.public_state()))


def compiled_message(cls, n, reward, seed, mutant=False, arm=0):
    """The same message on the compiled block path: one round played by ``play_block``, whose
    message buffer keeps the last round's message (``last_report``)."""
    agent = _agent(cls, n, seed, mutant, arm)
    obs = np.repeat(_obs(cls, arm, n)[:, None], 2, axis=1)
    rewards = np.full((n, 1, K), float(reward))
    assert (agent.play_block(obs, rewards)[:, 0] == arm).all()
    return _flatten(cls, agent.last_report)


PATHS = {"per-round": per_round_message, "compiled": compiled_message}


def _claim(cls, delta_audit=DELTA_AUDIT):
    return audit_gaussian_epsilon(_agent(cls, 1, 0, False, 0).mechanism.rho, 1.0, delta_audit)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("cls", AGENTS)
def test_agent_messages_on_grid(cls, path):
    """R5: every coordinate of every part lies on its part's grid, on both paths; the
    continuous mutant's do not."""
    agent = _agent(cls, 1, 0, False, 0)
    grids = [agent.mechanism.parts[k].grid for k in agent.mechanism.parts]
    sizes = [D * (D + 1) // 2] + [D] * (len(grids) - 1)
    if cls is LDPMultiOLS:  # K slots of each part
        sizes = [s * K for s in sizes]
    msg = PATHS[path](cls, 500, 0.7, 5)
    bad = PATHS[path](cls, 500, 0.7, 5, mutant=True)
    splits = np.cumsum(sizes)[:-1]
    assert msg.shape[1] == sum(sizes)
    for part, grid in zip(np.split(msg, splits, axis=1), grids):
        assert on_grid(part, grid)
    assert not all(on_grid(p, g) for p, g in zip(np.split(bad, splits, axis=1), grids))


def test_both_paths_send_bitwise_the_same_message():
    for cls in AGENTS:
        assert np.array_equal(per_round_message(cls, 50, 0.7, 9), compiled_message(cls, 50, 0.7, 9))


#: (class, rewards, arms, the coordinates that differ): the first coordinate of the reward's
#: vector part (u; LDP-GLOC's gradient, its z x is 0 at theta^ = 0); for the arm-changing pair
#: of multi-parameter LDP-OLS (data against the synthetic zero slot), slot 0's x x^T (0, 0)
#: entry and u
FINGERPRINT_PAIRS = [(LDPOLS, (0.0, 1.0), (0, 0), [3]), (LDPLinUCB, (0.0, 1.0), (0, 0), [3]),
                     (LDPGLOC, (0.0, 1.0), (0, 0), [5]), (LDPMultiOLS, (0.0, 1.0), (0, 0), [3 * K]),
                     (LDPMultiOLS, (1.0, 1.0), (0, 1), [0, 3 * K])]


@pytest.mark.audit
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("cls,rewards,arms,cols", FINGERPRINT_PAIRS)
def test_agent_message_fingerprint_audit_and_mutant(cls, rewards, arms, cols, path):
    msg, claim = PATHS[path], _claim(cls, DELTA_FINGERPRINT)
    (r0, r1), (a0, a1) = rewards, arms
    ok = fingerprints(lambda n: msg(cls, n, r0, 10, arm=a0), lambda n: msg(cls, n, r1, 20, arm=a1),
                      N_MESSAGE_FINGERPRINT, cols)
    assert max(ok) <= claim
    bad = fingerprints(lambda n: msg(cls, n, r0, 30, True, a0),
                       lambda n: msg(cls, n, r1, 40, True, a1), N_MESSAGE_FINGERPRINT, cols)
    assert max(bad) > claim


@pytest.mark.audit
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("cls", AGENTS)
def test_agent_message_value_audit(cls, path):
    """Rewards +1 and -1 (the largest single-part change; LDP-OLS's out-of-bound pairs and its
    mutants are in test_glm_privacy.py); multi-parameter LDP-OLS with the arm changed too."""
    msg, claim = PATHS[path], _claim(cls)
    arm1 = 1 if cls is LDPMultiOLS else 0
    res = audit(lambda n: msg(cls, n, 1.0, 50), lambda n: msg(cls, n, -1.0, 60, arm=arm1),
                n=N_MESSAGE, statistic="lda", delta=DELTA_AUDIT)
    assert res.epsilon_lower <= claim




@pytest.mark.parametrize("sd,grid", [(12.43, 2.0 ** -36), (0.3, 2.0 ** -40), (1e-3, 2.0 ** -20)])
def test_compiled_grid_normals_are_the_numpy_ones(sd, grid):
    """The Gaussian streams' compiled draw (normals drawn and put on the grid in one pass) is
    bitwise ``gaussian_grid_noise`` of numpy's normals, with no -0.0."""
    from ldp_gym.wrappers.mechanisms.noise import draw_grid_normals, gaussian_grid_noise

    fast = draw_grid_normals(np.random.default_rng(3), 20001, sd=sd, grid=grid)
    ref = gaussian_grid_noise(np.random.default_rng(3).standard_normal(20001), sd, grid)
    assert np.array_equal(fast, ref) and not np.signbit(fast[fast == 0]).any()
