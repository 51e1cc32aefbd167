"""The training loop's own work per vector step, besides its kernels: ``pearl profile`` measures it per family.

A serial run's training time is its kernels' time plus the loop around them: the collector's
bookkeeping (episode tracking, final observations, the step record), the logs and counters, the
rollout's or the replay's handling between the timed calls. The serial executors measure that
remainder as the timing entry ``loop`` (:data:`pearl_py.protocol.kernel.LOOP_WORK`); here a short
serial run of each family's calibration config (CartPole, the zoo's shapes, reference kernels) is
timed and its ``loop`` seconds per vector step kept as ``calibration.meta["loop_step_s"][family]``.
The cost model charges it with every ``env_step`` call (``Cost.loop_s``): actors run the same
collector, so a plan's actors carry it too (docs/cost-models.md §8).

Example::

    >>> seconds = time_loop_step("on_policy")      # ~50 us per vector step of 8 envs on the 2-core VM
    >>> calibration.meta[LOOP_STEP_KEY] = {"on_policy": seconds}
"""
from __future__ import annotations

import torch

from pearl_py.protocol.kernel import LOOP_WORK

LOOP_STEP_KEY = "loop_step_s"
"""``Calibration.meta`` key: ``{family: seconds per vector step}``."""
FAMILIES = ("off_policy", "on_policy")


def _calibration_run(family: str):
    """The family's calibration config and its length in env steps: the README's DQN shapes (one env) and the
    zoo's PPO CartPole shapes (8 envs x 32 steps), short (about a second each on the 2-core VM)."""
    import pearl_py as pearl

    if family == "on_policy":
        return pearl.PPO("CartPole-v1", n_envs=8, n_steps=32, batch_size=256, n_epochs=2), 16_384
    return pearl.DQN("CartPole-v1", net_arch=[64, 64], batch_size=64, learning_starts=1_000, train_freq=4,
                     buffer_size=10_000), 6_000


def time_loop_step(family: str) -> float | None:
    """Seconds per vector step a serial run of ``family``'s calibration config spent outside its kernels (None if
    the run measured none). One torch thread, as the executors run."""
    from pearl_py.plan import Plan
    from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor
    from pearl_py.runtime.serial import SerialExecutor

    algo, steps = _calibration_run(family)
    executor = OnPolicySerialExecutor if family == "on_policy" else SerialExecutor
    threads = torch.get_num_threads()
    try:
        result = executor(algo, seed=0, plan=Plan.single_device(algo.protocol(serialized=True)), eval_episodes=0,
                          progress=False, threads=1).run(steps)
    finally:
        torch.set_num_threads(threads)
    loop = result.kernel_times.get(LOOP_WORK)
    return loop["total_s"] / loop["calls"] if loop and loop["calls"] else None
