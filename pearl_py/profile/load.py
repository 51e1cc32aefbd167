"""How busy other processes kept the machine while a calibration point was timed, and the rule that says
when that distorted it (:data:`RULE`; docs/cost-models.md §2).

The probe reads the machine's busy CPU time (``/proc/stat``) before and after a timed block and subtracts this
process's own (``getrusage``): the rest over the block's wall time is the cores other processes kept busy
(``others_cores``).

Example::

    >>> probe = LoadProbe(usable_cores=2)
    >>> with probe.timing(threads=1) as sample:
    ...     seconds = time_call(call)
    >>> sample.others_cores, sample.distorted
    (0.12, False)
"""
from __future__ import annotations

import contextlib
import os
import resource
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

SLACK_CORES = 0.5
"""Other processes' load allowed beyond the spare cores (the probe counts in 10 ms ticks)."""
MAX_REPEATS = 3
"""Times a distorted point is timed again before it is recorded as distorted."""
RULE = ("a point is distorted when other processes kept more cores busy while it was timed than the machine "
        f"had spare beside it (usable cores - the point's threads) + {SLACK_CORES} core; it is timed again up "
        f"to {MAX_REPEATS} times; single-thread models keep points still distorted (flagged), multi-thread "
        "models are refused")
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


def machine_busy_seconds() -> float | None:
    """CPU seconds every core spent busy since boot (``/proc/stat``), or None where it cannot be read."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user and nice]
    ticks = [int(x) for x in fields[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) * _TICK_S


def own_cpu_seconds() -> float:
    """CPU seconds of this process, every thread."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


@dataclass
class LoadSample:
    """Other processes' load during one timed block."""

    threads: int
    spare_cores: float
    others_cores: float | None = None
    """Cores other processes kept busy on average (None: the machine's CPU time could not be read)."""

    @property
    def distorted(self) -> bool:
        return self.others_cores is not None and self.others_cores > self.spare_cores + SLACK_CORES


@dataclass
class LoadRecord:
    """What the probe saw over a model's points: repeats, the points still distorted, the worst load."""

    points: int = 0
    repeats: int = 0
    distorted: int = 0
    max_others_cores: float = 0.0
    samples: list[float] = field(default_factory=list)

    def add(self, sample: LoadSample, repeated: int) -> None:
        self.points += 1
        self.repeats += repeated
        self.distorted += sample.distorted
        if sample.others_cores is not None:
            self.max_others_cores = max(self.max_others_cores, sample.others_cores)
            self.samples.append(sample.others_cores)

    def to_dict(self) -> dict:
        mean = sum(self.samples) / len(self.samples) if self.samples else None
        return {"points": self.points, "repeats": self.repeats, "distorted": self.distorted,
                "max_others_cores": round(self.max_others_cores, 2),
                "mean_others_cores": round(mean, 2) if mean is not None else None}


class LoadProbe:
    """Measures other processes' load around timed blocks on a machine of ``usable_cores`` cores."""

    def __init__(self, usable_cores: int) -> None:
        self.usable_cores = usable_cores

    @contextlib.contextmanager
    def timing(self, threads: int = 1) -> Iterator[LoadSample]:
        sample = LoadSample(threads=threads, spare_cores=max(self.usable_cores - threads, 0))
        busy0, own0, wall0 = machine_busy_seconds(), own_cpu_seconds(), time.perf_counter()
        yield sample
        busy1, own1, wall = machine_busy_seconds(), own_cpu_seconds(), time.perf_counter() - wall0
        if busy0 is not None and busy1 is not None and wall > 0:
            sample.others_cores = max((busy1 - busy0) - (own1 - own0), 0.0) / wall
