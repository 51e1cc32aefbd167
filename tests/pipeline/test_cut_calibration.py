"""A cold run's first profile times only its own networks and env counts (an Atari DQN: NatureCNN, no MLP, its env at
1-4 envs), its plan is the plan a full calibration with the same models gives, and a run needing more tops it up."""
from __future__ import annotations

import zlib

import pytest

import pearl_py as pearl
from pearl_py.estimate.calibration import Calibration, model_key, network_family
from pearl_py.estimate.fit import FittedModel
from pearl_py.pipeline import planning
from pearl_py.pipeline.planning import CalibrationNeeds
from pearl_py.profile import profiler
from pearl_py.profile.coverage import COVERS_KEY, coverage

ATARI = "pearl/Frames-4x84x84-v0"      # Atari's frames (NatureCNN), random: no ALE needed
SCALE = {"flops": 1e-10, "batch": 1e-6, "n_envs": 1e-4, "bytes": 1e-9, "elements": 1e-8}
"""Seconds per unit of each kind's primary feature of the synthetic models."""


def _atari(**settings) -> pearl.DQN:
    return pearl.DQN(ATARI, net_arch=[], batch_size=32, buffer_size=100_000, **settings)


def _phases(needs: CalibrationNeeds) -> list:
    options = needs.profile_options()
    return profiler.profile_phases(options["kinds"], False, lambda line: None, options["families_of"],
                                   options["envs"], options["networks"], options["skip"], options["only"],
                                   options["max_envs"])


def _profiled(needs: CalibrationNeeds) -> Calibration:
    """The calibration a profile of ``needs`` would write: a model for every (kind, variant, group, threads) its
    phases fit (each key's own synthetic line) and what each covers."""
    calibration = Calibration("test")
    for kind, variant, threads, points, _, family in _phases(needs):
        groups = {p.env_id if kind == "env_step" else "cnn" if p.frames else None for p in points}
        for group in groups:
            key = model_key(kind, variant, group, threads, family=network_family(kind, family))
            primary = profiler.KIND_FEATURES[kind][0]
            slope = SCALE[primary] * (1 + zlib.crc32(key.encode()) % 5 / 10)
            calibration.models[key] = FittedModel("linear", (primary,), (1e-5, slope), primary)
            covers = coverage(group, points)
            if covers is not None:
                calibration.meta.setdefault(COVERS_KEY, {})[key] = covers
    return calibration


@pytest.fixture(scope="module")
def atari_cut() -> dict:
    """The first profile of an Atari DQN run (:func:`_profiled`), as a dict: each test loads its own copy."""
    return _profiled(CalibrationNeeds.of(_atari(), total_steps=12_000)).to_dict()


def _plan(calibration: Calibration, algorithm, monkeypatch) -> dict:
    """``algorithm``'s plan from ``calibration``, less the solver's own wall time."""
    monkeypatch.setattr(Calibration, "load_default", classmethod(lambda cls: calibration))
    planned = planning.auto_plan(algorithm, total_steps=12_000).to_dict()
    del planned["prediction"]["solver"]["seconds"]
    return planned


def test_an_atari_runs_first_profile_times_its_cnn_and_env_counts_only():
    needs = CalibrationNeeds.of(_atari(), total_steps=12_000)
    assert (needs.networks, needs.envs, needs.max_envs) == (("nature_cnn",), (ATARI,), 1)
    points = [p for *_, grid, _, _ in _phases(needs) for p in grid]
    networks = [p for p in points if p.kind in ("learner_update", "inference")]
    assert networks and all(p.extractor == "nature_cnn" and p.frames == (4, 84, 84) for p in networks)
    assert {(p.env_id, p.batch) for p in points if p.kind == "env_step"} == {(ATARI, 1), (ATARI, 2), (ATARI, 4)}
    everything = [p for *_, grid, _, _ in _phases(CalibrationNeeds.of(None)) for p in grid]
    assert len(points) * 3 < len(everything)
    assert "CNN networks (nature_cnn)" in needs.describe()


def test_the_cut_calibration_plans_as_a_full_one_with_the_same_models(atari_cut, monkeypatch):
    atari = _atari()
    needs = CalibrationNeeds.of(atari, total_steps=12_000)
    cut = Calibration.from_dict(atari_cut)
    full = _profiled(CalibrationNeeds.of(None))
    full.models.update(cut.models)                      # the run's env (not one of pearl profile's) and its lines
    assert len(cut.models) < len(full.models) and "learner_update/reference" not in cut.models
    planned = _plan(cut, atari, monkeypatch)
    assert planned == _plan(full, atari, monkeypatch)
    # the warm run: the cut cache lacks nothing it needs, and plans alike
    assert needs.missing(cut) is None
    assert _plan(Calibration.from_dict(atari_cut), atari, monkeypatch) == planned
    # the test can fail: without the CNN learner's model the plan is costed otherwise
    lacking = Calibration("test", {k: m for k, m in cut.models.items() if not k.startswith("learner_update/")})
    assert _plan(lacking, atari, monkeypatch) != planned


@pytest.mark.parametrize("later, networks, envs, max_envs", [
    (lambda: _atari(n_envs=8), (), (ATARI,), 8),                               # more envs: its step again, to 8
    (lambda: pearl.DQN("pearl/Frames-4x10x10-v0", net_arch=[128]),             # MinAtar's small CNN: both extractors
     ("small_cnn", "nature_cnn"), ("pearl/Frames-4x10x10-v0",), 1),
    (lambda: pearl.DQN("CartPole-v1"), ("mlp",), ("CartPole-v1",), 1),          # a plain MLP
])
def test_a_later_run_needing_more_tops_the_cut_cache_up(atari_cut, later, networks, envs, max_envs):
    cut, needs = Calibration.from_dict(atari_cut), CalibrationNeeds.of(later(), total_steps=12_000)
    lacking = needs.missing(cut)
    assert (lacking.networks, lacking.envs, lacking.max_envs) == (networks, envs, max_envs)
    assert ("learner_update" in lacking.kinds) == bool(networks)
    topped = _profiled(lacking)                          # the top-up: that run now lacks nothing
    cut.models.update(topped.models)
    cut.meta[COVERS_KEY].update(topped.meta.get(COVERS_KEY, {}))
    assert needs.missing(cut) is None


def test_a_profile_records_what_its_env_model_covers(monkeypatch):
    monkeypatch.setattr(profiler, "variants", lambda kind, family="off_policy": ["reference"])
    monkeypatch.setattr(profiler, "profile_loops", lambda calibration, families_of, log: None)
    calibration = profiler.profile(kinds=("env_step",), gpus=False, envs=("CartPole-v1",), max_envs=1)
    assert calibration.models["env_step/reference/CartPole-v1"].n_points == 3
    assert calibration.meta[COVERS_KEY] == {"env_step/reference/CartPole-v1": {"n_envs": 4}}
    # a one-env run lacks no env step there (its other kinds are not in this calibration); an 8-env run does
    assert "env_step" not in CalibrationNeeds.of(pearl.DQN("CartPole-v1")).missing(calibration).kinds
    lacking = CalibrationNeeds.of(pearl.DQN("CartPole-v1", n_envs=8)).missing(calibration)
    assert ("env_step" in lacking.kinds, lacking.envs, lacking.max_envs) == (True, ("CartPole-v1",), 8)
