"""A serialized run that goes on overlapped mid-run (pearl_py/runtime/monitor.py's mode correction, the run session's
checkpoint, pearl_py/pipeline/train.run_switching), without timing: the fake machine's clock moves by the learner's
updates and the env steps, and the learner's 2-thread update slows down 3x after 100 calls."""
from __future__ import annotations

import pytest
from monitor_machines import COST_S, ENV_S, RATES, TINY_DQN, FakeMachine, mode_plan

import pearl_py as pearl
from pearl_py.pipeline.train import make_executor, run_switching
from pearl_py.runtime import monitor as monitor_module
from pearl_py.runtime import serial as serial_module
from pearl_py.runtime.monitor import MODE, AdaptOptions, ModeModel
from pearl_py.runtime.serial import SerialExecutor
from pearl_py.runtime.timing import KernelTimer


def on_the_machine(monkeypatch, machine: FakeMachine) -> None:
    """The serial executor's learner update and env steps cost the fake machine's seconds, on its clock; 2 cores."""
    built = SerialExecutor._learner_update
    monkeypatch.setattr(SerialExecutor, "_learner_update",
                        lambda self, learner, variant=None: machine.wrap(built(self, learner, variant)))

    class EnvOnTheMachine(KernelTimer):
        def add(self, kernel, seconds, calls=1):
            if kernel == "env_step":
                seconds = ENV_S * calls
                machine.now += seconds
            super().add(kernel, seconds, calls)

    monkeypatch.setattr(serial_module, "KernelTimer", EnvOnTheMachine)
    monkeypatch.setattr(monitor_module, "_usable_cores", lambda: 2)


def switching_run(monkeypatch, tmp_path, slow_after: float, adapt: bool = True):
    machine = FakeMachine(slow_after)
    on_the_machine(monkeypatch, machine)
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    rule = AdaptOptions(patience_s=0.5, process_start_s=0.5, clock=machine.clock) if adapt else False
    common = dict(adapt=rule, switch_modes=True, eval_episodes=1, progress=False, out_dir=tmp_path)
    executor = make_executor(algo, mode_plan(algo), 0, **common)
    result, last = run_switching(executor, 2_000, lambda plan, folder: make_executor(algo, plan, 0, resume=folder,
                                                                                      **common))
    return result, last, machine


def test_a_slowed_serialized_run_goes_on_overlapped_at_the_round_it_decided_with_exact_counts(monkeypatch, tmp_path):
    result, executor, machine = switching_run(monkeypatch, tmp_path, slow_after=100)
    threads, mode = result.corrections
    # the thread correction as without modes (learner 2 -> 1 thread), and at the same round boundary the mode: at
    # 1 thread, 12 ms x 0.2 + 2 ms = 4.4 ms an env step serialized against max(2, 2.4, 4.4 / 2) = 2.4 ms overlapped
    # (a round later than without the env's seconds, which dilute the learner's slowdown in the window's ratio)
    assert (threads.change, threads.after, threads.step, threads.updates) == (
        "learner threads 2 -> 1", {"threads": 1}, 200 + 50 * 18, 180)
    assert (mode.step, mode.updates, mode.kernel, mode.switched) == (threads.step, threads.updates, MODE, True)
    assert mode.change == "mode serialized -> overlapped (1 actor)"
    assert mode.before == {"mode": "serialized"}
    assert (mode.after["mode"], mode.after["actors"]) == ("overlapped", 1)
    assert mode.after["per_call_s"] == pytest.approx({"learner_update": COST_S[1], "env_step": ENV_S})
    assert mode.retimed_s == pytest.approx({"serialized": 4.4e-3, "overlapped (1 actor)": 2.4e-3})
    assert mode.predicted_s == pytest.approx(ENV_S + 0.2 * COST_S[2])      # the plan's costs, serialized
    assert "steps left save" in mode.reason and mode.source.startswith("modelled")
    # the serial session ran every update up to the switch, the parallel one the rest: none lost, none repeated
    assert len(machine.threads) == mode.updates and set(machine.threads[-40:]) == {1, 2}   # the re-time's blocks
    assert (result.backend, result.env_steps, result.gradient_steps) == ("local-parallel", 2_000, 360)
    assert result.kernel_times["learner_update"]["calls"] == 360
    assert executor.plan.mode == "overlapped" and executor.plan.placements["env_step"].replicas == 1
    assert (tmp_path / "checkpoint" / "checkpoint.json").is_file() and (tmp_path / "session1").is_dir()


def test_a_quiet_machine_and_no_adapt_stay_serialized(monkeypatch, tmp_path):
    quiet, _, machine = switching_run(monkeypatch, tmp_path / "quiet", slow_after=float("inf"))
    assert quiet.corrections == [] and quiet.backend == "serial" and set(machine.threads) == {2}
    fixed, _, machine = switching_run(monkeypatch, tmp_path / "fixed", slow_after=100, adapt=False)
    assert fixed.corrections == [] and fixed.backend == "serial" and set(machine.threads) == {2}
    assert fixed.gradient_steps == 360


def test_the_other_mode_is_chosen_only_by_a_clear_margin_that_pays_its_start_up():
    model = ModeModel("serialized", RATES, frozenset({"env_step"}), actors=1, units=2, start_s=0.5, total_steps=2_000)
    costs = {"env_step": ENV_S, "learner_update": COST_S[1]}
    assert model.seconds("serialized", costs, 1) == pytest.approx(4.4e-3)
    assert model.seconds("overlapped", costs, 1) == pytest.approx(2.4e-3)
    # at 2 threads beside the actor on 2 cores the learner's threads wait for it: everything in series, no gain
    assert model.seconds("overlapped", costs, 2) == pytest.approx(model.seconds("serialized", costs, 2))
