"""The local parallel runtime: actor processes, a learner, optional replay and inference servers,
shared-memory transport, a rate limiter.

Example::

    >>> from pearl_py.runtime.parallel import ParallelExecutor
    >>> result = ParallelExecutor(algo, plan, seed=0, out_dir=Path("runs/x")).run(50_000)
    >>> result.backend
    'local-parallel'
"""
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.parallel.executor import ParallelExecutor
from pearl_py.runtime.parallel.interrupts import RunInterrupted
from pearl_py.runtime.parallel.supervisor import ActorFailed, ServiceFailed

__all__ = ["ActorFailed", "ParallelExecutor", "RunInterrupted", "ServiceFailed", "TrainSchedule"]
