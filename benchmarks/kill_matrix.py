"""The kill matrix: a parallel run's process sent SIGINT, SIGTERM or SIGKILL, or one of its actors SIGKILL, at
start-up, mid-run and during a checkpoint; what each case leaves: processes, shared-memory segments, checkpoint.

Usage::

    python benchmarks/kill_matrix.py                                  # every case, as a table (a few minutes)
    python benchmarks/kill_matrix.py --phase start-up --signal SIGKILL  # one case

No timing is measured: each case drives a real run into its phase, sends the signal, waits for the run
and every process it started to end, and inspects what is left. The run's process is this file started
with ``--drive DIR``: a DQN on CartPole with one actor process (the local parallel runtime), its logs and
checkpoint in ``DIR``. It writes ``DIR/training`` once the learner has updated (mid-run) and, in the
checkpoint phase (``--pause``), ``DIR/checkpointing`` right before the checkpoint file would be committed
(its data written to the temporary file, before the fsync and the rename), where it waits for ``DIR/go``:
the signal lands in the middle of the checkpoint. Phases:

* ``start-up``: the signal as soon as the actor process exists (it is still importing torch; the
  table says whether it had attached to its ring, which would mean the phase was missed);
* ``mid-run``: once the learner has updated;
* ``checkpoint``: SIGINT first (the run stops and checkpoints), then the signal mid-checkpoint (a second
  SIGINT or a SIGTERM interrupts the checkpoint at once; for an actor's SIGKILL the checkpoint then
  completes).

Processes left: the run's own and every process it started (actors, its guard, multiprocessing's
resource tracker) still alive 30 s after the run ended. Segments left: the ``/dev/shm`` files the run's
process had mapped (its rings, control block, parameter board, semaphores) still there 30 s after.
Checkpoint: ``complete`` (it loads, with how many transitions), ``none``, or ``damaged`` (it does not load).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PHASES = ("start-up", "mid-run", "checkpoint")
SIGNALS = ("SIGINT", "SIGTERM", "SIGKILL", "SIGKILL actor")
SETTLE_S = 30.0
"""Longest wait for leftovers to go away after the run's process ended (a bound, not a measurement)."""
PHASE_TIMEOUT_S = 300.0
"""Longest wait for a run to reach its phase (its imports take seconds on a busy machine)."""
TOTAL_STEPS = 3_000


@dataclass(frozen=True)
class Outcome:
    """What one case left behind."""

    phase: str
    signal: str
    exit_code: int | None
    """The run's exit code (negative: killed by that signal); None if it never ended."""
    hit: bool
    """Whether the signal landed in the phase (start-up: the actor had not attached to its ring yet)."""
    processes_left: int
    segments_left: int
    checkpoint: str

    @property
    def clean(self) -> bool:
        return self.processes_left == 0 and self.segments_left == 0 and not self.checkpoint.startswith("damaged")


# -- the run's process ---------------------------------------------------------------------------------------------
def drive(folder: Path, pause: bool) -> int:
    """The run under test (see the module docstring); its exit code: 0 finished, 130 interrupted. ``pause``: the
    checkpoint's commit waits for ``folder/go``."""
    import pearl_py as pearl
    from pearl_py.runtime.parallel import ParallelExecutor, RunInterrupted

    if pause:
        _pause_checkpoint_commit(folder)
    algo = pearl.DQN("CartPole-v1", net_arch=[16], batch_size=16, learning_starts=200, train_freq=50,
                     gradient_steps=5, buffer_size=5_000, target_update_interval=100)
    plan = pearl.Plan.single_device(algo.protocol())
    executor = ParallelExecutor(algo, plan, seed=0, out_dir=folder, eval_episodes=1, progress=False)

    def note_training() -> None:
        while not (executor.learner is not None and executor.learner.gradient_steps > 0):
            time.sleep(0.01)
        (folder / "training").touch()

    threading.Thread(target=note_training, daemon=True).start()
    try:
        executor.run(TOTAL_STEPS)
    except (RunInterrupted, KeyboardInterrupt) as stop:
        print(f"interrupted: {stop}", file=sys.stderr)
        return 130
    return 0


def _pause_checkpoint_commit(folder: Path) -> None:
    """Make the checkpoint's commit wait, once its data is in the temporary file, until ``folder/go`` exists."""
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if ".checkpoint.pt." in os.readlink(f"/proc/self/fd/{fd}"):
            (folder / "checkpointing").touch()
            deadline = time.monotonic() + PHASE_TIMEOUT_S
            while not (folder / "go").exists() and time.monotonic() < deadline:
                time.sleep(0.02)  # a signal's handler runs here: a second SIGINT interrupts the checkpoint
        real_fsync(fd)

    os.fsync = fsync


# -- the harness -----------------------------------------------------------------------------------------------------
def run_case(phase: str, signal_name: str, folder: Path) -> Outcome:
    """Start a run in ``folder``, send ``signal_name`` in ``phase``, wait for the end, inspect the leftovers."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    pause = ["--pause"] if phase == "checkpoint" else []
    run = subprocess.Popen([sys.executable, __file__, "--drive", str(folder), *pause], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    watch = Watch(run.pid)
    try:
        hit = _reach_and_signal(run, watch, phase, signal_name, folder)
        exit_code = _wait(run, watch)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    processes, segments = watch.leftovers()
    return Outcome(phase, signal_name, exit_code, hit, processes, segments, _checkpoint_state(folder))


def _reach_and_signal(run: subprocess.Popen, watch: Watch, phase: str, signal_name: str, folder: Path) -> bool:
    """Wait for ``phase``, send the signal; whether it landed in the phase."""
    number = signal.SIGKILL if signal_name.startswith("SIGKILL") else getattr(signal, signal_name)
    if phase == "start-up":
        actor = watch.until(lambda: watch.actor(), run)
        hit = not watch.attached(actor)
        os.kill(actor if signal_name == "SIGKILL actor" else run.pid, number)
        return hit
    watch.until(lambda: (folder / "training").exists(), run)
    if phase == "mid-run":
        target = watch.actor() if signal_name == "SIGKILL actor" else run.pid
        os.kill(target, number)
        return run.poll() is None
    os.kill(run.pid, signal.SIGINT)  # the run stops and checkpoints
    watch.until(lambda: (folder / "checkpointing").exists(), run)
    os.kill(watch.actor() if signal_name == "SIGKILL actor" else run.pid, number)
    if signal_name == "SIGKILL actor":
        (folder / "go").touch()
    return not (folder / "checkpoint" / "checkpoint.pt").exists()


def _wait(run: subprocess.Popen, watch: Watch) -> int | None:
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    while run.poll() is None and time.monotonic() < deadline:
        watch.look()
        time.sleep(0.02)
    return run.poll()


class Watch:
    """Everything the run's process started and the ``/dev/shm`` files it mapped, noted while it lives."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.processes: dict[int, str] = {}
        self.segments: set[str] = set()

    def look(self) -> None:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    if int(fields[1]) == self.pid:
                        self.processes[int(entry.name)] = (entry / "cmdline").read_bytes().decode(errors="replace")
                except OSError:
                    continue
        try:
            maps = Path(f"/proc/{self.pid}/maps").read_text()
        except OSError:
            return
        self.segments |= {line.split()[-1] for line in maps.splitlines() if "/dev/shm/" in line}

    def actor(self) -> int | None:
        """A live actor process (a spawned child), or None."""
        self.look()
        return next((pid for pid, cmd in self.processes.items() if "spawn_main" in cmd and _alive(pid)), None)

    @staticmethod
    def attached(pid: int) -> bool:
        """Whether process ``pid`` has mapped a pearl_py segment (its ring): it is past its start-up."""
        try:
            return "/dev/shm/pearl-" in Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            return False

    def until(self, condition, run: subprocess.Popen):
        """Poll ``condition`` (noting processes meanwhile) until it holds; the run ending first is an error."""
        deadline = time.monotonic() + PHASE_TIMEOUT_S
        while time.monotonic() < deadline:
            self.look()
            value = condition()
            if value:
                return value
            if run.poll() is not None:
                raise RuntimeError(f"the run ended (exit {run.returncode}) before the phase was reached")
            time.sleep(0.01)
        raise RuntimeError("the run did not reach the phase in time")

    def leftovers(self) -> tuple[int, int]:
        """Processes and segments still there, waiting up to ``SETTLE_S`` for them to go."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            processes = [pid for pid in self.processes if _alive(pid)]
            segments = [path for path in self.segments if Path(path).exists()]
            if not (processes or segments) or time.monotonic() > deadline:
                return len(processes), len(segments)
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _checkpoint_state(folder: Path) -> str:
    from pearl_py.errors import UserError
    from pearl_py.runtime.parallel.checkpoint import load_checkpoint

    if not (folder / "checkpoint" / "checkpoint.pt").exists():
        temporary = list((folder / "checkpoint").glob(".checkpoint.pt.*")) if (folder / "checkpoint").is_dir() else []
        return "none" + (" (its temporary file stays until the next save)" if temporary else "")
    try:
        return f"complete ({load_checkpoint(folder).progress.transitions} transitions)"
    except UserError as exc:
        return f"damaged: {exc}"


def table(outcomes: list[Outcome]) -> str:
    """The matrix as a Markdown table."""
    rows = ["| phase | signal | run's exit | in phase | processes left | segments left | checkpoint |",
            "|---|---|---|---|---|---|---|"]
    for o in outcomes:
        rows.append(f"| {o.phase} | {o.signal} | {o.exit_code} | {'yes' if o.hit else 'no'} | {o.processes_left} | "
                    f"{o.segments_left} | {o.checkpoint} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--drive", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--pause", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=PHASES, action="append")
    parser.add_argument("--signal", choices=SIGNALS, action="append")
    parser.add_argument("--dir", type=Path, default=Path("kill-matrix-out"), help="where the runs write")
    args = parser.parse_args()
    if args.drive is not None:
        sys.exit(drive(args.drive, args.pause))
    outcomes = []
    for phase in args.phase or PHASES:
        for name in args.signal or SIGNALS:
            outcome = run_case(phase, name, args.dir / f"{phase}-{name.replace(' ', '-')}")
            print(f"{phase:10} {name:13} -> exit {outcome.exit_code}, {outcome.processes_left} processes, "
                  f"{outcome.segments_left} segments left, checkpoint {outcome.checkpoint}", file=sys.stderr)
            outcomes.append(outcome)
    print(table(outcomes))


if __name__ == "__main__":
    main()
