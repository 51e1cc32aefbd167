"""A learner's process keeps its freed memory: a NatureCNN update stops page-faulting its temporaries in."""
import subprocess
import sys
import textwrap

import pytest

from pearl_py.kernels.heap import keep_freed_memory

FAULTS = textwrap.dedent("""
    import resource, sys, torch
    import pearl_py as pearl
    from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch
    from pearl_py.kernels.affinity import LearnerThreads

    torch.set_num_threads(1)
    learner = Learner(pearl.DQN("pearl/Frames-4x84x84-v0", features_extractor="nature_cnn", net_arch=[]))
    frames = torch.zeros(32, 4, 84, 84, dtype=torch.uint8)
    batch = TensorBatch(frames, torch.zeros(32, dtype=torch.int64), torch.rand(32), frames.clone(), torch.zeros(32),
                        torch.ones(32))

    def faults_per_update():
        for _ in range(3):
            learner.update(batch)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(8):
            learner.update(batch)
        return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 8

    default = faults_per_update()
    LearnerThreads(1)          # what every executor's learner process makes
    print(default, faults_per_update())
""")


@pytest.mark.skipif(not keep_freed_memory(), reason="glibc's mallopt only")
def test_a_learner_process_stops_mapping_its_update_temporaries_anew():
    out = subprocess.run([sys.executable, "-c", FAULTS], capture_output=True, text=True, check=True)
    default, kept = map(float, out.stdout.split())
    assert default > 200          # glibc's thresholds: the update's large temporaries mapped and zeroed each step
    assert kept < default / 10
