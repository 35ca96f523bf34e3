"""CloudWatch metrics of training jobs (not a test itself): the cases that
test_cwmetrics.py (Debian /usr/bin/python3: boto3 1.26, botocore 1.29, the
query protocol) and cwmetrics_new.py (pyenv python3: botocore 1.43, JSON
1.0 and RPC v2 CBOR) both run.

Setup starts trainctld --local-hosts 1 with credentials (an admin key and
a user key) and runs one short job whose program prints metric lines that
its MetricDefinitions match, a few tenths of a second apart. The cases then
read them as the SageMaker SDK's TrainingJobAnalytics does (DescribeTraining
Job, then GetMetricStatistics per MetricDefinitions name, Period 60,
Average, TrainingStartTime .. TrainingEndTime + 1 minute), and through
ListMetrics, GetMetricStatistics and GetMetricData directly.
"""
import datetime
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smcompat as C  # noqa: E402

NS = "/aws/sagemaker/TrainingJobs"
DIM = "TrainingJobName"
ADMIN = ("AKIDCWMADMIN00000001", "cwm/admin/secret+0123456789abcdef")
USER = ("AKIDCWMUSER000000002", "cwm/user/secret+0123456789abcdef")
LOSS = [2.5, 1.75, 1.25, 0.875, 0.5, 0.375, 0.25, 0.125]
ACC = [0.25, 0.5, 0.625, 0.75]
METRICS = [{"Name": "train:loss", "Regex": "loss=(.*?);"},
           {"Name": "valid:acc", "Regex": "acc=(.*?);"}]
# ContainerEntrypoint members are single lines of at most 256 characters:
# the loss values come as arguments.
# The first line comes a second after the start, well after TrainingStartTime.
PROGRAM = ("import sys,time;time.sleep(1);A=%r;"
           "[(print('step=%%d loss=%%s;'%%(i,v)+(' acc=%%r;'%%A[i//2] if i%%2 else ''),"
           "flush=True),time.sleep(.35)) for i,v in enumerate(sys.argv[1:])]"
           % (ACC,))
STATS = ["SampleCount", "Average", "Sum", "Minimum", "Maximum"]
HOST_METRICS = ["CPUUtilization", "MemoryUtilization", "DiskUtilization",
                "GPUUtilization", "GPUMemoryUtilization"]


def utc(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc)


class Env:
    """The daemon, the job and clients of one botocore generation."""

    def __init__(self, tap):
        self.tap = tap
        self.daemon = None
        self.job = None
        self.desc = None

    def start(self, name):
        d = C.Daemon(name="trainctld-cwm")
        path = os.path.join(d.tmp, "cwm-credentials")
        with open(path, "w") as f:
            f.write("[ops]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % ADMIN)
            f.write("[bob]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                    "trainctl_user = bob\ntrainctl_role = user\n" % USER)
        d.extra = ["--credentials", path, "--local-hosts", "1"]
        self.daemon = d
        why = d.start()
        C.expect(why is None, "trainctld did not start: %s" % why)
        self.job = name
        sm = self.client("sagemaker")
        req = {
            "TrainingJobName": name,
            "AlgorithmSpecification": {
                "TrainingImage": "trainctl/python", "TrainingInputMode": "File",
                "ContainerEntrypoint": ["/usr/bin/python3", "-c", PROGRAM],
                "ContainerArguments": [repr(v) for v in LOSS],
                "MetricDefinitions": METRICS},
            "RoleArn": C.ROLE,
            "OutputDataConfig": {"S3OutputPath": "s3://cwm-test/out"},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1,
                               "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 120},
        }
        deadline = time.time() + 60
        while True:
            try:
                sm.create_training_job(**req)
                break
            except Exception as e:   # hosts may not be ready yet
                if time.time() > deadline:
                    raise
                if "ResourceLimitExceeded" not in str(e) and "capacity" not in str(e).lower():
                    raise
                time.sleep(0.3)
        deadline = time.time() + 90
        while True:
            self.desc = sm.describe_training_job(TrainingJobName=name)
            st = self.desc["TrainingJobStatus"]
            if st in ("Completed", "Failed", "Stopped"):
                break
            C.expect(time.time() < deadline, "job still %s after 90 s" % st)
            time.sleep(0.2)
        C.expect(st == "Completed", "job ended %s: %s\n%s" % (
            st, self.desc.get("FailureReason"), d.log_tail()))
        final = {m["MetricName"]: m["Value"] for m in self.desc.get("FinalMetricDataList", [])}
        C.expect(final.get("train:loss") == LOSS[-1] and final.get("valid:acc") == ACC[-1],
                 "FinalMetricDataList %r" % (final,))

    def client(self, service, key=ADMIN, validate=True, data_path=None):
        """A boto3 client with retries off; data_path: a directory of
        botocore service models searched before botocore's own."""
        import boto3
        import botocore.config
        import botocore.session
        cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                     parameter_validation=validate, connect_timeout=5,
                                     read_timeout=60)
        bs = botocore.session.get_session()
        if data_path:
            bs.get_component("data_loader").search_paths.insert(0, data_path)
        s = boto3.session.Session(aws_access_key_id=key[0], aws_secret_access_key=key[1],
                                  region_name=C.REGION, botocore_session=bs)
        return s.client(service, endpoint_url=self.daemon.endpoint, config=cfg)

    def window(self):
        start = self.desc["TrainingStartTime"] - datetime.timedelta(minutes=1)
        end = self.desc["TrainingEndTime"] + datetime.timedelta(minutes=1)
        return start, end


def dims(job):
    return [{"Name": DIM, "Value": job}]


def stats(cw, env, metric, period, statistics=None, ext=None, job=None, **kw):
    start, end = env.window()
    req = dict(Namespace=NS, MetricName=metric, Dimensions=dims(job or env.job),
               StartTime=start, EndTime=end, Period=period)
    if statistics:
        req["Statistics"] = statistics
    if ext:
        req["ExtendedStatistics"] = ext
    req.update(kw)
    return cw.get_metric_statistics(**req)


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def run(tap, env, cw, label, data_path=None):
    """The cases, with cw a cloudwatch client signed by the admin key;
    data_path: the model directory cw was made with (for more clients)."""
    job = env.job

    def t_analytics():
        # What TrainingJobAnalytics does, step by step.
        sm = env.client("sagemaker")
        d = sm.describe_training_job(TrainingJobName=job)
        names = [m["Name"] for m in d["AlgorithmSpecification"]["MetricDefinitions"]]
        C.expect(names == ["train:loss", "valid:acc"], "MetricDefinitions %r" % names)
        start = d["TrainingStartTime"]
        end = d.get("TrainingEndTime", datetime.datetime.utcnow()) + datetime.timedelta(minutes=1)
        for name, want in (("train:loss", LOSS), ("valid:acc", ACC)):
            r = cw.get_metric_statistics(Namespace=NS, MetricName=name, Dimensions=dims(job),
                                         StartTime=start, EndTime=end, Period=60,
                                         Statistics=["Average"])
            dps = r["Datapoints"]
            C.expect(1 <= len(dps) <= 2, "%s: %d datapoints: %s" % (name, len(dps), C.short(r)))
            C.expect(r["Label"] == name, "Label %r" % r["Label"])
            for p in dps:
                C.expect(set(p) == {"Timestamp", "Average", "Unit"}, "datapoint %r" % p)
                C.expect(p["Unit"] == "None", "Unit %r" % p["Unit"])
                C.expect(isinstance(p["Timestamp"], datetime.datetime), "Timestamp %r" % p)
                C.expect(p["Timestamp"].timestamp() % 60 == 0, "Timestamp not on a minute %r" % p)
                C.expect(min(want) <= p["Average"] <= max(want), "Average %r" % p)
            if len(dps) == 1:
                C.expect(close(dps[0]["Average"], sum(want) / len(want)),
                         "%s Average %r, expected %r" % (name, dps[0]["Average"], sum(want) / len(want)))
    tap.case("%s: TrainingJobAnalytics' calls read both metrics" % label, t_analytics)

    def t_all_stats():
        for period in (60, 1, 300):
            for name, want in (("train:loss", LOSS), ("valid:acc", ACC)):
                r = stats(cw, env, name, period, STATS)
                dps = sorted(r["Datapoints"], key=lambda p: p["Timestamp"])
                C.expect(dps, "%s period %d: no datapoints" % (name, period))
                n = sum(p["SampleCount"] for p in dps)
                C.expect(n == len(want), "%s period %d: SampleCount total %r" % (name, period, n))
                C.expect(close(sum(p["Sum"] for p in dps), sum(want)), "Sum %s" % C.short(dps))
                C.expect(min(p["Minimum"] for p in dps) == min(want), "Minimum %s" % C.short(dps))
                C.expect(max(p["Maximum"] for p in dps) == max(want), "Maximum %s" % C.short(dps))
                for p in dps:
                    C.expect(close(p["Average"], p["Sum"] / p["SampleCount"]), "Average %r" % p)
                    C.expect(p["Timestamp"].timestamp() % period == 0, "period start %r" % p)
                if period == 1:
                    # Lines 0.35 s apart fall into several seconds.
                    C.expect(len(dps) >= 3, "period 1: only %d datapoints" % len(dps))
    tap.case("%s: GetMetricStatistics: every statistic, periods 1, 60, 300" % label, t_all_stats)

    def t_each_stat():
        for s in STATS:
            r = stats(cw, env, "train:loss", 60, [s])
            for p in r["Datapoints"]:
                C.expect(set(p) == {"Timestamp", s, "Unit"}, "%s: datapoint %r" % (s, p))
            C.expect(r["Datapoints"], "%s: no datapoints" % s)
    tap.case("%s: GetMetricStatistics: one statistic at a time" % label, t_each_stat)

    def t_percentiles():
        full = stats(cw, env, "train:loss", 1, ["Minimum", "Maximum"])["Datapoints"]
        r = stats(cw, env, "train:loss", 1, ext=["p0", "p100", "p50"])
        got = {p["Timestamp"]: p for p in r["Datapoints"]}
        C.expect(len(got) == len(full), "%d vs %d datapoints" % (len(got), len(full)))
        for p in full:
            e = got[p["Timestamp"]]["ExtendedStatistics"]
            C.expect(set(e) == {"p0", "p100", "p50"}, "ExtendedStatistics %r" % e)
            C.expect(e["p0"] == p["Minimum"] and e["p100"] == p["Maximum"],
                     "p0/p100 %r vs %r" % (e, p))
            C.expect(p["Minimum"] <= e["p50"] <= p["Maximum"], "p50 %r" % e)
    tap.case("%s: GetMetricStatistics: ExtendedStatistics percentiles" % label, t_percentiles)

    def t_no_data():
        r = stats(cw, env, "train:loss", 60, ["Sum"], Unit="Seconds")
        C.expect(r["Datapoints"] == [], "Unit Seconds: %s" % C.short(r))
        r = stats(cw, env, "train:loss", 60, ["Sum"], Unit="None")
        C.expect(r["Datapoints"], "Unit None: no datapoints")
        r = stats(cw, env, "train:loss", 60, ["Sum"], job="no-such-job")
        C.expect(r["Datapoints"] == [], "unknown job: %s" % C.short(r))
        r = stats(cw, env, "no:such:metric", 60, ["Sum"])
        C.expect(r["Datapoints"] == [], "unknown metric: %s" % C.short(r))
        start, end = env.window()
        r = cw.get_metric_statistics(Namespace="AWS/EC2", MetricName="train:loss",
                                     Dimensions=dims(job), StartTime=start, EndTime=end,
                                     Period=60, Statistics=["Sum"])
        C.expect(r["Datapoints"] == [], "other namespace: %s" % C.short(r))
        r = cw.get_metric_statistics(Namespace=NS, MetricName="train:loss", StartTime=start,
                                     EndTime=end, Period=60, Statistics=["Sum"])
        C.expect(r["Datapoints"] == [], "no dimensions: %s" % C.short(r))
        r = cw.get_metric_statistics(Namespace=NS, MetricName="train:loss", StartTime=end,
                                     EndTime=end + datetime.timedelta(hours=1), Period=60,
                                     Dimensions=dims(job), Statistics=["Sum"])
        C.expect(r["Datapoints"] == [], "after the job: %s" % C.short(r))
    tap.case("%s: no data for other units, jobs, metrics, namespaces, times" % label, t_no_data)

    def t_list():
        r = cw.list_metrics()
        got = sorted((m["Namespace"], m["MetricName"], tuple(
            (d["Name"], d["Value"]) for d in m["Dimensions"])) for m in r["Metrics"])
        # The host metrics of the job's host come too when its agent took
        # a telemetry sample while the job ran (every 5 s: maybe not).
        host = [m for m in got if m[2][0][0] == "Host"]
        got = [m for m in got if m[2][0][0] != "Host"]
        want = sorted((NS, n, ((DIM, job),)) for n in ("train:loss", "valid:acc"))
        C.expect(got == want, "ListMetrics %r" % (got,))
        C.expect(host in ([], sorted((NS, n, (("Host", job + "/algo-1"),)) for n in HOST_METRICS)),
                 "host metrics %r" % (host,))
        C.expect("NextToken" not in r, "NextToken on the only page")
        r = cw.list_metrics(Namespace=NS, MetricName="valid:acc")
        C.expect([m["MetricName"] for m in r["Metrics"]] == ["valid:acc"], C.short(r))
        r = cw.list_metrics(Dimensions=[{"Name": DIM}])
        C.expect(len(r["Metrics"]) == 2, C.short(r))
        r = cw.list_metrics(Dimensions=[{"Name": DIM, "Value": job}], RecentlyActive="PT3H")
        C.expect(len(r["Metrics"]) == 2, C.short(r))
        for kw in ({"Namespace": "AWS/EC2"}, {"Dimensions": [{"Name": "InstanceId"}]},
                   {"Dimensions": [{"Name": DIM, "Value": "other-job"}]},
                   {"MetricName": "nope"}):
            r = cw.list_metrics(**kw)
            C.expect(r["Metrics"] == [], "%r: %s" % (kw, C.short(r)))
        C.expect_error(lambda: cw.list_metrics(NextToken="bogus"), "InvalidNextToken", 400)
    tap.case("%s: ListMetrics with filters" % label, t_list)

    def query(qid, metric, stat, period=1, **kw):
        q = {"Id": qid, "MetricStat": {"Metric": {"Namespace": NS, "MetricName": metric,
                                                  "Dimensions": dims(job)},
                                       "Period": period, "Stat": stat}}
        q.update(kw)
        return q

    def t_data():
        start, end = env.window()
        qs = [query("loss", "train:loss", "Sum"), query("acc", "valid:acc", "Maximum", 60),
              query("hidden", "train:loss", "Average", ReturnData=False),
              query("lab", "train:loss", "SampleCount", 60, Label="my label")]
        r = cw.get_metric_data(MetricDataQueries=qs, StartTime=start, EndTime=end,
                               ScanBy="TimestampAscending")
        res = {x["Id"]: x for x in r["MetricDataResults"]}
        C.expect(sorted(res) == ["acc", "lab", "loss"], "results %r" % sorted(res))
        loss = res["loss"]
        C.expect(loss["Label"] == "train:loss" and loss["StatusCode"] == "Complete", C.short(loss))
        C.expect(loss["Timestamps"] == sorted(loss["Timestamps"]), "not ascending")
        C.expect(close(sum(loss["Values"]), sum(LOSS)), "loss values %r" % loss["Values"])
        C.expect(len(loss["Values"]) == len(loss["Timestamps"]) >= 3, C.short(loss))
        C.expect(max(res["acc"]["Values"]) == max(ACC), C.short(res["acc"]))
        C.expect(res["lab"]["Label"] == "my label" and sum(res["lab"]["Values"]) == len(LOSS),
                 C.short(res["lab"]))
        r2 = cw.get_metric_data(MetricDataQueries=qs[:1], StartTime=start, EndTime=end)
        d = r2["MetricDataResults"][0]
        C.expect(d["Timestamps"] == sorted(loss["Timestamps"], reverse=True),
                 "default ScanBy is TimestampDescending: %s" % C.short(d))
        C.expect(d["Values"] == list(reversed(loss["Values"])), C.short(d))
        return loss
    tap.case("%s: GetMetricData: MetricStat queries, Label, ReturnData, ScanBy" % label, t_data)

    def t_data_pages():
        start, end = env.window()
        qs = [query("loss", "train:loss", "Sum"), query("acc", "valid:acc", "Sum")]
        full = cw.get_metric_data(MetricDataQueries=qs, StartTime=start, EndTime=end)
        want = {x["Id"]: list(zip(x["Timestamps"], x["Values"])) for x in full["MetricDataResults"]}
        total = sum(len(v) for v in want.values())
        got = {"loss": [], "acc": []}
        token, pages = None, 0
        while True:
            kw = {"NextToken": token} if token else {}
            r = cw.get_metric_data(MetricDataQueries=qs, StartTime=start, EndTime=end,
                                   MaxDatapoints=2, **kw)
            pages += 1
            n = 0
            for x in r["MetricDataResults"]:
                got[x["Id"]] += list(zip(x["Timestamps"], x["Values"]))
                n += len(x["Values"])
            C.expect(n <= 2, "page %d holds %d points" % (pages, n))
            token = r.get("NextToken")
            if token:
                C.expect(any(x["StatusCode"] == "PartialData" for x in r["MetricDataResults"]),
                         "a page before the last has no PartialData: %s" % C.short(r))
            if not token:
                break
            C.expect(pages < 50, "endless pages")
        C.expect(got == want, "paged %r != %r" % (got, want))
        C.expect(pages == (total + 1) // 2, "%d pages for %d points" % (pages, total))
        C.expect_error(lambda: cw.get_metric_data(MetricDataQueries=qs, StartTime=start,
                                                  EndTime=end, NextToken="cwm1:999999"),
                       "InvalidNextToken", 400)
    tap.case("%s: GetMetricData pages by MaxDatapoints and NextToken" % label, t_data_pages)

    def t_errors():
        start, end = env.window()
        bad = env.client("cloudwatch", validate=False, data_path=data_path)
        cases = [
            (lambda: stats(cw, env, "train:loss", 7, ["Sum"]), "InvalidParameterValue", "Period"),
            (lambda: stats(cw, env, "train:loss", 60, ["Median"]), "InvalidParameterValue",
             "Statistics"),
            (lambda: stats(cw, env, "train:loss", 60, ext=["tm99"]), "InvalidParameterValue",
             "tm99"),
            (lambda: stats(cw, env, "train:loss", 60, ["Sum"], ext=["p90"]),
             "InvalidParameterCombination", "mutually exclusive"),
            (lambda: stats(cw, env, "train:loss", 60), "MissingParameter", "Statistics"),
            (lambda: cw.get_metric_statistics(Namespace=NS, MetricName="train:loss",
                                              StartTime=end, EndTime=start, Period=60,
                                              Statistics=["Sum"]),
             "InvalidParameterValue", "StartTime"),
            (lambda: cw.get_metric_statistics(Namespace=NS, MetricName="train:loss",
                                              StartTime=start - datetime.timedelta(days=2),
                                              EndTime=end, Period=1, Statistics=["Sum"]),
             "InvalidParameterCombination", "1440"),
            (lambda: bad.get_metric_statistics(Namespace=NS, StartTime=start, EndTime=end,
                                               Period=60, Statistics=["Sum"]),
             "MissingParameter", "MetricName"),
            (lambda: bad.get_metric_statistics(Namespace=NS, MetricName="m", EndTime=end,
                                               Period=60, Statistics=["Sum"]),
             "MissingParameter", "StartTime"),
            (lambda: bad.get_metric_statistics(Namespace=NS, MetricName="x" * 300,
                                               StartTime=start, EndTime=end, Period=60,
                                               Statistics=["Sum"]),
             "InvalidParameterValue", "MetricName"),
            (lambda: cw.get_metric_data(MetricDataQueries=[
                {"Id": "e1", "Expression": "SUM(METRICS())"}], StartTime=start, EndTime=end),
             "InvalidParameterValue", "Expression"),
            (lambda: cw.get_metric_data(MetricDataQueries=[
                query("a", "train:loss", "Sum"), query("a", "train:loss", "Maximum")],
                StartTime=start, EndTime=end), "InvalidParameterValue", "unique"),
            (lambda: cw.get_metric_data(MetricDataQueries=[
                query("Upper", "train:loss", "Sum")], StartTime=start, EndTime=end),
             "InvalidParameterValue", "Id"),
            (lambda: cw.get_metric_data(MetricDataQueries=[
                query("a", "train:loss", "Sum", 61)], StartTime=start, EndTime=end),
             "InvalidParameterValue", "Period"),
            (lambda: bad.get_metric_data(MetricDataQueries=[], StartTime=start, EndTime=end),
             "MissingParameter", "MetricDataQueries"),
        ]
        members = cw.meta.service_model.operation_model("ListMetrics").input_shape.members
        if "IncludeLinkedAccounts" in members:
            cases.append((lambda: cw.list_metrics(Namespace=NS, IncludeLinkedAccounts=True),
                          "InvalidParameterValue", "IncludeLinkedAccounts"))
            cases.append((lambda: cw.list_metrics(Namespace=NS, OwningAccount="111122223333"),
                          "InvalidParameterValue", "OwningAccount"))
        if "LabelOptions" in cw.meta.service_model.operation_model("GetMetricData").input_shape.members:
            cases.append((lambda: cw.get_metric_data(MetricDataQueries=[query("a", "train:loss", "Sum")],
                                                     StartTime=start, EndTime=end,
                                                     LabelOptions={"Timezone": "+0130"}),
                          "InvalidParameterValue", "Timezone"))
        for fn, code, word in cases:
            C.expect_error(fn, code, 400, contains=word)
    tap.case("%s: invalid requests answer CloudWatch's error codes" % label, t_errors)

    def t_user_key():
        # A user key sees only its own jobs: bob created none.
        ucw = env.client("cloudwatch", key=USER, data_path=data_path)
        r = ucw.list_metrics()
        C.expect(r["Metrics"] == [], "bob lists %s" % C.short(r))
        r = stats(ucw, env, "train:loss", 60, ["Sum"])
        C.expect(r["Datapoints"] == [], "bob reads %s" % C.short(r))
        start, end = env.window()
        r = ucw.get_metric_data(MetricDataQueries=[query("a", "train:loss", "Sum")],
                                StartTime=start, EndTime=end)
        C.expect(r["MetricDataResults"][0]["Values"] == [], C.short(r))
        wrong = env.client("cloudwatch", key=(ADMIN[0], "not-the-secret"),
                           data_path=data_path)
        C.expect_error(lambda: wrong.list_metrics(), ("SignatureDoesNotMatch", "InvalidSignature",
                                                     "InvalidClientTokenId"), (400, 403))
    tap.case("%s: a user key reads only its own jobs; a bad signature is refused" % label,
             t_user_key)
