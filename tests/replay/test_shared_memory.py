"""Shared storage: a second process attaches by name, sees and writes the same items; nothing leaks."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

import numpy as np
import pytest

from pearl_py.replay import ReplayBuffer
from pearl_py.replay.storage import _open_untracked

from .helpers import transitions

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from pearl_py.replay import ReplayBuffer

    with ReplayBuffer.attach(sys.argv[1], seed=1) as buf:
        assert len(buf) == 10 and buf.prioritized and buf.capacity == 32
        batch = buf.sample(64)
        assert set(batch.actions.tolist()) <= set(range(10))
        buf.update_priorities(np.array([3]), np.array([50.0]))
        obs = np.full((2, 4), 7.0, dtype=np.float32)
        print(buf.add(obs, np.array([70, 71]), [1.0, 1.0], obs, [True, False]).tolist())
""")


def segment_exists(name: str) -> bool:
    """Whether the segment exists, checked without registering it with this process's resource tracker."""
    try:
        _open_untracked(name).close()
    except FileNotFoundError:
        return False
    return True


@pytest.fixture
def name():
    segment = f"pearl_test_{uuid.uuid4().hex[:12]}"
    yield segment
    assert not segment_exists(segment), "shared segment leaked"


def test_second_process_attaches_reads_and_writes(name):
    with ReplayBuffer(32, (4,), prioritized=True, fanout=16, shared_name=name) as buf:
        assert buf.shared_name == name
        buf.add(*transitions(10))
        env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
        child = subprocess.run([sys.executable, "-c", CHILD, name], capture_output=True, text=True, env=env)
        assert child.returncode == 0, child.stderr
        assert child.stdout.split("\n")[0] == "[10, 11]"
        # the child's writes, priorities and counters are visible here
        assert len(buf) == 12
        np.testing.assert_array_equal(buf._storage["actions"][10:12], [70, 71])
        assert buf._sampler.tree.leaves[3] == pytest.approx((50.0 + 1e-6) ** 0.6)
        assert buf._sampler.tree.leaves[10] == pytest.approx((50.0 + 1e-6) ** 0.6)   # new items: max priority
        # the child exiting did not unlink the segment the parent owns
        assert segment_exists(name)
    assert not segment_exists(name)


def test_attached_buffer_shares_state_within_a_process(name):
    owner = ReplayBuffer(16, (4,), shared_name=name)
    other = ReplayBuffer.attach(name, seed=2)
    owner.add(*transitions(5))
    assert len(other) == 5
    other.add(*transitions(1, start=5))
    np.testing.assert_array_equal(owner.sample(50).obs[:, 0] <= 5, True)
    other.close()
    assert segment_exists(name)                     # only the owner unlinks
    owner.close()


def test_close_unlinks_even_while_a_sample_is_held(name):
    buf = ReplayBuffer(16, (4,), shared_name=name)
    buf.add(*transitions(4))
    batch = buf.sample(8)                            # copies, not views: survives the close
    buf.close()
    assert batch.obs.shape == (8, 4)


def test_attaching_to_a_missing_segment_is_a_clear_error():
    with pytest.raises(ValueError, match="shared_name: no shared replay storage"):
        ReplayBuffer.attach(f"pearl_missing_{uuid.uuid4().hex[:8]}")


def test_state_dict_can_be_loaded_into_shared_storage(name):
    with ReplayBuffer(16, (4,), prioritized=True) as private:
        private.add(*transitions(7))
        with ReplayBuffer.load_state_dict(private.state_dict(), shared_name=name):
            with ReplayBuffer.attach(name) as other:
                np.testing.assert_array_equal(other._storage["actions"][:7], np.arange(7))
                assert other._sampler.tree.total == pytest.approx(7.0)
