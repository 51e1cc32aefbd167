"""Micro-benchmarks run the project's real kernels; the profiler fits them; the commands print."""
from __future__ import annotations

import pytest

from pearl_py.cli import profile as profile_command
from pearl_py.cli.devices import devices_main
from pearl_py.estimate.calibration import Calibration
from pearl_py.profile.microbench import OFF_POLICY, BenchPoint, build, families, time_call
from pearl_py.profile.profiler import (
    KINDS,
    calibration_grid,
    fit_measurements,
    heldout_grid,
    measure,
    threads,
)
from pearl_py.protocol import (
    AdvantageWorkload,
    EnvWorkload,
    NetworkWorkload,
    ReplayWorkload,
    RolloutWorkload,
    SyncWorkload,
)

TINY = {
    ("learner_update", "off_policy"): BenchPoint("learner_update", algo="ddpg", width=8, batch=4),
    ("inference", "off_policy"): BenchPoint("inference", width=8, batch=2),
    ("replay_insert", "off_policy"): BenchPoint("replay_insert", capacity=64, batch=2, prioritized=True),
    ("replay_sample", "off_policy"): BenchPoint("replay_sample", capacity=64, batch=4),
    ("priority_update", "off_policy"): BenchPoint("priority_update", capacity=64, batch=4, prioritized=True),
    ("env_step", "off_policy"): BenchPoint("env_step", env_id="CartPole-v1", batch=2),
    ("param_sync", "off_policy"): BenchPoint("param_sync", nbytes=4096),
    ("learner_update", "on_policy"): BenchPoint("learner_update", algo="ppo", width=8, batch=4),
    ("inference", "on_policy"): BenchPoint("inference", algo="a2c", env_id="Pendulum-v1", width=8, batch=2),
    ("rollout_insert", "on_policy"): BenchPoint("rollout_insert", capacity=4, batch=2),
    ("advantage", "on_policy"): BenchPoint("advantage", capacity=5, batch=3),
}
EXPECTED = {"learner_update": NetworkWorkload, "inference": NetworkWorkload, "env_step": EnvWorkload,
            "replay_insert": ReplayWorkload, "replay_sample": ReplayWorkload, "priority_update": ReplayWorkload,
            "param_sync": SyncWorkload, "rollout_insert": RolloutWorkload, "advantage": AdvantageWorkload}


@pytest.mark.parametrize(("kind", "family"), [(k, f) for k in KINDS for f in families(k)])
def test_every_kind_runs_its_real_kernel(kind, family):
    workload, call = build(kind, "reference", TINY[kind, family], family)
    call()
    assert isinstance(workload, EXPECTED[kind])
    assert getattr(workload, "family", family) == family      # a network workload says whose code it is
    assert time_call(call, target_s=0.002, samples=2) > 0


def test_heldout_grid_shares_no_point_with_calibration():
    for kind in KINDS:
        for family in families(kind):
            assert not set(calibration_grid(kind, family=family)) & set(heldout_grid(kind, family=family))


def test_measure_and_fit_one_model_per_env():
    points = [BenchPoint("env_step", env_id=e, batch=n) for e in ("CartPole-v1", "Pendulum-v1") for n in (1, 2, 4)]
    models = fit_measurements("env_step", measure("env_step", "reference", points, passes=1, family=OFF_POLICY))
    assert set(models) == {"CartPole-v1", "Pendulum-v1"}


def test_one_thread_restores(monkeypatch):
    import torch

    before = torch.get_num_threads()
    with threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_profile_main_writes_the_calibration(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(profile_command, "profile", lambda quick, log: Calibration("x", meta={"quick": quick}))
    out = tmp_path / "cal.json"
    assert profile_command.profile_main(str(out), quick=True) == 0
    assert Calibration.load(out).meta["quick"] is True and "calibration written to" in capsys.readouterr().out


def test_devices_main_lists_catalogue_and_local(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PEARL_CACHE_DIR", str(tmp_path))
    assert devices_main() == 0
    out = capsys.readouterr().out
    for name in ("agilex-agf014", "h100-sxm5-80gb", "epyc-9654", "cluster-64x8gpu", "bypass-40gbe", "This machine"):
        assert name in out
    assert "not calibrated: run `pearl profile`" in out
