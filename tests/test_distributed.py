"""Sweeps on distributed joblib backends give bitwise the sequential results.

A small sweep (local and global DP agents, a privacy wrapper, two seeds and two budgets) runs
sequentially, then on a ``dask.distributed`` ``LocalCluster`` of two worker processes, and on a
local Ray instance when Ray is installed (extra ``ray``). Every agent's stream is keyed by the
root seed and its name, so where a task runs must not change a single bit of its regret.
"""

import numpy as np
import pytest

from ldp_gym.agents import LDPUCB, UCB1, AdaPKLUCB
from ldp_gym.runner import sweep
from ldp_gym.wrappers.reward import VectorLaplaceReward


def _tasks() -> list[dict]:
    """Eight tiny runs: round by round (LDP-UCB, UCB1 under a Laplace wrapper) and by committed
    blocks (AdaP-KLUCB)."""
    tasks = []
    for eps in (0.5, 1.0):
        for seed in (0, 1):
            tasks.append(dict(env="LDPMAB-v0", horizon=100, n_runs=3, seed=seed, progress=False,
                              agents={"LDP-UCB": (LDPUCB, {"epsilon": eps}),
                                      "AdaP-KLUCB": (AdaPKLUCB, {"epsilon": eps}),
                                      "UCB1": UCB1}))
            tasks.append(dict(env="LDPMAB-v0", horizon=100, n_runs=3, seed=seed, progress=False,
                              agents={"UCB1 + Laplace": UCB1},
                              wrappers=[(VectorLaplaceReward, {"epsilon": eps, "seed": seed})]))
    return tasks


@pytest.fixture(scope="module")
def sequential():
    return sweep(_tasks(), n_jobs=1)


def _assert_bitwise_equal(expected, got):
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        assert list(a.regret) == list(b.regret)
        np.testing.assert_array_equal(a.checkpoints, b.checkpoints)
        for name in a.regret:
            assert a.regret[name].dtype == b.regret[name].dtype
            assert a.regret[name].tobytes() == b.regret[name].tobytes(), name
        assert a.meta == b.meta


def test_sweep_on_dask_local_cluster_is_bitwise_sequential(sequential):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            out = sweep(_tasks(), n_jobs=2, backend="dask")
        # the tasks ran on the cluster's worker processes, not in this one
        assert {t["worker"] for t in stream.data} <= set(client.scheduler_info()["workers"])
        assert len(stream.data) > 0
        # without backend=, sweep runs where an enclosing joblib.parallel_config says
        import joblib
        with joblib.parallel_config(backend="dask"), distributed.get_task_stream(client) as inner:
            enclosed = sweep(_tasks(), n_jobs=2)
        assert len(inner.data) > 0
    _assert_bitwise_equal(sequential, out)
    _assert_bitwise_equal(sequential, enclosed)


def test_sweep_on_ray_is_bitwise_sequential(sequential, monkeypatch):
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.util.joblib")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")  # a test sends nothing home
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        out = sweep(_tasks(), n_jobs=2, backend="ray")
    finally:
        ray.shutdown()
    _assert_bitwise_equal(sequential, out)
