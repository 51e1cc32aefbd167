"""The first `--auto` run profiles only what its plans need; a later run needing more tops the cache up."""
from __future__ import annotations

from pathlib import Path

import pytest

import pearl_py as pearl
from pearl_py.kernels import registry_of
from pearl_py.profile import profiler
from pearl_py.estimate.calibration import Calibration, model_key, network_family
from pearl_py.estimate.fit import FittedModel
from pearl_py.pipeline import planning
from pearl_py.pipeline.planning import CalibrationNeeds

OFF_POLICY_DQN = ("learner_update", "inference", "replay_insert", "replay_sample", "env_step", "param_sync")


def test_a_dqn_cartpole_run_needs_its_own_kernels_env_and_no_cnn():
    needs = CalibrationNeeds.of(pearl.DQN("CartPole-v1"))
    learner = pearl.DQN("CartPole-v1").protocol().kernel("learner_update").workload
    assert needs == CalibrationNeeds(OFF_POLICY_DQN, "off_policy", ("CartPole-v1",), ("mlp",),
                                     workloads=(("learner_update", learner),), max_envs=1)   # what a threaded model is bound on
    assert CalibrationNeeds.of(pearl.PPO("Pendulum-v1")).kinds == (
        "learner_update", "inference", "env_step", "param_sync", "rollout_insert", "advantage")
    assert CalibrationNeeds.of(None) == CalibrationNeeds(profiler.KINDS, None, profiler.CALIBRATED_ENVS,
                                                         ("mlp", "small_cnn", "nature_cnn"))


def test_the_phases_of_a_dqn_cartpole_calibration_leave_out_cnn_pendulum_and_on_policy():
    options = CalibrationNeeds.of(pearl.DQN("CartPole-v1")).profile_options()
    phases = profiler.profile_phases(options["kinds"], False, lambda line: None, options["families_of"],
                                     options["envs"], options["networks"])
    everything = profiler.profile_phases(profiler.KINDS, False, lambda line: None)
    points = [p for _, _, _, grid, _, _ in phases for p in grid]
    assert {family for *_, family in phases} == {"off_policy"}
    assert {p.env_id for p in points if p.kind == "env_step"} == {"CartPole-v1"}
    assert not any(p.frames for p in points) and any(p.frames for _, _, _, g, _, _ in everything for p in g)
    assert "channels_last" not in {variant for _, variant, *_ in phases}
    assert len(points) < sum(len(grid) for _, _, _, grid, _, _ in everything)
    # env_step, one family's code, is timed when an on-policy run asks for it
    on_policy = profiler.profile_phases(("env_step", "advantage"), True, lambda line: None, ("on_policy",),
                                        ("CartPole-v1",), ("mlp",))
    assert {(kind, family) for kind, _, _, _, _, family in on_policy} == {("env_step", "off_policy"),
                                                                          ("advantage", "on_policy")}


class FakeProfile:
    """Records what ``profile`` was asked to calibrate; its result saves nowhere."""

    def __init__(self):
        self.calls: list[dict] = []

    def __call__(self, **options):
        self.calls.append(options)
        return self

    def save(self) -> Path:
        return Path("/nowhere/calibration.json")


@pytest.fixture
def fake_profile(monkeypatch):
    fake = FakeProfile()
    monkeypatch.setattr(profiler, "profile", fake)
    return fake


def _cache(keys: list[str]) -> Calibration:
    model = FittedModel("linear", ("x",), (1e-6, 0.0), "x")
    return Calibration("test", {key: model for key in keys})


def test_the_first_run_profiles_only_what_it_needs(fake_profile, monkeypatch):
    monkeypatch.setattr(Calibration, "load_default", classmethod(lambda cls: None))
    lines: list[str] = []
    planning.ensure_calibration(lines.append, pearl.DQN("CartPole-v1"))
    (options,) = fake_profile.calls
    assert options.pop("log") == lines.append
    assert options == {"kinds": OFF_POLICY_DQN, "families_of": ("off_policy",), "envs": ("CartPole-v1",),
                       "networks": ("mlp",), "max_envs": 1, "skip": {}, "only": None,
                       "workloads": {"learner_update": [pearl.DQN("CartPole-v1").protocol().kernel("learner_update").workload]}}
    assert lines[0] == ("no calibration of this machine is cached: profiling what this run needs once (off_policy's "
                        "kernels learner_update, inference, replay_insert, replay_sample, param_sync; env_step of "
                        "CartPole-v1; `pearl profile` calibrates everything) ...")


def test_a_compiled_update_a_short_run_would_not_pay_back_is_deferred_until_a_run_would(fake_profile, monkeypatch):
    monkeypatch.setattr(Calibration, "load_default", classmethod(lambda cls: None))
    zoo = pearl.DQN("CartPole-v1", train_freq=256, gradient_steps=128)
    planning.ensure_calibration(lambda line: None, zoo, total_steps=50_000)
    (skip,) = [call["skip"] for call in fake_profile.calls]
    assert list(skip) == ["learner_update/compiled"]
    assert skip["learner_update/compiled"].startswith("its modelled one-off setup of 20 s would not pay back in this "
                                                      "run's 25,000 learner_update calls (the model's break-even: ")
    # the cache it made: every reference model, the compiled update deferred
    cache = _cache([model_key(kind, "reference", "CartPole-v1" if kind == "env_step" else None)
                    for kind in OFF_POLICY_DQN])
    cache.meta["deferred"] = skip
    monkeypatch.setattr(Calibration, "load_default", classmethod(lambda cls: cache))
    planning.ensure_calibration(lambda line: None, zoo, total_steps=50_000)
    assert len(fake_profile.calls) == 1                               # the same run again: nothing to add
    planning.ensure_calibration(lambda line: None, zoo, total_steps=50_000_000)
    later = fake_profile.calls[-1]
    assert (later["kinds"], later["only"], later["skip"], later["into"]) == (
        ("learner_update",), ("learner_update/compiled",), {}, cache)
    # meanwhile the estimator says why it does not offer the variant
    from pearl_py.estimate import Estimator

    kernel = zoo.protocol().kernel("learner_update")
    cpu = pearl.Platform.local().by_kind("cpu")[0]
    why = Estimator(cache).unavailable_variants(kernel, cpu)["compiled"]
    assert why.startswith("not calibrated on this machine yet: the first run's calibration deferred it (its modelled "
                          "one-off setup of 20 s")


def test_another_familys_deferred_variant_is_not_this_runs(fake_profile, monkeypatch):
    """A DQN run deferred the off-policy ``learner_update/compiled``: a PPO run (its own ``on_policy/...`` keys) with
    every model it needs profiles nothing, run after run; its own deferred key is still wanted by a long run."""
    ppo = pearl.PPO("CartPole-v1")
    keys = [model_key(kind, "reference", "CartPole-v1" if kind == "env_step" else None,
                      family=network_family(kind, "on_policy")) for kind in CalibrationNeeds.of(ppo).kinds]
    cache = _cache(keys)
    cache.meta["deferred"] = {"learner_update/compiled": "the DQN run's"}
    monkeypatch.setattr(Calibration, "load_default", classmethod(lambda cls: cache))
    planning.ensure_calibration(lambda line: None, ppo, total_steps=100_000)
    assert fake_profile.calls == []
    cache.meta["deferred"]["on_policy/learner_update/compiled"] = "a short PPO run's"
    assert CalibrationNeeds.of(ppo).missing(cache).only == ("on_policy/learner_update/compiled",)


def test_a_deferred_variant_is_left_out_of_the_phases_and_recorded():
    phases = profiler.profile_phases(("learner_update",), True, lambda line: None, ("off_policy",), (), ("mlp",),
                                     skip={"learner_update/compiled": "why"})
    assert "compiled" not in {variant for _, variant, *_ in phases} and "reference" in {v for _, v, *_ in phases}
    only = profiler.profile_phases(("learner_update",), True, lambda line: None, ("off_policy",), (), ("mlp",),
                                   only=("learner_update/compiled",))
    assert {variant for _, variant, *_ in only} <= {"compiled"}


def test_a_later_run_tops_the_cache_up_with_what_it_lacks(fake_profile, monkeypatch):
    dqn = [model_key(kind, "reference", "CartPole-v1" if kind == "env_step" else None) for kind in OFF_POLICY_DQN]
    cache = _cache(dqn)
    monkeypatch.setattr(Calibration, "load_default", classmethod(lambda cls: cache))
    planning.ensure_calibration(lambda line: None, pearl.DQN("CartPole-v1"))
    assert fake_profile.calls == []                                  # all there
    planning.ensure_calibration(lambda line: None, pearl.DDPG("Pendulum-v1"))
    planning.ensure_calibration(lambda line: None, pearl.PPO("CartPole-v1"))
    pendulum, ppo = ({k: v for k, v in call.items() if k not in ("log", "workloads")} for call in fake_profile.calls)
    assert pendulum == {"kinds": ("env_step",), "families_of": ("off_policy",), "envs": ("Pendulum-v1",),
                        "networks": (), "max_envs": 1, "gpus": False, "into": cache, "skip": {}, "only": None}
    assert ppo == {"kinds": ("learner_update", "inference", "rollout_insert", "advantage"),
                   "families_of": ("on_policy",), "envs": (), "networks": ("mlp",), "max_envs": 1, "gpus": False,
                   "into": cache, "skip": {}, "only": None}


def test_every_env_a_run_steps_is_calibrated_and_each_backend_times_the_envs_it_steps():
    frames = pearl.DQN("pearl/Frames-4x10x10-v0")      # outside pearl profile's envs: its step was "modelled"
    needs = CalibrationNeeds.of(frames)
    assert needs.envs == ("pearl/Frames-4x10x10-v0",)
    assert "env_step of pearl/Frames-4x10x10-v0" in needs.describe()
    lacking = needs.missing(_cache([model_key(kind, "reference", "CartPole-v1" if kind == "env_step" else None)
                                    for kind in OFF_POLICY_DQN]))
    assert "env_step" in lacking.kinds and lacking.envs == ("pearl/Frames-4x10x10-v0",)   # and its CNN nets
    env_phases = {variant: {p.env_id for p in grid} for kind, variant, _, grid, _, _ in profiler.profile_phases(
        ("env_step",), True, lambda line: None, ("off_policy",), ("CartPole-v1", "Pendulum-v1"), ("mlp",))}
    # the envpool extra where installed, at every worker thread count this process has the cores for
    pooled = {v.name: {"CartPole-v1"} for v in registry_of("off_policy").variants("env_step", "cpu")
              if v.name.startswith("envpool") and v.available()[0]}
    assert env_phases == {"reference": {"CartPole-v1", "Pendulum-v1"}, "native_vector": {"CartPole-v1"}, **pooled}
