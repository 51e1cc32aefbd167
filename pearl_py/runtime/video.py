"""A video of an evaluation episode, through gymnasium's ``RecordVideo`` (needs the ``video`` extra: moviepy).

Example::

    >>> video = EpisodeVideo("CartPole-v1", Path("cartpole.mp4"))
    >>> returns = policy.evaluate(episodes=3, env_factory=video.make_env)   # the first episode is filmed
    >>> video.finish()
    PosixPath('cartpole.mp4')
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import gymnasium as gym

from pearl_py.envs import EnvKwargs, make_env
from pearl_py.errors import UserError

VIDEO_EXTRA = 'pip install -c constraints.txt "pearl_py[video]" (moviepy, as gymnasium[other])'


def check_video_support() -> None:
    """Raise a UserError naming the extra when moviepy (which RecordVideo writes with) is missing."""
    try:
        import moviepy  # noqa: F401
    except ImportError:
        raise UserError(f"recording a video needs moviepy: {VIDEO_EXTRA}") from None


class EpisodeVideo:
    """Films the first episode of the first env :meth:`make_env` builds into ``path`` (an .mp4); the envs built
    after it are not filmed (evaluation runs its episodes side by side, one env each)."""

    def __init__(self, env_id: str, path: Path, frame_stack: int | None = None,
                 env_kwargs: EnvKwargs | None = None) -> None:
        if path.suffix.lower() != ".mp4":
            raise UserError(f"--video {path}: the video is written as MP4; name it <something>.mp4")
        check_video_support()
        self.env_id, self.path, self.frame_stack, self.env_kwargs = env_id, path, frame_stack, env_kwargs
        path.parent.mkdir(parents=True, exist_ok=True)
        self._folder = Path(tempfile.mkdtemp(prefix=".pearl-video-", dir=path.parent))
        self._filming = True

    def make_env(self) -> gym.Env:
        if not self._filming:
            return make_env(self.env_id, self.frame_stack, env_kwargs=self.env_kwargs)
        self._filming = False
        for driver in ("SDL_VIDEODRIVER", "SDL_AUDIODRIVER"):  # frames are drawn off screen: no display, no sound
            os.environ.setdefault(driver, "dummy")
        env = make_env(self.env_id, self.frame_stack, render_mode="rgb_array", env_kwargs=self.env_kwargs)  # as trained
        # a folder RecordVideo creates itself (it warns about overwriting an existing one)
        return gym.wrappers.RecordVideo(env, str(self._folder / "frames"), episode_trigger=lambda episode: episode == 0,
                                        name_prefix="eval", disable_logger=True)

    def finish(self) -> Path:
        """Move the filmed episode to ``path`` (call after the env closed); returns ``path``."""
        try:
            filmed = sorted(self._folder.glob("frames/*.mp4"))
            if not filmed:
                raise UserError(f"--video {self.path}: gymnasium's RecordVideo wrote no video (did an episode run?)")
            shutil.move(str(filmed[0]), self.path)
        finally:
            shutil.rmtree(self._folder, ignore_errors=True)
        return self.path
