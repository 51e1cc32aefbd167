"""Measuring this machine: ``pearl profile``'s micro-benchmarks, loop overhead, process start, GPU and power
profiling and the load rule; what they measure goes into a :class:`~pearl_py.estimate.calibration.Calibration`,
which the cost model (:mod:`pearl_py.estimate`) reads.

Example::

    >>> from pearl_py.profile.profiler import profile
    >>> calibration = profile(quick=True)
"""
