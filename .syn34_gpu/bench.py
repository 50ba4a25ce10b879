import json, sys
sys.path.insert(0, ".")
from synclint.rule import BenchPair
from synclint.bench.pairs import Pair
from synclint.bench import harness
pairs = [Pair(p["code"], p["name"], BenchPair(**p["bench"])) for p in json.load(open(".syn34_gpu/pairs.json"))]
res = harness.run(pairs, "cuda", harness.Options(repeat=5, passes=1))
json.dump(res, open(sys.argv[1], "w"), indent=1, default=str)
for r in res["results"]:
    keys = ("code", "flagged_us", "fixed_us", "speedup", "syncs_flagged", "syncs_fixed", "same_result", "verdict", "error", "compare_note")
    print({k: r.get(k) for k in keys})
