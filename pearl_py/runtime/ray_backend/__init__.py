"""The Ray backend: the plan's actors, replay server and learner as Ray actors (docs/ray.md).

``ray`` is an optional extra (``pip install -c constraints.txt ".[ray]"``); without it
``RayExecutor.run`` raises a :class:`pearl_py.errors.UserError` that says so.

Example::

    >>> from pearl_py.runtime.ray_backend import RayExecutor
    >>> RayExecutor(pearl.DQN("CartPole-v1"), plan, seed=0).run(20_000).backend
    'ray'
"""
from pearl_py.runtime.ray_backend.executor import RayExecutor
from pearl_py.runtime.ray_backend.require import INSTALL_HINT, import_ray

__all__ = ["INSTALL_HINT", "RayExecutor", "import_ray"]
