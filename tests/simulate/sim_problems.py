"""Problems built once per session from catalogue platforms and the Estimator's costs (modelled)."""
from __future__ import annotations

import functools

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.optimize.builder import build_problem
from pearl_py.platform import Platform


@functools.lru_cache(maxsize=None)
def problem_for(platform: str, kernels_only: bool = False, **hyper):
    """``(algorithm, problem)`` for DQN CartPole with ``hyper`` on a catalogue platform; ``kernels_only``: without
    the training loop's own work (the kernels' costs alone, to look at one effect)."""
    algo = pearl.DQN("CartPole-v1", **hyper)
    estimator = Estimator()
    if kernels_only:
        estimator.cost = estimator.kernel_cost
    return algo, build_problem(algo.protocol(), Platform.load(platform), estimator)
