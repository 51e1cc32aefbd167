"""The parallel runtime carries uint8 frames: actor rings, the frame replay (co-located or served), batches."""
from __future__ import annotations

import dataclasses

import numpy as np

import pearl_py as pearl
from pearl_py.plan import Placement, Plan
from pearl_py.runtime.parallel import ParallelExecutor
from pearl_py.runtime.parallel.actor import ring_fields
from pearl_py.runtime.parallel.replay_server import batch_fields

PIXEL_DQN = dict(net_arch=[16], batch_size=16, learning_starts=100, train_freq=25, gradient_steps=5,
                 buffer_size=2_000, target_update_interval=100)
FRAMES = "pearl/Frames-4x10x10-v0"


def test_rings_and_batches_hold_uint8_frames_of_the_observation_shape():
    algo = pearl.DQN(FRAMES, **PIXEL_DQN)
    assert ring_fields(algo)["obs"] == (np.dtype(np.uint8), (4, 10, 10))
    assert batch_fields(algo)["next_obs"] == (np.dtype(np.uint8), (16, 4, 10, 10))


def test_two_actors_fill_the_frame_replay_and_the_learner_takes_the_serial_updates(tmp_path):
    algo = pearl.DQN(FRAMES, **PIXEL_DQN)
    plan = Plan.single_device(algo.protocol())
    plan = dataclasses.replace(plan, placements={**plan.placements, "env_step": Placement("cpu", replicas=2)})
    for replay in ("colocated", "server"):
        result = ParallelExecutor(algo, plan, seed=1, out_dir=tmp_path / replay, eval_episodes=1, progress=False,
                                  replay=replay).run(400)
        assert result.env_steps == 400 and result.gradient_steps == (400 - 100) // 25 * 5
        assert result.kernel_times["replay_insert"]["calls"] == 400
