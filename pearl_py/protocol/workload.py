"""Workload descriptors: what a kernel does, in the terms cost models read.

A workload says nothing about devices. Cost models (``pearl_py.estimate``) turn a
workload into a latency on a device; the optimizer never looks inside one.

Example::

    >>> layer = DenseLayer(n_in=4, n_out=256, batch=64, backward=True)
    >>> layer.forward_flops
    131072
    >>> net = NetworkWorkload(layers=(layer,), trained_params=1280, batch=64, family="off_policy")
    >>> net.flops
    393216.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pearl_py.protocol.layers import Conv2dLayer, FlattenLayer, PoolLayer

FLOAT_BYTES = 4
"""Parameters, activations and observations are float32 throughout pearl_py."""

ADAM_COPIES = 4
"""A learner keeps four copies of its trained weights: weights, gradients and two Adam moments (Kingma & Ba 2015)."""

ADAM_FLOPS_PER_PARAM = 12
"""Adam per parameter: two moment updates, bias corrections, sqrt, divide, step (Kingma & Ba 2015, Alg. 1)."""


@dataclass(frozen=True)
class DenseLayer:
    """One fully connected layer call: ``y = x @ W.T + b`` on ``batch`` rows.

    ``backward`` is true when the learner back-propagates through this call
    (it then costs the gradient w.r.t. input and weights as well).
    """

    n_in: int
    n_out: int
    batch: int
    backward: bool = False

    @property
    def weights(self) -> int:
        return self.n_in * self.n_out + self.n_out

    @property
    def weight_key(self) -> tuple[str, int, int]:
        """Identifies the weight matrix's shape: calls with one key read the same amount of weights."""
        return ("dense", self.n_in, self.n_out)

    @property
    def activation_elements(self) -> int:
        """Input and output elements of the call."""
        return self.batch * (self.n_in + self.n_out)

    @property
    def forward_flops(self) -> int:
        return 2 * self.batch * self.n_in * self.n_out

    @property
    def backward_flops(self) -> int:
        """Gradient w.r.t. input plus gradient w.r.t. weights: two GEMMs the size of the forward."""
        return 2 * self.forward_flops if self.backward else 0

    @property
    def dispatches(self) -> int:
        """Operators launched: the forward GEMM, and two more when back-propagated."""
        return 3 if self.backward else 1

    @property
    def gemm(self) -> tuple[int, int, int]:
        """The matrix product: ``batch`` rows of ``n_in`` against ``n_out`` outputs."""
        return (self.batch, self.n_in, self.n_out)

    @property
    def label(self) -> str:
        return f"dense {self.n_in}->{self.n_out} (x{self.batch})"


Layer = DenseLayer | Conv2dLayer | PoolLayer | FlattenLayer
"""A recorded layer call; every layer type has ``weights``, ``weight_key``, ``activation_elements``,
``forward_flops``, ``backward_flops``, ``dispatches`` and ``gemm`` (pearl_py/algorithms/recording.py records
them; the layer types besides dense ones live in :mod:`pearl_py.protocol.layers`)."""


@dataclass(frozen=True)
class NetworkWorkload:
    """Network work of an ``inference`` or ``learner_update`` call; every FLOP figure is per call.

    ``layers``: every layer call in execution order (online and target networks) over ``period`` consecutive calls
    (more than one when a loss runs every few steps, as TD3's delayed actor), FLOPs averaged over the period;
    ``trained_params``: parameters the optimizer updates over them (0 for inference). ``forms``: the math the call
    computes as the algorithm declares it (variants that implement some forms by hand run only those). ``family``: the
    algorithm family whose code runs the call (``off_policy`` or ``on_policy``, calibrated apart). ``dispatched_ops``:
    operators one call dispatched as its derivation observed (None: :attr:`layer_ops`). ``resident_bytes``: training
    data kept on the device across calls (an on-policy learner's rollout). ``updates_per_round``: a learner's calls
    per training round, over which the loop's work per round is spread (``pearl_py.protocol.kernel.LOOP_WORK``).
    """

    layers: tuple[Layer, ...]
    trained_params: int
    batch: int
    family: str
    optimizer: str = "adam"
    period: int = 1
    forms: tuple[str, ...] = ()
    dispatched_ops: float | None = None
    resident_bytes: int = 0
    updates_per_round: int = 1
    normalized: int | None = None
    """With ``normalize``, an off-policy update's: the observation values its sample is normalized in first
    (observations and next observations), work of the loop the model charges with the update; None without."""

    @property
    def forward_flops(self) -> float:
        return sum(layer.forward_flops for layer in self.layers) / self.period

    @property
    def backward_flops(self) -> float:
        return sum(layer.backward_flops for layer in self.layers) / self.period

    @property
    def optimizer_flops(self) -> float:
        return ADAM_FLOPS_PER_PARAM * self.trained_params / self.period

    @property
    def flops(self) -> float:
        return self.forward_flops + self.backward_flops + self.optimizer_flops

    @property
    def weight_bytes(self) -> int:
        """Bytes of every distinct weight matrix the call reads (layers deduplicated by shape)."""
        distinct = {layer.weight_key: layer.weights for layer in self.layers}
        return FLOAT_BYTES * sum(distinct.values())

    @property
    def activation_elements(self) -> int:
        """Inputs and outputs of every layer call: the elementwise work (bias, activation functions such as
        tanh, their derivatives) that grows with the widths, not with their products as the GEMMs do."""
        return sum(layer.activation_elements for layer in self.layers)

    @property
    def activation_bytes(self) -> int:
        return FLOAT_BYTES * self.activation_elements

    @property
    def conv_flops(self) -> float:
        """FLOPs of the convolution calls (forward and backward), per call: their own efficiency in the cost models."""
        convs = [layer for layer in self.layers if isinstance(layer, Conv2dLayer)]
        return sum(layer.forward_flops + layer.backward_flops for layer in convs) / self.period

    @property
    def has_conv(self) -> bool:
        return any(isinstance(layer, Conv2dLayer) for layer in self.layers)

    @property
    def n_ops(self) -> float:
        """Separately dispatched operations per call (the GPU model's launch and kernel-floor term): as observed,
        or :attr:`layer_ops` where the derivation did not observe them."""
        return self.layer_ops if self.dispatched_ops is None else self.dispatched_ops

    @property
    def layer_ops(self) -> float:
        """A rough count of the operations per call from the layers (their dispatches, four Adam ops per weighted
        layer): 3-4x below the observed count of an off-policy update (docs/cost-models.md §3)."""
        per_layer = sum(layer.dispatches for layer in self.layers)
        optimizer_ops = 4 * sum(1 for layer in self.layers if layer.weights) if self.trained_params else 0
        return (per_layer + optimizer_ops) / self.period


@dataclass(frozen=True)
class ReplayWorkload:
    """Work of a replay kernel call: insert ``batch`` items, sample ``batch``, or update ``batch`` priorities."""

    capacity: int
    batch: int
    item_bytes: int
    prioritized: bool = False
    fanout: int = 2

    @property
    def tree_depth(self) -> int:
        """Levels of the sum tree below the root (0 when replay is uniform)."""
        if not self.prioritized:
            return 0
        return max(1, math.ceil(math.log(max(self.capacity, 2), self.fanout)))

    @property
    def bytes_moved(self) -> int:
        return self.batch * self.item_bytes


@dataclass(frozen=True)
class EnvWorkload:
    """One ``step`` of a vector of ``n_envs`` gymnasium environments (``obs_item_bytes``: bytes of one
    observation as stored: 4 per element for float32 vectors, 1 for uint8 frames; 0 means float32)."""

    env_id: str
    obs_dim: int
    action_dim: int
    n_envs: int
    loop_family: str
    """The algorithm family whose training loop steps these envs: its own work per vector step besides the
    kernels (``pearl_py.protocol.kernel.LOOP_WORK``) is calibrated per family."""
    discrete_actions: bool = False
    obs_item_bytes: int = 0
    normalized_per_env: int | None = None
    """With ``normalize``: the observation values its transform updates and normalizes per env each step (the
    observation size, 0 with ``norm_reward`` only), work of the loop the model charges with the step; None without."""

    @property
    def obs_bytes(self) -> int:
        return (self.obs_item_bytes or FLOAT_BYTES * self.obs_dim) * self.n_envs


@dataclass(frozen=True)
class SyncWorkload:
    """Copy of the acting networks' parameters from learner to actors: ``param_bytes`` in ``tensors`` tensors (one
    copy each way per tensor); ``handshake``: each publication also hands the turn to the actors and back (the
    synchronous on-policy loop: the learner wakes its actors, they wake it with the next rollout)."""

    param_bytes: int
    tensors: int = 1
    handshake: bool = False


@dataclass(frozen=True)
class RolloutWorkload:
    """One ``rollout_insert`` call: ``batch`` transitions (one vector step of that many envs) into a rollout of
    ``n_steps x n_envs`` slots of ``item_bytes`` each (obs, action, reward, episode start, value, log-prob)."""

    n_steps: int
    n_envs: int
    item_bytes: int
    batch: int

    @property
    def bytes_moved(self) -> int:
        return self.batch * self.item_bytes

    @property
    def capacity_bytes(self) -> int:
        """The rollout's storage: every slot, plus advantages and returns (two floats each)."""
        return self.n_steps * self.n_envs * (self.item_bytes + 2 * FLOAT_BYTES)


@dataclass(frozen=True)
class AdvantageWorkload:
    """One ``advantage`` call: GAE(lambda) as a backward scan over ``n_steps`` steps of ``n_envs`` envs.

    Each step reads reward, value, episode start and the next step's value and advantage, and writes an
    advantage and a return: ``SCAN_FLOPS`` operations and ``SCAN_WORDS`` float32 words per element.
    """

    n_steps: int
    n_envs: int

    @property
    def elements(self) -> int:
        return self.n_steps * self.n_envs

    @property
    def flops(self) -> int:
        return SCAN_FLOPS * self.elements

    @property
    def bytes_moved(self) -> int:
        return SCAN_WORDS * FLOAT_BYTES * self.elements


SCAN_FLOPS = 8
"""GAE per element: ``delta = r + g*live*V' - V`` (4) and ``A = delta + g*l*live*A'`` (3), ``live = 1 - start`` (1)."""
SCAN_WORDS = 5
"""GAE per element: reads reward, value and episode start; writes advantage and return (the carried values stay
in registers)."""


Workload = NetworkWorkload | ReplayWorkload | EnvWorkload | SyncWorkload | RolloutWorkload | AdvantageWorkload


@dataclass(frozen=True)
class TransitionLayout:
    """Byte size of one stored transition: obs, action, reward, next_obs, done (+ priority).

    ``obs_bytes``: bytes of one observation as stored (0: float32, ``4 * obs_dim``; uint8 frames: ``obs_dim``);
    ``obs_copies``: observations stored per transition (2: obs and next_obs; about 1 in the frame replay,
    which keeps every distinct frame once: :mod:`pearl_py.replay.frames`).
    """

    obs_dim: int
    action_dim: int
    obs_bytes: int = 0
    obs_copies: float = 2.0

    @property
    def item_bytes(self) -> int:
        obs = self.obs_bytes or FLOAT_BYTES * self.obs_dim
        return int(math.ceil(self.obs_copies * obs)) + FLOAT_BYTES * (self.action_dim + 2)

    @property
    def sampled_bytes(self) -> int:
        """Bytes of one transition as a sampled batch carries it (obs and next_obs both, whatever is stored)."""
        return 2 * (self.obs_bytes or FLOAT_BYTES * self.obs_dim) + FLOAT_BYTES * (self.action_dim + 2)
