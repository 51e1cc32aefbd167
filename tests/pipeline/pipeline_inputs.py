"""Inputs the pipeline tests share: a tiny DQN config, a hand-written overlapped plan, a child-process probe."""
from __future__ import annotations

import os
from pathlib import Path

CONFIG = """
algorithm: dqn
env: CartPole-v1
total_steps: 1000
seed: 0
eval_episodes: 1
hyperparameters:
  learning_starts: 100
  train_freq: 50
  gradient_steps: 5
  batch_size: 16
  net_arch: [16]
"""

PLAN = """\
format: 2
platform: local
objective: throughput
solver: none
mode: overlapped
devices:
  cpu: cpu
placements:
  env_step: {device: cpu, variant: reference, replicas: 1}
  inference: {device: cpu, variant: reference, replicas: 1}
  replay_insert: {device: cpu, variant: reference, replicas: 1}
  replay_sample: {device: cpu, variant: reference, replicas: 1}
  learner_update: {device: cpu, variant: reference, replicas: 1}
  param_sync: {device: cpu, variant: reference, replicas: 1}
"""
"""Every kernel of a DQN on the local CPU, overlapped (the parallel runtime's), line numbers fixed."""


def children() -> set[int]:
    """Live child processes of this one."""
    kids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                kids.add(int(entry.name))
    return kids


def shm_segments() -> set[str]:
    """Shared-memory segments of pearl_py runs started by this process."""
    return {p.name for p in Path("/dev/shm").glob(f"pearl-{os.getpid()}-*")}
