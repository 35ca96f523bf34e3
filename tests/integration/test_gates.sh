#!/bin/sh
# A crash is a failure, never a skip: the suites that used to decide
# "feature absent" from a failed --help, a missing binary or an HTTP status
# are run against a build whose trainctld dies of SIGSEGV as it starts (the
# other programs are the real ones). Each must fail (status not 0, at least
# one "not ok"), and none may print a whole-suite skip ("1..0 # SKIP").
# And a chaos run given no time to inject faults must fail.
#
# Run from the repository root: sh tests/integration/test_gates.sh. Prints
# TAP. Root only for the namespace suites, as they are.
set -u
. "$(dirname "$0")/../lib.sh"

t_tmpdir test_gates
cd "$T_ROOT" || exit 1
BUILD=${BUILD:-build}
real=$(cd "$BUILD" && pwd)
fake=$T_TMP/build
mkdir -p "$fake/bin"
for b in trainagent trainctl trainctl-tuner-driver; do
	ln -s "$real/bin/$b" "$fake/bin/$b"
done
ln -s "$real/lib" "$fake/lib"
printf '#!/bin/sh\nkill -SEGV $$\n' >"$fake/bin/trainctld"
chmod +x "$fake/bin/trainctld"

suites="tests/storage/test_cli.sh tests/web/test_metrics.py
tests/integration/test_cluster_jobs.py tests/integration/test_distributed.py
tests/integration/test_chaos.py tests/integration/test_security.py"
t_plan $(($(echo "$suites" | wc -w) + 1))
for s in $suites; do
	out=$T_TMP/$(basename "$s").out
	case "$s" in
	*.py) BUILD=$fake timeout 300 /usr/bin/python3 "$s" >"$out" 2>&1 ;;
	*) BUILD=$fake timeout 300 sh "$s" >"$out" 2>&1 ;;
	esac
	rc=$?
	[ "$rc" -ne 0 ] && grep -q '^not ok' "$out" &&
		! grep -qiE '^1\.\.0 *# *skip' "$out"
	t_ok $? "(g) $s fails when trainctld crashes (status $rc)" ||
		t_diag_file "$out" 15
done
# A chaos run that breaks nothing proves nothing: with no time for faults
# (CHAOS_WINDOW=0) the real trainctld's chaos run must fail its check
# that faults were injected, and only that one.
out=$T_TMP/chaos0.out
CHAOS_WINDOW=0 CHAOS_SEEDS=1 CHAOS_SEEDS_ONLY=1 timeout 300 \
	/usr/bin/python3 tests/integration/test_chaos.py >"$out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q '^not ok .*at least [0-9]* faults were injected' "$out" &&
	[ "$(grep -c '^not ok' "$out")" -le 2 ]
t_ok $? "(g) a chaos run that injects no fault fails (status $rc)" ||
	t_diag_file "$out" 15
t_done
