#!/bin/sh
# End-to-end tests of build/bin/trainctl against a real trainctld.
#
# Run from the repository root: sh tests/cli/test_cli.sh. Prints TAP. Starts
# its own trainctld on a free loopback port with a temporary state dir (and a
# second one with --credentials for the SigV4 cases) and stops them by PID on
# exit (tests/lib.sh). Skips everything when the binaries are not built.
set -u
. "$(dirname "$0")/../lib.sh"

BUILD=${BUILD:-build}
CLI=$BUILD/bin/trainctl
DAEMON=${TRAINCTLD:-$BUILD/bin/trainctld}

if [ ! -x "$CLI" ] || [ ! -x "$DAEMON" ]; then
	t_skip_all "$CLI or $DAEMON is not built"
fi

t_hermetic_aws
t_tmpdir test_cli

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

# has FILE TEXT: fixed-string search.
has() {
	grep -qF -- "$2" "$1"
}

if ! t_start_trainctld -n d1 --local-hosts 0; then
	t_fail "trainctld starts"
	t_done
fi
export TRAINCTL_ENDPOINT="$T_URL"
T=$CLI

# --- basics ------------------------------------------------------------------
run $T --version
check "--version" '[ $rc -eq 0 ] && has "$OUT" "trainctl version"'
run $T help
check "help lists the commands" \
	'[ $rc -eq 0 ] && has "$OUT" create-training-job && has "$OUT" wait'
run $T describe-training-job --help
check "COMMAND --help prints its usage" \
	'[ $rc -eq 0 ] && has "$OUT" "usage: trainctl describe-training-job"'

# --- create ------------------------------------------------------------------
run $T create-training-job --name cli-flags-1 --image python \
	--instance-type ml.m5.large --instance-count 1 \
	--hyperparameter epochs=3 --hyperparameter lr=0.01 \
	--environment OMP_NUM_THREADS=1 --channel train=s3://bucket/data \
	--metric 'loss=loss=([0-9.]+)' --max-runtime 600 --volume-size 5
check "create from flags prints the ARN" \
	'[ $rc -eq 0 ] && grep -qE "^arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:[0-9]{12}:training-job/cli-flags-1$" "$OUT"'

cat >"$T_TMP/job.json" <<'EOF'
{
  "TrainingJobName": "from-file",
  "RoleArn": "arn:aws:iam::123456789012:role/service-role/Test",
  "AlgorithmSpecification": {"TrainingImage": "python", "TrainingInputMode": "File"},
  "HyperParameters": {"epochs": "1", "lr": "0.1"},
  "InputDataConfig": [{"ChannelName": "train", "ContentType": "text/csv",
    "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
      "S3Uri": "s3://bucket/old", "S3DataDistributionType": "FullyReplicated"}}}],
  "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
  "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 10},
  "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
  "Tags": [{"Key": "owner", "Value": "cli-test"}]
}
EOF
run $T --output json create-training-job \
	--cli-input-json "file://$T_TMP/job.json" --name cli-json-1 \
	--hyperparameter epochs=7 --channel train=s3://bucket/new
check "create --cli-input-json with overriding flags (json output)" \
	'[ $rc -eq 0 ] && has "$OUT" "\"TrainingJobArn\"" && has "$OUT" "training-job/cli-json-1"'

run $T create-training-job --cli-input-json "file://$T_TMP/job.json"
check "create --cli-input-json alone" \
	'[ $rc -eq 0 ] && has "$OUT" "training-job/from-file"'

run $T create-training-job --cli-input-json "file://$T_TMP/job.json"
check "create a duplicate name: exit 1, ResourceInUse" \
	'[ $rc -eq 1 ] && has "$ERR" "trainctl: error: ResourceInUse"'

# --- describe ----------------------------------------------------------------
run $T describe-training-job cli-flags-1
check "describe (table)" \
	'[ $rc -eq 0 ] && grep -qE "^Name: +cli-flags-1$" "$OUT" && grep -qE "^Status: +[A-Za-z]+ / [A-Za-z]+$" "$OUT" && grep -qE "^Created: +20[0-9-]+T" "$OUT"'

run $T describe-training-job cli-json-1 --output json
check "describe (json) echoes the file merged with the flags" \
	'[ $rc -eq 0 ] && has "$OUT" "\"TrainingJobName\": \"cli-json-1\"" && has "$OUT" "\"epochs\": \"7\"" && has "$OUT" "\"lr\": \"0.1\"" && has "$OUT" "s3://bucket/new" && has "$OUT" "\"ContentType\": \"text/csv\"" && ! has "$OUT" "s3://bucket/old"'

run $T --output json describe-training-job cli-flags-1
check "describe (json) shows the flag values and defaults" \
	'[ $rc -eq 0 ] && has "$OUT" "\"OMP_NUM_THREADS\": \"1\"" && has "$OUT" "\"MaxRuntimeInSeconds\": 600" && has "$OUT" "arn:aws:iam::000000000000:role/trainctl" && has "$OUT" "s3://trainctl/output"'

run $T describe-training-job no-such-job
check "describe an unknown job: exit 1 with the server's error" \
	'[ $rc -eq 1 ] && grep -qE "^trainctl: error: [A-Za-z]+: " "$ERR" && [ ! -s "$OUT" ]'

# --- list --------------------------------------------------------------------
run $T list-training-jobs
check "list (table)" \
	'[ $rc -eq 0 ] && grep -qE "^NAME +STATUS +SECONDARY +CREATED$" "$OUT" && grep -qE "^cli-flags-1 " "$OUT" && grep -qE "^cli-json-1 " "$OUT" && grep -qE "^from-file " "$OUT"'

run $T list-training-jobs --max-results 1 --all --sort-by Name --sort-order Ascending
check "list --all follows NextToken" \
	'[ $rc -eq 0 ] && [ $(grep -cE "^(cli-flags-1|cli-json-1|from-file) " "$OUT") -eq 3 ] && [ "$(sed -n 2p "$OUT" | cut -d" " -f1)" = cli-flags-1 ]'

run $T --output json list-training-jobs --max-results 1 --all
check "list --all --output json joins the pages" \
	'[ $rc -eq 0 ] && [ $(grep -c "\"TrainingJobName\"" "$OUT") -eq 3 ] && ! has "$OUT" NextToken'

run $T list-training-jobs --max-results 1
check "list one page hints at --next-token" \
	'[ $rc -eq 0 ] && [ $(wc -l <"$OUT") -eq 2 ] && has "$ERR" "--next-token"'

run $T list-training-jobs --name-contains json
check "list --name-contains" \
	'[ $rc -eq 0 ] && has "$OUT" cli-json-1 && ! has "$OUT" cli-flags-1'

run $T list-training-jobs --sort-by Size
check "list --sort-by with a bad value: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "invalid --sort-by" && has "$ERR" "usage: trainctl list-training-jobs"'

# --- stop, wait, delete --------------------------------------------------------
run $T stop-training-job cli-flags-1
check "stop" '[ $rc -eq 0 ]'

run $T wait cli-flags-1 --timeout 30 --interval 0.2
check "wait on a stopped job: exit 4, status changes on stderr" \
	'[ $rc -eq 4 ] && grep -q "^trainctl: job .cli-flags-1. Stopped/" "$ERR"'

run $T --output json describe-training-job cli-json-1
if grep -q '"TrainingJobStatus": "InProgress"' "$OUT"; then
	run $T wait cli-json-1 --timeout 0.5 --interval 0.1
	check "wait --timeout on a running job: exit 5" \
		'[ $rc -eq 5 ] && has "$ERR" "timed out"'
	run $T delete-training-job cli-json-1
	check "delete a running job: exit 1" '[ $rc -eq 1 ]'
else
	t_skip "wait --timeout on a running job: exit 5" "job already ended"
	t_skip "delete a running job: exit 1" "job already ended"
fi

run $T stop-training-job no-such-job
check "stop an unknown job: exit 1" \
	'[ $rc -eq 1 ] && has "$ERR" "trainctl: error: "'

run $T wait no-such-job --interval 0.1 --timeout 5
check "wait on an unknown job: exit 1" '[ $rc -eq 1 ]'

run $T delete-training-job cli-flags-1
check "delete a stopped job" '[ $rc -eq 0 ]'
run $T describe-training-job cli-flags-1
check "a deleted job is gone" '[ $rc -eq 1 ]'

# --- usage errors ----------------------------------------------------------------
run $T frobnicate
check "unknown command: exit 129 with a hint and the usage" \
	'[ $rc -eq 129 ] && has "$ERR" "unknown command '"'"'frobnicate'"'"'" && has "$ERR" "usage: trainctl"'
run $T
check "no command: exit 129" '[ $rc -eq 129 ]'
run $T describe-training-job
check "missing job name: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "missing job name"'
run $T describe-training-job a b
check "extra argument: exit 129" '[ $rc -eq 129 ]'
run $T create-training-job --name
check "option without its value: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "needs a value"'
run $T create-training-job --bogus
check "unknown option: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "unknown option '"'"'--bogus'"'"'"'
run $T create-training-job --name x --image i --instance-type ml.m5.large \
	--instance-count 1 --hyperparameter noequals
check "bad --hyperparameter: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "invalid --hyperparameter '"'"'noequals'"'"'"'
run $T create-training-job --name x --instance-type ml.m5.large \
	--instance-count 1
check "missing --image: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "missing --image"'
run $T create-training-job --name x --image i --instance-type ml.m5.large \
	--instance-count zero
check "bad --instance-count: exit 129" '[ $rc -eq 129 ]'
run $T create-training-job --cli-input-json "file://$T_TMP/missing.json"
check "missing --cli-input-json file: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "cannot open"'
run $T --output yaml list-training-jobs
check "bad --output: exit 129" '[ $rc -eq 129 ]'
run $T wait x --interval soon
check "bad --interval: exit 129" '[ $rc -eq 129 ]'
run $T members add 4 127.0.0.1:7104
check "members add without the API URL: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "members add takes ID RAFTADDR APIURL"'
run $T members remove four
check "members remove with no id: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "'"'"'four'"'"' is not a member id"'
run $T members join
check "unknown members command: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "unknown members command"'
run $T members
check "members of a controller with no --peers: exit 1" \
	'[ $rc -eq 1 ] && has "$ERR" "not replicated"'

# --- server-side validation and transport errors ----------------------------------
run $T create-training-job --name bad_name --image i \
	--instance-type ml.m5.large --instance-count 1
check "invalid name: exit 1, ValidationException" \
	'[ $rc -eq 1 ] && has "$ERR" "trainctl: error: ValidationException"'

run $T --endpoint "http://127.0.0.1:1" list-training-jobs
check "unreachable endpoint: exit 2" \
	'[ $rc -eq 2 ] && has "$ERR" "trainctl: error: cannot reach"'

# --- several members (a replicated controller) ------------------------------------
# fake_member VAR STATUS: starts a server answering every request with STATUS
# and an AWS error body; sets VAR to its URL.
fake_member() {
	_p=$(t_free_port)
	/usr/bin/python3 -c '
import http.server, sys
code = int(sys.argv[2])
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        body = b"{\"__type\": \"ServiceUnavailable\", \"message\": \"fake %d\"}" % code
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = answer
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
' "$_p" "$2" >/dev/null 2>&1 &
	t_track_pid $!
	_i=0
	while [ $_i -lt 100 ] &&
		! curl -s -o /dev/null "http://127.0.0.1:$_p/"; do
		sleep 0.1
		_i=$((_i + 1))
	done
	eval "$1=http://127.0.0.1:$_p"
}
fake_member U503 503
fake_member U400 400
run $T --endpoint "http://127.0.0.1:1,$T_URL" list-training-jobs
check "an unreachable member: the next one answers" \
	'[ $rc -eq 0 ] && has "$OUT" from-file'
run $T --endpoint "$U503,$T_URL" list-training-jobs
check "a member without a leader (503): the next one answers" \
	'[ $rc -eq 0 ] && has "$OUT" from-file'
run $T --endpoint "$U400,$T_URL" list-training-jobs
check "a member's error answer stands (no second member asked)" \
	'[ $rc -eq 1 ] && has "$ERR" "fake 400"'
run $T --endpoint "http://127.0.0.1:1,$U503" list-training-jobs
check "no member answers: an error, no hang" \
	'[ $rc -ne 0 ] && grep -qE "fake 503|cannot reach" "$ERR"'
printf 'member bytes\n' >"$T_TMP/member.txt"
run $T --endpoint "http://127.0.0.1:1,$T_URL" cp "$T_TMP/member.txt" \
	s3://member-bucket/m.txt
check "cp through the embedded store picks a live member" '[ $rc -eq 0 ]'
run $T --endpoint "$T_URL,,$T_URL" list-training-jobs
check "an empty member in --endpoint: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "empty member"'
run env TRAINCTL_ENDPOINT="$T_URL," $T list-training-jobs
check "an empty member in TRAINCTL_ENDPOINT: exit 129" \
	'[ $rc -eq 129 ] && has "$ERR" "empty member"'

# --- SigV4 -----------------------------------------------------------------------
KEY=AKIDCLITEST000000001
SECRET=cli/secret+key/0123456789abcdefABCDEF
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
	"$KEY" "$SECRET" >"$T_TMP/credentials"
if t_start_trainctld -n d2 --local-hosts 0 --credentials "$T_TMP/credentials"; then
	E2=$T_URL
	run env AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET \
		$T --endpoint "$E2" create-training-job --name signed-1 \
		--image python --instance-type ml.m5.large --instance-count 1
	check "signed create" '[ $rc -eq 0 ] && has "$OUT" training-job/signed-1'
	run env AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET \
		AWS_REGION=eu-west-1 AWS_SESSION_TOKEN=token-123 \
		$T --endpoint "$E2" list-training-jobs
	check "signed list with another region and a session token" \
		'[ $rc -eq 0 ] && has "$OUT" signed-1'
	run $T --endpoint "$E2" list-training-jobs
	check "unsigned request is refused: exit 1" \
		'[ $rc -eq 1 ] && has "$ERR" "trainctl: error: "'
	run env AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=wrong \
		$T --endpoint "$E2" list-training-jobs
	check "wrong secret is refused: exit 1" \
		'[ $rc -eq 1 ] && has "$ERR" SignatureDoesNotMatch'
	# The embedded store through the blob endpoint, signed the same way.
	printf 'signed bytes\n' >"$T_TMP/signed.txt"
	run env AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET \
		$T --endpoint "$E2" cp "$T_TMP/signed.txt" s3://signed-bucket/d/s.txt
	check "signed cp to the embedded store" '[ $rc -eq 0 ]'
	run env AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET \
		$T --endpoint "$E2" ls s3://signed-bucket/d/
	check "signed ls lists it" '[ $rc -eq 0 ] && has "$OUT" d/s.txt'
	run env AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET \
		$T --endpoint "$E2" cp s3://signed-bucket/d/s.txt "$T_TMP/back.txt"
	check "signed cp back: same bytes" \
		'[ $rc -eq 0 ] && cmp -s "$T_TMP/signed.txt" "$T_TMP/back.txt"'
	run env AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=wrong \
		$T --endpoint "$E2" ls s3://signed-bucket/d/
	check "blob request with a wrong secret is refused" \
		'[ $rc -ne 0 ] && has "$ERR" 401'
	run $T --endpoint "$E2" ls s3://signed-bucket/d/
	check "unsigned blob request is refused" '[ $rc -ne 0 ] && has "$ERR" 401'
else
	check "trainctld --credentials starts" false
fi

t_done
