"""A fake accelerator's timing events: every record and wait lands in one log, beside the work the test logs."""
from __future__ import annotations

import itertools

import torch


class FakeEvent:
    """A device event: ``record`` stamps it with the fake device's clock; it completes when the fake device says."""

    def __init__(self, device: FakeDevice) -> None:
        self.device = device
        self.id = next(device.ids)
        self.t: float | None = None

    def record(self) -> None:
        self.t = self.device.now
        self.device.log.append(f"record {self.id}")

    def query(self) -> bool:
        return self.device.done

    def synchronize(self) -> None:
        self.device.log.append(f"wait {self.id}")

    def seconds_until(self, end: FakeEvent) -> float:
        return end.t - self.t


class FakeDevice:
    """Its clock (``now``, advanced by the test as the 'GPU work' proceeds), whether queued work is ``done``, and
    the log shared with the test."""

    def __init__(self, log: list[str], done: bool = False) -> None:
        self.log, self.done, self.now = log, done, 0.0
        self.ids = itertools.count(1)
        self.devices: list[torch.device] = []

    def events(self, device: torch.device):
        self.devices.append(device)
        return lambda: FakeEvent(self)
