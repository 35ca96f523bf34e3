#!/bin/bash
# S3 REST benchmark: trainctld's S3 face of its embedded store against
# s3rver (tests/tools, the S3 server the storage tests use) and against the
# local file operations a store cannot beat, all on one disk (one temp dir).
#
#   bench/s3.sh        (from the repository root, after make)
#
# env: S3_BENCH_BIG_MB (1024)   size of the large object, MiB
#      S3_BENCH_SMALL (10000)   number of small objects
#      S3_BENCH_SMALL_KB (1)    size of each small object, KiB
#      S3_BENCH_RUNS (3)        runs of each measurement (median reported)
#      S3_BENCH_THREADS (16)    boto3 threads for the small puts
#      S3_BENCH_WRK_SECONDS (10) length of each wrk run (small puts, wrk)
#      TRAINCTLD (build/bin/trainctld), TRAINCTLD_ARGS (extra daemon options)
#      TMPDIR (/tmp)            where the one temp dir goes (the disk measured)
#
# 1. Large object: `aws s3 cp` put and get (/usr/bin/aws, CLI defaults:
#    8 MiB multipart parts, 10 requests at once), against trainctld and
#    s3rver; baseline put `cp` to a new file + `sync FILE DIR` (the least a
#    durable write costs: data and directory entry on disk), baseline get
#    `cp` of the stored copy to a new file with no sync (what `aws s3 cp`
#    does with a download: it writes the file and does not fsync it). Each
#    get is compared with the source (cmp). The runs alternate the three
#    (order rotated each run), page cache warm, `sync` before each run.
#    The same put and get with `trainctl cp` (C and libcurl: 32 MiB parts,
#    4 at once, UNSIGNED-PAYLOAD), a client that leaves the cores to the
#    server.
# 2. Small objects: PutObject of S3_BENCH_SMALL objects from a boto3 thread
#    pool into an empty bucket (one per run), then ListObjectsV2 of the
#    bucket with boto3's paginator and with `aws s3 ls --recursive | wc -l`
#    (which includes the CLI's start-up), against both servers with the same
#    client code (bench/s3_small.py). A sample of objects is read back and
#    compared.
# 3. Small objects again, with a client that costs little: wrk (2 threads,
#    16 connections) sending PutObject through S3_BENCH_SMALL presigned
#    SigV4 URLs per server (bench/s3_put.lua; trainctld verifies each
#    signature, s3rver takes any), for S3_BENCH_WRK_SECONDS; the rate is
#    shown as the time COUNT objects take at it. boto3 costs ~2 ms of
#    client CPU per PutObject, so in 2 the client is the limit, not the
#    server. Baseline: the same count of 1 KiB files written durably
#    with no server (temp file, fsync, rename, fsync of the folder, 16
#    threads; s3_small.py durable), which trainctld does for every object
#    and s3rver does not.
# 4. What any S3 store's put pays here: the MD5 of the large file (an
#    ETag is an MD5), `md5sum` from the page cache.
# A second table gives CPU seconds of the client and of the server process
# per operation: on 2 cores the clients (Python) are a large part of every
# figure. On loopback the kernel's TCP work is charged to whichever side
# runs it, so compare the sums rather than the split.
#
# trainctld runs with --credentials (SigV4, service s3) and --local-hosts 0;
# s3rver takes any signature for the key S3RVER. Until trainctld answers
# S3, its rows say so and the rest still runs. Servers are started and
# stopped by PID; everything written goes under one temp dir, removed at
# the end (S3_BENCH_KEEP=1 keeps it).
set -u

cd "$(dirname "$0")/.." || exit 1
BIG_MB=${S3_BENCH_BIG_MB:-1024}
COUNT=${S3_BENCH_SMALL:-10000}
SMALL_KB=${S3_BENCH_SMALL_KB:-1}
RUNS=${S3_BENCH_RUNS:-3}
THREADS=${S3_BENCH_THREADS:-16}
WRK_SECONDS=${S3_BENCH_WRK_SECONDS:-10}
DAEMON=${TRAINCTLD:-build/bin/trainctld}
AWS=/usr/bin/aws
PY=/usr/bin/python3
SAMPLE=100

die() { echo "bench/s3.sh: $*" >&2; exit 2; }
[ -x "$DAEMON" ] || die "$DAEMON not built (run make)"
[ -x build/bin/trainctl ] || die "build/bin/trainctl not built (run make)"
[ -x "$AWS" ] || die "$AWS missing (Debian package awscli)"
"$PY" -c 'import boto3' 2>/dev/null || die "$PY has no boto3 (Debian package python3-boto3)"
command -v wrk >/dev/null || die "wrk missing (Debian package wrk)"
for n in "$BIG_MB" "$COUNT" "$SMALL_KB" "$RUNS" "$THREADS" "$WRK_SECONDS"; do
	case $n in '' | *[!0-9]* | 0) die "sizes, counts and runs must be positive integers" ;; esac
done

# ---- hermetic AWS environment ------------------------------------------------
for v in $(env | sed -n 's/^\(AWS_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset TRAINCTL_ENDPOINT TRAINCTL_S3_ENDPOINT TRAINCTL_STATE_DIR \
	http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy

TMP=$(mktemp -d "${TMPDIR:-/tmp}/trainctl-s3bench.XXXXXX") || die "mktemp failed"
TC_PID=""
S3RVER_UP=""
cleanup() {
	if [ -n "$TC_PID" ]; then
		kill -TERM "$TC_PID" 2>/dev/null
		i=0
		while kill -0 "$TC_PID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill -0 "$TC_PID" 2>/dev/null && kill -KILL "$TC_PID" 2>/dev/null
		wait "$TC_PID" 2>/dev/null
		TC_PID=""
	fi
	if [ -n "$S3RVER_UP" ]; then
		sh tests/storage/s3rver.sh stop "$TMP/s3rver" 2>/dev/null
		S3RVER_UP=""
	fi
	if [ "${S3_BENCH_KEEP:-0}" = 1 ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mkdir -p "$TMP/aws" "$TMP/r" "$TMP/base" "$TMP/tc"
export AWS_CONFIG_FILE=$TMP/aws/config AWS_SHARED_CREDENTIALS_FILE=$TMP/aws/credentials \
	AWS_EC2_METADATA_DISABLED=true AWS_PAGER="" NO_PROXY=127.0.0.1 no_proxy=127.0.0.1
TC_KEY=AKIDS3BENCH000000001
TC_SECRET=$(head -c 30 /dev/urandom | base64 | tr -d '/+=' | head -c 40)
# The CLI's s3 transfer settings are written out at their defaults, so the
# figures do not depend on them changing. Retries off: an error is seen.
for p in trainctld s3rver; do
	cat >>"$AWS_CONFIG_FILE" <<EOF
[profile $p]
region = us-east-1
retry_mode = standard
max_attempts = 1
s3 =
    addressing_style = path
    max_concurrent_requests = 10
    multipart_threshold = 8MB
    multipart_chunksize = 8MB

EOF
done
cat >"$AWS_SHARED_CREDENTIALS_FILE" <<EOF
[trainctld]
aws_access_key_id = $TC_KEY
aws_secret_access_key = $TC_SECRET

[s3rver]
aws_access_key_id = S3RVER
aws_secret_access_key = S3RVER
EOF
(umask 077 && printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
	"$TC_KEY" "$TC_SECRET" >"$TMP/tc/credentials")

PROBLEMS=$TMP/problems
: >"$PROBLEMS"
problem() { printf '%s\n' "$*" >>"$PROBLEMS"; echo "PROBLEM: $*" >&2; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

TCK=$(getconf CLK_TCK)
# cpu_of PID: CPU seconds (user + system) PID has used so far; 0 when none.
cpu_of() {
	[ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || { echo 0; return; }
	awk -v t="$TCK" '{ sub(/^.*\) /, ""); printf "%.3f", ($12 + $13) / t }' "/proc/$1/stat"
}
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

# ---- servers -------------------------------------------------------------------
S3RVER_EP=""
S3RVER_PID=""
log "starting s3rver"
if port=$(sh tests/storage/s3rver.sh start "$TMP/s3rver" 2>"$TMP/s3rver.err"); then
	S3RVER_UP=1
	S3RVER_EP=http://127.0.0.1:$port
	S3RVER_PID=$(cat "$TMP/s3rver/pid")
else
	echo "s3rver unavailable, its rows are skipped:" >&2
	cat "$TMP/s3rver.err" >&2
fi

TC_EP=""
log "starting trainctld"
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# shellcheck disable=SC2086  # TRAINCTLD_ARGS: words on purpose
"$DAEMON" --listen "127.0.0.1:$port" --state-dir "$TMP/tc/state" --local-hosts 0 \
	--credentials "$TMP/tc/credentials" ${TRAINCTLD_ARGS:-} \
	</dev/null >"$TMP/tc/log" 2>&1 &
TC_PID=$!
i=0
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
	if ! kill -0 "$TC_PID" 2>/dev/null || [ $i -ge 400 ]; then
		echo "trainctld did not start:" >&2
		tail -n 20 "$TMP/tc/log" >&2
		wait "$TC_PID" 2>/dev/null
		TC_PID=""
		break
	fi
	sleep 0.05
	i=$((i + 1))
done
if [ -n "$TC_PID" ]; then
	if "$AWS" --profile trainctld --endpoint-url "http://127.0.0.1:$port" \
		s3api list-buckets >"$TMP/probe" 2>&1; then
		TC_EP=http://127.0.0.1:$port
	else
		echo "trainctld does not answer S3 yet (aws s3api list-buckets:" \
			"$(tr '\n' ' ' <"$TMP/probe" | cut -c1-300)); its rows are skipped" >&2
	fi
fi

# tcp PROFILE SRC DST: trainctl cp (libcurl; 32 MiB parts, 4 at once,
# UNSIGNED-PAYLOAD with each part's MD5 checked) against that server.
tcp() {
	case $1 in
	trainctld) env TRAINCTL_S3_ENDPOINT="$TC_EP" AWS_ACCESS_KEY_ID="$TC_KEY" \
		AWS_SECRET_ACCESS_KEY="$TC_SECRET" build/bin/trainctl cp "$2" "$3" ;;
	*) env TRAINCTL_S3_ENDPOINT="$S3RVER_EP" AWS_ACCESS_KEY_ID=S3RVER \
		AWS_SECRET_ACCESS_KEY=S3RVER build/bin/trainctl cp "$2" "$3" ;;
	esac
}

# s3 PROFILE ARGS...: the aws CLI against that profile's server.
s3() {
	p=$1
	shift
	case $p in
	trainctld) ep=$TC_EP ;;
	*) ep=$S3RVER_EP ;;
	esac
	"$AWS" --profile "$p" --endpoint-url "$ep" "$@"
}
SERVERS=""
[ -n "$S3RVER_EP" ] && SERVERS="$SERVERS s3rver"
[ -n "$TC_EP" ] && SERVERS="$SERVERS trainctld"
pid_of() { case $1 in trainctld) echo "$TC_PID" ;; s3rver) echo "$S3RVER_PID" ;; esac; }

# Buckets: "big", and "small-1".."small-RUNS" (an empty one for each run).
for p in $SERVERS; do
	for b in big $(seq -f 'small-%g' "$RUNS"); do
		if ! s3 "$p" s3api create-bucket --bucket "$b" >/dev/null 2>"$TMP/err"; then
			problem "$p: CreateBucket $b failed: $(tr '\n' ' ' <"$TMP/err" | cut -c1-300)"
			[ "$p" = trainctld ] && mkdir -p "$TMP/tc/state/s3/$b"
		fi
	done
done

# ---- timing ------------------------------------------------------------------------
# timed NAME PID CMD...: one run of CMD (output discarded) after a sync;
# appends "wall client_cpu server_cpu" to $TMP/r/NAME (server: PID's CPU
# seconds during the run; client: CMD's and its children's). A failure is
# noted and recorded as "fail".
timed() {
	name=$1 spid=$2
	shift 2
	sync
	c0=$(cpu_of "$spid")
	t0=$(date +%s.%N)
	(
		"$@" >/dev/null 2>"$TMP/err"
		rc=$?
		times >"$TMP/times"
		exit $rc
	)
	rc=$?
	t1=$(date +%s.%N)
	c1=$(cpu_of "$spid")
	if [ $rc -ne 0 ]; then
		problem "$name: '$*' exited $rc: $(tr '\n' ' ' <"$TMP/err" | cut -c1-400)"
		echo fail >>"$TMP/r/$name"
		return 1
	fi
	ccpu=$(sed -n 2p "$TMP/times" | awk '{ n = split($0, f, /[ ms]+/); s = 0
		for (i = 1; i + 1 <= n; i += 2) s += f[i] * 60 + f[i + 1]; printf "%.3f", s }')
	echo "$(sub "$t1" "$t0") $ccpu $(sub "$c1" "$c0")" >>"$TMP/r/$name"
}

# timed_py NAME PID s3_small.py ARGS...: as timed, but the wall and client
# CPU figures are the ones the helper measures around the operation alone.
timed_py() {
	name=$1 spid=$2
	shift 2
	sync
	c0=$(cpu_of "$spid")
	out=$("$PY" bench/s3_small.py "$@" 2>"$TMP/err")
	rc=$?
	c1=$(cpu_of "$spid")
	if [ $rc -ne 0 ] || [ -z "$out" ]; then
		problem "$name: s3_small.py $* (exit $rc): $(tr '\n' ' ' <"$TMP/err" | cut -c1-600)"
		echo fail >>"$TMP/r/$name"
		return 1
	fi
	set -- $out
	echo "$1 $2 $(sub "$c1" "$c0")" >>"$TMP/r/$name"
}

# timed_wrk NAME PID ENDPOINT URLS: one wrk run of bench/s3_put.lua;
# appends the time COUNT objects take at the measured rate, and wrk's and
# the server's CPU seconds scaled to COUNT objects.
timed_wrk() {
	name=$1 spid=$2
	sync
	c0=$(cpu_of "$spid")
	(
		wrk -t2 -c16 -d"${WRK_SECONDS}s" -s bench/s3_put.lua "$3" -- "$4" "$SMALL_B" 2 \
			>"$TMP/wrk.out" 2>"$TMP/err"
		rc=$?
		times >"$TMP/times"
		exit $rc
	)
	rc=$?
	c1=$(cpu_of "$spid")
	ok=$(sed -n 's/^RESULT ok=\([0-9]*\) non2xx=\([0-9]*\).*/\1/p' "$TMP/wrk.out")
	bad=$(sed -n 's/^RESULT ok=\([0-9]*\) non2xx=\([0-9]*\).*/\2/p' "$TMP/wrk.out")
	if [ $rc -ne 0 ] || [ -z "$ok" ] || [ "$ok" -eq 0 ] || [ "$bad" -ne 0 ]; then
		problem "$name: wrk (exit $rc, ok=${ok:-?} non2xx=${bad:-?}): $(tr '\n' ' ' <"$TMP/err" | cut -c1-400)"
		echo fail >>"$TMP/r/$name"
		return 1
	fi
	ccpu=$(sed -n 2p "$TMP/times" | awk '{ n = split($0, f, /[ ms]+/); s = 0
		for (i = 1; i + 1 <= n; i += 2) s += f[i] * 60 + f[i + 1]; printf "%.3f", s }')
	awk -v n="$COUNT" -v ok="$ok" -v d="$WRK_SECONDS" -v c="$ccpu" -v s="$(sub "$c1" "$c0")" \
		'BEGIN { k = n / ok; printf "%.3f %.3f %.3f\n", d * k, c * k, s * k }' >>"$TMP/r/$name"
}

# rotate I WORDS...: WORDS rotated left by I-1 (each run starts elsewhere).
rotate() {
	[ $# -gt 1 ] || return 0
	k=$((($1 - 1) % ($# - 1)))
	shift
	n=$#
	set -- "$@" "$@"
	shift "$k"
	echo "${@:1:$n}"
}

# ---- 1. large object -----------------------------------------------------------
log "writing the ${BIG_MB} MiB source file"
head -c $((BIG_MB * 1024 * 1024)) /dev/urandom >"$TMP/src.bin"
for i in $(seq "$RUNS"); do
	for who in $(rotate "$i" baseline $SERVERS); do
		log "large object, run $i/$RUNS: $who put"
		case $who in
		baseline)
			rm -f "$TMP/base/big.bin"
			timed big_put_baseline "" sh -c \
				"cp '$TMP/src.bin' '$TMP/base/big.bin' && sync '$TMP/base/big.bin' '$TMP/base'"
			;;
		*)
			s3 "$who" s3 rm --quiet s3://big/big.bin >/dev/null 2>&1
			timed "big_put_$who" "$(pid_of "$who")" \
				s3 "$who" s3 cp --quiet "$TMP/src.bin" s3://big/big.bin
			;;
		esac
		log "large object, run $i/$RUNS: $who get"
		rm -f "$TMP/got.bin"
		case $who in
		baseline) timed big_get_baseline "" cp "$TMP/base/big.bin" "$TMP/got.bin" ;;
		*) timed "big_get_$who" "$(pid_of "$who")" \
			s3 "$who" s3 cp --quiet s3://big/big.bin "$TMP/got.bin" ;;
		esac
		if [ -f "$TMP/got.bin" ] && ! cmp -s "$TMP/src.bin" "$TMP/got.bin"; then
			problem "$who get, run $i: the object read back differs from the file put" \
				"($(stat -c %s "$TMP/got.bin") bytes, want $(stat -c %s "$TMP/src.bin"))"
		fi
		[ "$who" = baseline ] && continue
		log "large object, run $i/$RUNS: $who put and get with trainctl cp"
		rm -f "$TMP/got.bin"
		timed "big_cput_$who" "$(pid_of "$who")" tcp "$who" "$TMP/src.bin" s3://big/big-cp.bin
		timed "big_cget_$who" "$(pid_of "$who")" tcp "$who" s3://big/big-cp.bin "$TMP/got.bin"
		if [ -f "$TMP/got.bin" ] && ! cmp -s "$TMP/src.bin" "$TMP/got.bin"; then
			problem "$who trainctl cp get, run $i: the object read back differs from the file put"
		fi
	done
done
rm -f "$TMP/got.bin" "$TMP/base/big.bin"
for p in $SERVERS; do s3 "$p" s3 rm --quiet s3://big/big.bin >/dev/null 2>&1; done

# ---- 2. small objects ------------------------------------------------------------
# ls_count PROFILE BUCKET: `aws s3 ls --recursive | wc -l`, which must be COUNT.
ls_count() {
	n=$(s3 "$1" s3 ls --recursive "s3://$2" | wc -l)
	[ "$n" -eq "$COUNT" ] || { echo "aws s3 ls --recursive s3://$2 listed $n objects, want $COUNT" >&2; return 1; }
}
SMALL_B=$((SMALL_KB * 1024))
for i in $(seq "$RUNS"); do
	for who in $(rotate "$i" $SERVERS); do
		ep=$TC_EP
		[ "$who" = s3rver ] && ep=$S3RVER_EP
		spid=$(pid_of "$who")
		log "small objects, run $i/$RUNS: $who put $COUNT x $SMALL_KB KiB"
		timed_py "small_put_$who" "$spid" put "$ep" "$who" "small-$i" "$COUNT" "$SMALL_B" "$THREADS"
		log "small objects, run $i/$RUNS: $who list"
		timed_py "small_list_$who" "$spid" list "$ep" "$who" "small-$i" "$COUNT" "$SMALL_B"
		timed "small_ls_$who" "$spid" ls_count "$who" "small-$i"
		if [ "$i" = 1 ]; then
			"$PY" bench/s3_small.py check "$ep" "$who" "small-$i" "$COUNT" "$SMALL_B" "$SAMPLE" \
				>/dev/null 2>"$TMP/err" ||
				problem "$who: reading back small objects: $(tr '\n' ' ' <"$TMP/err" | cut -c1-600)"
		fi
	done
done

# ---- 3. small objects through wrk --------------------------------------------------
for who in $SERVERS; do
	ep=$TC_EP
	[ "$who" = s3rver ] && ep=$S3RVER_EP
	"$PY" bench/s3_small.py presign "$ep" "$who" wrk "$COUNT" "$SMALL_B" "$TMP/urls.$who" \
		2>"$TMP/err" || problem "$who: presigning: $(tr '\n' ' ' <"$TMP/err" | cut -c1-300)"
done
for i in $(seq "$RUNS"); do
	for who in $(rotate "$i" $SERVERS); do
		ep=$TC_EP
		[ "$who" = s3rver ] && ep=$S3RVER_EP
		log "small objects, run $i/$RUNS: $who PutObject through wrk, ${WRK_SECONDS} s"
		[ -s "$TMP/urls.$who" ] && timed_wrk "wrk_put_$who" "$(pid_of "$who")" "$ep" "$TMP/urls.$who"
	done
	log "small objects, run $i/$RUNS: baseline, $COUNT durable writes"
	rm -rf "$TMP/base/durable"
	timed_py wrk_put_baseline "" durable "$TMP/base/durable" - - "$COUNT" "$SMALL_B" 16
	rm -rf "$TMP/base/durable"
done

# ---- 4. the MD5 every put pays -----------------------------------------------------
cat "$TMP/src.bin" >/dev/null
for i in $(seq "$RUNS"); do
	timed big_md5 "" md5sum "$TMP/src.bin"
done
rm -f "$TMP/src.bin"

# ---- report ------------------------------------------------------------------------
# col NAME K: the median of column K over NAME's successful runs ("" if none).
col() {
	[ -f "$TMP/r/$1" ] || return 0
	grep -v '^fail' "$TMP/r/$1" | awk -v k="$2" '{ print $k }' | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
nfail() {
	[ -f "$TMP/r/$1" ] || { echo 0; return; }
	grep -c '^fail' "$TMP/r/$1"
}
runs_of() { [ -f "$TMP/r/$1" ] && awk '{ printf "%s%s", (NR > 1 ? " " : ""), $1 }' "$TMP/r/$1"; }
# cell NAME AMOUNT UNIT: "T s (R UNIT)" from the median wall time, R =
# AMOUNT / T; "failed" or "-" where there is no figure.
cell() {
	t=$(col "$1" 1)
	f=$(nfail "$1")
	if [ -z "$t" ]; then
		if [ "$f" -gt 0 ]; then echo "failed"; else echo "-"; fi
		return
	fi
	awk -v t="$t" -v a="$2" -v u="$3" -v f="$f" -v r="$RUNS" '
	function commas(s) { while (s ~ /^[0-9][0-9][0-9][0-9]/) { n = match(s, /[0-9][0-9][0-9]([,.]|$)/)
		if (n <= 1) break; s = substr(s, 1, n - 1) "," substr(s, n) } return s }
	BEGIN {
		x = commas(sprintf((a / t >= 100) ? "%.0f" : "%.1f", a / t))
		y = (f > 0) ? sprintf(" [%d/%d failed]", f, r) : ""
		printf "%.2f s (%s %s)%s", t, x, u, y }'
}
# ratio A B: throughput of A over throughput of B (= time B / time A).
ratio() {
	a=$(col "$1" 1)
	b=$(col "$2" 1)
	[ -n "$a" ] && [ -n "$b" ] || { echo "-"; return; }
	awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }'
}
cpu_cell() {
	c=$(col "$1" 2)
	s=$(col "$1" 3)
	[ -n "$c" ] || { echo "-"; return; }
	echo "$c / $s"
}

S3RVER_V=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' tests/tools/node_modules/s3rver/package.json 2>/dev/null | head -n1)
BIG_LABEL="${BIG_MB} MiB"
[ "$BIG_MB" = 1024 ] && BIG_LABEL="1 GiB"
SMALL_LABEL=$(echo "$COUNT" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta')

echo
echo "== per-run wall seconds (in run order) =="
for f in "$TMP"/r/*; do
	[ -f "$f" ] && printf '%-24s %s\n' "$(basename "$f")" "$(runs_of "$(basename "$f")")"
done

echo
echo "== S3 REST benchmark: median of $RUNS runs, $(nproc) cores, $(df -T "$TMP" | awk 'NR == 2 { print $2 }') on $(df "$TMP" | awk 'NR == 2 { print $1 }') =="
echo
echo "| operation | trainctld | s3rver ${S3RVER_V:-?} | baseline | trainctld / s3rver | trainctld / baseline |"
echo "| --- | --: | --: | --: | --: | --: |"
echo "| $BIG_LABEL put, \`aws s3 cp\` | $(cell big_put_trainctld "$BIG_MB" MiB/s) | $(cell big_put_s3rver "$BIG_MB" MiB/s) | \`cp\` + \`sync\` $(cell big_put_baseline "$BIG_MB" MiB/s) | $(ratio big_put_trainctld big_put_s3rver) | $(ratio big_put_trainctld big_put_baseline) |"
echo "| $BIG_LABEL get, \`aws s3 cp\` | $(cell big_get_trainctld "$BIG_MB" MiB/s) | $(cell big_get_s3rver "$BIG_MB" MiB/s) | \`cp\` $(cell big_get_baseline "$BIG_MB" MiB/s) | $(ratio big_get_trainctld big_get_s3rver) | $(ratio big_get_trainctld big_get_baseline) |"
echo "| $BIG_LABEL put, \`trainctl cp\` | $(cell big_cput_trainctld "$BIG_MB" MiB/s) | $(cell big_cput_s3rver "$BIG_MB" MiB/s) | \`cp\` + \`sync\` $(cell big_put_baseline "$BIG_MB" MiB/s) | $(ratio big_cput_trainctld big_cput_s3rver) | $(ratio big_cput_trainctld big_put_baseline) |"
echo "| $BIG_LABEL get, \`trainctl cp\` | $(cell big_cget_trainctld "$BIG_MB" MiB/s) | $(cell big_cget_s3rver "$BIG_MB" MiB/s) | \`cp\` $(cell big_get_baseline "$BIG_MB" MiB/s) | $(ratio big_cget_trainctld big_cget_s3rver) | $(ratio big_cget_trainctld big_get_baseline) |"
echo "| $SMALL_LABEL x $SMALL_KB KiB PutObject, boto3 $THREADS threads | $(cell small_put_trainctld "$COUNT" obj/s) | $(cell small_put_s3rver "$COUNT" obj/s) | | $(ratio small_put_trainctld small_put_s3rver) | |"
echo "| $SMALL_LABEL x $SMALL_KB KiB PutObject, wrk (presigned URLs), at its rate | $(cell wrk_put_trainctld "$COUNT" obj/s) | $(cell wrk_put_s3rver "$COUNT" obj/s) | write + fsync + rename + fsync dir, 16 threads $(cell wrk_put_baseline "$COUNT" obj/s) | $(ratio wrk_put_trainctld wrk_put_s3rver) | $(ratio wrk_put_trainctld wrk_put_baseline) |"
echo "| list $SMALL_LABEL, ListObjectsV2 (boto3 paginator) | $(cell small_list_trainctld "$COUNT" obj/s) | $(cell small_list_s3rver "$COUNT" obj/s) | | $(ratio small_list_trainctld small_list_s3rver) | |"
echo "| list $SMALL_LABEL, \`aws s3 ls --recursive \| wc -l\` | $(cell small_ls_trainctld "$COUNT" obj/s) | $(cell small_ls_s3rver "$COUNT" obj/s) | | $(ratio small_ls_trainctld small_ls_s3rver) | |"
echo
echo "Ratios are throughputs (time of the other / time of trainctld): above 1, trainctld is faster."
echo "MD5 of the $BIG_LABEL file (md5sum, page cache): $(cell big_md5 "$BIG_MB" MiB/s); every S3 put pays it (ETag)."
echo
echo "CPU seconds per operation, client / server (median):"
echo
echo "| operation | trainctld | s3rver | baseline |"
echo "| --- | --: | --: | --: |"
echo "| $BIG_LABEL put | $(cpu_cell big_put_trainctld) | $(cpu_cell big_put_s3rver) | $(cpu_cell big_put_baseline) |"
echo "| $BIG_LABEL get | $(cpu_cell big_get_trainctld) | $(cpu_cell big_get_s3rver) | $(cpu_cell big_get_baseline) |"
echo "| $BIG_LABEL put, trainctl cp | $(cpu_cell big_cput_trainctld) | $(cpu_cell big_cput_s3rver) | |"
echo "| $BIG_LABEL get, trainctl cp | $(cpu_cell big_cget_trainctld) | $(cpu_cell big_cget_s3rver) | |"
echo "| $SMALL_LABEL PutObject | $(cpu_cell small_put_trainctld) | $(cpu_cell small_put_s3rver) | |"
echo "| $SMALL_LABEL PutObject, wrk | $(cpu_cell wrk_put_trainctld) | $(cpu_cell wrk_put_s3rver) | |"
echo "| list, boto3 | $(cpu_cell small_list_trainctld) | $(cpu_cell small_list_s3rver) | |"
echo "| list, aws s3 ls | $(cpu_cell small_ls_trainctld) | $(cpu_cell small_ls_s3rver) | |"

echo
echo "== versions =="
echo "aws: $("$AWS" --version 2>&1)"
echo "s3rver: ${S3RVER_V:-not installed} (node $(node --version 2>/dev/null || echo '?'))"
echo "python: $("$PY" -c 'import sys, boto3, botocore; print(sys.version.split()[0], "boto3", boto3.__version__, "botocore", botocore.__version__)')"
echo "trainctld: $DAEMON, source $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- 2>/dev/null || echo ' (modified)')$([ -z "$TC_EP" ] && echo ', no S3 REST yet')"
echo "system: $(uname -sr), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"

if [ -n "$TC_PID" ] && ! kill -0 "$TC_PID" 2>/dev/null; then
	wait "$TC_PID"
	problem "trainctld died during the benchmark (exit status $?)"
	TC_PID=""
fi
if [ -n "$TC_PID" ]; then
	kill -TERM "$TC_PID" 2>/dev/null
	i=0
	while kill -0 "$TC_PID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 "$TC_PID" 2>/dev/null; then
		problem "trainctld still running 10 s after SIGTERM (killed)"
		kill -KILL "$TC_PID" 2>/dev/null
	fi
	wait "$TC_PID"
	rc=$?
	[ $rc -eq 0 ] || problem "trainctld exited $rc on SIGTERM"
	TC_PID=""
fi
if [ -s "$PROBLEMS" ]; then
	echo
	echo "== problems =="
	cat "$PROBLEMS"
	if [ -s "$TMP/tc/log" ]; then
		echo "-- trainctld log, last 15 lines --"
		tail -n 15 "$TMP/tc/log"
	fi
	exit 1
fi
exit 0
