#!/usr/bin/python3
"""The built-in XGBoost algorithm's runner on its own, without daemons.

runtime/python/trainctl_algorithms/xgb.py runs here as a job's host runs
it (python3 -m trainctl_algorithms.xgb train), on job folders laid out as
SageMaker's and pointed at by the SM_* variables:

  - its hyperparameter and metric tables match api/algorithm.c's (the
    controller refuses by name what the runner would refuse);
  - values are checked as documented (types, ranges, categories, JSON-quoted
    strings as the SDK's framework estimators send them);
  - a regression on CSV with csv_weights on one host: an evaluation line per
    round ("[i]#011train-rmse:...#011validation-rmse:..."), early stopping,
    xgboost-model that xgboost.Booster loads and that predicts well;
  - SageMaker's own metrics (accuracy, f1, ..., mse, r2) as scikit-learn
    computes them, counted over both hosts' data;
  - a checkpoint per round, and a second run that resumes from the newest
    (one host, and two hosts together);
  - a binary classification on libsvm over two hosts (two processes, the
    first runs the tracker): one model, saved by the first host only, the
    same as the metrics both hosts' data give;
  - faults (a header line in CSV, an unknown ContentType) end with status
    1 and the reason in output/failure.

TAP on stdout. Run from the top of the tree:
    /usr/bin/python3 tests/integration/test_xgb_runner.py
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUNTIME = os.path.join(REPO, "runtime", "python")
sys.path.insert(0, RUNTIME)
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import numpy as np  # noqa: E402
import xgboost  # noqa: E402

import smcompat as sc  # noqa: E402
from trainctl_algorithms import xgb  # noqa: E402

Fail, expect = sc.Fail, sc.expect
PY = "/usr/bin/python3"
ROUND = re.compile(r"^\[(\d+)\]#011(.*)$")


def c_tables():
    """api/algorithm.c's hyperparameters ({name: served}) and metrics."""
    with open(os.path.join(REPO, "api", "algorithm.c"), encoding="utf-8") as f:
        text = f.read()
    hps = {m.group(1): m.group(2) == "1"
           for m in re.finditer(r'\{ "([a-z_]+)", ([01]) \}', text)}
    block = text[text.index("xgb_metrics[] = {"):]
    block = block[:block.index("};")]
    return hps, re.findall(r'"([a-z0-9_-]+)"', block)


def check_tables():
    hps, metrics = c_tables()
    expect(len(hps) > 40, "api/algorithm.c: %d hyperparameters read" % len(hps))
    served = {k for k, v in hps.items() if v}
    not_served = {k for k, v in hps.items() if not v}
    expect(served == set(xgb.HYPERPARAMETERS),
           "served: only in C %s, only in Python %s" % (
               sorted(served - set(xgb.HYPERPARAMETERS)),
               sorted(set(xgb.HYPERPARAMETERS) - served)))
    expect(not_served == set(xgb.NOT_SERVED),
           "not served: C %s, Python %s" % (sorted(not_served), sorted(xgb.NOT_SERVED)))
    expect(metrics == list(xgb.EVAL_METRICS),
           "metrics: C %s, Python %s" % (metrics, list(xgb.EVAL_METRICS)))


def refused(raw, words):
    try:
        xgb.xgb_params(xgb.parse_hyperparameters(raw))
    except xgb.UserError as e:
        for w in words:
            expect(w in str(e), "%s: %r does not say %r" % (raw, str(e), w))
        return
    raise Fail("%s accepted" % raw)


def check_values():
    hps = xgb.parse_hyperparameters({
        "num_round": '"12"', "eta": "0.1", "max_depth": "4",
        "objective": '"binary:logistic"', "eval_metric": "auc,logloss",
        "sagemaker_region": '"us-east-1"', "subsample": "1",
        "_tuning_objective_metric": "validation:error"})
    expect(hps["num_round"] == 12 and hps["eta"] == 0.1 and hps["max_depth"] == 4,
           "typed values: %s" % hps)
    params = xgb.xgb_params(hps)
    expect(params["objective"] == "binary:logistic", "objective: %s" % params)
    expect(params["eval_metric"] == ["auc", "logloss", "error"],
           "the tuning objective's metric is evaluated too: %s" % params)
    expect("num_round" not in params and "sagemaker_region" not in params,
           "runner-only values stay out of xgboost's: %s" % params)
    expect(xgb.xgb_params(xgb.parse_hyperparameters({"num_round": "1"}))["objective"]
           == "reg:squarederror", "default objective")
    refused({"eta": "0.1"}, ["num_round", "required"])
    refused({"num_round": "0"}, ["'num_round'", "[1, inf)"])
    refused({"num_round": "2.5"}, ["'num_round'", "integer"])
    refused({"num_round": "5", "eta": "1.5"}, ["'eta'", "[0, 1]"])
    refused({"num_round": "5", "subsample": "0"}, ["'subsample'", "(0, 1]"])
    refused({"num_round": "5", "booster": "forest"}, ["'booster'", "gbtree"])
    refused({"num_round": "5", "epochs": "3"}, ["'epochs'", "not one of"])
    refused({"num_round": "5", "_kfold": "3"}, ["'_kfold'", "not served"])
    refused({"num_round": "5", "eval_metric": "rmse,nope"}, ["'nope'", "f1_binary"])
    hps = xgb.parse_hyperparameters({"num_round": "5", "eval_metric": "auc,f1,accuracy",
                                     "_tuning_objective_metric": "validation:r2"})
    expect(xgb.xgb_params(hps)["eval_metric"] == ["auc"] and
           xgb.custom_metrics(hps) == ["f1", "accuracy", "r2"],
           "SageMaker's own metrics are computed beside xgboost's: %s %s"
           % (xgb.xgb_params(hps), xgb.custom_metrics(hps)))
    refused({"num_round": "5", "objective": "multi:softmax"}, ["num_class"])
    refused({"num_round": "5", "_tuning_objective_metric": "train:rmse"},
            ["train:rmse", "validation"])
    expect(xgb.content_type(None) == "libsvm", "no ContentType: libsvm")
    expect(xgb.content_type("text/csv; label_size=1") == "csv", "csv with label_size=1")
    expect(xgb.content_type("text/x-libsvm") == "libsvm", "text/x-libsvm")
    for bad in ("application/x-parquet", "text/csv;label_size=2"):
        try:
            xgb.content_type(bad)
        except xgb.UserError:
            continue
        raise Fail("ContentType %s accepted" % bad)


def check_csv_missing(root):
    """Empty CSV fields are missing values (the line reader takes over
    from numpy's)."""
    os.makedirs(root)
    path = os.path.join(root, "gap.csv")
    with open(path, "w") as f:
        f.write("1,2,,4\n0,1,2,3\n")
    y, w, x = xgb.read_csv([path], False)
    expect(list(y) == [1, 0] and w is None and x.shape == (2, 3) and np.isnan(x[0, 1]),
           "read: %s %s" % (y, x))


def check_metric_values():
    """SageMaker's own metrics equal scikit-learn's on the same data."""
    from sklearn import metrics as skm
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, size=200)
    c = np.where(rng.random(200) < 0.7, y, rng.integers(0, 3, size=200))
    m = xgb.confusion(y.astype(np.float32), c, 3)
    want = {"accuracy": skm.accuracy_score(y, c),
            "balanced_accuracy": skm.balanced_accuracy_score(y, c),
            "f1": skm.f1_score(y, c, average="macro"),
            "f1_macro": skm.f1_score(y, c, average="macro"),
            "precision_macro": skm.precision_score(y, c, average="macro"),
            "precision_micro": skm.precision_score(y, c, average="micro"),
            "recall_macro": skm.recall_score(y, c, average="macro"),
            "recall_micro": skm.recall_score(y, c, average="micro")}
    for name, v in want.items():
        got = xgb.class_metric(name, m)
        expect(abs(got - v) < 1e-9, "%s: %s, scikit-learn %s" % (name, got, v))
    yb, cb = y % 2, c % 2
    mb = xgb.confusion(yb.astype(np.float32), cb, 2)
    for name, v in (("precision", skm.precision_score(yb, cb)), ("recall", skm.recall_score(yb, cb)),
                    ("f1_binary", skm.f1_score(yb, cb))):
        got = xgb.class_metric(name, mb)
        expect(abs(got - v) < 1e-9, "%s: %s, scikit-learn %s" % (name, got, v))
    probs = np.column_stack([1 - c / 3.0, c / 3.0, np.zeros(200)])
    expect((xgb.predicted_classes(probs.ravel(), "multi:softprob", 200) == np.argmax(probs, 1)).all(),
           "softprob's classes")
    expect(list(xgb.predicted_classes(np.array([0.2, 0.7]), "binary:logistic", 2)) == [0, 1] and
           list(xgb.predicted_classes(np.array([-0.2, 0.7]), "binary:logitraw", 2)) == [0, 1],
           "binary classes")
    try:
        xgb.confusion(np.array([0.0, 3.0]), np.array([0, 1]), 2)
    except xgb.UserError as e:
        expect("labels 0..1" in str(e), str(e))
    else:
        raise Fail("label 3 of a binary classification accepted")


def regression(n, rng):
    x = rng.normal(size=(n, 4))
    return x @ np.array([1.0, 2.0, -1.0, 0.5]) + rng.normal(scale=0.05, size=n), x


def classification(n, rng):
    x = rng.normal(size=(n, 6))
    return (x @ np.array([1.5, -2.0, 1.0, 0.0, 0.5, 0.0]) > 0).astype(int), x


def write_csv(path, y, x, w=None):
    cols = [y] + ([w] if w is not None else []) + [x]
    np.savetxt(path, np.column_stack(cols), delimiter=",", fmt="%.6g")


def write_libsvm(path, y, x):
    with open(path, "w") as f:
        for yi, xi in zip(y, x):
            feats = " ".join("%d:%.6g" % (j + 1, v) for j, v in enumerate(xi) if v != 0)
            f.write("%d %s\n" % (yi, feats))


def job_dir(root, host, hosts, hps, channels):
    """A job folder as SageMaker lays it out; channels: {name: (type, files)}
    with files {name: writer(path)}."""
    d = os.path.join(root, host)
    conf = os.path.join(d, "input", "config")
    os.makedirs(conf)
    idc = {}
    for name, (ctype, files) in channels.items():
        folder = os.path.join(d, "input", "data", name)
        os.makedirs(folder)
        for fname, writer in files.items():
            writer(os.path.join(folder, fname))
        idc[name] = {"ContentType": ctype, "TrainingInputMode": "File",
                     "S3DistributionType": "ShardedByS3Key"} if ctype else {}
    for fname, obj in (("hyperparameters.json", hps), ("inputdataconfig.json", idc),
                       ("resourceconfig.json", {"hosts": hosts, "current_host": host})):
        with open(os.path.join(conf, fname), "w") as f:
            json.dump(obj, f)
    return d


def start(d, extra_env=None):
    env = dict(os.environ, PYTHONPATH=RUNTIME, SM_INPUT_CONFIG_DIR=d + "/input/config",
               SM_INPUT_DIR=d + "/input", SM_MODEL_DIR=d + "/model",
               SM_OUTPUT_DIR=d + "/output", TRAINCTL_CHECKPOINT_DIR=d + "/checkpoints",
               OMP_NUM_THREADS="1")
    env.update(extra_env or {})
    return subprocess.Popen([PY, "-m", "trainctl_algorithms.xgb", "train"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=d)


def finish(p, timeout=60):
    out = p.communicate(timeout=timeout)[0].decode("utf-8", "replace")
    return p.returncode, out


def rounds(out):
    """[(round, {name: value})] of the evaluation lines."""
    got = []
    for line in out.splitlines():
        m = ROUND.match(line)
        if m:
            vals = dict(item.split(":", 1) for item in m.group(2).split("#011"))
            got.append((int(m.group(1)), {k: float(v) for k, v in vals.items()}))
    return got


def check_one_host(root):
    rng = np.random.default_rng(7)
    y, x = regression(400, rng)
    vy, vx = regression(100, rng)
    w = np.ones(400)
    d = job_dir(root, "algo-1", ["algo-1"],
                {"num_round": "40", "eta": "0.3", "max_depth": "4", "csv_weights": "1",
                 "early_stopping_rounds": "3", "eval_metric": "rmse,mae,mse,r2"},
                {"train": ("text/csv", {"a.csv": lambda p: write_csv(p, y[:200], x[:200], w[:200]),
                                        "b.csv": lambda p: write_csv(p, y[200:], x[200:], w[200:])}),
                 "validation": ("text/csv", {"v.csv": lambda p: write_csv(p, vy, vx, np.ones(100))})})
    rc, out = finish(start(d))
    expect(rc == 0, "exit %d:\n%s" % (rc, out[-2000:]))
    got = rounds(out)
    expect(len(got) >= 5, "evaluation lines:\n%s" % out[-2000:])
    expect([r for r, _ in got] == list(range(len(got))), "rounds in order: %s" % got)
    expect(set(got[0][1]) == {d + "-" + m for d in ("train", "validation")
                              for m in ("rmse", "mae", "mse", "r2")},
           "metrics of a round: %s" % got[0][1])
    # r2 is the last metric and rises: early stopping must not stop at
    # the first round as if it were a loss.
    expect(len(got) > 10, "early stopping on r2 stopped after %d rounds" % len(got))
    expect(got[-1][1]["validation-rmse"] < got[0][1]["validation-rmse"] / 3,
           "validation-rmse falls: %s" % [v["validation-rmse"] for _, v in got])
    bst = xgboost.Booster(model_file=os.path.join(d, "model", "xgboost-model"))
    pred = bst.predict(xgboost.DMatrix(vx))
    rmse = float(np.sqrt(np.mean((pred - vy) ** 2)))
    expect(rmse < 1.0 and bst.num_features() == 4,
           "the saved model predicts: rmse %.3f, %d features" % (rmse, bst.num_features()))
    from sklearn.metrics import r2_score
    last = got[-1][1]
    expect(abs(last["validation-mse"] - rmse ** 2) < 1e-3 and
           abs(last["validation-r2"] - r2_score(vy, pred)) < 1e-3,
           "mse %s r2 %s; the model's %.5f %.5f" % (last["validation-mse"], last["validation-r2"],
                                                  rmse ** 2, r2_score(vy, pred)))


def set_hps(d, hps):
    with open(os.path.join(d, "input", "config", "hyperparameters.json"), "w") as f:
        json.dump(hps, f)


def check_resume(root):
    rng = np.random.default_rng(9)
    y, x = regression(200, rng)
    d = job_dir(root, "algo-1", ["algo-1"], {"num_round": "4"},
                {"train": ("text/csv", {"a.csv": lambda p: write_csv(p, y, x)})})
    rc, out = finish(start(d))
    expect(rc == 0 and len(rounds(out)) == 4, "first run: exit %d\n%s" % (rc, out[-1500:]))
    ckpt = os.path.join(d, "checkpoints")
    expect(sorted(os.listdir(ckpt)) == ["xgboost-checkpoint.%d" % i for i in range(4)],
           "a checkpoint per round: %s" % os.listdir(ckpt))
    set_hps(d, {"num_round": "7"})
    rc, out = finish(start(d))
    expect(rc == 0 and "resuming from xgboost-checkpoint.3: round 5 of 7" in out,
           "second run: exit %d\n%s" % (rc, out[-1500:]))
    expect([r for r, _ in rounds(out)] == [4, 5, 6], "rounds 4..6 only:\n%s" % out[-1500:])
    expect(sorted(os.listdir(ckpt), key=lambda n: int(n.split(".")[1]))
           == ["xgboost-checkpoint.%d" % i for i in range(2, 7)],
           "the newest 5 kept: %s" % os.listdir(ckpt))
    bst = xgboost.Booster(model_file=os.path.join(d, "model", "xgboost-model"))
    expect(bst.num_boosted_rounds() == 7, "7 rounds saved: %d" % bst.num_boosted_rounds())
    # All rounds done: the model is saved again, nothing trains.
    rc, out = finish(start(d))
    expect(rc == 0 and not rounds(out) and "round 8 of 7" in out, "third run:\n%s" % out[-800:])


def check_two_hosts(root):
    rng = np.random.default_rng(11)
    y, x = classification(600, rng)
    vy, vx = classification(200, rng)
    hosts = ["algo-1", "algo-2"]
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs, dirs = [], []
    for i, h in enumerate(hosts):
        part = slice(300 * i, 300 * (i + 1))
        vpart = slice(100 * i, 100 * (i + 1))
        d = job_dir(root, h, hosts,
                    {"num_round": '"8"', "objective": '"binary:logistic"',
                     "eval_metric": '"auc,accuracy,f1_binary"', "max_depth": "3"},
                    {"train": ("text/libsvm", {"t.libsvm": lambda p, s=part: write_libsvm(p, y[s], x[s])}),
                     "validation": ("text/libsvm",
                                    {"v.libsvm": lambda p, s=vpart: write_libsvm(p, vy[s], vx[s])})})
        dirs.append(d)
        procs.append(start(d, {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}))
    res = [finish(p) for p in procs]
    for h, (rc, out) in zip(hosts, res):
        expect(rc == 0, "%s: exit %d:\n%s" % (h, rc, out[-2000:]))
    got = rounds(res[0][1])
    expect(len(got) == 8, "algo-1 prints 8 rounds:\n%s" % res[0][1][-2000:])
    expect(not rounds(res[1][1]), "algo-2 prints no rounds:\n%s" % res[1][1][-1000:])
    expect("2 hosts" in res[0][1], "the preamble names the hosts:\n%s" % res[0][1][:500])
    expect(not os.path.exists(os.path.join(dirs[1], "model", "xgboost-model")),
           "algo-2 saves no model")
    bst = xgboost.Booster(model_file=os.path.join(dirs[0], "model", "xgboost-model"))
    expect(bst.num_boosted_rounds() == 8, "8 rounds saved: %d" % bst.num_boosted_rounds())
    # A retried attempt: both hosts hold algo-1's checkpoints (restored
    # from CheckpointConfig.S3Uri) and go on from the newest, together.
    shutil.copytree(os.path.join(dirs[0], "checkpoints"), os.path.join(dirs[1], "checkpoints"))
    for d in dirs:
        set_hps(d, {"num_round": "10", "objective": "binary:logistic", "eval_metric": "auc",
                    "max_depth": "3"})
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port2 = s.getsockname()[1]
    s.close()
    procs = [start(d, {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port2)}) for d in dirs]
    again = [finish(p) for p in procs]
    for h, (rc, out) in zip(hosts, again):
        expect(rc == 0 and "resuming from xgboost-checkpoint.7" in out,
               "%s resumes: exit %d\n%s" % (h, rc, out[-1500:]))
    expect([r for r, _ in rounds(again[0][1])] == [8, 9], "rounds 8, 9:\n%s" % again[0][1][-1500:])
    resumed = xgboost.Booster(model_file=os.path.join(dirs[0], "model", "xgboost-model"))
    expect(resumed.num_boosted_rounds() == 10, "10 rounds: %d" % resumed.num_boosted_rounds())
    # The metric is over both hosts' validation data (xgboost weighs the
    # hosts' AUCs together), not algo-1's half alone.
    auc = got[-1][1]["validation-auc"]
    from sklearn.metrics import roc_auc_score
    # libsvm's indices are the columns, as xgboost reads them: 1..6.
    shifted = np.column_stack([np.full(len(vx), np.nan), vx])
    whole = roc_auc_score(vy, bst.predict(xgboost.DMatrix(shifted)))
    half = roc_auc_score(vy[:100], bst.predict(xgboost.DMatrix(shifted[:100])))
    expect(abs(auc - whole) < 0.01 and abs(auc - whole) < abs(auc - half) and auc > 0.85,
           "validation-auc %.5f, the model on all validation data %.5f, on "
           "algo-1's %.5f" % (auc, whole, half))
    # SageMaker's own metrics are summed over the hosts: exact.
    from sklearn.metrics import accuracy_score, f1_score
    cls = (bst.predict(xgboost.DMatrix(shifted)) > 0.5).astype(int)
    for name, v in (("accuracy", accuracy_score(vy, cls)), ("f1_binary", f1_score(vy, cls))):
        expect(abs(got[-1][1]["validation-" + name] - v) < 1e-4,
               "validation-%s %s, the model on all validation data %.5f"
               % (name, got[-1][1]["validation-" + name], v))


def check_faults(root):
    d = job_dir(root, "bad-csv", ["algo-1"], {"num_round": "3"},
                {"train": ("text/csv", {"h.csv": lambda p: open(p, "w").write("y,a,b\n1,2,3\n")})})
    rc, out = finish(start(d))
    failure = open(os.path.join(d, "output", "failure")).read()
    expect(rc == 1 and "h.csv:1" in failure and "no header" in failure,
           "a CSV header: exit %d, failure %r\n%s" % (rc, failure, out[-800:]))
    d = job_dir(root, "ragged", ["algo-1"], {"num_round": "3"},
                {"train": ("text/csv", {"r.csv": lambda p: open(p, "w").write("1,2,3\n0,1\n")})})
    rc, out = finish(start(d))
    failure = open(os.path.join(d, "output", "failure")).read()
    expect(rc == 1 and "r.csv: CSV rows of 2 and 3 columns" in failure,
           "ragged CSV: exit %d, failure %r" % (rc, failure))
    d = job_dir(root, "bad-type", ["algo-1"], {"num_round": "3"},
                {"train": ("application/x-parquet", {"p": lambda p: open(p, "w").write("x")})})
    rc, out = finish(start(d))
    failure = open(os.path.join(d, "output", "failure")).read()
    expect(rc == 1 and "application/x-parquet" in failure,
           "parquet: exit %d, failure %r" % (rc, failure))
    d = job_dir(root, "no-train", ["algo-1"], {"num_round": "3"},
                {"validation": ("text/csv", {"v.csv": lambda p: open(p, "w").write("1,2\n")})})
    rc, out = finish(start(d))
    failure = open(os.path.join(d, "output", "failure")).read()
    expect(rc == 1 and "channel named train" in failure, "no train: %r" % failure)


def main():
    tap = sc.Tap()
    root = tempfile.mkdtemp(prefix="trainctl-xgb-runner-")
    try:
        tap.case("hyperparameter and metric tables match api/algorithm.c", check_tables)
        tap.case("hyperparameter values checked as documented", check_values)
        tap.case("SageMaker's own metrics as scikit-learn computes them", check_metric_values)
        tap.case("empty CSV fields are missing values", check_csv_missing,
                 os.path.join(root, "csv"))
        tap.case("one host, CSV with weights: rounds, early stopping, a model that loads",
                 check_one_host, os.path.join(root, "one"))
        tap.case("checkpoints each round, resumed from the newest", check_resume,
                 os.path.join(root, "resume"))
        tap.case("two hosts, libsvm: one model over both hosts' data, resumed together",
                 check_two_hosts, os.path.join(root, "two"))
        tap.case("faults end with status 1 and output/failure", check_faults,
                 os.path.join(root, "faults"))
    finally:
        if not os.environ.get("TRAINCTL_TEST_KEEP"):
            shutil.rmtree(root, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
