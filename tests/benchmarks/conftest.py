"""The benchmark scripts are importable here by their plain names (``import device_check``), as they import each
other when run from benchmarks/."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
