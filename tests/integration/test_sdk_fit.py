#!/usr/bin/python3
"""The SageMaker Python SDK's Estimator.fit(wait=True, logs=True), replayed.

The SDK itself cannot be installed here (no PyPI), so this test sends, with
boto3 against its own `trainctld --local-hosts 1`, the requests that the
unmodified SDK v2.210.0 sends for

    PyTorch(entry_point="train.py", source_dir=..., framework_version="1.13.1",
            py_version="py39", instance_count=1, instance_type="ml.m5.large",
            hyperparameters={"epochs": 1}, max_run=600, output_path=OUT)
        .fit({"train": DATA}, job_name=NAME, wait=True, logs=True)

with its default session settings, as recorded from a run of the real SDK:
the source upload with x-amz-server-side-encryption: aws:kms, the
CreateTrainingJob body (with the DebugHookConfig and ProfilerConfig the SDK
adds by default), then Describe and CloudWatch Logs' DescribeLogStreams
(prefix NAME/, orderBy LogStreamName, limit 1) and GetLogEvents
(startTime 0, startFromHead) until the job ends, a last Describe and a
HeadObject of the model. Then Estimator.attach's calls (Describe, the
members it reads, ListTags).

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_sdk_fit.py
"""
import io
import os
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import smcompat as sc  # noqa: E402

sc.hermetic_env()
Fail, expect = sc.Fail, sc.expect
BUCKET = "sdk-fit"
OUT = "s3://%s/out" % BUCKET
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.13.1-cpu-py39"
GROUP = "/aws/sagemaker/TrainingJobs"

TRAIN = r'''
import argparse, json, os
p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int)
a = p.parse_args()
rows = open(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "part-0.csv")).read().split()
print("sdk-fit epochs=%d rows=%d hook=%s" % (a.epochs, len(rows), os.path.exists(
    "/opt/ml/input/config/debughookconfig.json")), flush=True)
open(os.path.join(os.environ["SM_MODEL_DIR"], "model.json"), "w").write(json.dumps({"rows": len(rows)}))
'''


def clients(endpoint):
    import boto3
    import botocore.config
    cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                 s3={"addressing_style": "path"})
    s = boto3.session.Session(aws_access_key_id=sc.KEY, aws_secret_access_key=sc.SECRET,
                              region_name=sc.REGION)
    return (sc.make_client(endpoint), s.client("s3", endpoint_url=endpoint, config=cfg),
            s.client("logs", endpoint_url=endpoint, config=cfg))


def sourcedir():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = TRAIN.encode()
        ti = tarfile.TarInfo("train.py")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def create_body(name):
    """The SDK's CreateTrainingJob body, as recorded, for job name."""
    return {
        "AlgorithmSpecification": {"TrainingInputMode": "File", "TrainingImage": IMAGE,
                                   "EnableSageMakerMetricsTimeSeries": True},
        "OutputDataConfig": {"S3OutputPath": OUT},
        "TrainingJobName": name,
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
        "ResourceConfig": {"VolumeSizeInGB": 30, "InstanceCount": 1, "InstanceType": "ml.m5.large"},
        "RoleArn": "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole",
        "InputDataConfig": [{"DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": "s3://%s/data/train" % BUCKET,
            "S3DataDistributionType": "FullyReplicated"}}, "ChannelName": "train"}],
        "HyperParameters": {"epochs": "1",
                            "sagemaker_submit_directory": '"s3://%s/%s/source/sourcedir.tar.gz"' % (BUCKET, name),
                            "sagemaker_program": '"train.py"', "sagemaker_container_log_level": "20",
                            "sagemaker_job_name": '"%s"' % name, "sagemaker_region": '"us-east-1"'},
        "DebugHookConfig": {"S3OutputPath": OUT, "CollectionConfigurations": []},
        "ProfilerConfig": {"S3OutputPath": OUT, "DisableProfiler": False},
    }


def fit(sm, s3, logs, name):
    """The calls of fit(wait=True, logs=True); returns (describe, log lines)."""
    s3.put_object(Bucket=BUCKET, Key="%s/source/sourcedir.tar.gz" % name, Body=sourcedir(),
                  ServerSideEncryption="aws:kms")
    sm.create_training_job(**create_body(name))
    sm.describe_training_job(TrainingJobName=name)
    lines, tokens = [], {}
    deadline = time.time() + 180
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        streams = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=name + "/",
                                            orderBy="LogStreamName", limit=1)["logStreams"]
        for st in streams:
            kw = {"nextToken": tokens[st["logStreamName"]]} if st["logStreamName"] in tokens else {}
            r = logs.get_log_events(logGroupName=GROUP, logStreamName=st["logStreamName"], startTime=0,
                                    startFromHead=True, **kw)
            lines += [e["message"] for e in r["events"]]
            tokens[st["logStreamName"]] = r["nextForwardToken"]
        if d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            break
        if time.time() > deadline:
            raise Fail("%s still %s after 180 s" % (name, d["TrainingJobStatus"]))
        time.sleep(0.5)
    d = sm.describe_training_job(TrainingJobName=name)
    return d, lines


def main():
    tap = sc.Tap()
    daemon = sc.Daemon(extra=["--local-hosts", "1", "--grace-period", "2"])
    try:
        err = daemon.start()
        if not tap.ok(err is None, "trainctld --local-hosts 1 starts", err):
            return tap.finish()
        sm, s3, logs = clients(daemon.endpoint)
        name = "sdk-fit-%d" % (int(time.time()) % 100000)
        state = {}

        def setup():
            # Session.default_bucket() and upload_data().
            s3.create_bucket(Bucket=BUCKET)
            s3.put_object(Bucket=BUCKET, Key="data/train/part-0.csv", Body=b"1,2\n3,4\n5,6\n")
        tap.case("the SDK's default_bucket and upload_data calls", setup)

        def do_fit():
            d, lines = fit(sm, s3, logs, name)
            state["d"] = d
            expect(d["TrainingJobStatus"] == "Completed", "ended %s: %r" % (
                d["TrainingJobStatus"], d.get("FailureReason")))
            text = "\n".join(lines)
            expect("sdk-fit epochs=1 rows=3 hook=True" in text,
                   "the program's line is not in the log the SDK reads:\n%s" % text[-2000:])
            art = d["ModelArtifacts"]["S3ModelArtifacts"]
            expect(art == "%s/%s/output/model.tar.gz" % (OUT, name), "S3ModelArtifacts %s" % art)
            key = art[len("s3://%s/" % BUCKET):]
            expect(s3.head_object(Bucket=BUCKET, Key=key)["ContentLength"] > 0, "empty model.tar.gz")
            expect(d.get("ProfilingStatus") == "Enabled", "ProfilingStatus %r" % d.get("ProfilingStatus"))
        tap.case("fit(wait=True, logs=True) with the SDK's default session: source upload with SSE-KMS, "
                 "Debugger and profiler configs, logs streamed, model there", do_fit)

        def attach():
            d = sm.describe_training_job(TrainingJobName=name)
            for path in (("RoleArn",), ("ResourceConfig", "InstanceCount"), ("ResourceConfig", "InstanceType"),
                         ("ResourceConfig", "VolumeSizeInGB"), ("StoppingCondition", "MaxRuntimeInSeconds"),
                         ("AlgorithmSpecification", "TrainingInputMode"), ("TrainingJobName",),
                         ("OutputDataConfig", "S3OutputPath"), ("OutputDataConfig", "KmsKeyId"),
                         ("HyperParameters",), ("AlgorithmSpecification", "TrainingImage"),
                         ("ModelArtifacts", "S3ModelArtifacts")):
                v = d
                for k in path:
                    expect(isinstance(v, dict) and k in v, "attach reads %s: missing" % ".".join(path))
                    v = v[k]
            expect(sm.list_tags(ResourceArn=d["TrainingJobArn"])["Tags"] == [], "tags of an untagged job")
        tap.case("Estimator.attach's calls on the finished job", attach)
    finally:
        daemon.stop()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
