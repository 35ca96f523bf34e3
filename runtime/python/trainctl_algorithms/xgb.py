"""SageMaker's built-in XGBoost algorithm (algorithm mode) on the host's xgboost.

Run once per host as ``python3 -m trainctl_algorithms.xgb train``. It reads
the job's hyperparameters (SageMaker's names: num_round, objective, eta, ...),
its ``train`` and ``validation`` channels (text/csv with the label first and
no header, or text/libsvm), trains, prints one evaluation line per round as
SageMaker's log shows it (``[3]#011train-rmse:0.51#011validation-rmse:0.63``)
and saves the model as ``xgboost-model`` in the model folder, the file the
SageMaker container writes (xgboost's own format, loadable by
``xgboost.Booster(model_file=...)``).

SageMaker's own metrics (accuracy, f1, r2, ...) are computed beside
xgboost's. The first host checkpoints every round into the checkpoint
folder, and a run that finds checkpoints resumes from the newest.

On several hosts the job trains one model with xgboost's collective
(rabit): the first host runs the tracker on MASTER_ADDR:MASTER_PORT, every
host is a worker on the data its channels hold (ShardedByS3Key splits it;
FullyReplicated gives every host all of it), and the first host saves the
model. A fault is written to output/failure and the exit status is 1.
"""
import json
import os
import socket
import sys
import warnings

SERVED_MAJOR_MINOR = "1.7"

# XGBoost's own evaluation metrics, then those SageMaker's container adds
# (computed here, below), in api/algorithm.c's order.
NATIVE_METRICS = (
    "auc", "aucpr", "map", "ndcg", "aft-nloglik", "cox-nloglik", "error",
    "gamma-deviance", "gamma-nloglik", "interval-regression-accuracy",
    "logloss", "mae", "mape", "merror", "mlogloss", "mphe",
    "poisson-nloglik", "rmse", "rmsle", "tweedie-nloglik",
)
CUSTOM_METRICS = (
    "accuracy", "balanced_accuracy", "f1", "f1_binary", "f1_macro",
    "precision", "precision_macro", "precision_micro", "recall",
    "recall_macro", "recall_micro", "mse", "r2",
)
EVAL_METRICS = NATIVE_METRICS + CUSTOM_METRICS
# Larger is better (early stopping's direction).
MAXIMIZE = ("auc", "aucpr", "map", "ndcg", "interval-regression-accuracy",
            "accuracy", "balanced_accuracy", "f1", "f1_binary", "f1_macro",
            "precision", "precision_macro", "precision_micro", "recall",
            "recall_macro", "recall_micro", "r2")
OBJECTIVES = (
    "reg:squarederror", "reg:squaredlogerror", "reg:logistic",
    "reg:pseudohubererror", "reg:absoluteerror", "reg:gamma",
    "reg:tweedie", "binary:logistic", "binary:logitraw", "binary:hinge",
    "count:poisson", "multi:softmax", "multi:softprob", "rank:pairwise",
    "rank:ndcg", "rank:map", "survival:cox", "survival:aft",
    "reg:linear",
)


class UserError(Exception):
    """A fault of the job's request or data: its text is the failure."""


# name -> (kind, low, high, low_open, high_open) for numbers, or
# (kind, choices) for categories. None: unbounded.
def _num(kind, low=None, high=None, low_open=False, high_open=False):
    return (kind, low, high, low_open, high_open)


HYPERPARAMETERS = {
    "num_round": _num(int, 1),
    "objective": ("cat", OBJECTIVES),
    "eta": _num(float, 0, 1),
    "gamma": _num(float, 0),
    "max_depth": _num(int, 0),
    "min_child_weight": _num(float, 0),
    "max_delta_step": _num(float, 0),
    "subsample": _num(float, 0, 1, low_open=True),
    "colsample_bytree": _num(float, 0, 1, low_open=True),
    "colsample_bylevel": _num(float, 0, 1, low_open=True),
    "colsample_bynode": _num(float, 0, 1, low_open=True),
    "lambda": _num(float, 0),
    "alpha": _num(float, 0),
    "eval_metric": ("list", EVAL_METRICS),
    "early_stopping_rounds": _num(int, 1),
    "csv_weights": _num(int, 0, 1),
    "booster": ("cat", ("gbtree", "gblinear", "dart")),
    "verbosity": _num(int, 0, 3),
    "nthread": _num(int, 1),
    "tree_method": ("cat", ("auto", "exact", "approx", "hist")),
    "sketch_eps": _num(float, 0, 1, low_open=True, high_open=True),
    "scale_pos_weight": _num(float, 0, low_open=True),
    "updater": ("str", None),
    "dsplit": ("cat", ("row", "col")),
    "refresh_leaf": _num(int, 0, 1),
    "process_type": ("cat", ("default", "update")),
    "grow_policy": ("cat", ("depthwise", "lossguide")),
    "max_leaves": _num(int, 0),
    "max_bin": _num(int, 0),
    "predictor": ("cat", ("auto", "cpu_predictor")),
    "monotone_constraints": ("str", None),
    "interaction_constraints": ("str", None),
    "sample_type": ("cat", ("uniform", "weighted")),
    "normalize_type": ("cat", ("tree", "forest")),
    "rate_drop": _num(float, 0, 1),
    "one_drop": _num(int, 0, 1),
    "skip_drop": _num(float, 0, 1),
    "lambda_bias": _num(float, 0, 1),
    "tweedie_variance_power": _num(float, 1, 2, low_open=True,
                                   high_open=True),
    "num_class": _num(int, 2),
    "base_score": _num(float, 0),
    "seed": _num(int),
    "num_parallel_tree": _num(int, 1),
    "aft_loss_distribution": ("cat", ("normal", "logistic", "extreme")),
    "aft_loss_distribution_scale": _num(float, 0),
    "deterministic_histogram": ("cat", ("true", "false")),
    "sampling_method": ("cat", ("uniform", "gradient_based")),
    "prob_buffer_row": _num(float, 1, low_open=True),
    "_tuning_objective_metric": ("str", None),
}
NOT_SERVED = ("save_model_on_termination", "_kfold", "_num_cv_round",
              "use_dask_gpu_training")
# Ours, not xgboost's parameters.
RUNNER_ONLY = ("num_round", "early_stopping_rounds", "csv_weights",
               "_tuning_objective_metric", "eval_metric")


def _decode(value):
    """SageMaker's SDK sends strings; its framework estimators JSON-encode
    them ('"binary:logistic"'). Both mean the same."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == '"':
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return decoded if isinstance(decoded, str) else value
    return str(value)


def _number(name, text, spec):
    kind, low, high, low_open, high_open = spec
    try:
        value = kind(text) if kind is float else int(text, 10)
    except ValueError:
        kindname = "an integer" if kind is int else "a number"
        raise UserError("hyperparameter '%s' must be %s, not '%s'"
                        % (name, kindname, text))
    bad = ((low is not None and (value < low or (low_open and value == low)))
           or (high is not None
               and (value > high or (high_open and value == high))))
    if bad or value != value:
        rng = "%s%s, %s%s" % ("(" if low_open else "[",
                             "-inf" if low is None else low,
                             "inf" if high is None else high,
                             ")" if high_open or high is None else "]")
        raise UserError("hyperparameter '%s' must be in %s, not '%s'"
                        % (name, rng, text))
    return value


def parse_hyperparameters(raw):
    """Checks raw (name -> string) as the algorithm documents it. Returns
    name -> typed value; raises UserError naming the first fault."""
    out = {}
    for name in sorted(raw):
        if name.startswith("sagemaker_"):
            continue
        text = _decode(raw[name]).strip()
        if name in NOT_SERVED:
            raise UserError("hyperparameter '%s' is not served here" % name)
        spec = HYPERPARAMETERS.get(name)
        if spec is None:
            raise UserError("hyperparameter '%s' is not one of the "
                            "built-in algorithm 'xgboost'" % name)
        if spec[0] in (int, float):
            out[name] = _number(name, text, spec)
        elif spec[0] == "cat":
            if text not in spec[1]:
                raise UserError("hyperparameter '%s' must be one of %s, "
                                "not '%s'" % (name, ", ".join(spec[1]),
                                              text))
            out[name] = text
        elif spec[0] == "list":
            out[name] = _metric_list(name, text)
        else:
            out[name] = text
    if "num_round" not in out:
        raise UserError("the hyperparameter num_round is required")
    if out.get("objective", "").startswith("multi:") and \
            "num_class" not in out:
        raise UserError("objective '%s' needs the hyperparameter num_class"
                        % out["objective"])
    return out


def _metric_list(name, text):
    metrics = [m.strip() for m in text.split(",") if m.strip()]
    for m in metrics:
        if m.split("@")[0] not in EVAL_METRICS:
            raise UserError("%s '%s' is not a metric of the built-in "
                            "algorithm (%s)"
                            % (name, m, ", ".join(EVAL_METRICS)))
    return metrics


def xgb_params(hps):
    """The parameters xgboost.train() takes, with the tuning objective's
    metric evaluated as SageMaker does."""
    params = {k: v for k, v in hps.items() if k not in RUNNER_ONLY}
    if "objective" not in params:
        params["objective"] = "reg:squarederror"
    if params["objective"] == "reg:linear":
        params["objective"] = "reg:squarederror"
    metrics = list(hps.get("eval_metric", []))
    obj = hps.get("_tuning_objective_metric", "")
    if obj:
        if not obj.startswith("validation:"):
            raise UserError("the tuning objective '%s' is not a validation "
                            "metric of the built-in algorithm" % obj)
        metric = obj.split(":", 1)[1]
        _metric_list("_tuning_objective_metric", metric)
        if metric not in metrics:
            metrics.append(metric)
    native = [m for m in metrics if m not in CUSTOM_METRICS]
    if native:
        params["eval_metric"] = native
    return params


def custom_metrics(hps):
    """The metrics of hps computed outside xgboost, in their order."""
    metrics = list(hps.get("eval_metric", []))
    obj = hps.get("_tuning_objective_metric", "")
    if obj.startswith("validation:"):
        metrics.append(obj.split(":", 1)[1])
    out = []
    for m in metrics:
        if m in CUSTOM_METRICS and m not in out:
            out.append(m)
    return out


# ---- SageMaker's own metrics -------------------------------------------
#
# Computed from counts summed over every host, so that a job on several
# hosts reports the metric of all its data, as xgboost's own metrics do.


def _sum_hosts(xgb, a):
    import numpy as np
    a = np.ascontiguousarray(a, dtype=np.float64)
    if xgb.collective.get_world_size() < 2:
        return a
    flat = xgb.collective.allreduce(a.ravel(), xgb.collective.Op.SUM)
    return np.asarray(flat).reshape(a.shape)


def predicted_classes(predt, objective, n):
    """Classes of predictions as xgboost hands them to a metric
    (probabilities, a softmax's classes, a logitraw's margins)."""
    import numpy as np
    p = np.asarray(predt)
    if p.ndim == 1 and n and p.size > n and p.size % n == 0:
        p = p.reshape(n, p.size // n)
    if p.ndim == 2:
        return np.argmax(p, axis=1)
    if objective == "multi:softmax":
        return np.rint(p).astype(np.int64)
    if objective == "binary:logitraw":
        return (p > 0).astype(np.int64)
    return (p > 0.5).astype(np.int64)


def confusion(y, c, k):
    """Counts of (true class, predicted class), k x k."""
    import numpy as np
    yi = np.rint(y).astype(np.int64)
    if yi.size and (yi.min() < 0 or yi.max() >= k or (yi != y).any()):
        raise UserError("classification metrics need labels 0..%d, not %g"
                        % (k - 1, y[(yi < 0) | (yi >= k) | (yi != y)][0]))
    m = np.zeros((k, k))
    np.add.at(m, (yi, np.clip(c, 0, k - 1)), 1)
    return m


def _ratio(a, b):
    return float(a) / float(b) if b else 0.0


def class_metric(name, m):
    """name's value from confusion counts m (rows: true classes), as
    scikit-learn computes it (a 0/0 reads 0)."""
    import numpy as np
    tp = np.diag(m)
    true, pred, total = m.sum(axis=1), m.sum(axis=0), m.sum()
    if name in ("accuracy", "precision_micro", "recall_micro"):
        return _ratio(tp.sum(), total)
    if name == "balanced_accuracy":
        seen = true > 0
        return float(np.mean(tp[seen] / true[seen])) if seen.any() else 0.0
    if name in ("precision", "recall", "f1_binary"):
        if m.shape[0] != 2:
            raise UserError("%s is for binary classification; use %s_macro"
                            % (name, "f1" if name == "f1_binary" else name))
        if name == "precision":
            return _ratio(tp[1], pred[1])
        if name == "recall":
            return _ratio(tp[1], true[1])
        return _ratio(2 * tp[1], true[1] + pred[1])
    labels = (true + pred) > 0
    prec = np.array([_ratio(t, p) for t, p in zip(tp, pred)])
    rec = np.array([_ratio(t, r) for t, r in zip(tp, true)])
    if name == "precision_macro":
        vals = prec
    elif name == "recall_macro":
        vals = rec
    else:  # f1, f1_macro: macro as SageMaker's container computes f1
        vals = np.array([_ratio(2 * p * r, p + r) for p, r in zip(prec, rec)])
    return float(np.mean(vals[labels])) if labels.any() else 0.0


def custom_metric_fn(xgb, names, objective, num_class):
    """xgboost's custom_metric for names: [(name, value)] per call."""
    import numpy as np
    k = num_class or 2

    def fn(predt, dmat):
        y = dmat.get_label()
        out = []
        m = None
        for name in names:
            if name in ("mse", "r2"):
                p = np.asarray(predt, dtype=np.float64).reshape(-1)
                if p.size != y.size:
                    raise UserError("%s is for one prediction per row" % name)
                res = float(np.sum((y - p) ** 2))
                n, ss, sy, sy2 = _sum_hosts(xgb, [y.size, res, float(np.sum(y)),
                                                  float(np.sum(y * y))])
                tot = sy2 - sy * sy / n if n else 0.0
                out.append((name, _ratio(ss, n) if name == "mse"
                            else (1.0 - _ratio(ss, tot) if tot else 0.0)))
                continue
            if m is None:
                c = predicted_classes(predt, objective, y.size)
                m = _sum_hosts(xgb, confusion(y, c, k))
            out.append((name, class_metric(name, m)))
        return out

    return fn


# ---- data -------------------------------------------------------------


def content_type(value):
    """'csv' or 'libsvm' for a channel's ContentType (absent: libsvm, as
    SageMaker's container reads it)."""
    if not value:
        return "libsvm"
    parts = [p.strip() for p in value.lower().split(";")]
    kind = parts[0]
    if kind in ("csv", "text/csv"):
        for p in parts[1:]:
            if p.replace(" ", "") not in ("label_size=1",) and \
                    not p.startswith("charset"):
                raise UserError("ContentType '%s': only label_size=1 is "
                                "accepted with text/csv" % value)
        return "csv"
    if kind in ("libsvm", "text/libsvm", "text/x-libsvm"):
        return "libsvm"
    raise UserError("ContentType '%s' is not served by the built-in "
                    "algorithm 'xgboost' (text/csv or text/libsvm)" % value)


def data_files(folder):
    """The channel's files, in name order, hidden ones left out."""
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for n in sorted(names):
            if not n.startswith((".", "_")):
                files.append(os.path.join(root, n))
    return files


def _csv_rows(path):
    """The rows of one CSV file, line by line: empty fields are missing
    values; a line that is not numbers is named."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append([float(x) if x.strip() else float("nan")
                             for x in line.split(",")])
            except ValueError:
                raise UserError("%s:%d: not a CSV line of numbers "
                                "(text/csv takes the label first and "
                                "no header): '%s'"
                                % (os.path.basename(path), lineno,
                                   line[:60]))
    return rows


def read_csv(files, weights):
    """label, [weight,] features... per line, no header. Returns
    (labels, weights or None, rows)."""
    import numpy as np
    parts = []
    for path in files:
        try:
            # numpy's reader is C: 4 times faster than the lines below,
            # which read what it refuses (empty fields) or say why not.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an empty file: no rows
                a = np.loadtxt(path, delimiter=",", dtype=np.float32,
                               ndmin=2, comments=None)
        except ValueError:
            rows = _csv_rows(path)
            widths = sorted({len(r) for r in rows})
            if len(widths) > 1:
                raise UserError("%s: CSV rows of %d and %d columns"
                                % (os.path.basename(path), widths[0],
                                   widths[-1]))
            a = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if a.size:
            parts.append(a)
    if not parts:
        return None
    widths = sorted({p.shape[1] for p in parts})
    if len(widths) > 1:
        raise UserError("CSV rows of %d and %d columns" % (widths[0],
                                                          widths[-1]))
    first = 2 if weights else 1
    if widths[0] <= first:
        raise UserError("CSV rows need a label%s and features"
                        % (", a weight" if weights else ""))
    a = np.concatenate(parts) if len(parts) > 1 else parts[0]
    return a[:, 0], (a[:, 1] if weights else None), a[:, first:]


def read_libsvm(files):
    """label[:weight] index:value ... per line. Returns (labels, weights or
    None, a CSR matrix)."""
    import numpy as np
    import scipy.sparse as sp
    labels, weights, data, indices, indptr = [], [], [], [], [0]
    for path in files:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                parts = line.split()
                try:
                    head = parts[0].split(":")
                    labels.append(float(head[0]))
                    weights.append(float(head[1]) if len(head) > 1 else 1.0)
                    for item in parts[1:]:
                        k, v = item.split(":")
                        if k == "qid":
                            continue
                        indices.append(int(k))
                        data.append(float(v))
                except ValueError:
                    raise UserError("%s:%d: not a libsvm line "
                                    "(label index:value ...): '%s'"
                                    % (os.path.basename(path), lineno,
                                       line[:60]))
                indptr.append(len(indices))
    if not labels:
        return None
    if indices and min(indices) < 0:
        raise UserError("libsvm feature indices must not be negative")
    ncol = (max(indices) + 1) if indices else 1
    m = sp.csr_matrix((np.asarray(data, dtype=np.float32),
                       np.asarray(indices, dtype=np.int64),
                       np.asarray(indptr, dtype=np.int64)),
                      shape=(len(labels), ncol))
    w = np.asarray(weights, dtype=np.float32)
    return (np.asarray(labels, dtype=np.float32),
            None if (w == 1.0).all() else w, m)


def load_channel(folder, kind, csv_weights):
    files = data_files(folder) if folder and os.path.isdir(folder) else []
    if not files:
        return None
    if kind == "csv":
        return read_csv(files, csv_weights)
    return read_libsvm(files)


def dmatrix(xgb, loaded, ncol):
    labels, weights, x = loaded
    if x.shape[1] < ncol:
        # The widest channel (or host) sets the features' count.
        import numpy as np
        import scipy.sparse as sp
        if sp.issparse(x):
            x = sp.csr_matrix((x.data, x.indices, x.indptr),
                              shape=(x.shape[0], ncol))
        else:
            pad = np.full((x.shape[0], ncol - x.shape[1]), np.nan,
                          dtype=np.float32)
            x = np.hstack([x, pad])
    return xgb.DMatrix(x, label=labels, weight=weights, missing=float("nan"))


# ---- the job ------------------------------------------------------------


class Job:
    """The job's folders and files, from the SM_* variables (SageMaker's
    paths when a variable is absent)."""

    def __init__(self, env=None):
        env = os.environ if env is None else env
        self.env = env
        self.config_dir = env.get("SM_INPUT_CONFIG_DIR",
                                  "/opt/ml/input/config")
        self.data_dir = env.get("SM_INPUT_DIR", "/opt/ml/input") + "/data"
        self.model_dir = env.get("SM_MODEL_DIR", "/opt/ml/model")
        self.output_dir = env.get("SM_OUTPUT_DIR", "/opt/ml/output")
        self.checkpoint_dir = (env.get("TRAINCTL_CHECKPOINT_DIR")
                               or "/opt/ml/checkpoints")

    def config(self, name, default):
        path = os.path.join(self.config_dir, name)
        if not os.path.exists(path):
            return default
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def channel(self, name):
        return self.env.get("SM_CHANNEL_" + name.upper(),
                            os.path.join(self.data_dir, name))

    def fail(self, text):
        try:
            os.makedirs(self.output_dir, exist_ok=True)
            with open(os.path.join(self.output_dir, "failure"), "w",
                      encoding="utf-8") as f:
                f.write(text)
        except OSError:
            pass


# ---- checkpoints ---------------------------------------------------------
#
# As SageMaker's container: after each round the first host saves the model
# as xgboost-checkpoint.<round> in the checkpoint folder (the newest 5
# kept), which trainctl mirrors to CheckpointConfig.S3Uri and restores
# before a retried attempt; a run that finds them goes on from the newest.

CHECKPOINT = "xgboost-checkpoint"
CHECKPOINTS_KEPT = 5


def checkpoint_rounds(folder):
    """The rounds of the checkpoints in folder, oldest first."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    rounds = []
    for n in names:
        head, _, tail = n.partition(".")
        if head == CHECKPOINT and tail.isdigit():
            rounds.append(int(tail))
    return sorted(rounds)


def checkpoint_saver(xgb, folder, rank):
    """A callback that saves each round's model on the first host, by an
    atomic rename (a mirror never sees half a file)."""

    class Save(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            if rank != 0:
                return False
            epoch = model.num_boosted_rounds() - 1
            os.makedirs(folder, exist_ok=True)
            final = os.path.join(folder, "%s.%d" % (CHECKPOINT, epoch))
            tmp = os.path.join(folder, ".tmp-%s.%d.%d"
                               % (CHECKPOINT, epoch, os.getpid()))
            model.save_model(tmp)
            os.replace(tmp, final)
            for old in checkpoint_rounds(folder)[:-CHECKPOINTS_KEPT]:
                try:
                    os.remove(os.path.join(folder, "%s.%d" % (CHECKPOINT, old)))
                except OSError:
                    pass
            return False

    return Save()


def resume_point(xgb, folder):
    """(booster, rounds done) from the newest checkpoint every host holds,
    or (None, 0)."""
    import numpy as np
    rounds = checkpoint_rounds(folder)
    newest = rounds[-1] if rounds else -1
    if xgb.collective.get_world_size() > 1:
        # The same round everywhere, or none: hosts start from one model.
        got = xgb.collective.allreduce(np.asarray([newest], np.float64),
                                       xgb.collective.Op.MIN)
        newest = int(got[0])
        has = np.asarray([1.0 if newest in rounds else 0.0])
        if xgb.collective.allreduce(has, xgb.collective.Op.MIN)[0] < 1:
            newest = -1
    if newest < 0:
        return None, 0
    path = os.path.join(folder, "%s.%d" % (CHECKPOINT, newest))
    return xgb.Booster(model_file=path), newest + 1


def print_rounds(xgb, rank):
    """A callback that prints each round's evaluations on the first
    host, tab-separated as SageMaker's log shows them (#011)."""

    class Rounds(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            if rank != 0 or not evals_log:
                return False
            # epoch counts from 0 in a run that resumed: the model knows.
            epoch = model.num_boosted_rounds() - 1
            items = []
            for data, metrics in evals_log.items():
                for metric, values in metrics.items():
                    v = values[-1]
                    v = v[0] if isinstance(v, tuple) else v
                    items.append("%s-%s:%.5f" % (data, metric, v))
            print("[%d]#011%s" % (epoch, "#011".join(items)), flush=True)
            return False

    return Rounds()


def tracker_env(hosts, current, env):
    """Starts the tracker on the first host; returns the variables every
    worker initializes the collective with (None: one host)."""
    if len(hosts) < 2:
        return None, None
    addr = env.get("MASTER_ADDR")
    port = env.get("MASTER_PORT")
    if not addr or not port:
        raise RuntimeError("MASTER_ADDR and MASTER_PORT are needed on %d "
                           "hosts" % len(hosts))
    ip = socket.gethostbyname(addr)
    tracker = None
    if current == hosts[0]:
        from xgboost.tracker import RabitTracker
        tracker = RabitTracker(host_ip=ip, n_workers=len(hosts),
                               port=int(port), sortby="task")
        tracker.start(len(hosts))
    args = {
        "DMLC_TRACKER_URI": ip,
        "DMLC_TRACKER_PORT": int(port),
        "DMLC_TASK_ID": str(hosts.index(current)),
        "DMLC_NUM_WORKER": len(hosts),
    }
    return tracker, args


def train(job):
    try:
        import xgboost as xgb
    except ImportError as e:
        raise RuntimeError("this host cannot import xgboost (%s); the "
                           "built-in algorithm needs python3-xgboost %s"
                           % (e, SERVED_MAJOR_MINOR))
    if not xgb.__version__.startswith(SERVED_MAJOR_MINOR + "."):
        raise RuntimeError("this host has xgboost %s; the built-in "
                           "algorithm serves %s" % (xgb.__version__,
                                                    SERVED_MAJOR_MINOR))
    hps = parse_hyperparameters(job.config("hyperparameters.json", {}))
    params = xgb_params(hps)
    idc = job.config("inputdataconfig.json", {})
    if "train" not in idc:
        raise UserError("the built-in algorithm 'xgboost' needs a channel "
                        "named train (channels: %s)"
                        % (", ".join(sorted(idc)) or "none"))
    for name in idc:
        if name not in ("train", "validation"):
            raise UserError("channel '%s': the built-in algorithm "
                            "'xgboost' reads train and validation" % name)
        if idc[name].get("TrainingInputMode", "File") == "Pipe":
            raise UserError("channel '%s': Pipe mode is not served by the "
                            "built-in algorithm 'xgboost'" % name)
    kind = content_type(idc["train"].get("ContentType"))
    if "validation" in idc and \
            content_type(idc["validation"].get("ContentType")) != kind:
        raise UserError("channels train and validation must have the "
                        "same ContentType")
    rc = job.config("resourceconfig.json", {})
    hosts = sorted(rc.get("hosts") or ["algo-1"])
    current = rc.get("current_host", hosts[0])
    weights = bool(hps.get("csv_weights")) and kind == "csv"
    dtrain_raw = load_channel(job.channel("train"), kind, weights)
    dval_raw = (load_channel(job.channel("validation"), kind, weights)
                if "validation" in idc else None)
    if dtrain_raw is None:
        raise UserError("%s: the channel train holds no data on %s"
                        % (job.channel("train"), current))
    if "early_stopping_rounds" in hps and dval_raw is None:
        raise UserError("early_stopping_rounds needs a validation channel")
    print("xgboost %s (built-in algorithm, %s data, %d host%s)"
          % (xgb.__version__, kind, len(hosts), "" if len(hosts) == 1
             else "s"), flush=True)
    tracker, coll = tracker_env(hosts, current, job.env)
    if coll:
        with xgb.collective.CommunicatorContext(**coll):
            bst = _fit(xgb, hps, params, dtrain_raw, dval_raw,
                   job.checkpoint_dir)
            rank = xgb.collective.get_rank()
    else:
        bst = _fit(xgb, hps, params, dtrain_raw, dval_raw,
                   job.checkpoint_dir)
        rank = 0
    if tracker is not None:
        tracker.join()
    if rank == 0:
        os.makedirs(job.model_dir, exist_ok=True)
        bst.save_model(os.path.join(job.model_dir, "xgboost-model"))
        print("model saved: xgboost-model", flush=True)


def _fit(xgb, hps, params, dtrain_raw, dval_raw, ckpt_dir):
    ncol = dtrain_raw[2].shape[1]
    if dval_raw is not None:
        ncol = max(ncol, dval_raw[2].shape[1])
    if xgb.collective.get_world_size() > 1:
        import numpy as np
        width = np.asarray([ncol], dtype=np.float64)
        ncol = int(xgb.collective.allreduce(width, xgb.collective.Op.MAX)[0])
    dtrain = dmatrix(xgb, dtrain_raw, ncol)
    evals = [(dtrain, "train")]
    if dval_raw is not None:
        evals.append((dmatrix(xgb, dval_raw, ncol), "validation"))
    rank = xgb.collective.get_rank()
    extra = custom_metrics(hps)
    metric_fn = (custom_metric_fn(xgb, extra, params["objective"],
                                  hps.get("num_class")) if extra else None)
    # Early stopping watches the last metric: say which way is better when
    # xgboost cannot tell from its name.
    maximize = extra[-1] in MAXIMIZE if extra else None
    booster, done = resume_point(xgb, ckpt_dir)
    if done:
        print("resuming from %s.%d: round %d of %d"
              % (CHECKPOINT, done - 1, done + 1, hps["num_round"]),
              flush=True)
    if done >= hps["num_round"]:
        return booster
    return xgb.train(params, dtrain, num_boost_round=hps["num_round"] - done,
                     evals=evals, verbose_eval=False, xgb_model=booster,
                     early_stopping_rounds=hps.get("early_stopping_rounds"),
                     custom_metric=metric_fn, maximize=maximize,
                     callbacks=[print_rounds(xgb, rank),
                                checkpoint_saver(xgb, ckpt_dir, rank)])


def main(argv):
    if len(argv) > 1 and argv[1] != "train":
        sys.stderr.write("usage: python3 -m trainctl_algorithms.xgb train\n")
        return 2
    job = Job()
    try:
        train(job)
    except UserError as e:
        msg = str(e)
        print(msg, file=sys.stderr, flush=True)
        job.fail(msg)
        return 1
    except Exception as e:  # an xgboost error: its own words
        msg = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1]
                          if str(e).strip() else "")
        print(msg, file=sys.stderr, flush=True)
        job.fail(msg)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
