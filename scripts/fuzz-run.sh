#!/bin/sh
# Runs each fuzzer given on the command line for FUZZ_SECONDS (20) over its
# corpus (FUZZ_DIR/corpus-<name>, FUZZ_DIR defaulting to build/fuzz) and the
# seeds in tests/fuzz/seeds, with tests/fuzz/<name>.dict when there is one.
# A fuzzer that stops with any status but 0 (a crash, a leak, a sanitizer
# report, a timeout) fails the run: its name, status, the input that broke
# it and the last lines of its report are printed. Exits 0 only when every
# fuzzer ran clean.
#
#     scripts/fuzz-run.sh build/fuzz/fuzz_api build/fuzz/fuzz_s3
set -u

secs=${FUZZ_SECONDS:-20}
dir=${FUZZ_DIR:-build/fuzz}
seeds=${FUZZ_SEEDS:-tests/fuzz/seeds}
rc=0

if [ $# -eq 0 ]; then
	echo "usage: $0 FUZZER..." >&2
	exit 2
fi
for f in "$@"; do
	n=$(basename "$f")
	mkdir -p "$dir/corpus-$n" "$dir/crashes-$n"
	set -- -max_total_time="$secs" -max_len=65536 \
		-artifact_prefix="$dir/crashes-$n/"
	[ -f "tests/fuzz/$n.dict" ] && set -- "$@" -dict="tests/fuzz/$n.dict"
	"$f" "$@" "$dir/corpus-$n" "$seeds" >"$dir/$n.log" 2>&1
	st=$?
	if [ "$st" -ne 0 ]; then
		rc=1
		echo "fuzz: $n: FAILED with status $st; input kept in" \
			"$dir/crashes-$n/:"
		ls "$dir/crashes-$n" | sed 's|^|  |'
		tail -n 30 "$dir/$n.log" | sed 's|^|  |'
	else
		echo "fuzz: $n: ok, $(grep -E '^(#[0-9]+|Done)' "$dir/$n.log" |
			tail -n 1)"
	fi
done
exit $rc
