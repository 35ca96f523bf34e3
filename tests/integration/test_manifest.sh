#!/bin/sh
# ManifestFile channels on the embedded local cluster: the manifest's keys
# land on the hosts, sharded (each key on exactly one host) or replicated.
# TAP output.
set -u
. "$(dirname "$0")/../lib.sh"
BUILD=${BUILD:-build}
t_hermetic_aws
t_tmpdir trainctl-manifest
T=$T_TMP
t_plan 3
# The daemon's state folder (t_start_trainctld), filled first.
S=$T/trainctld
mkdir -p "$S/s3/mdata/objs/sub"
for k in a sub/b c d e; do echo "$k" >"$S/s3/mdata/objs/$k"; done
echo "not listed" >"$S/s3/mdata/objs/ignored"
cat >"$S/s3/mdata/manifest.json" <<'M'
[{"prefix": "s3://mdata/objs/"}, "a", "sub/b", "c", "d", "e"]
M
printf '#!/bin/sh\ncd "$SM_CHANNEL_TRAIN" && find . -type f | sort > "$SM_MODEL_DIR/files-$SM_CURRENT_HOST.txt"\n' >"$T/list.sh"
chmod +x "$T/list.sh"
t_start_trainctld --local-hosts 2
export TRAINCTL_ENDPOINT="$T_URL"
i=0
until curl -fs "$TRAINCTL_ENDPOINT/v1/hosts" 2>/dev/null | grep -q '"ready".*"ready"'; do
	i=$((i + 1))
	[ $i -gt 300 ] && break
	sleep 0.1
done
run_job() { # name distribution
	cat >"$T/$1.json" <<J
{"TrainingJobName": "$1", "RoleArn": "arn:aws:iam::000000000000:role/t",
 "AlgorithmSpecification": {"TrainingImage": "file://$T/list.sh", "TrainingInputMode": "File"},
 "InputDataConfig": [{"ChannelName": "train", "DataSource": {"S3DataSource": {
   "S3DataType": "ManifestFile", "S3Uri": "s3://mdata/manifest.json",
   "S3DataDistributionType": "$2"}}}],
 "OutputDataConfig": {"S3OutputPath": "file://$T/out"},
 "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 2, "VolumeSizeInGB": 1},
 "StoppingCondition": {"MaxRuntimeInSeconds": 600}}
J
	"$BUILD/bin/trainctl" create-training-job --cli-input-json "file://$T/$1.json" >/dev/null &&
		"$BUILD/bin/trainctl" wait "$1" --timeout 120 2>/dev/null
	rc=$?
	mkdir -p "$T/m-$1"
	[ -f "$T/out/$1/output/model.tar.gz" ] &&
		tar xzf "$T/out/$1/output/model.tar.gz" -C "$T/m-$1"
	return $rc
}
if run_job man-shard ShardedByS3Key; then
	all=$(cat "$T/m-man-shard"/files-algo-*.txt | sort)
	dups=$(cat "$T/m-man-shard"/files-algo-*.txt | sort | uniq -d)
	want=$(printf './a\n./c\n./d\n./e\n./sub/b')
	if [ "$all" = "$want" ] && [ -z "$dups" ] &&
		[ -s "$T/m-man-shard/files-algo-1.txt" ] && [ -s "$T/m-man-shard/files-algo-2.txt" ]; then
		t_pass "sharded manifest: every listed key on exactly one host, nothing else"
	else
		t_fail "sharded manifest: every listed key on exactly one host, nothing else" "got: $(echo $all)"
	fi
else
	t_fail "sharded manifest: every listed key on exactly one host, nothing else" \
		"$("$BUILD/bin/trainctl" describe-training-job man-shard 2>&1 | grep -i fail)"
fi
if run_job man-repl FullyReplicated &&
	[ "$(cat "$T/m-man-repl/files-algo-1.txt")" = "$(printf './a\n./c\n./d\n./e\n./sub/b')" ] &&
	cmp -s "$T/m-man-repl/files-algo-1.txt" "$T/m-man-repl/files-algo-2.txt"; then
	t_pass "replicated manifest: every listed key on every host"
else
	t_fail "replicated manifest: every listed key on every host"
fi
echo '[{"prefix": "s3://mdata/objs/"}, "../escape"]' >"$S/s3/mdata/manifest.json"
run_job man-bad FullyReplicated
reason=$("$BUILD/bin/trainctl" describe-training-job man-bad --output json 2>/dev/null | grep -o '"FailureReason": *"[^"]*"')
case "$reason" in
*ClientError*escape*) t_pass "a manifest key leaving the channel folder fails the job with a ClientError" ;;
*) t_fail "a manifest key leaving the channel folder fails the job with a ClientError" "$reason" ;;
esac
t_done
