"""A running Ray cluster read as a :class:`Platform`, and the Ray nodes a plan made on it places its components on.

Each alive node is a host, ``node<i>.cpu`` and ``node<i>.gpu<j>``, joined by a ``tcp-40gbe`` link (modelled); each
device's ``node`` is the Ray node id the run places components on (:func:`placement_nodes`). docs/ray.md, "The
cluster as a platform".

Example::

    >>> platform = cluster_platform("127.0.0.1:6379")
    >>> [d.name for d in platform]
    ['node0.cpu', 'node1.cpu']
    >>> platform.description.splitlines()[1]
    "node0.cpu: 127.0.0.1 (head), myhost, 2 CPUs of Intel Xeon ... (this machine's CPU: its calibration)"
"""
from __future__ import annotations

import dataclasses
import socket
from types import ModuleType
from typing import Any

from pearl_py.errors import UserError
from pearl_py.plan import Plan
from pearl_py.platform.catalogue import Catalogue
from pearl_py.platform.local import (generic_gpu_spec, local_cpu_spec, local_gpu_specs, match_gpu,
                                     read_cpuinfo)
from pearl_py.platform.platform import Device, Platform
from pearl_py.platform.spec import LinkSpec

CLUSTER_PLATFORM = "ray-cluster"
"""The name of a platform read from a Ray cluster; a plan made on it places its components on its nodes."""
NETWORK_LINK = "tcp-40gbe"
"""The catalogue link between nodes (modelled: a cluster does not say what its network is)."""
ASSUMED_GPU_SMS = 80
"""Streaming multiprocessors assumed for a GPU of another host that no catalogue entry matches."""
CONNECT_TIMEOUT_S = 5.0
SAME_CPU = ("vendor_id", "cpu family", "model", "model name")
"""The cpuinfo fields that make a node's CPU this machine's (and so calibrated here)."""


@dataclasses.dataclass(frozen=True)
class ClusterNode:
    """One alive Ray node as its node table and its own ``/proc/cpuinfo`` describe it."""

    node_id: str
    ip: str
    head: bool
    cpus: int
    gpus: int
    memory_bytes: float
    accelerator: str | None
    cpuinfo: dict[str, str]
    hostname: str


def check_address(address: str) -> None:
    """Nothing when something listens at ``HOST:PORT`` (or the address is Ray's ``auto``); else the
    :class:`UserError` that says what is wrong (``ray.init`` would retry an unreachable address for minutes)."""
    if address == "auto":
        return
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UserError(f"--address {address!r}: expected HOST:PORT of a Ray cluster's head (`ray start --head` "
                        "prints it)")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise UserError(f"--address {address}: no Ray cluster answers there ({exc.strerror or exc}); start one "
                        "with `ray start --head --port PORT`") from None


def _probe() -> tuple[dict[str, str], str]:
    """On a node: its CPU's cpuinfo and its host name."""
    return read_cpuinfo(), socket.gethostname()


def cluster_nodes(ray: ModuleType) -> list[ClusterNode]:
    """The alive nodes of the connected cluster, the head first, then by address and id."""
    alive = [n for n in ray.nodes() if n.get("Alive")]
    probe = ray.remote(num_cpus=0)(_probe)
    found = ray.get([probe.options(**node_affinity(n["NodeID"])).remote() for n in alive])
    nodes = []
    for n, (info, hostname) in zip(alive, found):
        res = n.get("Resources", {})
        accelerator = next((k.split(":", 1)[1] for k in res if k.startswith("accelerator_type:")), None)
        nodes.append(ClusterNode(node_id=n["NodeID"], ip=n["NodeManagerAddress"],
                                 head="node:__internal_head__" in res, cpus=int(res.get("CPU", 0)),
                                 gpus=int(res.get("GPU", 0)), memory_bytes=float(res.get("memory", 0.0)),
                                 accelerator=accelerator, cpuinfo=info, hostname=hostname))
    return sorted(nodes, key=lambda n: (not n.head, n.ip, n.node_id))


def nodes_platform(nodes: list[ClusterNode], address: str, catalogue: Catalogue | None = None,
                   here: dict[str, str] | None = None, hostname: str | None = None) -> Platform:
    """The platform of ``nodes`` (see the module docstring); ``here``/``hostname``: this machine's cpuinfo and name
    (default: read)."""
    catalogue = catalogue or Catalogue.load()
    here = read_cpuinfo() if here is None else here
    hostname = socket.gethostname() if hostname is None else hostname
    devices: dict[str, Device] = {}
    links: list[tuple[str, str, LinkSpec]] = []
    lines = [f"the Ray cluster at {address}: {len(nodes)} node(s), each a host; between nodes {NETWORK_LINK} "
             "(modelled)"]
    for i, node in enumerate(nodes):
        name = f"node{i}"
        if node.cpus < 1:
            continue  # a node without CPUs runs no component of a plan
        same_cpu = all(node.cpuinfo.get(k) == here.get(k) for k in SAME_CPU)
        spec = local_cpu_spec(catalogue, node.cpuinfo, cores=node.cpus, memory=round(node.memory_bytes / 1e9, 2))
        devices[f"{name}.cpu"] = Device(f"{name}.cpu", spec, node=node.node_id, local=same_cpu)
        how = "this machine's CPU: its calibration" if same_cpu else f"catalogue {spec.name}: modelled"
        where = f"{node.ip}{' (head)' if node.head else ''}, {node.hostname}"
        lines.append(f"{name}.cpu: {where}, {node.cpus} CPUs of {spec.model_name} ({how})")
        on_this_host = node.hostname == hostname
        gpus = _gpu_specs(node, catalogue, on_this_host)
        for j, (gpu, calibrated) in enumerate(gpus):
            gpu_name = f"{name}.gpu{j}"
            devices[gpu_name] = Device(gpu_name, gpu, node=node.node_id, local=calibrated)
            links.append((f"{name}.cpu", gpu_name, catalogue.link_spec(gpu.host_link)))
            lines.append(f"{gpu_name}: {gpu.model_name} ({'this machine' if calibrated else 'modelled'})")
    hosts = [d.name for d in devices.values() if d.kind == "cpu"]
    network = catalogue.link_spec(NETWORK_LINK)
    links += [(a, b, network) for k, a in enumerate(hosts) for b in hosts[k + 1:]]
    return Platform(CLUSTER_PLATFORM, devices, links, description="\n".join(lines))


def _gpu_specs(node: ClusterNode, catalogue: Catalogue, on_this_host: bool) -> list[tuple[Any, bool]]:
    """``[(spec, this machine's device)]`` for the node's GPUs."""
    if not node.gpus:
        return []
    if on_this_host:
        mine = local_gpu_specs(catalogue)
        if len(mine) >= node.gpus:
            return [(spec, True) for spec in mine[:node.gpus]]
    name = node.accelerator or "unknown GPU"
    spec = match_gpu(name, catalogue) or generic_gpu_spec(name, ASSUMED_GPU_SMS, 0.0)
    return [(spec, False)] * node.gpus


def cluster_platform(address: str, catalogue: Catalogue | None = None) -> Platform:
    """The platform of the Ray cluster at ``address`` (``HOST:PORT``); a :class:`UserError` when none answers."""
    from pearl_py.runtime.ray_backend.require import import_ray

    ray = import_ray()
    check_address(address)
    joined = not ray.is_initialized()
    if joined:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    try:
        return nodes_platform(cluster_nodes(ray), address, catalogue)
    finally:
        if joined:
            ray.shutdown()


def placement_nodes(ray: ModuleType, plan: Plan) -> dict[str, tuple[str, ...]]:
    """``{plan device: Ray node ids}`` of a plan made on a cluster (:data:`CLUSTER_PLATFORM`; else empty): a
    device's node, a pool's (``pool:MODELxN``) its members' nodes in platform order, each checked alive."""
    info = plan.prediction.platform if plan.prediction is not None else None
    if plan.platform != CLUSTER_PLATFORM or info is None:
        return {}
    alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
    nodes = {name: (d["node"],) for name, d in ((d["name"], d) for d in info.devices)}
    for name in plan.devices:
        if name.startswith("pool:"):
            model = name[len("pool:"):].rpartition("x")[0]
            nodes[name] = tuple(d["node"] for d in info.devices if d["model"] == model)
    gone = sorted(name for name in plan.devices if any(node not in alive for node in nodes.get(name, ())))
    if gone:
        raise UserError(f"the plan places components on {', '.join(gone)}, whose Ray node is not in this cluster "
                        "(any more); plan again on it with `pearl plan --address` or `pearl run --auto`")
    return {name: nodes[name] for name in plan.devices if name in nodes}


class NodePlacement:
    """Where each component of a cluster plan runs: its Ray node (actor replica ``i`` of a pool on member
    ``i mod members``, as the model and the simulator place it), and the CPUs and GPUs it reserves there.

    Example::

        >>> where = NodePlacement(ray, plan)
        >>> actor_cls.options(**where.pin({"num_cpus": 1.0}, "pool:epyc-9654x2", replica=1))
    """

    def __init__(self, ray: ModuleType, plan: Plan) -> None:
        self.nodes = placement_nodes(ray, plan)
        self.capacity = {n["NodeID"]: n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")}
        self.load: dict[tuple[str, str], float] = {}

    def node(self, device: str, replica: int = 0) -> str | None:
        nodes = self.nodes.get(device)
        return nodes[replica % len(nodes)] if nodes else None

    def spare_cpus(self, device: str) -> float:
        """CPUs the components pinned so far leave on ``device``'s node (inf: not pinned)."""
        node = self.node(device)
        if node is None:
            return float("inf")
        return float(self.capacity[node].get("CPU", 0.0)) - self.load.get((node, "CPU"), 0.0)

    def pin(self, options: dict[str, Any], device: str, replica: int = 0) -> dict[str, Any]:
        """``options`` pinned to the node of ``device`` (replica ``replica``), its CPUs and GPUs reserved there; a
        :class:`UserError` when the node has too few (Ray would wait for them for ever)."""
        node = self.node(device, replica)
        if node is None:
            return options
        for key, resource in (("num_cpus", "CPU"), ("num_gpus", "GPU")):
            load = self.load.get((node, resource), 0.0) + float(options.get(key, 0.0) or 0.0)
            have = float(self.capacity[node].get(resource, 0.0))
            if load > have + 1e-9:
                raise UserError(f"plan: {device} (Ray node {node[:12]}) has {have:g} {resource}s, fewer than the "
                                f"{load:g} its components take; plan again on this cluster")
            self.load[(node, resource)] = load
        return {**options, **node_affinity(node)}


def node_affinity(node_id: str) -> dict[str, Any]:
    """Ray actor options that pin it to ``node_id`` (hard: it runs there or not at all)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False)}
