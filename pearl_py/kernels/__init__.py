"""Kernel library: implementation variants of the learner and inference kernels, per device class.

=================  ======  ==========  ====================================================
kind               device  variant     what it is
=================  ======  ==========  ====================================================
learner_update     cpu     reference   ``Learner.update``: eager autograd + ``torch.optim.Adam``
learner_update     cpu     compiled    whole step (fwd, bwd, clip, Adam) as one ``torch.compile`` graph
learner_update     cpu     fused       DQN/DDPG/TD3/SAC whole step as one numba function over BLAS (others: reference)
learner_update     gpu     reference   ``Learner.update`` on the GPU
learner_update     gpu     cuda_graph  whole step captured in a CUDA graph (needs CUDA)
inference          cpu     reference   ``algorithm.act`` under ``no_grad``
inference          cpu     fused       DQN/DDPG/TD3/SAC act (MLP; argmax/epsilon, tanh+noise, squashed Gaussian)
inference          gpu     reference   ``algorithm.act`` under ``no_grad`` on the GPU
=================  ======  ==========  ====================================================

The ``env_step`` kind's variants (which vector env steps the envs: ``reference`` and ``native_vector``) are in
``pearl_py.kernels.env_step``, registered with every family's registry.

These are the off-policy family's; the on-policy family's (PPO, A2C: ``reference`` and ``fused``
inference and learner update) are in their own registry, ``pearl_py.kernels.on_policy``
(``registry_of(family)``).

Every variant but the ``fused`` ones works for any algorithm (it is generic over the
algorithm's losses and ``act``); the ``fused`` learner update and inference implement the
declared forms of DQN, DDPG, TD3 and SAC by hand (``forms`` below: what :meth:`Variant.supports`
checks against a kernel's workload, so the planner offers them only to algorithms that declare
those forms; ``pearl_py.kernels.fused_support`` lists them) and build the reference, with a
warning, if a network turns out not to be one they handle. Example::

    >>> import pearl_py.kernels as kernels
    >>> learner = Learner(pearl.DQN("CartPole-v1", batch_size=64))
    >>> update = kernels.build(LEARNER_UPDATE, "compiled", learner)   # plan.placements[...].variant
    >>> out = update(batch)                                             # like learner.update(batch)
"""
from pearl_py.kernels import inference, learner_update
from pearl_py.kernels.channels_last import make_channels_last
from pearl_py.kernels.cuda_graph import cuda_available, make_cuda_graph
from pearl_py.kernels.fused_cpu import FORMS as FUSED_UPDATE_FORMS
from pearl_py.kernels.fused_cpu import make_fused_cpu, numba_available
from pearl_py.kernels.inference import FORMS as FUSED_ACT_FORMS
from pearl_py.kernels.registry import (
    DEVICE_CLASSES,
    FAMILY_REGISTRIES,
    REGISTRY,
    KernelUnavailable,
    Registry,
    Variant,
    build,
    compile_available,
    device_class,
    registry_of,
)
from pearl_py.protocol.kernel import INFERENCE as _INFERENCE
from pearl_py.protocol.kernel import LEARNER_UPDATE as _LEARNER
from pearl_py.protocol.kernel import KernelKind
from pearl_py.protocol.layers import Conv2dLayer
from pearl_py.protocol.workload import DenseLayer

MLP_ONLY = frozenset({DenseLayer})
CONV = frozenset({Conv2dLayer})
_CHANNELS_LAST = "Learner.update with convolution weights and frames in channels-last (NHWC) memory order"
_EAGER_UPDATE = "Learner.update: eager autograd and torch.optim.Adam, parameter by parameter"
_EAGER_ACT = "algorithm.act under torch.no_grad"

for _variant in (
    Variant("reference", _LEARNER, "cpu", learner_update.make_reference, _EAGER_UPDATE),
    Variant("compiled", _LEARNER, "cpu", learner_update.make_compiled,
            "whole step (forward, backward, clip, Adam) as one torch.compile graph", requires=compile_available),
    Variant("fused", _LEARNER, "cpu", make_fused_cpu,
            "DQN/DDPG/TD3/SAC whole step (target and online forward, loss, backward, clip, Adam, soft target "
            "update) as one numba function over BLAS, in the learner's memory", requires=numba_available,
            fallback="reference", setup_cached=True, forms=FUSED_UPDATE_FORMS, layers=MLP_ONLY),
    Variant("channels_last", _LEARNER, "cpu", make_channels_last, _CHANNELS_LAST, needs_layers=CONV),
    Variant("reference", _LEARNER, "gpu", learner_update.make_reference, _EAGER_UPDATE, requires=cuda_available),
    Variant("channels_last", _LEARNER, "gpu", make_channels_last, _CHANNELS_LAST, requires=cuda_available,
            needs_layers=CONV),
    Variant("cuda_graph", _LEARNER, "gpu", make_cuda_graph,
            "whole step captured in a CUDA graph, replayed with one launch", requires=cuda_available),
    Variant("reference", _INFERENCE, "cpu", inference.make_reference, _EAGER_ACT),
    Variant("fused", _INFERENCE, "cpu", inference.make_fused,
            "DQN/DDPG/TD3/SAC act (MLP forward; argmax + epsilon-greedy, tanh + Gaussian noise or squashed "
            "Gaussian) as one numba call over numpy views of the acting network's parameters; its own seeded "
            "random stream", requires=numba_available, fallback="reference", setup_cached=True,
            forms=FUSED_ACT_FORMS, layers=MLP_ONLY),
    Variant("reference", _INFERENCE, "gpu", inference.make_reference, _EAGER_ACT, requires=cuda_available),
):
    REGISTRY.register(_variant)

from pearl_py.kernels import on_policy as _on_policy  # noqa: E402, F401  registers the on-policy variants
from pearl_py.kernels import env_step as _env_step  # noqa: E402, F401  registers env_step's, in every family's

__all__ = ["DEVICE_CLASSES", "FAMILY_REGISTRIES", "REGISTRY", "KernelKind", "KernelUnavailable", "Registry", "Variant",
           "build", "device_class", "registry_of"]
