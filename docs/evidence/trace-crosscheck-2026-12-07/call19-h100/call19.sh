set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu_carry/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
S=$PWD/scripts/trace_overhead.py
show() { python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = d.get("trace") or {}
print(sys.argv[1].rsplit("/", 1)[-1], "median step", d.get("median_ms"), "blocked", t.get("blocked_ms"), "profiler", (t.get("profiler") or {}).get("sync_ms"), "latency_us", t.get("latency_us"))
for k, v in (t.get("per_sync_us") or {}).items(): print("   ", k, v)
PY
}
cd .gpu_carry/programs/makemore
for r in 1 2; do for m in crosscheck crosscheck-noworkers trace plain; do
  timeout 70 python3 $S child --mode $m --warmup 30 --steps 60 --json $OUT/mm$r-$m.json -- makemore_timed.py -i names.txt -o out --device cuda --max-steps 100000 > $OUT/mm$r-$m.log 2>&1
  show $OUT/mm$r-$m.json; grep OWN-TIMER $OUT/mm$r-$m.log
done; done
cd ../dla
for r in 1 2; do for m in crosscheck crosscheck-noworkers; do
  timeout 90 python3 $S child --mode $m --warmup 10 --steps 40 --json $OUT/dla$r-$m.json -- main.py > $OUT/dla$r-$m.log 2>&1
  show $OUT/dla$r-$m.json
done; done
nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch;print(torch.__version__)"; date -u
