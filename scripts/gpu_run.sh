#!/usr/bin/env bash
# On the GPU machine, from the repo root: the .item() sweep, the full bench and the fixture sync record.
#   bash scripts/gpu_run.sh [--sweep] [--name run1.json] [--select SYN1,SYN2] [--repeat 5] [--passes 5] [--isolate] [--skip-bench|--skip-record]
#   bash scripts/gpu_run.sh --compiled [--select SYN604,item] [--repeat 3] [--passes 7]   # only the compiled pairs: bench-compiled.json
# Needs the libcst wheel carried in .whl/ (the device image has no libcst; pyyaml, click,
# rich, pathspec and torch are there). Results land in $OUT (default ./gpu-out):
# item-sweep.json, bench.json, gpu-sync-record.json, progress.log, gpu-run.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
if ! python3 -c "import libcst" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu_run.sh: cannot install the wheels in .whl/ (name .whl in carry)"; exit 3; }
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
python3 scripts/gpu_run.py --out "$OUT" "$@" 2>&1 | tee "$OUT/gpu-run.log"
exit "${PIPESTATUS[0]}"
