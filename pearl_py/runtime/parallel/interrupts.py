"""Ctrl-C and SIGTERM as requests: the learner stops at the next consistent point.

Inside the context the first SIGINT/SIGTERM only sets :attr:`StopSignals.requested`;
a second one raises ``KeyboardInterrupt`` at once. Handlers can only be installed
from the main thread; elsewhere the context installs none.

Example::

    >>> with StopSignals() as signals:
    ...     while not signals.requested:
    ...         learner_step()
"""
from __future__ import annotations

import signal
import threading
from types import FrameType


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C or SIGTERM; ``checkpoint`` is where it was saved (None: no out_dir)."""

    def __init__(self, signal_name: str, checkpoint: object | None) -> None:
        where = f"checkpoint written to {checkpoint}" if checkpoint else "no out_dir, so no checkpoint"
        super().__init__(f"run interrupted by {signal_name}; {where}")
        self.checkpoint = checkpoint


class StopSignals:
    """Turns SIGINT/SIGTERM into a flag for the duration of a ``with`` block."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested: str | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = signal.Signals(signum).name

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
