#!/usr/bin/python3
"""SageMaker's built-in XGBoost (algorithm mode) through trainctld.

Starts its own `trainctld --local-hosts 2` with a temp state dir and sends
what the SageMaker SDK sends for `Estimator(image_uris.retrieve("xgboost",
region, "1.7-1"), ...)`: the algorithm's image, no program, SageMaker's
hyperparameters, no MetricDefinitions. Data is generated here into the
embedded store.

  - regression on CSV, one host; binary classification on libsvm, two
    hosts sharding the data (ShardedByS3Key); binary classification on CSV,
    two hosts; regression on libsvm, one host: each Completes, reports its
    validation metric (FinalMetricDataList, the built-in name), and its
    model.tar.gz holds xgboost-model, which xgboost loads and which
    predicts the validation data well;
  - the regression's checkpoints reach CheckpointConfig.S3Uri, and a job
    on the same prefix resumes after them (what a retried attempt does);
  - a tuning job on validation:rmse without MetricDefinitions: each
    training job's objective is its validation:rmse, the best is the least;
  - refusals: another built-in algorithm (kmeans) and an XGBoost version
    not served fail as a ClientError naming --image-map; an unknown
    hyperparameter fails naming it, so do ContainerArguments other than
    train; a value out of range fails with the runner's reason.

TAP on stdout. Run from the top of the tree:
    /usr/bin/python3 tests/integration/test_xgboost.py
"""
import io
import os
import subprocess
import sys
import tarfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import numpy as np  # noqa: E402
import xgboost  # noqa: E402

import smcompat as sc  # noqa: E402

sc.hermetic_env()

Fail, expect = sc.Fail, sc.expect
BUILD = os.environ.get("BUILD", "build")
TRAINCTL = os.path.join(BUILD if os.path.isabs(BUILD) else os.path.join(REPO, BUILD),
                        "bin", "trainctl")
BUCKET = "trainctl-xgb"
OUT = "s3://%s/out" % BUCKET
IMAGE = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1"
KMEANS = "382416733822.dkr.ecr.us-east-1.amazonaws.com/kmeans:1"


def regression(n, rng):
    x = rng.normal(size=(n, 4))
    return x @ np.array([1.0, 2.0, -1.0, 0.5]) + rng.normal(scale=0.05, size=n), x


def classification(n, rng):
    x = rng.normal(size=(n, 5))
    return (x @ np.array([1.5, -2.0, 1.0, 0.0, 0.5]) > 0).astype(int), x


def csv_text(y, x):
    buf = io.StringIO()
    np.savetxt(buf, np.column_stack([y, x]), delimiter=",", fmt="%.6g")
    return buf.getvalue()


def libsvm_text(y, x):
    return "".join("%g %s\n" % (yi, " ".join("%d:%.6g" % (j, v) for j, v in enumerate(xi)))
                   for yi, xi in zip(y, x))


class Store:
    """Objects written straight into the embedded store's folder."""

    def __init__(self, daemon):
        self.root = os.path.join(daemon.state_dir, "s3", BUCKET)

    def put(self, key, text):
        path = os.path.join(self.root, key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return "s3://%s/%s" % (BUCKET, os.path.dirname(key) + "/")

    def model(self, job):
        path = os.path.join(self.root, "out", job, "output", "model.tar.gz")
        with tarfile.open(path) as tf:
            names = tf.getnames()
            expect(names == ["xgboost-model"], "%s: model.tar.gz holds %s" % (job, names))
            data = tf.extractfile("xgboost-model").read()
        bst = xgboost.Booster()
        bst.load_model(bytearray(data))
        return bst


class Data:
    """The data sets, each as (S3 prefix of train, of validation, content
    type, validation arrays)."""

    def __init__(self, store):
        rng = np.random.default_rng(5)
        self.sets = {}
        y, x = regression(400, rng)
        vy, vx = regression(100, rng)
        self.sets["reg-csv"] = (store.put("reg-csv/train/a.csv", csv_text(y, x)),
                                store.put("reg-csv/validation/v.csv", csv_text(vy, vx)),
                                "text/csv", vy, vx)
        self.sets["reg-libsvm"] = (store.put("reg-libsvm/train/a", libsvm_text(y, x)),
                                   store.put("reg-libsvm/validation/v", libsvm_text(vy, vx)),
                                   "text/libsvm", vy, vx)
        y, x = classification(600, rng)
        vy, vx = classification(200, rng)
        # Two objects per channel: ShardedByS3Key gives each host one.
        for kind, text in (("csv", csv_text), ("libsvm", libsvm_text)):
            name = "cls-" + kind
            store.put(name + "/train/a", text(y[:300], x[:300]))
            train = store.put(name + "/train/b", text(y[300:], x[300:]))
            store.put(name + "/validation/a", text(vy[:100], vx[:100]))
            val = store.put(name + "/validation/b", text(vy[100:], vx[100:]))
            self.sets[name] = (train, val, "text/" + kind, vy, vx)


def channels(train, val, ctype, sharded):
    dist = "ShardedByS3Key" if sharded else "FullyReplicated"
    return [{"ChannelName": name, "ContentType": ctype, "CompressionType": "None",
             "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": uri,
                                             "S3DataDistributionType": dist}}}
            for name, uri in (("train", train), ("validation", val))]


def request(name, hps, chans, count=1, image=IMAGE):
    """What the SDK's Estimator sends for a built-in algorithm image."""
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": image, "TrainingInputMode": "File"},
        "RoleArn": sc.ROLE,
        "HyperParameters": hps,
        "InputDataConfig": chans,
        "OutputDataConfig": {"S3OutputPath": OUT},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": count,
                           "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 120},
        # The SDK's defaults for an Estimator.
        "DebugHookConfig": {"S3OutputPath": OUT, "CollectionConfigurations": []},
        "ProfilerConfig": {"S3OutputPath": OUT, "DisableProfiler": False},
    }


def wait_end(sm, name, timeout=90):
    deadline = time.time() + timeout
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        if d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            return d
        if time.time() > deadline:
            raise Fail("%s still %s after %d s" % (name, d["TrainingJobStatus"], timeout))
        time.sleep(0.2)


def final_metric(d, name):
    for m in d.get("FinalMetricDataList") or []:
        if m["MetricName"] == name:
            return m["Value"]
    return None


def job_log(endpoint, name, want, timeout=15):
    """`trainctl logs NAME`, read again until every string of want is in
    it (log lines may trail the status by a moment)."""
    env = dict(os.environ, AWS_ACCESS_KEY_ID=sc.KEY, AWS_SECRET_ACCESS_KEY=sc.SECRET)
    deadline = time.time() + timeout
    while True:
        r = subprocess.run([TRAINCTL, "--endpoint", endpoint, "logs", name],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=30)
        out = r.stdout.decode("utf-8", "replace")
        if (r.returncode == 0 and all(w in out for w in want)) or time.time() > deadline:
            return out
        time.sleep(0.3)


def check_log(endpoint, name, ctype, count):
    """Each host says what it runs; only the first prints rounds (the log
    names hosts when there are several)."""
    kind = ctype.split("/")[1]
    hosts = "%d host%s" % (count, "" if count == 1 else "s")
    tags = ["[algo-%d] " % (i + 1) for i in range(count)] if count > 1 else [""]
    out = job_log(endpoint, name, [t + "xgboost " for t in tags] + [tags[0] + "[11]#011train-"])
    lines = out.splitlines()
    for t in tags:
        pre = [x for x in lines if x.startswith(t + "xgboost ")]
        expect(pre and "(built-in algorithm, %s data, %s)" % (kind, hosts) in pre[0],
               "%s: preamble %s\n%s" % (name, pre, out[-1500:]))
    rounds = [x for x in lines if "]#011train-" in x]
    expect(len(rounds) == 12 and all(x.startswith(tags[0] + "[") for x in rounds),
           "%s: 12 rounds from algo-1 only:\n%s" % (name, out[-1500:]))


def check_trained(sm, store, data, name, kind, count, objective, metric, ckpt=None):
    train, val, ctype, vy, vx = data.sets[kind]
    hps = {"num_round": "12", "max_depth": "3", "eta": "0.3", "objective": objective}
    if metric != "rmse":
        hps["eval_metric"] = metric
    req = request(name, hps, channels(train, val, ctype, count > 1), count)
    if ckpt:
        req["CheckpointConfig"] = {"S3Uri": ckpt}
    sm.create_training_job(**req)
    d = wait_end(sm, name)
    expect(d["TrainingJobStatus"] == "Completed",
           "%s: %s %s" % (name, d["TrainingJobStatus"], d.get("FailureReason")))
    got = final_metric(d, "validation:" + metric)
    expect(got is not None, "%s: no validation:%s in %s" % (name, metric, d.get("FinalMetricDataList")))
    check_log(sm.meta.endpoint_url, name, ctype, count)
    bst = store.model(name)
    # The libsvm files number features from 0: the same columns as CSV's.
    pred = bst.predict(xgboost.DMatrix(vx))
    if metric == "rmse":
        mine = float(np.sqrt(np.mean((pred - vy) ** 2)))
        expect(mine < 1.0 and abs(mine - got) < 1e-3,
               "%s: reported rmse %s, the model's %.5f" % (name, got, mine))
    else:
        from sklearn.metrics import roc_auc_score
        mine = roc_auc_score(vy, pred)
        expect(mine > 0.85 and abs(mine - got) < 0.01,
               "%s: reported auc %s, the model's %.5f" % (name, got, mine))


CKPT = "s3://%s/ckpt/run-1" % BUCKET


def check_checkpoints(sm, store, data):
    """xgb-reg-csv's checkpoints reach CheckpointConfig.S3Uri; a job that
    finds them there (as a retried attempt does) goes on from the newest."""
    folder = os.path.join(store.root, "ckpt", "run-1")
    names = sorted(os.listdir(folder), key=lambda n: int(n.split(".")[1])) \
        if os.path.isdir(folder) else []
    # The store keeps what the host pruned too: the newest is what counts.
    expect(names and names[-1] == "xgboost-checkpoint.11",
           "the checkpoints in the store: %s" % names)
    train, val, ctype, _, _ = data.sets["reg-csv"]
    name = "xgb-ckpt"
    req = request(name, {"num_round": "15", "max_depth": "3", "eta": "0.3"},
                  channels(train, val, ctype, False))
    req["CheckpointConfig"] = {"S3Uri": CKPT}
    sm.create_training_job(**req)
    d = wait_end(sm, name)
    expect(d["TrainingJobStatus"] == "Completed",
           "%s: %s %s" % (name, d["TrainingJobStatus"], d.get("FailureReason")))
    out = job_log(sm.meta.endpoint_url, name, ["resuming from", "[14]#011"])
    expect("resuming from xgboost-checkpoint.11: round 13 of 15" in out and "[11]#011" not in out,
           "%s resumes after round 12:\n%s" % (name, out[-1500:]))
    expect(store.model(name).num_boosted_rounds() == 15, "15 rounds in the model")


def check_tuning(sm, data):
    train, val, ctype, _, _ = data.sets["reg-csv"]
    definition = request("unused", {"num_round": "6", "max_depth": "3"},
                         channels(train, val, ctype, False))
    for k in ("TrainingJobName", "HyperParameters", "DebugHookConfig", "ProfilerConfig"):
        definition.pop(k)
    definition["StaticHyperParameters"] = {"num_round": "6", "max_depth": "3"}
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="xgb-tune",
        HyperParameterTuningJobConfig={
            "Strategy": "Random",
            "HyperParameterTuningJobObjective": {"Type": "Minimize",
                                                 "MetricName": "validation:rmse"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 2, "MaxParallelTrainingJobs": 2},
            "ParameterRanges": {"ContinuousParameterRanges": [
                {"Name": "eta", "MinValue": "0.05", "MaxValue": "0.5"}]}},
        TrainingJobDefinition=definition)
    deadline = time.time() + 90
    while True:
        d = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="xgb-tune")
        if d["HyperParameterTuningJobStatus"] not in ("InProgress", "Stopping"):
            break
        if time.time() > deadline:
            raise Fail("tuning still %s" % d["HyperParameterTuningJobStatus"])
        time.sleep(0.3)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    kids = sm.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="xgb-tune")["TrainingJobSummaries"]
    expect(len(kids) == 2, "2 training jobs: %s" % sc.short(kids))
    values = {}
    for k in kids:
        obj = k.get("FinalHyperParameterTuningJobObjectiveMetric") or {}
        expect(obj.get("MetricName") == "validation:rmse", sc.short(k))
        job = sm.describe_training_job(TrainingJobName=k["TrainingJobName"])
        expect(abs(final_metric(job, "validation:rmse") - obj["Value"]) < 1e-6,
               "objective is the job's validation:rmse: %s" % sc.short(k))
        values[k["TrainingJobName"]] = obj["Value"]
    best = d["BestTrainingJob"]
    expect(best["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] == min(values.values()),
           "best %s of %s" % (sc.short(best), values))


def check_refused(sm, data):
    train, val, ctype, _, _ = data.sets["reg-csv"]
    chans = channels(train, val, ctype, False)
    cases = [
        ("xgb-kmeans", request("xgb-kmeans", {"k": "3"}, chans, image=KMEANS),
         ["ClientError", "'kmeans'", "--image-map"]),
        ("xgb-old", request("xgb-old", {"num_round": "3"}, chans,
                            image=IMAGE.replace("1.7-1", "1.5-1")),
         ["ClientError", "'1.5-1'", "served: 1.7-1", "--image-map"]),
        ("xgb-unknown", request("xgb-unknown", {"num_round": "3", "epochs": "3"}, chans),
         ["ClientError", "'epochs'"]),
        ("xgb-range", request("xgb-range", {"num_round": "3", "eta": "2"}, chans),
         ["'eta'", "[0, 1]"]),
        ("xgb-args", request("xgb-args", {"num_round": "3"}, chans),
         ["ClientError", "ContainerArguments"]),
    ]
    cases[-1][1]["AlgorithmSpecification"]["ContainerArguments"] = ["serve"]
    for name, req, _ in cases:
        sm.create_training_job(**req)
    for name, _, words in cases:
        d = wait_end(sm, name, timeout=60)
        reason = d.get("FailureReason") or ""
        expect(d["TrainingJobStatus"] == "Failed", "%s: %s" % (name, d["TrainingJobStatus"]))
        for w in words:
            expect(w in reason, "%s: %r does not say %r" % (name, reason, w))


def main():
    tap = sc.Tap()
    daemon = sc.Daemon(extra=["--local-hosts", "2", "--grace-period", "2"])
    err = daemon.start()
    if not tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
        return tap.finish()
    tap.log_hint = daemon.log_tail
    try:
        sm = sc.make_client(daemon.endpoint)
        store = Store(daemon)
        data = Data(store)
        runs = [
            ("regression, CSV, one host", "xgb-reg-csv", "reg-csv", 1, "reg:squarederror", "rmse",
             CKPT),
            ("binary classification, libsvm, two hosts sharded", "xgb-cls-libsvm", "cls-libsvm",
             2, "binary:logistic", "auc"),
            ("binary classification, CSV, two hosts sharded", "xgb-cls-csv", "cls-csv", 2,
             "binary:logistic", "auc"),
            ("regression, libsvm, one host", "xgb-reg-libsvm", "reg-libsvm", 1,
             "reg:squarederror", "rmse"),
        ]
        results = {}

        def run(key, fn, *args):
            try:
                fn(*args)
                results[key] = None
            except Exception as e:  # reported by the case below
                results[key] = e

        # Everything at once: the two hosts are the bottleneck, so the
        # scheduler keeps them busy.
        work = [(r[0], check_trained, sm, store, data) + r[1:] for r in runs]
        work.append(("tuning", check_tuning, sm, data))
        work.append(("refused", check_refused, sm, data))
        threads = [threading.Thread(target=run, args=w) for w in work]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        def result(key):
            if results.get(key):
                raise results[key]

        for r in runs:
            tap.case(r[0] + ": Completed, validation metric, model loads", result, r[0])
        tap.case("checkpoints in CheckpointConfig.S3Uri, resumed by the next job",
                 check_checkpoints, sm, store, data)
        tap.case("a tuning job on validation:rmse, no MetricDefinitions", result, "tuning")
        tap.case("other algorithms, versions, hyperparameters refused by name", result,
                 "refused")
    finally:
        if tap.failed:
            tap.note(daemon.log_tail(40))
        daemon.stop()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
