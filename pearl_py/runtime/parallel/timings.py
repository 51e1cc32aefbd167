"""Per-kernel times of a parallel run, summed over the learner and every actor process.

Kernels planned on a simulated FPGA ran on the CPU; their ``total_s`` is charged at the
plan's modelled latency per call (``modelled: 1``) and the CPU's own time is kept as
``cpu_total_s``.

Example::

    >>> merge_kernel_times({}, learner_timer, control, modelled_s={"replay_sample": 2e-6})["replay_sample"]
    {'calls': 24576, 'total_s': 0.049, 'mean_s': 2e-06, 'cpu_total_s': 1.21, 'modelled': 1.0}
"""
from __future__ import annotations

from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.timing import KernelTimer


def merge_kernel_times(before: dict[str, dict[str, float]], timer: KernelTimer, control: ControlBlock,
                       modelled_s: dict[str, float]) -> dict[str, dict[str, float]]:
    """``{kernel: {calls, total_s, mean_s}}``: earlier sessions + learner + actors, FPGA kernels charged."""
    totals: dict[str, list[float]] = {}
    sources = [before, {k: {"calls": timer.calls[k], "total_s": s} for k, s in timer.seconds.items()},
               control.kernel_times()]
    for source in sources:
        for kernel, t in source.items():
            calls, seconds = totals.setdefault(kernel, [0, 0.0])
            cpu = t.get("cpu_total_s", t["total_s"])
            totals[kernel] = [calls + int(t["calls"]), seconds + cpu]
    out: dict[str, dict[str, float]] = {}
    for kernel in sorted(totals):
        calls, seconds = totals[kernel]
        if kernel in modelled_s:
            charged = calls * modelled_s[kernel]
            out[kernel] = {"calls": calls, "total_s": charged, "mean_s": modelled_s[kernel],
                           "cpu_total_s": seconds, "modelled": 1.0}
        else:
            out[kernel] = {"calls": calls, "total_s": seconds, "mean_s": seconds / max(calls, 1)}
    return out
