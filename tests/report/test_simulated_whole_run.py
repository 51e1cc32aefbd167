"""The simulated section sets the model's whole run beside the simulated one, each saying what it covers."""
from __future__ import annotations

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.optimize.api import plan
from pearl_py.report import fmt, simulation
from pearl_py.simulate.inputs import simulate_plan, with_simulation


def test_the_simulated_and_modelled_whole_runs_say_their_lengths_and_phases():
    algo = pearl.DQN("CartPole-v1", learning_starts=1_000, net_arch=[16])
    made = plan(algo, "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False), horizon=5_000, pareto_points=2)
    simulated = with_simulation(made, simulate_plan(made, algo, pearl.Platform.load("pearl-cpu-gpu-fpga"),
                                                    estimator=Estimator(use_cache=False)))
    rows = dict(simulation.summary_rows(simulated))
    sim, run = simulated.prediction.simulation, simulated.prediction.run
    assert rows[f"samples/s (simulated, whole run of {sim.env_steps:,} transitions: start-up, no warm-up)"] == \
        fmt.rate(sim.run_samples_per_s)
    assert rows["samples/s (modelled, whole run of 5,000 steps: start-up, 1,000 warm-up, learning)"] == \
        fmt.rate(run.samples_per_s)
