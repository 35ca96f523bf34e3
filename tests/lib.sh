# tests/lib.sh: what the shell tests share: TAP output, a temporary folder
# cleaned up on exit, processes stopped by PID, free ports, a trainctld to
# test against, a hermetic environment. POSIX sh; every name defined here
# starts with t_ or T_ (_t_ or _T_: internal), so a script's own names are
# safe.
#
# A script in tests/<dir>/ sources it first, before any cd (tests/run.sh
# runs it as `sh tests/<dir>/test_x.sh` from the repository root):
#     . "$(dirname "$0")/../lib.sh"
# Sourcing only defines functions and T_ROOT (the repository root, found from
# $0); nothing else happens until a function is called.
#
# TAP (T_N: tests so far, T_FAILED: failed so far)
#   t_plan N            the plan "1..N", printed now, before the tests.
#   t_ok STATUS NAME    one test: "ok N - NAME" when STATUS is 0, else
#                       "not ok N - NAME". Returns 0 or 1 likewise, so
#                       `t_ok $? NAME || show-why` adds diagnostics.
#   t_pass NAME         t_ok 0 NAME.
#   t_fail NAME [TEXT...]  t_ok 1 NAME, then the TEXTs as diagnostics.
#   t_skip NAME REASON  "ok N - NAME # SKIP REASON".
#   t_skip_all REASON   "1..0 # SKIP REASON" and exit 0: nothing can run here.
#   t_diag [TEXT...]    every line of every non-empty TEXT as a "# " comment;
#                       without TEXT, the lines of stdin.
#   t_diag_file FILE [N]  the last N (20) lines of FILE as comments.
#   t_include FILE      prints the TAP another program wrote to FILE
#                       (numbered on from this script's) and counts its
#                       tests, failures and plan as this script's.
#   t_done              ends the script: prints the plan "1..T_N" unless
#                       t_plan (or t_include) gave one, noting a count that
#                       differs from it; exits 0 when every test passed and
#                       the count matches, else 1.
#
# Temporary folder and cleanup
#   t_tmpdir [NAME]     creates T_TMP, ${TMPDIR:-/tmp}/NAME.XXXXXX (NAME:
#                       trainctl-test), and installs the cleanup trap; once:
#                       later calls keep both. On exit, and on HUP, INT or
#                       TERM (which exit 128 + the signal's number), the
#                       cleanup stops every tracked PID (as t_stop, all
#                       signalled at once), then evaluates the t_on_exit
#                       commands in order, then removes T_TMP. The script's
#                       exit status is kept.
#   t_on_exit CMD       CMD (a string, evaluated then) is part of the cleanup:
#                       for what is known only at exit or is not ours to
#                       wait for (a PID in a file, a helper's own stop).
#   t_track_pid PID     PID is stopped at exit. By PID only, never by name.
#                       (Both call t_tmpdir when there is none yet, for the
#                       trap.)
#   t_wait PID          waits for a tracked child PID; returns its exit
#                       status; PID is no longer tracked.
#   t_stop PID [SECONDS]  SIGTERM, up to SECONDS (10) for PID to go, then
#                       SIGKILL; reaps it when it is this shell's child; no
#                       longer tracked. Sets T_STOP_RC (its exit status, 127
#                       when not this shell's child) and T_STOP_KILLED (1
#                       when SIGKILL was needed). Returns 0 when it exited
#                       with status 0 on SIGTERM alone. A PID that is not a
#                       positive number is refused (kill -1 would signal
#                       every process).
#
# Network and daemons
#   t_free_port [K]     K (1) distinct TCP ports free on every address, on
#                       one line, picked at random from 20000 up to the
#                       kernel's ephemeral range (where outgoing connections
#                       take their ports), so that overlapping runs rarely
#                       pick the same. They stay free only until someone
#                       binds them: use them at once.
#   t_start_trainctld [-n NAME] [-p PORT] [--] [ARGS...]
#                       starts TRAINCTLD (default $BUILD/bin/trainctld,
#                       BUILD default build) with --listen 127.0.0.1:PORT
#                       (PORT: a free one) --state-dir T_TMP/NAME (NAME:
#                       trainctld; created if missing, so a script may fill
#                       it first) ARGS..., stdin /dev/null, stdout and stderr
#                       appended to T_TMP/NAME.log; tracks its PID and waits
#                       until GET /v1/hosts gets any HTTP answer (a 401 or 403
#                       of a daemon with --credentials counts), up to
#                       T_START_TIMEOUT (30) seconds. Sets T_PID, T_PORT,
#                       T_URL (http://127.0.0.1:PORT), T_STATE and T_LOG.
#                       Returns 0 when it answers; else prints why (exited
#                       early, with its status, or did not answer in time)
#                       and the log's tail as comments, stops it and returns
#                       1. The same NAME and PORT restart a daemon on its
#                       state. Calls t_tmpdir when there is no T_TMP yet.
#                       Not in a subshell ($(...)): the PID must be tracked
#                       by the script's own shell.
#   t_hermetic_aws      no ambient AWS or trainctl client settings: unsets
#                       every AWS_* variable, trainctl's client variables
#                       (TRAINCTL_ENDPOINT, TRAINCTL_S3_ENDPOINT, ...) and
#                       the proxy variables; no AWS config or credentials
#                       file, no metadata service; NO_PROXY for loopback.
#   t_hermetic_job      nothing of an enclosing training job: unsets every
#                       SM_* variable, TF_CONFIG, RANK, WORLD_SIZE,
#                       LOCAL_RANK, LOCAL_WORLD_SIZE and trainctl's per-job
#                       variables (TRAINCTL_ATTEMPT, TRAINCTL_RDZV_URL, ...).

# shellcheck shell=sh disable=SC2034,SC2119,SC2120
# (SC2034: the T_ variables are for the scripts that source this file;
# SC2119, SC2120: optional arguments that no caller in this file passes.)

T_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T_N=0
T_FAILED=0
T_PLAN=""
T_TMP=""
T_PIDS=""
_T_ON_EXIT=""
_T_TRAPPED=""

# ---- TAP -------------------------------------------------------------------

t_plan() {
	T_PLAN=$1
	echo "1..$1"
}

t_ok() {
	T_N=$((T_N + 1))
	if [ "$1" -eq 0 ] 2>/dev/null; then
		echo "ok $T_N - $2"
		return 0
	fi
	T_FAILED=$((T_FAILED + 1))
	echo "not ok $T_N - $2"
	return 1
}

t_pass() {
	t_ok 0 "$1"
}

t_fail() {
	t_ok 1 "$1"
	shift
	t_diag "$@"
	return 1
}

t_skip() {
	T_N=$((T_N + 1))
	echo "ok $T_N - $1 # SKIP $2"
}

t_skip_all() {
	echo "1..0 # SKIP $1"
	exit 0
}

t_diag() {
	if [ $# -eq 0 ]; then
		sed 's/^/# /'
		return 0
	fi
	for _t_d in "$@"; do
		[ -n "$_t_d" ] && printf '%s\n' "$_t_d" | sed 's/^/# /'
	done
	return 0
}

t_diag_file() {
	if [ -s "$1" ]; then
		echo "# --- $1 (last ${2:-20} lines):"
		tail -n "${2:-20}" "$1" | sed 's/^/# /'
	else
		echo "# --- $1: missing or empty"
	fi
}

t_include() {
	cat "$1" 2>/dev/null
	_t_k=$(grep -cE '^(not )?ok [0-9]+' "$1" 2>/dev/null)
	_t_f=$(grep -cE '^not ok [0-9]+' "$1" 2>/dev/null)
	_t_p=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$1" 2>/dev/null | head -n 1)
	T_N=$((T_N + ${_t_k:-0}))
	T_FAILED=$((T_FAILED + ${_t_f:-0}))
	[ -n "$_t_p" ] && T_PLAN=$_t_p
	return 0
}

t_done() {
	_t_rc=0
	if [ -z "$T_PLAN" ]; then
		echo "1..$T_N"
	elif [ "$T_N" -ne "$T_PLAN" ]; then
		t_diag "ran $T_N tests, planned $T_PLAN"
		_t_rc=1
	fi
	if [ "$T_FAILED" -gt 0 ]; then
		t_diag "$T_FAILED of $T_N failed"
		_t_rc=1
	fi
	exit $_t_rc
}

# ---- temporary folder, cleanup, processes ------------------------------------

t_tmpdir() {
	[ -n "$_T_TRAPPED" ] && return 0
	T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/${1:-trainctl-test}.XXXXXX") || T_TMP=""
	if [ -z "$T_TMP" ] || [ ! -d "$T_TMP" ]; then
		echo "Bail out! cannot create a temporary folder in ${TMPDIR:-/tmp}"
		exit 1
	fi
	_T_TRAPPED=1
	trap _t_cleanup EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

t_on_exit() {
	t_tmpdir
	_T_ON_EXIT="$_T_ON_EXIT
$1"
}

_t_is_pid() {
	case $1 in
	'' | *[!0-9]* | 0*) return 1 ;;
	esac
	return 0
}

t_track_pid() {
	_t_is_pid "$1" || {
		t_diag "t_track_pid: '$1' is not a PID"
		return 1
	}
	t_tmpdir
	T_PIDS="$T_PIDS $1"
}

_t_untrack() {
	_t_keep=""
	for _t_q in $T_PIDS; do
		[ "$_t_q" = "$1" ] || _t_keep="$_t_keep $_t_q"
	done
	T_PIDS=$_t_keep
}

t_wait() {
	wait "$1"
	_t_rc=$?
	_t_untrack "$1"
	return $_t_rc
}

t_stop() {
	T_STOP_RC=127
	T_STOP_KILLED=0
	_t_is_pid "$1" || {
		t_diag "t_stop: '$1' is not a PID"
		return 1
	}
	kill -TERM "$1" 2>/dev/null
	_t_i=0
	while kill -0 "$1" 2>/dev/null && [ "$_t_i" -lt $((${2:-10} * 10)) ]; do
		sleep 0.1
		_t_i=$((_t_i + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -KILL "$1" 2>/dev/null
		T_STOP_KILLED=1
	fi
	# A child's status (127 for another's process, which cannot be waited
	# for: it has gone, kill -0 says so).
	wait "$1" 2>/dev/null
	T_STOP_RC=$?
	_t_untrack "$1"
	[ "$T_STOP_RC" -eq 0 ] && [ "$T_STOP_KILLED" -eq 0 ]
}

_t_cleanup() {
	_t_status=$?
	trap - EXIT HUP INT TERM
	for _t_p in $T_PIDS; do
		kill -TERM "$_t_p" 2>/dev/null
	done
	for _t_p in $T_PIDS; do
		t_stop "$_t_p"
	done
	eval "$_T_ON_EXIT"
	[ -n "$T_TMP" ] && rm -rf "$T_TMP"
	exit $_t_status
}

# ---- network, daemons, environment --------------------------------------------

t_free_port() {
	/usr/bin/python3 -c 'import random, socket, sys
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
rng = random.SystemRandom()
socks = []
tries = 0
while len(socks) < int(sys.argv[1]):
    tries += 1
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", rng.randint(20000, low - 1) if low > 21000 and tries < 500 else 0))
        socks.append(s)
    except OSError:
        s.close()
print(" ".join(str(s.getsockname()[1]) for s in socks))' "${1:-1}"
}

t_start_trainctld() {
	_t_name=trainctld
	_t_port=""
	while [ $# -gt 0 ]; do
		case $1 in
		-n) _t_name=$2; shift 2 ;;
		-p) _t_port=$2; shift 2 ;;
		--) shift; break ;;
		*) break ;;
		esac
	done
	t_tmpdir
	_t_bin=${TRAINCTLD:-${BUILD:-build}/bin/trainctld}
	[ -n "$_t_port" ] || _t_port=$(t_free_port)
	T_PORT=$_t_port
	T_URL=http://127.0.0.1:$_t_port
	T_STATE=$T_TMP/$_t_name
	T_LOG=$T_TMP/$_t_name.log
	T_PID=""
	if ! command -v curl >/dev/null 2>&1; then
		t_diag "t_start_trainctld: curl is not installed"
		return 1
	fi
	mkdir -p "$T_STATE"
	"$_t_bin" --listen "127.0.0.1:$_t_port" --state-dir "$T_STATE" "$@" \
		</dev/null >>"$T_LOG" 2>&1 &
	T_PID=$!
	t_track_pid "$T_PID"
	_t_i=0
	while [ "$_t_i" -lt $((${T_START_TIMEOUT:-30} * 10)) ]; do
		if ! kill -0 "$T_PID" 2>/dev/null; then
			t_wait "$T_PID"
			_t_rc=$?
			t_diag "$_t_name ($_t_bin) exited with status $_t_rc before answering on $T_URL"
			t_diag_file "$T_LOG" 25
			return 1
		fi
		_t_code=$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' \
			--max-time 2 "$T_URL/v1/hosts" 2>/dev/null)
		case $_t_code in
		'' | 000) ;;
		*) return 0 ;;
		esac
		sleep 0.1
		_t_i=$((_t_i + 1))
	done
	t_diag "$_t_name ($_t_bin) did not answer GET $T_URL/v1/hosts within ${T_START_TIMEOUT:-30} s"
	t_diag_file "$T_LOG" 25
	t_stop "$T_PID"
	return 1
}

t_hermetic_aws() {
	for _t_v in $(env | sed -n 's/^\(AWS_[A-Za-z0-9_]*\)=.*/\1/p'); do
		unset "$_t_v"
	done
	unset TRAINCTL_ENDPOINT TRAINCTL_S3_ENDPOINT TRAINCTL_STATE_DIR \
		TRAINCTL_TOKEN TRAINCTL_BLOB_TOKEN TRAINCTL_CA_FILE \
		TRAINCTL_S3_PART_SIZE TRAINCTL_S3_MULTIPART_THRESHOLD \
		http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY
	export AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null \
		AWS_SHARED_CREDENTIALS_FILE=/dev/null
	export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
}

t_hermetic_job() {
	for _t_v in $(env | sed -n 's/^\(SM_[A-Za-z0-9_]*\)=.*/\1/p'); do
		unset "$_t_v"
	done
	unset TF_CONFIG RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE \
		TRAINCTL_ROLE TRAINCTL_ATTEMPT TRAINCTL_RDZV_URL \
		TRAINCTL_RDZV_TOKEN TRAINCTL_CHECKPOINT_DIR
}
