"""FPGA designs of the on-policy kernels: the advantage scan and the minibatch learner.

* **advantage** (:func:`advantage_design`): GAE(lambda) as one pipelined loop over the rollout's
  steps, backward, with the envs spread over ``U`` lanes (each lane's arrays partitioned into their
  own banks). Consecutive iterations of a lane belong to different envs, so an env's carried
  advantage (``A_t = delta_t + gamma*lambda*live*A_{t+1}``: a multiply and an add) comes back every
  ``d = ceil(n_envs / U)`` iterations: ``RecMII = ceil((fmul + fadd) / d)``, ``II = max(1, RecMII)``,
  ``cycles = depth + II (n_steps d - 1)`` (Vitis HLS UG1399; COMBA, ICCAD 2017). The lane count is
  the fastest that fits the kernel's budget (fewer lanes on ties). HEPPO (Taha et al., 2025) reports
  a 30 % PPO speed-up from such a pipelined GAE unit.
* **learner_update** of an on-policy algorithm (:func:`minibatch_learner_design`): the layers as the
  off-policy learner's HLS design (:func:`pearl_py.estimate.fpga_kernels.mlp_design`, with the
  on-policy loss's depth), plus the rollout kept in on-chip RAM (``NetworkWorkload.resident_bytes``:
  every epoch rereads it), partitioned so one minibatch row is gathered per cycle.

Example::

    >>> fpga = Platform.load("pearl-cpu-gpu-fpga").device("fpga").spec
    >>> design = advantage_design(AdvantageWorkload(n_steps=32, n_envs=8), fpga, OnPolicyTemplates.load())
    >>> design.phases["lanes"], design.phases["ii"]
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

from pearl_py.estimate.fpga_hls import (
    Resources,
    initiation_interval,
    pipelined_cycles,
    rec_mii,
)
from pearl_py.estimate.fpga_kernels import (
    Design,
    FpgaTemplates,
    _check,
    board_budget,
    mlp_design,
)
from pearl_py.platform.spec import FpgaSpec, check_keys
from pearl_py.platform.yamlsrc import CatalogueYaml
from pearl_py.protocol.kernel import ADVANTAGE, LEARNER_UPDATE
from pearl_py.protocol.workload import FLOAT_BYTES, AdvantageWorkload, NetworkWorkload
from pearl_py.resources import estimators_dir

_SCHEMA = {"scan": ["budget", "max_lanes", "lut_per_lane", "lut_base", "array_words"],
           "minibatch": ["loss_depth", "row_extra_words"]}
SCAN_MULS, SCAN_ADDS = 3, 5
"""Floating-point operators of one lane: ``g*live``, ``*V'``, ``gl*live*A'``; ``1 - start``, ``r +``, ``- V``,
``delta +``, ``A + V``."""


@dataclass(frozen=True)
class OnPolicyTemplates:
    """Parameters of ``estimators/fpga_on_policy.yaml``."""

    scan: dict
    minibatch: dict

    @classmethod
    def load(cls, path: str | Path | None = None) -> OnPolicyTemplates:
        doc = CatalogueYaml.load(path or estimators_dir() / "fpga_on_policy.yaml")
        check_keys(doc.data, list(_SCHEMA), list(_SCHEMA), (), doc.error)
        for section, keys in _SCHEMA.items():
            check_keys(doc.data[section], keys, keys, (section,), doc.error)
        check_keys(doc.data["scan"]["budget"], ["dsp", "lut", "ram"], ["dsp", "lut", "ram"], ("scan", "budget"),
                   doc.error)
        return cls(doc.data["scan"], doc.data["minibatch"])


@functools.cache
def default_templates() -> OnPolicyTemplates:
    return OnPolicyTemplates.load()


def _scan_depth(board: FpgaSpec) -> int:
    """Latency of one element: ``1 - start``, two multiplies, ``r +``, ``- V``, the carried multiply-add, ``+ V``."""
    return 2 * board.fmul_latency + 4 * board.fadd_latency + (board.fmul_latency + board.fadd_latency) \
        + board.mem_read_latency


def advantage_design(workload: AdvantageWorkload, board: FpgaSpec, templates: OnPolicyTemplates | None = None
                     ) -> Design:
    """The pipelined GAE scan (see the module docstring); Infeasible when not even one lane fits its budget."""
    t = (templates or default_templates()).scan
    budget = board_budget(board, t["budget"])
    words = workload.n_steps * workload.n_envs

    def resources(lanes: int) -> Resources:
        res = Resources()
        res.add("dsp", lanes * (SCAN_MULS * board.dsp_per_mac + SCAN_ADDS * board.dsp_per_add))
        res.add("lut", t["lut_base"] + lanes * t["lut_per_lane"])
        for _ in range(t["array_words"]):
            res.allocate_array(words, lanes, board, 1024, budget)
        return res

    _check(resources(1), budget, ADVANTAGE, board)
    best = None
    for lanes in range(1, min(workload.n_envs, t["max_lanes"]) + 1):
        res = resources(lanes)
        if res.overflow(budget) is not None:
            break
        distance = math.ceil(workload.n_envs / lanes)
        ii = initiation_interval(rec_mii(board.fmul_latency + board.fadd_latency, distance))
        cycles = pipelined_cycles(workload.n_steps * distance, ii, _scan_depth(board))
        if best is None or cycles < best[0]:
            best = (cycles, lanes, ii, res)
    cycles, lanes, ii, res = best
    return Design(cycles, cycles / board.clock_hz, dict(res.used), {"scan": cycles, "lanes": lanes, "ii": ii},
                  ADVANTAGE)


def minibatch_learner_design(workload: NetworkWorkload, board: FpgaSpec, templates: FpgaTemplates,
                             on_policy: OnPolicyTemplates | None = None) -> Design:
    """An on-policy learner's minibatch step: layers, loss and optimizer as :func:`mlp_design`, the rollout in
    on-chip RAM and the gather of the minibatch's rows; Infeasible (naming the RAM kind) when the rollout does not
    fit beside the layers in the learner's budget."""
    m = (on_policy or default_templates()).minibatch
    base = mlp_design(workload, LEARNER_UPDATE, board, templates.with_overrides(mlp={"loss_depth": m["loss_depth"]}))
    budget = board_budget(board, templates.budget_share[LEARNER_UPDATE])
    res = Resources(dict(base.resources))
    row_words = workload.layers[0].n_in + m["row_extra_words"]
    res.allocate_array(math.ceil(workload.resident_bytes / FLOAT_BYTES), row_words, board,
                       templates.mlp["lutram_max_bits"], budget)
    _check(res, budget, LEARNER_UPDATE, board)
    gather = pipelined_cycles(workload.batch, 1, board.mem_read_latency + 1)
    cycles = base.cycles + gather
    return Design(cycles, cycles / board.clock_hz, dict(res.used), {**base.phases, "gather": gather},
                  LEARNER_UPDATE)
