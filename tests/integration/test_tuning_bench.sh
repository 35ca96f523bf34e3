#!/bin/sh
# bench/tuning.py --quick: the tuning benchmark runs end to end, driving
# trainctl-tuner-driver and Optuna through the same ask/tell loop, and its
# figures are well formed (finite regrets for every function and method, a
# suggestion time, early stopping that saves epochs). Quality targets are
# the full benchmark's business (docs/benchmarks.md), not this test's.
# TAP output.
set -u
. "$(dirname "$0")/../lib.sh"
BUILD=${BUILD:-build}
export BUILD
t_tmpdir trainctl-tuning-bench
T=$T_TMP
if [ ! -x "$BUILD/bin/trainctl-tuner-driver" ]; then
	t_skip_all "no $BUILD/bin/trainctl-tuner-driver (run make)"
fi
if ! /usr/bin/python3 -c 'import optuna' 2>/dev/null; then
	t_skip_all "python3-optuna is not installed (scripts/deps.sh)"
fi
t_plan 4
timeout 120 /usr/bin/python3 bench/tuning.py --quick --procs 1 \
	--json "$T/out.json" >"$T/out.txt" 2>&1
t_ok $? "bench/tuning.py --quick runs" || t_diag_file "$T/out.txt"
check() { # name python-expression over r (the JSON figures)
	/usr/bin/python3 - "$T/out.json" "$2" <<'P' >"$T/check.txt" 2>&1
import json, math, sys
r = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
print(json.dumps(r, indent=1))
sys.exit(0 if ok else 1)
P
	t_ok $? "$1" || t_diag_file "$T/check.txt" 40
}
check "a finite regret per function and method" \
	'len(r["regret"]) == 4 and all(len(v) == 4 and all(math.isfinite(m["median"]) and m["median"] >= -1e-9 for m in v.values()) for v in r["regret"].values())'
check "a Bayesian suggestion time" \
	'r["suggest_seconds"]["observations"] > 0 and 0 < r["suggest_seconds"]["median"] < 10'
check "ASHA and the median rule use fewer epochs than running all" \
	'r["early_stopping"]["asha"]["epochs"] < r["early_stopping"]["all"]["epochs"] and r["early_stopping"]["median"]["epochs"] < r["early_stopping"]["all"]["epochs"]'
t_done
