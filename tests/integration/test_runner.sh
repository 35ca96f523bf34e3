#!/bin/sh
# tests/run.sh itself: a script that stops early with status 0, or prints
# no plan, is a failure; a plan that matches what ran, with skips, passes;
# skips are counted and named: a whole skipped suite, a cmocka skip, each
# with its reason; a plan of 1..0 without a reason and a run of nothing fail;
# a skip for a reason TESTS_ALLOW_SKIP does not name (only GPU ones by
# default) fails, and passes when the variable names it.
#
# Run from the repository root: sh tests/integration/test_runner.sh. Prints
# TAP. Runs tests/run.sh on a temporary tree of three small scripts.
set -u
. "$(dirname "$0")/../lib.sh"

t_tmpdir test_runner

# check STATUS NAME: one test; the tail of run.sh's output when it fails.
check() {
	t_ok "$1" "$2" || tail -n 8 "$T_TMP/out" | t_diag
}

t_plan 11
mkdir -p "$T_TMP/tree/tests/integration"
cd "$T_TMP/tree" || exit 1
t=tests/integration
printf 'echo 1..3\necho "ok 1 - a"\nexit 0\n' >$t/test_early.sh
printf 'echo "ok 1 - a"\n' >$t/test_noplan.sh
printf 'echo "ok 1 - a"\necho "ok 2 - b # SKIP no GPU"\necho 1..2\n' \
	>$t/test_fine.sh

# TESTS="": the whole temporary tree, whatever TESTS picked this script by.
BUILD="$T_TMP/build" TESTS="" sh "$T_ROOT/tests/run.sh" >"$T_TMP/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q '^3 passed, 2 failed, 1 skipped, 0 suites skipped$' "$T_TMP/out"
check $? "(r1) two bad scripts fail the run; the counts add up"

grep -q 'test_early.sh: planned 3 tests, ran 1' "$T_TMP/out"
check $? "(r2) a script that stops early with status 0 fails"

grep -q 'test_noplan.sh: no TAP plan' "$T_TMP/out"
check $? "(r3) a script without a plan fails"

rm $t/test_early.sh $t/test_noplan.sh
BUILD="$T_TMP/build" TESTS="" sh "$T_ROOT/tests/run.sh" >"$T_TMP/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q '^1 passed, 0 failed, 1 skipped, 0 suites skipped$' "$T_TMP/out"
check $? "(r4) a trailing plan with a skip passes"

printf 'echo "1..0 # SKIP no GPU here"\n' >$t/test_gpu.sh
printf 'echo 1..2\necho "ok 1 - a"\necho "not ok 2 # SKIP no CUDA device"\n' \
	>$t/test_cmocka.sh
BUILD="$T_TMP/build" TESTS="" sh "$T_ROOT/tests/run.sh" >"$T_TMP/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] &&
	grep -q '^2 passed, 0 failed, 2 skipped, 1 suites skipped$' "$T_TMP/out"
check $? "(r5) a whole-suite skip and a cmocka skip are counted as skips"

grep -q 'test_gpu.sh: whole suite: # SKIP no GPU here' "$T_TMP/out" &&
	grep -q 'test_cmocka.sh: .*SKIP no CUDA device' "$T_TMP/out" &&
	grep -q 'test_fine.sh: b # SKIP no GPU' "$T_TMP/out"
check $? "(r6) each skip is listed with its reason"

grep -q 'test_gpu.sh *SKIPPED (no GPU here)' "$T_TMP/out"
check $? "(r7) the suite's own line says it was skipped and why"

rm $t/test_gpu.sh $t/test_cmocka.sh
printf 'echo "1..0"\n' >$t/test_empty.sh
BUILD="$T_TMP/build" TESTS="" sh "$T_ROOT/tests/run.sh" >"$T_TMP/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q 'test_empty.sh: plan 1..0 without a SKIP reason' \
	"$T_TMP/out"
check $? "(r8) a plan of 1..0 without a SKIP reason fails"

rm $t/test_empty.sh
printf 'echo 1..1\necho "ok 1 - a # SKIP needs s3rver"\n' >$t/test_other.sh
BUILD="$T_TMP/build" TESTS="" sh "$T_ROOT/tests/run.sh" >"$T_TMP/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q 'test_other.sh: skipped for a reason not allowed here (TESTS_ALLOW_SKIP): needs s3rver' "$T_TMP/out"
check $? "(r10) a skip for a reason that is not a GPU one fails"

BUILD="$T_TMP/build" TESTS="" TESTS_ALLOW_SKIP='s3rver|GPU' \
	sh "$T_ROOT/tests/run.sh" >"$T_TMP/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q '^1 passed, 0 failed, 2 skipped, 0 suites skipped$' "$T_TMP/out"
check $? "(r11) TESTS_ALLOW_SKIP allows the reasons it names"

BUILD="$T_TMP/build" TESTS="no-such-test" sh "$T_ROOT/tests/run.sh" \
	>"$T_TMP/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q '^no test program ran' "$T_TMP/out"
check $? "(r9) a run that ran no test program fails"
t_done
