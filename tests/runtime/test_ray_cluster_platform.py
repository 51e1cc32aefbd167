"""A Ray cluster read as a platform (pearl_py.runtime.ray_backend.cluster), from node records: no Ray needed."""
from __future__ import annotations

import socket

import pytest

from pearl_py.errors import UserError
from pearl_py.platform.catalogue import Catalogue
from pearl_py.runtime.ray_backend.cluster import (CLUSTER_PLATFORM, NETWORK_LINK, ClusterNode, check_address,
                                                  nodes_platform)

HERE = {"vendor_id": "AuthenticAMD", "cpu family": "25", "model": "17", "model name": "AMD EPYC 9654 96-Core",
        "flags": "fma avx2"}
OTHER = {"vendor_id": "GenuineIntel", "cpu family": "6", "model": "85", "model name": "Some Xeon", "cpu MHz": "2500",
         "flags": "fma avx512f"}


def _node(i: int, info: dict[str, str], cpus: int = 2, head: bool = False, host: str = "here") -> ClusterNode:
    return ClusterNode(node_id=f"{i:056x}", ip=f"10.0.0.{i}", head=head, cpus=cpus, gpus=0, memory_bytes=8e9,
                       accelerator=None, cpuinfo=info, hostname=host)


def test_each_node_is_a_host_costed_from_this_machines_calibration_only_where_its_cpu_is_this_one() -> None:
    nodes = [_node(1, HERE, head=True), _node(2, HERE, cpus=3), _node(3, OTHER, cpus=4, host="far"),
             _node(4, HERE, cpus=0)]
    platform = nodes_platform(nodes, "10.0.0.1:6379", Catalogue.load(), here=HERE, hostname="here")
    assert platform.name == CLUSTER_PLATFORM
    assert [(d.name, d.spec.cores, d.local, d.node) for d in platform] == [
        ("node0.cpu", 2, True, f"{1:056x}"), ("node1.cpu", 3, True, f"{2:056x}"), ("node2.cpu", 4, False, f"{3:056x}")]
    assert platform.device("node0.cpu").spec.memory_gb == 8.0
    assert sorted((a, b, link.name) for a, b, link in platform.links) == [
        ("node0.cpu", "node1.cpu", NETWORK_LINK), ("node0.cpu", "node2.cpu", NETWORK_LINK),
        ("node1.cpu", "node2.cpu", NETWORK_LINK)]
    lines = platform.description.splitlines()
    assert lines[0] == (f"the Ray cluster at 10.0.0.1:6379: 4 node(s), each a host; between nodes {NETWORK_LINK} "
                        "(modelled)")
    assert lines[1].startswith("node0.cpu: 10.0.0.1 (head), here, 2 CPUs of ") and lines[1].endswith(
        "(this machine's CPU: its calibration)")
    assert lines[3] == ("node2.cpu: 10.0.0.3, far, 4 CPUs of Some Xeon (as xeon-cascadelake-vm) "
                        "(catalogue xeon-cascadelake-vm: modelled)")
    assert len(lines) == 4  # the node without CPUs is left out


@pytest.mark.parametrize(("address", "message"), [
    ("nonsense", r"--address 'nonsense': expected HOST:PORT of a Ray cluster's head"),
    ("127.0.0.1:x", r"expected HOST:PORT"),
])
def test_an_address_that_is_not_host_port_is_refused(address: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        check_address(address)


def test_an_address_where_nothing_listens_is_refused_at_once() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(UserError, match=rf"--address 127.0.0.1:{port}: no Ray cluster answers there"):
            check_address(f"127.0.0.1:{port}")
    check_address("auto")  # Ray's own word for the cluster this machine runs


def test_a_cluster_plan_is_checked_against_the_cluster_it_runs_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan made on a cluster's platform (its nodes pooled) passes the plan check where the cluster read again is
    the same; once a node is not, it is refused naming the device and its node; without an address, refused."""
    import dataclasses

    import pearl_py as pearl
    from pearl_py.errors import ConfigError
    from pearl_py.optimize.api import plan as optimize
    from pearl_py.pipeline.plan_check import check_plan
    from pearl_py.runtime.ray_backend import cluster

    algo = pearl.DQN("CartPole-v1")
    made_on = nodes_platform([_node(1, OTHER, head=True), _node(2, OTHER)], "10.0.0.1:6379", here=HERE)
    plan = optimize(algo.protocol(), made_on, "throughput")
    assert plan.platform == CLUSTER_PLATFORM
    plan = dataclasses.replace(plan, devices={**plan.devices, "pool:xeon-cascadelake-vmx2": "cpu"},
                               placements={**plan.placements, "env_step": dataclasses.replace(
                                   plan.placements["env_step"], device="pool:xeon-cascadelake-vmx2", replicas=2)})
    running = made_on
    monkeypatch.setattr(cluster, "cluster_platform", lambda address: running)
    check_plan(plan, algo, address="10.0.0.1:6379")
    running = nodes_platform([_node(1, OTHER, head=True), _node(5, OTHER)], "10.0.0.1:6379", here=HERE)
    with pytest.raises(ConfigError, match=rf"platform: the plan was made on another Ray cluster than the one at "
                                          rf"10.0.0.1:6379: node1.cpu \(Ray node {0:08x}\) not there"):
        check_plan(plan, algo, address="10.0.0.1:6379")
    with pytest.raises(ConfigError, match=r"run it there with --backend ray --address HOST:PORT"):
        check_plan(plan, algo)
