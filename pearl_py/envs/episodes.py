"""True episodes of envs whose episodes are parts of one (an Atari game's lives): the info keys that report them,
read from one env's info and from a vector env's infos (SAME_STEP autoreset, :mod:`pearl_py.envs.vector`).

An env that reports them puts, in the info of the step that ends an episode, ``game_over`` (False: only a part
ended, the game goes on after the reset), and where the game ended ``game_return`` (the unclipped return of the
whole game) and ``game_frames`` (its frames); a game that ends inside a reset is in the reset's info. An env that
reports nothing has true episodes equal to its episodes.

Example::

    >>> game_over({"game_over": False}), game_over({})
    (False, True)
"""
from __future__ import annotations

import numpy as np

GAME_OVER, GAME_RETURN, GAME_FRAMES = "game_over", "game_return", "game_frames"


def game_over(info: dict) -> bool:
    """Whether an episode that ended with ``info`` (a step's, or a reset's) ended the true episode: always, unless
    the env reports a lost life (``game_over: False``)."""
    return bool(info.get(GAME_OVER, True))


def ended_games(done: np.ndarray, infos: dict) -> list[tuple[int, float, int]] | None:
    """``(env index, unclipped return, frames)`` of the games that ended in a vector step (SAME_STEP autoreset):
    those of the ended episodes' final infos, and those that ended inside the reset that followed. None when the
    ended envs report no true episodes (every ended episode is one)."""
    final = infos.get("final_info", {})
    if not done.any() or GAME_OVER not in final:
        return None
    games = []
    for source in (final, infos):
        if GAME_RETURN in source:
            games += [(int(i), float(source[GAME_RETURN][i]), int(source[GAME_FRAMES][i]))
                      for i in np.flatnonzero(source["_" + GAME_RETURN] & done)]
    return sorted(games)
