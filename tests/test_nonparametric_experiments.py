"""The Ma et al. (2025) experiments end to end at tiny sizes, and LDPMAB's diagnostic ablation."""

from __future__ import annotations

import numpy as np
import pytest

import ldp_gym.experiments.nonparametric as npx
from ldp_gym.agents import LDPMAB, LDPMABAux


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setattr(npx, "FIG7_QUICK", ((200, 300), 2))
    monkeypatch.setattr(npx, "FIG7_AUX_QUICK_N", 100)
    monkeypatch.setattr(npx, "FIG7_QUICK_EPS", (1.0, 1024.0))
    monkeypatch.setattr(npx, "FIG6_QUICK", {"n": 200, "epsilon": 1.0, "runs": 2,
                                            "x0": (1 / 3, 1 / 3), "chunk": 50})
    monkeypatch.setattr(npx, "FIG89_QUICK", {"n": 200, "epsilon": 2.0, "runs": 2, "M": 2,
                                             "n_m": 100})
    monkeypatch.setattr(npx, "ORDER_QUICK", {"n": 200, "epsilons": (1.0,), "n_m": (100,),
                                             "runs": 2})
    monkeypatch.setattr(npx, "REAL_QUICK", {"datasets": ("iris",), "dim": 2, "n": 200,
                                            "runs": 2, "epsilons": (4.0,), "eps_m": (8.0,),
                                            "n_m": 100, "gamma": 1.0})
    monkeypatch.setattr(npx, "ABLATION_QUICK", {"n": 200, "runs": 2, "epsilons": (1.0, 8.0)})


def _rows(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def _run(name: str):
    exp = {e.name: e for e in npx.EXPERIMENTS}[name]
    return exp(quick=True, seed=0, n_jobs=1, progress=False)


def test_catalogue_names():
    assert {e.name for e in npx.EXPERIMENTS} == {"ma2025-fig7", "ma2025-fig6", "ma2025-fig8-9",
                                                 "ma2025-real", "ma2025-ablation"}


def test_fig7(tiny):
    report = _run("ma2025-fig7")
    rows = _rows(report.table)
    assert [r[0] for r in rows] == ["Uniform", "LDPMAB eps=1", "LDPMAB-aux eps=1",
                                    "LDPMAB eps=1024", "LDPMAB-aux eps=1024"]
    assert len(rows[0]) == 3  # two n
    assert any("uniform" in n for n in report.notes)
    assert set(report.results) == {"n200", "n300"}


def test_fig6(tiny):
    report = _run("ma2025-fig6")
    rows = _rows(report.table)
    assert len(rows) == 3 * len(npx.FIG6_SETTINGS)
    assert {r[0] for r in rows} == set(npx.FIG6_SETTINGS)
    values = [float(v) for r in rows for v in r[2:]]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert set(report.results) == set(npx.FIG6_SETTINGS)  # each setting's regret is saved


def test_fig8_9(tiny):
    report = _run("ma2025-fig8-9")
    rows = _rows(report.table)
    panels = [r[0] for r in rows]
    assert panels[:2] == ["reference", "reference"]
    assert panels.count("eps_m") == len(npx.EPS_M_QUICK)
    assert panels.count("gamma") == len(npx.GAMMAS_QUICK) * len(npx.LOW_HIGH)
    assert panels.count("kappa") == len(npx.KAPPAS_QUICK) * len(npx.LOW_HIGH)
    assert sorted(r[2] for r in rows if r[0] == "order") == ["high first", "low first"]
    # files named by their table row, not by position
    assert "order_eps-1_n_m-100_high-first" in report.results
    assert not any("," in name or name.split("_")[-1].isdigit() for name in report.results)


def test_real(tiny):
    report = _run("ma2025-real")
    rows = _rows(report.table)
    assert len(rows) == 1 and rows[0][:3] == ["iris", "4", "8"]
    assert all(float(v) > 0 for v in rows[0][3:])
    assert report.has_figure


def test_ablation(tiny):
    report = _run("ma2025-ablation")
    rows = _rows(report.table)
    assert [r[0] for r in rows] == ["1", "8"]
    assert len(rows[0]) == len(npx.VARIANTS) + 2
    assert any("NOT locally private" in n for n in report.notes)


# --------------------------------------------------------------------------- the ablation agent


def _play(agent, seed=0, n=600):
    rng = np.random.default_rng(seed)
    x = rng.random((agent.num_envs, n + 1, 2))
    r = (rng.random((agent.num_envs, n, 3)) < 0.5) * 1.0
    return agent.play_block(x, r)


@pytest.mark.parametrize("departures", [("reused_sums",), ("noise_in_bin",),
                                        ("reused_sums", "noise_in_bin")])
def test_departures_differ_from_faithful(departures):
    kw = dict(epsilon=8.0, horizon=600, num_envs=3, seed=1, warmup=5)
    faithful, ablated = LDPMAB(3, **kw), LDPMAB(3, departures=departures, **kw)
    a, b = _play(faithful), _play(ablated)
    assert not (np.array_equal(a, b) and np.array_equal(faithful.indicator_sums, ablated.indicator_sums))
    assert faithful.privacy is not None and ablated.privacy is None
    assert "NOT PRIVATE" in repr(ablated)
    assert ablated.departures == tuple(d for d in ("reused_sums", "noise_in_bin")
                                       if d in departures)
    if "reused_sums" in departures:
        assert ablated.reused_sums.size and np.abs(ablated.reused_sums).sum() > 0
    assert faithful.reused_sums.size == 0


def test_noise_in_bin_report_has_exact_zeros_outside_the_bin():
    agent = LDPMAB(3, epsilon=8.0, horizon=1000, num_envs=2, seed=0, warmup=3, max_depth=3,
                   departures=("noise_in_bin",))
    _play(agent, n=400)
    obs = np.array([[0.1, 0.1], [0.9, 0.9]])
    msg = agent.local_report(obs, agent.act(obs), np.ones(2), obs, agent.public_state())
    own = agent.bin_of(obs)
    for i in range(2):
        for j, b in enumerate(msg["bins"][i]):
            if b >= 0 and b != own[i]:
                assert (msg["U"][i, j] == 0).all() and (msg["V"][i, j] == 0).all()
            elif b == own[i]:
                assert (msg["U"][i, j] != 0).any()


def test_aux_agent_takes_departures():
    agent = LDPMABAux(3, epsilon=2.0, horizon=300, seed=0, departures=["reused_sums"])
    assert agent.privacy is None and agent.departures == ("reused_sums",)


@pytest.mark.parametrize("kwargs, name", [
    ({"departures": "reused_sums"}, "departures"),
    ({"departures": ("reused_sums", "bogus")}, "departures"),
    ({"departures": ("noise_in_bin", "noise_in_bin")}, "departures"),
    ({"departures": 3}, "departures"),
    ({"departure_batch": 0}, "departure_batch"),
    ({"departure_batch": 2.5}, "departure_batch"),
    ({"departures": ("reused_sums",), "secure": True}, "departures"),
])
def test_bad_departures_refused(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        LDPMAB(3, epsilon=1.0, horizon=100, **kwargs)
