#!/usr/bin/python3
"""The SageMaker Python SDK's log view (fit(logs=True)) of a retried job.

The SDK v2.210.0 reads a training job's log with a loop of its own
(sagemaker.session._logs_for_job, _flush_log_streams, and
sagemaker.logs.multi_stream_iter / log_stream). Its behaviour, replayed
here call for call with boto3 (the SDK cannot be installed here):

  - every poll it asks DescribeLogStreams for logStreamNamePrefix "JOB/",
    orderBy LogStreamName, limit min(InstanceCount, 50), and while the
    answer holds a nextToken it asks the same again, *without* the token,
    adding the names (the list it keeps between polls is never updated,
    so this happens on every poll);
  - for each stream it keeps (timestamp, skip): GetLogEvents from
    startTime=timestamp, startFromHead, following nextForwardToken until
    a page comes back empty, skipping the first `skip` events;
  - it merges the streams' events by timestamp and prints each message.

Only the waits are shorter (polls 0.3 s apart instead of 10 s, Describe
every 0.6 s instead of 30 s). A server that answers a nextToken to that
request makes the real SDK loop for ever; one that lists each attempt's
streams apart makes it print lines twice or drop them.

Cases (trainctld --local-hosts 2, a 2-host job whose program prints
numbered lines on each host, fails attempt 1 and completes attempt 2,
RetryStrategy.MaximumRetryAttempts 1):
  (a) the SDK's loop, run while the job runs, prints every line of both
      attempts of both hosts exactly once, each host's in order, and the
      line that marks where attempt 2 starts; each attempt of each host
      opens with the toolkit's preamble (hosts, SM_* environment, the
      command), a secret hyperparameter's value hidden
  (b) DescribeLogStreams lists one stream per host (boto3's paginator with
      page size 1 too), each holding both attempts
  (c) GetLogEvents pages forward with nextForwardToken over both attempts
      and backward from the end; an attempt's own stream name (as
      `trainctl logs` shows it) still reads that attempt alone
  (d) FilterLogEvents names the host's stream for lines of either attempt
  (e) `trainctl logs` prints, for each host, the separator between its
      attempt 1 and attempt 2 lines
  (f) both hosts save model.json: model.tar.gz holds algo-2's, and the
      job's last transition and its log warn that the names collided
  (g) estimator.deploy()'s CreateModel, CreateEndpointConfig and
      CreateEndpoint, and CreateTransformJob, are refused with a message
      naming the job's model artifact and docs/serving.md

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_sdk_logs.py
"""
import collections
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import smcompat as sc  # noqa: E402

sc.hermetic_env()
Fail, expect = sc.Fail, sc.expect
BUCKET = "sdk-logs"
GROUP = "/aws/sagemaker/TrainingJobs"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.13.1-cpu-py39"
LINES = 12

# Prints LINES numbered lines a little apart (so that the log loop reads
# some while the program runs), then fails in attempt 1: algo-1 does, once
# algo-2 has printed all its lines (the local cluster's hosts share /tmp),
# so that the restart never cuts a host's attempt 1 short.
TRAIN = r'''
import os, sys, time
attempt = os.environ["TRAINCTL_ATTEMPT"]
host = os.environ["SM_CURRENT_HOST"]
done = "/tmp/%%s.%%s.done" %% (os.environ["TRAINCTL_JOB"], attempt)
for i in range(%d):
    print("sdk-logs attempt=%%s host=%%s i=%%02d" %% (attempt, host, i), flush=True)
    time.sleep(0.05)
if host == "algo-2" and attempt == "1":
    open(done, "w").close()
elif attempt == "1":
    deadline = time.time() + 60
    while not os.path.exists(done) and time.time() < deadline:
        time.sleep(0.05)
    if os.path.exists(done):
        os.unlink(done)
if attempt == "2":
    # Both hosts save model.json: merged, the last host's is kept.
    model = os.environ["SM_MODEL_DIR"]
    open(os.path.join(model, "model.json"), "w").write(host)
    open(os.path.join(model, host + ".txt"), "w").write(host)
sys.exit(3 if attempt == "1" and host == "algo-1" else 0)
''' % LINES

Position = collections.namedtuple("Position", ["timestamp", "skip"])


def clients(endpoint):
    import boto3
    import botocore.config
    cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                 s3={"addressing_style": "path"})
    s = boto3.session.Session(aws_access_key_id=sc.KEY, aws_secret_access_key=sc.SECRET,
                              region_name=sc.REGION)
    return (sc.make_client(endpoint), s.client("s3", endpoint_url=endpoint, config=cfg),
            s.client("logs", endpoint_url=endpoint, config=cfg))


def create(sm, s3, name):
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = TRAIN.encode()
        ti = tarfile.TarInfo("train.py")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    s3.put_object(Bucket=BUCKET, Key="%s/source/sourcedir.tar.gz" % name, Body=buf.getvalue())
    sm.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={"TrainingInputMode": "File", "TrainingImage": IMAGE},
        RoleArn="arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole",
        OutputDataConfig={"S3OutputPath": "s3://%s/out" % BUCKET},
        ResourceConfig={"InstanceCount": 2, "InstanceType": "ml.m5.large", "VolumeSizeInGB": 10},
        StoppingCondition={"MaxRuntimeInSeconds": 600},
        RetryStrategy={"MaximumRetryAttempts": 1},
        HyperParameters={"sagemaker_program": '"train.py"', "api_key": "s3cr3t", "lr": "0.5",
                         "sagemaker_submit_directory": '"s3://%s/%s/source/sourcedir.tar.gz"' % (BUCKET, name)})


# ------------------------------------------------ the SDK's loop, replayed


def sdk_log_stream(logs, stream, start_time, skip):
    """Events of one stream from start_time, as the SDK's log_stream()."""
    token = None
    count = 1
    while count > 0:
        kw = {"nextToken": token} if token is not None else {}
        r = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, startTime=start_time,
                                startFromHead=True, **kw)
        token = r["nextForwardToken"]
        events = r["events"]
        count = len(events)
        if count > skip:
            events = events[skip:]
            skip = 0
        else:
            skip -= count
            events = []
        for ev in events:
            yield ev


def sdk_multi_stream(logs, streams, positions):
    """(stream index, event) in timestamp order, as multi_stream_iter()."""
    iters = [sdk_log_stream(logs, s, positions[s].timestamp, positions[s].skip) for s in streams]
    heads = [next(it, None) for it in iters]
    while any(h is not None for h in heads):
        i = min((k for k, h in enumerate(heads) if h is not None), key=lambda k: heads[k]["timestamp"])
        yield i, heads[i]
        heads[i] = next(iters[i], None)


def sdk_flush(logs, name, instance_count, positions, printed):
    """One poll of _flush_log_streams(); its stream list starts empty each
    time, as the SDK's does (it rebinds a local)."""
    r = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=name + "/",
                                  orderBy="LogStreamName", limit=min(instance_count, 50))
    names = [s["logStreamName"] for s in r["logStreams"]]
    if "nextToken" in r:
        # The SDK asks the same again without the token: for ever.
        raise Fail("DescribeLogStreams answered a nextToken to the SDK's request "
                   "(limit %d, streams %s): the SDK would loop for ever" % (instance_count, names))
    for s in names:
        positions.setdefault(s, Position(0, 0))
    for i, ev in sdk_multi_stream(logs, names, positions):
        printed.append((names[i], ev["message"]))
        ts, count = positions[names[i]]
        if ev["timestamp"] == ts:
            positions[names[i]] = Position(ts, count + 1)
        else:
            positions[names[i]] = Position(ev["timestamp"], 1)


def sdk_logs_for_job(sm, logs, name, poll=0.3, describe_every=0.6, timeout=120):
    """_logs_for_job(wait=True): polls until the job ends, then once more."""
    d = sm.describe_training_job(TrainingJobName=name)
    count = d["ResourceConfig"]["InstanceCount"]
    positions, printed = {}, []
    state = "TAILING"
    last = time.time()
    deadline = time.time() + timeout
    while True:
        sdk_flush(logs, name, count, positions, printed)
        if state == "COMPLETE":
            break
        if time.time() > deadline:
            raise Fail("%s still %s after %d s" % (name, d["TrainingJobStatus"], timeout))
        time.sleep(poll)
        if state == "JOB_COMPLETE":
            state = "COMPLETE"
        elif time.time() - last >= describe_every:
            d = sm.describe_training_job(TrainingJobName=name)
            last = time.time()
            if d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
                state = "JOB_COMPLETE"
    return d, printed


# ------------------------------------------------------------------ cases


def expected_lines():
    return {h: ["sdk-logs attempt=%d host=%s i=%02d" % (a, h, i) for a in (1, 2) for i in range(LINES)]
            for h in ("algo-1", "algo-2")}


def check_sdk(state):
    d, printed = state["d"], state["printed"]
    expect(d["TrainingJobStatus"] == "Completed", "ended %s: %r" % (d["TrainingJobStatus"],
                                                                    d.get("FailureReason")))
    want = expected_lines()
    msgs = [m for _, m in printed]
    for host, lines in want.items():
        got = [m for m in msgs if m.startswith("sdk-logs ") and ("host=%s " % host) in m]
        expect(got == lines, "%s: the SDK printed\n%s\ninstead of\n%s" % (host, "\n".join(got),
                                                                        "\n".join(lines)))
    seps = [m for m in msgs if "trainctl: attempt 2 of this job starts here" in m]
    expect(len(seps) == 2, "attempt separators the SDK printed: %s" % seps)
    for host in want:
        # The staging's version line (docs/script-mode.md) may come
        # first; then each attempt opens with the toolkit's preamble, and
        # attempt 2's comes right after the separator.
        mine = [m for s, m in printed if s.split("/")[1].startswith(host + "-")
                and not m.startswith("trainagent: Script mode runs ")]
        envs = [i for i, m in enumerate(mine) if m.startswith("Training Env: current host %s of hosts "
                                                              '["algo-1","algo-2"], attempt ' % host)]
        expect(len(envs) == 2 and envs[0] == 0, "%s: preambles at %s:\n%s" % (host, envs, "\n".join(mine)))
        expect("(%s on host" % host in mine[envs[1] - 1],
               "%s: the line before attempt 2's preamble is %r" % (host, mine[envs[1] - 1]))
        cmds = [mine[i + 1] for i, m in enumerate(mine) if m == "Invoking script with the following command:"]
        expect(len(cmds) == 2 and all(c.endswith("train.py --api_key <hidden> --lr 0.5") for c in cmds),
               "%s: commands %s" % (host, cmds))
        expect("SM_CURRENT_HOST=%s" % host in mine, "%s: no SM_CURRENT_HOST in its preamble" % host)
    leaked = [m for m in msgs if "s3cr3t" in m]
    expect(not leaked, "a secret hyperparameter's value is in the log: %s" % leaked)
    return "%d lines, each once" % len(msgs)


def check_streams(logs, state):
    name = state["name"]
    r = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=name + "/",
                                  orderBy="LogStreamName")
    names = [s["logStreamName"] for s in r["logStreams"]]
    expect(len(names) == 2 and "nextToken" not in r, "streams of the job: %s" % r)
    for s in r["logStreams"]:
        expect(s["storedBytes"] > 0 and s["firstEventTimestamp"] <= s["lastEventTimestamp"], s)
    paged = []
    for page in logs.get_paginator("describe_log_streams").paginate(
            logGroupName=GROUP, logStreamNamePrefix=name + "/", PaginationConfig={"PageSize": 1}):
        paged += [s["logStreamName"] for s in page["logStreams"]]
    expect(paged == names, "paged by 1: %s" % paged)
    state["streams"] = names
    return ", ".join(names)


def check_part(logs, state, parts):
    later = [p for p in parts if p not in state["streams"]]
    expect(len(later) == 2, "the attempts' own names: %s" % parts)
    for part in later:
        host = part.split("/")[1].rsplit("-", 1)[0]
        r = logs.get_log_events(logGroupName=GROUP, logStreamName=part, startFromHead=True)
        got = [e["message"] for e in r["events"]]
        expect(got[0].startswith("==== trainctl: attempt 2"), "%s starts %r" % (part, got[:1]))
        lines = [m for m in got if m.startswith("sdk-logs ")]
        expect(lines == expected_lines()[host][LINES:], "%s: %s" % (part, got))
    return "%d parts" % len(later)


def check_filter(logs, state):
    r = logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix=state["name"] + "/",
                               filterPattern='"i=03"')
    got = sorted((e["logStreamName"], e["message"]) for e in r["events"])
    want = sorted((s, "sdk-logs attempt=%d host=%s i=03" % (a, s.split("/")[1].rsplit("-", 1)[0]))
                  for s in state["streams"] for a in (1, 2))
    expect(got == want, "filtered: %s" % got)
    return "%d events" % len(got)


def check_cli(daemon, state):
    import subprocess
    trainctl = os.path.join(REPO, os.environ.get("BUILD", "build"), "bin", "trainctl")
    env = dict(os.environ, TRAINCTL_ENDPOINT=daemon.endpoint)
    r = subprocess.run([trainctl, "logs", state["name"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=30)
    out = r.stdout.decode("utf-8", "replace").splitlines()
    expect(r.returncode == 0, "trainctl logs: exit %d %s" % (r.returncode, r.stderr.decode()[-300:]))
    for host in ("algo-1", "algo-2"):
        mine = [ln for ln in out if ln.startswith("[%s] " % host)]
        sep = [i for i, ln in enumerate(mine) if "==== trainctl: attempt 2 of this job starts here (%s on host "
               % host in ln]
        first1 = mine.index("[%s] sdk-logs attempt=1 host=%s i=00" % (host, host))
        first2 = mine.index("[%s] sdk-logs attempt=2 host=%s i=00" % (host, host))
        expect(len(sep) == 1 and first1 < sep[0] < first2, "%s: separator at %s, attempt 1 at %d, 2 at %d:\n%s"
               % (host, sep, first1, first2, "\n".join(mine)))
    return "%d lines" % len(out)


def check_collision(sm, s3, state):
    import io
    import tarfile
    d = sm.describe_training_job(TrainingJobName=state["name"])
    last = d["SecondaryStatusTransitions"][-1]
    want = ("Warning: 1 file of the hosts' model files had the same name on several hosts; "
            "the last host's was kept: model.json (algo-2 over algo-1)")
    expect(last["Status"] == "Completed" and want in last.get("StatusMessage", ""),
           "the last transition: %s" % last)
    key = d["ModelArtifacts"]["S3ModelArtifacts"][len("s3://%s/" % BUCKET):]
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tf:
        files = {m.name.lstrip("./"): tf.extractfile(m).read().decode() for m in tf.getmembers() if m.isfile()}
    expect(files == {"model.json": "algo-2", "algo-1.txt": "algo-1", "algo-2.txt": "algo-2"},
           "model.tar.gz: %s" % files)
    notes = [m for _, m in state["printed"] if m.startswith("trainctl: warning: 1 file of the hosts' model")]
    expect(len(notes) == 1, "the warning in the log the SDK printed: %s" % notes)
    return last["StatusMessage"]


def check_serving(sm, state):
    """estimator.deploy()'s calls, and a batch transform's: refused, with
    the job's model and the docs page named."""
    import botocore.exceptions
    name = state["name"]
    art = sm.describe_training_job(TrainingJobName=name)["ModelArtifacts"]["S3ModelArtifacts"]
    role = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
    calls = [
        ("CreateModel", lambda: sm.create_model(
            ModelName=name, ExecutionRoleArn=role,
            PrimaryContainer={"Image": IMAGE, "ModelDataUrl": art})),
        ("CreateEndpointConfig", lambda: sm.create_endpoint_config(
            EndpointConfigName=name, ProductionVariants=[{
                "VariantName": "AllTraffic", "ModelName": name, "InitialInstanceCount": 1,
                "InstanceType": "ml.m5.large"}])),
        ("CreateEndpoint", lambda: sm.create_endpoint(EndpointName=name, EndpointConfigName=name)),
        ("CreateTransformJob", lambda: sm.create_transform_job(
            TransformJobName="t-" + name, ModelName=name,
            TransformInput={"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                                            "S3Uri": "s3://%s/in" % BUCKET}}},
            TransformOutput={"S3OutputPath": "s3://%s/tout" % BUCKET},
            TransformResources={"InstanceType": "ml.m5.large", "InstanceCount": 1})),
    ]
    for op, call in calls:
        try:
            call()
            raise Fail("%s succeeded" % op)
        except botocore.exceptions.ClientError as e:
            err = e.response["Error"]
            expect(err["Code"] == "UnknownOperationException", "%s: %s" % (op, err))
            for want in ("%s is not supported" % op, "The model of training job '%s' is %s." % (name, art),
                         "docs/serving.md"):
                expect(want in err["Message"], "%s: %r lacks %r" % (op, err["Message"], want))
    # A model of another origin: named as the request gives it.
    try:
        sm.create_model(ModelName="elsewhere", ExecutionRoleArn=role,
                        PrimaryContainer={"Image": IMAGE, "ModelDataUrl": "s3://other/model.tar.gz"})
        raise Fail("CreateModel succeeded")
    except botocore.exceptions.ClientError as e:
        expect("The model named is s3://other/model.tar.gz." in e.response["Error"]["Message"],
               e.response["Error"])
    return "%d operations refused" % (len(calls) + 1)


def main():
    tap = sc.Tap()
    daemon = sc.Daemon(extra=["--local-hosts", "2", "--grace-period", "2"])
    try:
        err = daemon.start()
        if not tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
            return tap.finish()
        sm, s3, logs = clients(daemon.endpoint)
        s3.create_bucket(Bucket=BUCKET)
        name = "sdk-logs-%d" % (int(time.time()) % 100000)
        state = {"name": name, "endpoint": daemon.endpoint}

        def run():
            create(sm, s3, name)
            state["d"], state["printed"] = sdk_logs_for_job(sm, logs, name)
            return check_sdk(state)
        tap.case("(a) the SDK's fit(logs=True) loop prints every line of a retried 2-host job once, "
                 "in order, with the attempt separator", run)
        tap.case("(b) DescribeLogStreams: one stream per host across attempts, paged alike",
                 check_streams, logs, state)

        def get():
            want = expected_lines()
            for stream in state["streams"]:
                host = stream.split("/")[1].rsplit("-", 1)[0]
                got, kw = [], {"startFromHead": True}
                for _ in range(100):
                    r = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, limit=5, **kw)
                    got += [e["message"] for e in r["events"]]
                    if not r["events"]:
                        break
                    kw = {"nextToken": r["nextForwardToken"]}
                lines = [m for m in got if m.startswith("sdk-logs ")]
                expect(lines == want[host], "%s paged forward: %s" % (stream, got))
                # The newest events (algo-1's last is the controller's
                # warning about the model files, case f).
                r = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, limit=4)
                got = [e["message"] for e in r["events"] if e["message"].startswith("sdk-logs ")]
                expect(len(r["events"]) == 4 and got[-3:] == want[host][-3:], "backward: %s" % r["events"])
            # The attempts' own names, as trainctl logs lists them.
            code, body = daemon_get(daemon, "/v1/training-jobs/%s/logs" % name)
            expect(code == 200, "GET logs: %s %s" % (code, body))
            return check_part(logs, state, body["streams"])
        tap.case("(c) GetLogEvents pages both attempts forward and backward; an attempt's own "
                 "stream reads that attempt", get)
        tap.case("(d) FilterLogEvents names the host's stream for both attempts' lines",
                 check_filter, logs, state)
        tap.case("(e) trainctl logs shows where each host's attempt 2 starts", check_cli, daemon, state)
        tap.case("(f) hosts' model files of the same name: merged, the last host's kept, with a "
                 "warning in the job's transitions and log", check_collision, sm, s3, state)
        tap.case("(g) deploy's and transform's operations are refused naming the job's model and "
                 "docs/serving.md", check_serving, sm, state)
    finally:
        daemon.stop()
    return tap.finish()


def daemon_get(daemon, path):
    """A signed GET of the controller's own REST route; (status, JSON)."""
    import json
    import urllib.request
    host = "127.0.0.1:%d" % daemon.port
    headers = sc.sigv4_sign("GET", host, path, "", b"", sc.KEY, sc.SECRET)
    req = urllib.request.Request("http://%s%s" % (host, path), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


if __name__ == "__main__":
    sys.exit(main())
