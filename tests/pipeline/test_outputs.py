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
from pipeline_inputs import CONFIG, PLAN
from process_probes import shm_segments

from pearl_py.cli import main
from pearl_py.errors import UserError
from pearl_py.fileio import atomic_write_text
from pearl_py.pipeline.outputs import (
    LOCK_FILE,
    check_output_dir,
    check_resume_dir,
    check_run_dir,
    claim_run_dir,
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
    for name in ("result.json", "train.csv", "report.html", "plan.yaml", "best_policy.pt", "notes.txt"):
        (tmp_path / name).write_text("old")
    with pytest.raises(UserError, match=r"holds a run \(best_policy.pt, checkpoint, notes.txt, plan.yaml, \.\.\.\)"):
        check_run_dir(tmp_path, overwrite=False)
    assert check_run_dir(tmp_path, overwrite=True) == tmp_path
    assert clear_run_state(tmp_path) == ["best_policy.pt", "checkpoint", "plan.yaml", "report.html", "result.json",
                                         "session1", "train.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    with pytest.raises(UserError, match=r"holds other files \(notes.txt\)"):
        check_run_dir(tmp_path, overwrite=False)


def _tiny_dqn():
    import pearl_py as pearl

    return pearl.DQN("CartPole-v1", learning_starts=100, train_freq=50, gradient_steps=5, batch_size=16,
                     net_arch=[16])


def test_pearl_train_follows_the_cli_rule_for_its_out_folder(tmp_path):
    """pearl.train refuses a folder holding an earlier run; overwrite=True clears its stale report and plan."""
    from pearl_py.pipeline.train import train

    out = tmp_path / "out"
    train(_tiny_dqn(), total_steps=200, out=out, eval_episodes=1, log=lambda line: None)
    first = json.loads((out / "result.json").read_text())
    for stale in ("report.html", "report.md", "plan.yaml", "prediction.json"):
        (out / stale).write_text("an earlier run's")
    with pytest.raises(UserError, match=rf"^out {out}: the folder already holds a run \(.*\); pass overwrite=True "
                                        "to replace the run in it, or choose another out$"):
        train(_tiny_dqn(), total_steps=300, out=out, eval_episodes=1, log=lambda line: None)
    assert json.loads((out / "result.json").read_text()) == first
    train(_tiny_dqn(), total_steps=300, out=out, eval_episodes=1, log=lambda line: None, overwrite=True)
    assert json.loads((out / "result.json").read_text())["env_steps"] == 300
    assert not {"report.html", "report.md", "plan.yaml", "prediction.json"} & {p.name for p in out.iterdir()}


def test_a_folder_a_run_is_writing_is_refused_naming_its_pid(write_config, tmp_path, capsys):
    """Two `pearl run` into one --out at once: the second exits 2 naming the first's pid; the first's files are
    its own alone (episodes.csv's steps never go backwards)."""
    import subprocess
    import sys
    import time

    config, out = str(write_config(CONFIG)), tmp_path / "out"
    first = subprocess.Popen([sys.executable, "-m", "pearl_py.cli", "run", config, "--steps", "8000", "--out",
                              str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = out / LOCK_FILE
    deadline = time.monotonic() + 120
    while not (lock.is_file() and lock.read_text().strip()) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert main(["run", config, "--steps", "200", "--out", str(out), "--overwrite"]) == 2
    assert capsys.readouterr().err == (f"pearl: error: --out {out}: a run of process {first.pid} is writing there "
                                       f"({lock}); wait for it to end or choose another --out\n")
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert json.loads((out / "result.json").read_text())["env_steps"] == 8000
    steps = [int(line.split(",")[0]) for line in (out / "episodes.csv").read_text().splitlines()[1:]]
    assert steps == sorted(steps) and not lock.exists()


def test_the_lock_of_a_dead_process_is_taken_over(tmp_path):
    (tmp_path / LOCK_FILE).write_text("999999999\n")  # its process died: the kernel dropped its flock
    with claim_run_dir(tmp_path, overwrite=False) as folder:
        assert folder.path == tmp_path and (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
        with pytest.raises(UserError, match=rf"a run of process {os.getpid()} is writing there"):
            with claim_run_dir(tmp_path, overwrite=True, continues=True):
                pass
    assert not any(tmp_path.iterdir())


def test_a_refused_run_leaves_no_folder_behind(tmp_path):
    from pearl_py.pipeline.train import train

    with pytest.raises(UserError, match="checkpoint_freq needs an output folder"):
        train(_tiny_dqn(), total_steps=200, checkpoint_freq=100)
    with pytest.raises(UserError):
        train(_tiny_dqn(), total_steps=200, out=tmp_path / "new", plan=tmp_path / "missing.yaml",
              log=lambda line: None)
    assert not (tmp_path / "new").exists()


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


@pytest.mark.parametrize("full_at", ["policy.pt", "result.json"])
def test_a_full_disk_is_one_line_and_keeps_what_was_complete(write_config, tmp_path, monkeypatch, capsys, full_at):
    """ENOSPC while writing the policy or the result: exit 2, one line naming the file; the files written before
    it are whole, no temporary file is left."""
    import errno

    from pearl_py.saved_policy import load

    fsync = os.fsync

    def full(fd):
        if os.readlink(f"/proc/self/fd/{fd}").split("/")[-1].startswith(f".{full_at}."):
            raise OSError(errno.ENOSPC, "No space left on device")
        return fsync(fd)

    out = tmp_path / "out"
    monkeypatch.setattr(os, "fsync", full)
    assert main(["run", str(write_config(CONFIG)), "--steps", "200", "--out", str(out)]) == 2
    monkeypatch.undo()
    assert capsys.readouterr().err.splitlines()[-1] == (f"pearl: error: cannot write {out / full_at}: No space left on device; the "
                                       "files written before it are complete, this one was not written (free some "
                                       "space and run again)")
    assert not (out / full_at).exists() and not list(out.glob(".*.tmp"))
    if full_at == "result.json":
        assert load(out).manifest.env_steps == 200  # the policy written before it is whole


def test_a_full_disk_outside_the_atomic_writes_is_one_line(write_config, tmp_path, monkeypatch, capsys):
    import errno

    from pearl_py.runtime.run_log import RunLog

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out" / "episodes.csv"))

    monkeypatch.setattr(RunLog, "episode", full)
    assert main(["run", str(write_config(CONFIG)), "--steps", "200", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (f"pearl: error: No space left on device writing {tmp_path / 'out'}"
                                       "/episodes.csv; the files pearl_py wrote whole before it are kept")
