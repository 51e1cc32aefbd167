"""Cost models: what each kernel costs on each device (time, energy, resources) and how we know.

Example::

    >>> from pearl_py.estimate import Estimator
    >>> cost = Estimator().cost(kernel, device)          # Cost(latency_s, energy_j, resources, source)
"""
from pearl_py.estimate.calibration import Calibration
from pearl_py.estimate.cost import Cost, Infeasible
from pearl_py.estimate.estimator import Estimator
from pearl_py.estimate.fpga_kernels import FpgaTemplates
from pearl_py.estimate.power import device_power_w, dynamic_energy_j

__all__ = ["Calibration", "Cost", "Estimator", "FpgaTemplates", "Infeasible", "device_power_w", "dynamic_energy_j"]
