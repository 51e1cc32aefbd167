#!/usr/bin/env bash
# The wheels benchmarks/device_check.py needs on the lent GPU machine, which has torch, numpy, scipy, networkx,
# pyyaml, numba and nvidia-ml-py but reaches no network: gymnasium and its own needs, MinAtar (its needs are in the
# image) and Stable-Baselines3 (step e; it is skipped with its reason without it). About 0.7 MiB in all.
# Run it once here, in the root of the checkout the device tool sends; it downloads into .whl/ (git-ignored).
#
#   bash benchmarks/device_wheels.sh
#
# Then on the device, with carry [".whl"] (docs/gpu.md, "How to run"):
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude="$(git rev-parse --git-common-dir)/info/exclude"
grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >> "$exclude"
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
    gymnasium==1.4.0 cloudpickle==3.1.3 farama-notifications==0.0.6 MinAtar==1.0.15 stable-baselines3==2.9.2
ls -l .whl
