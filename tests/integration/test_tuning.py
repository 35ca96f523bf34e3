#!/usr/bin/python3
# trainctl-test: solo
"""Hyperparameter tuning jobs on the embedded local cluster (trainctld
--local-hosts 3), with tune_trainer.py (a known objective, best at x = 0.3,
y = -0.2, kind = good):

  (a) Random through boto3: every training job is an ordinary one (named
      <tuning>-NNN-<8 hex>, TuningJobArn, static and tuned hyperparameters,
      the tuning job's tags), and the counters, ObjectiveStatusCounters and
      BestTrainingJob agree with the training jobs themselves
  (b) ListTrainingJobsForHyperParameterTuningJob: sort by objective, status
      filter, pagination; ListHyperParameterTuningJobs filters and pages
  (c) each ParameterRanges rule broken once: ValidationException naming the
      field, nothing created
  (d) RandomSeed: the same seed gives the same hyperparameters
  (e) Grid: every combination once
  (f) Bayesian: completes, the best beats the median
  (g) Hyperband: poor jobs are stopped early with a reason, less training
      than running all to the end
  (g2) Hyperband over training jobs on 2 hosts: each host prints every
      report, the rules count one host's (none goes past MaxResource)
  (h) TrainingJobEarlyStoppingType Auto: the median rule stops poor jobs
  (i) StopHyperParameterTuningJob stops every running training job
  (j) kill -9 of trainctld mid-tuning: no duplicate, no lost training job
  (k) WarmStartConfig: the parent's results seed the child;
      OverallBestTrainingJob
  (l) failures: NonRetryableError counted, the tuning job Failed with a
      reason; TargetObjectiveMetricValue ends it early
  (m) Delete: refused while InProgress, then gone
  (q) BestObjectiveNotImproving and ConvergenceDetected end a flat search
  (p) a lost host: RetryableError, the same hyperparameters run again
  (r) a training job deleted after it ran still counts; the tuning job ends
  (o) trainctld killed between recording a training job and creating it:
      the job is created once after the restart
  (n) the SageMaker SDK's HyperparameterTuner.fit request and calls,
      replayed (recorded from the unmodified SDK v2.210.0)

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_tuning.py
BUILD names the build directory.
"""
import os
import re
import signal
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
expect = sc.expect
TRAINER = os.path.join(HERE, "tune_trainer.py")
NAME_RE = r"^%s-\d{3}-[0-9a-f]{8}$"


def definition(epochs=4, sleep=0.05, static=None, metric="loss", marker=None):
    """A training job definition; marker: FT_MARKER in its environment
    (a member the older botocore model lacks: send those raw)."""
    hps = {"epochs": str(epochs), "sleep": str(sleep), "_tuning_objective_metric": metric}
    hps.update(static or {})
    env = {"Environment": {"FT_MARKER": marker}} if marker else {}
    return dict(env, **{
        "StaticHyperParameters": hps,
        "AlgorithmSpecification": {"TrainingImage": "file://" + TRAINER, "TrainingInputMode": "File",
                                   "MetricDefinitions": [{"Name": "loss", "Regex": "loss=(.*?);"}]},
        "RoleArn": fl.ROLE,
        "OutputDataConfig": {"S3OutputPath": fl.OUT},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
    })


def ranges(x=True, y=True, kind=True):
    r = {}
    if x:
        r["ContinuousParameterRanges"] = [{"Name": "x", "MinValue": "-1", "MaxValue": "1"}]
    if y:
        r["IntegerParameterRanges"] = [{"Name": "y", "MinValue": "-2", "MaxValue": "2"}]
    if kind:
        r["CategoricalParameterRanges"] = [{"Name": "kind", "Values": ["good", "bad", "worse"]}]
    return r


def request(name, strategy="Random", jobs=6, parallel=3, rng=None, **cfg):
    c = {"Strategy": strategy,
         "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "loss"},
         "ResourceLimits": {"MaxNumberOfTrainingJobs": jobs, "MaxParallelTrainingJobs": parallel},
         "ParameterRanges": rng if rng is not None else ranges()}
    c.update(cfg)
    return {"HyperParameterTuningJobName": name, "HyperParameterTuningJobConfig": c,
            "TrainingJobDefinition": definition()}


def create_raw(cl, req):
    """CreateHyperParameterTuningJob as raw JSON 1.1 (members the older
    botocore model lacks, such as RandomSeed)."""
    r = sc.amz_json(cl.port, "CreateHyperParameterTuningJob", req)
    expect(r.status == 200, "create %s: %r" % (req["HyperParameterTuningJobName"], r))
    return r.json


def describe(sm, name):
    d = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    d.pop("ResponseMetadata", None)
    return d


def wait_tuning(sm, name, timeout=120, statuses=("Completed", "Stopped", "Failed")):
    deadline = time.time() + timeout
    d = None
    while time.time() < deadline:
        d = describe(sm, name)
        if d["HyperParameterTuningJobStatus"] in statuses:
            return d
        time.sleep(0.2)
    raise sc.Fail("%s not %s after %.0f s: %s" % (name, "/".join(statuses), timeout, sc.short(d)))


def children(sm, name, **kw):
    out, token = [], None
    while True:
        args = dict(HyperParameterTuningJobName=name, MaxResults=100, **kw)
        if token:
            args["NextToken"] = token
        r = sm.list_training_jobs_for_hyper_parameter_tuning_job(**args)
        out += r["TrainingJobSummaries"]
        token = r.get("NextToken")
        if not token:
            return out


def training_jobs_named(sm, prefix):
    return [j for j in sc.list_all(sm, NameContains=prefix)[0] if j["TrainingJobName"].startswith(prefix + "-")]


def check_consistent(sm, name, d, metric="loss"):
    """Counters and BestTrainingJob against the training jobs themselves."""
    kids = children(sm, name)
    jobs = {j["TrainingJobName"]: sm.describe_training_job(TrainingJobName=j["TrainingJobName"])
            for j in training_jobs_named(sm, name)}
    expect(sorted(jobs) == sorted(k["TrainingJobName"] for k in kids),
           "ListTrainingJobs %s vs tuning children %s" % (sorted(jobs), [k["TrainingJobName"] for k in kids]))
    counts = {"Completed": 0, "InProgress": 0, "RetryableError": 0, "NonRetryableError": 0, "Stopped": 0}
    objs = {"Succeeded": 0, "Pending": 0, "Failed": 0}
    best = None
    for n, j in jobs.items():
        st = j["TrainingJobStatus"]
        if st == "Failed":
            counts["RetryableError" if j.get("FailureReason", "").startswith("InternalServerError")
                   else "NonRetryableError"] += 1
        else:
            counts[st if st != "Stopping" else "InProgress"] += 1
        final = {m["MetricName"]: m["Value"] for m in j.get("FinalMetricDataList", [])}
        if st in ("Completed", "Stopped") and metric in final:
            objs["Succeeded"] += 1
            if best is None or final[metric] < best[1]:
                best = (n, final[metric])
        elif st in ("Completed", "Stopped", "Failed"):
            objs["Failed"] += 1
        else:
            objs["Pending"] += 1
        expect(re.match(NAME_RE % re.escape(name), n), "training job name %s" % n)
        expect(j.get("TuningJobArn") == d["HyperParameterTuningJobArn"], "%s TuningJobArn %r" % (n, j.get("TuningJobArn")))
    expect(d["TrainingJobStatusCounters"] == counts, "counters %s, jobs say %s" % (d["TrainingJobStatusCounters"], counts))
    expect(d["ObjectiveStatusCounters"] == objs, "objective counters %s, jobs say %s" % (d["ObjectiveStatusCounters"], objs))
    if best:
        b = d.get("BestTrainingJob") or {}
        got = (b.get("FinalHyperParameterTuningJobObjectiveMetric") or {}).get("Value")
        expect(got is not None and abs(got - best[1]) < 1e-9,
               "BestTrainingJob %s %r, the best job is %s" % (b.get("TrainingJobName"), got, best))
    return jobs, kids


class State:
    pass


def case_a(cl, sm, st):
    req = request("rnd", jobs=6, parallel=3)
    req["Tags"] = [{"Key": "team", "Value": "vision"}]
    arn = sm.create_hyper_parameter_tuning_job(**req)["HyperParameterTuningJobArn"]
    expect(arn.endswith(":hyper-parameter-tuning-job/rnd"), arn)
    d = wait_tuning(sm, "rnd")
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    jobs, kids = check_consistent(sm, "rnd", d)
    expect(len(jobs) == 6, "6 training jobs, not %d" % len(jobs))
    for n, j in jobs.items():
        hp = j["HyperParameters"]
        expect(hp.get("_tuning_objective_metric") == "loss" and hp.get("epochs") == "4",
               "%s static hyperparameters: %s" % (n, hp))
        expect(set(("x", "y", "kind")) <= set(hp), "%s tuned hyperparameters: %s" % (n, hp))
        expect(-1 <= float(hp["x"]) <= 1 and hp["y"] in ("-2", "-1", "0", "1", "2") and
               hp["kind"] in ("good", "bad", "worse"), "%s out of range: %s" % (n, hp))
        tags = sm.list_tags(ResourceArn=j["TrainingJobArn"])["Tags"]
        expect({"Key": "team", "Value": "vision"} in tags, "%s tags %s" % (n, tags))
    for k in kids:
        expect(k["TuningJobName"] == "rnd" and k["ObjectiveStatus"] == "Succeeded", sc.short(k))
        expect(k["TunedHyperParameters"] == {p: jobs[k["TrainingJobName"]]["HyperParameters"][p]
                                             for p in ("x", "y", "kind")}, sc.short(k))
    found = sm.search(Resource="TrainingJob", SearchExpression={"Filters": [
        {"Name": "TuningJobArn", "Operator": "Equals", "Value": arn}]})["Results"]
    expect(sorted(r["TrainingJob"]["TrainingJobName"] for r in found) == sorted(jobs),
           "Search by TuningJobArn: %s" % [r["TrainingJob"]["TrainingJobName"] for r in found])
    tags = sm.list_tags(ResourceArn=arn)["Tags"]
    expect(tags == [{"Key": "team", "Value": "vision"}], "tuning job tags %s" % tags)
    sm.add_tags(ResourceArn=arn, Tags=[{"Key": "stage", "Value": "dev"}])
    sm.delete_tags(ResourceArn=arn, TagKeys=["team"])
    tags = sm.list_tags(ResourceArn=arn)["Tags"]
    expect(tags == [{"Key": "stage", "Value": "dev"}], "after add/delete: %s" % tags)
    sc.expect_error(lambda: sm.list_tags(ResourceArn=arn.replace("/rnd", "/nosuch")), "ValidationException",
                    contains="does not exist")
    expect(d["HyperParameterTuningJobConfig"]["Strategy"] == "Random", "config echoed")
    expect(d["TrainingJobDefinition"]["StaticHyperParameters"]["epochs"] == "4", "definition echoed")
    expect(d["HyperParameterTuningEndTime"] >= d["CreationTime"], "end time")
    raw = sc.amz_json(cl.port, "DescribeHyperParameterTuningJob", {"HyperParameterTuningJobName": "rnd"}).json
    expect(raw["ConsumedResources"]["RuntimeInSeconds"] >= 0, "ConsumedResources: %s" % sc.short(raw))
    expect("NumberOfTrainingJobsObjectiveNotImproving" in raw["TuningJobCompletionDetails"], "completion details")


def case_b(cl, sm, st):
    kids = children(sm, "rnd", SortBy="FinalObjectiveMetricValue", SortOrder="Ascending")
    vals = [k["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] for k in kids]
    expect(vals == sorted(vals) and len(vals) == 6, "ascending objectives %s" % vals)
    d = describe(sm, "rnd")
    expect(kids[0]["TrainingJobName"] == d["BestTrainingJob"]["TrainingJobName"], "best first")
    page = sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName="rnd", MaxResults=4)
    expect(len(page["TrainingJobSummaries"]) == 4 and page.get("NextToken"), "page of 4 with a token")
    rest = sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName="rnd", MaxResults=4,
                                                               NextToken=page["NextToken"])
    expect(len(rest["TrainingJobSummaries"]) == 2 and not rest.get("NextToken"), "second page of 2")
    expect(children(sm, "rnd", StatusEquals="Failed") == [], "no failed ones")
    lst = sm.list_hyper_parameter_tuning_jobs(NameContains="rn", StatusEquals="Completed")
    names = [s["HyperParameterTuningJobName"] for s in lst["HyperParameterTuningJobSummaries"]]
    expect(names == ["rnd"], "NameContains/StatusEquals: %s" % names)
    s = lst["HyperParameterTuningJobSummaries"][0]
    expect(s["Strategy"] == "Random" and s["TrainingJobStatusCounters"]["Completed"] == 6 and
           s["ResourceLimits"]["MaxNumberOfTrainingJobs"] == 6, sc.short(s))
    sc.expect_error(lambda: sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="nope"),
                    ("ResourceNotFound",), contains="nope")
    sc.expect_error(lambda: sm.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="rnd", NextToken="zz"), "ValidationException")


def case_c(cl, sm, st):
    bad = [
        ("ContinuousParameterRanges", [{"Name": "x", "MinValue": "1", "MaxValue": "0"}], "MinValue"),
        ("ContinuousParameterRanges", [{"Name": "x", "MinValue": "a", "MaxValue": "1"}], "MinValue"),
        ("ContinuousParameterRanges", [{"Name": "x", "MinValue": "0", "MaxValue": "1",
                                        "ScalingType": "Logarithmic"}], "Logarithmic"),
        ("ContinuousParameterRanges", [{"Name": "x", "MinValue": "0.5", "MaxValue": "1.5",
                                        "ScalingType": "ReverseLogarithmic"}], "ReverseLogarithmic"),
        ("IntegerParameterRanges", [{"Name": "y", "MinValue": "1.5", "MaxValue": "3"}], "MinValue"),
        ("IntegerParameterRanges", [{"Name": "y", "MinValue": "1", "MaxValue": "9",
                                     "ScalingType": "ReverseLogarithmic"}], "ReverseLogarithmic"),
        ("IntegerParameterRanges", [{"Name": "y", "MinValue": "-1", "MaxValue": "9",
                                     "ScalingType": "Logarithmic"}], "Logarithmic"),
        ("CategoricalParameterRanges", [{"Name": "k", "Values": ["a", "a"]}], "twice"),
        ("CategoricalParameterRanges", [{"Name": "k", "Values": []}], "values"),
        ("CategoricalParameterRanges", [{"Name": "x", "Values": ["a"]}], "more than one range"),
        ("IntegerParameterRanges", [{"Name": "epochs", "MinValue": "1", "MaxValue": "3"}], "StaticHyperParameters"),
    ]
    for i, (kind, rng, word) in enumerate(bad):
        r = ranges(x=True, y=False, kind=False) if kind != "ContinuousParameterRanges" else {}
        r.setdefault(kind, [])
        r[kind] = r[kind] + rng
        name = "bad%d" % i
        resp = sc.amz_json(cl.port, "CreateHyperParameterTuningJob", request(name, rng=r))
        expect(resp.status == 400 and resp.json and resp.json.get("__type", "").endswith("ValidationException"),
               "%s %s: %r" % (kind, rng, resp))
        msg = resp.json.get("message") or resp.json.get("Message") or ""
        expect(word.lower() in msg.lower(), "%s %s: message %r lacks %r" % (kind, rng, msg, word))
        expect(kind in msg or kind[0].lower() + kind[1:] in msg, "message names the field: %r" % msg)
    # Strategy rules (Hyperband infers MaxResource from "epochs").
    no_epochs = definition()
    del no_epochs["StaticHyperParameters"]["epochs"]
    for name, req, word in [
        ("badg", request("badg", "Grid", rng=ranges(kind=False)), "Grid"),
        ("badh", dict(request("badh", "Hyperband"), TrainingJobDefinition=no_epochs), "MaxResource"),
        ("badhe", request("badhe", "Hyperband", TrainingJobEarlyStoppingType="Auto",
                          StrategyConfig={"HyperbandStrategyConfig": {"MaxResource": 4}}), "Off"),
        ("badm", dict(request("badm"), TrainingJobDefinition=dict(definition(), StaticHyperParameters={})), None),
        ("bado", request("bado", HyperParameterTuningJobObjective={"Type": "Minimize", "MetricName": "acc"}),
         "MetricDefinitions"),
        ("badu", dict(request("badu"), Autotune={"Mode": "Enabled"}), "Autotune"),
        ("badw", dict(request("badw"), WarmStartConfig={"ParentHyperParameterTuningJobs": [
            {"HyperParameterTuningJobName": "nosuch"}], "WarmStartType": "TransferLearning"}), "nosuch"),
    ]:
        if word is None:
            continue
        resp = sc.amz_json(cl.port, "CreateHyperParameterTuningJob", req)
        msg = (resp.json or {}).get("message", "")
        expect(resp.status == 400 and word in msg, "%s: %r" % (name, resp))
    lst = sm.list_hyper_parameter_tuning_jobs(NameContains="bad")["HyperParameterTuningJobSummaries"]
    expect(lst == [], "nothing created: %s" % lst)
    expect(training_jobs_named(sm, "bad0") == [], "no training jobs")


def points(sm, name):
    return [tuple(sorted(k["TunedHyperParameters"].items()))
            for k in sorted(children(sm, name), key=lambda k: k["TrainingJobName"])]


def case_d(cl, sm, st):
    for n in ("seed1", "seed2"):
        req = request(n, jobs=4, parallel=2, RandomSeed=1234)
        create_raw(cl, req)
    for n in ("seed1", "seed2"):
        wait_tuning(sm, n)
    a, b = points(sm, "seed1"), points(sm, "seed2")
    expect(a == b and len(a) == 4, "same seed, same points:\n%s\n%s" % (a, b))
    r = sc.amz_json(cl.port, "DescribeHyperParameterTuningJob", {"HyperParameterTuningJobName": "seed1"})
    expect(r.json["HyperParameterTuningJobConfig"]["RandomSeed"] == 1234, "seed echoed: %r" % r)


def case_e(cl, sm, st):
    rng = {"CategoricalParameterRanges": [{"Name": "kind", "Values": ["good", "bad"]},
                                          {"Name": "y", "Values": ["-1", "0", "1"]}]}
    req = request("grid", "Grid", jobs=None, parallel=3, rng=rng)
    del req["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"]
    create_raw(cl, req)
    d = wait_tuning(sm, "grid")
    combos = sorted(points(sm, "grid"))
    want = sorted(tuple(sorted({"kind": k, "y": y}.items())) for k in ("good", "bad") for y in ("-1", "0", "1"))
    expect(combos == want, "every combination once: %s" % combos)
    check_consistent(sm, "grid", d)


def case_f(cl, sm, st):
    req = request("bayes", "Bayesian", jobs=12, parallel=3, RandomSeed=7)
    create_raw(cl, req)
    d = wait_tuning(sm, "bayes", timeout=180)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    _, kids = check_consistent(sm, "bayes", d)
    vals = [k["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] for k in kids]
    best = d["BestTrainingJob"]["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
    expect(len(vals) == 12 and best < statistics.median(vals), "best %s vs median %s" % (best, statistics.median(vals)))


def stopped_early(sm, name):
    out = []
    for j in training_jobs_named(sm, name):
        d = sm.describe_training_job(TrainingJobName=j["TrainingJobName"])
        msgs = " ".join(t.get("StatusMessage", "") for t in d.get("SecondaryStatusTransitions", []))
        if d["TrainingJobStatus"] == "Stopped":
            out.append((j["TrainingJobName"], msgs))
    return out


def run_hyperband(cl, sm, name, d0, jobs, parallel, max_r, seed):
    """A Hyperband tuning job (MinResource 1) of d0, run to Completed."""
    req = request(name, "Hyperband", jobs=jobs, parallel=parallel, RandomSeed=seed,
                  StrategyConfig={"HyperbandStrategyConfig": {"MinResource": 1, "MaxResource": max_r}})
    req["TrainingJobDefinition"] = d0
    create_raw(cl, req)
    d = wait_tuning(sm, name, timeout=240)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    check_consistent(sm, name, d)
    return d


def case_g(cl, sm, st):
    run_hyperband(cl, sm, "hb", definition(epochs=9, sleep=0.15), 12, 3, 9, 3)
    early = stopped_early(sm, "hb")
    expect(early, "Hyperband stopped no job early")
    for n, msgs in early:
        expect("Hyperband" in msgs or "MaxResource" in msgs, "%s stopped without a reason: %s" % (n, msgs))


def case_g2(cl, sm, st):
    """Children on 2 hosts each print every report twice (once per host):
    the rules count one host's, so none goes past MaxResource (6)."""
    d0 = definition(epochs=6, sleep=0.1)
    d0["ResourceConfig"]["InstanceCount"] = 2
    d = run_hyperband(cl, sm, "hb2", d0, 3, 1, 6, 5)
    for n, msgs in stopped_early(sm, "hb2"):
        expect("MaxResource" not in msgs, "%s stopped as past MaxResource: %s" % (n, msgs))
        for k in re.findall(r"after (\d+) reports", msgs):
            expect(int(k) <= 6, "%s judged after %s reports of 6: %s" % (n, k, msgs))
    expect(d["TrainingJobStatusCounters"]["Completed"] >= 1, "no 2-host job ran to the end: %s" % sc.short(d))


def case_h(cl, sm, st):
    req = request("med", jobs=12, parallel=3, RandomSeed=11, TrainingJobEarlyStoppingType="Auto")
    req["TrainingJobDefinition"] = definition(epochs=10, sleep=0.15)
    create_raw(cl, req)
    d = wait_tuning(sm, "med", timeout=240)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    check_consistent(sm, "med", d)
    early = stopped_early(sm, "med")
    expect(early, "the median rule stopped no job")
    for n, msgs in early:
        expect("median" in msgs, "%s stopped without the rule's reason: %s" % (n, msgs))


def case_i(cl, sm, st):
    req = request("stp", jobs=9, parallel=3)
    req["TrainingJobDefinition"] = definition(epochs=400, sleep=0.1, marker="tune-stp")
    create_raw(cl, req)
    deadline = time.time() + 60
    while time.time() < deadline:
        running = [k for k in children(sm, "stp") if k["TrainingJobStatus"] == "InProgress"]
        if len(running) == 3 and len(fl.procs_with("tune-stp")) >= 3:
            break
        time.sleep(0.2)
    expect(len(running) == 3, "3 running before the stop: %s" % running)
    sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="stp")
    d = wait_tuning(sm, "stp", timeout=60)
    expect(d["HyperParameterTuningJobStatus"] == "Stopped", sc.short(d))
    jobs, _ = check_consistent(sm, "stp", d)
    expect(len(jobs) == 3 and all(j["TrainingJobStatus"] == "Stopped" for j in jobs.values()),
           "every training job Stopped, none launched after: %s" %
           {n: j["TrainingJobStatus"] for n, j in jobs.items()})
    left = fl.wait_no_procs("tune-stp", 10)
    expect(not left, "no training process left: %s" % left)
    sc.expect_error(lambda: sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="stp"),
                    "ValidationException", contains="Stopped")


def case_j(cl, sm, st):
    req = request("k9", jobs=9, parallel=3, RandomSeed=5)
    req["TrainingJobDefinition"] = definition(epochs=6, sleep=0.1)
    create_raw(cl, req)
    deadline = time.time() + 60
    while time.time() < deadline and len(children(sm, "k9")) < 4:
        time.sleep(0.05)
    cl.kill9()
    err = cl.start()
    expect(err is None, "restart: %s" % err)
    sm2 = cl.client()
    d = wait_tuning(sm2, "k9", timeout=180)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    jobs, kids = check_consistent(sm2, "k9", d)
    names = [k["TrainingJobName"] for k in kids]
    expect(len(names) == 9 and len(set(names)) == 9, "9 distinct training jobs, not %s" % names)
    idx = sorted(int(n.split("-")[1]) for n in names)
    expect(idx == list(range(1, 10)), "numbers 001..009: %s" % idx)
    return sm2


def case_o(cl, sm, st):
    """trainctld dies (SIGKILL) between recording a training job and
    creating it; after a restart that job is created once."""
    req = request("crash", jobs=5, parallel=2, RandomSeed=4)
    os.environ["TRAINCTLD_CRASH_POINT"] = "tuning-row:3"
    try:
        cl.kill9()
        err = cl.start()
        expect(err is None, "restart with the crash point: %s" % err)
        create_raw(cl, req)
        deadline = time.time() + 60
        while time.time() < deadline and cl.proc.poll() is None:
            time.sleep(0.05)
        expect(cl.proc.poll() is not None, "trainctld did not reach the crash point")
        cl.proc = None
    finally:
        del os.environ["TRAINCTLD_CRASH_POINT"]
    err = cl.start()
    expect(err is None, "restart: %s" % err)
    sm2 = cl.client()
    d = wait_tuning(sm2, "crash", timeout=120)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    jobs, kids = check_consistent(sm2, "crash", d)
    idx = sorted(int(n.split("-")[1]) for n in jobs)
    expect(idx == [1, 2, 3, 4, 5], "jobs 001..005 once each: %s" % sorted(jobs))


def case_p(cl, sm, st):
    """A training job whose host dies fails with InternalServerError: a
    RetryableError, run again with the same hyperparameters, outside the
    budget."""
    req = request("rty", jobs=2, parallel=1, RandomSeed=8)
    req["TrainingJobDefinition"] = definition(epochs=30, sleep=0.1, marker="tune-rty")
    create_raw(cl, req)
    deadline = time.time() + 60
    first = None
    while time.time() < deadline and not first:
        run = [k["TrainingJobName"] for k in children(sm, "rty") if k["TrainingJobStatus"] == "InProgress"]
        if run and fl.procs_with("tune-rty"):
            first = run[0]
        time.sleep(0.1)
    expect(first, "no training job running")
    host = cl.host_of(first, "algo-1")
    agents = cl.agent_pids()
    expect(host in agents, "no agent for %s: %s" % (host, agents))
    # Frozen past the host deadline: the host is lost, the job fails.
    os.kill(agents[host], signal.SIGSTOP)
    try:
        fl.wait_job(sm, first, lambda j: j["TrainingJobStatus"] == "Failed", 30)
    finally:
        os.kill(agents[host], signal.SIGCONT)
    d = wait_tuning(sm, "rty", timeout=180)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    jobs, kids = check_consistent(sm, "rty", d)
    c = d["TrainingJobStatusCounters"]
    expect(c["RetryableError"] == 1 and c["Completed"] == 2 and len(jobs) == 3, "counters %s" % c)
    failed = [k for k in kids if k["TrainingJobStatus"] == "Failed"][0]
    again = [k for k in kids if k["TrainingJobStatus"] == "Completed" and
             k["TunedHyperParameters"] == failed["TunedHyperParameters"]]
    expect(again, "the failed point ran again: %s" % sc.short(kids))
    expect(jobs[failed["TrainingJobName"]]["FailureReason"].startswith("InternalServerError"),
           jobs[failed["TrainingJobName"]]["FailureReason"])


def case_k(cl, sm, st):
    req = request("ws", "Bayesian", jobs=4, parallel=2, RandomSeed=9)
    req["WarmStartConfig"] = {"ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": "rnd"}],
                              "WarmStartType": "IdenticalDataAndAlgorithm"}
    create_raw(cl, req)
    d = wait_tuning(sm, "ws", timeout=120)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    expect(d["WarmStartConfig"]["WarmStartType"] == "IdenticalDataAndAlgorithm", "echoed")
    ob = d.get("OverallBestTrainingJob")
    expect(ob, "OverallBestTrainingJob missing")
    parent_best = describe(sm, "rnd")["BestTrainingJob"]["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
    own_best = d["BestTrainingJob"]["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
    want = min(parent_best, own_best)
    expect(abs(ob["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] - want) < 1e-9,
           "overall best %s, parent %s, own %s" % (ob, parent_best, own_best))
    resp = sc.amz_json(cl.port, "CreateHyperParameterTuningJob", dict(
        request("ws2"), WarmStartConfig={"ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": "ws2"}],
                                         "WarmStartType": "TransferLearning"}))
    expect(resp.status == 400, "own parent refused: %r" % resp)


def case_l(cl, sm, st):
    req = request("fl", jobs=6, parallel=2)
    req["TrainingJobDefinition"] = definition(static={"fail": "client"})
    sm.create_hyper_parameter_tuning_job(**req)
    d = wait_tuning(sm, "fl", timeout=120)
    expect(d["HyperParameterTuningJobStatus"] == "Failed" and d.get("FailureReason"), sc.short(d))
    jobs, _ = check_consistent(sm, "fl", d)
    expect(d["TrainingJobStatusCounters"]["NonRetryableError"] >= 3 and len(jobs) < 6,
           "fails fast: %s" % d["TrainingJobStatusCounters"])
    req = request("tgt", jobs=30, parallel=2, RandomSeed=2,
                  TuningJobCompletionCriteria={"TargetObjectiveMetricValue": 2.5})
    create_raw(cl, req)
    d = wait_tuning(sm, "tgt", timeout=180)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    best = d["BestTrainingJob"]["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
    n = len(children(sm, "tgt"))
    expect(best <= 2.5 and n < 30, "target reached after %d jobs, best %s" % (n, best))


def case_q(cl, sm, st):
    """A flat objective (the tuned z does not matter): the best does not
    improve, and the search converges."""
    flat = {"ContinuousParameterRanges": [{"Name": "z", "MinValue": "0", "MaxValue": "1"}]}
    req = request("flat", jobs=30, parallel=1, rng=flat, RandomSeed=6,
                  TuningJobCompletionCriteria={"BestObjectiveNotImproving": {
                      "MaxNumberOfTrainingJobsNotImproving": 3}})
    req["TrainingJobDefinition"] = definition(epochs=2, sleep=0.01)
    create_raw(cl, req)
    d = wait_tuning(sm, "flat", timeout=120)
    n = len(children(sm, "flat"))
    raw = sc.amz_json(cl.port, "DescribeHyperParameterTuningJob", {"HyperParameterTuningJobName": "flat"}).json
    expect(d["HyperParameterTuningJobStatus"] == "Completed" and n == 4,
           "ends after 1 + 3 jobs without improvement, not %d: %s" % (n, sc.short(raw)))
    expect(raw["TuningJobCompletionDetails"]["NumberOfTrainingJobsObjectiveNotImproving"] == 3,
           sc.short(raw["TuningJobCompletionDetails"]))
    req = request("conv", "Bayesian", jobs=40, parallel=3, rng=flat, RandomSeed=6,
                  TuningJobCompletionCriteria={"ConvergenceDetected": {"CompleteOnConvergence": "Enabled"}})
    req["TrainingJobDefinition"] = definition(epochs=2, sleep=0.01)
    create_raw(cl, req)
    d = wait_tuning(sm, "conv", timeout=180)
    n = len(children(sm, "conv"))
    raw = sc.amz_json(cl.port, "DescribeHyperParameterTuningJob", {"HyperParameterTuningJobName": "conv"}).json
    expect(d["HyperParameterTuningJobStatus"] == "Completed" and n < 40 and
           raw["TuningJobCompletionDetails"].get("ConvergenceDetectedTime"),
           "converged after %d jobs: %s" % (n, sc.short(raw["TuningJobCompletionDetails"])))


def case_r(cl, sm, st):
    """A training job deleted after it ran still counts against the
    budget, and the tuning job still ends."""
    req = request("dlk", jobs=3, parallel=1)
    req["TrainingJobDefinition"] = definition(epochs=8, sleep=0.1)
    sm.create_hyper_parameter_tuning_job(**req)
    deadline = time.time() + 60
    first = None
    while time.time() < deadline and not first:
        done = [k["TrainingJobName"] for k in children(sm, "dlk") if k["TrainingJobStatus"] == "Completed"]
        first = done[0] if done else None
        time.sleep(0.05)
    expect(first, "no training job completed")
    # DeleteTrainingJob is in the newer model only: sent raw.
    r = sc.amz_json(cl.port, "DeleteTrainingJob", {"TrainingJobName": first})
    expect(r.status == 200, "delete %s: %r" % (first, r))
    d = wait_tuning(sm, "dlk", timeout=120)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    names = [k["TrainingJobName"] for k in children(sm, "dlk")]
    expect(len(names) == 2 and first not in names, "3 launched, the deleted one not listed: %s" % names)


def case_m(cl, sm, st):
    req = request("del", jobs=3, parallel=1)
    req["TrainingJobDefinition"] = definition(epochs=50, sleep=0.1)
    sm.create_hyper_parameter_tuning_job(**req)
    r = sc.amz_json(cl.port, "DeleteHyperParameterTuningJob", {"HyperParameterTuningJobName": "del"})
    expect(r.status == 400 and "InProgress" in (r.json or {}).get("message", ""), "delete refused: %r" % r)
    # Stopped once it has a training job of its own, the one that must stay.
    deadline = time.time() + 60
    while time.time() < deadline and not training_jobs_named(sm, "del"):
        time.sleep(0.05)
    expect(training_jobs_named(sm, "del"), "no training job was created in 60 s")
    sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="del")
    wait_tuning(sm, "del", timeout=60)
    r = sc.amz_json(cl.port, "DeleteHyperParameterTuningJob", {"HyperParameterTuningJobName": "del"})
    expect(r.status == 200, "delete: %r" % r)
    sc.expect_error(lambda: describe(sm, "del"), ("ResourceNotFound",))
    expect(training_jobs_named(sm, "del"), "its training jobs stay")


def sdk_request(name):
    """The CreateHyperParameterTuningJob body the unmodified SageMaker SDK
    v2.210.0 sends for HyperparameterTuner(PyTorch(...), objective_metric_name
    ="train:loss", hyperparameter_ranges={"lr": ContinuousParameter(0.01,
    0.1)}, max_jobs=2, max_parallel_jobs=1).fit(...), as recorded: Bayesian,
    ScalingType Auto, empty range lists, HyperParameterTuningResourceConfig
    instead of ResourceConfig, the SDK's quoted sagemaker_* static
    hyperparameters. Only the image (here a file:// program) and the
    metric's regex differ."""
    return {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": {
            "Strategy": "Bayesian",
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 2, "MaxParallelTrainingJobs": 1},
            "TrainingJobEarlyStoppingType": "Off",
            "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "train:loss"},
            "ParameterRanges": {
                "ContinuousParameterRanges": [{"Name": "x", "MinValue": "0.01", "MaxValue": "0.1",
                                               "ScalingType": "Auto"}],
                "CategoricalParameterRanges": [], "IntegerParameterRanges": []}},
        "TrainingJobDefinition": {
            "StaticHyperParameters": {
                "epochs": "2", "sagemaker_program": "\"train.py\"", "sagemaker_container_log_level": "20",
                "sagemaker_job_name": "\"%s\"" % name, "sagemaker_region": "\"us-east-1\"",
                "sagemaker_estimator_class_name": "\"PyTorch\"",
                "sagemaker_estimator_module": "\"sagemaker.pytorch.estimator\""},
            "RoleArn": fl.ROLE,
            "OutputDataConfig": {"S3OutputPath": fl.OUT},
            "StoppingCondition": {"MaxRuntimeInSeconds": 600},
            "HyperParameterTuningResourceConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.large",
                                                   "VolumeSizeInGB": 30},
            "AlgorithmSpecification": {
                "TrainingInputMode": "File",
                "MetricDefinitions": [{"Name": "train:loss", "Regex": "loss=([0-9.]+)"}],
                "TrainingImage": "file://" + TRAINER}}}


def case_n(cl, sm, st):
    """Then tuner.wait(), tuner.best_training_job(), tuner.analytics()
    .dataframe() and HyperparameterTuner.attach() read what they read."""
    name = "sdk-hpo-1"
    create_raw(cl, sdk_request(name))
    # tuner.wait(): Describe until the status is terminal; then
    # tuner.best_training_job(): Describe's BestTrainingJob.TrainingJobName.
    d = wait_tuning(sm, name, timeout=120)
    expect(d["HyperParameterTuningJobStatus"] == "Completed", sc.short(d))
    best = d["BestTrainingJob"]["TrainingJobName"]
    job = sm.describe_training_job(TrainingJobName=best)
    expect(job["ResourceConfig"]["InstanceType"] == "ml.m5.large" and
           job["ResourceConfig"]["VolumeSizeInGB"] == 30, "ResourceConfig from the tuning one: %s" % job["ResourceConfig"])
    expect(job["HyperParameters"]["sagemaker_job_name"] == '"%s"' % name, "static passed through")
    expect(job["HyperParameters"].get("_tuning_objective_metric") == "train:loss",
           "the service adds _tuning_objective_metric: %s" % job["HyperParameters"])
    check_consistent(sm, name, d, "train:loss")
    # HyperparameterTuner.attach(): Describe's definition as an estimator's
    # job: StaticHyperParameters with _tuning_objective_metric (deleted by
    # the SDK, KeyError without it) and ResourceConfig.
    td = d["TrainingJobDefinition"]
    expect(td["StaticHyperParameters"].get("_tuning_objective_metric") == "train:loss" and
           td["ResourceConfig"] == {"InstanceCount": 1, "InstanceType": "ml.m5.large", "VolumeSizeInGB": 30},
           "definition for attach: %s" % sc.short(td))
    # tuner.analytics().dataframe(): the paginator over the training jobs.
    rows = [r for page in sm.get_paginator("list_training_jobs_for_hyper_parameter_tuning_job").paginate(
        HyperParameterTuningJobName=name) for r in page["TrainingJobSummaries"]]
    expect(len(rows) == 2 and all("FinalHyperParameterTuningJobObjectiveMetric" in r for r in rows),
           "analytics rows %s" % sc.short(rows))


def main():
    tap = sc.Tap()
    cl = fl.LocalCluster(3, ["--max-retries", "0", "--heartbeat-ms", "200", "--host-deadline-ms", "1000"],
                         prefix="trainctl-tune-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 3 starts", err):
        sm = cl.client()
        st = State()
        tap.log_hint = lambda: cl.log_tail(30)
        if tap.case("(a) Random: ordinary training jobs; counters and best agree with them", case_a, cl, sm, st):
            tap.case("(b) list training jobs of a tuning job: sort, filter, pages; list tuning jobs", case_b, cl, sm, st)
            tap.case("(k) WarmStartConfig seeds the child; OverallBestTrainingJob", case_k, cl, sm, st)
        tap.case("(n) the SageMaker SDK's HyperparameterTuner.fit request, replayed", case_n, cl, sm, st)
        tap.case("(c) each ParameterRanges rule broken once: ValidationException, nothing created", case_c, cl, sm, st)
        tap.case("(d) RandomSeed: the same seed, the same hyperparameters", case_d, cl, sm, st)
        tap.case("(e) Grid: every combination once", case_e, cl, sm, st)
        tap.case("(f) Bayesian: the best beats the median", case_f, cl, sm, st)
        tap.case("(g) Hyperband stops poor jobs early, with a reason", case_g, cl, sm, st)
        tap.case("(g2) Hyperband on 2-host training jobs counts one host's reports", case_g2, cl, sm, st)
        tap.case("(h) early stopping Auto: the median rule stops poor jobs", case_h, cl, sm, st)
        tap.case("(i) StopHyperParameterTuningJob stops every running training job", case_i, cl, sm, st)
        tap.case("(l) failures counted as NonRetryableError, Failed; the target ends early", case_l, cl, sm, st)
        tap.case("(p) a host lost: RetryableError, run again with the same hyperparameters", case_p, cl, sm, st)
        tap.case("(q) completion criteria: best not improving; convergence", case_q, cl, sm, st)
        tap.case("(r) a training job deleted after it ran: counted, the tuning job ends", case_r, cl, sm, st)
        tap.case("(m) delete: refused while InProgress, then gone; its training jobs stay", case_m, cl, sm, st)
        tap.case("(j) kill -9 of trainctld mid-tuning: no duplicate, none lost", case_j, cl, sm, st)
        tap.case("(o) a crash between recording a training job and creating it: created once",
                 case_o, cl, cl.client(), st)
    rc, killed = cl.stop()
    time.sleep(0.3)
    cl.check_stopped(tap, rc, killed)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
