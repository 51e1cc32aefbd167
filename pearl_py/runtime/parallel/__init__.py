"""The local parallel runtime: actor processes, a learner, optional replay and inference servers,
shared-memory transport, a rate limiter.

Example::

    >>> from pearl_py.runtime.parallel import ParallelExecutor
    >>> result = ParallelExecutor(algo, plan, seed=0, out_dir=Path("runs/x")).run(50_000)
    >>> result.backend
    'local-parallel'
"""
from pearl_py.lazy import lazy_names

# imported on first use: the serial executor imports this package's checkpoint module, and a serial run loads none
# of the parallel runtime's other modules
__getattr__, __dir__ = lazy_names(__name__, {
    "pearl_py.protocol.schedule": ("TrainSchedule",),
    "pearl_py.runtime.parallel.executor": ("ParallelExecutor",),
    "pearl_py.runtime.parallel.interrupts": ("RunInterrupted",),
    "pearl_py.runtime.parallel.supervisor": ("ActorFailed", "ServiceFailed"),
})
__all__ = ["ActorFailed", "ParallelExecutor", "RunInterrupted", "ServiceFailed", "TrainSchedule"]
