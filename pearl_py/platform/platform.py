"""Device, Platform: the hardware a plan is made for, built from the catalogue or detected.

Example::

    >>> p = Platform.load("pearl-cpu-gpu-fpga")
    >>> [d.name for d in p]
    ['cpu', 'gpu', 'fpga']
    >>> round(p.transfer_s("gpu", "fpga", 1e6) * 1e6)   # two PCIe hops through the host
    100
    >>> len(Platform.load("cluster-64x8gpu").by_kind("gpu"))
    512
"""
from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from pearl_py.platform.catalogue import Catalogue, PlatformEntry
from pearl_py.platform.kinds import device_kind
from pearl_py.platform.spec import DeviceSpec, FpgaSpec, LinkSpec, check_keys, parse_precision
from pearl_py.platform.yamlsrc import CatalogueError


@dataclass(frozen=True)
class Device:
    """One device instance of a platform.

    ``local`` is true only for devices detected on this machine by
    :meth:`Platform.local`; their CPU costs come from the machine's calibration.
    """

    name: str
    spec: DeviceSpec
    node: str = ""
    local: bool = False

    @property
    def kind(self) -> str:
        """The name of its :class:`~pearl_py.platform.kinds.DeviceKind` (``"cpu"``, ``"gpu"``, ``"fpga"``, ...)."""
        return self.spec.kind

    @property
    def model(self) -> str:
        return self.spec.name

    @property
    def parallel_units(self) -> int:
        """How many single-threaded replicas can run at once (its kind's rule: cores for a CPU, else 1)."""
        return device_kind(self.kind).units(self.spec)

    @property
    def memory_bytes(self) -> float:
        memory_gb = getattr(self.spec, "memory_gb", None)
        return memory_gb * 1e9 if memory_gb is not None else 0.0


@dataclass
class Platform:
    """Devices and the links between them. Iterating yields devices in catalogue order."""

    name: str
    devices: dict[str, Device]
    links: list[tuple[str, str, LinkSpec]]
    description: str = ""
    counters: dict[str, bool] = field(default_factory=dict)
    """Readable energy counters (``rapl``, ``nvml``); filled by :meth:`local`."""
    reference: str = ""
    """What :meth:`load` loads it from again: a platform file's absolute path (a plan made on it records this, so
    ``pearl run --plan`` finds the platform); empty for catalogue platforms and ``local`` (their name serves)."""

    def __post_init__(self) -> None:
        # neighbours in link order; a second link between the same two devices replaces the first
        self._links: dict[str, dict[str, LinkSpec]] = {name: {} for name in self.devices}
        for a, b, link in self.links:
            for end in (a, b):
                if end not in self.devices:
                    raise CatalogueError(f"platform {self.name!r}: link to unknown device {end!r}")
            self._links[a][b] = self._links[b][a] = link
        self._paths: dict[str, dict[str, list[str]]] = {}

    def __iter__(self) -> Iterator[Device]:
        return iter(self.devices.values())

    def __len__(self) -> int:
        return len(self.devices)

    def device(self, name: str) -> Device:
        try:
            return self.devices[name]
        except KeyError:
            raise KeyError(f"platform {self.name!r} has no device {name!r}; it has {list(self.devices)}") from None

    def by_kind(self, kind: str) -> list[Device]:
        return [d for d in self if d.kind == kind]

    def route(self, src: str, dst: str) -> list[LinkSpec]:
        """Links crossed from ``src`` to ``dst`` (fastest path for a 1 MB message; empty if same device)."""
        self.device(src), self.device(dst)
        if src == dst:
            return []
        path = self.fastest_paths(src).get(dst)
        if path is None:
            raise CatalogueError(f"platform {self.name!r}: no link path from {src!r} to {dst!r}")
        return [self.link(a, b) for a, b in itertools.pairwise(path)]

    def fastest_paths(self, src: str) -> dict[str, list[str]]:
        """``{device: [src, ..., device]}``: the fastest path for a 1 MB message to each device ``src`` reaches."""
        if src not in self._paths:
            self._paths[src] = fastest_paths({a: {b: link.transfer_s(1e6) for b, link in ends.items()}
                                              for a, ends in self._links.items()}, src)
        return self._paths[src]

    def link(self, a: str, b: str) -> LinkSpec:
        """The link between neighbours ``a`` and ``b``."""
        return self._links[a][b]

    def transfer_s(self, src: str, dst: str, nbytes: float) -> float:
        """Store-and-forward time to move ``nbytes`` from ``src`` to ``dst`` (sum over hops)."""
        return sum(link.transfer_s(nbytes) for link in self.route(src, dst))

    def to_dict(self) -> dict:
        """Plain data for plans and reports."""
        return {
            "name": self.name,
            "description": self.description,
            "devices": [{"name": d.name, "kind": d.kind, "model": d.model, "node": d.node, "local": d.local,
                         **({"training_precision": d.spec.training_precision.text}
                            if isinstance(d.spec, FpgaSpec) else {})} for d in self],
            "links": [{"between": [a, b], "type": link.name} for a, b, link in self.links],
            "counters": dict(self.counters),
        }

    @classmethod
    def load(cls, name_or_path: str | Path, catalogue: Catalogue | None = None) -> Platform:
        """A catalogue platform by name, ``"local"``, or a YAML file defining one platform.

        A file may also define extra cpus/gpus/fpgas/links its platform uses.
        """
        if str(name_or_path) == "local":
            return cls.local()
        path = Path(name_or_path)
        if path.suffix in (".yaml", ".yml") or path.exists():
            if not path.is_file():
                raise CatalogueError(f"platform file {str(path)!r} does not exist")
            catalogue = catalogue or Catalogue.load()
            names = catalogue.add_file(path)
            catalogue.check_references()
            if len(names) != 1:
                raise CatalogueError(f"must define exactly one platform, found {len(names)}", file=str(path))
            platform = build_platform(catalogue.platforms[names[0]], catalogue)
            platform.reference = str(path.resolve())
            return platform
        catalogue = catalogue or Catalogue.load()
        if str(name_or_path) not in catalogue.platforms:
            known = ", ".join(sorted(catalogue.platforms))
            raise CatalogueError(f"unknown platform {str(name_or_path)!r}; known: {known}, local, or a YAML path")
        return build_platform(catalogue.platforms[str(name_or_path)], catalogue)

    @classmethod
    def local(cls) -> Platform:
        """This machine: cores, memory, CUDA devices and readable energy counters."""
        from pearl_py.platform.local import detect_local_platform

        return detect_local_platform()


_NODE_KEYS = ["devices", "links"]
_PLATFORM_KEYS = ["description", "devices", "links", "nodes", "node", "network"]


def build_platform(entry: PlatformEntry, catalogue: Catalogue) -> Platform:
    """Expand a platform entry (groups with counts, node replication, network) into devices and links."""
    doc, where, body = entry.doc, entry.path, entry.body
    check_keys(body, _PLATFORM_KEYS, [], where, doc.error)
    devices: list[Device] = []
    links: list[tuple[str, str, LinkSpec]] = []
    if "nodes" in body:
        check_keys(body, ["description", "nodes", "node", "network"], ["nodes", "node", "network"], where, doc.error)
        nodes = body["nodes"]
        if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
            raise doc.error(where + ("nodes",), f"must be a whole number >= 1, got {nodes!r}")
        network = _link(body["network"], catalogue, doc, where + ("network",))
        hosts = []
        for n in range(nodes):
            node_devices, node_links = _expand_node(body["node"], catalogue, doc, where + ("node",), f"node{n}")
            devices += node_devices
            links += node_links
            cpus = [d for d in node_devices if device_kind(d.kind).one_host]
            if not cpus:
                raise doc.error(where + ("node", "devices"), "a node needs a cpu to attach to the network")
            hosts.append(cpus[0].name)
        links += [(a, b, network) for a, b in itertools.combinations(hosts, 2)]
    else:
        check_keys(body, ["description", "devices", "links"], ["devices"], where, doc.error)
        devices, links = _expand_node(body, catalogue, doc, where, "")
    return Platform(entry.name, {d.name: d for d in devices}, links, description=str(body.get("description", "")))


def _link(name: object, catalogue: Catalogue, doc, where: tuple) -> LinkSpec:
    if name not in catalogue.links:
        raise doc.error(where, f"unknown link type {name!r}; known: {', '.join(sorted(catalogue.links))}")
    return catalogue.links[name]


def _expand_node(body: dict, catalogue: Catalogue, doc, where: tuple, node: str):
    check_keys(body, _PLATFORM_KEYS if not node else _NODE_KEYS, ["devices"], where, doc.error)
    groups: dict[str, list[str]] = {}
    devices = []
    prefix = f"{node}." if node else ""
    for group, item in body["devices"].items():
        here = where + ("devices", group)
        check_keys(item, ["type", "count", "training_precision"], ["type"], here, doc.error)
        if item["type"] in catalogue.parts:
            raise doc.error(here + ("type",), f"{item['type']!r} is a bare FPGA part (fpga_parts: for pearl "
                                              f"fpga-design); a platform needs a board from fpgas:")
        if item["type"] not in catalogue.devices:
            raise doc.error(here + ("type",), f"unknown device type {item['type']!r}; "
                                              f"known: {', '.join(sorted(catalogue.devices))}")
        spec = catalogue.devices[item["type"]]
        if "training_precision" in item:   # the board's kernels trained at another precision than its entry's
            if not isinstance(spec, FpgaSpec):
                raise doc.error(here + ("training_precision",), f"only an FPGA has one; {item['type']!r} is a "
                                                                f"{spec.kind}")
            precision = parse_precision(item["training_precision"], here + ("training_precision",), doc.error)
            spec = replace(spec, training_precision=precision)
        count = item.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise doc.error(here + ("count",), f"must be a whole number >= 1, got {count!r}")
        names = [f"{prefix}{group}"] if count == 1 else [f"{prefix}{group}{i}" for i in range(count)]
        groups[group] = names
        devices += [Device(name, spec, node=node) for name in names]
    links = []
    for i, item in enumerate(body.get("links") or []):
        here = where + ("links", i)
        check_keys(item, ["between", "type"], ["between", "type"], here, doc.error)
        ends = item["between"]
        if not isinstance(ends, list) or len(ends) != 2:
            raise doc.error(here + ("between",), f"must list two device groups, got {ends!r}")
        for end in ends:
            if end not in groups:
                raise doc.error(here + ("between",), f"link to unknown device {end!r}; devices: {', '.join(groups)}")
        link = _link(item["type"], catalogue, doc, here + ("type",))
        a, b = ends
        pairs = itertools.combinations(groups[a], 2) if a == b else itertools.product(groups[a], groups[b])
        pairs = list(pairs)
        if not pairs:
            raise doc.error(here + ("between",), f"group {a!r} has one device; a link to itself needs count >= 2")
        links += [(x, y, link) for x, y in pairs]
    return devices, links


def fastest_paths(costs: Mapping[str, Mapping[str, float]], src: str) -> dict[str, list[str]]:
    """Dijkstra's shortest paths from ``src`` over ``costs[a][b]`` (non-negative): ``{node: [src, ..., node]}`` for
    each node reached. Of paths of equal cost the first found is kept, neighbours taken in ``costs``'s order (the
    choice networkx's ``single_source_dijkstra_path`` makes).

        >>> fastest_paths({"a": {"b": 1.0, "c": 3.0}, "b": {"a": 1.0, "c": 1.0}, "c": {"a": 3.0, "b": 1.0}}, "a")
        {'a': ['a'], 'b': ['a', 'b'], 'c': ['a', 'b', 'c']}
    """
    paths, done, best = {src: [src]}, set(), {src: 0.0}
    fringe, order = [(0.0, 0, src)], itertools.count(1)   # the count breaks ties in push order, never by name
    while fringe:
        cost, _, node = heapq.heappop(fringe)
        if node in done:
            continue
        done.add(node)
        for other, step in costs[node].items():
            if other not in done and (other not in best or cost + step < best[other]):
                best[other] = cost + step
                heapq.heappush(fringe, (cost + step, next(order), other))
                paths[other] = [*paths[node], other]
    return paths
