#!/bin/sh
# End-to-end tests of trainctl's tuning-job commands against a real trainctld
# with an embedded local cluster of 2 hosts.
#
# Run from the repository root: sh tests/cli/test_cli_tuning.sh. Prints TAP.
# A tiny Random tuning job of 3 training jobs runs a shell training program
# that prints `loss=<value>` lines; it goes through create-tuning-job, wait,
# describe, list and list-tuning-job-training-jobs. A second one, from
# --cli-input-json, is stopped with stop-tuning-job. trainctld is started on
# a free loopback port with a temporary state dir and stopped by PID on exit
# (tests/lib.sh). Skips everything when the binaries are not built.
set -u
. "$(dirname "$0")/../lib.sh"

BUILD=${BUILD:-build}
CLI=$BUILD/bin/trainctl
DAEMON=${TRAINCTLD:-$BUILD/bin/trainctld}

if [ ! -x "$CLI" ] || [ ! -x "$DAEMON" ]; then
	t_skip_all "$CLI or $DAEMON is not built"
fi

t_hermetic_aws
t_hermetic_job
t_tmpdir test_cli_tuning

rc=0
OUT=$T_TMP/out
ERR=$T_TMP/err

# run CMD...: runs it, keeping stdout in $OUT, stderr in $ERR, status in rc.
run() {
	"$@" >"$OUT" 2>"$ERR"
	rc=$?
}

# check NAME SHELL-CONDITION: one TAP line; diagnostics when it fails.
check() {
	eval "$2"
	t_ok $? "$1" && return 0
	t_diag "  condition: $2 (exit status $rc)"
	sed 's/^/#   stdout: /' "$OUT"
	sed 's/^/#   stderr: /' "$ERR"
}

has() {
	grep -qF -- "$2" "$1"
}

# The training program: EPOCHS lines "epoch N loss=L" with L falling
# towards (x - 0.3)^2 + 0.1 * |layers - 2|, read from SM_HPS.
cat >"$T_TMP/train.sh" <<'EOF'
#!/bin/sh
hp() {
	printf '%s' "$SM_HPS" | sed -n "s/.*\"$1\": *\"\{0,1\}\([^\",}]*\).*/\1/p"
}
x=$(hp x)
layers=$(hp layers)
i=1
while [ "$i" -le "${EPOCHS:-3}" ]; do
	awk -v x="${x:-0}" -v l="${layers:-1}" -v i="$i" 'BEGIN {
		d = l - 2; if (d < 0) d = -d
		printf "epoch %d loss=%.6f\n", i, (x - 0.3) ^ 2 + 0.1 * d + 0.1 / i }'
	sleep "${DELAY:-0.2}"
	i=$((i + 1))
done
EOF
chmod +x "$T_TMP/train.sh"

if ! t_start_trainctld -n d1 --local-hosts 2; then
	t_fail "trainctld with 2 local hosts starts"
	t_done
fi
export TRAINCTL_ENDPOINT="$T_URL"
T=$CLI
TJ=cli-tune-1

# --- create, wait --------------------------------------------------------------
run $T create-tuning-job $TJ --strategy Random --objective Minimize:loss \
	--metric-definition 'loss=loss=([0-9.]+)' --max-jobs 3 --max-parallel 3 \
	--early-stopping Off --random-seed 11 \
	--param x=continuous:0:1 --param layers=integer:1:3 \
	--param act=categorical:relu,tanh --static epochs=3 \
	--image "file://$T_TMP/train.sh" --instance-type ml.m5.large \
	--instance-count 1 --max-runtime 300 --environment EPOCHS=3
check "create-tuning-job prints the ARN" \
	'[ $rc -eq 0 ] && grep -qE "^arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:[0-9]{12}:hyper-parameter-tuning-job/$TJ$" "$OUT"'

run $T wait --tuning-job $TJ --timeout 240 --interval 0.2
check "wait --tuning-job: exit 0 at Completed, progress on stderr" \
	'[ $rc -eq 0 ] && grep -q "^trainctl: tuning job .$TJ. Completed: 3 completed" "$ERR"'

# --- describe ------------------------------------------------------------------
run $T describe-tuning-job $TJ
check "describe-tuning-job (table)" \
	'[ $rc -eq 0 ] && grep -qE "^Status: +Completed$" "$OUT" && grep -qE "^Strategy: +Random$" "$OUT" && grep -qE "^Objective: +Minimize loss$" "$OUT" && grep -qE "^Training jobs: +3 completed, 0 in progress" "$OUT" && grep -qE "^Best job: +$TJ-[0-9]{3}-[0-9a-f]{8} \(loss [0-9.e-]+\)$" "$OUT"'
BEST=$(sed -n 's/^Best job: *\([^ ]*\) .*/\1/p' "$OUT")

run $T --output json describe-tuning-job $TJ
check "describe-tuning-job (json): the service's shape" \
	'[ $rc -eq 0 ] && has "$OUT" "\"HyperParameterTuningJobStatus\": \"Completed\"" && has "$OUT" "\"BestTrainingJob\"" && has "$OUT" "\"RandomSeed\": 11" && has "$OUT" "\"StaticHyperParameters\"" && has "$OUT" "\"epochs\": \"3\"" && has "$OUT" "\"Name\": \"act\""'

# --- the training jobs -----------------------------------------------------------
run $T list-tuning-job-training-jobs $TJ
check "list-tuning-job-training-jobs: 3 jobs with values and objectives" \
	'[ $rc -eq 0 ] && grep -qE "^NAME +STATUS +OBJECTIVE +OBJ-STATUS +HYPERPARAMETERS$" "$OUT" && [ $(grep -cE "^$TJ-[0-9]{3}-[0-9a-f]{8} +Completed +[0-9.e-]+ +Succeeded +.*x=" "$OUT") -eq 3 ]'

run $T list-tuning-job-training-jobs $TJ --sort-by FinalObjectiveMetricValue \
	--sort-order Ascending
check "sorted by objective: the best job first" \
	'[ $rc -eq 0 ] && [ -n "$BEST" ] && [ "$(sed -n 2p "$OUT" | cut -d" " -f1)" = "$BEST" ]'

run $T list-tuning-job-training-jobs $TJ --status Failed
check "list-tuning-job-training-jobs --status Failed: none" \
	'[ $rc -eq 0 ] && [ $(wc -l <"$OUT") -eq 1 ]'

run $T --output json list-tuning-job-training-jobs $TJ --max-results 1 --all
check "--all --output json joins the pages" \
	'[ $rc -eq 0 ] && [ $(grep -c "\"TrainingJobName\"" "$OUT") -eq 3 ] && has "$OUT" "\"TunedHyperParameters\"" && ! has "$OUT" NextToken'

run $T --output json describe-training-job "$BEST"
check "the best training job is an ordinary one with TuningJobArn" \
	'[ $rc -eq 0 ] && has "$OUT" "hyper-parameter-tuning-job/$TJ" && has "$OUT" "\"TrainingJobStatus\": \"Completed\""'

# --- a second tuning job from --cli-input-json, stopped ----------------------------
cat >"$T_TMP/tuning.json" <<EOF
{
  "HyperParameterTuningJobName": "from-file",
  "HyperParameterTuningJobConfig": {
    "Strategy": "Bayesian",
    "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "loss"},
    "ResourceLimits": {"MaxNumberOfTrainingJobs": 6, "MaxParallelTrainingJobs": 1},
    "ParameterRanges": {
      "ContinuousParameterRanges": [{"Name": "x", "MinValue": "0", "MaxValue": "1"}]
    }
  },
  "TrainingJobDefinition": {
    "StaticHyperParameters": {"epochs": "1000"},
    "AlgorithmSpecification": {"TrainingImage": "file://$T_TMP/train.sh",
      "TrainingInputMode": "File",
      "MetricDefinitions": [{"Name": "loss", "Regex": "loss=([0-9.]+)"}]},
    "RoleArn": "arn:aws:iam::123456789012:role/service-role/Test",
    "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
    "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
    "StoppingCondition": {"MaxRuntimeInSeconds": 300}
  }
}
EOF
TJ2=cli-tune-2
run $T create-tuning-job --cli-input-json "file://$T_TMP/tuning.json" $TJ2 \
	--strategy Random --max-parallel 2 --environment EPOCHS=1000 \
	--param layers=integer:1:3
check "create-tuning-job --cli-input-json with overriding flags" \
	'[ $rc -eq 0 ] && has "$OUT" "hyper-parameter-tuning-job/$TJ2"'

run $T --output json describe-tuning-job $TJ2
check "the flags overrode the file, the rest kept" \
	'[ $rc -eq 0 ] && has "$OUT" "\"Strategy\": \"Random\"" && has "$OUT" "\"MaxParallelTrainingJobs\": 2" && has "$OUT" "\"MaxNumberOfTrainingJobs\": 6" && has "$OUT" "\"Name\": \"layers\"" && has "$OUT" "\"Name\": \"x\"" && has "$OUT" "role/service-role/Test"'

run $T wait --tuning-job $TJ2 --timeout 0.5 --interval 0.1
check "wait --tuning-job --timeout on a running tuning job: exit 5" \
	'[ $rc -eq 5 ] && has "$ERR" "timed out"'

run $T list-tuning-jobs
check "list-tuning-jobs (table)" \
	'[ $rc -eq 0 ] && grep -qE "^NAME +STATUS +STRATEGY +COMPLETED +BEST +CREATED$" "$OUT" && grep -qE "^$TJ +Completed +Random +3/3 +[0-9.e-]+ +20[0-9-]+T" "$OUT" && grep -qE "^$TJ2 +InProgress +Random +0/6 " "$OUT"'

run $T list-tuning-jobs --status Completed
check "list-tuning-jobs --status" \
	'[ $rc -eq 0 ] && has "$OUT" "$TJ " && ! has "$OUT" "$TJ2"'

run $T list-tuning-jobs --name-contains tune-2
check "list-tuning-jobs --name-contains" \
	'[ $rc -eq 0 ] && has "$OUT" "$TJ2" && ! has "$OUT" "$TJ "'

run $T list-tuning-jobs --max-results 1 --sort-by Name
check "list-tuning-jobs one page hints at --next-token" \
	'[ $rc -eq 0 ] && [ $(wc -l <"$OUT") -eq 2 ] && has "$ERR" "--next-token"'

run $T list-tuning-jobs --max-results 1 --all
check "list-tuning-jobs --all follows NextToken" \
	'[ $rc -eq 0 ] && has "$OUT" "$TJ " && has "$OUT" "$TJ2" && [ ! -s "$ERR" ]'

run $T stop-tuning-job $TJ2
check "stop-tuning-job" '[ $rc -eq 0 ]'

run $T wait --tuning-job $TJ2 --timeout 120 --interval 0.2
check "wait --tuning-job on a stopped tuning job: exit 4" \
	'[ $rc -eq 4 ] && grep -q "^trainctl: tuning job .$TJ2. Stopped" "$ERR"'

run $T list-tuning-job-training-jobs $TJ2
check "its training jobs were stopped" \
	'[ $rc -eq 0 ] && grep -qE "^$TJ2-[0-9]{3}-[0-9a-f]{8} +Stopped " "$OUT" && ! grep -qE " (InProgress|Stopping) " "$OUT"'

run $T delete-tuning-job $TJ2
check "delete-tuning-job of an ended tuning job" '[ $rc -eq 0 ]'
run $T describe-tuning-job $TJ2
check "a deleted tuning job is gone" '[ $rc -eq 1 ]'

# --- errors --------------------------------------------------------------------------
run $T describe-tuning-job no-such-tuning-job
check "describe an unknown tuning job: exit 1 with the server's error" \
	'[ $rc -eq 1 ] && grep -qE "^trainctl: error: [A-Za-z]+: " "$ERR" && [ ! -s "$OUT" ]'
run $T wait --tuning-job no-such-tuning-job --interval 0.1 --timeout 5
check "wait on an unknown tuning job: exit 1" '[ $rc -eq 1 ]'
run $T create-tuning-job $TJ --objective Minimize:loss --max-jobs 1 \
	--param x=continuous:0:1 --metric-definition 'loss=loss=([0-9.]+)' \
	--image "file://$T_TMP/train.sh" --instance-type ml.m5.large \
	--instance-count 1
check "a duplicate name: exit 1, ResourceInUse" \
	'[ $rc -eq 1 ] && has "$ERR" "trainctl: error: ResourceInUse"'
run $T create-tuning-job bad-range --objective Minimize:loss --max-jobs 1 \
	--param x=continuous:0:1:Logarithmic \
	--metric-definition 'loss=loss=([0-9.]+)' \
	--image "file://$T_TMP/train.sh" --instance-type ml.m5.large \
	--instance-count 1
check "a range the service refuses: exit 1, ValidationException" \
	'[ $rc -eq 1 ] && has "$ERR" "trainctl: error: ValidationException" && has "$ERR" "MinValue"'
run $T create-tuning-job x --param x=continuous:1
check "bad --param: exit 129, usage" \
	'[ $rc -eq 129 ] && has "$ERR" "invalid --param" && has "$ERR" "usage: trainctl create-tuning-job"'
run $T create-tuning-job x --strategy Sideways
check "bad --strategy: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "invalid --strategy"'
run $T create-tuning-job x --max-jobs none
check "bad --max-jobs: exit 129" '[ $rc -eq 129 ]'
run $T list-tuning-job-training-jobs
check "missing tuning job name: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "missing tuning job name"'
run $T list-tuning-job-training-jobs $TJ --sort-by Size
check "bad --sort-by: exit 129" '[ $rc -eq 129 ] && has "$ERR" "invalid --sort-by"'
run $T wait --tuning-job $TJ extra
check "wait --tuning-job with a job name too: exit 129" '[ $rc -eq 129 ]'
run $T help wait
check "help wait names --tuning-job" \
	'[ $rc -eq 0 ] && has "$OUT" "--tuning-job NAME"'

t_done
