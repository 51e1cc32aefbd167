"""A round's mean losses reach its ``train.csv`` row without the host waiting for the GPU: they are averaged on the
device, copied back behind an event, and the row is written once that event has completed (asserted on a fake
device: no CUDA here)."""
from __future__ import annotations

import csv

import torch
from device_fakes import FakeDevice

from pearl_py.algorithms.off_policy.learner import UpdateResult
from pearl_py.runtime.collect import LossMeans
from pearl_py.runtime.run_log import RunLog
from pearl_py.runtime.timing import KernelTimer

CUDA0 = torch.device("cuda", 0)


def _round(gpu: FakeDevice, losses: list[float]) -> LossMeans:
    means = LossMeans()
    for q in losses:
        means.add(UpdateResult(losses={"q": torch.tensor(q)}, td_abs=torch.zeros(1)))
    return means


def _rows(folder) -> list[dict[str, str]]:
    with (folder / "train.csv").open() as f:
        return list(csv.DictReader(f))


def test_a_rounds_losses_are_written_once_arrived_and_the_host_waits_only_at_close(tmp_path):
    log: list[str] = []
    gpu = FakeDevice(log, done=False)  # the GPU is still busy with the rounds' updates
    timer = KernelTimer({"learner_update": CUDA0}, events=gpu.events)
    run_log = RunLog(tmp_path, total_steps=1_000, progress=False)
    run_log.train(100, _round(gpu, [1.0, 3.0]).pending(timer.events_of("learner_update")), 50.0)
    run_log.train(200, _round(gpu, [5.0]).pending(timer.events_of("learner_update")), 60.0)
    assert log == ["record 1", "record 2"]  # one event after each round's copy; no row read them (no wait)
    gpu.done = True
    run_log.train(300, _round(gpu, [7.0]).pending(timer.events_of("learner_update")), 70.0)
    gpu.done = False
    run_log.train(400, _round(gpu, [9.0]).pending(timer.events_of("learner_update")), 80.0)
    assert log == ["record 1", "record 2", "record 3", "record 4"]  # the arrived rows were written without a wait
    run_log.close()
    assert log[4:] == ["wait 4"]  # close waits for the last round's losses only
    assert [(r["step"], r["loss_q"], r["steps_per_second"]) for r in _rows(tmp_path)] == [
        ("100", "2", "50"), ("200", "5", "60"), ("300", "7", "70"), ("400", "9", "80")]  # in order, their own figures

def test_losses_of_a_host_learner_are_read_at_once():
    assert _round(FakeDevice([]), [1.0, 2.0]).pending(KernelTimer().events_of("learner_update")).values() == {
        "q": 1.5}
