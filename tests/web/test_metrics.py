#!/usr/bin/python3
"""GET /metrics parsed by a Prometheus text-format parser (Debian's
python3-prometheus-client, text_string_to_metric_families) and checked
against known state: jobs by status, hosts by state, heartbeat ages, API
requests by operation and status with their latency histogram, restarts
and log lines ingested. Then the page's and /metrics' authentication when
credentials are configured (HTTP Basic for browsers, SigV4 for programs).

TAP on stdout. Run with Debian's interpreter from the top of the tree:
    /usr/bin/python3 tests/web/test_metrics.py
"""
import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webtest as wt  # noqa: E402

sc = wt.sc
KEY = "AKIDWEBMETRICSTEST01"
SECRET = "web/metrics+secret/0123456789abcdef"
DESCRIBES = 7


def scrape(ctl, headers=None):
    from prometheus_client.parser import text_string_to_metric_families
    r = ctl.get("/metrics", headers=headers)
    sc.expect(r.status == 200, "GET /metrics: %r" % r)
    ctype = r.headers.get("content-type", "")
    sc.expect(ctype.startswith("text/plain") and "version=0.0.4" in ctype, "content type %r" % ctype)
    fams = {f.name: f for f in text_string_to_metric_families(r.body.decode("utf-8"))}
    return fams


def value(fams, family, sample=None, **labels):
    f = fams.get(family)
    sc.expect(f is not None, "no family %s (have %s)" % (family, sorted(fams)))
    for s in f.samples:
        if (sample or family) == s.name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None


def log_lines_stored(ctl):
    n = 0
    for path in glob.glob(os.path.join(ctl.state, "logs", "*", "*.log")):
        with open(path, "rb") as f:
            n += f.read().count(b"\n")
    return n


def main():
    tap = sc.Tap()
    try:
        import prometheus_client.parser  # noqa: F401
    except ImportError:
        tap.skip("/metrics in the Prometheus text format",
                 "python3-prometheus-client is missing (scripts/deps.sh installs it)")
        return tap.finish()
    ctl = wt.Controller(hosts=2)
    try:
        err = ctl.start()
        if not tap.ok(err is None, "trainctld with 2 local hosts starts", err):
            return tap.finish()

        def idle():
            fams = scrape(ctl)
            for st in ("InProgress", "Completed", "Failed", "Stopping", "Stopped"):
                sc.expect(value(fams, "trainctl_jobs", status=st) == 0, "jobs %s" % st)
            sc.expect(value(fams, "trainctl_hosts", state="ready") == 2, "ready hosts")
            for st in ("provisioning", "busy", "lost"):
                sc.expect(value(fams, "trainctl_hosts", state=st) == 0, "%s hosts" % st)
            for h in ("local-1", "local-2"):
                age = value(fams, "trainctl_host_heartbeat_age_seconds", host=h)
                sc.expect(age is not None and 0 <= age < 10, "heartbeat age of %s: %s" % (h, age))
            # The parser names a counter's family without "_total".
            sc.expect(fams["trainctl_api_requests"].type == "counter", "requests type")
            sc.expect(fams["trainctl_api_request_duration_seconds"].type == "histogram", "histogram type")
        tap.case("an idle cluster: no jobs, 2 ready hosts, fresh heartbeats", idle)

        scripts = os.path.join(ctl.tmp, "scripts")
        os.makedirs(scripts)
        good = wt.write_script(scripts, "good.sh", wt.GOOD)
        bad = wt.write_script(scripts, "bad.sh", wt.BAD)

        def busy():
            ctl.create(wt.job_body("metrics-busy", good, env={"EPOCHS": "30", "DELAY": "0.2"}))
            deadline = time.time() + 30
            while time.time() < deadline:
                fams = scrape(ctl)
                if value(fams, "trainctl_hosts", state="busy") == 2:
                    sc.expect(value(fams, "trainctl_jobs", status="InProgress") == 1, "InProgress 1")
                    sc.expect(value(fams, "trainctl_active_jobs", status="InProgress",
                                    secondary_status="Training") in (1, None), "active jobs")
                    return
                time.sleep(0.2)
            raise sc.Fail("hosts never busy: %s" % [(s.labels, s.value) for s in fams["trainctl_hosts"].samples])
        tap.case("a running job makes both hosts busy", busy)

        def known_state():
            ctl.request("POST", "/v1/training-jobs/metrics-busy/stop")
            ctl.wait("metrics-busy", timeout=60)
            ctl.create(wt.job_body("metrics-good", good, env={"EPOCHS": "3", "DELAY": "0.1"}))
            ctl.wait("metrics-good")
            ctl.create(wt.job_body("metrics-bad", bad))
            ctl.wait("metrics-bad")
            bad_req = ctl.request("POST", "/v1/training-jobs", {"TrainingJobName": "x"})
            sc.expect(bad_req.status == 400, "invalid create: %r" % bad_req)
            for _ in range(DESCRIBES):
                r = sc.amz_json(ctl.port, "DescribeTrainingJob", {"TrainingJobName": "metrics-good"})
                sc.expect(r.status == 200, "describe: %r" % r)
            r = sc.amz_json(ctl.port, "DescribeTrainingJob", {"TrainingJobName": "no-such-job"})
            sc.expect(r.status == 400, "describe unknown: %r" % r)
            time.sleep(0.3)
            fams = scrape(ctl)
            want = {"InProgress": 0, "Completed": 1, "Failed": 1, "Stopping": 0, "Stopped": 1}
            got = {st: value(fams, "trainctl_jobs", status=st) for st in want}
            sc.expect(got == want, "jobs by status %s, want %s" % (got, want))
            sc.expect(value(fams, "trainctl_hosts", state="ready") == 2, "hosts ready again")
            req = "trainctl_api_requests"
            checks = [
                (("rest:CreateTrainingJob", "200"), 3),
                (("rest:CreateTrainingJob", "400"), 1),
                (("DescribeTrainingJob", "200"), DESCRIBES),
                (("DescribeTrainingJob", "400"), 1),
                (("rest:StopTrainingJob", "200"), 1),
            ]
            for (op, status), n in checks:
                v = value(fams, req, sample=req + "_total", operation=op, status=status)
                sc.expect(v == n, "%s{operation=%s,status=%s} = %s, want %s" % (req, op, status, v, n))
            # The histogram: cumulative buckets, +Inf = count = all answers.
            h = "trainctl_api_request_duration_seconds"
            for op, total in (("DescribeTrainingJob", DESCRIBES + 1), ("rest:CreateTrainingJob", 4)):
                buckets = [(float(s.labels["le"]), s.value) for s in fams[h].samples
                           if s.name == h + "_bucket" and s.labels["operation"] == op]
                sc.expect(buckets and buckets == sorted(buckets), "buckets of %s: %s" % (op, buckets))
                counts = [c for _, c in buckets]
                sc.expect(counts == sorted(counts), "buckets not cumulative: %s" % counts)
                sc.expect(buckets[-1] == (float("inf"), total), "+Inf of %s: %s" % (op, buckets[-1]))
                sc.expect(value(fams, h, sample=h + "_count", operation=op) == total, "count of %s" % op)
                s = value(fams, h, sample=h + "_sum", operation=op)
                sc.expect(s is not None and 0 < s < 30 * total, "sum of %s: %s" % (op, s))
            sc.expect(value(fams, "trainctl_job_restarts", sample="trainctl_job_restarts_total") == 0,
                      "job restarts")
            return "jobs %s" % got
        tap.case("jobs, requests and latencies match what the test did", known_state)

        def lines():
            fams = scrape(ctl)
            stored = log_lines_stored(ctl)
            v = value(fams, "trainctl_log_lines_ingested", sample="trainctl_log_lines_ingested_total")
            sc.expect(stored > 10, "only %d lines stored" % stored)
            sc.expect(v == stored, "log lines ingested %s, lines in the log files %d" % (v, stored))
            return "%d lines" % stored
        tap.case("log lines ingested equal the lines in the log files", lines)

        def agent_restart():
            pidfile = os.path.join(ctl.state, "hosts", "local-2", "agent.pid")
            with open(pidfile) as f:
                pid = int(f.read().strip())
            os.kill(pid, 9)
            deadline = time.time() + 30
            v = None
            while time.time() < deadline:
                fams = scrape(ctl)
                v = value(fams, "trainctl_agent_restarts", sample="trainctl_agent_restarts_total")
                if v == 1 and value(fams, "trainctl_hosts", state="ready") == 2:
                    return
                time.sleep(0.2)
            raise sc.Fail("agent restarts %s after killing local-2's agent (pid %d)" % (v, pid))
        tap.case("a killed local agent is restarted and counted", agent_restart)
    finally:
        ctl.cleanup()

    auth = wt.Controller(hosts=0, credentials=(KEY, SECRET))
    try:
        err = auth.start()
        if not tap.ok(err is None, "trainctld with credentials starts", err):
            return tap.finish()
        port = auth.port
        host = "127.0.0.1:%d" % port

        def page_auth():
            r = sc.http_request(port, "GET", "/")
            sc.expect(r.status == 401 and r.headers.get("www-authenticate", "").startswith("Basic realm="),
                      "anonymous page: %r" % r)
            r = sc.http_request(port, "GET", "/", headers={"Authorization": wt.basic(KEY, "wrong")})
            sc.expect(r.status == 401, "wrong password: %r" % r)
            r = sc.http_request(port, "GET", "/", headers={"Authorization": wt.basic(KEY, SECRET)})
            sc.expect(r.status == 200 and b"/ui/app.js" in r.body, "signed-in page: %r" % r)
            r = sc.http_request(port, "GET", "/ui/app.js", headers={"Authorization": wt.basic(KEY, SECRET)})
            sc.expect(r.status == 200 and r.headers.get("etag"), "app.js: %r" % r)
            r2 = sc.http_request(port, "GET", "/ui/app.js", headers={
                "Authorization": wt.basic(KEY, SECRET), "If-None-Match": r.headers["etag"]})
            sc.expect(r2.status == 304 and not r2.body, "revalidation: %r" % r2)
            r = sc.http_request(port, "GET", "/v1/ui/jobs", headers={"Authorization": wt.basic(KEY, SECRET)})
            sc.expect(r.status == 200 and r.json == {"jobs": [], "next_token": None}, "jobs: %r" % r)
            r = sc.http_request(port, "GET", "/v1/ui/jobs")
            sc.expect(r.status == 403, "anonymous data: %r" % r)
        tap.case("the page needs the credentials (HTTP Basic, 401 asks for them)", page_auth)

        def basic_only_reads():
            cached = {"Authorization": wt.basic(KEY, SECRET)}
            body = json.dumps(wt.job_body("csrf-1", "/bin/true")).encode()
            r = sc.http_request(port, "POST", "/v1/training-jobs", body, dict(cached, **{"Content-Type": "text/plain"}))
            sc.expect(400 <= r.status < 500, "a write with Basic credentials: %r" % r)
            r = sc.http_request(port, "GET", "/v1/training-jobs/csrf-1", headers=cached)
            sc.expect(r.status == 400 and r.json["__type"] == "ValidationException", "csrf-1 exists: %r" % r)
            evil = dict(cached, **{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"})
            r = sc.http_request(port, "GET", "/v1/ui/jobs", headers=evil)
            sc.expect(400 <= r.status < 500, "a cross-site read of data: %r" % r)
            r = sc.http_request(port, "GET", "/", headers=dict(evil, **{"Sec-Fetch-Mode": "navigate"}))
            sc.expect(r.status == 200, "following a link to the page: %r" % r)
        tap.case("Basic credentials only read: no writes, no cross-site data", basic_only_reads)

        def metrics_auth():
            r = sc.http_request(port, "GET", "/metrics")
            sc.expect(r.status == 403 and r.json and r.json.get("__type") == "MissingAuthenticationToken",
                      "anonymous: %r" % r)
            r = sc.http_request(port, "GET", "/metrics", headers={"Authorization": wt.basic(KEY, SECRET)})
            sc.expect(r.status == 200 and b"trainctl_hosts" in r.body, "basic: %r" % r)
            h = sc.sigv4_sign("GET", host, "/metrics", "", b"", KEY, SECRET)
            r = sc.http_request(port, "GET", "/metrics", headers=h)
            sc.expect(r.status == 200 and b"trainctl_jobs" in r.body, "sigv4: %r" % r)
            h = sc.sigv4_sign("GET", host, "/metrics", "", b"", KEY, "not-the-secret")
            r = sc.http_request(port, "GET", "/metrics", headers=h)
            sc.expect(r.status == 403, "bad sigv4: %r" % r)
        tap.case("/metrics needs the credentials (Basic or SigV4)", metrics_auth)

        def api_still_signed():
            r = sc.amz_json(port, "ListTrainingJobs", {}, auth=(KEY, SECRET))
            sc.expect(r.status == 200 and r.json.get("TrainingJobSummaries") == [], "signed list: %r" % r)
            r = sc.amz_json(port, "ListTrainingJobs", {})
            sc.expect(r.status == 403, "unsigned list: %r" % r)
            body = json.dumps({"logGroupName": wt.GROUP}).encode()
            hs = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "Logs_20140328.DescribeLogStreams"}
            hs.update(sc.sigv4_sign("POST", host, "/", "", body, KEY, SECRET, hs, service="logs"))
            r = sc.http_request(port, "POST", "/", body, hs)
            sc.expect(r.status == 200 and r.json == {"logStreams": []}, "logs signed for logs: %r" % r)
            hs = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "Logs_20140328.DescribeLogStreams"}
            hs.update(sc.sigv4_sign("POST", host, "/", "", body, KEY, SECRET, hs, service="sagemaker"))
            r = sc.http_request(port, "POST", "/", body, hs)
            sc.expect(r.status == 403, "logs signed for sagemaker: %r" % r)
            fams = scrape(auth, headers={"Authorization": wt.basic(KEY, SECRET)})
            v = value(fams, "trainctl_api_requests", sample="trainctl_api_requests_total",
                      operation="ListTrainingJobs", status="403")
            sc.expect(v == 1, "403 of ListTrainingJobs counted %s" % v)
        tap.case("the JSON 1.1 API keeps SigV4 (sagemaker and logs scopes)", api_still_signed)
    finally:
        auth.cleanup()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
