"""Output folders, resume folders and checkpoints: unusable or foreign ones exit 2 naming the path and the reason,
before any work; an earlier run is replaced only with --overwrite; a finished run is left as it is."""
from __future__ import annotations

import dataclasses
import io
import json
import os
import stat
from pathlib import Path

import pytest
import torch
from pipeline_inputs import CONFIG, PLAN, shm_segments

from pearl_py.cli import main
from pearl_py.errors import UserError
from pearl_py.fileio import atomic_write_text
from pearl_py.pipeline.outputs import (
    check_output_dir,
    check_resume_dir,
    check_run_dir,
    clear_run_state,
)
from pearl_py.runtime.parallel.checkpoint import load_checkpoint


@pytest.fixture
def afile(tmp_path) -> Path:
    path = tmp_path / "afile"
    path.write_text("not a folder")
    return path


@pytest.mark.parametrize("command", ["run", "plan", "simulate"])
@pytest.mark.parametrize("where, reason", [
    ("{afile}", "{afile}: a file, not a folder"),
    ("{afile}/sub", "{afile}/sub: {afile} is a file, so no folder can be made under it"),
    ("/proc/pearl-run", "/proc/pearl-run: under /proc, a kernel file system that holds no files of yours"),
    ("/sys/pearl", "/sys/pearl: under /sys, a kernel file system that holds no files of yours"),
])
def test_an_unusable_out_exits_2_before_any_work(write_config, afile, capsys, command, where, reason):
    argv = [command, str(write_config(CONFIG)), "--out", where.format(afile=afile)]
    if command != "run":
        argv += ["--platform", "pearl-cpu-gpu-fpga"]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"pearl: error: --out {reason.format(afile=afile)}\n"
    assert afile.read_text() == "not a folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder")
def test_an_unwritable_out_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    with pytest.raises(UserError, match="the folder is not writable by this user"):
        check_output_dir(locked)
    with pytest.raises(UserError, match="where it would be made, is not writable by this user"):
        check_output_dir(locked / "new")


def test_an_earlier_run_is_replaced_only_with_overwrite(write_config, tmp_path, capsys):
    config, out = str(write_config(CONFIG)), tmp_path / "out"
    assert main(["run", config, "--steps", "200", "--out", str(out)]) == 0
    first = json.loads((out / "result.json").read_text())
    capsys.readouterr()
    assert main(["run", config, "--steps", "250", "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"pearl: error: --out {out}: the folder already holds a run (")
    assert json.loads((out / "result.json").read_text()) == first  # untouched
    assert main(["run", config, "--steps", "250", "--out", str(out), "--overwrite"]) == 0
    assert json.loads((out / "result.json").read_text())["env_steps"] == 250


def test_overwrite_removes_the_earlier_state_and_keeps_other_files(tmp_path):
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "checkpoint" / "checkpoint.pt").write_bytes(b"x")
    (tmp_path / "session1").mkdir()
    for name in ("result.json", "train.csv", "notes.txt"):
        (tmp_path / name).write_text("old")
    with pytest.raises(UserError, match=r"holds a run \(checkpoint, notes.txt, result.json, session1, \.\.\.\)"):
        check_run_dir(tmp_path, overwrite=False)
    assert check_run_dir(tmp_path, overwrite=True) == tmp_path
    assert clear_run_state(tmp_path) == ["checkpoint", "result.json", "session1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "train.csv"]
    with pytest.raises(UserError, match=r"holds other files \(notes.txt\)"):
        (tmp_path / "train.csv").unlink()
        check_run_dir(tmp_path, overwrite=False)


def test_resume_of_a_finished_run_changes_nothing(write_config, tmp_path, capsys):
    config, out = str(write_config(CONFIG)), tmp_path / "out"
    assert main(["run", config, "--steps", "300", "--out", str(out)]) == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    capsys.readouterr()
    assert main(["run", config, "--resume", str(out)]) == 0
    assert capsys.readouterr().out == f"{out} holds a finished run (300 env steps, result.json); nothing to resume, " \
                                      "nothing changed\n"
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert main(["run", config, "--seed", "4", "--resume", str(out)]) == 2
    assert "it holds a finished run of dqn on CartPole-v1 (seed 0), not of this config's dqn on CartPole-v1 " \
           "(seed 4)" in capsys.readouterr().err


def test_resume_needs_a_folder_with_a_checkpoint(tmp_path, afile):
    with pytest.raises(UserError, match="no such folder"):
        check_resume_dir(tmp_path / "nowhere")
    with pytest.raises(UserError, match="a file, not a run folder"):
        check_resume_dir(afile)
    with pytest.raises(UserError, match=r"no checkpoint there \(.*checkpoint.pt\): only an interrupted run can"):
        check_resume_dir(tmp_path)
    (tmp_path / "result.json").write_text("{not json")
    with pytest.raises(UserError, match="result.json is not a result pearl_py wrote"):
        check_resume_dir(tmp_path)


class Hostile:
    """Unpickling it would run a command."""

    def __reduce__(self):
        return os.system, ("touch /tmp/pearl-hostile-checkpoint-ran",)


def _torch_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("content, reason", [
    (b"", "torch.load failed (EOFError); it is damaged, truncated or not written by pearl_py"),
    (bytes(range(95, 160)) + b"garbage", "torch.load failed (UnpicklingError: Unsupported operand 95); it is "
                                          "damaged, truncated or not written by pearl_py"),
    (b"PK\x03\x04 a truncated zip", "torch.load failed ("),
    (_torch_bytes(Hostile()), "it holds Python objects other than a checkpoint's tensors and arrays (not loaded: "
                              "they could run code)"),
    (_torch_bytes({"state_dict": torch.zeros(2)}), "is not a pearl_py checkpoint of format 1 (found None)"),
    (_torch_bytes([1, 2, 3]), "is not a pearl_py checkpoint of format 1 (found 'list')"),
    (_torch_bytes({"format": 1, "algorithm": "dqn"}), "lacks config: it was written by another version of pearl_py"),
])
def test_a_damaged_or_foreign_checkpoint_is_named(tmp_path, content, reason):
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "checkpoint" / "checkpoint.pt").write_bytes(content)
    with pytest.raises(UserError) as err:
        load_checkpoint(tmp_path)
    assert str(err.value).startswith("resume: ") and reason in str(err.value)
    assert not Path("/tmp/pearl-hostile-checkpoint-ran").exists()


def test_cli_resume_of_a_garbage_checkpoint_exits_2_and_starts_nothing(write_config, tmp_path, capsys):
    run = tmp_path / "run"
    (run / "checkpoint").mkdir(parents=True)
    (run / "plan.yaml").write_text(PLAN)
    (run / "checkpoint" / "checkpoint.pt").write_bytes(b"PK\x03\x04 a truncated zip")
    before = sorted(p.name for p in run.rglob("*"))
    assert main(["run", str(write_config(CONFIG)), "--resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pearl: error: resume: {run / 'checkpoint' / 'checkpoint.pt'} is not a checkpoint "
                          "pearl_py can read: torch.load failed (") and err.count("\n") == 1
    assert sorted(p.name for p in run.rglob("*")) == before
    assert shm_segments() == set()


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "result.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "result.json").stat().st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


@pytest.mark.parametrize("prioritized", [False, True])
def test_a_checkpoint_of_a_run_stopped_before_any_step_loads(tmp_path, prioritized):
    """The checkpoint a run stopped at start-up writes (an empty replay: numpy pickles its arrays' bytes) loads."""
    import pearl_py as pearl
    from pearl_py.algorithms.off_policy.learner import Learner
    from pearl_py.runtime.parallel.checkpoint import (
        Checkpoint,
        Progress,
        save_checkpoint,
    )

    algo = pearl.DQN("CartPole-v1", net_arch=[8], buffer_size=64, batch_size=8, prioritized_replay=prioritized)
    replay = algo.make_replay(seed=0)
    try:
        ckpt = Checkpoint(algorithm=algo.name, env=algo.env_id, config=dataclasses.asdict(algo.config), seed=0,
                          total_steps=100, learner=Learner(algo).state_dict(), replay=replay.state_dict(),
                          progress=Progress(), torch_rng=torch.get_rng_state())
    finally:
        replay.close()
    save_checkpoint(tmp_path / "checkpoint", ckpt)
    loaded = load_checkpoint(tmp_path)
    assert loaded.progress == Progress() and loaded.config == ckpt.config
    assert torch.equal(loaded.torch_rng, ckpt.torch_rng)
