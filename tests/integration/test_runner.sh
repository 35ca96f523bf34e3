#!/bin/sh
# tests/run.sh itself: a script that stops early with status 0, or prints
# no plan, is a failure; a plan that matches what ran, with skips, passes.
#
# Run from the repository root: sh tests/integration/test_runner.sh. Prints
# TAP. Runs tests/run.sh on a temporary tree of three small scripts.
set -u

ROOT=$(pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/test_runner.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM HUP

n=0
check() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		sed 's/^/# /' "$TMP/out" | tail -n 8
	fi
}

echo "1..4"
mkdir -p "$TMP/tree/tests/integration"
cd "$TMP/tree" || exit 1
t=tests/integration
printf 'echo 1..3\necho "ok 1 - a"\nexit 0\n' >$t/test_early.sh
printf 'echo "ok 1 - a"\n' >$t/test_noplan.sh
printf 'echo "ok 1 - a"\necho "ok 2 - b # SKIP no GPU"\necho 1..2\n' \
	>$t/test_fine.sh

BUILD="$TMP/build" sh "$ROOT/tests/run.sh" >"$TMP/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q '^3 passed, 2 failed, 1 skipped$' "$TMP/out"
check $? "(r1) two bad scripts fail the run; the counts add up"

grep -q 'test_early.sh: planned 3 tests, ran 1' "$TMP/out"
check $? "(r2) a script that stops early with status 0 fails"

grep -q 'test_noplan.sh: no TAP plan' "$TMP/out"
check $? "(r3) a script without a plan fails"

rm $t/test_early.sh $t/test_noplan.sh
BUILD="$TMP/build" sh "$ROOT/tests/run.sh" >"$TMP/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q '^1 passed, 0 failed, 1 skipped$' "$TMP/out"
check $? "(r4) a trailing plan with a skip passes"
