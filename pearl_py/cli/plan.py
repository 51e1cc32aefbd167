"""``pearl plan CONFIG --platform NAME|PATH|local | --address HOST:PORT --objective throughput|power [--out DIR]``.

``--address`` plans over a running Ray cluster, its nodes read as the platform (docs/ray.md "The cluster as a
platform"), and adds the simulator's prediction of the plan.

Example::

    $ pearl plan examples/configs/dqn_cartpole.yaml --platform pearl-cpu-gpu-fpga --objective power --out out/plan
    wrote out/plan/plan.yaml, plan.json, report.md, report.html
    Throughput is limited by ...
"""
from __future__ import annotations

from pathlib import Path


def plan_main(config_path: str, platform: str, objective: str, out: str | None, dedicated: bool | None = None,
              address: str | None = None) -> int:
    """Plan the config's algorithm on ``platform`` (or the Ray cluster at ``address``), export the plan's files to
    ``out`` (default ``plan-out``); ``dedicated`` (default: the config's key) values multi-threaded options by their
    calibrated cost alone. User mistakes raise :class:`pearl_py.errors.UserError`."""
    from pearl_py.estimate import Estimator
    from pearl_py.optimize.api import plan
    from pearl_py.pipeline.admission import admit_config
    from pearl_py.pipeline.outputs import check_output_dir
    from pearl_py.pipeline.planning import cluster_plan
    from pearl_py.platform import Platform
    from pearl_py.report.content import optimality_sentence
    from pearl_py.report.export import export_plan
    from pearl_py.run_config import load_config

    config = load_config(config_path)
    directory = check_output_dir(Path(out or "plan-out"))
    algo = config.make_algorithm()
    admit_config(algo, replay=False, error=config.error)  # planning builds the networks and a batch here
    dedicated = config.settings.dedicated if dedicated is None else dedicated
    if address is not None:
        result = cluster_plan(algo, address, objective, config.settings.total_steps, dedicated)
    else:
        result = plan(algo, Platform.load(platform), objective=objective, horizon=config.settings.total_steps,
                      estimator=Estimator(dedicated=dedicated))
    paths = export_plan(result, directory)
    print(f"wrote {directory}/" + ", ".join(p.name for p in paths.values()))
    f = result.prediction.figures
    print(f"{f.samples_per_s:,.0f} samples/s, {f.samples_per_j:,.1f} samples/J, {f.power_w:,.0f} W ({result.solver})")
    print(result.prediction.limit)
    if optimality_sentence(result):  # the gap and the bound
        print(optimality_sentence(result))
    if result.prediction.simulation is not None:
        print(f"{result.prediction.simulation.samples_per_s:,.0f} samples/s simulated (discrete-event, this plan)")
    return 0
