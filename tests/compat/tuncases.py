"""Hyperparameter tuning jobs through the SageMaker clients (not a test
itself): the cases that test_tuning_boto3.py (Debian /usr/bin/python3:
boto3 1.26, botocore 1.29, model M22) and tuning_new.py (pyenv python3:
botocore 1.43, model M26) both run, and the requests that
test_awscli_tuning.sh gives both aws CLIs.

A tuning job here is a small Random search over x, y and kind of
tests/integration/tune_trainer.py (a file:// training image with a known
objective, best at x = 0.3, y = -0.2, kind = good), each training job a
few reports a tenth of a second apart, on trainctld --local-hosts 3.
"""
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smcompat as C  # noqa: E402

TRAINER = os.path.join(C.REPO, "tests", "integration", "tune_trainer.py")
OUT = "s3://tuncompat/out"
TUNING_ARN_RE = r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:hyper-parameter-tuning-job/%s$"
# Reports of a training job meant to be stopped: about 250 s at 0.1 s each,
# within MaxRuntimeInSeconds, so it still runs when a slow run stops it.
LONG_EPOCHS = 2500
COUNTERS = ("Completed", "InProgress", "RetryableError", "NonRetryableError", "Stopped")


def definition(epochs=4, sleep=0.1):
    """A training job definition running tune_trainer.py: epochs reports,
    sleep seconds apart; the objective metric is loss (minimized)."""
    return {
        "StaticHyperParameters": {"epochs": str(epochs), "sleep": str(sleep),
                                  "_tuning_objective_metric": "loss"},
        "AlgorithmSpecification": {"TrainingImage": "file://" + TRAINER, "TrainingInputMode": "File",
                                   "MetricDefinitions": [{"Name": "loss", "Regex": "loss=(.*?);"}]},
        "RoleArn": C.ROLE,
        "OutputDataConfig": {"S3OutputPath": OUT},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
    }


def ranges():
    return {"ContinuousParameterRanges": [{"Name": "x", "MinValue": "-1", "MaxValue": "1",
                                           "ScalingType": "Linear"}],
            "IntegerParameterRanges": [{"Name": "y", "MinValue": "-2", "MaxValue": "2"}],
            "CategoricalParameterRanges": [{"Name": "kind", "Values": ["good", "bad", "worse"]}]}


def request(name, jobs=3, parallel=3, epochs=4, sleep=0.1, **cfg):
    """A CreateHyperParameterTuningJob request: Random, minimize loss; cfg:
    more members of HyperParameterTuningJobConfig."""
    c = {"Strategy": "Random",
         "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "loss"},
         "ResourceLimits": {"MaxNumberOfTrainingJobs": jobs, "MaxParallelTrainingJobs": parallel},
         "ParameterRanges": ranges()}
    c.update(cfg)
    return {"HyperParameterTuningJobName": name, "HyperParameterTuningJobConfig": c,
            "TrainingJobDefinition": definition(epochs, sleep)}


def log_zero_request(name):
    """Broken on purpose: Logarithmic scaling with MinValue 0."""
    req = request(name)
    req["HyperParameterTuningJobConfig"]["ParameterRanges"]["ContinuousParameterRanges"] = [
        {"Name": "x", "MinValue": "0", "MaxValue": "1", "ScalingType": "Logarithmic"}]
    return req


def start_daemon(hosts=3):
    """trainctld --local-hosts HOSTS on a free port; waits until the hosts
    are ready. Returns (daemon, None) or (daemon, why not)."""
    d = C.Daemon(name="trainctld-tuning", extra=["--local-hosts", str(hosts)])
    why = d.start()
    if why:
        return d, why
    deadline = time.time() + 30
    last = None
    while time.time() < deadline:
        try:
            r = C.http_request(d.port, "GET", "/v1/hosts", timeout=2)
            last = r
            hs = (r.json or {}).get("hosts") or []
            if r.status == 200 and sum(h.get("state") in ("ready", "busy") for h in hs) >= hosts:
                return d, None
        except OSError as e:
            last = e
        time.sleep(0.05)
    return d, "%d hosts not ready after 30 s: %r\n%s" % (hosts, last, d.log_tail())


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
    raise C.Fail("%s not %s after %.0f s: %s" % (name, "/".join(statuses), timeout, C.short(d)))


def children(sm, name, page_size=None, **kw):
    """Every training job of a tuning job through the paginator, and the
    page lengths."""
    cfg = {"PageSize": page_size} if page_size else {}
    rows, pages = [], []
    for p in sm.get_paginator("list_training_jobs_for_hyper_parameter_tuning_job").paginate(
            HyperParameterTuningJobName=name, PaginationConfig=cfg, **kw):
        pages.append(len(p["TrainingJobSummaries"]))
        rows.extend(p["TrainingJobSummaries"])
    return rows, pages


def tuning_jobs(sm, page_size=None, **kw):
    cfg = {"PageSize": page_size} if page_size else {}
    rows, pages = [], []
    for p in sm.get_paginator("list_hyper_parameter_tuning_jobs").paginate(PaginationConfig=cfg, **kw):
        pages.append(len(p["HyperParameterTuningJobSummaries"]))
        rows.extend(p["HyperParameterTuningJobSummaries"])
    return rows, pages


def check_summary_row(k, tuning):
    """A HyperParameterTrainingJobSummary as a client parsed it."""
    C.expect(k["TuningJobName"] == tuning and k["TrainingJobName"].startswith(tuning + "-"), C.short(k))
    C.expect(k["TrainingJobArn"].endswith(":training-job/" + k["TrainingJobName"]), C.short(k))
    C.expect(set(k["TunedHyperParameters"]) == {"x", "y", "kind"}, "TunedHyperParameters %s"
             % C.short(k["TunedHyperParameters"]))
    for t in ("CreationTime", "TrainingStartTime", "TrainingEndTime"):
        C.expect(C.is_dt(k.get(t)), "%s %r is not a datetime: %s" % (t, k.get(t), C.short(k)))
    m = k.get("FinalHyperParameterTuningJobObjectiveMetric") or {}
    C.expect(m.get("MetricName") == "loss" and isinstance(m.get("Value"), float),
             "FinalHyperParameterTuningJobObjectiveMetric %s" % C.short(m))
    C.expect(k["ObjectiveStatus"] == "Succeeded" and k["TrainingJobStatus"] == "Completed", C.short(k))


class Cases:
    """What both boto3 generations must do with tuning jobs, against one
    daemon with local hosts. Names are prefixed with the label."""

    def __init__(self, tap, daemon, label):
        self.tap = tap
        self.d = daemon
        self.label = label
        self.sm = C.make_client(daemon.endpoint)
        self.smv = C.make_client(daemon.endpoint, validate=False)
        self.p = label + "-tn"
        self.arn = None

    def name(self, n):
        return "%s-%s" % (self.p, n)

    def t_create(self):
        import re
        n = self.name("rnd")
        self.t0 = time.time()
        req = request(n, jobs=3, parallel=3)
        req["Tags"] = [{"Key": "team", "Value": "vision"}]
        r = self.sm.create_hyper_parameter_tuning_job(**req)
        self.t1 = time.time()
        arn = r.get("HyperParameterTuningJobArn", "")
        C.expect(re.match(TUNING_ARN_RE % re.escape(n), arn), "HyperParameterTuningJobArn %r" % arn)
        C.expect(r["ResponseMetadata"].get("RequestId"), "no RequestId")
        self.arn = arn
        # Two more, for the listings: a one-job search and a long one to stop.
        self.sm.create_hyper_parameter_tuning_job(**request(self.name("one"), jobs=1, parallel=1))
        self.sm.create_hyper_parameter_tuning_job(**request(self.name("long"), jobs=6, parallel=2,
                                                            epochs=LONG_EPOCHS, sleep=0.1))

    def t_describe(self):
        n = self.name("rnd")
        d = wait_tuning(self.sm, n)
        C.expect(d["HyperParameterTuningJobStatus"] == "Completed", C.short(d))
        C.expect(d["HyperParameterTuningJobName"] == n and d["HyperParameterTuningJobArn"] == self.arn,
                 C.short(d))
        for t in ("CreationTime", "HyperParameterTuningEndTime", "LastModifiedTime"):
            C.expect(C.is_dt(d.get(t)), "%s %r is not a datetime" % (t, d.get(t)))
        ct = d["CreationTime"].timestamp()
        C.expect(self.t0 - 2 <= ct <= self.t1 + 2, "CreationTime %s not within the create call" % d["CreationTime"])
        C.expect(d["HyperParameterTuningEndTime"] >= d["CreationTime"], "end before creation")
        want = request(n)
        for member in ("HyperParameterTuningJobConfig", "TrainingJobDefinition"):
            m = C.subset_mismatch(want[member], d.get(member), member)
            C.expect(m is None, "echo: %s" % m)
        c = d["TrainingJobStatusCounters"]
        C.expect(c == dict({k: 0 for k in COUNTERS}, Completed=3), "TrainingJobStatusCounters %s" % c)
        C.expect(d["ObjectiveStatusCounters"] == {"Succeeded": 3, "Pending": 0, "Failed": 0},
                 "ObjectiveStatusCounters %s" % d["ObjectiveStatusCounters"])
        rows, _ = children(self.sm, n)
        b = d["BestTrainingJob"]
        C.expect(b["TrainingJobName"] in [r["TrainingJobName"] for r in rows], "BestTrainingJob %s" % C.short(b))
        best = min(r["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] for r in rows)
        C.expect(b["FinalHyperParameterTuningJobObjectiveMetric"] == {"MetricName": "loss", "Value": best} or
                 (b["FinalHyperParameterTuningJobObjectiveMetric"]["MetricName"] == "loss" and
                  abs(b["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] - best) < 1e-9),
                 "BestTrainingJob objective %s, the best listed is %s" % (C.short(b), best))
        C.expect(b.get("ObjectiveStatus") == "Succeeded" and b.get("TrainingJobStatus") == "Completed" and
                 C.is_dt(b.get("CreationTime")) and C.is_dt(b.get("TrainingEndTime")), C.short(b))
        C.expect(set(b["TunedHyperParameters"]) == {"x", "y", "kind"}, C.short(b))
        self.best = b

    def t_children(self):
        n = self.name("rnd")
        rows, pages = children(self.sm, n, page_size=2)
        C.expect(pages == [2, 1], "pages of 2: %s" % pages)
        C.expect(len({r["TrainingJobName"] for r in rows}) == 3, "3 distinct jobs: %s" % C.short(rows))
        for r in rows:
            check_summary_row(r, n)
        asc, pages = children(self.sm, n, page_size=1, SortBy="FinalObjectiveMetricValue", SortOrder="Ascending")
        vals = [r["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] for r in asc]
        C.expect(vals == sorted(vals) and len(vals) == 3 and pages == [1, 1, 1],
                 "ascending by objective, pages of 1: %s %s" % (vals, pages))
        C.expect(asc[0]["TrainingJobName"] == self.best["TrainingJobName"], "best first")
        desc, _ = children(self.sm, n, SortBy="FinalObjectiveMetricValue", SortOrder="Descending")
        C.expect([r["TrainingJobName"] for r in desc] == [r["TrainingJobName"] for r in asc][::-1],
                 "descending is the reverse")
        byname, _ = children(self.sm, n, SortBy="Name", StatusEquals="Completed")
        names = [r["TrainingJobName"] for r in byname]
        C.expect(names == sorted(names) and len(names) == 3, "by name: %s" % names)
        C.expect(children(self.sm, n, StatusEquals="Failed")[0] == [], "no failed ones")
        one = self.sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName=n, MaxResults=2)
        C.expect(len(one["TrainingJobSummaries"]) == 2 and one.get("NextToken"), "MaxResults 2: %s" % C.short(one))

    def t_list(self):
        wait_tuning(self.sm, self.name("one"))
        rows, pages = tuning_jobs(self.sm, page_size=1, NameContains=self.p)
        names = [r["HyperParameterTuningJobName"] for r in rows]
        C.expect(names == sorted([self.name("rnd"), self.name("one"), self.name("long")]) and pages == [1, 1, 1],
                 "by name, pages of 1: %s %s" % (names, pages))
        rows, _ = tuning_jobs(self.sm, NameContains=self.p, StatusEquals="Completed", SortBy="CreationTime",
                              SortOrder="Descending")
        names = [r["HyperParameterTuningJobName"] for r in rows]
        C.expect(names == [self.name("one"), self.name("rnd")], "Completed, newest first: %s" % names)
        s = rows[1]
        C.expect(s["HyperParameterTuningJobArn"] == self.arn and s["Strategy"] == "Random" and
                 s["HyperParameterTuningJobStatus"] == "Completed", C.short(s))
        for t in ("CreationTime", "HyperParameterTuningEndTime", "LastModifiedTime"):
            C.expect(C.is_dt(s.get(t)), "summary %s %r is not a datetime" % (t, s.get(t)))
        C.expect(s["TrainingJobStatusCounters"]["Completed"] == 3 and
                 s["ObjectiveStatusCounters"]["Succeeded"] == 3 and
                 s["ResourceLimits"] == {"MaxNumberOfTrainingJobs": 3, "MaxParallelTrainingJobs": 3}, C.short(s))
        rows, _ = tuning_jobs(self.sm, NameContains=self.p, StatusEquals="InProgress")
        C.expect([r["HyperParameterTuningJobName"] for r in rows] == [self.name("long")],
                 "InProgress: %s" % C.short(rows))
        r = self.sm.list_hyper_parameter_tuning_jobs(NameContains=self.p, MaxResults=2)
        C.expect(len(r["HyperParameterTuningJobSummaries"]) == 2 and r.get("NextToken"), C.short(r))
        r = self.sm.list_hyper_parameter_tuning_jobs(NameContains=self.p, MaxResults=2, NextToken=r["NextToken"])
        C.expect(len(r["HyperParameterTuningJobSummaries"]) == 1 and not r.get("NextToken"), C.short(r))
        r = self.sm.list_hyper_parameter_tuning_jobs(NameContains=self.p, CreationTimeAfter=2 ** 32)
        C.expect(r["HyperParameterTuningJobSummaries"] == [], "created after 2106: %s" % C.short(r))

    def t_stop(self):
        n = self.name("long")
        deadline = time.time() + 60
        while True:
            running = [r for r in children(self.sm, n)[0] if r["TrainingJobStatus"] == "InProgress"]
            if len(running) == 2:
                break
            C.expect(time.time() < deadline, "2 training jobs not running after 60 s: %s" % C.short(running))
            time.sleep(0.2)
        r = self.sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=n)
        body = {k: v for k, v in r.items() if k != "ResponseMetadata"}
        C.expect(body == {}, "StopHyperParameterTuningJob returned %s" % C.short(body))
        d = wait_tuning(self.sm, n, timeout=60)
        C.expect(d["HyperParameterTuningJobStatus"] == "Stopped", C.short(d))
        c = d["TrainingJobStatusCounters"]
        C.expect(c["Stopped"] == 2 and c["InProgress"] == 0 and c["Completed"] == 0, "counters %s" % c)
        C.expect(C.is_dt(d.get("HyperParameterTuningEndTime")), "no end time")
        C.expect_error(lambda: self.sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=n),
                       "ValidationException", 400, contains="Stopped")

    def t_errors(self):
        C.expect_error(lambda: self.sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="nosuch"),
                       ("ResourceNotFound",), 400, contains="nosuch")
        C.expect_error(lambda: self.sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="nosuch"),
                       ("ResourceNotFound", "ValidationException"), 400)
        C.expect_error(lambda: self.sm.create_hyper_parameter_tuning_job(**log_zero_request(self.name("log0"))),
                       "ValidationException", 400, contains=["Logarithmic", "MinValue", "ContinuousParameterRanges"])
        C.expect_error(lambda: describe(self.sm, self.name("log0")), ("ResourceNotFound",))
        C.expect_error(lambda: self.sm.create_hyper_parameter_tuning_job(**request(self.name("rnd"))),
                       "ResourceInUse", 400)
        C.expect_error(lambda: self.smv.list_hyper_parameter_tuning_jobs(MaxResults=101), "ValidationException", 400)
        C.expect_error(lambda: self.sm.list_training_jobs_for_hyper_parameter_tuning_job(
            HyperParameterTuningJobName=self.name("rnd"), NextToken="garbage"), "ValidationException", 400)
        C.expect_error(lambda: self.sm.list_training_jobs_for_hyper_parameter_tuning_job(
            HyperParameterTuningJobName="nosuch"), ("ResourceNotFound",), 400)

    def t_tags(self):
        tags = C.list_tags_all(self.sm, self.arn)
        C.expect(tags == [{"Key": "team", "Value": "vision"}], "tags from create: %s" % tags)
        r = self.sm.add_tags(ResourceArn=self.arn, Tags=[{"Key": "stage", "Value": "dev"}])
        C.expect(r["Tags"] == [{"Key": "stage", "Value": "dev"}], "AddTags answered %s" % C.short(r))
        self.sm.delete_tags(ResourceArn=self.arn, TagKeys=["team"])
        tags = C.list_tags_all(self.sm, self.arn)
        C.expect(tags == [{"Key": "stage", "Value": "dev"}], "after add/delete: %s" % tags)
        job = self.best["TrainingJobArn"]
        C.expect({"Key": "team", "Value": "vision"} in C.list_tags_all(self.sm, job),
                 "the training job has the tuning job's tags")
        C.expect_error(lambda: self.sm.list_tags(ResourceArn=self.arn.replace("/" + self.name("rnd"), "/nosuch")),
                       "ValidationException", 400)

    def t_training_job(self):
        j = self.sm.describe_training_job(TrainingJobName=self.best["TrainingJobName"])
        C.expect(j.get("TuningJobArn") == self.arn, "TuningJobArn %r" % j.get("TuningJobArn"))
        hp = j["HyperParameters"]
        C.expect(hp.get("epochs") == "4" and all(hp.get(k) == v for k, v in self.best["TunedHyperParameters"].items()),
                 "HyperParameters %s" % C.short(hp))

    def run(self):
        tap, L = self.tap, self.label
        if not tap.case("%s: create_hyper_parameter_tuning_job returns the ARN (3 created)" % L, self.t_create):
            tap.note("create failed; the remaining cases depend on it")
            return
        tap.case("%s: describe until Completed: echo, datetimes, counters, BestTrainingJob" % L, self.t_describe)
        tap.case("%s: list_training_jobs_for_hyper_parameter_tuning_job paginator, sort, filter" % L,
                 self.t_children)
        tap.case("%s: list_hyper_parameter_tuning_jobs paginator, filters, summary shape, pages" % L, self.t_list)
        tap.case("%s: stop_hyper_parameter_tuning_job -> {}, Stopped with its training jobs" % L, self.t_stop)
        tap.case("%s: errors: unknown, Logarithmic with MinValue 0, duplicate, bad lists" % L, self.t_errors)
        tap.case("%s: ListTags/AddTags/DeleteTags on the tuning job's ARN" % L, self.t_tags)
        tap.case("%s: the best training job is an ordinary one with TuningJobArn" % L, self.t_training_job)
