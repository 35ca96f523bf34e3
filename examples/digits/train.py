#!/usr/bin/python3
"""Handwritten digits (sklearn's 8x8 digits, 1797 images) with a small MLP in
numpy: a SageMaker-style training script that runs unchanged under trainctl
and under SageMaker's framework containers.

Input: channel `train` (SM_CHANNEL_TRAIN) holding digits.csv.gz (or any
*.csv / *.csv.gz with 64 pixel columns 0..16 and the label last, no header).
The same held-out 20% (by --seed) is kept aside on every host; the other
rows are split between the hosts by index (SM_HOSTS / SM_CURRENT_HOST,
--shard true) or used whole on each host (--shard false).

Output (SM_MODEL_DIR): model-<host>.npz (weights), and metrics.json from the
master host (algo-1). Prints `epoch=N loss=X; accuracy=Y;` once per epoch
(accuracy on the held-out rows) for MetricDefinitions.
"""
import argparse
import glob
import gzip
import json
import os
import sys
import time

import numpy as np


def str2bool(v):
    return str(v).lower() in ("1", "true", "yes", "y")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--learning-rate", type=float, default=0.1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--hidden", type=int, default=64, help="hidden units; 0 = softmax regression")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--activation", choices=sorted(ACTIVATIONS), default="relu",
                   help="the hidden layer's activation")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--test-fraction", type=float, default=0.2)
    p.add_argument("--shard", type=str2bool, default=True)
    p.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    p.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN", "/opt/ml/input/data/train"))
    p.add_argument("--hosts", default=os.environ.get("SM_HOSTS", '["algo-1"]'))
    p.add_argument("--current-host", default=os.environ.get("SM_CURRENT_HOST", "algo-1"))
    # SageMaker passes every hyperparameter; tolerate ones we do not know.
    args, unknown = p.parse_known_args()
    if unknown:
        print("ignoring unknown arguments: %s" % " ".join(unknown), flush=True)
    return args


def load(train_dir):
    files = sorted(glob.glob(os.path.join(train_dir, "**", "*.csv.gz"), recursive=True) +
                   glob.glob(os.path.join(train_dir, "**", "*.csv"), recursive=True))
    if not files:
        sys.exit("no *.csv or *.csv.gz under %s" % train_dir)
    parts = []
    for f in files:
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rt") as fh:
            parts.append(np.loadtxt(fh, delimiter=",", ndmin=2))
    data = np.concatenate(parts)
    if data.shape[1] != 65:
        sys.exit("expected 65 columns (64 pixels + label), got %d" % data.shape[1])
    x = data[:, :64].astype(np.float64) / 16.0
    y = data[:, 64].astype(np.int64)
    return x, y, files


def init(rng, n_in, hidden, n_out):
    if hidden:
        return {"W1": rng.normal(0, np.sqrt(2.0 / n_in), (n_in, hidden)), "b1": np.zeros(hidden),
                "W2": rng.normal(0, np.sqrt(1.0 / hidden), (hidden, n_out)), "b2": np.zeros(n_out)}
    return {"W2": np.zeros((n_in, n_out)), "b2": np.zeros(n_out)}


# Each activation with its derivative, written in terms of its output h.
ACTIVATIONS = {
    "relu": (lambda a: np.maximum(0.0, a), lambda h: (h > 0).astype(h.dtype)),
    "tanh": (np.tanh, lambda h: 1.0 - h * h),
    "sigmoid": (lambda a: 1.0 / (1.0 + np.exp(-a)), lambda h: h * (1.0 - h)),
}
ACT = "relu"


def forward(params, x):
    if "W1" in params:
        h = ACTIVATIONS[ACT][0](x @ params["W1"] + params["b1"])
    else:
        h = x
    z = h @ params["W2"] + params["b2"]
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    return h, p


def loss_and_grads(params, x, y):
    h, p = forward(params, x)
    n = x.shape[0]
    loss = -np.log(p[np.arange(n), y] + 1e-12).mean()
    d = p.copy()
    d[np.arange(n), y] -= 1.0
    d /= n
    g = {"W2": h.T @ d, "b2": d.sum(axis=0)}
    if "W1" in params:
        dh = (d @ params["W2"].T) * ACTIVATIONS[ACT][1](h)
        g["W1"] = x.T @ dh
        g["b1"] = dh.sum(axis=0)
    return loss, g


def accuracy(params, x, y):
    return float((forward(params, x)[1].argmax(axis=1) == y).mean())


def main():
    t0 = time.time()
    args = parse_args()
    global ACT
    ACT = args.activation
    hosts = json.loads(args.hosts)
    host = args.current_host
    rank, world = hosts.index(host), len(hosts)
    x, y, files = load(args.train)

    # The same split on every host: held-out rows first, then the shards.
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(y))
    n_test = int(round(len(y) * args.test_fraction))
    test, train = order[:n_test], order[n_test:]
    if args.shard and world > 1:
        train = train[rank::world]
    print("%s (%d of %d): %d training rows, %d held out, from %s" % (
        host, rank + 1, world, len(train), len(test), ", ".join(os.path.basename(f) for f in files)), flush=True)

    params = init(np.random.default_rng(args.seed + 1), 64, args.hidden, 10)
    velocity = {k: np.zeros_like(v) for k, v in params.items()}
    rng = np.random.default_rng(args.seed + 2 + rank)
    loss = float("nan")
    acc = 0.0
    for epoch in range(1, args.epochs + 1):
        perm = rng.permutation(train)
        total = 0.0
        for i in range(0, len(perm), args.batch_size):
            b = perm[i:i + args.batch_size]
            l, g = loss_and_grads(params, x[b], y[b])
            total += l * len(b)
            for k in params:
                velocity[k] = args.momentum * velocity[k] - args.learning_rate * g[k]
                params[k] += velocity[k]
        loss = total / len(perm)
        acc = accuracy(params, x[test], y[test])
        print("epoch=%d loss=%.4f; accuracy=%.4f;" % (epoch, loss, acc), flush=True)

    os.makedirs(args.model_dir, exist_ok=True)
    np.savez(os.path.join(args.model_dir, "model-%s.npz" % host), **params)
    metrics = {"host": host, "hosts": hosts, "epochs": args.epochs, "train_rows": int(len(train)),
               "test_rows": int(len(test)), "loss": loss, "accuracy": acc, "seconds": round(time.time() - t0, 3)}
    master = hosts[0]
    try:
        master = json.loads(os.environ.get("SM_TRAINING_ENV", "{}")).get("master_hostname") or master
    except ValueError:
        pass
    if host == master:
        with open(os.path.join(args.model_dir, "metrics.json"), "w") as f:
            json.dump(metrics, f, indent=1, sort_keys=True)
    print("%s: held-out accuracy %.4f after %d epochs (%.1f s); wrote %s" % (
        host, acc, args.epochs, time.time() - t0, args.model_dir), flush=True)


if __name__ == "__main__":
    main()
