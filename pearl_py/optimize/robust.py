"""Why a threaded option that is fragile beside other processes was or was not chosen, in words.

The estimator costs a calibrated threaded kernel at what it is expected to take on a machine that is not
dedicated (its figure alone and beside a light neighbour, weighted: ``Estimator.expected_factor``); the optimizer
then picks the thread count as usual. This module says what that valuation did to the choice, for the plan's
explanation (``Prediction.threads``).

Example::

    >>> spread_sentences(estimator, protocol, platform, assignment)
    ['learner_update (cpu, fused), calibrated alone and beside a light neighbour (sleeps 5 ms, spins 0.5 ms): 1 thread
      432 us, 1.04x beside; 2 threads 356 us, 2.10x beside. Valued as expected on a machine that is not dedicated
      (1 thread 441 us, 2 threads 552 us; `--dedicated` values them alone): 1 thread chosen, though 2 threads are 18%
      faster alone.']
"""
from __future__ import annotations

from typing import Any

from pearl_py.optimize.model import Assignment
from pearl_py.protocol import ProtocolGraph


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us"


def _threads(n: int) -> str:
    return f"{n} thread{'s' if n != 1 else ''}"


def spread_sentences(estimator: Any, protocol: ProtocolGraph, platform: Any, assignment: Assignment) -> list[str]:
    """One sentence per threaded kernel whose options were calibrated beside a light neighbour (none for an
    estimator that does not measure spread, or a kernel placed where no thread count was calibrated)."""
    slowdown_of = getattr(estimator, "neighbour_slowdown", None)
    if slowdown_of is None:
        return []
    out = []
    for kernel in protocol.kernels():
        choice = assignment.get(kernel.name)
        if choice is None or not kernel.kind.threaded or choice.device not in platform.devices:
            continue
        device = platform.devices[choice.device]
        counts = estimator.thread_counts(kernel, device, choice.variant)
        slowdowns = {n: slowdown_of(kernel, choice.variant, n) for n in counts}
        if len(counts) < 2 or any(s is None for s in slowdowns.values()):
            continue
        expected = {n: estimator.kernel_cost(kernel, device, choice.variant, threads=n).latency_s for n in counts}
        alone = {n: expected[n] / estimator.expected_factor(kernel, choice.variant, n) for n in counts}
        measured = "; ".join(f"{_threads(n)} {_us(alone[n])}, {slowdowns[n]:.2f}x beside" for n in counts)
        head = (f"{kernel.name} ({choice.device}, {choice.variant}), calibrated alone and beside a light neighbour "
                f"(sleeps 5 ms, spins 0.5 ms): {measured}.")
        chosen, fastest_alone = choice.replicas, min(counts, key=lambda n: alone[n])
        if estimator.dedicated:
            out.append(f"{head} The machine is declared dedicated: valued alone, {_threads(chosen)} chosen.")
            continue
        valued = ", ".join(f"{_threads(n)} {_us(expected[n])}" for n in counts)
        why = (f", though {_threads(fastest_alone)} {'are' if fastest_alone > 1 else 'is'} "
               f"{alone[chosen] / alone[fastest_alone] - 1:.0%} faster alone" if fastest_alone != chosen else "")
        out.append(f"{head} Valued as expected on a machine that is not dedicated ({valued}; `--dedicated` values "
                   f"them alone): {_threads(chosen)} chosen{why}.")
    return out
