#!/usr/bin/python3
"""Hyperparameter tuning: trainctl's optimizer against Optuna.

Drives trainctl-tuner-driver (tuner/driver/main.c) and Optuna 3.1 through
the same ask/tell loop on functions with known optima: Branin (2-D),
Hartmann-6, a noisy 2-D quadratic and a 4-D mixed log/integer/categorical
function. Every run has a budget of 30 evaluations with 3 in flight (three
points asked and not yet told; the oldest is told first). The simple regret
of a run is the noiseless value at the point with the best observed value,
minus the optimum. The table gives the median over 20 seeds.

Then: the optimizer's time per suggestion with 500 evaluations, and an
early-stopping task on synthetic learning curves (run everything to the
end, ASHA as the Hyperband strategy stops, the median rule).

    /usr/bin/python3 bench/tuning.py [--quick] [--json FILE]
"""
import argparse
import collections
import json
import math
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(os.environ.get("BUILD", os.path.join(HERE, "..", "build")),
                      "bin", "trainctl-tuner-driver")


# ---------------------------------------------------------------- problems

def branin(v):
    x1, x2 = v
    a, b, c = 1.0, 5.1 / (4 * math.pi ** 2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return a * (x2 - b * x1 ** 2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


H6_A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
        [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
H6_P = [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]
H6_ALPHA = [1.0, 1.2, 3.0, 3.2]


def hartmann6(v):
    s = 0.0
    for i in range(4):
        e = sum(H6_A[i][j] * (v[j] - H6_P[i][j] * 1e-4) ** 2 for j in range(6))
        s -= H6_ALPHA[i] * math.exp(-e)
    return s


def quadratic(v):
    return (v[0] - 0.3) ** 2 + (v[1] + 0.4) ** 2


# The optimizer (categorical) moves the best learning rate and adds an
# offset; the optimum is 0 at opt 1, lr 1e-3, 5 layers, batch 64.
MIXED_LR = [-2.5, -3.0, -2.0]
MIXED_OFF = [0.3, 0.0, 0.6]


def mixed(v):
    lr, layers, batch, opt = v
    opt = int(opt)
    return ((math.log10(lr) - MIXED_LR[opt]) ** 2 + 0.1 * (layers - 5) ** 2 +
            0.2 * (math.log2(batch) - 6) ** 2 + MIXED_OFF[opt])


def cont(name, lo, hi, scale="linear"):
    return {"name": name, "type": "continuous", "min": lo, "max": hi, "scale": scale}


def integer(name, lo, hi, scale="linear"):
    return {"name": name, "type": "integer", "min": lo, "max": hi, "scale": scale}


def categorical(name, n):
    return {"name": name, "type": "categorical", "values": n}


PROBLEMS = collections.OrderedDict([
    ("branin", dict(f=branin, opt=0.397887357729738, noise=0.0,
                    space=[cont("x1", -5, 10), cont("x2", 0, 15)])),
    ("hartmann6", dict(f=hartmann6, opt=-3.32236801141551, noise=0.0,
                       space=[cont("x%d" % i, 0, 1) for i in range(6)])),
    # Noise sd 0.1: a tenth of the unit curvature scale of the bowl.
    ("noisy_quadratic", dict(f=quadratic, opt=0.0, noise=0.1,
                             space=[cont("x1", -2, 2), cont("x2", -2, 2)])),
    ("mixed4", dict(f=mixed, opt=0.0, noise=0.0,
                    space=[cont("lr", 1e-4, 1e-1, "log"), integer("layers", 1, 8),
                           integer("batch", 16, 256, "log"), categorical("opt", 3)])),
])

METHODS = ["ours_random", "ours_bayesian", "optuna_tpe", "optuna_random"]


# ---------------------------------------------------------------- drivers

class Driver:
    """trainctl-tuner-driver behind ask() and tell()."""

    def __init__(self, space, strategy, seed, budget):
        self.p = subprocess.Popen([DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.call({"space": space, "strategy": strategy, "seed": seed, "budget": budget})

    def call(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("driver exited")
        r = json.loads(line)
        if "error" in r:
            raise RuntimeError("driver: " + r["error"])
        return r

    def ask(self):
        r = self.call({"op": "ask"})
        return r["id"], r["x"], r["seconds"]

    def tell(self, ident, y):
        self.call({"op": "tell", "id": ident, "y": y})

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def optuna_dists(space):
    import optuna.distributions as d
    out = {}
    for p in space:
        if p["type"] == "continuous":
            out[p["name"]] = d.FloatDistribution(p["min"], p["max"], log=p["scale"] == "log")
        elif p["type"] == "integer":
            out[p["name"]] = d.IntDistribution(p["min"], p["max"], log=p["scale"] == "log")
        else:
            out[p["name"]] = d.CategoricalDistribution(list(range(p["values"])))
    return out


def run_one(args):
    """One optimization run; returns the simple regret."""
    pname, method, seed, budget, parallel = args
    prob = PROBLEMS[pname]
    space, f, noise = prob["space"], prob["f"], prob["noise"]
    rng = random.Random(seed * 7919 + 17)
    best_y, best_x = math.inf, None

    def evaluate(x):
        return f(x) + (rng.gauss(0, noise) if noise else 0.0)

    pending = collections.deque()
    asked = told = 0
    if method.startswith("ours"):
        drv = Driver(space, method.split("_")[1], seed, budget)
        ask = lambda: drv.ask()[:2]  # noqa: E731
        tell = drv.tell
    else:
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = (optuna.samplers.TPESampler(seed=seed) if method == "optuna_tpe"
                   else optuna.samplers.RandomSampler(seed=seed))
        study = optuna.create_study(sampler=sampler)
        dists = optuna_dists(space)

        def ask():
            t = study.ask(dists)
            return t, [t.params[p["name"]] for p in space]

        def tell(t, y):
            study.tell(t, y)
    while told < budget:
        while len(pending) < parallel and asked < budget:
            pending.append(ask())
            asked += 1
        ident, x = pending.popleft()
        y = evaluate(x)
        tell(ident, y)
        told += 1
        if y < best_y:
            best_y, best_x = y, x
    if method.startswith("ours"):
        drv.close()
    return pname, method, seed, f(best_x) - prob["opt"]


def regret_table(seeds, budget, parallel, procs):
    jobs = [(p, m, s, budget, parallel) for p in PROBLEMS for m in METHODS
            for s in range(seeds)]
    with multiprocessing.Pool(procs) as pool:
        res = pool.map(run_one, jobs, chunksize=1)
    table = collections.defaultdict(list)
    for p, m, s, r in res:
        table[(p, m)].append(r)
    return table


# ---------------------------------------------------------------- timing

def suggestion_time(n_obs, asks):
    """Median seconds per Bayesian suggestion (inside the optimizer) with
    n_obs evaluations of Hartmann-6 and 2 points pending."""
    space = PROBLEMS["hartmann6"]["space"]
    drv = Driver(space, "bayesian", 1, n_obs + asks + 10)
    rng = random.Random(5)
    for _ in range(n_obs):
        x = [rng.random() for _ in range(6)]
        drv.call({"op": "add", "x": x, "y": hartmann6(x)})
    pending = collections.deque()
    times = []
    for _ in range(asks + 2):
        ident, x, sec = drv.ask()
        pending.append((ident, x))
        times.append(sec)
        if len(pending) > 2:
            i, px = pending.popleft()
            drv.tell(i, hartmann6(px))
    drv.close()
    # The first points are part of the initial design only when the
    # index is small; here every ask runs the process.
    return statistics.median(times[2:])


# ---------------------------------------------------------------- early stopping

EPOCHS = 27
# ASHA's first rung: after 1 report (rungs 1, 3, 9) or after 3 (rungs 3, 9).
ASHA_MIN_R = {"asha": 1, "asha_r3": 3}
RULES = ("all", "asha", "asha_r3", "median")


def curve_task(seed, n_jobs):
    """Synthetic learning curves: value(e) = final(x) + a exp(-e / tau) +
    noise, for e = 1 .. 27; a and tau vary per configuration, so curves
    cross and the first epochs do not rank the finals exactly."""
    rng = random.Random(1000 + seed)
    jobs = []
    for _ in range(n_jobs):
        x1, x2 = rng.random(), rng.random()
        final = 0.2 + 0.5 * ((x1 - 0.3) ** 2 + (x2 - 0.6) ** 2)
        a, tau = rng.uniform(0.2, 1.0), rng.uniform(2.0, 8.0)
        jobs.append([final + a * math.exp(-e / tau) + rng.gauss(0, 0.005)
                     for e in range(1, EPOCHS + 1)])
    return jobs


def simulate(curves, rule, drv, workers=3):
    """Runs the jobs in order on `workers` slots, one epoch per step;
    after every report the rule may stop the job. Returns (epochs used,
    best value at the last epoch among jobs that ran to the end)."""
    seen = [[] for _ in curves]
    queue = collections.deque(range(len(curves)))
    running = []
    best = math.inf
    while queue or running:
        while queue and len(running) < workers:
            running.append(queue.popleft())
        still = []
        for j in running:
            seen[j].append(curves[j][len(seen[j])])
            if len(seen[j]) == EPOCHS:
                best = min(best, seen[j][-1])
                continue
            if rule != "all":
                others = [seen[k] for k in range(len(curves)) if k != j and seen[k]]
                msg = {"op": "median_stop" if rule == "median" else "asha_stop",
                       "others": others, "cur": seen[j]}
                if rule.startswith("asha"):
                    msg.update(min_r=ASHA_MIN_R[rule], max_r=EPOCHS, eta=3)
                if drv.call(msg)["stop"]:
                    continue
            still.append(j)
        running = still
    return sum(len(s) for s in seen), best


def early_stopping(seeds, n_jobs):
    drv = Driver([cont("x", 0, 1)], "random", 1, 1)
    out = collections.defaultdict(list)
    for s in range(seeds):
        curves = curve_task(s, n_jobs)
        for rule in RULES:
            out[rule].append(simulate(curves, rule, drv))
    drv.close()
    return out


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small run (for tests)")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--seeds", type=int)
    ap.add_argument("--procs", type=int, default=2)
    a = ap.parse_args()
    seeds = a.seeds or (2 if a.quick else 20)
    budget = 12 if a.quick else 30
    result = {"seeds": seeds, "budget": budget, "parallel": 3}

    t0 = time.time()
    table = regret_table(seeds, budget, 3, a.procs)
    print("median simple regret, %d seeds, %d evaluations, 3 in parallel" % (seeds, budget))
    print("%-16s" % "function" + "".join("%16s" % m for m in METHODS))
    result["regret"] = {}
    for p in PROBLEMS:
        row = [statistics.median(table[(p, m)]) for m in METHODS]
        result["regret"][p] = {m: {"median": r, "mean": statistics.mean(table[(p, m)])}
                               for m, r in zip(METHODS, row)}
        print("%-16s" % p + "".join("%16.4g" % r for r in row))
    print("(%.0f s)" % (time.time() - t0))
    wins = all(result["regret"][p]["ours_bayesian"]["median"] <=
               result["regret"][p]["optuna_tpe"]["median"] for p in PROBLEMS)
    result["bayesian_beats_tpe_everywhere"] = wins
    print("ours_bayesian <= optuna_tpe on every function:", "yes" if wins else "no")

    n_obs, asks = (100, 3) if a.quick else (500, 20)
    sec = suggestion_time(n_obs, asks)
    result["suggest_seconds"] = {"observations": n_obs, "median": sec}
    print("Bayesian suggestion with %d evaluations: median %.1f ms over %d asks"
          % (n_obs, sec * 1e3, asks))

    es_seeds, n_jobs = (2, 30) if a.quick else (10, 60)
    es = early_stopping(es_seeds, n_jobs)
    full_epochs = statistics.mean(e for e, _ in es["all"])
    result["early_stopping"] = {}
    print("early stopping, %d configurations x %d epochs, %d seeds (means; gap: best final"
          " vs running all, median and worst)" % (n_jobs, EPOCHS, es_seeds))
    for rule in RULES:
        epochs = statistics.mean(e for e, _ in es[rule])
        gaps = [(b - ba) / ba for (_, b), (_, ba) in zip(es[rule], es["all"])]
        best = statistics.mean(b for _, b in es[rule])
        result["early_stopping"][rule] = {
            "epochs": epochs, "saved": 1 - epochs / full_epochs, "best": best,
            "gap_median": statistics.median(gaps), "gap_max": max(gaps)}
        print("  %-7s epochs %7.1f (%4.1f%% fewer)  best %.4f  gap %.2f%% / %.2f%%"
              % (rule, epochs, 100 * (1 - epochs / full_epochs), best,
                 100 * statistics.median(gaps), 100 * max(gaps)))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
