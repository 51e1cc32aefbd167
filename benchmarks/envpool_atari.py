"""EnvPool's Atari pipeline against the ``atari`` family's (SB3's ``AtariWrapper`` semantics), on Breakout with no
sticky actions (the emulator is then deterministic): which of EnvPool's options reproduce the zoo's wrapper.
Deterministic figures (no timing); needs the ``atari`` and ``envpool`` extras. docs/kernels.md ("Env backends")
quotes its output.

    PYTHONPATH=$PWD python benchmarks/envpool_atari.py
"""
from __future__ import annotations

import cv2
import envpool
import gymnasium as gym
import numpy as np

from pearl_py.envs import EnvKwargs, make_vector_env

ID, POOL_ID, STEPS = "BreakoutNoFrameskip-v4", "Breakout-v5", 300


def resized(frame: np.ndarray) -> np.ndarray:
    return cv2.resize(frame, (84, 84), interpolation=cv2.INTER_AREA)


def grey_pipelines(steps: int) -> tuple[int, int, int]:
    """(pixels differing, pixels compared, largest difference) between the zoo's grey frame (the max of the last two
    RGB frames, OpenCV's RGB2GRAY, area resize) and EnvPool's (the max of ALE's grey frames, area resize) of the same
    emulator frames, over ``steps`` 4-frame steps of random actions."""
    import ale_py

    gym.register_envs(ale_py)
    env = gym.make(ID, repeat_action_probability=0.0)
    env.reset(seed=0)
    ale, rng = env.unwrapped.ale, np.random.default_rng(0)
    differ = total = worst = 0
    for _ in range(steps):
        action = int(rng.integers(env.action_space.n))
        for frame in range(4):
            *_, terminated, truncated, _ = env.step(action)
            if frame == 2:
                rgb, grey = ale.getScreenRGB(), ale.getScreenGrayscale()
        zoo = resized(cv2.cvtColor(np.maximum(rgb, ale.getScreenRGB()), cv2.COLOR_RGB2GRAY))
        pool = resized(np.maximum(grey, ale.getScreenGrayscale()).squeeze())
        gap = np.abs(zoo.astype(int) - pool.astype(int))
        differ, total, worst = differ + int((gap > 0).sum()), total + gap.size, max(worst, int(gap.max()))
        if terminated or truncated:
            env.reset()
    return differ, total, worst


def main() -> None:
    differ, total, worst = grey_pipelines(STEPS)
    print(f"grey frames: {differ} of {total} pixels differ ({100 * differ / total:.2f}%), largest gap {worst} "
          f"levels, over {STEPS} steps")

    pool = envpool.make(POOL_ID, env_type="gymnasium", num_envs=1, seed=0, noop_max=1, episodic_life=True,
                        reward_clip=True, repeat_action_probability=0.0, use_fire_reset=True)
    obs, _ = pool.reset()
    emulator = gym.make(ID, repeat_action_probability=0.0).unwrapped
    emulator.reset(seed=0)
    emulator.ale.reset_game()
    emulator.ale.act(1)                                   # FIRE, one frame
    print("EnvPool's reset observation is reset_game then one FIRE frame:",
          np.array_equal(obs[0, -1], resized(emulator.ale.getScreenGrayscale().squeeze())),
          "| its stack holds 4 copies of it:", all(np.array_equal(obs[0, i], obs[0, -1]) for i in range(4)))

    ours = make_vector_env(ID, 1, 0, frame_stack=4, env_kwargs=EnvKwargs.from_config({"noop_max": 1}))
    first, _ = ours.reset(seed=0)
    print("atari family's reset: emulator frames since reset_game:",
          ours.envs[0].unwrapped.ale.getEpisodeFrameNumber(), "(1 no-op, FIRE and action 2 on 4 frames each)",
          "| the stack's older frames are zero:", int(first[0, :3].max()) == 0,
          "| its observation equals EnvPool's:", np.array_equal(first[0, -1], obs[0, -1]))

    rng = np.random.default_rng(1)
    for step in range(3000):
        obs, _, terminated, _, info = pool.step(np.array([int(rng.integers(4))]))
        if terminated[0] and info["lives"][0] > 0:
            obs, *_ = pool.step(np.array([0]), env_id=np.array([0], dtype=np.int32))
            print(f"EnvPool's episodic_life: a life lost at step {step} ({info['lives'][0]} left); the next "
                  f"episode's older stacked frames are the old episode's (nonzero: {int(obs[0, :3].max()) > 0}), "
                  "where VecFrameStack zeroes them")
            break


if __name__ == "__main__":
    main()
