#!/bin/sh
# Both aws CLIs against trainctld: Debian's /usr/bin/aws (v2.9, model ~M22)
# and the first other `aws` on PATH (pyenv's aws-cli v1, botocore 1.43, M26);
# the v1 cases are skipped when it is absent. TAP on stdout.
#
# Run from the repository root: sh tests/compat/test_awscli.sh
# Starts its own trainctld (free loopback port, temp state dir), stops it by PID.
set -u
. "$(dirname "$0")/../lib.sh"
cd "$T_ROOT" || exit 1
BUILD=${BUILD:-build}
DAEMON=${TRAINCTLD:-$BUILD/bin/trainctld}
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

t_tmpdir trainctl-awscli

# notok NAME [FILE-OR-TEXT...]: a failed test, with the files' tails or the texts.
notok() {
	t_fail "$1"
	shift
	for f in "$@"; do
		if [ -f "$f" ]; then t_diag_file "$f" 60; else t_diag "$f"; fi
	done
}
# check NAME CONDITION-COMMAND...: ok when the command succeeds, else shows the last CLI run.
check() {
	name=$1; shift
	if "$@"; then t_pass "$name"; else notok "$name" "$@" "exit status $rc" "$T_TMP/out" "$T_TMP/err"; fi
}

# Hermetic AWS environment: explicit keys, no files, no metadata service, no retries.
t_hermetic_aws
export AWS_ACCESS_KEY_ID=AKIDCOMPATTEST0000001 AWS_SECRET_ACCESS_KEY=compat-cli-secret
export AWS_DEFAULT_REGION=us-east-1 AWS_MAX_ATTEMPTS=1 AWS_RETRY_MODE=standard AWS_PAGER=""

# ---- daemon
if [ ! -x "$DAEMON" ]; then
	notok "trainctld starts" "$DAEMON not built"
	t_done
fi
if t_start_trainctld --local-hosts 0 -v; then
	t_pass "trainctld starts and listens on 127.0.0.1:$T_PORT"
else
	notok "trainctld starts and listens"
	t_done
fi
pid=$T_PID
EP=$T_URL

# ---- request files
$PY - "$T_TMP" <<'EOF'
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
sys.exit(0 if eval(sys.argv[2]) else 1)' "$T_TMP/out" "$1" 2>>"$T_TMP/err"
}
out_is() { [ "$(cat "$T_TMP/out")" = "$1" ]; }
# words_are "a b c": the last stdout, split on blanks (text output breaks lines per page).
words_are() { [ "$(tr -s ' \t\n' '   ' <"$T_TMP/out" | sed 's/^ //; s/ $//')" = "$1" ]; }
rc_is() { [ "$rc" -eq "$1" ]; }

# aws ARGS...: runs the CLI under test; sets rc, fills $T_TMP/out and $T_TMP/err.
aws_() {
	# shellcheck disable=SC2086
	timeout 120 "$AWS" "$@" --endpoint-url "$EP" $PAGER_ARG >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	rc=$?
}

cli_cases() {
	L=$1       # v2 | v1
	ERR=$2     # exit status on an API error
	J=cli-$L-1
	aws_ sagemaker create-training-job --cli-input-json "file://$T_TMP/job-$L.json"
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
		"j['HyperParameters'] == json.load(open('$T_TMP/job-$L.json'))['HyperParameters'] and j['ResourceConfig']['InstanceCount'] == 2 and $ts"

	for i in 2 3 4 5; do
		aws_ sagemaker create-training-job --cli-input-json "file://$T_TMP/small.json" --training-job-name "cli-$L-$i"
		[ "$rc" -eq 0 ] || break
	done
	check "$L: four more creates (--cli-input-json + --training-job-name)" rc_is 0

	aws_ sagemaker describe-training-job --training-job-name "$J" --query TrainingJobArn --output text
	ARN=$(cat "$T_TMP/out")
	aws_ sagemaker add-tags --resource-arn "$ARN" --tags Key=team,Value=ml Key=project,Value=cli
	check "$L: add-tags answers the tags added" jcheck "sorted(t['Key'] for t in j['Tags']) == ['project', 'team']"
	aws_ sagemaker delete-tags --resource-arn "$ARN" --tag-keys owner
	check "$L: delete-tags" rc_is 0
	aws_ sagemaker list-tags --resource-arn "$ARN"
	check "$L: list-tags: create's tags, overwritten, added and deleted" \
		jcheck "sorted((t['Key'], t['Value']) for t in j['Tags']) == [('project', 'cli'), ('team', 'ml')]"
	aws_ sagemaker search --resource TrainingJob \
		--search-expression '{"Filters": [{"Name": "Tags.team", "Operator": "Equals", "Value": "ml"}, {"Name": "TrainingJobName", "Operator": "Equals", "Value": "'"$J"'"}]}'
	check "$L: search by tag and name finds the job, with its tags" \
		jcheck "[r['TrainingJob']['TrainingJobName'] for r in j['Results']] == ['$J'] and {'Key': 'team', 'Value': 'ml'} in j['Results'][0]['TrainingJob']['Tags']"
	aws_ sagemaker search --resource TrainingJob --max-items 2 --page-size 1 \
		--search-expression '{"Filters": [{"Name": "TrainingJobName", "Operator": "Contains", "Value": "cli-'"$L"'-"}]}' \
		--sort-by TrainingJobName --sort-order Ascending
	check "$L: search pages (--page-size 1 --max-items 2) in name order" \
		jcheck "[r['TrainingJob']['TrainingJobName'] for r in j['Results']] == ['cli-$L-1', 'cli-$L-2'] and j.get('NextToken')"
	aws_ sagemaker search --resource Experiment
	check "$L: search of another resource: exit $ERR, ValidationException" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$T_TMP/err'"
	aws_ sagemaker update-training-job --training-job-name "$J" --profiler-config ProfilingIntervalInMilliseconds=500
	check "$L: update-training-job --profiler-config: exit $ERR, ValidationException naming it" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ProfilerConfig' '$T_TMP/err'"
	aws_ sagemaker list-training-jobs --warm-pool-status-equals Available --query 'TrainingJobSummaries[].TrainingJobName' --output text
	check "$L: list-training-jobs --warm-pool-status-equals Available: none here" out_is ""
	aws_ sagemaker update-training-job --training-job-name "$J" --resource-config KeepAlivePeriodInSeconds=60
	check "$L: update-training-job --resource-config on a job without a warm pool: exit $ERR, ValidationException" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$T_TMP/err'"
	aws_ sagemaker list-tags --resource-arn "${ARN}x"
	check "$L: list-tags of an unknown job: exit $ERR, ValidationException" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$T_TMP/err'"

	aws_ sagemaker list-training-jobs --name-contains "cli-$L-" --max-items 3 --page-size 2
	check "$L: list --max-items 3 --page-size 2: 3 jobs in creation order and a NextToken" jcheck \
		"[s['TrainingJobName'] for s in j['TrainingJobSummaries']] == ['cli-$L-1', 'cli-$L-2', 'cli-$L-3'] and j.get('NextToken')"
	tok=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1])).get("NextToken", ""))' "$T_TMP/out" 2>/dev/null)
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
	check "$L: stop-training-job succeeds with no output" sh -c "[ $rc -eq 0 ] && [ ! -s '$T_TMP/out' ]"

	i=0
	while :; do
		aws_ sagemaker describe-training-job --training-job-name "$J" --query TrainingJobStatus --output text
		[ "$(cat "$T_TMP/out")" = Stopped ] && break
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

	aws_ sagemaker create-training-job --cli-input-json "file://$T_TMP/job-$L.json"
	check "$L: duplicate name: exit $ERR and ResourceInUse" sh -c "[ $rc -eq $ERR ] && grep -q 'ResourceInUse' '$T_TMP/err' && grep -q CreateTrainingJob '$T_TMP/err'"

	aws_ sagemaker describe-training-job --training-job-name no-such-job
	check "$L: unknown job: exit $ERR, ValidationException 'Requested resource not found.'" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$T_TMP/err' && grep -qF 'Requested resource not found.' '$T_TMP/err'"

	aws_ sagemaker stop-training-job --training-job-name "$J"
	check "$L: second stop: exit $ERR, ValidationException" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$T_TMP/err'"

	aws_ sagemaker create-training-job --cli-input-json "file://$T_TMP/small.json" --training-job-name "bad_name_$L"
	check "$L: name with underscores: exit $ERR, ValidationException" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$T_TMP/err'"

	aws_ sagemaker list-training-jobs --max-results 101
	check "$L: list --max-results 101: exit $ERR, ValidationException" \
		sh -c "[ $rc -eq $ERR ] && grep -q 'ValidationException' '$T_TMP/err'"

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
			sh -c "[ $rc -eq $ERR ] && grep -qF 'Requested resource not found.' '$T_TMP/err'"
		aws_ sagemaker delete-training-job --training-job-name "cli-$L-2"
		check "$L: delete-training-job of an InProgress job: exit $ERR, ResourceInUse" \
			sh -c "[ $rc -eq $ERR ] && grep -q 'ResourceInUse' '$T_TMP/err'"
	fi
}

# ---- Debian aws-cli v2
if [ -x /usr/bin/aws ]; then
	AWS=/usr/bin/aws PAGER_ARG=--no-cli-pager
	echo "# $($AWS --version 2>&1)"
	cli_cases v2 254
else
	t_skip "v2: all cases" "/usr/bin/aws not installed"
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
	t_skip "v1: all cases" "no aws-cli v1 on PATH"
fi

kill -0 "$pid" 2>/dev/null
t_ok $? "trainctld still alive" || t_diag_file "$T_LOG"
if t_stop "$pid"; then t_pass "trainctld exits 0 on SIGTERM"
else notok "trainctld exits 0 on SIGTERM" "exit status $T_STOP_RC, SIGKILL needed: $T_STOP_KILLED" "$T_LOG"; fi
[ "$T_FAILED" -gt 0 ] && t_diag_file "$T_LOG" 30
t_done
