"""The ``channels_last`` learner update: the algorithm's own step with convolution tensors in NHWC memory order.

oneDNN (CPU) and cuDNN (GPU) run convolutions on channels-last (NHWC) tensors without the layout
reorders an NCHW (contiguous) tensor costs them around each convolution; the 4-D weights of the
networks are converted once, the observations of every batch on entry. Everything else is the
eager ``Learner.update``: same losses, same Adam, same results up to floating-point summation order.
Offered only for network kernels with convolutions (it changes nothing else); whether it pays on a
CPU is the calibration's to say (``pearl profile`` measures it on the CNN grid), so the optimizer
chooses it only where measured faster; uncalibrated devices model it as the reference.

Example::

    >>> update = make_channels_last(Learner(pearl.DQN("MinAtar/Breakout-v1", net_arch=[128])))
    >>> out = update(batch)              # batch.obs: (B, C, H, W) uint8
"""
from __future__ import annotations

import dataclasses

import torch

from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch
from pearl_py.kernels.learner_update import LearnerUpdate


def make_channels_last(learner: Learner) -> LearnerUpdate:
    """``learner.update`` with the networks' 4-D tensors and each batch's frames in channels-last order."""
    learner.nets.to(memory_format=torch.channels_last)   # parameters keep their identity: the optimizers hold them

    def update(batch: TensorBatch):
        if batch.obs.dim() != 4:
            return learner.update(batch)
        return learner.update(dataclasses.replace(
            batch, obs=batch.obs.contiguous(memory_format=torch.channels_last),
            next_obs=batch.next_obs.contiguous(memory_format=torch.channels_last)))

    return update
