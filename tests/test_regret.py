"""Regret behaviour of the non-private agents (issue: UCB, KL-UCB, TS logarithmic on the default
instance; Exp3 and Tsallis-INF sub-linear on the adversarial variant). Fixed seeds, 20 runs;
the margins below are several standard errors wide."""

import math

import numpy as np
import pytest

import ldp_gym
from ldp_gym.agents import KLUCB, UCB1, Exp3, ThompsonSampling, TsallisINF
from ldp_gym.envs.mab import DEFAULT_MEANS

CPS = [1000, 10_000]


@pytest.fixture(scope="module")
def stochastic():
    return ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1, "KL-UCB": KLUCB, "Thompson": ThompsonSampling},
                       horizon=10_000, n_runs=20, seed=0, checkpoints=CPS, progress=False)


@pytest.mark.parametrize("agent", ["UCB1", "KL-UCB", "Thompson"])
def test_logarithmic_regret_on_default_instance(stochastic, agent):
    r1, r2 = stochastic.mean(agent)
    # sub-sqrt growth over a decade (sqrt(T) would multiply by 3.16, log T by 1.33)
    assert r2 / r1 < math.sqrt(10)
    # below UCB1's logarithmic bound (Auer et al. 2002, Thm 1): sum 8 ln T / gap + (1 + pi^2/3) sum gap
    gaps = max(DEFAULT_MEANS) - np.array(DEFAULT_MEANS[1:])
    bound = np.sum(8 * math.log(10_000) / gaps) + (1 + math.pi**2 / 3) * gaps.sum()
    assert r2 < bound


def test_kl_ucb_and_thompson_beat_ucb1(stochastic):
    assert stochastic.mean("KL-UCB")[-1] < stochastic.mean("UCB1")[-1]
    assert stochastic.mean("Thompson")[-1] < stochastic.mean("UCB1")[-1]


@pytest.mark.parametrize("agent", [Exp3, TsallisINF])
def test_sublinear_regret_on_adversarial_variant(agent):
    res = ldp_gym.run("LDPAdversarialMAB-v0", {"A": agent}, horizon=10_000, n_runs=20, seed=1,
                      checkpoints=CPS, progress=False)
    r1, r2 = res.mean("A")
    assert r2 / r1 < 10**0.75          # growth exponent below 3/4 over a decade
    assert r2 / 10_000 < 0.1 * 0.5     # far below the linear regret gap/2 of uniform play
