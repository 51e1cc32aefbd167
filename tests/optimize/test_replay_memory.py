"""Memory admission: a replay larger than every device that may hold it is refused with its size."""
from __future__ import annotations

import pytest

import pearl_py as pearl
from pearl_py.errors import PlanningError, UserError
from pearl_py.optimize.replay_memory import check_replay_memory, replay_bytes
from pearl_py.platform import Platform


def test_replay_bytes_count_frames_once():
    frames = pearl.DQN("pearl/Frames-1x84x84-v0", frame_stack=4, buffer_size=1000, net_arch=[]).protocol()
    need, workload = replay_bytes(frames)
    assert need == 1000 * workload.item_bytes
    stored_twice = pearl.DQN("pearl/Frames-1x84x84-v0", frame_stack=4, buffer_size=1000, net_arch=[],
                             prioritized_replay=True).protocol()
    assert replay_bytes(stored_twice)[1].item_bytes > 6 * workload.item_bytes


def test_a_replay_no_device_can_hold_is_refused_at_plan_time_with_the_figure():
    algo = pearl.DQN("pearl/Frames-1x84x84-v0", frame_stack=4, buffer_size=100_000_000, net_arch=[])
    item = replay_bytes(algo.protocol())[1].item_bytes
    with pytest.raises(PlanningError, match=rf"replay of 100,000,000 transitions x {item:,} B = "
                                            rf"{100_000_000 * item / 1e9:,.1f} GB does not fit .* \(largest: cpu, "
                                            rf"256.0 GB\); lower buffer_size to at most {int(256e9 // item):,}"):
        pearl.plan(algo, "pearl-cpu-gpu-fpga")


def test_a_replay_that_fits_passes_and_available_memory_overrides():
    protocol = pearl.DQN("CartPole-v1", buffer_size=1000).protocol()
    check_replay_memory(protocol, Platform.load("pearl-cpu-gpu-fpga"))
    message = r"x 44 B = 44.0 KB does not fit .*largest: this machine, 1.0 KB\); lower buffer_size to at most 22$"
    with pytest.raises(PlanningError, match=message):
        check_replay_memory(protocol, Platform.local(), available_bytes=1000.0, where="this machine")


def test_train_refuses_a_frame_replay_larger_than_the_memory_available(monkeypatch):
    import pearl_py.pipeline.admission as admission

    algo = pearl.DQN("pearl/Frames-4x10x10-v0", buffer_size=100_000)
    storage = admission.Footprint.of(algo).storage
    replay = algo.make_replay(seed=0)
    try:  # admission counts the frame replay's own storage layout: frames once, not two float32 copies
        assert storage.bytes == replay.nbytes
    finally:
        replay.close()
    monkeypatch.setattr(admission, "available_memory_bytes", lambda *a, **k: storage.bytes / 2)
    with pytest.raises(UserError, match=r"hyperparameters\.buffer_size.*the replay"):
        pearl.train(algo, total_steps=10, progress=False)
