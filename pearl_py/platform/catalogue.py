"""The hardware catalogue: CPUs, GPUs, FPGAs, links and platforms from ``devices/*.yaml``.

Any file may hold any section (one per registered device kind, :mod:`pearl_py.platform.kinds`, and ``links``,
``platforms``, ``fpga_parts``: docs/catalogue.md); a name may be defined once across all files. Mistakes raise
:class:`CatalogueError` naming file, line and key.

Example::

    >>> cat = Catalogue.load()
    >>> cat.device_spec("a100-sxm4-80gb").fp32_tflops
    19.5
    >>> "dgx-a100-node" in cat.platforms, cat.parts["xcvu9p"].dsp
    (True, 6840)
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pearl_py.platform.kinds import spec_by_section
from pearl_py.platform.spec import DeviceSpec, FpgaPartSpec, LinkSpec, check_keys
from pearl_py.platform.yamlsrc import CatalogueError, CatalogueYaml
from pearl_py.resources import devices_dir

OTHER_SECTIONS = ("links", "platforms", "fpga_parts")
"""Sections besides the device kinds' own."""


@dataclass
class PlatformEntry:
    """A platform definition as written, kept with its file for located errors."""

    name: str
    body: dict
    doc: CatalogueYaml
    path: tuple


@dataclass
class Catalogue:
    """All device specs, FPGA parts, link specs and platform entries, by name."""

    devices: dict[str, DeviceSpec] = field(default_factory=dict)
    parts: dict[str, FpgaPartSpec] = field(default_factory=dict)
    links: dict[str, LinkSpec] = field(default_factory=dict)
    platforms: dict[str, PlatformEntry] = field(default_factory=dict)
    origin: dict[str, tuple[CatalogueYaml, tuple]] = field(default_factory=dict)

    @classmethod
    def load(cls, paths: Iterable[str | Path] | None = None) -> Catalogue:
        """Read the shipped catalogue, then every extra file or folder in ``paths``."""
        catalogue = cls()
        for path in sorted(devices_dir().glob("*.yaml")):
            catalogue.add_file(path)
        for extra in paths or ():
            extra = Path(extra)
            for path in sorted(extra.glob("*.yaml")) if extra.is_dir() else [extra]:
                catalogue.add_file(path)
        catalogue.check_references()
        return catalogue

    def add_file(self, path: str | Path) -> list[str]:
        """Validate and add one YAML file; returns the platform names it defines."""
        doc = CatalogueYaml.load(path)
        if doc.data is None:
            return []
        specs = spec_by_section()
        check_keys(doc.data, [*specs, *OTHER_SECTIONS], [], (), doc.error)
        platforms = []
        for section, entries in doc.data.items():
            if not isinstance(entries, dict):
                raise doc.error((section,), "must map names to entries")
            for name, entry in entries.items():
                where = (section, name)
                self._claim(str(name), doc, where)
                if section == "platforms":
                    if not isinstance(entry, dict):
                        raise doc.error(where, "must be a mapping")
                    self.platforms[name] = PlatformEntry(name, entry, doc, where)
                    platforms.append(name)
                elif section == "links":
                    self.links[name] = LinkSpec.from_entry(entry, where, doc.error, name=name)
                elif section == "fpga_parts":
                    self.parts[name] = FpgaPartSpec.from_entry(entry, where, doc.error, name=name)
                else:
                    self.devices[name] = specs[section].from_entry(entry, where, doc.error, name=name)
        return platforms

    def check_references(self) -> None:
        """Every device's ``host_link`` must name a known link."""
        for name, spec in self.devices.items():
            host_link = getattr(spec, "host_link", None)
            if host_link is not None and host_link not in self.links:
                doc, where = self.origin[name]
                raise doc.error(where + ("host_link",),
                                f"unknown link {host_link!r}; known links: {', '.join(sorted(self.links))}")

    def _claim(self, name: str, doc: CatalogueYaml, where: tuple) -> None:
        if name in self.origin:
            raise doc.error(where, f"{name!r} is already defined in {self.origin[name][0].file}")
        self.origin[name] = (doc, where)

    def device_spec(self, name: str) -> DeviceSpec:
        try:
            return self.devices[name]
        except KeyError:
            raise CatalogueError(f"unknown device type {name!r}; known: {', '.join(sorted(self.devices))}") from None

    def link_spec(self, name: str) -> LinkSpec:
        try:
            return self.links[name]
        except KeyError:
            raise CatalogueError(f"unknown link type {name!r}; known: {', '.join(sorted(self.links))}") from None


@functools.lru_cache(maxsize=1)
def shipped_catalogue() -> Catalogue:
    """The shipped catalogue (:meth:`Catalogue.load` without extra files), read once per process: a run builds
    ``Platform.local()`` several times, and each build parsed every shipped YAML file again. Callers only read it."""
    return Catalogue.load()
