"""Inputs the pipeline tests share: a tiny DQN config, a hand-written overlapped plan."""
from __future__ import annotations

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
