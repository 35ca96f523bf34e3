#!/usr/bin/python3
"""Jobs whose data, checkpoints and model live behind an external S3
endpoint (trainctld --s3-endpoint; docs/storage.md, "Real S3").

The endpoint is a second trainctld's embedded store, reached over HTTP
with SigV4 and an operator key that only the controller's environment
holds (the local agents get it from the controller, the job never sees
it). A 2-host job on the controller under test:
  (e1) stages its channels from the endpoint: FullyReplicated gives each
       host every object, ShardedByS3Key splits them between the hosts,
       disjoint and together complete, with their bytes intact
  (e2) mirrors its checkpoint to the endpoint during attempt 1 (which
       then exits 1) and restores it from there in attempt 2
  (e3) ends Completed with its model in the endpoint, holding what each
       host saw; nothing is written under the controller's own store

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_external_s3.py
BUILD names the build directory (default build).
"""
import io
import os
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
from ftlib import expect  # noqa: E402

sc = fl.sc
sc.hermetic_env()

BUCKET = "ext"
OPERATOR = ("AKIDEXTERNALSTORE001", "operator/secret/external/0123456789")
NAME = "ext-s3-%x" % (int(time.time() * 1000) % 0xfffffff)
OBJECTS = {"part-%d.csv" % i: ("rows of part %d\n" % i).encode() * (i + 1) for i in range(6)}

# Attempt 1 checkpoints and fails; attempt 2 records what it staged and
# what it restored into its model.
SCRIPT = r"""
set -e
h=$SM_CURRENT_HOST
ck=${TRAINCTL_CHECKPOINT_DIR:-/opt/ml/checkpoints}
if [ "${TRAINCTL_ATTEMPT:-1}" = 1 ]; then
	mkdir -p "$ck"
	echo "checkpoint of attempt 1 on $h" > "$ck/ck-$h.tmp"
	mv "$ck/ck-$h.tmp" "$ck/ck-$h.txt"
	sleep 2
	exit 1
fi
out=$SM_MODEL_DIR/seen-$h.txt
for f in "$SM_CHANNEL_TRAIN"/*; do
	echo "train $(basename "$f") $(cksum < "$f" | cut -d' ' -f1)"
done > "$out"
for f in "$SM_CHANNEL_ALL"/*; do
	echo "all $(basename "$f") $(cksum < "$f" | cut -d' ' -f1)"
done >> "$out"
echo "restored $(cat "$ck/ck-$h.txt" 2>/dev/null || echo nothing)" >> "$out"
"""


def cksum(data):
    """POSIX cksum's CRC of data, as cksum(1) prints it."""
    import subprocess
    return subprocess.run(["cksum"], input=data, capture_output=True, check=True).stdout.split()[0].decode()


def request(script):
    uri = "s3://%s/data/" % BUCKET
    return {
        "TrainingJobName": NAME,
        "AlgorithmSpecification": {"TrainingImage": "file:///bin/sh", "TrainingInputMode": "File",
                                   "ContainerArguments": [script]},
        "RoleArn": fl.ROLE,
        "InputDataConfig": [
            {"ChannelName": "train", "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "ShardedByS3Key"}}},
            {"ChannelName": "all", "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "FullyReplicated"}}},
        ],
        "OutputDataConfig": {"S3OutputPath": "s3://%s/out" % BUCKET},
        "CheckpointConfig": {"S3Uri": "s3://%s/ckpt/%s/" % (BUCKET, NAME)},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 2, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
        "RetryStrategy": {"MaximumRetryAttempts": 1},
    }


def start(tap):
    store = sc.Daemon(credentials={"operator": OPERATOR}, name="trainctld-ext-store")
    err = store.start()
    if not tap.ok(err is None, "a trainctld serving S3 (the external endpoint) starts", err):
        return None, None
    for key, data in OBJECTS.items():
        path = os.path.join(store.state_dir, "s3", BUCKET, "data", key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    front = sc.Daemon(credentials=None, name="trainctld-ext-front",
                      extra=["--local-hosts", "2", "--s3-endpoint", store.endpoint])
    os.environ.update({"AWS_ACCESS_KEY_ID": OPERATOR[0], "AWS_SECRET_ACCESS_KEY": OPERATOR[1],
                       "AWS_REGION": "us-east-1"})
    try:
        err = front.start()
    finally:
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
            del os.environ[k]
    if not tap.ok(err is None, "a trainctld with --s3-endpoint starts", err):
        store.stop()
        return None, None
    return store, front


def seen_by_host(store):
    """{host: [lines]} from the model the job left in the endpoint."""
    path = os.path.join(store.state_dir, "s3", BUCKET, "out", NAME, "output", "model.tar.gz")
    expect(os.path.exists(path), "no model.tar.gz in the endpoint (s3://%s/out/%s/output/)" % (BUCKET, NAME))
    seen = {}
    with tarfile.open(path) as t:
        for m in t.getmembers():
            base = os.path.basename(m.name)
            if m.isfile() and base.startswith("seen-"):
                text = io.TextIOWrapper(t.extractfile(m)).read()
                seen[base[5:-4]] = text.splitlines()
    expect(sorted(seen) == ["algo-1", "algo-2"], "the model holds the records of %s" % sorted(seen))
    return seen


def main():
    tap = sc.Tap()
    store, front = start(tap)
    if not front:
        sys.exit(tap.finish())
    tap.log_hint = front.log_tail
    sm = sc.make_client(front.endpoint)
    script = os.path.join(front.tmp, "ext-job.sh")
    with open(script, "w") as f:
        f.write(SCRIPT)
    os.chmod(front.tmp, 0o755)
    os.chmod(script, 0o755)
    try:
        sm.create_training_job(**request(script))
        desc, _ = fl.wait_job(sm, NAME, fl.terminal, 240)
        state = {}

        def completed():
            expect(desc["TrainingJobStatus"] == "Completed",
                   "%s: %s (%s)" % (NAME, desc["TrainingJobStatus"], desc.get("FailureReason")))
            state["seen"] = seen_by_host(store)
        tap.case("(e3) the job Completes in its second attempt and its model is in the endpoint", completed)
        seen = state.get("seen") or {}
        want = {k: cksum(v) for k, v in OBJECTS.items()}

        def channels():
            expect(seen, "no records from the hosts")
            bad, shards = [], {}
            for host, lines in seen.items():
                alls = {ln.split()[1]: ln.split()[2] for ln in lines if ln.startswith("all ")}
                if alls != want:
                    bad.append("%s's FullyReplicated channel: %s" % (host, alls))
                shards[host] = {ln.split()[1]: ln.split()[2] for ln in lines if ln.startswith("train ")}
            a, b = shards.get("algo-1", {}), shards.get("algo-2", {})
            if set(a) & set(b):
                bad.append("ShardedByS3Key gave both hosts %s" % sorted(set(a) & set(b)))
            if dict(a, **b) != want or not a or not b:
                bad.append("ShardedByS3Key: algo-1 %s, algo-2 %s, want %s together" % (
                    sorted(a), sorted(b), sorted(want)))
            expect(not bad, "\n".join(bad))
        tap.case("(e1) channels staged from the endpoint: every object on each host (FullyReplicated), "
                 "disjoint shards that together are all of them (ShardedByS3Key), bytes intact", channels)

        def checkpoints():
            expect(seen, "no records from the hosts")
            for host, lines in seen.items():
                restored = [ln for ln in lines if ln.startswith("restored ")]
                expect(restored == ["restored checkpoint of attempt 1 on %s" % host],
                       "%s restored %r" % (host, restored))
            for host in ("algo-1", "algo-2"):
                path = os.path.join(store.state_dir, "s3", BUCKET, "ckpt", NAME, "ck-%s.txt" % host)
                expect(os.path.exists(path), "no %s in the endpoint's checkpoint prefix" % os.path.basename(path))
            ours = os.path.join(front.state_dir, "s3", BUCKET)
            expect(not os.path.exists(ours), "objects were written to the controller's own store: %s" %
                   sorted(os.listdir(ours)) if os.path.exists(ours) else "")
        tap.case("(e2) the checkpoint of attempt 1 is mirrored to the endpoint and restored from it in "
                 "attempt 2; nothing is written to the controller's own store", checkpoints)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        tap.ok(False, "the job ran", "%s: %s\n%s" % (type(e).__name__, e, front.log_tail()))
    finally:
        rc, killed = front.stop(timeout=20)
        tap.ok(rc == 0 and not killed, "trainctld with --s3-endpoint exits 0 on SIGTERM", "exit %r" % rc)
        store.stop(timeout=20)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
