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
# Programs run TEST_JOBS at a time (default 2 where there are 2 or more
# CPUs, else 1): most of a suite's time is waiting on daemons, so two lanes
# halve the wall time on a 2-core machine. Scripts go first, the longest
# kinds (integration) before the short ones, so the lanes end together.
# A script whose text holds the line "# trainctl-test: solo" measures the
# machine's CPU (stragglers, CPU shares, tight host deadlines): it runs
# after the others, alone. Each program's line is printed as it ends; the
# totals come at the end.
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

# What failed, with the first lines of each diagnosis, printed again at the
# end: a CI page that shows only the output's tail still says why.
FAILURES=$LOGDIR/failures.txt
# Every skip with its reason, listed at the end.
SKIPS=$LOGDIR/skips.txt
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
	res=$LOGDIR/$name.res
	rm -f "$res" "$LOGDIR/$name.fail" "$LOGDIR/$name.skip"
	t0=$(date +%s)
	timeout -k 10 "$limit" "$@" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	FAILURES=$LOGDIR/$name.fail
	suites_skipped=0
	p=$(grep -cE '^ok [0-9]+' "$log" | head -n1)
	# cmocka writes a skipped test as "not ok N # SKIP name": a skip.
	cs=$(grep -ciE '^not ok [0-9]+ *# *skip' "$log" | head -n1)
	s=$(grep -ciE '^ok [0-9]+.*# *skip' "$log" | head -n1)
	f=$(($(grep -cE '^not ok [0-9]+' "$log" | head -n1) - cs))
	grep -iE '^(not )?ok [0-9]+.*# *skip' "$log" | cut -c 1-300 |
		sed -E "s|^(not )?ok [0-9]+ *-? *|$prog: |" >"$LOGDIR/$name.skip"
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
		echo "$prog: whole suite: # SKIP $whole" >"$LOGDIR/$name.skip"
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
	done <"$LOGDIR/$name.skip"
	if [ "$f" -gt 0 ]; then
		{
			grep -E '^not ok' "$log" | sed "s|^|  $prog: |"
			tail -n 20 "$log" | sed 's|^|    |'
		} >&2
		grep -E -A 8 '^not ok' "$log" | grep -v -E '^(ok [0-9]|--$|1[.][.])' |
			cut -c 1-400 | sed "s|^|$prog: |" >>"$FAILURES"
	fi
	if [ "$plan" = 0 ] && [ -n "$whole" ] && [ $((p + s + f)) -eq 0 ]; then
		printf '%-45s SKIPPED (%s) %4d s\n' "$prog" "$whole" "$secs"
	else
		printf '%-45s %3d passed %3d failed %3d skipped %4d s\n' "$prog" "$p" "$f" "$s" "$secs"
	fi
	# Last: the totals read only complete result files.
	echo "$p $f $s $suites_skipped" >"$res.new" && mv "$res.new" "$res"
}

# One program: tests/run.sh --one LIMIT PROG COMMAND... (a lane's job).
if [ "${1:-}" = --one ]; then
	shift
	prog=$2
	limit=$1
	shift 2
	run_one "$prog" "$limit" "$@"
	exit 0
fi

# Every program as "LIMIT PROG COMMAND...", one per line, in the order
# the lanes take them.
list() {
	for g in 'tests/integration/test_*' 'tests/compat/test_*' \
		'tests/web/test_*.py' 'tests/web/test_*.sh' \
		'tests/examples/test_*.sh' 'tests/cli/test_*.sh' \
		'tests/storage/test_*.sh' 'tests/agent/test_*.sh' \
		'tests/trainer/test_*.sh'; do
		for t in $(ls $g 2>/dev/null | sort); do
			if [ "${1:-}" = solo ]; then
				grep -qx '# trainctl-test: solo' "$t" || continue
			elif grep -qx '# trainctl-test: solo' "$t"; then
				continue
			fi
			case "$t" in
			*.py) echo "900 $t /usr/bin/python3 $t" ;;
			*.sh) echo "900 $t sh $t" ;;
			esac
		done
	done
	[ "${1:-}" = solo ] && return
	for t in $(find "$BUILD/tests" -type f -name 'test_*' -perm -u+x 2>/dev/null | sort); do
		echo "300 $t $t"
	done
}

if [ -z "${TEST_JOBS:-}" ]; then
	TEST_JOBS=1
	[ "$(nproc 2>/dev/null || echo 1)" -ge 2 ] && TEST_JOBS=2
fi
LIST=$LOGDIR/programs.txt
SOLO=$LOGDIR/programs-solo.txt
matching() {
	while read -r limit prog cmd; do
		case "$prog" in
		*${TESTS:-}*) echo "$limit $prog $cmd" ;;
		esac
	done
}
list | matching >"$LIST"
list solo | matching >"$SOLO"
find "$LOGDIR" -name '*.res' -delete
xargs -r -P "$TEST_JOBS" -L 1 sh "$0" --one <"$LIST"
xargs -r -P 1 -L 1 sh "$0" --one <"$SOLO"

pass=0
fail=0
skip=0
suites_skipped=0
programs=0
failed_names=""
: >"$FAILURES"
: >"$SKIPS"
while read -r limit prog cmd; do
	[ -n "$prog" ] || continue
	name=$(echo "$prog" | sed 's|/|_|g')
	programs=$((programs + 1))
	if ! read -r p f s ss <"$LOGDIR/$name.res" 2>/dev/null; then
		p=0 f=1 s=0 ss=0
		echo "$prog: its lane ended without a result" >>"$FAILURES"
	fi
	pass=$((pass + p))
	fail=$((fail + f))
	skip=$((skip + s))
	suites_skipped=$((suites_skipped + ss))
	[ "$f" -gt 0 ] && failed_names="$failed_names $prog"
	cat "$LOGDIR/$name.skip" >>"$SKIPS" 2>/dev/null
	cat "$LOGDIR/$name.fail" >>"$FAILURES" 2>/dev/null
done <<EOF
$(cat "$LIST" "$SOLO")
EOF

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
