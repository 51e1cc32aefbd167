"""The run's monitor (pearl_py/runtime/monitor.py) without timing: a fake clock that the learner update advances by a
cost that depends on its thread count, and a slowdown injected after a number of calls."""
from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from monitor_machines import COST_S, TINY_DQN, VARIANT_S, FakeMachine, VariantMachine, two_thread_plan, variant_plan

import pearl_py as pearl
from pearl_py.plan import KernelCost, Placement, Plan
from pearl_py.runtime.checkpoints import CheckpointOptions
from pearl_py.runtime.monitor import AdaptOptions
from pearl_py.runtime.serial import SerialExecutor


def run(monkeypatch, slow_after: float, adapt: bool = True, total_steps: int = 2_000):
    machine = FakeMachine(slow_after)
    built = SerialExecutor._learner_update
    monkeypatch.setattr(SerialExecutor, "_learner_update", lambda self, learner: machine.wrap(built(self, learner)))
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    rule = AdaptOptions(patience_s=0.5, clock=machine.clock) if adapt else False
    executor = SerialExecutor(algo, seed=0, plan=two_thread_plan(algo), eval_episodes=1, progress=False, adapt=rule)
    return executor.run(total_steps=total_steps), machine


def test_a_slowdown_at_two_threads_switches_the_learner_to_one_thread_at_a_round_boundary(monkeypatch):
    result, machine = run(monkeypatch, slow_after=100)
    # calls 101.. are 3x: rounds 11, 12, 13 are off (window samples/s 60%, 43%, 33% of the prediction: below 75%);
    # at round 13's end 3 rounds and 0.9 s have passed: re-time rounds 14-17 (blocks of 4, 2 then 1 thread, until
    # 16 calls each: call 32 of the re-time, in round 17), switch at round 17's end (step 200 + 50 * 17)
    assert result.env_steps == 2_000 and result.gradient_steps == 36 * 10
    assert result.kernel_times["learner_update"]["calls"] == 360
    [correction] = result.corrections
    assert (correction.step, correction.updates, correction.switched) == (1_050, 170, True)
    assert correction.change == "learner threads 2 -> 1"
    assert (correction.before, correction.after) == ({"threads": 2}, {"threads": 1})
    assert correction.predicted_s == pytest.approx(COST_S[2]) and correction.measured_s == pytest.approx(3 * COST_S[2])
    assert correction.retimed_s == pytest.approx({"2 threads": 3 * COST_S[2], "1 thread": COST_S[1]})
    assert correction.ratio == pytest.approx(1 / 3)
    assert "more than 25% below for 3 rounds" in correction.reason
    assert machine.threads[:130] == [2] * 130                               # rounds 1-13 as planned
    assert machine.threads[130:162] == ([2] * 4 + [1] * 4) * 4                # the re-time's blocks
    assert set(machine.threads[162:170]) == {2} and set(machine.threads[170:]) == {1}
    assert json.loads(json.dumps(result.to_dict()))["corrections"][0]["step"] == 1_050
    # the prediction as executed: rounds 18-36 (190 updates) at 1 thread, re-timed at 12 ms against the plan's 10
    extra = result.prediction_as_executed["extra_s"]
    assert extra == pytest.approx(190 * (COST_S[1] - COST_S[2]))
    assert result.prediction_as_executed["samples_per_s"] == pytest.approx(2_000 / (2_000 / 1.0 + extra))


def test_a_quiet_machine_makes_no_correction(monkeypatch):
    result, machine = run(monkeypatch, slow_after=float("inf"), total_steps=1_200)
    assert result.corrections == [] and set(machine.threads) == {2}
    assert result.drift == {}          # the monitor watched: its record is the corrections
    assert result.gradient_steps == 200


def test_no_adapt_runs_the_plan_as_given(monkeypatch):
    result, machine = run(monkeypatch, slow_after=100, adapt=False, total_steps=1_200)   # past the switch at 170
    assert result.corrections == [] and set(machine.threads) == {2}
    assert result.to_dict()["corrections"] == []


def test_the_fused_learner_moves_between_thread_counts_mid_run_with_exact_counts():
    """The real path (no fake clock): a rule that always finds the plan off re-times the fused update at 1 and
    2 threads with the run's own updates and decides at a round boundary; the counts stay the config's."""
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    plan = two_thread_plan(algo)
    plan = dataclasses.replace(plan, placements=dict(plan.placements, learner_update=Placement("cpu", "fused", 2)),
                               prediction=dataclasses.replace(plan.prediction, costs={
                                   "learner_update": {"cpu": {"fused": plan.prediction.costs["learner_update"]["cpu"][
                                       "reference"]}}}))
    always_off = AdaptOptions(threshold=-1e9, patience_rounds=1, patience_s=0.0)
    result = SerialExecutor(algo, seed=0, plan=plan, eval_episodes=1, progress=False, adapt=always_off).run(1_000)
    assert result.env_steps == 1_000 and result.gradient_steps == 160
    first = result.corrections[0]
    # off at round 2 (the first with a window), re-timed in rounds 3-6 (16 calls each, blocks of 4)
    assert first.step == 200 + 50 * 6 and first.updates == 60
    assert set(first.retimed_s) == {"1 thread", "2 threads"} and first.after["threads"] in (1, 2)
    assert torch.get_num_threads() == first.after["threads"] or len(result.corrections) > 1


def test_the_on_policy_serial_executor_runs_the_same_monitor_with_exact_counts():
    from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor, serial_plan

    algo = pearl.PPO("CartPole-v1", n_envs=2, n_steps=16, batch_size=8, n_epochs=2, net_arch=[16])
    plan = serial_plan()
    plan = dataclasses.replace(plan, placements=dict(plan.placements, learner_update=Placement("cpu", "reference", 2)),
                               prediction=two_thread_plan(pearl.DQN("CartPole-v1", **TINY_DQN)).prediction)
    always_off = AdaptOptions(threshold=-1e9, patience_rounds=1, patience_s=0.0)
    result = OnPolicySerialExecutor(algo, seed=0, plan=plan, eval_episodes=1, progress=False,
                                    adapt=always_off).run(32 * 8)
    # 8 rollouts of 32 steps, 2 epochs x 4 minibatches each: 8 updates a rollout; off at rollout 2, re-timed over
    # rollouts 3-6 (32 calls), decided at rollout 6's end
    assert result.env_steps == 256 and result.gradient_steps == 64
    assert (result.corrections[0].step, result.corrections[0].updates) == (6 * 32, 48)



def test_the_parallel_learner_runs_the_same_monitor(monkeypatch):
    """The local parallel runtime's learner (in this process) on the fake machine, slowed from update 41: off at
    rounds 5-7, re-timed over rounds 8-11, switched at round 11's end as the serial executor would; the actors run
    ahead as the schedule allows, so the step is at least the serial one."""
    from pearl_py.kernels import REGISTRY
    from pearl_py.runtime.parallel import ParallelExecutor

    machine = FakeMachine(slow_after=40)
    reference = REGISTRY.get("learner_update", "reference", "cpu")
    monkeypatch.setitem(REGISTRY._variants, ("learner_update", "cpu", "fake"), dataclasses.replace(
        reference, name="fake", builder=lambda learner: machine.wrap(learner.update)))
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    plan = two_thread_plan(pearl.DQN("CartPole-v1", **TINY_DQN))
    plan = dataclasses.replace(plan, mode="overlapped", placements=dict(
        Plan.single_device(algo.protocol()).placements, learner_update=Placement("cpu", "fake", 2)),
        prediction=dataclasses.replace(plan.prediction, costs={"learner_update": {"cpu": {
            "fake": plan.prediction.costs["learner_update"]["cpu"]["reference"]}}}))
    result = ParallelExecutor(algo, plan, seed=0, eval_episodes=1, progress=False,
                              adapt=AdaptOptions(patience_s=0.5, clock=machine.clock)).run(1_000)
    assert result.gradient_steps == 160
    [correction] = result.corrections
    assert (correction.updates, correction.change) == (110, "learner threads 2 -> 1")
    assert correction.step >= 200 + 50 * 11 and set(machine.threads[110:]) == {1}
    assert result.prediction_as_executed is None       # an overlapped plan's is not recomputed (docs/runtime.md)


def test_the_parallel_on_policy_learner_runs_the_same_monitor_with_the_serial_counts():
    """The local parallel on-policy learner (in this process), through the run session: the same rule off at
    rollout 2, re-timed over rollouts 3-6, decided at rollout 6's end, as the serial executor above."""
    from pearl_py.protocol.kernel import ADVANTAGE, ENV_STEP, INFERENCE, LEARNER_UPDATE, PARAM_SYNC, ROLLOUT_INSERT
    from pearl_py.runtime.parallel.on_policy import OnPolicyParallelExecutor

    algo = pearl.PPO("CartPole-v1", n_envs=2, n_steps=16, batch_size=8, n_epochs=2, net_arch=[16])
    placements = {ENV_STEP: Placement("cpu", replicas=1), INFERENCE: Placement("cpu", "reference", 1),
                  ROLLOUT_INSERT: Placement("cpu", replicas=1), ADVANTAGE: Placement("cpu"),
                  LEARNER_UPDATE: Placement("cpu", "reference", 2), PARAM_SYNC: Placement("cpu")}
    plan = Plan(platform="local", objective="throughput", placements=placements, mode="synchronous",
                devices={"cpu": "cpu"}, solver="test",
                prediction=two_thread_plan(pearl.DQN("CartPole-v1", **TINY_DQN)).prediction)
    always_off = AdaptOptions(threshold=-1e9, patience_rounds=1, patience_s=0.0)
    result = OnPolicyParallelExecutor(algo, plan, seed=0, eval_episodes=1, progress=False,
                                      adapt=always_off).run(32 * 8)
    assert result.env_steps == 256 and result.gradient_steps == 64
    assert (result.corrections[0].step, result.corrections[0].updates) == (6 * 32, 48)


def test_a_resumed_run_starts_from_the_corrected_plan(monkeypatch, tmp_path):
    """The checkpoint after the switch (step 1,200) carries the correction: the resumed session keeps it in its
    record and runs the learner at 1 thread from its first update, with no new correction."""
    machine = FakeMachine(slow_after=100)
    built = SerialExecutor._learner_update
    monkeypatch.setattr(SerialExecutor, "_learner_update", lambda self, learner: machine.wrap(built(self, learner)))
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    options = dict(seed=0, plan=two_thread_plan(algo), eval_episodes=1, progress=False, out_dir=tmp_path,
                   checkpoints=CheckpointOptions(every=1_200),
                   adapt=AdaptOptions(patience_s=0.5, clock=machine.clock))
    first = SerialExecutor(algo, **options).run(total_steps=2_000)
    [correction] = first.corrections
    machine.threads.clear()
    resumed = SerialExecutor(pearl.DQN("CartPole-v1", **TINY_DQN), resume_from=tmp_path, **options).run(2_000)
    assert resumed.gradient_steps == first.gradient_steps == 360
    assert resumed.corrections == [correction]
    assert set(machine.threads) == {1} and len(machine.threads) == 360 - 200   # rounds 21-36, all at 1 thread


def test_drift_is_what_an_executor_without_a_monitor_records():
    """Where no monitor watched (a learner off the CPU): result.json's ``drift`` has each predicted kernel's
    measured seconds a call against the plan's (at the planned 2 threads), simulated kernels left out."""
    from pearl_py.runtime.monitor import drift

    plan = two_thread_plan(pearl.DQN("CartPole-v1", **TINY_DQN))
    times = {"learner_update": {"calls": 10, "total_s": 0.3}, "env_step": {"calls": 5, "total_s": 1.0}}
    assert drift(plan, times) == {"learner_update": pytest.approx({"predicted_s": COST_S[2], "measured_s": 0.03,
                                                                   "ratio": 3.0})}
    assert drift(plan, {"learner_update": {"calls": 10, "total_s": 0.1, "source": "modelled"}}) == {}
    assert drift(dataclasses.replace(plan, prediction=None), times) == {}


def test_a_remote_learner_watched_from_the_driver_makes_the_serial_correction():
    """A learner in another process (the Ray backend's) runs each round at ``Monitor.schedule``'s thread counts and
    hands back its calls' seconds (``Monitor.ran``): on the fake machine's slowdown, the serial test's correction and
    thread sequence, call for call."""
    from pearl_py.runtime.monitor import Monitor, ThreadCount

    machine = FakeMachine(slow_after=100)
    monitor = Monitor.of(two_thread_plan(pearl.DQN("CartPole-v1", **TINY_DQN)), ThreadCount(2),
                         AdaptOptions(patience_s=0.5, clock=machine.clock))
    for r in range(1, 37):                    # rounds at vector steps 250, ..., 2000, 10 updates each
        seconds = []
        for n in monitor.schedule(10):        # what the remote learner runs, each call at its count
            machine.threads.append(n)
            seconds.append(COST_S[n] * (3 if n == 2 and len(machine.threads) > machine.slow_after else 1))
            machine.now += seconds[-1]
        monitor.ran(seconds)
        monitor.round_ended(200 + 50 * r, 10 * r)
    [correction] = monitor.corrections
    assert (correction.step, correction.updates, correction.change) == (1_050, 170, "learner threads 2 -> 1")
    assert correction.retimed_s == pytest.approx({"2 threads": 3 * COST_S[2], "1 thread": COST_S[1]})
    assert machine.threads[:130] == [2] * 130 and machine.threads[130:162] == ([2] * 4 + [1] * 4) * 4
    assert set(machine.threads[162:170]) == {2} and set(machine.threads[170:]) == {1}
    assert monitor.schedule(3) == [1, 1, 1] and monitor.threads.n == 1


def test_a_slowdown_of_the_planned_variant_switches_to_the_disputed_one_and_a_resumed_run_keeps_it(monkeypatch,
                                                                                                    tmp_path):
    """The thread test's schedule with variants for options: the switch at the same step and update, the
    updates the learner's own (the fused and reference updates share its memory), and the checkpoint after it (step
    1,200) resumes at the fused update."""
    machine = VariantMachine(slow_after=100)
    built = SerialExecutor._learner_update
    monkeypatch.setattr(SerialExecutor, "_learner_update", lambda self, learner, variant=None: machine.wrap_variant(
        built(self, learner, variant), variant or self.plan.variant("learner_update")))
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    options = dict(seed=0, plan=variant_plan(algo), eval_episodes=1, progress=False, out_dir=tmp_path,
                   checkpoints=CheckpointOptions(every=1_200),
                   adapt=AdaptOptions(patience_s=0.5, clock=machine.clock))
    first = SerialExecutor(algo, **options).run(total_steps=2_000)
    assert first.env_steps == 2_000 and first.gradient_steps == 360
    assert first.kernel_times["learner_update"]["calls"] == 360
    [correction] = first.corrections
    assert (correction.step, correction.updates, correction.switched) == (1_050, 170, True)
    assert correction.change == "learner reference at 1 thread -> fused at 1 thread"
    assert (correction.before, correction.after) == ({"variant": "reference", "threads": 1},
                                                     {"variant": "fused", "threads": 1})
    assert correction.retimed_s == pytest.approx({"reference at 1 thread": 3 * VARIANT_S["reference"],
                                                  "fused at 1 thread": VARIANT_S["fused"]})
    assert machine.threads[:130] == ["reference"] * 130
    assert machine.threads[130:162] == (["reference"] * 4 + ["fused"] * 4) * 4     # the re-time's blocks
    assert set(machine.threads[162:170]) == {"reference"} and set(machine.threads[170:]) == {"fused"}
    assert json.loads(json.dumps(first.to_dict()))["corrections"][0]["after"] == {"variant": "fused", "threads": 1}
    machine.threads.clear()
    resumed = SerialExecutor(pearl.DQN("CartPole-v1", **TINY_DQN), resume_from=tmp_path, **options).run(2_000)
    assert resumed.gradient_steps == 360 and resumed.corrections == [correction]
    assert machine.threads == ["fused"] * (360 - 200)                           # rounds 21-36


def test_a_variant_is_an_option_only_where_disputed_and_without_a_one_off_setup():
    from pearl_py.runtime.monitor import LearnerOption, Monitor, ThreadCount, VariantSwitch

    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    plan = variant_plan(algo)

    def options(fused: KernelCost):
        costs = {"learner_update": {"cpu": {**plan.prediction.costs["learner_update"]["cpu"], "fused": fused}}}
        changed = dataclasses.replace(plan, prediction=dataclasses.replace(plan.prediction, costs=costs))
        built: list[str] = []
        switch = VariantSwitch(ThreadCount(1), "reference", lambda batch: None, built.append)
        return Monitor.of(changed, switch, AdaptOptions()).options, built

    assert options(KernelCost(12e-3, 0.0, "calibrated")) == ((LearnerOption("reference", 1),
                                                             LearnerOption("fused", 1)), [])   # built when first set
    assert options(KernelCost(16e-3, 0.0, "calibrated"))[0] == (1,)                  # 1.6x: not disputed
    assert options(KernelCost(12e-3, 0.0, "calibrated", setup_s=5.0))[0] == (1,)     # a compile mid-run: not offered


def test_the_parallel_learner_switches_to_the_disputed_variant_and_a_resumed_run_keeps_it(monkeypatch, tmp_path):
    """The local parallel learner (in this process) with variants for options, on the fake machine's variant clock:
    the reference slowed from update 41, off at rounds 5-7, re-timed over rounds 8-11 (blocks of 4 of each variant),
    switched to the fused update at round 11's end with every update the learner's own; the checkpoint after it
    resumes at the fused update."""
    from pearl_py.kernels import REGISTRY
    from pearl_py.runtime.parallel import ParallelExecutor
    from pearl_py.runtime.parallel.params import ParamBoard

    machine = VariantMachine(slow_after=40)
    for variant in VARIANT_S:
        real = REGISTRY.get("learner_update", variant, "cpu")
        monkeypatch.setitem(REGISTRY._variants, ("learner_update", "cpu", variant), dataclasses.replace(
            real, builder=lambda learner, real=real, variant=variant: machine.wrap_variant(real.builder(learner),
                                                                                          variant)))
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    plan = variant_plan(algo)
    plan = dataclasses.replace(plan, mode="overlapped", placements=dict(
        Plan.single_device(algo.protocol()).placements, learner_update=plan.placements["learner_update"]))
    options = dict(seed=0, eval_episodes=1, progress=False, out_dir=tmp_path, checkpoints=CheckpointOptions(every=800),
                   adapt=AdaptOptions(patience_s=0.5, clock=machine.clock))
    executor, stale, publish = ParallelExecutor(algo, plan, **options), [], ParamBoard.publish

    def publish_checked(board, state, tag=0):      # the actors get the learner's parameters as they are now
        live = executor.learner.nets.acting_state(algo.acting_networks)
        stale.extend(tag for name in state if not torch.equal(state[name], live[name]))
        publish(board, state, tag)

    monkeypatch.setattr(ParamBoard, "publish", publish_checked)
    first = executor.run(1_000)
    assert (first.env_steps, first.gradient_steps, first.kernel_times["learner_update"]["calls"]) == (1_000, 160, 160)
    assert stale == []          # the fused update's build moved the parameters' storage: publishes follow it
    [correction] = first.corrections
    assert (correction.updates, correction.switched) == (110, True) and correction.step >= 200 + 50 * 11
    assert correction.change == "learner reference at 1 thread -> fused at 1 thread"
    assert (correction.before, correction.after) == ({"variant": "reference", "threads": 1},
                                                     {"variant": "fused", "threads": 1})
    assert correction.retimed_s == pytest.approx({"reference at 1 thread": 3 * VARIANT_S["reference"],
                                                  "fused at 1 thread": VARIANT_S["fused"]})
    assert machine.threads[:70] == ["reference"] * 70
    assert machine.threads[70:102] == (["reference"] * 4 + ["fused"] * 4) * 4     # the re-time's blocks
    assert machine.threads[102:110] == ["reference"] * 8 and machine.threads[110:] == ["fused"] * 50
    machine.threads.clear()
    resumed = ParallelExecutor(pearl.DQN("CartPole-v1", **TINY_DQN), plan, resume_from=tmp_path, **options).run(1_000)
    assert (resumed.env_steps, resumed.gradient_steps, resumed.corrections) == (1_000, 160, [correction])
    assert machine.threads == ["fused"] * (160 - 120)                            # rounds 13-16 (from step 800)


@pytest.mark.parametrize("parallel", [False, True])
def test_the_on_policy_learner_switches_to_the_disputed_variant_and_a_resumed_run_keeps_it(monkeypatch, tmp_path,
                                                                                           parallel):
    """The on-policy executors (the serial one, the local parallel one's learner) with variants for options, on the
    fake machine's variant clock (warm-ups, on throwaway learners, off it): 8 updates a rollout of 32 steps, the
    reference slowed from update 41, switched to the fused step at rollout 12's end with every update the learner's
    own (the fused and reference steps share its memory: tests/kernels/test_fused_on_policy.py); the checkpoint
    after it resumes at the fused step."""
    from pearl_py.kernels import on_policy
    from pearl_py.runtime import on_policy_serial
    from pearl_py.runtime.parallel import on_policy as parallel_on_policy

    machine = VariantMachine(slow_after=40)
    for variant in VARIANT_S:
        real = on_policy.ON_POLICY.get("learner_update", variant, "cpu")
        monkeypatch.setitem(on_policy.ON_POLICY._variants, ("learner_update", "cpu", variant), dataclasses.replace(
            real, builder=lambda learner, real=real, variant=variant: machine.wrap_variant(real.builder(learner),
                                                                                          variant)))
    for module in (on_policy, on_policy_serial, parallel_on_policy):
        monkeypatch.setattr(module, "warm_up", lambda *args, **kwargs: None)

    def ppo():
        return pearl.PPO("CartPole-v1", n_envs=2, n_steps=16, batch_size=8, n_epochs=2, net_arch=[16])

    plan = dataclasses.replace(on_policy_serial.serial_plan(), prediction=variant_plan(ppo()).prediction)
    plan = dataclasses.replace(plan, placements=dict(plan.placements, learner_update=Placement("cpu", "reference", 1)))
    options = dict(seed=0, eval_episodes=1, progress=False, out_dir=tmp_path, checkpoints=CheckpointOptions(every=448),
                   adapt=AdaptOptions(patience_s=0.5, clock=machine.clock))

    def run(**more):
        if parallel:
            return parallel_on_policy.OnPolicyParallelExecutor(ppo(), parallel_plan(plan), **options, **more).run(512)
        return on_policy_serial.OnPolicySerialExecutor(ppo(), plan=plan, **options, **more).run(512)

    first = run()
    assert (first.env_steps, first.gradient_steps, first.kernel_times["learner_update"]["calls"]) == (512, 128, 128)
    [correction] = first.corrections
    # off at rollouts 6-8 (0.72 s), re-timed over rollouts 9-12 (32 calls), switched at rollout 12's end
    assert (correction.step, correction.updates, correction.switched) == (12 * 32, 96, True)
    assert correction.change == "learner reference at 1 thread -> fused at 1 thread"
    assert correction.retimed_s == pytest.approx({"reference at 1 thread": 3 * VARIANT_S["reference"],
                                                  "fused at 1 thread": VARIANT_S["fused"]})
    assert machine.threads == (["reference"] * 64 + (["reference"] * 4 + ["fused"] * 4) * 4
                               + ["fused"] * (128 - 96))
    machine.threads.clear()
    resumed = run(resume_from=tmp_path)
    assert (resumed.env_steps, resumed.gradient_steps, resumed.corrections) == (512, 128, [correction])
    assert machine.threads == ["fused"] * (128 - 14 * 8)                         # rollouts 15-16 (from step 448)


def parallel_plan(plan: Plan) -> Plan:
    """``plan`` (the serial on-policy one) as the local parallel runtime's: one actor process."""
    from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, ROLLOUT_INSERT

    placements = dict(plan.placements, **{ENV_STEP: Placement("cpu", replicas=1),
                                          INFERENCE: Placement("cpu", "reference", 1),
                                          ROLLOUT_INSERT: Placement("cpu", replicas=1)})
    return dataclasses.replace(plan, placements=placements, mode="synchronous")
