"""``torch.optim.Adam`` and ``torch.optim.RMSprop`` without importing ``torch._dynamo``: the learners' optimizers.

torch wraps an optimizer's bookkeeping (``add_param_group``, ``state_dict``, ``load_state_dict``, ``zero_grad``)
and ``step`` in decorators that import ``torch._dynamo`` on their first call (about a second of CPU per process),
only so that a ``torch.compile`` trace skips them. No learner traces its optimizer (the ``compiled`` and
``cuda_graph`` variants trace :mod:`pearl_py.kernels.functional_step`), so these subclasses run torch's own
undecorated methods: the same state layout, hyperparameters, ``param_groups``, ``state_dict`` format (a checkpoint
of either class loads into the other) and, step for step, the same operations and results.

Example::

    >>> opt = Adam(torch.nn.Linear(2, 2).parameters(), lr=1e-3)
    >>> "torch._dynamo" in sys.modules
    False
"""
from __future__ import annotations

import inspect

import torch

_BOOKKEEPING = ("add_param_group", "state_dict", "load_state_dict", "zero_grad")


def _undecorated(cls: type[torch.optim.Optimizer]) -> dict:
    """``cls``'s bookkeeping methods and ``step`` without torch's dynamo decorators. ``step`` runs under
    ``no_grad`` as its decorator does outside a trace (a plain optimizer is not ``differentiable``); the profiler
    and step hooks that torch adds on the first instance (``Optimizer._patch_step_function``) stay."""
    step = inspect.unwrap(cls.step)

    def no_grad_step(self, closure=None):
        with torch.no_grad():
            return step(self, closure)

    return {name: inspect.unwrap(getattr(torch.optim.Optimizer, name)) for name in _BOOKKEEPING} | {
        "step": no_grad_step, "__module__": __name__, "__doc__": f"``{cls.__module__}.{cls.__name__}``, undecorated."}


Adam = type("Adam", (torch.optim.Adam,), _undecorated(torch.optim.Adam))
RMSprop = type("RMSprop", (torch.optim.RMSprop,), _undecorated(torch.optim.RMSprop))
