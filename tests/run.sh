#!/bin/sh
# Runs every test and prints one closing line "N passed, N failed, N skipped,
# N suites skipped".
#
# Every test program speaks TAP on stdout: cmocka unit tests (through
# CMOCKA_MESSAGE_OUTPUT=TAP), and the scripts in tests/compat/ and
# tests/integration/ ("ok N - name", "not ok N - name", "# SKIP" directives).
# Each program runs under a time limit; one that dies or times out counts as
# one more failure, and so does one whose plan ("1..N") is missing or does
# not match the number of tests it ran. TESTS=pattern runs only matching programs.
#
# Skips are counted and named, never hidden: a check "ok N - x # SKIP why"
# (or cmocka's "not ok N # SKIP x") is one skipped check, and a program
# that prints "1..0 # SKIP why" (nothing can run here) is one skipped suite.
# Each skip's reason is listed before the totals, and the closing line adds
# the number of skipped suites: "N passed, N failed, N skipped, N suites
# skipped". A run that ran no test at all fails.
#
# A skip is allowed only for a reason that matches TESTS_ALLOW_SKIP (an
# extended regex, matched ignoring case; by default the one documented
# reason: no GPU here). Any other skip fails the program, naming the
# reason: everything else can run on the machines `make test` is meant for
# (Debian 12 after `make deps`, root, the newer client generation on PATH;
# see the README). A developer whose machine lacks one of these may widen
# it, e.g. TESTS_ALLOW_SKIP=. to allow every skip.
set -u

BUILD=${BUILD:-build}
LOGDIR=$BUILD/test-logs
mkdir -p "$LOGDIR"
export BUILD
export CMOCKA_MESSAGE_OUTPUT=TAP

pass=0
fail=0
skip=0
failed_names=""
# What failed, with the first lines of each diagnosis, printed again at the
# end: a CI page that shows only the output's tail still says why.
FAILURES=$LOGDIR/failures.txt
: >"$FAILURES"
# Every skip with its reason, listed at the end.
SKIPS=$LOGDIR/skips.txt
: >"$SKIPS"
suites_skipped=0
programs=0
# The documented reasons a check may be skipped on a machine meant to run
# everything: GPU hardware and drivers that are not there.
ALLOW_SKIP=${TESTS_ALLOW_SKIP:-'GPU|CUDA|NVML|NVIDIA'}

run_one() {
	prog=$1
	limit=$2
	shift 2
	name=$(echo "$prog" | sed 's|/|_|g')
	case "$prog" in
	*${TESTS:-}*) ;;
	*) return ;;
	esac
	log=$LOGDIR/$name.log
	t0=$(date +%s)
	timeout -k 10 "$limit" "$@" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	programs=$((programs + 1))
	p=$(grep -cE '^ok [0-9]+' "$log" | head -n1)
	# cmocka writes a skipped test as "not ok N # SKIP name": a skip.
	cs=$(grep -ciE '^not ok [0-9]+ *# *skip' "$log" | head -n1)
	s=$(grep -ciE '^ok [0-9]+.*# *skip' "$log" | head -n1)
	f=$(($(grep -cE '^not ok [0-9]+' "$log" | head -n1) - cs))
	grep -iE '^(not )?ok [0-9]+.*# *skip' "$log" | cut -c 1-300 |
		sed -E "s|^(not )?ok [0-9]+ *-? *|$prog: |" >"$LOGDIR/skips.one"
	p=$((p + cs))
	s=$((s + cs))
	# The plan ("1..N", first or last) must match what ran: a script
	# that stops early, even with status 0, has not passed.
	plan=$(grep -m1 -E '^1\.\.[0-9]+' "$log" | sed -E 's/^1\.\.([0-9]+).*/\1/')
	p=$((p - s))
	# "1..0 # SKIP why": the whole program had nothing it could run.
	whole=$(grep -m1 -iE '^1\.\.0 *# *skip' "$log" | sed -E 's/^1\.\.0 *# *[Ss][Kk][Ii][Pp]:? *//')
	if [ -z "$whole" ] && grep -qiE '^1\.\.0 *# *skip' "$log"; then
		whole="no reason given"
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# A crash, a timeout or a failing script without TAP output.
		f=1
		echo "  $prog: exit status $rc (see $log)" >&2
		{
			echo "$prog: exit status $rc; its last lines:"
			tail -n 6 "$log" | cut -c 1-400 | sed "s|^|$prog: |"
		} >>"$FAILURES"
	elif [ -z "$plan" ]; then
		f=$((f + 1))
		echo "  $prog: no TAP plan (1..N) in its output (see $log)" >&2
		echo "$prog: no TAP plan (1..N) in its output" >>"$FAILURES"
	elif [ "$plan" -eq 0 ] && [ $((p + s + f)) -eq 0 ] && [ -z "$whole" ]; then
		f=1
		echo "  $prog: plan 1..0 without a SKIP reason (see $log)" >&2
		echo "$prog: plan 1..0 without a SKIP reason" >>"$FAILURES"
	elif [ "$plan" -eq 0 ] && [ $((p + s + f)) -eq 0 ]; then
		suites_skipped=$((suites_skipped + 1))
		echo "$prog: whole suite: # SKIP $whole" >"$LOGDIR/skips.one"
	elif [ "$plan" -ne $((p + s + f)) ]; then
		f=$((f + 1))
		echo "  $prog: planned $plan tests, ran $((p + s + f - 1)) (see $log)" >&2
		echo "$prog: planned $plan tests, ran $((p + s + f - 1))" >>"$FAILURES"
	fi
	# Each skip's reason is the text after "# SKIP"; one that is not
	# allowed here fails the program.
	while IFS= read -r line; do
		why=$(echo "$line" | sed -E 's/.*# *[Ss][Kk][Ii][Pp]:? *//')
		if ! echo "$why" | grep -qiE -- "$ALLOW_SKIP"; then
			f=$((f + 1))
			echo "  $prog: skipped for a reason not allowed here: $why" >&2
			echo "$prog: skipped for a reason not allowed here" \
				"(TESTS_ALLOW_SKIP): $why" >>"$FAILURES"
		fi
	done <"$LOGDIR/skips.one"
	cat "$LOGDIR/skips.one" >>"$SKIPS"
	pass=$((pass + p))
	skip=$((skip + s))
	fail=$((fail + f))
	if [ "$f" -gt 0 ]; then
		failed_names="$failed_names $prog"
		grep -E '^not ok' "$log" | sed "s|^|  $prog: |" >&2
		tail -n 20 "$log" | sed 's|^|    |' >&2
		grep -E -A 8 '^not ok' "$log" | grep -v -E '^(ok [0-9]|--$|1[.][.])' |
			cut -c 1-400 | sed "s|^|$prog: |" >>"$FAILURES"
	fi
	if [ "$plan" = 0 ] && [ -n "$whole" ] && [ $((p + s + f)) -eq 0 ]; then
		printf '%-45s SKIPPED (%s) %4d s\n' "$prog" "$whole" "$secs"
	else
		printf '%-45s %3d passed %3d failed %3d skipped %4d s\n' "$prog" "$p" "$f" "$s" "$secs"
	fi
}

for t in $(find "$BUILD/tests" -type f -name 'test_*' -perm -u+x 2>/dev/null | sort); do
	run_one "$t" 300 "$t"
done

for t in $(ls tests/cli/test_*.sh tests/storage/test_*.sh tests/agent/test_*.sh tests/trainer/test_*.sh tests/examples/test_*.sh tests/compat/test_* tests/integration/test_* tests/web/test_*.py tests/web/test_*.sh 2>/dev/null | sort); do
	case "$t" in
	*.py) run_one "$t" 900 /usr/bin/python3 "$t" ;;
	*.sh) run_one "$t" 900 sh "$t" ;;
	esac
done

if [ "$programs" -eq 0 ]; then
	fail=$((fail + 1))
	echo "no test program ran (TESTS='${TESTS:-}')" | tee -a "$FAILURES" >&2
fi
if [ -s "$SKIPS" ]; then
	echo "skipped, with reasons:"
	sed 's|^|  |' "$SKIPS"
fi
if [ -s "$FAILURES" ]; then
	echo "what failed (from $LOGDIR):" >&2
	cat "$FAILURES" >&2
fi
[ -n "$failed_names" ] && echo "failed:$failed_names" >&2
echo "$pass passed, $fail failed, $skip skipped, $suites_skipped suites skipped"
[ "$fail" -eq 0 ]
