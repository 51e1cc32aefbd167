"""The fused CPU inference (one numba call) acts like the reference: greedy actions equal, exploration
statistics right for a seed, parameter views valid after a sync; anything else is refused with a reason."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py import kernels
from pearl_py.algorithms import Learner
from pearl_py.kernels.inference import FusedInference, supports
from pearl_py.runtime.parallel.params import ParamBoard

DQN = pearl.DQN("CartPole-v1", net_arch=[256, 256])
DDPG = pearl.DDPG("Pendulum-v1", net_arch=[64, 48])
TD3 = pearl.TD3("Pendulum-v1", net_arch=[64, 48], noise_std=0.1)
SAC = pearl.SAC("Pendulum-v1", net_arch=[64, 48])


def _builds(algo, seed=0):
    torch.manual_seed(seed)
    nets = Learner(algo).nets
    return nets, kernels.build("inference", "reference", algo, nets, device_class="cpu"), \
        kernels.build("inference", "fused", algo, nets, device_class="cpu")


@pytest.mark.parametrize("n_envs", [1, 16])
def test_dqn_greedy_actions_equal_reference_exactly(n_envs):
    rng = np.random.default_rng(0)
    for seed in range(5):                             # fresh random weights each time
        _, reference, fused = _builds(DQN, seed)
        for _ in range(40):
            obs = (rng.standard_normal((n_envs, 4)) * rng.uniform(0.1, 3)).astype(np.float32)
            got = fused(obs, explore=False, progress=1.0)
            assert got.dtype == np.int64 and got.shape == (n_envs,)
            np.testing.assert_array_equal(got, reference(obs, explore=False, progress=1.0))


@pytest.mark.parametrize("algo", [DDPG, TD3, SAC], ids=["ddpg", "td3", "sac"])
@pytest.mark.parametrize("n_envs", [1, 16])
def test_continuous_greedy_actions_equal_reference(n_envs, algo):
    """Continuous actions (DDPG's and TD3's tanh actor, SAC's tanh(mean)): equal up to float32 summation order
    (BLAS differs from torch's), < 1e-6."""
    rng = np.random.default_rng(1)
    for seed in range(5):
        _, reference, fused = _builds(algo, seed)
        for _ in range(40):
            obs = rng.standard_normal((n_envs, 3)).astype(np.float32)
            got = fused(obs, explore=False, progress=1.0)
            assert got.dtype == np.float32 and got.shape == (n_envs, 1)
            np.testing.assert_allclose(got, reference(obs, explore=False, progress=1.0), atol=1e-6, rtol=0)


def test_dqn_epsilon_greedy_statistics_and_determinism():
    nets, _, _ = _builds(DQN)
    obs = np.zeros((64, 4), np.float32)
    greedy = FusedInference(DQN, nets, seed=7)(obs, explore=False, progress=1.0)
    runs = []
    for _ in range(2):
        infer = FusedInference(DQN, nets, seed=7)
        runs.append(np.stack([infer(obs, explore=True, progress=0.05) for _ in range(300)]))
    np.testing.assert_array_equal(runs[0], runs[1])              # same seed, same stream
    eps = DQN.epsilon(0.05)
    random_rate = (runs[0] != greedy).mean()                     # a random action differs half the time (A=2)
    assert abs(random_rate - eps / 2) < 0.02, (random_rate, eps)
    other = np.stack([FusedInference(DQN, nets, seed=8)(obs, explore=True, progress=0.05) for _ in range(300)])
    assert not np.array_equal(other, runs[0])


def test_dqn_default_seed_is_torch_initial_seed():
    nets, _, _ = _builds(DQN)
    obs = np.zeros((256, 4), np.float32)
    torch.manual_seed(123)
    a = kernels.build("inference", "fused", DQN, nets)(obs, explore=True, progress=0.0)
    b = FusedInference(DQN, nets, seed=123)(obs, explore=True, progress=0.0)
    np.testing.assert_array_equal(a, b)


def test_ddpg_noise_std_and_clip():
    algo = pearl.DDPG("Pendulum-v1", net_arch=[16], noise_std=0.1)
    nets, _, _ = _builds(algo)
    obs = np.random.default_rng(2).standard_normal((4096, 3)).astype(np.float32)
    infer = FusedInference(algo, nets, seed=3)
    mean = infer(obs, explore=False, progress=0.5)
    noisy = infer(obs, explore=True, progress=0.5)
    inside = np.abs(mean) < 0.6                                  # no clipping within 4 sigma
    noise = (noisy - mean)[inside]
    assert abs(noise.mean()) < 0.01 and abs(noise.std() - 0.1) < 0.005
    wide = FusedInference(pearl.DDPG("Pendulum-v1", net_arch=[16], noise_std=5.0), nets, seed=3)
    clipped = wide(obs, explore=True, progress=0.5)
    assert clipped.min() == -1.0 and clipped.max() == 1.0
    np.testing.assert_array_equal(FusedInference(algo, nets, seed=3)(obs, explore=True, progress=0.5), noisy)


def test_sac_explores_with_the_squashed_gaussian_of_the_actor():
    """Pre-squash actions atanh(a) ~ N(mean, exp(clamp(log_std))^2) per row, from the kernel's seeded stream."""
    nets, _, _ = _builds(SAC)
    last = nets.online["actor"][-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(torch.tensor([0.3, -1.0]))       # mean 0.3, std e^-1 = 0.368 at every observation
    obs = np.random.default_rng(2).standard_normal((20000, 3)).astype(np.float32)
    infer = FusedInference(SAC, nets, seed=3)
    u = np.arctanh(infer(obs, explore=True, progress=0.5).astype(np.float64))
    assert abs(u.mean() - 0.3) < 0.01 and abs(u.std() - np.exp(-1.0)) < 0.01
    np.testing.assert_allclose(infer(obs[:5], explore=False, progress=0.5), np.tanh(0.3), rtol=1e-6)
    with torch.no_grad():
        last.bias.copy_(torch.tensor([0.0, 30.0]))       # log std clamped to 2: |u| ~ |N(0, e^4)|
    u = np.arctanh(np.clip(infer(obs, explore=True, progress=0.5).astype(np.float64), -1 + 1e-7, 1 - 1e-7))
    assert 0.80 < (np.abs(u) > 1.5).mean() < 0.88
    again = FusedInference(SAC, nets, seed=3)
    np.testing.assert_array_equal(again(obs, explore=True, progress=0.5), FusedInference(SAC, nets, seed=3)(
        obs, explore=True, progress=0.5))


def test_td3_acts_with_the_ddpg_kernel_through_its_declared_form():
    nets, _, fused = _builds(TD3)
    ddpg_kernel = FusedInference(DDPG, _builds(DDPG)[0]).kernel
    assert TD3.declared_acting_form() == "deterministic_actor_noise" and fused.kernel is ddpg_kernel


@pytest.mark.parametrize("algo", [DQN, DDPG, SAC], ids=["dqn", "ddpg", "sac"])
def test_views_see_a_param_sync_and_replaced_storage(algo):
    name = algo.acting_networks[0]
    nets, reference, fused = _builds(algo, 0)
    source = Learner(algo).nets                               # other weights (the learner's newer ones)
    with torch.no_grad():
        for p in source.online[name].parameters():
            p.mul_(-1.5).add_(0.01)
    obs = np.random.default_rng(3).standard_normal((32, algo.spec.obs_dim)).astype(np.float32)
    before = fused(obs, explore=False, progress=1.0)
    board = ParamBoard.create(source.acting_state(algo.acting_networks), name=None)
    try:
        assert board.read_into(nets.acting_state(algo.acting_networks))   # in place, as actors sync
    finally:
        board.close()
    after = fused(obs, explore=False, progress=1.0)
    np.testing.assert_allclose(after, reference(obs, explore=False, progress=1.0), atol=1e-6, rtol=0)
    assert not np.array_equal(after, before)
    linear = nets.online[name][0]                              # storage replaced (fused learner adopt)
    linear.weight.data = linear.weight.data.clone() * 2.0
    np.testing.assert_allclose(fused(obs, explore=False, progress=1.0),
                               reference(obs, explore=False, progress=1.0), atol=1e-6, rtol=0)


def test_fused_inference_follows_the_fused_learner_update():
    """Built before the fused learner adopts the parameters into its flat buffers: still current after."""
    from kernel_helpers import batch_stream

    from pearl_py.kernels.fused_cpu import make_fused_cpu

    algo = pearl.DQN("CartPole-v1", net_arch=[32, 32], batch_size=16)
    learner = Learner(algo)
    fused = kernels.build("inference", "fused", algo, learner.nets)
    reference = kernels.build("inference", "reference", algo, learner.nets)
    update = make_fused_cpu(learner)
    obs = np.random.default_rng(4).standard_normal((64, 4)).astype(np.float32)
    for batch in batch_stream(algo, 20):
        update(batch)
        np.testing.assert_array_equal(fused(obs, explore=False, progress=1.0),
                                      reference(obs, explore=False, progress=1.0))


def test_results_do_not_alias_the_workspace():
    nets, _, fused = _builds(DDPG)
    first = fused(np.zeros((2, 3), np.float32), explore=False, progress=1.0)
    kept = first.copy()
    fused(np.ones((2, 3), np.float32), explore=False, progress=1.0)
    np.testing.assert_array_equal(first, kept)


def test_unsupported_refused_with_reason_and_reference_built_instead():
    class MyDQN(pearl.DQN):  # its own act, no form declared: DQN's declaration no longer holds ("custom")
        def act(self, nets, obs, *, explore, progress):
            return nets.online.q(obs).argmin(dim=1)

    algo = MyDQN("CartPole-v1", net_arch=[8])
    nets = Learner(algo).nets
    ok, why = supports(algo, nets)
    assert not ok and why == ("the fused inference implements the acting forms epsilon_greedy_q, "
                              "deterministic_actor_noise, squashed_gaussian, not dqn's custom (use the reference "
                              "variant)")
    with pytest.warns(RuntimeWarning, match="running the 'reference' variant instead"):
        infer = kernels.build("inference", "fused", algo, nets, device_class="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert infer(np.zeros((3, 4), np.float32), explore=False, progress=1.0).shape == (3,)

    class RenamedDQN(pearl.DQN):  # DQN's act kept: the fused kernel runs it
        pass

    assert supports(RenamedDQN("CartPole-v1", net_arch=[8]), nets) == (True, "")
    nets.online["q"] = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Sigmoid(), torch.nn.Linear(8, 2))
    ok, why = supports(pearl.DQN("CartPole-v1"), nets)
    assert not ok and "Linear(bias)/ReLU" in why
    assert pearl.DQN.acting_form == MyDQN.__mro__[1].acting_form == "epsilon_greedy_q"


def test_a_subclass_that_keeps_the_math_keeps_the_fused_inference():
    class Renamed(pearl.SAC):
        name = "renamed-sac"

    kernel = Renamed("Pendulum-v1", net_arch=[8]).protocol().kernel("inference")
    assert kernel.workload.forms == ("squashed_gaussian",)
    assert kernels.REGISTRY.get("inference", "fused", "cpu").supports(kernel) is None
