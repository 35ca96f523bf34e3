#!/usr/bin/python3
"""Tuning jobs end to end: trainctl's tuning jobs against Optuna driving
the same training jobs, on one trainctld --local-hosts 3.

Every evaluation is a real training job running bench/tune_program.py (a
function with a known optimum as its "model", see bench/tuning.py's
PROBLEMS). For each problem and seed, with the same budget (--budget
evaluations, 3 in parallel):

  ours_bayesian, ours_random  a CreateHyperParameterTuningJob (Bayesian,
                              Random; RandomSeed = seed)
  optuna_tpe                  Optuna 3.1's TPESampler(seed) through
                              study.ask()/study.tell(): each asked point
                              becomes a CreateTrainingJob, three in flight,
                              the oldest told first

and prints the median simple regret (the noiseless value at the best
observed point, minus the optimum) and the wall time per run.

Then the curve task: learning curves of --epochs reports (the same
configurations for each rule, RandomSeed), a Random tuning job of --jobs
training jobs run to the end (Off), with the median rule (Auto), and with
Hyperband; it prints the training time used (the sum of each job's
training seconds) and the best objective.

    /usr/bin/python3 bench/tuning_e2e.py [--seeds 5] [--budget 30] [--quick]
"""
import argparse
import collections
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import tuning  # noqa: E402
import ftlib as fl  # noqa: E402

sc = fl.sc
PROGRAM = os.path.join(HERE, "tune_program.py")
METRIC = [{"Name": "objective", "Regex": "objective=(.*?);"}]


def definition(static):
    return {
        "StaticHyperParameters": dict({k: str(v) for k, v in static.items()}),
        "AlgorithmSpecification": {"TrainingImage": "file://" + PROGRAM, "TrainingInputMode": "File",
                                   "MetricDefinitions": METRIC},
        "RoleArn": fl.ROLE,
        "OutputDataConfig": {"S3OutputPath": fl.OUT},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
    }


def ranges(space):
    out = collections.defaultdict(list)
    for p in space:
        scale = {"log": "Logarithmic", "linear": "Linear"}[p.get("scale", "linear")]
        if p["type"] == "categorical":
            out["CategoricalParameterRanges"].append(
                {"Name": p["name"], "Values": [str(i) for i in range(p["values"])]})
        else:
            kind = "ContinuousParameterRanges" if p["type"] == "continuous" else "IntegerParameterRanges"
            out[kind].append({"Name": p["name"], "MinValue": str(p["min"]), "MaxValue": str(p["max"]),
                              "ScalingType": scale})
    return dict(out)


def create(cl, req):
    r = sc.amz_json(cl.port, "CreateHyperParameterTuningJob", req)
    if r.status != 200:
        raise SystemExit("create %s: %r" % (req["HyperParameterTuningJobName"], r))


def wait_tuning(sm, name, timeout=1200):
    deadline = time.time() + timeout
    while time.time() < deadline:
        d = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        if d["HyperParameterTuningJobStatus"] in ("Completed", "Stopped", "Failed"):
            return d
        time.sleep(0.1)
    raise SystemExit("%s did not end" % name)


def children(sm, name):
    out = []
    for page in sm.get_paginator("list_training_jobs_for_hyper_parameter_tuning_job").paginate(
            HyperParameterTuningJobName=name):
        out += page["TrainingJobSummaries"]
    return out


def point_of(space, hps):
    return [float(hps[p["name"]]) for p in space]


def regret_of(problem, evaluated):
    """evaluated: [(point, observed)]: the noiseless value at the best
    observed point, minus the optimum."""
    best = min(evaluated, key=lambda e: e[1])
    return problem["f"](best[0]) - problem["opt"]


def run_ours(cl, sm, strategy, pname, seed, budget, tag):
    problem = tuning.PROBLEMS[pname]
    name = "%s-%s-%d-%s" % (strategy[:3].lower(), pname[:6].replace("_", ""), seed, tag)
    req = {"HyperParameterTuningJobName": name,
           "HyperParameterTuningJobConfig": {
               "Strategy": strategy, "RandomSeed": seed,
               "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "objective"},
               "ResourceLimits": {"MaxNumberOfTrainingJobs": budget, "MaxParallelTrainingJobs": 3},
               "ParameterRanges": ranges(problem["space"])},
           "TrainingJobDefinition": definition({"problem": pname, "epochs": 0})}
    t0 = time.time()
    create(cl, req)
    wait_tuning(sm, name)
    wall = time.time() - t0
    ev = [(point_of(problem["space"], k["TunedHyperParameters"]),
           k["FinalHyperParameterTuningJobObjectiveMetric"]["Value"])
          for k in children(sm, name) if k.get("FinalHyperParameterTuningJobObjectiveMetric")]
    return regret_of(problem, ev), wall


def job_request(name, pname, values):
    return {"TrainingJobName": name,
            "AlgorithmSpecification": {"TrainingImage": "file://" + PROGRAM, "TrainingInputMode": "File",
                                       "MetricDefinitions": METRIC},
            "RoleArn": fl.ROLE,
            "HyperParameters": dict({"problem": pname, "epochs": "0"}, **values),
            "OutputDataConfig": {"S3OutputPath": fl.OUT},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 600}}


def run_optuna(cl, sm, pname, seed, budget, tag):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    problem = tuning.PROBLEMS[pname]
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    dists = tuning.optuna_dists(problem["space"])
    inflight = collections.deque()
    evaluated = []
    asked = 0
    t0 = time.time()
    while asked < budget or inflight:
        while asked < budget and len(inflight) < 3:
            trial = study.ask(dists)
            values = {p["name"]: str(trial.params[p["name"]]) for p in problem["space"]}
            name = "tpe-%s-%d-%s-%03d" % (pname[:6].replace("_", ""), seed, tag, asked)
            sm.create_training_job(**job_request(name, pname, values))
            inflight.append((trial, name, values))
            asked += 1
        trial, name, values = inflight.popleft()
        while True:
            d = sm.describe_training_job(TrainingJobName=name)
            if d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
                break
            time.sleep(0.05)
        final = {m["MetricName"]: m["Value"] for m in d.get("FinalMetricDataList", [])}
        study.tell(trial, final["objective"])
        evaluated.append((point_of(problem["space"], values), final["objective"]))
    return regret_of(problem, evaluated), time.time() - t0


def curve_run(cl, sm, label, cfg, jobs, epochs, seed, tag):
    name = "crv-%s-%d-%s" % (label, seed, tag)
    c = {"Strategy": cfg.get("Strategy", "Random"), "RandomSeed": seed,
         "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "objective"},
         "ResourceLimits": {"MaxNumberOfTrainingJobs": jobs, "MaxParallelTrainingJobs": 3},
         "ParameterRanges": ranges(tuning.PROBLEMS["noisy_quadratic"]["space"])}
    c.update({k: v for k, v in cfg.items() if k != "Strategy"})
    static = {"problem": "noisy_quadratic", "epochs": epochs, "sleep": 0.05}
    req = {"HyperParameterTuningJobName": name, "HyperParameterTuningJobConfig": c,
           "TrainingJobDefinition": definition(static)}
    t0 = time.time()
    create(cl, req)
    d = wait_tuning(sm, name)
    wall = time.time() - t0
    train_s = 0.0
    for k in children(sm, name):
        if k.get("TrainingStartTime") and k.get("TrainingEndTime"):
            train_s += (k["TrainingEndTime"] - k["TrainingStartTime"]).total_seconds()
    best = d["BestTrainingJob"]["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
    return train_s, best, wall, d["TrainingJobStatusCounters"]["Stopped"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=24, help="training jobs of the curve task")
    ap.add_argument("--epochs", type=int, default=27, help="reports per curve-task job")
    ap.add_argument("--problems", default=",".join(tuning.PROBLEMS))
    ap.add_argument("--only", choices=("regret", "curve"), help="run one part")
    ap.add_argument("--quick", action="store_true", help="1 seed, budget 9, 2 problems, 9 curve jobs")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    if a.quick:
        a.seeds, a.budget, a.jobs, a.epochs, a.problems = 1, 9, 9, 9, "branin,mixed4"
    tag = "%x" % (int(time.time()) % 0xfffff)
    cl = fl.LocalCluster(3, ["--max-retries", "0"], prefix="trainctl-bench-tune-")
    err = cl.start()
    if err:
        raise SystemExit(err)
    out = {"regret": {}, "wall_s": {}, "curve": {}}
    try:
        sm = cl.client()
        print("%-16s %14s %14s %14s" % ("median regret", "ours_bayesian", "ours_random", "optuna_tpe"))
        for pname in a.problems.split(",") if a.only != "curve" else ():
            row = collections.defaultdict(list)
            wall = collections.defaultdict(list)
            for seed in range(a.seeds):
                for method, fn in (("ours_bayesian", lambda: run_ours(cl, sm, "Bayesian", pname, seed, a.budget, tag)),
                                   ("ours_random", lambda: run_ours(cl, sm, "Random", pname, seed, a.budget, tag)),
                                   ("optuna_tpe", lambda: run_optuna(cl, sm, pname, seed, a.budget, tag))):
                    r, w = fn()
                    row[method].append(r)
                    wall[method].append(w)
            med = {m: statistics.median(v) for m, v in row.items()}
            out["regret"][pname] = med
            out["wall_s"][pname] = {m: statistics.median(v) for m, v in wall.items()}
            print("%-16s %14.4g %14.4g %14.4g   (median wall per run: %s)" % (
                pname, med["ours_bayesian"], med["ours_random"], med["optuna_tpe"],
                ", ".join("%s %.1f s" % (m, statistics.median(v)) for m, v in wall.items())))
        if a.only == "regret":
            return 0
        print()
        print("curve task: %d jobs of %d reports, 3 in parallel, %d seed(s)" % (a.jobs, a.epochs, a.seeds))
        rules = (("off", {}), ("median", {"TrainingJobEarlyStoppingType": "Auto"}),
                 ("hyperband", {"Strategy": "Hyperband", "StrategyConfig": {
                     "HyperbandStrategyConfig": {"MinResource": 1, "MaxResource": a.epochs}}}))
        for label, cfg in rules:
            res = [curve_run(cl, sm, label, cfg, a.jobs, a.epochs, s, tag) for s in range(a.seeds)]
            train = statistics.median(r[0] for r in res)
            best = statistics.median(r[1] for r in res)
            out["curve"][label] = {"train_s": train, "best": best,
                                   "wall_s": statistics.median(r[2] for r in res),
                                   "stopped": statistics.median(r[3] for r in res)}
        base = out["curve"]["off"]
        for label in ("off", "median", "hyperband"):
            c = out["curve"][label]
            print("%-10s training %7.1f s (%+5.1f %%)  best %.4f (%+5.1f %%)  stopped early %d  wall %.1f s" % (
                label, c["train_s"], 100 * (c["train_s"] / base["train_s"] - 1), c["best"],
                100 * (c["best"] / base["best"] - 1), c["stopped"], c["wall_s"]))
    finally:
        cl.stop()
        cl.cleanup()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
