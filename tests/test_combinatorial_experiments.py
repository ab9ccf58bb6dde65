"""The Chen et al. (2020) experiments end to end at tiny size, and their lower-bound formulas."""

import math

import numpy as np
import pytest

from ldp_gym.experiments import combinatorial as chen
from ldp_gym.experiments.common import Experiment, Report


def _rows(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()
            if line.startswith("|") and not line.startswith("|---")]


def test_lower_bounds_against_hand_computation():
    log_t = math.log(1000)
    # Theorem 5: (m - 1) B_inf^2 ln T / (64 (e^eps - 1)^2 Delta)
    assert chen.theorem5_lower_bound(8, 4.0, 0.3, 0.5, 1000) == pytest.approx(
        7 * 16 * log_t / (64 * (math.e ** 0.5 - 1) ** 2 * 0.3))
    # Theorem 6: (m - K) K B_1^2 ln T / (64 (e^eps - 1)^2 Delta)
    assert chen.theorem6_lower_bound(8, 4, 1.0, 0.3, 1.0, 1000) == pytest.approx(
        4 * 4 * log_t / (64 * (math.e - 1) ** 2 * 0.3))
    # Theorem 9 with constant 1: m K ln T / Delta + m K ln T / eps (B_1 = 1)
    assert chen.theorem9_lower_bound(8, 4, 1.0, 0.3, 2.0, 1000) == pytest.approx(
        32 * log_t / 0.3 + 32 * log_t / 2.0)
    # for eps <= 1/2 Theorem 5 is at least the paper's simplified (m - 1) B^2/(128 eps^2 Delta)
    assert chen.theorem5_lower_bound(8, 4.0, 0.3, 0.5, 1000) >= 7 * 16 * log_t / (128 * 0.25 * 0.3)
    curve = chen.theorem5_lower_bound(4, 2.0, 0.3, 1.0, np.array([10, 100]))
    assert curve.shape == (2,) and curve[1] == pytest.approx(2 * curve[0])
    with pytest.raises(ValueError, match="0.35"):
        chen.theorem5_lower_bound(4, 1.0, 0.5, 1.0, 1000)  # Delta / B_inf = 0.5
    with pytest.raises(ValueError, match="0.35"):
        chen.theorem9_lower_bound(4, 1, 1.0, 0.4, 1.0, 1000)


def test_instance_and_capped_regret():
    mu = chen.topk_means(3, 6)
    assert mu.shape == (6,) and (mu[:3] == chen.TOP).all()
    assert mu[3:] == pytest.approx(chen.TOP - chen.GAP)
    # a uniform 3-subset of 6 arms holds 1.5 suboptimal arms on average
    assert chen.capped_regret(6, 3, 0.3, 100) == pytest.approx(100 * 1.5 * 0.3)


def test_experiments_are_exported():
    names = [e.name for e in chen.EXPERIMENTS]
    assert names == ["chen2020-k-scaling", "chen2020-eps-scaling", "chen2020-coverage"]
    assert all(isinstance(e, Experiment) for e in chen.EXPERIMENTS)


def test_k_scaling_end_to_end(monkeypatch, tmp_path):
    monkeypatch.setattr(chen, "K_QUICK", ((1, 2), (1.0,), 200, 2))
    rep = chen.EXPERIMENTS[0](quick=True, seed=0, n_jobs=1, progress=False)
    assert isinstance(rep, Report) and "(quick)" in rep.title
    rows = _rows(rep.table)
    assert rows[0][:3] == ["K", "m", "eps"]
    body = [r for r in rows if r[0] in ("1", "2") and len(r) == 10]
    assert [r[:3] for r in body] == [["1", "2", "1"], ["2", "4", "1"]]
    assert [r[6] for r in body] == ["1", "0.25"]  # predicted 1/K^2
    assert "regret at T=200" in rep.table and "over 2 runs" in rep.table
    assert set(rep.results) == {"K1", "K2"}
    assert rep.results["K2"].regret["CUCB-LDP2 K=2 eps=1"].shape == (2, 1)
    # with K = 1 the two algorithms coincide (same law; the measured ratio is finite and positive)
    assert float(body[0][5]) > 0
    assert any(r[0] == "1" and r[-1] == "-2" for r in rows)  # the slope row for eps = 1
    assert (tmp_path / "figure.png") in rep.write(tmp_path)


def test_eps_scaling_end_to_end(monkeypatch):
    monkeypatch.setattr(chen, "EPS_QUICK", (1, 2, (1.0, 4.0), 200, 2))
    rep = chen.EXPERIMENTS[1](quick=True, seed=0, n_jobs=1, progress=False)
    rows = _rows(rep.table)
    assert rows[0][:3] == ["agent", "eps=1", "eps=4"]
    agents = [r[0] for r in rows[1:]]
    assert agents == ["CUCB-LDP1", "CUCB-LDP2", "CUCB-DP", "Thm 5 LB (LDP)", "Thm 9 LB (DP, c=1)"]
    assert [r[-1] for r in rows[1:4]] == ["2", "2", "1"]
    lb = rows[4][1:3]
    assert float(lb[0]) == pytest.approx(float(chen.theorem5_lower_bound(2, 1, chen.GAP, 1.0, 200)),
                                         rel=1e-3)
    res = rep.results["eps_scaling"]
    assert len(res.agents) == 7 and "CUCB (non-private)" in res.agents
    assert rep.figure is not None


def test_coverage_end_to_end(monkeypatch):
    monkeypatch.setattr(chen, "COV_QUICK", (5, 2, 6, (1.0,), 200, 2))
    rep = chen.EXPERIMENTS[2](quick=True, seed=0, n_jobs=1, progress=False)
    rows = _rows(rep.table)
    assert [r[0] for r in rows[1:]] == ["CUCB (non-private)", "CUCB-LDP1 eps=1",
                                        "CUCB-LDP2 eps=1", "CUCB-DP eps=1"]
    res = rep.results["coverage"]
    assert res.meta["oracle"]["alpha"] == pytest.approx(1 - 1 / math.e)
    assert "alpha=0.6321" in rep.table
    # plain regret = approximation regret + (1 - alpha) opt T
    family, means = chen.coverage_instance(5, 2, 6, 0)
    opt = float(family.optimum(means[None])[0])
    approx = res.at("CUCB (non-private)", 200).mean()
    plain = float(rows[1][2].split("±")[0])
    assert plain == pytest.approx(approx + (1 - res.meta["oracle"]["alpha"]) * opt * 200, rel=1e-3)


def test_doctests():
    import doctest

    result = doctest.testmod(chen, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 5
