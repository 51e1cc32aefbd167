"""The plans' comparison never credits a move between identical devices; idle power only where it differs."""
from __future__ import annotations

from pearl_py.optimize.explain import compare_sentence
from pearl_py.optimize.model import Choice, evaluate
from pearl_py.optimize.problem import AssignmentProblem, Device, Option, Task


def _problem(gpu1_model: str = "a100", gpu1_idle: float = 55.0) -> AssignmentProblem:
    learn = {("learn", g, "reference"): Option(5e-4, 2e-3) for g in ("gpu0", "gpu1")}
    return AssignmentProblem(
        tasks=(Task("act", 1.0), Task("learn", 1.0)),
        devices={"cpu": Device("cpu", "cpu", 1, 20.0, 80.0, model="epyc"),
                 "gpu0": Device("gpu0", "gpu", 1, 55.0, 400.0, model="a100"),
                 "gpu1": Device("gpu1", "gpu", 1, gpu1_idle, 400.0, model=gpu1_model)},
        options={("act", "cpu", "reference"): Option(1e-3, 1e-3), **learn})


def _sentence(problem: AssignmentProblem) -> str:
    on0 = {"act": Choice("cpu"), "learn": Choice("gpu0")}
    on1 = {"act": Choice("cpu"), "learn": Choice("gpu1")}
    return compare_sentence(problem, (on0, evaluate(problem, on0)), "power", (on1, evaluate(problem, on1)))


def test_a_move_between_identical_gpus_is_the_same_placement():
    sentence = _sentence(_problem())
    assert sentence.startswith("The throughput objective picks the same placement up to identical devices "
                               "(learn gpu1->gpu0")
    assert "saves" not in sentence and "idle power" not in sentence


def test_a_move_to_a_lower_idle_gpu_credits_the_difference():
    sentence = _sentence(_problem(gpu1_model="a100-low-idle", gpu1_idle=75.0))
    assert "switching off gpu1 (using gpu0 instead) saves 20 W of idle power" in sentence
    same_idle = _sentence(_problem(gpu1_model="other"))
    assert "switching off" not in same_idle      # different models, same idle power: no idle credit
