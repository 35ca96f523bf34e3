#!/bin/sh
# API throughput and latency of trainctld (SageMaker JSON 1.1, no auth).
#
#   sh bench/api.sh            from the repository root, after `make`
#
# 1. starts build/bin/trainctld on a free loopback port with a temp state dir
# 2. preloads BENCH_PRELOAD (10,000) jobs with concurrent CreateTrainingJob (wrk + bench/create.lua)
# 3. DescribeTrainingJob req/s of random existing jobs (wrk + bench/describe.lua)
# 4. CreateTrainingJob req/s with unique names (wrk + bench/create.lua)
# 5. grows the store to BENCH_TOTAL (100,000) jobs
# 6. ListTrainingJobs page latency, MaxResults 100 (bench/list_latency.py): walking
#    NextToken, first pages in every sort order, filtered first pages
# then prints a table against the targets (Describe >= 20,000/s, Create >= 2,000/s,
# List page p99 < 5 ms) and stops the daemon by PID. Every answer must be HTTP 200.
# Exit status 0 when all targets are met and no request failed, else 1.
#
# Knobs (environment): BENCH_PRELOAD, BENCH_TOTAL, BENCH_DURATION (10s),
# BENCH_THREADS (2), BENCH_CONNS (64), TRAINCTLD (build/bin/trainctld),
# BENCH_KEEP=1 keeps the temp dir.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
DAEMON=${TRAINCTLD:-$BUILD/bin/trainctld}
PRELOAD=${BENCH_PRELOAD:-10000}
TOTAL=${BENCH_TOTAL:-100000}
DUR=${BENCH_DURATION:-10s}
T=${BENCH_THREADS:-2}
C=${BENCH_CONNS:-64}
PY=/usr/bin/python3
T_DESCRIBE=20000
T_CREATE=2000
T_LIST_P99=5

command -v wrk >/dev/null 2>&1 || { echo "bench/api.sh: wrk not found (Debian package wrk)" >&2; exit 2; }
[ -x "$DAEMON" ] || { echo "bench/api.sh: $DAEMON not built" >&2; exit 2; }

tmp=$(mktemp -d /tmp/trainctl-bench.XXXXXX)
pid=""
wpid=""
cleanup() {
	[ -n "$wpid" ] && kill -INT "$wpid" 2>/dev/null
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		pid=""
	fi
	[ "${BENCH_KEEP:-0}" = 1 ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap 'cleanup; exit 130' INT TERM

now() { date +%s.%N; }
TCK=$(getconf CLK_TCK)
# cpu: CPU seconds the daemon has used so far (user + system).
cpu() { awk -v t="$TCK" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$pid/stat" 2>/dev/null || echo 0; }
# pct C0 C1 T0 T1: CPU use in % of one CPU between two samples.
pct() { awk -v a="$1" -v b="$2" -v s="$3" -v e="$4" 'BEGIN { printf "%.0f%%", (e > s) ? 100 * (b - a) / (e - s) : 0 }'; }
fmt() { awk -v x="$1" 'BEGIN { printf "%.0f", x }'; }

port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/state"
"$DAEMON" --listen "127.0.0.1:$port" --state-dir "$tmp/state" --local-hosts 0 >"$tmp/trainctld.log" 2>&1 &
pid=$!
if ! $PY - "$port" "$pid" <<'EOF'
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
deadline = time.time() + 20
while time.time() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(1)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
EOF
then
	echo "trainctld did not start:" >&2
	tail -n 20 "$tmp/trainctld.log" >&2
	cleanup
	exit 2
fi
URL=http://127.0.0.1:$port/
echo "trainctld pid $pid on $URL, state $tmp/state; wrk -t$T -c$C"

# result KEY FILE: the value of KEY=... on the RESULT line of FILE (0 if none).
result() { sed -n "s/^RESULT.* $1=\([0-9]*\).*/\1/p; s/^RESULT $1=\([0-9]*\).*/\1/p" "$2" | head -n1 | grep . || echo 0; }
rps() { sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$1" | head -n1 | grep . || echo 0; }
lat() { awk -v p="$2" '$1 == p { print $2 }' "$1" | head -n1; }

# load PREFIX COUNT LOG: COUNT creates (at least), as fast as wrk can; prints elapsed seconds.
load() {
	prefix=$1 count=$2 log=$3
	per=$(( (count + T - 1) / T ))
	rm -rf "$tmp/done" && mkdir -p "$tmp/done"
	t0=$(now)
	wrk -t"$T" -c"$C" -d3600s -s bench/create.lua "$URL" -- "$prefix" "$per" "$tmp/done" >"$log" 2>&1 &
	wpid=$!
	deadline=$(( $(date +%s) + 1800 ))
	while kill -0 "$wpid" 2>/dev/null; do
		[ "$(ls "$tmp/done" | wc -l)" -ge "$T" ] && break
		[ "$(date +%s)" -ge "$deadline" ] && { echo "load $prefix: still running after 30 min" >&2; break; }
		sleep 0.1
	done
	kill -INT "$wpid" 2>/dev/null
	wait "$wpid"
	wpid=""
	awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'
}

bad=0

# ---- 2. preload
echo "preloading $PRELOAD jobs ..."
el=$(load p "$PRELOAD" "$tmp/preload.log")
pre_ok=$(result ok "$tmp/preload.log"); pre_bad=$(result non200 "$tmp/preload.log")
pre_rate=$(awk -v n="$pre_ok" -v t="$el" 'BEGIN { printf "%.0f", (t > 0) ? n / t : 0 }')
echo "  $pre_ok created in ${el}s ($pre_rate/s), non-200: $pre_bad"
grep -E '^create: ' "$tmp/preload.log" | head -n 3
[ "$pre_bad" -eq 0 ] || bad=1
stored=$($PY bench/list_latency.py "$port" --names-out "$tmp/names.txt") || {
	echo "listing the preloaded jobs failed (or gave duplicate names): $stored" >&2; bad=1; }
echo "  the store lists $stored jobs"
[ "${stored:-0}" -ge 1 ] 2>/dev/null || { echo "preload made no jobs; see $tmp/preload.log" >&2; cat "$tmp/preload.log" >&2; cleanup; exit 1; }

# ---- 3. describe
echo "DescribeTrainingJob for $DUR ..."
c0=$(cpu); t0=$(now)
wrk -t"$T" -c"$C" -d"$DUR" --latency -s bench/describe.lua "$URL" -- "$tmp/names.txt" >"$tmp/describe.log" 2>&1
d_cpu=$(pct "$c0" "$(cpu)" "$t0" "$(now)")
d_rps=$(rps "$tmp/describe.log"); d_bad=$(result non200 "$tmp/describe.log"); d_body=$(result bad_body "$tmp/describe.log")
d_p50=$(lat "$tmp/describe.log" 50%); d_p99=$(lat "$tmp/describe.log" 99%)
grep -E '^describe: ' "$tmp/describe.log" | head -n 3
[ "$d_bad" -eq 0 ] && [ "$d_body" -eq 0 ] || bad=1

# ---- 4. create
echo "CreateTrainingJob for $DUR ..."
c0=$(cpu); t0=$(now)
wrk -t"$T" -c"$C" -d"$DUR" --latency -s bench/create.lua "$URL" -- c >"$tmp/create.log" 2>&1
c_cpu=$(pct "$c0" "$(cpu)" "$t0" "$(now)")
c_rps=$(rps "$tmp/create.log"); c_ok=$(result ok "$tmp/create.log"); c_bad=$(result non200 "$tmp/create.log")
c_p50=$(lat "$tmp/create.log" 50%); c_p99=$(lat "$tmp/create.log" 99%)
grep -E '^create: ' "$tmp/create.log" | head -n 3
[ "$c_bad" -eq 0 ] || bad=1

# ---- 5. grow
have=$((stored + c_ok))
g_ok=0 g_bad=0 g_rate=0
if [ "$have" -lt "$TOTAL" ]; then
	echo "growing the store from $have to $TOTAL jobs ..."
	el=$(load g $((TOTAL - have)) "$tmp/grow.log")
	g_ok=$(result ok "$tmp/grow.log"); g_bad=$(result non200 "$tmp/grow.log")
	g_rate=$(awk -v n="$g_ok" -v t="$el" 'BEGIN { printf "%.0f", (t > 0) ? n / t : 0 }')
	echo "  $g_ok created in ${el}s ($g_rate/s), non-200: $g_bad"
	grep -E '^create: ' "$tmp/grow.log" | head -n 3
	[ "$g_bad" -eq 0 ] || bad=1
fi
store=$((have + g_ok))

# ---- 6. list
echo "ListTrainingJobs latency over ~$store jobs ..."
$PY bench/list_latency.py "$port" --json "$tmp/list.json" >"$tmp/list.txt" 2>&1 || bad=1
cat "$tmp/list.txt"
l_walk=$($PY -c 'import json,sys; s = json.load(open(sys.argv[1]))["series"]; print("%.2f %.2f" % (s[0]["p50"], s[0]["p99"]))' "$tmp/list.json" 2>/dev/null || echo "nan nan")
l_worst=$($PY -c 'import json,sys; s = json.load(open(sys.argv[1]))["series"]; w = max(s, key=lambda x: x["p99"]); print("%.2f %s" % (w["p99"], w["name"].replace(" ", "_")))' "$tmp/list.json" 2>/dev/null || echo "nan ?")
l_first=$($PY -c 'import json,sys; s = [x for x in json.load(open(sys.argv[1]))["series"] if x["name"].startswith("first page") and "NameContains" not in x["name"] and "StatusEquals" not in x["name"]]; print("%.2f" % max(x["p99"] for x in s))' "$tmp/list.json" 2>/dev/null || echo nan)
walk_seen=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["series"][0]["extra"])' "$tmp/list.json" 2>/dev/null || echo "?")

rss=$(awk '/^VmRSS/ { print $2 " " $3 }' "/proc/$pid/status" 2>/dev/null)
# Of which: the heap and stacks (RssAnon) and mapped files (RssFile: the
# store's pages the readers map, which the kernel may drop at any time).
rss_parts=$(awk '/^RssAnon/ { a = $2 } /^RssFile/ { f = $2 } END { printf "anon %d MB, files %d MB", a / 1024, f / 1024 }' "/proc/$pid/status" 2>/dev/null)
disk=$(du -sh "$tmp/state" 2>/dev/null | cut -f1)
alive=yes
kill -0 "$pid" 2>/dev/null || { alive=no; bad=1; }

verdict() { awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN { ok = (op == ">=") ? (v + 0 >= t) : (v + 0 < t); print ok ? "PASS" : "MISS" }'; }
vd=$(verdict "$d_rps" $T_DESCRIBE ">=")
vc=$(verdict "$c_rps" $T_CREATE ">=")
set -- $l_walk
lw50=$1 lw99=$2
vl=$(verdict "$lw99" $T_LIST_P99 "<")
vf=$(verdict "$l_first" $T_LIST_P99 "<")
set -- $l_worst
lworst=$1 lworst_name=$2

echo
echo "==== trainctld API benchmark (wrk -t$T -c$C -d$DUR; $(nproc) CPUs) ===="
printf '%-44s %14s %16s %s\n' "metric" "measured" "target" "verdict"
printf '%-44s %14s %16s %s\n' "DescribeTrainingJob req/s ($stored jobs)" "$(fmt "$d_rps")" ">= $T_DESCRIBE" "$vd"
printf '%-44s %14s %16s\n' "  latency p50 / p99; daemon CPU" "$d_p50 / $d_p99" "$d_cpu"
printf '%-44s %14s %16s %s\n' "CreateTrainingJob req/s (unique names)" "$(fmt "$c_rps")" ">= $T_CREATE" "$vc"
printf '%-44s %14s %16s\n' "  latency p50 / p99; daemon CPU" "$c_p50 / $c_p99" "$c_cpu"
printf '%-44s %14s %16s\n' "  preload rate / growth rate (jobs/s)" "$pre_rate / $g_rate" ""
printf '%-44s %14s %16s %s\n' "List walk p99 ms (MaxResults 100, $store jobs)" "$lw99" "< $T_LIST_P99" "$vl"
printf '%-44s %14s %16s\n' "  p50 ms; $walk_seen" "$lw50" ""
printf '%-44s %14s %16s %s\n' "List first page p99 ms, worst sort order" "$l_first" "< $T_LIST_P99" "$vf"
printf '%-44s %14s %16s\n' "  worst series of all: $lworst_name" "$lworst" "(info)"
printf '%-44s %14s\n' "non-200: preload/describe/create/grow" "$pre_bad/$d_bad/$c_bad/$g_bad"
printf '%-44s %14s\n' "describe 200s without a job body" "$d_body"
printf '%-44s %14s\n' "daemon RSS / state dir after the run" "$rss / $disk"
printf '%-44s %14s\n' "  of the RSS" "$rss_parts"
printf '%-44s %14s\n' "daemon alive at the end" "$alive"
# The store must be sound once the daemon stopped (SQLite's own check).
kill -TERM "$pid" 2>/dev/null
i=0
while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
wait "$pid" 2>/dev/null
pid=""
integrity=$($PY -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA integrity_check").fetchone()[0].splitlines()[0][:60])' "$tmp/state/trainctl.db" 2>&1)
printf '%-44s %14s\n' "store PRAGMA integrity_check after the stop" "$integrity"
[ "$integrity" = ok ] || bad=1
echo "(wrk runs on the same $(nproc) CPUs as the daemon: daemon CPU is in % of one CPU)"
cleanup
case "$vd$vc$vl$vf" in *MISS*) bad=1 ;; esac
exit $bad
