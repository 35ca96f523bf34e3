#!/usr/bin/python3
"""A training program with a known objective, for tuning-job tests.

Runs as `tune_trainer.py train` (TrainingImage file:///abs/path). Reads its
hyperparameters from SM_HPS (JSON) or input/config/hyperparameters.json:

  x, y        the tuned point (numbers; default 0)
  kind        a categorical: "good" adds nothing, anything else adds 1
  epochs      reports to print (default 5)
  sleep       seconds per epoch (default 0.05)
  fail        "client": exit 1 at once (a NonRetryableError)

Each epoch prints `epoch=E loss=L;` with L falling towards the final value
(x - 0.3)^2 + (y + 0.2)^2 (+1 unless kind is "good"); the best point is
x = 0.3, y = -0.2, kind = good (loss 0). Standard library only.
"""
import json
import os
import sys
import time


def hyperparameters():
    env = os.environ.get("SM_HPS")
    if env:
        return json.loads(env)
    cfg = os.environ.get("SM_INPUT_CONFIG_DIR") or "/opt/ml/input/config"
    with open(os.path.join(cfg, "hyperparameters.json")) as f:
        return json.load(f)


def num(hps, k, d):
    v = hps.get(k, d)
    try:
        return float(json.loads(v)) if isinstance(v, str) else float(v)
    except ValueError:
        return float(v)


def main():
    hps = hyperparameters()
    if str(hps.get("fail", "")).strip('"') == "client":
        print("failing as asked", flush=True)
        return 1
    x, y = num(hps, "x", 0), num(hps, "y", 0)
    kind = str(hps.get("kind", "good")).strip('"')
    epochs = int(num(hps, "epochs", 5))
    sleep = num(hps, "sleep", 0.05)
    final = (x - 0.3) ** 2 + (y + 0.2) ** 2 + (0 if kind == "good" else 1)
    for e in range(1, epochs + 1):
        loss = final + 2.0 / e - 2.0 / epochs
        print("epoch=%d loss=%.6f;" % (e, loss), flush=True)
        time.sleep(sleep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
