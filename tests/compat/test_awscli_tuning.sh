#!/bin/sh
# Hyperparameter tuning jobs through both aws CLIs: Debian's /usr/bin/aws
# (v2.9, model ~M22, without delete-hyper-parameter-tuning-job) and the
# first other `aws` on PATH (pyenv's aws-cli v1, botocore 1.43, M26); the v1
# cases are skipped when it is absent. Each CLI creates small Random
# searches over tests/integration/tune_trainer.py (a file:// training image,
# jobs of about half a second) on trainctld --local-hosts 3. TAP on stdout.
#
# Run from the repository root: sh tests/compat/test_awscli_tuning.sh
# Starts its own trainctld (free loopback port, temp state dir), stops it by PID.
set -u
. "$(dirname "$0")/../lib.sh"
cd "$T_ROOT" || exit 1
BUILD=${BUILD:-build}
DAEMON=${TRAINCTLD:-$BUILD/bin/trainctld}
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

t_tmpdir trainctl-awscli-tuning

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

t_hermetic_aws
export AWS_ACCESS_KEY_ID=AKIDCOMPATTEST0000001 AWS_SECRET_ACCESS_KEY=compat-cli-secret
export AWS_DEFAULT_REGION=us-east-1 AWS_MAX_ATTEMPTS=1 AWS_RETRY_MODE=standard AWS_PAGER=""

# ---- daemon
if [ ! -x "$DAEMON" ]; then
	notok "trainctld starts" "$DAEMON not built"
	t_done
fi
if t_start_trainctld --local-hosts 3 -v; then
	t_pass "trainctld --local-hosts 3 starts and listens on 127.0.0.1:$T_PORT"
else
	notok "trainctld starts and listens"
	t_done
fi
pid=$T_PID
EP=$T_URL

# ---- request files: rnd (3 jobs, seed 5, a tag), one (1 job), long (jobs
# of minutes, to stop), log0 (Logarithmic with MinValue 0).
$PY - "$T_TMP" <<'EOF_PY'
import json, sys
sys.path.insert(0, "tests/compat")
import tuncases as T
d = sys.argv[1]
for label in ("v2", "v1"):
    req = T.request("cli-%s-rnd" % label, jobs=3, parallel=3, RandomSeed=5)
    req["Tags"] = [{"Key": "team", "Value": "ml"}]
    json.dump(req, open("%s/rnd-%s.json" % (d, label), "w"), indent=1)
json.dump(T.request("placeholder", jobs=1, parallel=1), open("%s/one.json" % d, "w"))
json.dump(T.request("placeholder", jobs=4, parallel=2, epochs=T.LONG_EPOCHS), open("%s/long.json" % d, "w"))
json.dump(T.log_zero_request("placeholder"), open("%s/log0.json" % d, "w"))
EOF_PY

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
# err_has STATUS WORDS...: the last run exited STATUS and stderr has every word.
err_has() {
	[ "$rc" -eq "$1" ] || return 1
	shift
	for w in "$@"; do grep -qF -- "$w" "$T_TMP/err" || return 1; done
}

# aws ARGS...: runs the CLI under test; sets rc, fills $T_TMP/out and $T_TMP/err.
aws_() {
	# shellcheck disable=SC2086
	timeout 120 "$AWS" "$@" --endpoint-url "$EP" $PAGER_ARG >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	rc=$?
}

# wait_status NAME STATUS: describe until the tuning job's status is STATUS (60 s).
wait_status() {
	i=0
	while :; do
		aws_ sagemaker describe-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "$1" \
			--query HyperParameterTuningJobStatus --output text
		[ "$(cat "$T_TMP/out")" = "$2" ] && return 0
		i=$((i + 1))
		[ $i -ge 300 ] && return 1
		sleep 0.2
	done
}

cli_cases() {
	L=$1       # v2 | v1
	ERR=$2     # exit status on an API error
	J=cli-$L-rnd
	aws_ sagemaker create-hyper-parameter-tuning-job --cli-input-json "file://$T_TMP/rnd-$L.json"
	check "$L: create-hyper-parameter-tuning-job --cli-input-json returns the ARN" \
		jcheck "j['HyperParameterTuningJobArn'].endswith(':hyper-parameter-tuning-job/$J') and j['HyperParameterTuningJobArn'].startswith('arn:aws')"
	ARN=$(sed -n 's/.*"HyperParameterTuningJobArn": *"\([^"]*\)".*/\1/p' "$T_TMP/out")

	aws_ sagemaker create-hyper-parameter-tuning-job --cli-input-json "file://$T_TMP/one.json" \
		--hyper-parameter-tuning-job-name "cli-$L-one"
	if [ "$rc" -eq 0 ]; then
		aws_ sagemaker create-hyper-parameter-tuning-job --cli-input-json "file://$T_TMP/long.json" \
			--hyper-parameter-tuning-job-name "cli-$L-long"
	fi
	check "$L: two more creates (--cli-input-json + --hyper-parameter-tuning-job-name)" rc_is 0

	wait_status "$J" Completed
	check "$L: describe-hyper-parameter-tuning-job until Completed" out_is Completed

	aws_ sagemaker describe-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "$J"
	# v2 prints timestamps as ISO 8601, v1 as the epoch number it received.
	if [ "$L" = v2 ]; then ts="isinstance(j['CreationTime'], str) and j['CreationTime'][:2] == '20' and 'T' in j['CreationTime']"
	else ts="isinstance(j['CreationTime'], (int, float)) and j['CreationTime'] > 1.6e9"; fi
	check "$L: describe: counters, ObjectiveStatusCounters, RandomSeed echoed, CreationTime parsed" jcheck \
		"j['TrainingJobStatusCounters'] == {'Completed': 3, 'InProgress': 0, 'RetryableError': 0, 'NonRetryableError': 0, 'Stopped': 0} and j['ObjectiveStatusCounters'] == {'Succeeded': 3, 'Pending': 0, 'Failed': 0} and j['HyperParameterTuningJobConfig']['RandomSeed'] == 5 and j['HyperParameterTuningJobArn'] == '$ARN' and $ts"
	check "$L: describe: BestTrainingJob with its objective and tuned hyperparameters" jcheck \
		"j['BestTrainingJob']['TrainingJobName'].startswith('$J-') and j['BestTrainingJob']['FinalHyperParameterTuningJobObjectiveMetric']['MetricName'] == 'loss' and isinstance(j['BestTrainingJob']['FinalHyperParameterTuningJobObjectiveMetric']['Value'], float) and sorted(j['BestTrainingJob']['TunedHyperParameters']) == ['kind', 'x', 'y']"
	BEST=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["BestTrainingJob"]["TrainingJobName"])' "$T_TMP/out" 2>/dev/null)

	aws_ sagemaker list-training-jobs-for-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "$J" \
		--sort-by FinalObjectiveMetricValue --sort-order Ascending
	check "$L: list-training-jobs-for-... --sort-by FinalObjectiveMetricValue: ascending, the best first" jcheck \
		"len(j['TrainingJobSummaries']) == 3 and [s['FinalHyperParameterTuningJobObjectiveMetric']['Value'] for s in j['TrainingJobSummaries']] == sorted(s['FinalHyperParameterTuningJobObjectiveMetric']['Value'] for s in j['TrainingJobSummaries']) and j['TrainingJobSummaries'][0]['TrainingJobName'] == '$BEST'"
	aws_ sagemaker list-training-jobs-for-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "$J" \
		--sort-by FinalObjectiveMetricValue --sort-order Descending --page-size 1 \
		--query 'TrainingJobSummaries[].TrainingJobName' --output text
	t=$(tr -s ' \t\n' '   ' <"$T_TMP/out" | sed 's/ $//; s/.* //')
	check "$L: list-training-jobs-for-... automatic paging (page size 1), descending: the best last" \
		sh -c "[ '$t' = '$BEST' ] && [ \$(wc -w <'$T_TMP/out') -eq 3 ]"
	aws_ sagemaker list-training-jobs-for-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "$J" \
		--max-items 2 --page-size 1 --status-equals Completed
	check "$L: list-training-jobs-for-... --max-items 2 --page-size 1: 2 and a NextToken" jcheck \
		"len(j['TrainingJobSummaries']) == 2 and j.get('NextToken') and all(s['TrainingJobStatus'] == 'Completed' and s['ObjectiveStatus'] == 'Succeeded' for s in j['TrainingJobSummaries'])"

	wait_status "cli-$L-one" Completed
	aws_ sagemaker list-hyper-parameter-tuning-jobs --name-contains "cli-$L-" --status-equals Completed \
		--query 'HyperParameterTuningJobSummaries[].HyperParameterTuningJobName' --output text
	check "$L: list-hyper-parameter-tuning-jobs --name-contains --status-equals Completed" \
		words_are "cli-$L-one cli-$L-rnd"
	aws_ sagemaker list-hyper-parameter-tuning-jobs --name-contains "cli-$L-" --status-equals InProgress \
		--query 'HyperParameterTuningJobSummaries[].HyperParameterTuningJobName' --output text
	check "$L: list-hyper-parameter-tuning-jobs --status-equals InProgress" out_is "cli-$L-long"
	aws_ sagemaker list-hyper-parameter-tuning-jobs --name-contains "cli-$L-" --max-items 2 --page-size 1
	check "$L: list-hyper-parameter-tuning-jobs --max-items 2 --page-size 1: 2 in name order and a NextToken" jcheck \
		"[s['HyperParameterTuningJobName'] for s in j['HyperParameterTuningJobSummaries']] == ['cli-$L-long', 'cli-$L-one'] and j.get('NextToken')"
	tok=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1])).get("NextToken", ""))' "$T_TMP/out" 2>/dev/null)
	aws_ sagemaker list-hyper-parameter-tuning-jobs --name-contains "cli-$L-" --max-items 2 --page-size 1 \
		--starting-token "$tok"
	check "$L: list-hyper-parameter-tuning-jobs --starting-token: the remaining one, no NextToken" jcheck \
		"[s['HyperParameterTuningJobName'] for s in j['HyperParameterTuningJobSummaries']] == ['cli-$L-rnd'] and 'NextToken' not in j and j['HyperParameterTuningJobSummaries'][0]['TrainingJobStatusCounters']['Completed'] == 3"
	aws_ sagemaker list-hyper-parameter-tuning-jobs --name-contains "cli-$L-" --page-size 1 \
		--sort-by CreationTime --sort-order Descending \
		--query 'HyperParameterTuningJobSummaries[].HyperParameterTuningJobName' --output text
	check "$L: list-hyper-parameter-tuning-jobs automatic paging (page size 1), newest first" \
		words_are "cli-$L-long cli-$L-one cli-$L-rnd"

	i=0
	while :; do
		aws_ sagemaker list-training-jobs-for-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "cli-$L-long" \
			--status-equals InProgress --query 'length(TrainingJobSummaries)' --output text
		[ "$(cat "$T_TMP/out")" = 2 ] && break
		i=$((i + 1)); [ $i -ge 300 ] && break
		sleep 0.2
	done
	check "$L: the long tuning job runs 2 training jobs" out_is 2
	aws_ sagemaker stop-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "cli-$L-long"
	check "$L: stop-hyper-parameter-tuning-job succeeds with no output" sh -c "[ $rc -eq 0 ] && [ ! -s '$T_TMP/out' ]"
	wait_status "cli-$L-long" Stopped
	check "$L: the stopped tuning job reaches Stopped" out_is Stopped
	aws_ sagemaker describe-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "cli-$L-long"
	check "$L: its 2 training jobs Stopped, none more launched" jcheck \
		"j['TrainingJobStatusCounters']['Stopped'] == 2 and j['TrainingJobStatusCounters']['InProgress'] == 0 and j['TrainingJobStatusCounters']['Completed'] == 0"
	aws_ sagemaker stop-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "cli-$L-long"
	check "$L: second stop: exit $ERR, ValidationException naming the status" \
		err_has "$ERR" ValidationException Stopped

	if [ "$L" = v1 ]; then
		aws_ sagemaker delete-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "cli-$L-rnd"
		check "$L: delete-hyper-parameter-tuning-job of an ended job: no output" \
			sh -c "[ $rc -eq 0 ] && [ ! -s '$T_TMP/out' ]"
		aws_ sagemaker describe-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "cli-$L-rnd"
		check "$L: after delete: exit $ERR, ResourceNotFound" err_has "$ERR" ResourceNotFound
		aws_ sagemaker describe-training-job --training-job-name "$BEST" --query TrainingJobStatus --output text
		check "$L: its training jobs stay" out_is Completed
	else
		aws_ sagemaker delete-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "cli-$L-rnd"
		check "$L: delete-hyper-parameter-tuning-job is not in this CLI's model (usage error, nothing sent)" \
			sh -c "[ $rc -ne 0 ] && grep -qi 'invalid choice' '$T_TMP/err'"
	fi

	aws_ sagemaker create-hyper-parameter-tuning-job --cli-input-json "file://$T_TMP/log0.json" \
		--hyper-parameter-tuning-job-name "cli-$L-log0"
	check "$L: Logarithmic with MinValue 0: exit $ERR, ValidationException naming the range on stderr" \
		err_has "$ERR" ValidationException Logarithmic MinValue ContinuousParameterRanges
	aws_ sagemaker describe-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "cli-$L-log0"
	check "$L: ... and nothing created" err_has "$ERR" ResourceNotFound

	aws_ sagemaker create-hyper-parameter-tuning-job --cli-input-json "file://$T_TMP/one.json" \
		--hyper-parameter-tuning-job-name "cli-$L-one"
	check "$L: duplicate name: exit $ERR, ResourceInUse" err_has "$ERR" ResourceInUse
	aws_ sagemaker describe-hyper-parameter-tuning-job --hyper-parameter-tuning-job-name "cli-$L-nosuch"
	check "$L: unknown tuning job: exit $ERR, ResourceNotFound" err_has "$ERR" ResourceNotFound

	TARN=$(echo "$ARN" | sed "s|/cli-$L-rnd\$|/cli-$L-one|")
	aws_ sagemaker add-tags --resource-arn "$TARN" --tags Key=team,Value=ml Key=project,Value=cli
	check "$L: add-tags on the tuning ARN answers the tags added" \
		jcheck "sorted(t['Key'] for t in j['Tags']) == ['project', 'team']"
	aws_ sagemaker delete-tags --resource-arn "$TARN" --tag-keys project
	check "$L: delete-tags on the tuning ARN" rc_is 0
	aws_ sagemaker list-tags --resource-arn "$TARN"
	check "$L: list-tags on the tuning ARN" jcheck "j['Tags'] == [{'Key': 'team', 'Value': 'ml'}]"
	aws_ sagemaker list-tags --resource-arn "${TARN}x"
	check "$L: list-tags of an unknown tuning job: exit $ERR, ValidationException" err_has "$ERR" ValidationException
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
