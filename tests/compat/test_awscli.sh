#!/bin/sh
# Both aws CLIs against trainctld: Debian's /usr/bin/aws (v2.9, model ~M22)
# and the first other `aws` on PATH (pyenv's aws-cli v1, botocore 1.43, M26);
# the v1 cases are skipped when it is absent. TAP on stdout.
#
# Run from the repository root: sh tests/compat/test_awscli.sh
# Starts its own trainctld (free loopback port, temp state dir), stops it by PID.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
DAEMON=${TRAINCTLD:-$BUILD/bin/trainctld}
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

tmp=$(mktemp -d /tmp/trainctl-awscli.XXXXXX)
pid=""
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
notok() {
	n=$((n + 1)); failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	for f in "$@"; do
		if [ -f "$f" ]; then
			echo "# --- $(basename "$f"):"; { head -c 3000 "$f"; echo; } | sed 's/^/# /'
		else
			echo "# $f"
		fi
	done
}
# check NAME CONDITION-COMMAND...: ok when the command succeeds, else shows the last CLI run.
check() {
	name=$1; shift
	if "$@"; then ok "$name"; else notok "$name" "$@" "exit status $rc" "$tmp/out" "$tmp/err"; fi
}

stop_daemon() {
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	killed=0
	if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; killed=1; fi
	wait "$pid"; drc=$?
	pid=""
	return 0
}
finish() {
	stop_daemon
	echo "1..$n"
	[ "$failed" -gt 0 ] && echo "# $failed of $n failed"
	rm -rf "$tmp"
	[ "$failed" -eq 0 ]
	exit $?
}
trap 'stop_daemon; rm -rf "$tmp"; exit 130' INT TERM

# Hermetic AWS environment: explicit keys, no files, no metadata service, no retries.
for v in $(env | sed -n 's/^\(AWS_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
export AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
export AWS_ACCESS_KEY_ID=AKIDCOMPATTEST0000001 AWS_SECRET_ACCESS_KEY=compat-cli-secret
export AWS_DEFAULT_REGION=us-east-1 AWS_MAX_ATTEMPTS=1 AWS_RETRY_MODE=standard AWS_PAGER=""
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

# ---- daemon
if [ ! -x "$DAEMON" ]; then
	notok "trainctld starts" "$DAEMON not built"
	finish
fi
port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/state"
"$DAEMON" --listen "127.0.0.1:$port" --state-dir "$tmp/state" --local-hosts 0 -v >"$tmp/trainctld.log" 2>&1 &
pid=$!
if $PY - "$port" "$pid" <<'EOF'
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
then ok "trainctld starts and listens on 127.0.0.1:$port"
else
	notok "trainctld starts and listens" "$tmp/trainctld.log"
	finish
fi
EP=http://127.0.0.1:$port

# ---- request files
$PY - "$tmp" <<'EOF'
import json, sys
sys.path.insert(0, "tests/compat")
import smcompat
for label in ("v2", "v1"):
    json.dump(smcompat.job_request("cli-%s-1" % label), open("%s/job-%s.json" % (sys.argv[1], label), "w"), indent=1)
json.dump(smcompat.small_request("placeholder"), open("%s/small.json" % sys.argv[1], "w"))
EOF

# jcheck EXPR: EXPR (Python, j = the JSON of the last CLI run's stdout) is true.
jcheck() {
	$PY -c '
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$tmp/out" "$1" 2>>"$tmp/err"
}
out_is() { [ "$(cat "$tmp/out")" = "$1" ]; }
# words_are "a b c": the last stdout, split on blanks (text output breaks lines per page).
words_are() { [ "$(tr -s ' \t\n' '   ' <"$tmp/out" | sed 's/^ //; s/ $//')" = "$1" ]; }
rc_is() { [ "$rc" -eq "$1" ]; }

# aws ARGS...: runs the CLI under test; sets rc, fills $tmp/out and $tmp/err.
aws_() {
	# shellcheck disable=SC2086
	timeout 120 "$AWS" "$@" --endpoint-url "$EP" $PAGER_ARG >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
}

cli_cases() {
	L=$1       # v2 | v1
	ERR=$2     # exit status on an API error
	J=cli-$L-1
	aws_ sagemaker create-training-job --cli-input-json "file://$tmp/job-$L.json"
	check "$L: create-training-job --cli-input-json returns the ARN" \
		jcheck "j['TrainingJobArn'].endswith(':training-job/$J') and j['TrainingJobArn'].startswith('arn:aws')"

	aws_ sagemaker describe-training-job --training-job-name "$J" \
		--query '[TrainingJobStatus,SecondaryStatus]' --output text
	check "$L: describe-training-job: InProgress / Starting" out_is "$(printf 'InProgress\tStarting')"

	aws_ sagemaker describe-training-job --training-job-name "$J"
	# v2 prints timestamps as ISO 8601, v1 as the epoch number it received.
	if [ "$L" = v2 ]; then ts="isinstance(j['CreationTime'], str) and j['CreationTime'][:2] == '20' and 'T' in j['CreationTime']"
	else ts="isinstance(j['CreationTime'], (int, float)) and j['CreationTime'] > 1.6e9"; fi
	check "$L: describe echoes HyperParameters, ResourceConfig; CreationTime parsed" jcheck \
		"j['HyperParameters'] == json.load(open('$tmp/job-$L.json'))['HyperParameters'] and j['ResourceConfig']['InstanceCount'] == 2 and $ts"

	for i in 2 3 4 5; do
		aws_ sagemaker create-training-job --cli-input-json "file://$tmp/small.json" --training-job-name "cli-$L-$i"
		[ "$rc" -eq 0 ] || break
	done
	check "$L: four more creates (--cli-input-json + --training-job-name)" rc_is 0

	aws_ sagemaker list-training-jobs --name-contains "cli-$L-" --max-items 3 --page-size 2
	check "$L: list --max-items 3 --page-size 2: 3 jobs in creation order and a NextToken" jcheck \
		"[s['TrainingJobName'] for s in j['TrainingJobSummaries']] == ['cli-$L-1', 'cli-$L-2', 'cli-$L-3'] and j.get('NextToken')"
	tok=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1])).get("NextToken", ""))' "$tmp/out" 2>/dev/null)
	aws_ sagemaker list-training-jobs --name-contains "cli-$L-" --max-items 3 --page-size 2 --starting-token "$tok"
	check "$L: list --starting-token: the remaining 2, no NextToken" jcheck \
		"[s['TrainingJobName'] for s in j['TrainingJobSummaries']] == ['cli-$L-4', 'cli-$L-5'] and 'NextToken' not in j"

	aws_ sagemaker list-training-jobs --name-contains "cli-$L-" --page-size 2 \
		--query 'TrainingJobSummaries[].TrainingJobName' --output text
	check "$L: list (automatic paging, page size 2) returns all 5" \
		words_are "cli-$L-1 cli-$L-2 cli-$L-3 cli-$L-4 cli-$L-5"

	aws_ sagemaker list-training-jobs --name-contains "cli-$L-" --sort-by Name --sort-order Descending \
		--query 'TrainingJobSummaries[].TrainingJobName' --output text
	check "$L: list --sort-by Name --sort-order Descending" \
		words_are "cli-$L-5 cli-$L-4 cli-$L-3 cli-$L-2 cli-$L-1"

	aws_ sagemaker list-training-jobs --name-contains "cli-$L-" --creation-time-after 2099-01-01T00:00:00Z \
		--query 'length(TrainingJobSummaries)' --output text
	check "$L: list --creation-time-after 2099 is empty" out_is 0

	aws_ sagemaker stop-training-job --training-job-name "$J"
	check "$L: stop-training-job succeeds with no output" sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/out' ]"

	i=0
	while :; do
		aws_ sagemaker describe-training-job --training-job-name "$J" --query TrainingJobStatus --output text
		[ "$(cat "$tmp/out")" = Stopped ] && break
		i=$((i + 1))
		[ $i -ge 150 ] && break
		sleep 0.1
	done
	check "$L: the stopped job reaches Stopped" out_is Stopped

	aws_ sagemaker list-training-jobs --name-contains "cli-$L-" --status-equals Stopped \
		--query 'TrainingJobSummaries[].TrainingJobName' --output text
	check "$L: list --status-equals Stopped" out_is "$J"

	aws_ sagemaker wait training-job-completed-or-stopped --training-job-name "$J"
	check "$L: wait training-job-completed-or-stopped returns 0 on the stopped job" rc_is 0

	aws_ sagemaker wait training-job-completed-or-stopped --training-job-name "no-such-job"
	check "$L: wait on an unknown job fails (non-zero) at once" sh -c "[ $rc -ne 0 ] && [ $rc -ne 124 ]"

	aws_ sagemaker create-training-job --cli-input-json "file://$tmp/job-$L.json"
	check "$L: duplicate name: exit $ERR and ResourceInUse" sh -c "[ $rc -eq $ERR ] && grep -q 'ResourceInUse' '$tmp/err' && grep -q CreateTrainingJob '$tmp/err'"

	aws_ sagemaker describe-training-job --training-job-name no-such-job
	check "$L: unknown job: exit $ERR, ValidationException 'Requested resource not found.'" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$tmp/err' && grep -qF 'Requested resource not found.' '$tmp/err'"

	aws_ sagemaker stop-training-job --training-job-name "$J"
	check "$L: second stop: exit $ERR, ValidationException" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$tmp/err'"

	aws_ sagemaker create-training-job --cli-input-json "file://$tmp/small.json" --training-job-name "bad_name_$L"
	check "$L: name with underscores: exit $ERR, ValidationException" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$tmp/err'"

	aws_ sagemaker list-training-jobs --max-results 101
	check "$L: list --max-results 101: exit $ERR, ValidationException" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$tmp/err'"

	if [ "$L" = v1 ]; then
		aws_ sagemaker delete-training-job --training-job-name "$J"
		check "$L: delete-training-job of the stopped job" rc_is 0
		i=0
		while :; do
			aws_ sagemaker describe-training-job --training-job-name "$J"
			[ "$rc" -ne 0 ] && break
			i=$((i + 1)); [ $i -ge 150 ] && break
			sleep 0.1
		done
		check "$L: after delete: exit $ERR, Requested resource not found." \
			sh -c "[ $rc -eq $ERR ] && grep -qF 'Requested resource not found.' '$tmp/err'"
		aws_ sagemaker delete-training-job --training-job-name "cli-$L-2"
		check "$L: delete-training-job of an InProgress job: exit $ERR, ResourceInUse" \
			sh -c "[ $rc -eq $ERR ] && grep -q 'ResourceInUse' '$tmp/err'"
	fi
}

# ---- Debian aws-cli v2
if [ -x /usr/bin/aws ]; then
	AWS=/usr/bin/aws PAGER_ARG=--no-cli-pager
	echo "# $($AWS --version 2>&1)"
	cli_cases v2 254
else
	skip "v2: all cases" "/usr/bin/aws not installed"
fi

# ---- the first other aws on PATH (pyenv aws-cli v1)
AWS=""
for a in $(which -a aws 2>/dev/null) "${PYENV_ROOT:-$HOME/.pyenv}/shims/aws"; do
	[ -x "$a" ] || continue
	[ "$(readlink -f "$a")" = "$(readlink -f /usr/bin/aws)" ] && continue
	if "$a" --version 2>&1 | grep -q '^aws-cli/1\.'; then AWS=$a; break; fi
done
if [ -n "$AWS" ]; then
	PAGER_ARG=""
	echo "# $AWS: $($AWS --version 2>&1)"
	cli_cases v1 255
else
	skip "v1: all cases" "no aws-cli v1 on PATH"
fi

kill -0 "$pid" 2>/dev/null && ok "trainctld still alive" || notok "trainctld still alive" "$tmp/trainctld.log"
stop_daemon
if [ "$drc" -eq 0 ] && [ "$killed" -eq 0 ]; then ok "trainctld exits 0 on SIGTERM"
else notok "trainctld exits 0 on SIGTERM" "exit status $drc, SIGKILL needed: $killed" "$tmp/trainctld.log"; fi
[ "$failed" -gt 0 ] && { echo "# --- trainctld log tail:"; tail -n 30 "$tmp/trainctld.log" | sed 's/^/# /'; }
finish
