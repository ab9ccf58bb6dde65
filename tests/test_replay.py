"""Offline replay evaluation (Li et al. 2011): unbiased against on-policy runs, about K events
per accepted round, refusals. Fixed seeds; each z-test's false-alarm rate is 7e-6 (|z| < 4.5;
the runs share one log of 100 000 events, of which each run reads about 3 %)."""

import numpy as np
import pytest

import ldp_gym
from ldp_gym.agents import ABSE, LDPMAB
from ldp_gym.replay import Log, log_uniform, replay

ENV, KW = "LDPClassificationBandit-v0", {"dataset": "iris", "dim": 2}


@pytest.fixture(scope="module")
def log():
    return log_uniform(ENV, 100_000, seed=0, env_kwargs=KW)


def test_the_log_is_the_uniform_policy_on_one_instance(log):
    assert log.n_arms == 3 and log.obs.shape == (100_000, 2)
    counts = np.bincount(log.actions, minlength=3)
    assert np.abs(counts - 100_000 / 3).max() < 4.5 * np.sqrt(100_000 * 2 / 9)
    assert np.array_equal(log.regrets, 1.0 - log.rewards)  # classification: regret 1 - reward
    again = log_uniform(ENV, 1000, seed=0, env_kwargs=KW)
    assert np.array_equal(again.obs, log.obs[:1000]) and np.array_equal(again.actions,
                                                                         log.actions[:1000])


@pytest.mark.parametrize("spec", [ABSE, (LDPMAB, {"epsilon": 4.0})], ids=["ABSE", "LDPMAB"])
def test_replayed_regret_is_the_online_regret(log, spec):
    """The mean replayed regret at T = 1000 equals the on-policy mean (z-test)."""
    rep = replay({"A": spec}, log, horizon=1000, n_runs=30, seed=1, checkpoints=[1000])
    on = ldp_gym.run(ENV, {"A": spec}, horizon=1000, n_runs=30, seed=2, checkpoints=[1000],
                     env_kwargs=KW, progress=False)
    a, b = rep.regret["A"][:, -1], on.regret["A"][:, -1]
    z = (a.mean() - b.mean()) / np.sqrt(a.var(ddof=1) / 30 + b.var(ddof=1) / 30)
    assert abs(z) < 4.5
    used = np.array(rep.meta["replay"]["events per run"]["A"])
    assert abs(used.mean() / 1000 - 3) < 0.3  # about K events per accepted round
    assert "Results(" in repr(rep) and "A" in rep.table()


def test_refusals(log):
    short = Log(ENV, log.obs[:100], log.actions[:100], log.rewards[:100], log.regrets[:100], 3, KW)
    with pytest.raises(ValueError, match="log: its 100 events gave only"):
        replay({"A": ABSE}, short, horizon=200, n_runs=1)
    for kwargs, name in (({"horizon": 0}, "horizon"), ({"n_runs": 0}, "n_runs"),
                         ({"horizon": 10, "checkpoints": [11]}, "checkpoints")):
        with pytest.raises(ValueError, match=name):
            replay({"A": ABSE}, log, **{"horizon": 10, **kwargs})
    with pytest.raises(TypeError, match="log must be a Log"):
        replay({"A": ABSE}, "log", horizon=10)
    with pytest.raises(ValueError, match="actions must be integer arms"):
        Log(ENV, log.obs[:2], np.array([0, 3]), log.rewards[:2], log.regrets[:2], 3, KW)
    with pytest.raises(ValueError, match="agents"):
        replay({}, log, horizon=10)


def test_second_look_findings_are_fixed(log):
    """From a new user's trial (2026-11-27): envs whose actions are not arms got unclear
    errors; an agent's numbers depended on its position in the dict; a Log was not checked
    against its env; checkpoints were not checked as ldp_gym.run checks them."""
    for env in ("LDPCombinatorialBandit-v0", "LDPBCO-v0"):
        with pytest.raises(ValueError, match="env: replay needs an env whose actions are arms"):
            log_uniform(env, 10)
    from ldp_gym.agents import UCB1

    mab = log_uniform("LDPMAB-v0", 3000, seed=1, env_kwargs={"means": [0.9, 0.5, 0.2]})
    alone = replay({"A": UCB1}, mab, horizon=200, n_runs=2, seed=3)
    second = replay({"Z": UCB1, "A": UCB1}, mab, horizon=200, n_runs=2, seed=3)
    assert np.array_equal(alone.regret["A"], second.regret["A"])
    assert alone.meta["seed"] == 3
    with pytest.raises(ValueError, match="n_arms=5 is not its env's 3"):
        replay({"A": UCB1}, Log("LDPMAB-v0", mab.obs, mab.actions, mab.rewards, mab.regrets, 5,
                                {"means": [0.9, 0.5, 0.2]}), horizon=10)
    with pytest.raises(ValueError, match="integer arms"):
        Log("LDPMAB-v0", mab.obs[:3], np.array([0.5, 1.0, 2.0]), mab.rewards[:3],
            mab.regrets[:3], 3)
    with pytest.raises(TypeError, match="numpy arrays"):
        Log("LDPMAB-v0", list(mab.obs[:3]), mab.actions[:3], mab.rewards[:3], mab.regrets[:3], 3)
    for bad in ([2.7, 10], [10, 5], "abc"):
        with pytest.raises(ValueError, match="checkpoints must be increasing integers"):
            replay({"A": UCB1}, mab, horizon=10, checkpoints=bad)
    with pytest.raises(ValueError, match="agents must be a dict"):
        replay([UCB1], mab, horizon=10)


def test_the_open_bandit_dataset_sample_is_a_uniform_log():
    """The obp wheel's sample (installed without its dependencies by the test command): the
    random policy's 10,000 impressions of each campaign, one arm per item, the click rates
    estimated from the log as the means; a replay accepts about one event in K."""
    from ldp_gym.agents import UCB1
    from ldp_gym.replay import obd_log

    log = obd_log("men")
    assert (log.n_arms, log.actions.shape, log.obs.shape, int(log.rewards.sum())) == (34, (10000,),
                                                                                      (10000, 1), 46)
    means = np.asarray(log.env_kwargs["means"])
    assert np.allclose(log.regrets, means.max() - means[log.actions]) and (log.regrets >= 0).all()
    assert np.bincount(log.actions).min() > 200  # every item shown, about 10000 / 34 times
    assert obd_log("all", position=2).actions.shape[0] < 10000
    res = replay({"UCB1": UCB1}, log, horizon=100, n_runs=2, seed=0)
    assert 100 * 20 < min(res.meta["replay"]["events per run"]["UCB1"]) < 100 * 60
    for bad, match in (({"campaign": "kids"}, "campaign"), ({"position": 4}, "position")):
        with pytest.raises(ValueError, match=match):
            obd_log(**bad)
