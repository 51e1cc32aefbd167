"""``pearl fpga-design SPEC.yaml [--json]``: what a network costs as an hls4ml-style FPGA design.

Example::

    $ pearl fpga-design examples/fpga/jet_tagger.yaml --json
    {"latency_cycles": 4, "ii_cycles": 1, "dsp": 1344, "lut": 24154, "ff": 1264, "bram18k": 4}
"""
from __future__ import annotations

import json


def fpga_design_main(spec_path: str, as_json: bool) -> int:
    """Print the design's figures (modelled: docs/cost-models.md, "FPGA designs"); a bad spec raises ConfigError."""
    from pearl_py.estimate.fpga_network import load_network_spec, network_design

    spec = load_network_spec(spec_path)
    figures = network_design(spec).as_dict()
    if as_json:
        print(json.dumps(figures))
        return 0
    board = spec.board
    print(f"{spec_path}: {spec.part}, {spec.clock_ns:g} ns clock, {spec.precision.text}, reuse {spec.reuse_factor}, "
          f"{spec.strategy} strategy, io {spec.io} (modelled)")
    available = {"dsp": board.dsp, "lut": board.lut, "ff": board.ff,
                 "bram18k": 2 * board.memories["bram36"].count if "bram36" in board.memories else 0}
    for key, value in figures.items():
        share = f"{100 * value / available[key]:.2f} % of {available[key]:,}" if available.get(key) else ""
        print(f"  {key:<15}{value:>12,}  {share}")
    print(f"  latency {figures['latency_cycles'] * spec.clock_ns:g} ns, one input every "
          f"{figures['ii_cycles'] * spec.clock_ns:g} ns")
    return 0
