"""A synthetic calibration with variants that have a one-off setup, for the optimizer's tests."""
from __future__ import annotations

from pearl_py.estimate import Calibration, Estimator
from pearl_py.estimate.calibration import model_key
from pearl_py.estimate.fit import FittedModel

NET = ("flops", "bytes", "ops")


def synthetic_calibration() -> Calibration:
    """Reference learner 1 ms + 10 ns/FLOP; compiled 0.2 ms + 8 ns/FLOP after a 9 s cold compile; fused inference."""
    models = {model_key("learner_update", "reference"): FittedModel("linear", NET, (1e-3, 1e-11, 0, 0), "flops"),
              model_key("learner_update", "compiled"): FittedModel("linear", NET, (2e-4, 8e-12, 0, 0), "flops"),
              model_key("inference", "reference"): FittedModel("linear", NET, (60e-6, 1e-12, 0, 0), "flops"),
              model_key("inference", "fused"): FittedModel("linear", NET, (50e-6, 1e-12, 0, 0), "flops")}
    return Calibration("test", models, {"setup": {"learner_update/compiled": {"seconds": 9.0, "cold": [9.0]}}})


def estimator() -> Estimator:
    return Estimator(synthetic_calibration())
