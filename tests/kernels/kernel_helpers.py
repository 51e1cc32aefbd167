"""Shared pieces of the kernel tests: a deterministic batch stream and state comparison."""
from __future__ import annotations

import torch

from pearl_py.algorithms import Algorithm, Learner, TensorBatch

UPDATES = 100


def batch_stream(algo: Algorithm, n: int = UPDATES, seed: int = 0,
                 device: str = "cpu") -> list[TensorBatch]:
    """``n`` random batches at the algorithm's shapes, with non-uniform (prioritized-like) weights."""
    g = torch.Generator().manual_seed(seed)
    spec, size = algo.spec, algo.config.batch_size
    batches = []
    for _ in range(n):
        obs = torch.randn(size, spec.obs_dim, generator=g)
        if spec.discrete:
            actions = torch.randint(0, spec.action_dim, (size,), generator=g)
        else:
            actions = torch.rand(size, spec.action_dim, generator=g) * 2 - 1
        fields = (obs, actions, torch.randn(size, generator=g), torch.randn(size, spec.obs_dim, generator=g),
                  (torch.rand(size, generator=g) < 0.1).float(), torch.rand(size, generator=g) + 0.5)
        batches.append(TensorBatch(*(t.to(device) for t in fields)))
    return batches


def twin_learners(algo: Algorithm, device: str = "cpu") -> tuple[Learner, Learner]:
    """Two learners with identical initial weights."""
    torch.manual_seed(0)
    a = Learner(algo, device)
    torch.manual_seed(0)
    return a, Learner(algo, device)


def assert_same_run(algo: Algorithm, make_fast, device: str = "cpu", atol: float = 1e-4, updates: int = UPDATES,
                    same_batch: bool = False, rounds_of: int = 0) -> None:
    """Reference and ``make_fast(learner)`` agree on every step's losses and |TD|, and on the final state, over
    ``updates`` steps on the batch stream (or on its first batch every time, ``same_batch``); with ``rounds_of``,
    both learners' learning rates are set every ``rounds_of`` steps (a training round, ``lin_`` schedules)."""
    ref, fast_learner = twin_learners(algo, device)
    fast = make_fast(fast_learner)
    stream = batch_stream(algo, n=1 if same_batch else updates, device=device)
    for i, batch in enumerate(stream * updates if same_batch else stream):
        if rounds_of and i % rounds_of == 0:
            for learner in (ref, fast_learner):
                learner.set_learning_rate(1.0 - i / updates)
        torch.manual_seed(i)     # losses may draw random numbers (TD3's target smoothing, SAC's actions)
        expected = ref.update(batch)
        torch.manual_seed(i)
        got = fast(batch)
        assert got.losses.keys() == expected.losses.keys()
        for name, value in expected.losses.items():
            torch.testing.assert_close(got.losses[name], value, atol=atol, rtol=1e-4)
        if expected.td_abs is None:
            assert got.td_abs is None
        else:
            torch.testing.assert_close(got.td_abs, expected.td_abs, atol=atol, rtol=1e-4)
    assert fast_learner.gradient_steps == ref.gradient_steps == updates
    for (name, got), expected in zip(fast_learner.nets.state_dict().items(), ref.nets.state_dict().values()):
        torch.testing.assert_close(got, expected, atol=atol, rtol=1e-3, msg=name)
    for name, opt in ref.optimizers.items():
        got_state = fast_learner.optimizers[name].state_dict()["state"]
        for i, state in opt.state_dict()["state"].items():
            assert float(got_state[i]["step"]) == float(state["step"])
            torch.testing.assert_close(got_state[i]["exp_avg_sq"], state["exp_avg_sq"], atol=1e-6, rtol=1e-3)
