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
    estimator = KernelsOnly() if kernels_only else Estimator()
    return algo, build_problem(algo.protocol(), Platform.load(platform), estimator)


class KernelsOnly(Estimator):
    """The estimator's costs of the kernels alone (:meth:`Estimator.kernel_cost`), without the loop's work."""

    def cost(self, kernel, device, variant="reference", threads=1):
        return self.kernel_cost(kernel, device, variant, threads)
