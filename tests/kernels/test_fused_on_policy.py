"""The on-policy ``fused`` kernels against the reference: the minibatch step of PPO and A2C, and the acting kernel.

The fused learner step runs the reference step's arithmetic in another summation order (float rounding only);
the fused acting kernel is row-invariant: a row's action, value and log-probability do not depend on the other
rows of its call, bit for bit (what lets actors split the envs and still collect the serial run's rollout).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
from pearl_py.algorithms.on_policy.noise import env_uniforms
from pearl_py.kernels.on_policy import build_acting, install_update, learner_update

pytest.importorskip("numba")

CASES = {
    "ppo discrete": (pearl.PPO, "CartPole-v1", dict(n_steps=16, n_envs=4, batch_size=16, n_epochs=3)),
    "ppo discrete, value clip, relu": (pearl.PPO, "CartPole-v1", dict(n_steps=16, n_envs=4, batch_size=32,
                                                                      n_epochs=2, clip_range_vf=0.2,
                                                                      activation_fn="relu", ent_coef=0.01)),
    "ppo gaussian": (pearl.PPO, "Pendulum-v1", dict(n_steps=16, n_envs=4, batch_size=16, n_epochs=2,
                                                    ent_coef=0.01)),
    "a2c rmsprop": (pearl.A2C, "CartPole-v1", dict(n_steps=5, n_envs=4)),
    "a2c adam, gaussian": (pearl.A2C, "Pendulum-v1", dict(n_steps=5, n_envs=4, use_rms_prop=False,
                                                          normalize_advantage=True)),
}


def learners(make, env_id, hyper):
    algo = make(env_id, net_arch=[32, 32], **hyper)
    pair = []
    for variant in ("reference", "fused"):
        torch.manual_seed(0)
        learner = OnPolicyLearner(algo)
        install_update(variant, learner)
        pair.append(learner)
    return algo, pair


def random_rollout(algo, learner, seed: int):
    """A rollout of random observations, the policy's own actions and log-probabilities, random rewards."""
    cfg, spec = algo.config, algo.spec
    rng = np.random.default_rng(seed)
    shape = (cfg.n_steps, cfg.n_envs)
    obs = rng.standard_normal(shape + (spec.obs_dim,), dtype=np.float32)
    acting = build_acting("reference", algo, learner.nets)
    acted = [acting(obs[t], env_uniforms(seed, range(cfg.n_envs), t, acting.noise_width)) for t in range(shape[0])]
    rollout = algo.make_rollout(seed=seed)
    rollout.fill(obs, np.stack([a.actions for a in acted]), rng.standard_normal(shape, dtype=np.float32),
                 (rng.random(shape) < 0.1).astype(np.float32),
                 np.stack([a.values for a in acted]) + rng.normal(0, 0.1, shape).astype(np.float32),
                 np.stack([a.log_probs for a in acted]))
    rollout.compute_advantages(np.zeros(cfg.n_envs, np.float32), np.zeros(cfg.n_envs, np.float32), cfg.gamma,
                               cfg.gae_lambda)
    return rollout


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_minibatch_steps_equal_the_reference_steps(case):
    algo, (reference, fused) = learners(*CASES[case])
    for k in range(3):           # three rollouts: the optimizer state carries over
        rollout = random_rollout(algo, reference, seed=k)
        twin = random_rollout(algo, reference, seed=k)           # the same data, its own minibatch generator
        expected = reference.learn(rollout, progress_remaining=1.0 - k / 3)
        got = fused.learn(twin, progress_remaining=1.0 - k / 3)
        assert fused.gradient_steps == reference.gradient_steps
        for name in ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction"):
            if getattr(expected, name, None) is not None:
                assert getattr(got, name) == pytest.approx(getattr(expected, name), rel=1e-3, abs=1e-5), name
    steps = reference.gradient_steps
    assert steps == 3 * algo.config.epochs_per_rollout * algo.config.minibatches_per_epoch
    lr = algo.config.learning_rate(1.0)
    for (name, p), q in zip(reference.nets.online.named_parameters(), fused.nets.online.parameters()):
        # a step moves a parameter by about the learning rate: the two agree to a small fraction of one step
        assert torch.allclose(p, q, rtol=0, atol=0.05 * lr), (name, float((p - q).abs().max()))
        assert not torch.equal(p, torch.zeros_like(p))


@pytest.mark.parametrize("case", ["ppo discrete", "a2c rmsprop"])
def test_fused_and_reference_steps_alternating_on_one_learner_equal_the_reference_steps(case):
    """What a run's variant switch relies on: the fused and reference steps share one learner's parameters and
    optimizer state (Adam's or RMSprop's moments and step counters), so alternating them mid-rollout takes the
    reference run's steps, to rounding; the fused update built after reference steps adopts their state."""
    algo, (reference, switched) = learners(*CASES[case])
    install_update("reference", switched)
    steps, calls = {"reference": switched.update}, iter(range(10_000))

    def alternating(sample, progress_remaining):   # a reference step, then a fused one, ...
        variant = ("reference", "fused")[next(calls) % 2]
        if variant not in steps:
            steps[variant] = learner_update(variant, switched)
        return steps[variant](sample, progress_remaining)

    switched.update = alternating
    for k in range(3):
        rollout, twin = random_rollout(algo, reference, seed=k), random_rollout(algo, reference, seed=k)
        reference.learn(rollout, progress_remaining=1.0 - k / 3)
        switched.learn(twin, progress_remaining=1.0 - k / 3)
    assert switched.gradient_steps == reference.gradient_steps and set(steps) == {"reference", "fused"}
    lr = algo.config.learning_rate(1.0)
    for p, q in zip(reference.parameters, switched.parameters):
        assert torch.allclose(p, q, rtol=0, atol=0.05 * lr)
        mine, theirs = reference.optimizer.state[p], switched.optimizer.state[q]
        assert float(mine["step"]) == float(theirs["step"]) == reference.gradient_steps
        for key in set(mine) - {"step"}:
            assert torch.allclose(mine[key], theirs[key], rtol=1e-3, atol=1e-6), key


def test_fused_step_stops_early_where_the_reference_does():
    """From equal parameters and data both compute the minibatches' KL to rounding, so they stop at the same
    step (after that rollout their parameters differ by rounding, and a KL next to the bound may go either way)."""
    algo, (reference, fused) = learners(pearl.PPO, "CartPole-v1", dict(n_steps=16, n_envs=4, batch_size=16,
                                                                        n_epochs=5, target_kl=3e-5))
    rollout, twin = (random_rollout(algo, reference, seed=0) for _ in range(2))
    reference.learn(rollout, 1.0)
    fused.learn(twin, 1.0)
    assert 0 < fused.gradient_steps == reference.gradient_steps < 5 * 4          # the KL stop cut the epochs


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_fused_acting_is_row_invariant_and_matches_the_reference(env_id):
    algo = pearl.PPO(env_id, n_envs=8, net_arch=[32, 32])
    torch.manual_seed(1)
    nets = OnPolicyLearner(algo).nets
    fused, reference = build_acting("fused", algo, nets), build_acting("reference", algo, nets)
    obs = np.random.default_rng(0).standard_normal((8, algo.spec.obs_dim), dtype=np.float32)
    noise = env_uniforms(0, range(8), 3, fused.noise_width)
    whole = fused(obs, noise)
    parts = [fused(obs[a:b], noise[a:b]) for a, b in ((0, 3), (3, 4), (4, 8))]
    for field in ("actions", "values", "log_probs"):
        assert np.array_equal(np.concatenate([getattr(p, field) for p in parts]), getattr(whole, field)), field
    assert np.array_equal(fused.values(obs[2:5]), whole.values[2:5])
    expected = reference(obs, noise)
    if algo.spec.discrete:
        assert np.array_equal(whole.actions, expected.actions)
    else:
        np.testing.assert_allclose(whole.actions, expected.actions, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(whole.values, expected.values, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(whole.log_probs, expected.log_probs, rtol=1e-5, atol=1e-5)


def test_env_uniforms_depend_on_seed_env_and_step_only():
    u = env_uniforms(7, range(8), 11, 2)
    assert u.dtype == np.float32 and u.shape == (8, 2) and (u > 0).all() and (u <= 1).all()
    assert np.array_equal(env_uniforms(7, range(5, 8), 11, 2), u[5:])
    assert not np.array_equal(env_uniforms(7, range(8), 12, 2), u)
    assert not np.array_equal(env_uniforms(8, range(8), 11, 2), u)
    # 24-bit uniforms: below 0.5 every value is exactly (k + 0.5) * 2**-24, an odd multiple of 2**-25
    many = env_uniforms(0, range(1000), 0, 1).astype(np.float64)
    low = many[many < 0.5]
    assert len(low) > 400 and np.all(np.mod(low * 2 ** 25, 2) == 1)


def test_env_streams_draw_what_env_uniforms_draws_at_every_step():
    from pearl_py.algorithms.on_policy.noise import EnvStreams

    streams = EnvStreams(123, range(3, 11))
    for step in (0, 1, 7, 12_345, 2 ** 40):
        for width in (1, 2, 4):
            assert np.array_equal(streams.uniforms(step, width), env_uniforms(123, range(3, 11), step, width))
    # pinned (seeded runs depend on them): env 3's two draws at step 7 under seed 123
    assert streams.uniforms(7, 2)[0].tolist() == [0.8896129131317139, 0.7908990383148193]
