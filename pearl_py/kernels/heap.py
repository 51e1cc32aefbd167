"""Keep a learner process's freed memory in its heap, so that an update's large temporaries are not mapped anew.

glibc's malloc serves a block above its mmap threshold (128 KiB, raised to the largest block freed so far, up
to 32 MiB) by a fresh ``mmap``, and trims the heap's free top above its trim threshold: either way the memory
goes back to the kernel when freed, and the next update's block of the same size is mapped again, every page
of it zeroed in a page fault. A NatureCNN update at batch 32 made ~1,500-2,100 minor faults (6-8 MiB zeroed)
each (docs/kernels.md, "A learner's freed memory"). :func:`keep_freed_memory` fixes both thresholds once per
process (``mallopt``): blocks up to 32 MiB come from the heap, and up to 256 MiB of freed memory stays there.
The process's peak is unchanged (what is kept was in use); its resident size stays nearer that peak.

Example::

    >>> keep_freed_memory()        # glibc: True, once set; elsewhere False (nothing to do)
    True
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
"""``mallopt`` parameters (glibc's malloc.h)."""
MMAP_THRESHOLD = 32 << 20
"""Blocks up to this size come from the heap: glibc's own ceiling for its dynamic threshold."""
TRIM_THRESHOLD = 256 << 20
"""Freed memory kept at the heap's top before it is given back."""


@functools.cache
def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds for this process (once; later calls return the first answer).
    False where the C library is not glibc (``mallopt`` absent) or refuses a value."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
