"""Hardware: device and link specs from the catalogue (``devices/*.yaml``), platforms, local detection.

Example::

    >>> from pearl_py.platform import Platform
    >>> Platform.load("dgx-a100-node").device("gpu3").spec.memory_gb
    80.0
"""
from pearl_py.platform.catalogue import Catalogue
from pearl_py.platform.kinds import DeviceKind, device_kind, device_kinds, register
from pearl_py.platform.platform import Device, Platform
from pearl_py.platform.spec import CpuSpec, FpgaSpec, GpuSpec, LinkSpec, MemorySpec
from pearl_py.platform.yamlsrc import CatalogueError

__all__ = ["Catalogue", "CatalogueError", "CpuSpec", "Device", "DeviceKind", "FpgaSpec", "GpuSpec", "LinkSpec",
           "MemorySpec", "Platform", "device_kind", "device_kinds", "register"]
