r"""Generalized advantage estimation, GAE(lambda) (Schulman et al. 2016), over a rollout of ``n_envs`` envs.

**The recursion.** With the TD residual of step ``t``

    delta_t = r_t + gamma * V(s_{t+1}) - V(s_t),

GAE is the exponentially weighted sum of the residuals that follow,

    A_t = sum_{l >= 0} (gamma * lambda)^l * delta_{t+l}
        = delta_t + gamma * lambda * sum_{l >= 0} (gamma * lambda)^l * delta_{t+1+l}
        = delta_t + gamma * lambda * A_{t+1},

so one backward pass over the rollout computes every ``A_t``. lambda = 0 gives the one-step
advantage ``delta_t``; lambda = 1 gives ``sum_l gamma^l r_{t+l} - V(s_t)`` (Monte Carlo, bootstrapped
at the end of the rollout). The value target is the TD(lambda) return ``R_t = A_t + V(s_t)``.

**Episode ends.** An env that ends its episode at step ``t`` starts a new one at ``t+1``
(``episode_starts[t+1]``), so ``s_{t+1}`` in the rollout belongs to the next episode: both the
bootstrap ``V(s_{t+1})`` and the carried ``A_{t+1}`` are cut by ``(1 - episode_starts[t+1])``:

    delta_t = r_t + gamma * (1 - start_{t+1}) * V(s_{t+1}) - V(s_t)
    A_t     = delta_t + gamma * lambda * (1 - start_{t+1}) * A_{t+1}.

At the last step of the rollout ``V(s_{t+1})`` is ``last_values`` (the value of the observation
after the rollout) and ``start_{t+1}`` is ``last_dones``; ``A_{t+1}`` is 0 there.

**Truncation.** A *terminated* episode has no future: the cut above is right. A *truncated*
one (a time limit) had one, worth ``V(s_final)`` of its final observation, which the cut drops.
As Stable-Baselines3 does, :func:`bootstrap_truncated` adds it back into the reward before GAE,
``r_t <- r_t + gamma * V(s_final)``, so that ``delta_t = r_t + gamma * V(s_final) - V(s_t)``: the
one-step target of a non-terminal step.

Example::

    >>> adv, ret = gae(rewards=np.ones((3, 1), np.float32), values=np.zeros((3, 1), np.float32),
    ...                episode_starts=np.zeros((3, 1), np.float32), last_values=np.zeros(1, np.float32),
    ...                last_dones=np.zeros(1, np.float32), gamma=0.5, gae_lambda=1.0)
    >>> adv[:, 0]
    array([1.75, 1.5 , 1.  ], dtype=float32)
"""
from __future__ import annotations

import numpy as np


def gae(rewards: np.ndarray, values: np.ndarray, episode_starts: np.ndarray, last_values: np.ndarray,
        last_dones: np.ndarray, gamma: float, gae_lambda: float) -> tuple[np.ndarray, np.ndarray]:
    """``(advantages, returns)``, each ``(n_steps, n_envs)`` float32, by the backward recursion above.

    ``rewards``, ``values``, ``episode_starts``: ``(n_steps, n_envs)``; ``last_values``, ``last_dones``: ``(n_envs,)``.
    Rewards already hold the truncation bootstrap (:func:`bootstrap_truncated`).
    """
    n_steps = rewards.shape[0]
    advantages = np.empty_like(rewards, dtype=np.float32)
    next_values = np.asarray(last_values, dtype=np.float32)
    next_live = 1.0 - np.asarray(last_dones, dtype=np.float32)  # 0 where s_{t+1} starts a new episode
    carried = np.zeros_like(next_values)
    for t in range(n_steps - 1, -1, -1):
        delta = rewards[t] + gamma * next_live * next_values - values[t]
        carried = delta + gamma * gae_lambda * next_live * carried
        advantages[t] = carried
        next_values = values[t]
        next_live = 1.0 - episode_starts[t]
    return advantages, advantages + values


def bootstrap_truncated(rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
                        final_values: np.ndarray, gamma: float) -> np.ndarray:
    """``rewards + gamma * V(s_final)`` where an episode was truncated and not terminated, ``rewards`` elsewhere.

    ``final_values``: V of the final observations, ``(n_envs,)`` (only the truncated entries are read).
    """
    cut = np.asarray(truncated, dtype=bool) & ~np.asarray(terminated, dtype=bool)
    return np.where(cut, rewards + gamma * final_values, rewards).astype(np.float32)
