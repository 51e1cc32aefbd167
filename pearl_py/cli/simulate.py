"""``pearl simulate CONFIG --platform NAME|PATH [--plan PLAN] [--out DIR]``: simulate a plan (``--plan``, or the
throughput plan made first), print what the simulation measured beside the model's prediction, and write the
plan's report with a "Simulated" section and its timeline.

Example::

    $ pearl simulate examples/configs/dqn_cartpole.yaml --platform cluster-64x8gpu --out out/sim
    simulated 5,493 samples/s (model 5,500, -0.1%); bottleneck node1.gpu0 (100% busy)
    ...
    wrote out/sim/plan.yaml, plan.json, report.md, report.html
"""
from __future__ import annotations

from pathlib import Path

SHOWN = 8
"""Busiest devices and links printed."""


def simulate_main(config_path: str, platform: str, plan_path: str | None, out: str | None) -> int:
    """Simulate a plan of the config's algorithm on ``platform``; export its report to ``out`` (default ``sim-out``)."""
    from pearl_py.errors import UserError
    from pearl_py.optimize.api import plan as make_plan
    from pearl_py.pipeline.admission import admit_config
    from pearl_py.pipeline.outputs import check_output_dir
    from pearl_py.pipeline.plan_check import PlanSource, check_plan
    from pearl_py.plan_file import load_plan
    from pearl_py.platform import Platform
    from pearl_py.report.export import export_plan
    from pearl_py.run_config import load_config
    from pearl_py.simulate.inputs import simulate_plan, with_simulation

    config = load_config(config_path)
    directory = check_output_dir(Path(out or "sim-out"))
    algo = config.make_algorithm()
    admit_config(algo, replay=False, error=config.error)  # planning builds the networks and a batch here
    target = Platform.load(platform)
    if plan_path is None:
        chosen = make_plan(algo, target, objective="throughput")
    else:
        chosen = load_plan(plan_path)
        if chosen.platform != target.name:
            raise UserError(f"{plan_path}: the plan was made for platform {chosen.platform!r}, not {target.name!r}")
        check_plan(chosen, algo, PlanSource.of(plan_path), runs_here=False)
    result = simulate_plan(chosen, algo, target)
    modelled = chosen.prediction.samples_per_s if chosen.prediction is not None else None
    versus = f" (model {modelled:,.0f}, {100 * (result.samples_per_s / modelled - 1):+.1f}%)" if modelled else ""
    print(f"simulated {result.samples_per_s:,.0f} samples/s{versus}; bottleneck {result.bottleneck} "
          f"({100 * result.utilization.get(result.bottleneck, 0.0):.0f}% busy)")
    print(f"simulated energy {result.energy_per_sample_j * 1e3:.3f} mJ/sample, {result.samples_per_j:,.1f} samples/J, "
          f"{result.power_w:,.0f} W average")
    busiest = list(result.utilization.items())[:SHOWN]
    print("simulated utilization: " + ", ".join(f"{name} {100 * u:.0f}%" for name, u in busiest))
    paths = export_plan(with_simulation(chosen, result), directory) if chosen.prediction is not None \
        else export_plan(chosen, directory)
    print(f"wrote {directory}/" + ", ".join(p.name for p in paths.values()))
    return 0
