"""solve(): one interface over exhaustive, MILP and heuristic; gaps; pools; the command; no torch."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from random_instances import random_problem

from pearl_py.cli.plan import plan_main
from pearl_py.errors import PlanningError
from pearl_py.optimize.model import Choice, evaluate
from pearl_py.optimize.problem import (
    AssignmentProblem,
    Device,
    Edge,
    Link,
    Option,
    Task,
)
from pearl_py.optimize.solve import solve


def _actors_problem(cpus: int = 3, cores: int = 4) -> AssignmentProblem:
    members = tuple(f"cpu{i}" for i in range(cpus))
    devices = {m: Device(m, "cpu", cores, 20.0, 80.0) for m in members}
    devices["pool"] = Device("pool", "cpu", cores, 20.0, 80.0, members=members)
    devices["gpu"] = Device("gpu", "gpu", 1, 30.0, 300.0)
    options = {("act", t, "reference"): Option(1e-3, 1e-3) for t in (*members, "pool")}
    options[("learn", "gpu", "reference")] = Option(5e-5, 1e-3)
    options[("learn", "cpu0", "reference")] = Option(4e-4, 1e-3)
    link = Link(1e-5, 10e9)
    links = {f"{m}-gpu": link for m in members} | {f"gpu-{m}": link for m in members}
    routes = {(m, "gpu"): (f"{m}-gpu",) for m in members} | {("gpu", m): (f"gpu-{m}",) for m in members}
    links["net"] = Link(2e-5, 5e9)
    routes |= {(a, b): ("net",) for a in members for b in members if a != b}
    return AssignmentProblem((Task("act", 1.0, replicable=True), Task("learn", 1.0)), devices, options,
                             (Edge("act", "learn", 1000.0, 1.0),), links, routes, name="actors")


def test_pool_spreads_actors_over_every_member():
    sol = solve(_actors_problem(), "throughput", solver="milp")
    assert sol.assignment["act"].device == "pool" and sol.assignment["act"].replicas == 12
    assert sol.performance.bottleneck in {"cpu0", "cpu1", "cpu2"}
    assert sol.optimal


def test_every_solver_returns_the_same_optimum_here():
    problem = _actors_problem()
    values = {s: solve(problem, "throughput", solver=s).value for s in ("exhaustive", "milp", "auto")}
    assert max(values.values()) <= min(values.values()) * (1 + 1e-9)
    heuristic = solve(problem, "throughput", solver="heuristic")
    assert heuristic.value >= values["milp"] * (1 - 1e-9)
    assert 0.0 <= heuristic.gap < 1.0 and heuristic.bound <= heuristic.value


@pytest.mark.parametrize("seed", range(40))
def test_heuristic_is_feasible_and_its_bound_holds(seed):
    problem = random_problem(seed)
    try:
        exact = solve(problem, "power", solver="milp")
    except PlanningError:
        return
    greedy = solve(problem, "power", solver="heuristic")
    assert greedy.performance.feasible
    assert greedy.bound <= exact.value * (1 + 1e-6) <= greedy.value * (1 + 1e-6) + 1e-12


def test_replicas_are_trimmed_to_what_the_bottleneck_needs():
    sol = solve(_actors_problem(cpus=2, cores=64), "throughput")
    act = sol.assignment["act"]
    fewer = evaluate(_actors_problem(cpus=2, cores=64),
                     {**sol.assignment, "act": Choice(act.device, act.variant, act.replicas - 2)})
    assert fewer.time_per_sample > sol.performance.time_per_sample


def test_bad_solver_and_objective():
    with pytest.raises(PlanningError, match="solver must be one of"):
        solve(_actors_problem(), "throughput", solver="gurobi")
    with pytest.raises(PlanningError, match="objective must be one of"):
        solve(_actors_problem(), "latency")


def test_plan_main_writes_the_plan_its_prediction_and_the_reports(write_config, tmp_path, capsys):
    config = write_config("algorithm: dqn\nenv: CartPole-v1\nhyperparameters:\n  batch_size: 64\n")
    assert plan_main(str(config), "pearl-cpu-gpu-fpga", "power", str(tmp_path / "out")) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["plan.json", "plan.yaml", "prediction.json",
                                                                   "report.html", "report.md"]
    assert "Throughput is limited by" in capsys.readouterr().out


def test_optimizer_never_imports_torch():
    package = Path(__file__).parents[2] / "pearl_py" / "optimize"
    for path in package.glob("*.py"):
        assert not re.search(r"^\s*(import|from)\s+torch", path.read_text(), re.M), path.name


def test_policy_lag_chains_the_acting_stage_with_the_rest_of_training():
    """Actors on a CPU, learner on a GPU: overlapped they run at max(busy); a lag bound adds acting + (1-f) * rest."""
    from pearl_py.optimize.milp import solve_milp
    from pearl_py.optimize.model import POLICY_LAG, Choice, evaluate
    from pearl_py.optimize.problem import AssignmentProblem, Device, Option, Task

    def problem(overlap):
        return AssignmentProblem(
            tasks=(Task("act", rate=1.0, stage="act"), Task("learn", rate=0.5, stage="train")),
            devices={"cpu": Device("cpu", "cpu", units=1, idle_w=10, peak_w=50),
                     "gpu": Device("gpu", "gpu", units=1, idle_w=10, peak_w=50)},
            options={("act", "cpu", "reference"): Option(1e-4), ("learn", "gpu", "reference"): Option(1e-3)},
            overlap=overlap)

    where = {"act": Choice("cpu"), "learn": Choice("gpu")}
    free, lagged = evaluate(problem(1.0), where), evaluate(problem(0.1), where)
    assert free.time_per_sample == pytest.approx(5e-4) and free.bottleneck == "gpu"
    assert lagged.time_per_sample == pytest.approx(1e-4 + 0.9 * 5e-4) and lagged.bottleneck == POLICY_LAG
    assert solve_milp(problem(0.1), "throughput").bound == pytest.approx(lagged.time_per_sample)


def test_auto_reports_the_milp_when_it_ties_with_the_greedy_plan():
    """Small problems solve within the time limit: the MILP's plan is reported even when the greedy ties it."""
    solved = 0
    for seed in range(60):
        try:
            sol = solve(random_problem(seed), "throughput")
        except PlanningError:
            continue
        solved += 1
        assert sol.solver == "milp" and sol.optimal, (seed, sol.solver)
    assert solved >= 50
