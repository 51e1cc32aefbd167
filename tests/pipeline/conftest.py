"""The pipeline tests share their inputs (a tiny config, a hand-written plan) through ``pipeline_inputs``."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
