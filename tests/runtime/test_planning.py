"""The plan a run executes, and the report a run writes beside its predictions."""
from __future__ import annotations

import json

import pytest

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.errors import PlanningError, UserError
from pearl_py.pipeline.planning import resolve_plan

TINY = dict(net_arch=[16], batch_size=16, learning_starts=100, train_freq=50, gradient_steps=5, buffer_size=2_000)


def test_local_plan_pins_every_kernel_to_the_cpu_and_predicts_it():
    plan = resolve_plan(pearl.DQN("CartPole-v1", **TINY), "local")
    assert {p.device for p in plan.placements.values()} == {"cpu"}
    assert plan.mode == "serialized" and plan.prediction.samples_per_s > 0


def test_run_under_local_plan_writes_result_and_predicted_vs_measured_report(tmp_path):
    result = pearl.train(pearl.DQN("CartPole-v1", **TINY), total_steps=300, plan="local", out=tmp_path,
                         eval_episodes=1, progress=False, log=lambda _: None)
    assert {p.name for p in tmp_path.iterdir()} >= {"result.json", "plan.yaml", "plan.json", "report.md",
                                                     "report.html"}
    report = (tmp_path / "report.md").read_text()
    assert "## Predicted and measured" in report and "| env_step | cpu / reference |" in report
    assert f"| env steps (measured) | {result.env_steps} |" in report
    html = (tmp_path / "report.html").read_text()
    assert "Time per collected sample, by kernel" in html and "<svg" in html
    data = json.loads((tmp_path / "result.json").read_text())
    assert data["plan"]["prediction"]["figures"]["samples_per_s"] == pytest.approx(
        json.loads((tmp_path / "prediction.json").read_text())["figures"]["samples_per_s"])


def test_saved_plan_round_trips_and_runs(tmp_path):
    algo = pearl.DQN("CartPole-v1", **TINY)
    plan = resolve_plan(algo, "local")
    pearl.export_plan(plan, tmp_path / "p")
    loaded = pearl.load_plan(tmp_path / "p" / "plan.yaml")
    assert loaded.placements == plan.placements
    assert pearl.load_plan(tmp_path / "p" / "plan.json").placements == plan.placements
    result = pearl.train(algo, total_steps=150, plan=tmp_path / "p" / "plan.yaml", eval_episodes=1,
                         progress=False)
    assert result.plan["placements"] == plan.to_dict()["placements"]


@pytest.mark.parametrize("text, message", [
    ("platform: local\nobjective: throughput\n", "plan.yaml:1: missing key 'placements'"),
    ("platform: local\nobjective: x\nplacements:\n  env_step: {variant: reference}\n",
     "plan.yaml:4: placements.env_step: needs a device"),
    ("platform: local\nobjective: x\nplacements:\n  env_step: {device: cpu, replicas: 0}\n",
     "plan.yaml:4: placements.env_step.replicas: must be an integer >= 1, got 0"),
    ("platform: local\nobjective: x\nplacements:\n  env_step: {device: cpu, colour: red}\n",
     "plan.yaml:4: placements.env_step.colour: unknown key; a placement has device, variant, replicas"),
])
def test_bad_plan_files_name_file_line_and_key(write_config, text, message):
    with pytest.raises(UserError) as err:
        pearl.load_plan(write_config(text, "plan.yaml"))
    assert str(err.value).endswith(message)


def test_cli_plan_flag_with_bad_file_exits_2(write_config, tmp_path, capsys):
    config = write_config("algorithm: dqn\nenv: CartPole-v1\ntotal_steps: 1000\n")
    bad = write_config("- just\n- a list\n", "plan.yaml")
    assert main(["run", str(config), "--plan", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "plan.yaml:1: a plan file is a mapping" in capsys.readouterr().err
    assert not (tmp_path / "o" / "result.json").exists()


def test_unknown_plan_word_is_refused():
    with pytest.raises(PlanningError, match="expected 'auto', 'local', 'serial'"):
        resolve_plan(pearl.DQN("CartPole-v1", **TINY), "fastest")


def test_variants_follow_the_declared_loss_forms_not_the_class():
    class Renamed(pearl.DQN):  # a subclass that keeps DQN's losses: the fused kernels implement them
        name = "renamed-dqn-test"

    class OwnLoss(pearl.DQN):  # DQN's loss overridden: DQN's declared form no longer holds ("custom")
        name = "own-loss-dqn-test"

        def _q_loss(self, nets, batch):
            loss, td = super()._q_loss(nets, batch)
            return 2 * loss, td

    kept = resolve_plan(Renamed("CartPole-v1", **TINY), "local", total_steps=1_000_000)
    assert "fused" not in str(kept.prediction.variant_notes.get("learner_update", ()))
    plan = resolve_plan(OwnLoss("CartPole-v1", **TINY), "local", total_steps=1_000_000)
    assert plan.placements["learner_update"].variant != "fused"
    notes = plan.prediction.variant_notes["learner_update"]
    assert "learner_update: variant 'fused' not offered on cpu: implements the forms dqn_td | " \
           "ddpg_critic+dpg_actor | td3_critic+td3_actor | sac_critic+sac_actor+sac_entropy | sac_critic+sac_actor; " \
           "this kernel computes custom (use the reference variant)" in notes, notes


@pytest.mark.parametrize("make_algo", [lambda: pearl.TD3("Pendulum-v1", **TINY),
                                       lambda: pearl.SAC("Pendulum-v1", **TINY),
                                       lambda: pearl.SAC("Pendulum-v1", ent_coef=0.1, **TINY)])
def test_td3_and_sac_are_offered_the_fused_variants(make_algo):
    plan = resolve_plan(make_algo(), "local", total_steps=1_000_000)
    assert "fused" not in str(plan.prediction.variant_notes)


def test_an_interrupted_parallel_run_leaves_its_plan_for_resume(write_config, tmp_path, monkeypatch, capsys):
    from pearl_py.runtime.parallel import ParallelExecutor

    config = write_config("algorithm: dqn\nenv: CartPole-v1\ntotal_steps: 300\nhyperparameters:\n  net_arch: [16]\n")
    algo = pearl.DQN("CartPole-v1", net_arch=[16])
    plan = pearl.plan(algo, "local")  # overlapped: runs on the parallel executor
    assert plan.mode == "overlapped"
    pearl.export_plan(plan, tmp_path / "given")
    seen = {}

    def stop(self, total_steps):
        seen.update(resume_from=self.resume_from, placements=self.plan.placements)
        (self.out_dir / "checkpoint").mkdir(parents=True, exist_ok=True)
        (self.out_dir / "checkpoint" / "checkpoint.pt").touch()  # where the real run writes its checkpoint
        raise KeyboardInterrupt(f"interrupted; checkpoint written to {self.out_dir / 'checkpoint'}")

    monkeypatch.setattr(ParallelExecutor, "run", stop)
    out = tmp_path / "out"
    assert main(["run", str(config), "--plan", str(tmp_path / "given" / "plan.yaml"), "--out", str(out)]) == 130
    assert f"pearl: interrupted; checkpoint written to {out / 'checkpoint'}" in capsys.readouterr().err
    assert pearl.load_plan(out / "plan.yaml").placements == plan.placements
    assert not (out / "result.json").exists()
    assert main(["run", str(config), "--resume", str(out)]) == 130
    assert seen["resume_from"] == out and seen["placements"] == plan.placements


@pytest.fixture
def modelled_machine(tmp_path, monkeypatch):
    """A cached calibration with no model: every cost modelled, the process start the assumed 2.5 s."""
    from pearl_py.estimate.calibration import Calibration, machine_fingerprint

    monkeypatch.setenv("PEARL_CACHE_DIR", str(tmp_path / "cache"))
    Calibration(machine_fingerprint()).save()


def test_auto_keeps_the_mode_that_is_faster_over_the_run(modelled_machine):
    from pearl_py.pipeline.planning import auto_plan

    algo = pearl.PPO("CartPole-v1", n_envs=4, n_steps=32, batch_size=64, n_epochs=2, net_arch=[16])
    short = auto_plan(algo, total_steps=1_024)
    assert short.mode == "serialized" and short.prediction.run.startup_s == 0.0
    parallel = resolve_plan(algo, "auto", total_steps=1_024, one_process=False, log=lambda line: None)
    assert parallel.mode == "synchronous" and parallel.prediction.run.startup_s == pytest.approx(2.5)
    assert parallel.prediction.run.seconds > short.prediction.run.seconds  # why the serialized plan won
    # without the run's length the steady states compare; equal on one CPU, the parallel plan is kept
    assert auto_plan(algo, total_steps=None).mode == "synchronous"


def test_normalize_keeps_the_parallel_plans(modelled_machine):
    """With normalize every family keeps the parallel plan it gets without it, locally and on Ray (their parallel
    runtimes combine the statistics: tests/runtime/parallel/test_normalize_parallel.py,
    tests/runtime/test_ray_backend.py)."""
    from pearl_py.pipeline.planning import auto_plan

    normalized = pearl.DQN("CartPole-v1", normalize=True, **TINY)
    assert auto_plan(normalized, total_steps=None).mode == auto_plan(pearl.DQN("CartPole-v1", **TINY),
                                                                     total_steps=None).mode != "serialized"
    ppo = pearl.PPO("CartPole-v1", normalize=True, n_envs=4, n_steps=32, batch_size=64, n_epochs=2, net_arch=[16])
    assert auto_plan(ppo, total_steps=None).mode == "synchronous"
    assert resolve_plan(normalized, "auto", total_steps=None, one_process=False, log=lambda line: None).mode != \
        "serialized"
