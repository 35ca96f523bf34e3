#!/usr/bin/python3
"""Built-in XGBoost on hosts provisioned over SSH, as in production.

`scripts/cluster.sh up --hosts 2` makes two hosts (network namespaces, one
sshd each, no checkout of this tree: trainctld copies trainagent to them
over SSH) and a trainctld with --inventory. A 2-instance job on SageMaker's
XGBoost 1.7-1 image trains a binary classification on libsvm data sharded
between the hosts: the runner reaches the hosts inside trainagent, the
first host's tracker is reached from the other over the hosts' network,
the job Completes with validation:auc, and its model loads with xgboost.

TAP on stdout; skips (1..0 # SKIP) when not root or without sshd. Run
from the top of the tree:
    /usr/bin/python3 tests/integration/test_xgboost_cluster.py
BUILD names the build directory (default build); TRAINCTL_TEST_KEEP=1
keeps the cluster's state dir after tear-down.
"""
import os
import re
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import numpy as np  # noqa: E402

import smcompat as sc  # noqa: E402

sc.hermetic_env()

BUILD = os.environ.get("BUILD", "build")
BIN = os.path.join(REPO, BUILD, "bin") if not os.path.isabs(BUILD) else os.path.join(BUILD, "bin")
TRAINCTLD = os.path.join(BIN, "trainctld")
CLUSTER_SH = os.path.join(REPO, "scripts", "cluster.sh")
PREFIX, NET, PORT = sc.run_names("xg")
STATE = "/tmp/trainctl-cluster-%s" % PREFIX
AGENT_PATH = STATE + "/trainagent"
BUCKET = "trainctl-xgc"
IMAGE = "683313688378.dkr.ecr.us-west-2.amazonaws.com/sagemaker-xgboost:1.7-1"

Fail, expect = sc.Fail, sc.expect


def sh(*args, timeout=120):
    p = subprocess.run(["/bin/bash", CLUSTER_SH] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def log_tail(n=30):
    out = []
    for p in [os.path.join(STATE, "controller", "trainctld.log")]:
        try:
            with open(p, "rb") as f:
                lines = [x for x in f.read().decode("utf-8", "replace").splitlines()
                         if " debug http: " not in x]
        except OSError:
            continue
        out.append("--- %s ---" % os.path.relpath(p, STATE))
        out.extend(lines[-n:])
    return "\n".join(out)


def up():
    rc, out, err = sh("up", "--hosts", "2", "--prefix", PREFIX, "--net", NET, "--port", str(PORT),
                      "--instance-type", "ml.m5.xlarge", "--timeout", "60", "--trainctld", TRAINCTLD,
                      "--agent-path", AGENT_PATH, "--", "--grace-period", "2", "-v")
    if rc != 0:
        raise Fail("cluster.sh up: exit %d\n%s%s\n%s" % (rc, out, err, log_tail()))
    env = dict(re.findall(r"^export (\w+)=(.*)$", out, re.M))
    expect(env.get("TRAINCTL_ENDPOINT") and env.get("AWS_ACCESS_KEY_ID"), "exports: %s" % out)
    return env


def put(key, text):
    path = os.path.join(STATE, "controller", "state", "s3", BUCKET, key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def libsvm_text(y, x):
    return "".join("%d %s\n" % (yi, " ".join("%d:%.6g" % (j, v) for j, v in enumerate(xi)))
                   for yi, xi in zip(y, x))


def check_job(env):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(800, 5))
    y = (x @ np.array([1.5, -2.0, 1.0, 0.0, 0.5]) > 0).astype(int)
    put("data/train/a", libsvm_text(y[:300], x[:300]))
    put("data/train/b", libsvm_text(y[300:600], x[300:600]))
    put("data/validation/a", libsvm_text(y[600:], x[600:]))
    sm = sc.make_client(env["TRAINCTL_ENDPOINT"], key=env["AWS_ACCESS_KEY_ID"],
                        secret=env["AWS_SECRET_ACCESS_KEY"])

    def channel(name, dist):
        return {"ChannelName": name, "ContentType": "text/libsvm",
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                                "S3Uri": "s3://%s/data/%s/" % (BUCKET, name),
                                                "S3DataDistributionType": dist}}}

    sm.create_training_job(
        TrainingJobName="xgb-ssh",
        AlgorithmSpecification={"TrainingImage": IMAGE, "TrainingInputMode": "File"},
        RoleArn=sc.ROLE,
        HyperParameters={"num_round": "10", "objective": "binary:logistic",
                         "eval_metric": "auc", "max_depth": "3"},
        InputDataConfig=[channel("train", "ShardedByS3Key"),
                         channel("validation", "FullyReplicated")],
        OutputDataConfig={"S3OutputPath": "s3://%s/out" % BUCKET},
        ResourceConfig={"InstanceType": "ml.m5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 1},
        StoppingCondition={"MaxRuntimeInSeconds": 120})
    deadline = time.time() + 90
    while True:
        d = sm.describe_training_job(TrainingJobName="xgb-ssh")
        if d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            break
        if time.time() > deadline:
            raise Fail("still %s\n%s" % (d["TrainingJobStatus"], log_tail()))
        time.sleep(0.2)
    expect(d["TrainingJobStatus"] == "Completed",
           "%s: %s\n%s" % (d["TrainingJobStatus"], d.get("FailureReason"), log_tail()))
    auc = [m["Value"] for m in d.get("FinalMetricDataList", []) if m["MetricName"] == "validation:auc"]
    expect(auc and auc[0] > 0.85, "validation:auc %s" % d.get("FinalMetricDataList"))
    path = os.path.join(STATE, "controller", "state", "s3", BUCKET, "out", "xgb-ssh", "output",
                        "model.tar.gz")
    with tarfile.open(path) as tf:
        data = tf.extractfile("xgboost-model").read()
    # Loaded by another interpreter, as a user's own program would.
    code = ("import sys, xgboost; b = xgboost.Booster(); b.load_model(bytearray(sys.stdin.buffer.read()));"
            "print(b.num_boosted_rounds(), b.num_features())")
    p = subprocess.run(["/usr/bin/python3", "-c", code], input=data, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    expect(p.stdout.decode().split() == ["10", "5"],
           "model: %s %s" % (p.stdout.decode(), p.stderr.decode()[-500:]))


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (CAP_NET_ADMIN) for network namespaces")
        return 0
    if not os.access("/usr/sbin/sshd", os.X_OK):
        print("1..0 # SKIP no /usr/sbin/sshd (apt-get install openssh-server)")
        return 0
    tap = sc.Tap()
    try:
        env = tap.case("cluster.sh up --hosts 2 over SSH", up)
        if env:
            tap.case("2 hosts over SSH: XGBoost trains one model, validation:auc, model loads",
                     check_job, env)
    finally:
        args = ["down", "--prefix", PREFIX]
        if os.environ.get("TRAINCTL_TEST_KEEP") == "1":
            args.append("--keep")
        rc, out, err = sh(*args, timeout=60)
        tap.ok(rc == 0, "cluster.sh down", out + err)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
