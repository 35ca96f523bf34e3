#!/bin/bash
# Storage benchmark: put and get of one big file (1 GiB by default) with
# `trainctl cp` for each backend, against plain cp(1) to the same disk and
# `aws s3 cp` (/usr/bin/aws) to the same s3rver. Prints a table of
# seconds, MiB/s and the ratio baseline_time / our_time (>= 1: we are at
# least as fast). Each figure is the median of RUNS runs, warm page cache.
#
#   bench/storage.sh [SIZE_MIB]     env: RUNS (3), TRAINCTL, TMPDIR
#
# Our put to file:// and to the embedded store fsyncs before its rename
# (that is what makes it atomic and durable); cp does not, so the table
# also shows cp followed by sync(1) of the file.
set -u

cd "$(dirname "$0")/.."
SIZE_MIB=${1:-1024}
RUNS=${RUNS:-3}
CLI=${TRAINCTL:-build/bin/trainctl}
if ! "$CLI" help 2>/dev/null | grep -q '^ *cp '; then
	echo "bench/storage.sh: $CLI has no cp command (build it first)" >&2
	exit 1
fi

unset AWS_ENDPOINT_URL_S3 TRAINCTL_S3_ENDPOINT TRAINCTL_STATE_DIR AWS_SESSION_TOKEN
export AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null \
	AWS_SHARED_CREDENTIALS_FILE=/dev/null NO_PROXY=127.0.0.1 no_proxy=127.0.0.1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench_storage.XXXXXX")
cleanup() {
	sh tests/storage/s3rver.sh stop "$TMP/s3rver" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

echo "writing a ${SIZE_MIB} MiB test file..." >&2
head -c $((SIZE_MIB * 1024 * 1024)) /dev/urandom >"$TMP/src.bin"

# median_time CMD...: runs CMD RUNS times (with the cleanup in $PREP
# before each), prints the median wall time in seconds.
median_time() {
	ts=""
	for _ in $(seq "$RUNS"); do
		[ -n "${PREP:-}" ] && eval "$PREP"
		# Start each run with no dirty pages from the one before.
		sync
		t0=$(date +%s.%N)
		"$@" >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; echo "FAILED: $*" >&2; }
		t1=$(date +%s.%N)
		ts="$ts $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
	done
	echo "$ts" | tr ' ' '\n' | grep . | sort -n | sed -n "$(((RUNS + 1) / 2))p"
}

rows=""
row() { # name ours baseline_name baseline
	mibs=$(awk -v n="$SIZE_MIB" -v t="$2" 'BEGIN { printf "%.1f", n / t }')
	ratio=$(awk -v a="$4" -v b="$2" 'BEGIN { printf "%.3f", a / b }')
	rows="$rows$(printf '%-26s %8.2f s %8.0f MiB/s   %-22s %8.2f s   %5.2f' \
		"$1" "$2" "$mibs" "$3" "$4" "$ratio")
"
}

# --- file:// and the embedded store, against cp --------------------------
mkdir -p "$TMP/dst" "$TMP/state"
PREP="rm -f '$TMP/dst/cp.bin'"
cp_t=$(median_time cp "$TMP/src.bin" "$TMP/dst/cp.bin")
cps_t=$(median_time sh -c "cp '$TMP/src.bin' '$TMP/dst/cp.bin' && sync '$TMP/dst/cp.bin'")
PREP="rm -f '$TMP/dst/file.bin'"
fput=$(median_time "$CLI" cp "$TMP/src.bin" "file://$TMP/dst/file.bin")
PREP="rm -f '$TMP/got.bin'"
fget=$(median_time "$CLI" cp "file://$TMP/dst/file.bin" "$TMP/got.bin")
cmp "$TMP/src.bin" "$TMP/got.bin" || echo "file:// get: content differs" >&2
export TRAINCTL_STATE_DIR=$TMP/state
PREP="rm -rf '$TMP/state/s3'"
eput=$(median_time "$CLI" cp "$TMP/src.bin" s3://bench/big.bin)
PREP="rm -f '$TMP/got.bin'"
eget=$(median_time "$CLI" cp s3://bench/big.bin "$TMP/got.bin")
cmp "$TMP/src.bin" "$TMP/got.bin" || echo "embedded get: content differs" >&2
unset TRAINCTL_STATE_DIR
row "file:// put" "$fput" "cp" "$cp_t"
row "file:// put" "$fput" "cp + sync" "$cps_t"
row "file:// get" "$fget" "cp" "$cp_t"
row "embedded put" "$eput" "cp" "$cp_t"
row "embedded put" "$eput" "cp + sync" "$cps_t"
row "embedded get" "$eget" "cp" "$cp_t"

# --- s3rver, against aws s3 cp ----------------------------------------------
if PORT=$(S3RVER_BUCKETS=bench sh tests/storage/s3rver.sh start "$TMP/s3rver" 2>"$TMP/err") &&
	[ -x /usr/bin/aws ]; then
	EP=http://127.0.0.1:$PORT
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
	PREP=""
	aput=$(median_time /usr/bin/aws --endpoint-url "$EP" --region us-east-1 \
		s3 cp --quiet "$TMP/src.bin" s3://bench/aws.bin)
	PREP="rm -f '$TMP/got.bin'"
	aget=$(median_time /usr/bin/aws --endpoint-url "$EP" --region us-east-1 \
		s3 cp --quiet s3://bench/aws.bin "$TMP/got.bin")
	export TRAINCTL_S3_ENDPOINT=$EP
	PREP=""
	sput=$(median_time "$CLI" cp "$TMP/src.bin" s3://bench/ours.bin)
	PREP="rm -f '$TMP/got.bin'"
	sget=$(median_time "$CLI" cp s3://bench/ours.bin "$TMP/got.bin")
	cmp "$TMP/src.bin" "$TMP/got.bin" || echo "s3 get: content differs" >&2
	unset TRAINCTL_S3_ENDPOINT
	row "s3 (s3rver) put" "$sput" "aws s3 cp" "$aput"
	row "s3 (s3rver) get" "$sget" "aws s3 cp" "$aget"
else
	echo "s3rver or /usr/bin/aws unavailable: S3 rows skipped" >&2
fi

echo
echo "storage benchmark: ${SIZE_MIB} MiB file, median of $RUNS, $(nproc) cores"
printf '%-26s %10s %14s   %-22s %10s   %5s\n' operation ours throughput \
	baseline "baseline" ratio
printf '%s' "$rows"
echo "ratio = baseline time / our time (target: >= 0.9 vs cp, >= 1.0 vs aws)"
