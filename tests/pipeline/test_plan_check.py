"""Plan files checked like configs before anything starts: every mistake exits 2 with one line ``file:line: key``.

The cases of issue 14 (truncated, binary, unknown variant, a kernel the algorithm lacks, a missing kernel,
devices that do not exist, thousands of replicas) each through ``pearl run --plan``: exit code 2, the exact
message, no traceback, no output folder, no child process.
"""
from __future__ import annotations

import dataclasses

import pytest
from pipeline_inputs import CONFIG, PLAN
from process_probes import children

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.errors import ConfigError
from pearl_py.pipeline.plan_check import PlanSource, check_plan, load_checked_plan
from pearl_py.plan import MadeFor, Placement
from pearl_py.platform.local import usable_cores


def run_plan(write_config, tmp_path, capsys, text: str | bytes) -> tuple[int, str]:
    """``pearl run CONFIG --plan plan.yaml``; the exit code and stderr, asserting nothing started or was written."""
    config = write_config(CONFIG)
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(text if isinstance(text, bytes) else text.encode())
    before = children(tracker=True)
    code = main(["run", str(config), "--plan", str(plan), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()
    assert children(tracker=True) <= before, "a process was started"  # the resource tracker never starts either
    return code, err.strip()


@pytest.mark.parametrize("edit, message", [
    (("  inference: {device: cpu, variant: reference", "  inference: {device: cpu, variant: turbo"),
     "plan.yaml:10: placements.inference.variant: no inference variant 'turbo' on a cpu device; valid: reference"),
    (("  param_sync:", "  frobnicate: {device: cpu}\n  param_sync:"),
     "plan.yaml:14: placements.frobnicate: dqn has no kernel 'frobnicate'; its kernels: env_step, inference, "
     "replay_insert, replay_sample, learner_update, param_sync"),
    (("  param_sync:", "  priority_update: {device: cpu}\n  param_sync:"),
     "plan.yaml:14: placements.priority_update: dqn runs no priority_update here: its prioritized_replay is off"),
    (("  learner_update: {device: cpu, variant: reference, replicas: 1}\n", ""),
     "plan.yaml:8: placements: no placement for learner_update; dqn runs env_step, inference, replay_insert, "
     "replay_sample, learner_update, param_sync, each placed once"),
    (("cpu", "tpu"), "plan.yaml:7: devices.tpu: platform 'local' has no device 'tpu'; its devices: cpu"),
    (("device: cpu", "device: tpu"), "plan.yaml:9: placements.env_step.device: platform 'local' has no device 'tpu'"),
    (("  cpu: cpu", "  cpu: gpu"), "plan.yaml:7: devices.cpu: 'cpu' is a cpu device on platform 'local', not a gpu"),
    (("platform: local", "platform: atlantis"), "plan.yaml:2: platform: unknown platform 'atlantis'; known: "),
    (("replay_sample: {device: cpu, variant: reference, replicas: 1}",
      "replay_sample: {device: cpu, variant: reference, replicas: 4}"),
     "plan.yaml:12: placements.replay_sample.replicas: replay_sample does not replicate (one instance serves the "
     "run); must be 1, got 4"),
    (("learner_update: {device: cpu, variant: reference, replicas: 1}",
      "learner_update: {device: cpu, variant: reference, replicas: 999}"),
     f"plan.yaml:13: placements.learner_update.replicas: 999 threads for learner_update, but 'cpu' has "
     f"{usable_cores()} usable cores; valid: 1 to {usable_cores()}"),
    (("env_step: {device: cpu, variant: reference, replicas: 1}", "env_step: {device: cpu, variant: reference, "
                                                                   "replicas: 0}"),
     "plan.yaml:9: placements.env_step.replicas: must be an integer >= 1, got 0"),
    (("inference: {device: cpu, variant: reference, replicas: 1}", "inference: {device: cpu, variant: }"),
     "plan.yaml:10: placements.inference.variant: must be a name, got None"),
])
def test_a_bad_plan_exits_2_naming_file_line_and_key(write_config, tmp_path, capsys, edit, message):
    code, err = run_plan(write_config, tmp_path, capsys, PLAN.replace(*edit))
    assert code == 2
    assert err.startswith(f"pearl: error: {tmp_path / message.split(':', 1)[0]}:{message.split(':', 1)[1]}"), err


@pytest.mark.parametrize("cut", [20, 60, 107, 150, 300, 420, len(PLAN) - 40])
def test_a_truncated_plan_exits_2(write_config, tmp_path, capsys, cut):
    code, err = run_plan(write_config, tmp_path, capsys, PLAN[:cut])
    assert code == 2 and err.startswith(f"pearl: error: {tmp_path / 'plan.yaml'}"), err


def test_a_binary_plan_exits_2(write_config, tmp_path, capsys):
    code, err = run_plan(write_config, tmp_path, capsys, b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))  # a newline, then 0x80
    assert (code, err) == (2, f"pearl: error: {tmp_path / 'plan.yaml'}:2: not a text file (byte 0x80 is not UTF-8)")


def test_thousands_of_actors_are_refused_with_the_figures(write_config, tmp_path, capsys):
    from pearl_py.pipeline.admission import process_memory_bytes

    assert process_memory_bytes() > 0   # measured (and cached) before the check, whose probe would start a process
    text = PLAN.replace("env_step: {device: cpu, variant: reference, replicas: 1}",
                        "env_step: {device: cpu, variant: reference, replicas: 5000}")
    code, err = run_plan(write_config, tmp_path, capsys, text)
    assert code == 2
    assert err.startswith(f"pearl: error: {tmp_path / 'plan.yaml'}:9: placements.env_step.replicas: 5000 actor "
                          "processes would take ")
    assert "per process, measured once on this machine" in err and "of memory available here: at most " in err


def test_more_busy_processes_than_cores_need_oversubscribe(write_config, tmp_path, capsys):
    actors = usable_cores() + 1
    text = PLAN.replace("env_step: {device: cpu, variant: reference, replicas: 1}",
                        f"env_step: {{device: cpu, variant: reference, replicas: {actors}}}")
    code, err = run_plan(write_config, tmp_path, capsys, text)
    assert code == 2
    assert f"placements.env_step.replicas: the plan holds {actors} cores ({actors} actor processes; learner with " \
           f"1 thread, {actors} actors) but this machine has {usable_cores()} usable: pass --oversubscribe" in err


def test_a_plan_made_in_python_is_checked_too(tmp_path):
    algo = pearl.DQN("CartPole-v1", net_arch=[16])
    plan = pearl.Plan.single_device(algo.protocol())
    check_plan(plan, algo)  # every kernel on the local CPU: fine
    bad = dataclasses.replace(plan, placements={**plan.placements, "inference": Placement("cpu", "turbo")})
    with pytest.raises(ConfigError, match=r"^plan.placements.inference.variant: no inference variant 'turbo'"):
        pearl.train(algo, total_steps=300, plan=bad)


def test_a_good_plan_file_loads_and_a_simulated_plan_is_not_held_to_this_machine(tmp_path, write_config, capsys):
    algo = pearl.DQN("CartPole-v1", net_arch=[16])
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    assert load_checked_plan(path, algo).placements["env_step"] == Placement("cpu")
    # on a catalogue platform the learner's threads are bounded by that CPU's cores, not this machine's
    made = pearl.plan(algo, pearl.Platform.load("pearl-cpu-gpu-fpga"))
    wide = dataclasses.replace(made, placements={**made.placements, "learner_update": Placement("cpu", replicas=8)})
    check_plan(wide, algo, PlanSource(), runs_here=False)
    with pytest.raises(ConfigError, match="8 threads for learner_update, but 'cpu' has"):
        check_plan(wide, algo)


def test_a_plan_made_for_another_algorithm_or_env_is_refused_by_name(write_config, tmp_path, capsys):
    """Plans record the algorithm, env and kernels they were made for; an older plan file, without the record,
    is checked by its kernels alone (the cases above)."""
    dqn = pearl.DQN("CartPole-v1", net_arch=[16])
    made = pearl.plan(dqn, pearl.Platform.load("pearl-cpu-gpu-fpga"))
    assert made.made_for == MadeFor("dqn", "CartPole-v1", tuple(k.name for k in dqn.protocol().kernels()))
    pearl.export_plan(made, tmp_path / "made")
    plan = tmp_path / "made" / "plan.yaml"
    assert pearl.load_plan(plan).made_for == made.made_for
    sac = write_config("algorithm: sac\nenv: Pendulum-v1\ntotal_steps: 300\n", "sac.yaml")
    assert main(["run", str(sac), "--plan", str(plan), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pearl: error: {plan}:") and err.endswith(
        ": made_for: plan.yaml was made for dqn on CartPole-v1, not sac on Pendulum-v1; make one for this config "
        "with `pearl plan`\n") and not (tmp_path / "out").exists()
    prioritized = pearl.DQN("CartPole-v1", net_arch=[16], prioritized_replay=True)
    with pytest.raises(ConfigError, match=r"made_for.kernels: plan.yaml was made for dqn on CartPole-v1 running "
                                          r"env_step, .*; this config runs .*priority_update"):
        load_checked_plan(plan, prioritized)


def test_a_child_that_failed_before_starting_names_the_main_guard(tmp_path):
    from types import SimpleNamespace

    from pearl_py.runtime.parallel.supervisor import SPAWN_FAILED, _exit_error

    assert _exit_error(SimpleNamespace(exitcode=1), tmp_path / "no-error-file") == SPAWN_FAILED
    assert _exit_error(SimpleNamespace(exitcode=70), tmp_path / "no-error-file") == "exit code 70, no traceback"


@pytest.mark.slow  # each spawned actor imports torch and fails, restarted three times: about 100 s on 2 cores
def test_a_script_without_the_main_guard_is_told_to_add_it(tmp_path):
    """A parallel plan spawns processes that import the script again; without `if __name__ == "__main__":` they
    fail before starting, and the error says what to add."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "plan.yaml").write_text(PLAN)
    script = tmp_path / "train.py"
    script.write_text("import pearl_py as pearl\n"
                      "algo = pearl.DQN('CartPole-v1', learning_starts=100, train_freq=50, gradient_steps=5, "
                      "batch_size=16, net_arch=[16])\n"
                      f"pearl.train(algo, total_steps=500, plan={str(tmp_path / 'plan.yaml')!r}, progress=False)\n")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0
    assert 'must call pearl.train under `if __name__ == "__main__":`' in proc.stderr.splitlines()[-1]
