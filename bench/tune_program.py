#!/usr/bin/python3
"""The training program of bench/tuning_e2e.py: a known function as the
"model", run as a trainctl training job (TrainingImage file://...).

Hyperparameters (SM_HPS or input/config/hyperparameters.json):
  problem   a name of bench/tuning.py's PROBLEMS (branin, hartmann6, ...)
  <params>  that problem's parameters (categoricals by index)
  epochs    0: print `objective=V;` once (the problem's value, plus its
            noise); N > 0: a learning curve of N reports `epoch=E
            objective=V;` falling to 0.2 + the value (the curve task: a
            floor, so that relative gaps mean something)
  sleep     seconds per epoch (default 0.02)
  seed      the noise's seed (default: the point, so that a point gives
            the same value and curve in every run, as a fixed dataset does)
"""
import json
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tuning  # noqa: E402


def hyperparameters():
    env = os.environ.get("SM_HPS")
    if env:
        return json.loads(env)
    cfg = os.environ.get("SM_INPUT_CONFIG_DIR") or "/opt/ml/input/config"
    with open(os.path.join(cfg, "hyperparameters.json")) as f:
        return json.load(f)


def main():
    hps = hyperparameters()
    problem = tuning.PROBLEMS[hps["problem"]]
    v = []
    for p in problem["space"]:
        raw = hps[p["name"]]
        v.append(float(raw) if p["type"] != "categorical" else float(raw))
    rng = random.Random(hps.get("seed") or repr(v))
    final = problem["f"](v) + (rng.gauss(0, problem["noise"]) if problem["noise"] else 0.0)
    epochs = int(hps.get("epochs", "0"))
    sleep = float(hps.get("sleep", "0.02"))
    if not epochs:
        print("objective=%.9f;" % final, flush=True)
        return 0
    final += 0.2
    a, tau = 0.2 + 0.8 * rng.random(), 2.0 + 6.0 * rng.random()
    for e in range(1, epochs + 1):
        print("epoch=%d objective=%.9f;" % (e, final + a * math.exp(-e / tau) + rng.gauss(0, 0.005)), flush=True)
        time.sleep(sleep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
