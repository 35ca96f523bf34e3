#!/usr/bin/python3
# trainctl-test: solo
"""Host telemetry end to end: trainctld --local-hosts 2 (its own, on a free
loopback port, with credentials) runs a job whose program keeps one core
busy for a while. While it runs, its host shows the CPU use in GET /v1/hosts,
the job's processes in the job runtime view, per-host gauges in /metrics
and a series in GET /v1/hosts/{name}/telemetry; once it finished,
CloudWatch's GetMetricStatistics / GetMetricData / ListMetrics of
/aws/sagemaker/TrainingJobs answer SageMaker's host metrics for
Host=<job>/algo-1 with Debian's boto3 1.26 (botocore 1.29, the query
protocol) and both aws CLIs (/usr/bin/aws v2.9 and the first other `aws`
on PATH, pyenv's v1), get-metric-data with the job's training metric
and its host metrics in one call. The bounds are generous: one busy core of a host
whose other processes may be busy too. TAP on stdout.
"""
import datetime
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "compat"))
import smcompat as C  # noqa: E402

C.hermetic_env()

NS = "/aws/sagemaker/TrainingJobs"
ADMIN = ("AKIDTELEMETRY0000001", "telemetry/admin/secret+0123456789abcdef")
JOB = "tm-burn-1"
BURN_S = 18
# Keeps one core busy for BURN_S seconds, then prints its training metric.
LOSS = 0.25
PROGRAM = ("import time;e=time.time()+%d;"
           "any(iter(lambda: time.time() >= e, True));"
           "print('loss=%s', flush=True)" % (BURN_S, LOSS))
# A host with one core of ours busy: at least this much of one core, as
# CloudWatch's CPUUtilization (summed over cores) and as the job's own use.
CORE_BOUND = 40.0
HOST_METRICS = ["CPUUtilization", "DiskUtilization", "GPUMemoryUtilization",
                "GPUUtilization", "MemoryUtilization"]


def signed_get(d, path):
    h = C.sigv4_sign("GET", "127.0.0.1:%d" % d.port, path.split("?")[0],
                     path.split("?")[1] if "?" in path else "", b"", ADMIN[0], ADMIN[1], {})
    r = C.http_request(d.port, "GET", path, b"", h)
    C.expect(r.status == 200, "GET %s: %r" % (path, r))
    return r


def get_json(d, path):
    return json.loads(signed_get(d, path).body)


class Env:
    def __init__(self):
        self.d = None
        self.host = None
        self.desc = None
        self.seen = {}

    def start(self):
        # Agents sample every second, as the controller asks them to in
        # its register answer (their own default is 5 s).
        d = C.Daemon(credentials={"ops": ADMIN}, name="trainctld-tm",
                     extra=["--local-hosts", "2", "--telemetry-ms", "1000"])
        self.d = d
        why = d.start()
        C.expect(why is None, "trainctld did not start: %s" % why)
        sm = self.client("sagemaker")
        req = {
            "TrainingJobName": JOB,
            "AlgorithmSpecification": {
                "TrainingImage": "trainctl/python", "TrainingInputMode": "File",
                "ContainerEntrypoint": ["/usr/bin/python3", "-c", PROGRAM],
                "MetricDefinitions": [{"Name": "train:loss", "Regex": "loss=([0-9.]+)"}]},
            "RoleArn": C.ROLE,
            "OutputDataConfig": {"S3OutputPath": "s3://tm-test/out"},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1,
                               "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 300},
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

    def client(self, service):
        import boto3
        import botocore.config
        cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                     connect_timeout=5, read_timeout=60)
        s = boto3.session.Session(aws_access_key_id=ADMIN[0], aws_secret_access_key=ADMIN[1],
                                  region_name=C.REGION)
        return s.client(service, endpoint_url=self.d.endpoint, config=cfg)

    def watch(self):
        """Polls the REST views while the job runs; returns when the job
        ended, with the highest figures seen in self.seen."""
        sm = self.client("sagemaker")
        deadline = time.time() + BURN_S + 120
        while True:
            hosts = get_json(self.d, "/v1/hosts")["hosts"]
            for h in hosts:
                C.expect("telemetry" in h, "no telemetry member: %s" % C.short(h))
                if h["job"] == JOB:
                    self.host = h["name"]
                t = h["telemetry"]
                if t:
                    key = "busy_host_cpu" if h["job"] == JOB else "idle_host_cpu"
                    self.seen[key] = max(self.seen.get(key, 0), t["cpu_percent"])
                    self.seen["cpus"] = t["cpus"]
                    self.seen["sample"] = t
            view = get_json(self.d, "/v1/ui/jobs/" + JOB)
            for h in view["hosts"]:
                t = h.get("telemetry")
                if t and t.get("job"):
                    self.seen["job_cpu"] = max(self.seen.get("job_cpu", 0),
                                               t["job"]["cpu_percent"])
                    self.seen["job_rss"] = max(self.seen.get("job_rss", 0),
                                               t["job"]["rss_bytes"])
            self.desc = sm.describe_training_job(TrainingJobName=JOB)
            st = self.desc["TrainingJobStatus"]
            if st in ("Completed", "Failed", "Stopped"):
                break
            C.expect(time.time() < deadline, "job still %s" % st)
            time.sleep(1.0)
        C.expect(st == "Completed", "job ended %s: %s" % (st, self.desc.get("FailureReason")))

    def window(self):
        return (self.desc["TrainingStartTime"] - datetime.timedelta(minutes=1),
                self.desc["TrainingEndTime"] + datetime.timedelta(minutes=1))


def find_aws_v1():
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, "aws")
        if os.access(p, os.X_OK) and not os.path.realpath(p).startswith("/usr/bin/"):
            return p
    return None


def main():
    tap = C.Tap()
    env = Env()
    if not tap.case("trainctld --local-hosts 2 starts and takes a CPU-bound job", env.start):
        tap.note(env.d.log_tail() if env.d else "")
        return tap.finish()
    tap.log_hint = env.d.log_tail
    if not tap.case("the job runs to completion while the views are polled", env.watch):
        return tap.finish()
    tap.note("highest figures seen: %s" % C.short(
        {k: v for k, v in env.seen.items() if k != "sample"}))
    dim = "%s/algo-1" % JOB

    def t_hosts():
        # cpu_percent is of all cores: one busy core of N is 100/N.
        n = env.seen.get("cpus", 1)
        C.expect(env.host, "no host ever showed the job")
        C.expect(env.seen.get("busy_host_cpu", 0) * n >= CORE_BOUND,
                 "host %s: CPU at most %r %% of %d cores: %r" % (
                     env.host, env.seen.get("busy_host_cpu"), n, env.seen))
        s = env.seen["sample"]
        C.expect(0 < s["mem_used"] <= s["mem_total"], C.short(s))
        C.expect(0 < s["fs_used"] <= s["fs_total"], C.short(s))
        C.expect(s["ranks"] == [], "/v1/hosts names no jobs' processes: %s" % C.short(s))
        C.expect(isinstance(s["gpus"], list), C.short(s))
    tap.case("GET /v1/hosts: the job's host shows its CPU use", t_hosts)

    def t_view():
        C.expect(env.seen.get("job_cpu", 0) >= CORE_BOUND,
                 "job runtime view: the job's processes used %r %% of a core" %
                 env.seen.get("job_cpu"))
        C.expect(env.seen.get("job_rss", 0) > 1 << 20, "job rss %r" % env.seen.get("job_rss"))
    tap.case("GET /v1/ui/jobs/NAME: the job's processes on its host", t_view)

    def t_series():
        start = int(env.desc["TrainingStartTime"].timestamp() * 1000) - 10000
        r = get_json(env.d, "/v1/hosts/%s/telemetry?start=%d" % (env.host, start))
        # Every second (--telemetry-ms 1000) through the job's BURN_S s.
        C.expect(r["host"] == env.host and len(r["samples"]) >= BURN_S // 2, C.short(r))
        ts = [s["ts_ms"] for s in r["samples"]]
        C.expect(ts == sorted(ts), "not in time order: %r" % ts)
        C.expect("disk_read_bps" in r["samples"][1], C.short(r["samples"][1]))
        n = r["samples"][0]["cpus"]
        C.expect(max(s["cpu_percent"] for s in r["samples"]) * n >= CORE_BOUND, C.short(r))
        bad = C.http_request(env.d.port, "GET", "/v1/hosts/%s/telemetry?start=x" % env.host,
                             b"", C.sigv4_sign("GET", "127.0.0.1:%d" % env.d.port,
                                               "/v1/hosts/%s/telemetry" % env.host,
                                               "start=x", b"", ADMIN[0], ADMIN[1], {}))
        C.expect(bad.status == 400 and b"start and end" in bad.body, repr(bad))
    tap.case("GET /v1/hosts/NAME/telemetry: the series, oldest first", t_series)

    def t_job_series():
        r = get_json(env.d, "/v1/ui/jobs/%s/telemetry" % JOB)
        C.expect(r["job"] == JOB and [x["algo"] for x in r["nodes"]] == ["algo-1"], C.short(r))
        node = r["nodes"][0]
        C.expect(node["host"] == env.host and node["attempt"] == 1, C.short(node))
        xs = node["samples"]
        C.expect(len(xs) >= BURN_S // 2 and len(xs) == node["total"], C.short(node))
        C.expect([x["ts_ms"] for x in xs] == sorted(x["ts_ms"] for x in xs), "not in time order")
        C.expect(max(x["job_cpu_percent"] for x in xs) >= CORE_BOUND, C.short(xs))
        C.expect(all(x["cpu_percent"] is not None and 0 <= x["cpu_percent"] <= 100 and
                     0 < x["mem_percent"] <= 100 and x["host"] == env.host for x in xs), C.short(xs))
        C.expect(r["last_ms"] == xs[-1]["ts_ms"], C.short(r))
        # Thinned: the first and the newest kept.
        t = get_json(env.d, "/v1/ui/jobs/%s/telemetry?max=2" % JOB)["nodes"][0]
        C.expect([x["ts_ms"] for x in t["samples"]] == [xs[0]["ts_ms"], xs[-1]["ts_ms"]] and
                 t["total"] == len(xs), C.short(t))
        # Nothing newer than the newest.
        t = get_json(env.d, "/v1/ui/jobs/%s/telemetry?since_ms=%d" % (JOB, r["last_ms"]))
        C.expect(t["nodes"][0]["samples"] == [] and t["nodes"][0]["host"] is None, C.short(t))
        for q in ("since_ms=x", "max=0", "max=5001"):
            path = "/v1/ui/jobs/%s/telemetry" % JOB
            bad = C.http_request(env.d.port, "GET", path + "?" + q, b"",
                                 C.sigv4_sign("GET", "127.0.0.1:%d" % env.d.port, path, q, b"",
                                              ADMIN[0], ADMIN[1], {}))
            C.expect(bad.status == 400 and b"since_ms" in bad.body, "%s: %r" % (q, bad))
    tap.case("GET /v1/ui/jobs/NAME/telemetry: the finished job's node, thinned on request",
             t_job_series)

    def t_metrics():
        text = signed_get(env.d, "/metrics").body.decode()
        for name in ("trainctl_host_cpu_percent", "trainctl_host_memory_used_bytes",
                     "trainctl_host_disk_read_bytes_total",
                     "trainctl_host_network_receive_bytes_total",
                     "trainctl_host_filesystem_size_bytes"):
            C.expect('%s{host="%s"} ' % (name, env.host) in text, "%s missing" % name)
        C.expect("# TYPE trainctl_host_gpu_utilization_percent gauge" in text, "gpu gauge")
    tap.case("/metrics: per-host gauges", t_metrics)

    cw = env.client("cloudwatch")
    start, end = env.window()

    def t_stats():
        r = cw.get_metric_statistics(Namespace=NS, MetricName="CPUUtilization",
                                     Dimensions=[{"Name": "Host", "Value": dim}],
                                     StartTime=start, EndTime=end, Period=60,
                                     Statistics=["Maximum", "SampleCount"])
        dps = r["Datapoints"]
        C.expect(dps, "no datapoints: %s" % C.short(r))
        C.expect(max(p["Maximum"] for p in dps) >= CORE_BOUND, C.short(dps))
        C.expect(all(p["Unit"] == "Percent" for p in dps), C.short(dps))
        C.expect(sum(p["SampleCount"] for p in dps) >= 2, C.short(dps))
        for m in ("MemoryUtilization", "DiskUtilization"):
            r = cw.get_metric_statistics(Namespace=NS, MetricName=m,
                                         Dimensions=[{"Name": "Host", "Value": dim}],
                                         StartTime=start, EndTime=end, Period=60,
                                         Statistics=["Average"], Unit="Percent")
            C.expect(r["Datapoints"] and all(0 < p["Average"] <= 100 for p in r["Datapoints"]),
                     "%s: %s" % (m, C.short(r)))
        r = cw.get_metric_statistics(Namespace=NS, MetricName="CPUUtilization",
                                     Dimensions=[{"Name": "Host", "Value": dim}],
                                     StartTime=start, EndTime=end, Period=60,
                                     Statistics=["Maximum"], Unit="Seconds")
        C.expect(r["Datapoints"] == [], "Unit Seconds: %s" % C.short(r))
        r = cw.get_metric_statistics(Namespace=NS, MetricName="CPUUtilization",
                                     Dimensions=[{"Name": "Host", "Value": JOB + "/algo-2"}],
                                     StartTime=start, EndTime=end, Period=60,
                                     Statistics=["Maximum"])
        C.expect(r["Datapoints"] == [], "algo-2 of a one-host job: %s" % C.short(r))
    tap.case("GetMetricStatistics: CPUUtilization of Host=JOB/algo-1 (boto3 %s)" %
             __import__("botocore").__version__, t_stats)

    def t_data_list():
        q = [{"Id": "cpu", "MetricStat": {"Metric": {
            "Namespace": NS, "MetricName": "CPUUtilization",
            "Dimensions": [{"Name": "Host", "Value": dim}]}, "Period": 60, "Stat": "Maximum"}}]
        r = cw.get_metric_data(MetricDataQueries=q, StartTime=start, EndTime=end)
        vals = r["MetricDataResults"][0]["Values"]
        C.expect(vals and max(vals) >= CORE_BOUND, C.short(r))
        r = cw.list_metrics(Namespace=NS, Dimensions=[{"Name": "Host"}])
        got = sorted((m["MetricName"], m["Dimensions"][0]["Value"]) for m in r["Metrics"])
        C.expect(got == [(n, dim) for n in HOST_METRICS], "ListMetrics %r" % (got,))
        r = cw.list_metrics(Namespace=NS, MetricName="GPUUtilization",
                            Dimensions=[{"Name": "Host", "Value": dim}])
        C.expect(len(r["Metrics"]) == 1, C.short(r))
        r = cw.list_metrics(Namespace=NS, Dimensions=[{"Name": "TrainingJobName"}])
        C.expect(all(m["MetricName"] not in HOST_METRICS for m in r["Metrics"]), C.short(r))
    tap.case("GetMetricData and ListMetrics of the host metrics", t_data_list)

    e = dict(os.environ, AWS_ACCESS_KEY_ID=ADMIN[0], AWS_SECRET_ACCESS_KEY=ADMIN[1],
             AWS_DEFAULT_REGION=C.REGION, AWS_MAX_ATTEMPTS="1", AWS_PAGER="")
    for label, exe in (("aws v2 (/usr/bin/aws)", "/usr/bin/aws"), ("aws v1 (PATH)", find_aws_v1())):
        if not exe or not os.access(exe, os.X_OK):
            tap.skip("%s: get-metric-statistics CPUUtilization" % label, "not installed")
            continue

        def t_cli(exe=exe):
            p = subprocess.run([exe, "cloudwatch", "get-metric-statistics", "--namespace", NS,
                                "--metric-name", "CPUUtilization",
                                "--dimensions", "Name=Host,Value=%s" % dim,
                                "--start-time", start.isoformat(), "--end-time", end.isoformat(),
                                "--period", "60", "--statistics", "Maximum",
                                "--endpoint-url", env.d.endpoint, "--output", "json"],
                               env=e, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
            out = p.stdout.decode()
            C.expect(p.returncode == 0, "rc %d: %s" % (p.returncode, p.stderr.decode()))
            dps = json.loads(out)["Datapoints"]
            C.expect(dps and max(x["Maximum"] for x in dps) >= CORE_BOUND, out)
        tap.case("%s: get-metric-statistics CPUUtilization Host=JOB/algo-1" % label, t_cli)

        def t_cli_data(exe=exe):
            def q(qid, name, dim_name, dim_value, stat):
                return {"Id": qid, "MetricStat": {"Metric": {
                    "Namespace": NS, "MetricName": name,
                    "Dimensions": [{"Name": dim_name, "Value": dim_value}]},
                    "Period": 60, "Stat": stat}}
            qs = [q("loss", "train:loss", "TrainingJobName", JOB, "Minimum"),
                  q("cpu", "CPUUtilization", "Host", dim, "Maximum"),
                  q("mem", "MemoryUtilization", "Host", dim, "Average")]
            p = subprocess.run([exe, "cloudwatch", "get-metric-data",
                                "--metric-data-queries", json.dumps(qs),
                                "--start-time", start.isoformat(), "--end-time", end.isoformat(),
                                "--endpoint-url", env.d.endpoint, "--output", "json"],
                               env=e, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
            out = p.stdout.decode()
            C.expect(p.returncode == 0, "rc %d: %s" % (p.returncode, p.stderr.decode()))
            res = {r["Id"]: r for r in json.loads(out)["MetricDataResults"]}
            C.expect(sorted(res) == ["cpu", "loss", "mem"], out)
            C.expect(all(r["StatusCode"] == "Complete" for r in res.values()), out)
            C.expect(res["loss"]["Values"] == [LOSS], "train:loss: %s" % out)
            C.expect(res["cpu"]["Values"] and max(res["cpu"]["Values"]) >= CORE_BOUND, out)
            C.expect(res["mem"]["Values"] and all(0 < v <= 100 for v in res["mem"]["Values"]),
                     out)
        tap.case("%s: get-metric-data: the job's train:loss and its host's CPU and memory" % label,
                 t_cli_data)
    if tap.failed:
        tap.note(env.d.log_tail(40))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
