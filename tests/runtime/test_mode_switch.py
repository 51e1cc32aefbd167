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
from pearl_py.runtime.parallel import executor as parallel_executor
from pearl_py.runtime.serial import SerialExecutor
from pearl_py.runtime.timing import KernelTimer

CONTENDED_S = 30e-3
"""The overlapped session's seconds an update on the fake machine (its learner contends with the actor)."""


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


def switching_run(monkeypatch, tmp_path, machine: FakeMachine, adapt: bool = True, total_steps: int = 2_000):
    on_the_machine(monkeypatch, machine)
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    rule = AdaptOptions(patience_s=0.5, process_start_s=0.5, clock=machine.clock) if adapt else False
    common = dict(adapt=rule, switch_modes=True, eval_episodes=1, progress=False, out_dir=tmp_path)
    executor = make_executor(algo, mode_plan(algo), 0, **common)
    sessions = []

    def resume_in(plan, folder):
        sessions.append(plan.mode)
        return make_executor(algo, plan, 0, resume=folder, **common)

    result, last = run_switching(executor, total_steps, resume_in)
    return result, sessions


def test_a_slowed_serialized_run_goes_overlapped_and_back_when_measured_slower_with_exact_counts(monkeypatch,
                                                                                                   tmp_path):
    """Serialized, the learner slows down: overlapped at round 18's end. There the learner contends with its actor
    (30 ms an update: 6 ms an env step, above the 4.4 ms serialized figure by more than 15%): back to serialized when
    the session's first window of 3 rounds has measured it, at step 1,300."""
    machine, built, parallel_calls = FakeMachine(slow_after=100), parallel_executor.build_learner_update, []

    def contended(learner, variant):
        update = built(learner, variant)

        def call(batch):
            machine.now += CONTENDED_S
            parallel_calls.append(1)
            return update(batch)
        return call

    monkeypatch.setattr(parallel_executor, "build_learner_update", contended)
    result, sessions = switching_run(monkeypatch, tmp_path, machine)
    threads, there, back = result.corrections
    # the thread correction as without modes (a round later than test_monitor.py's: the env's seconds dilute the
    # learner's slowdown in the window's ratio), and at the same boundary the mode: at 1 thread, 12 ms x 0.2 + 2 ms
    # = 4.4 ms an env step serialized against max(2, 2.4, 4.4 / 2) = 2.4 ms overlapped
    assert (threads.change, threads.after, threads.step, threads.updates) == (
        "learner threads 2 -> 1", {"threads": 1}, 200 + 50 * 18, 180)
    assert (there.step, there.updates, there.kernel, there.switched) == (1_100, 180, MODE, True)
    assert there.change == "mode serialized -> overlapped (1 actor)"
    assert there.before == {"mode": "serialized"}
    assert (there.after["mode"], there.after["actors"]) == ("overlapped", 1)
    assert there.after["per_call_s"] == pytest.approx({"learner_update": COST_S[1], "env_step": ENV_S})
    assert there.retimed_s == pytest.approx({"serialized": 4.4e-3, "overlapped (1 actor)": 2.4e-3})
    assert there.predicted_s == pytest.approx(ENV_S + 0.2 * COST_S[2])      # the plan's costs, serialized
    assert "steps left save" in there.reason and there.source.startswith("modelled")
    # rounds at 1,150 .. 1,300 measured: 10 x 30 ms a 50-step round
    assert (back.step, back.updates, back.kernel, back.change) == (
        1_300, 220, MODE, "mode overlapped (1 actor) -> serialized")
    assert back.retimed_s == pytest.approx({"overlapped (1 actor)": 6e-3, "serialized": 4.4e-3})
    assert "the switch was wrong" in back.reason and sessions == ["overlapped", "serialized"]
    # each session ran its own updates: none lost, none repeated, the counts the config's
    assert len(parallel_calls) == 220 - 180 and len(machine.threads) == 180 + (360 - 220)
    assert set(machine.threads[180:]) == {1}                                 # the corrected threads kept
    assert (result.backend, result.env_steps, result.gradient_steps) == ("serial", 2_000, 360)
    assert result.kernel_times["learner_update"]["calls"] == 360
    assert (tmp_path / "session1").is_dir() and (tmp_path / "session2").is_dir()


def test_a_quiet_machine_stays_serialized_and_no_adapt_never_switches(monkeypatch, tmp_path):
    machine = FakeMachine(slow_after=float("inf"))
    quiet, sessions = switching_run(monkeypatch, tmp_path, machine, total_steps=800)
    assert quiet.corrections == [] and sessions == [] and set(machine.threads) == {2}
    assert (quiet.backend, quiet.gradient_steps) == ("serial", 120)
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    assert not make_executor(algo, mode_plan(algo), 0, adapt=False, switch_modes=True).switch_modes


def test_the_other_mode_is_chosen_only_by_a_clear_margin_that_pays_its_start_up():
    model = ModeModel("serialized", RATES, frozenset({"env_step"}), actors=1, units=2, start_s=0.5, total_steps=2_000)
    costs = {"env_step": ENV_S, "learner_update": COST_S[1]}
    assert model.seconds("serialized", costs, 1, "learner_update") == pytest.approx(4.4e-3)
    assert model.seconds("overlapped", costs, 1, "learner_update") == pytest.approx(2.4e-3)
    # at 2 threads beside the actor on 2 cores the learner's threads wait for it: everything in series, no gain
    in_series = model.seconds("serialized", costs, 2, "learner_update")
    assert model.seconds("overlapped", costs, 2, "learner_update") == pytest.approx(in_series)


def test_the_other_mode_wins_by_what_the_run_measures_not_by_what_the_composition_leaves_out():
    """The planner chose serialized at the planned costs, counting what the composition does not (loops, syncs, the
    policy lag): there the other mode is scaled to no faster; only costs measured apart from the plan move it."""
    model = ModeModel("serialized", RATES, frozenset({"env_step"}), actors=1, units=2, start_s=0.5, total_steps=2_000)
    planned = {"env_step": 0.4e-3, "learner_update": COST_S[1]}   # composed: 2.8 ms serialized, 2.4 ms overlapped
    monitor = monitor_module.Monitor(planned, "learner_update", (1, 2), FixedThreads(1), AdaptOptions(), modes=model)
    anchored = monitor.modes
    assert anchored.anchor == pytest.approx(2.8 / 2.4)
    assert anchored.seconds("overlapped", planned, 1, "learner_update") == pytest.approx(2.8e-3)   # a tie, no gain
    measured = {"env_step": ENV_S, "learner_update": COST_S[1]}   # the env step 5x its plan
    assert anchored.seconds("serialized", measured, 1, "learner_update") == pytest.approx(4.4e-3)
    assert anchored.seconds("overlapped", measured, 1, "learner_update") == pytest.approx(2.8e-3)   # 36% faster
    assert model.anchored(measured, 2, "learner_update").anchor == 1.0   # in series at 2 threads: nothing to scale


class FixedThreads:
    """A thread setting that stays where it is set."""

    def __init__(self, n: int) -> None:
        self.n = n

    def set(self, n: int) -> None:
        self.n = n
