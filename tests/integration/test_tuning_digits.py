#!/usr/bin/python3
"""A tuning job over a real training example: examples/digits (an MLP on
sklearn's digits) with examples/digits/tuning.json (Bayesian; learning rate
log-scaled, hidden size an integer, activation categorical; 12 jobs, 3 in
parallel) on trainctld --local-hosts 3:

  (a) through boto3: it completes, and the best job's held-out accuracy is
      better than the median job's
  (b) through the trainctl CLI (create-tuning-job --cli-input-json, wait,
      describe-tuning-job): the same

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_tuning_digits.py
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
import test_tuning as tt  # noqa: E402

sc = fl.sc
expect = sc.expect
REPO = fl.REPO
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def stage(cl):
    """The data and the code into the embedded store, as make demo does."""
    data = os.path.join(cl.state, "s3", "demo", "digits")
    code = os.path.join(cl.state, "s3", "demo", "code")
    os.makedirs(data, exist_ok=True)
    os.makedirs(code, exist_ok=True)
    shutil.copy(DIGITS, os.path.join(data, "digits.csv.gz"))
    with tarfile.open(os.path.join(code, "sourcedir.tar.gz"), "w:gz") as t:
        t.add(os.path.join(REPO, "examples", "digits", "train.py"), arcname="train.py")


def request(name):
    with open(os.path.join(REPO, "examples", "digits", "tuning.json")) as f:
        req = json.load(f)
    req["HyperParameterTuningJobName"] = name
    return req


def check(sm, name, d):
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    kids = tt.children(sm, name)
    vals = [k["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] for k in kids
            if k.get("FinalHyperParameterTuningJobObjectiveMetric")]
    expect(len(kids) == 12 and len(vals) == 12, "12 jobs with an objective: %s" % sc.short(kids))
    best = d["BestTrainingJob"]["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
    expect(best == max(vals), "best %s is the highest of %s" % (best, vals))
    expect(best > statistics.median(vals), "best %s vs median %s" % (best, statistics.median(vals)))
    hp = d["BestTrainingJob"]["TunedHyperParameters"]
    expect(set(hp) == {"learning-rate", "hidden", "activation"}, "tuned %s" % hp)
    return "best accuracy %.4f, median %.4f, with %s" % (best, statistics.median(vals), hp)


def case_a(cl, sm):
    sm.create_hyper_parameter_tuning_job(**request("digits-boto3"))
    d = tt.wait_tuning(sm, "digits-boto3", timeout=600)
    return check(sm, "digits-boto3", d)


def case_b(cl, sm):
    env = dict(os.environ, TRAINCTL_ENDPOINT=cl.endpoint)
    path = os.path.join(cl.tmp, "tuning.json")
    with open(path, "w") as f:
        json.dump(request("digits-cli"), f)
    r = subprocess.run([fl.TRAINCTL, "create-tuning-job", "--cli-input-json", "file://" + path],
                       env=env, capture_output=True, text=True, timeout=60)
    expect(r.returncode == 0 and "hyper-parameter-tuning-job/digits-cli" in r.stdout,
           "create-tuning-job: %s %s" % (r.stdout, r.stderr))
    r = subprocess.run([fl.TRAINCTL, "wait", "--tuning-job", "digits-cli", "--timeout", "600"],
                       env=env, capture_output=True, text=True, timeout=660)
    expect(r.returncode == 0, "wait: %s %s" % (r.stdout, r.stderr))
    r = subprocess.run([fl.TRAINCTL, "describe-tuning-job", "digits-cli", "--output", "json"],
                       env=env, capture_output=True, text=True, timeout=60)
    expect(r.returncode == 0, "describe-tuning-job: %s" % r.stderr)
    d = json.loads(r.stdout)
    return check(sm, "digits-cli", d)


def main():
    tap = sc.Tap()
    cl = fl.LocalCluster(3, [], prefix="trainctl-tune-digits-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 3 starts", err):
        stage(cl)
        sm = cl.client()
        for name, fn in (("(a) digits tuning through boto3: best better than the median", case_a),
                         ("(b) digits tuning through the trainctl CLI: best better than the median", case_b)):
            r = tap.case(name, fn, cl, sm)
            if isinstance(r, str):
                tap.note(r)
    rc, killed = cl.stop()
    cl.check_stopped(tap, rc, killed)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
