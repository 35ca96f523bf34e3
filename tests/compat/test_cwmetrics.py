#!/usr/bin/python3
"""CloudWatch metrics of training jobs with Debian's boto3 1.26 (botocore
1.29: the query protocol, XML answers) and both aws CLIs (/usr/bin/aws v2.9
and the first other `aws` on PATH, pyenv's v1 on botocore 1.43), against a
trainctld --local-hosts 1 that ran one job printing metrics. The cases
shared with the newer botocore are in cwmcases.py; the raw wire checks
(form POST, XML namespace and error body, signing for "monitoring") are
here. TAP on stdout.
"""
import json
import os
import shutil
import subprocess
import sys
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smcompat as C  # noqa: E402

C.hermetic_env()
import cwmcases as W  # noqa: E402

XMLNS = "http://monitoring.amazonaws.com/doc/2010-08-01/"


def form_post(env, params, sign=W.ADMIN, service="monitoring"):
    body = urllib.parse.urlencode(params).encode()
    host = "127.0.0.1:%d" % env.daemon.port
    h = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
    if sign:
        h.update(C.sigv4_sign("POST", host, "/", "", body, sign[0], sign[1], h,
                              service=service))
    return C.http_request(env.daemon.port, "POST", "/", body, h)


def raw_cases(tap, env):
    start, end = env.window()
    base = {"Action": "GetMetricStatistics", "Version": "2010-08-01", "Namespace": W.NS,
            "MetricName": "train:loss", "Dimensions.member.1.Name": W.DIM,
            "Dimensions.member.1.Value": env.job, "Period": "60",
            "StartTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "EndTime": end.strftime("%Y-%m-%dT%H:%M:%SZ"), "Statistics.member.1": "Sum"}

    def t_xml():
        r = form_post(env, base)
        C.expect(r.status == 200, repr(r))
        text = r.body.decode()
        C.expect(r.headers.get("content-type", "").startswith("text/xml"), repr(r))
        C.expect('<GetMetricStatisticsResponse xmlns="%s">' % XMLNS in text, text[:300])
        C.expect("<GetMetricStatisticsResult><Label>train:loss</Label><Datapoints><member>"
                 in text or "<GetMetricStatisticsResult><Datapoints><member>" in text, text[:400])
        C.expect("<Unit>None</Unit>" in text and "<RequestId>" in text, text)
    tap.case("query protocol: a form POST answers XML in CloudWatch's namespace", t_xml)

    def t_xml_error():
        r = form_post(env, dict(base, Period="7"))
        text = r.body.decode()
        C.expect(r.status == 400, repr(r))
        for part in ('<ErrorResponse xmlns="%s">' % XMLNS, "<Type>Sender</Type>",
                     "<Code>InvalidParameterValue</Code>", "<Message>", "<RequestId>"):
            C.expect(part in text, "%r not in %s" % (part, text))
        r = form_post(env, dict(base, Action="PutMetricData"))
        C.expect(r.status == 400 and b"<Code>InvalidAction</Code>" in r.body, repr(r))
        r = form_post(env, {k: v for k, v in base.items() if k != "Dimensions.member.1.Name"})
        C.expect(r.status == 400 and b"<Code>MissingParameter</Code>" in r.body, repr(r))
        r = form_post(env, dict(base, **{"Statistics.member.3": "Sum"}))
        C.expect(r.status == 400 and b"InvalidParameterValue" in r.body, repr(r))
    tap.case("query protocol: errors are XML ErrorResponse bodies", t_xml_error)

    def t_auth():
        r = form_post(env, base, sign=None)
        C.expect(r.status in (400, 401, 403) and b"<ErrorResponse" in r.body, repr(r))
        r = form_post(env, base, service="sagemaker")
        C.expect(r.status in (400, 403) and b"<ErrorResponse" in r.body, repr(r))
        r = form_post(env, base, sign=(W.ADMIN[0], "wrong"))
        C.expect(r.status in (400, 403) and b"<Code>SignatureDoesNotMatch</Code>" in r.body,
                 repr(r))
        # The JSON 1.0 face without a signature.
        r = C.http_request(env.daemon.port, "POST", "/", b"{}", {
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": "GraniteServiceVersion20100801.ListMetrics"})
        C.expect(r.status in (400, 401, 403) and r.json and "__type" in r.json, repr(r))
    tap.case("requests must be signed for service monitoring by a known key", t_auth)


def find_aws_v1():
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, "aws")
        if os.access(p, os.X_OK) and not os.path.realpath(p).startswith("/usr/bin/"):
            return p
    return None


def cli_cases(tap, env):
    start, end = env.window()
    clis = [("aws v2 (/usr/bin/aws)", "/usr/bin/aws"), ("aws v1 (PATH)", find_aws_v1())]
    e = dict(os.environ, AWS_ACCESS_KEY_ID=W.ADMIN[0], AWS_SECRET_ACCESS_KEY=W.ADMIN[1],
             AWS_DEFAULT_REGION=C.REGION, AWS_MAX_ATTEMPTS="1", AWS_PAGER="")
    # pyenv's shims choose the interpreter from the environment's PATH.
    for label, exe in clis:
        if not exe or not os.access(exe, os.X_OK):
            tap.skip("%s: cloudwatch commands" % label, "not installed")
            continue

        def aws(*args):
            p = subprocess.run([exe, "cloudwatch"] + list(args) +
                               ["--endpoint-url", env.daemon.endpoint, "--output", "json"],
                               env=e, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=120)
            return p.returncode, p.stdout.decode(), p.stderr.decode()

        def t_cli():
            rc, out, err = aws("get-metric-statistics", "--namespace", W.NS,
                               "--metric-name", "train:loss",
                               "--dimensions", "Name=%s,Value=%s" % (W.DIM, env.job),
                               "--start-time", start.isoformat(), "--end-time", end.isoformat(),
                               "--period", "60", "--statistics", "Sum", "SampleCount")
            C.expect(rc == 0, "get-metric-statistics rc %d: %s" % (rc, err))
            j = json.loads(out)
            C.expect(sum(p["SampleCount"] for p in j["Datapoints"]) == len(W.LOSS), out)
            C.expect(W.close(sum(p["Sum"] for p in j["Datapoints"]), sum(W.LOSS)), out)
            rc, out, err = aws("list-metrics", "--namespace", W.NS,
                               "--dimensions", "Name=%s" % W.DIM)
            C.expect(rc == 0, "list-metrics rc %d: %s" % (rc, err))
            names = sorted(m["MetricName"] for m in json.loads(out)["Metrics"])
            C.expect(names == ["train:loss", "valid:acc"], out)
            q = [{"Id": "m", "MetricStat": {"Metric": {"Namespace": W.NS,
                                                       "MetricName": "valid:acc",
                                                       "Dimensions": W.dims(env.job)},
                                            "Period": 60, "Stat": "Maximum"}}]
            rc, out, err = aws("get-metric-data", "--metric-data-queries", json.dumps(q),
                               "--start-time", start.isoformat(), "--end-time", end.isoformat())
            C.expect(rc == 0, "get-metric-data rc %d: %s" % (rc, err))
            vals = json.loads(out)["MetricDataResults"][0]["Values"]
            C.expect(vals and max(vals) == max(W.ACC), out)
            rc, out, err = aws("get-metric-statistics", "--namespace", W.NS,
                               "--metric-name", "train:loss", "--start-time", start.isoformat(),
                               "--end-time", end.isoformat(), "--period", "7",
                               "--statistics", "Sum")
            C.expect(rc != 0 and "InvalidParameterValue" in err, "rc %d: %s" % (rc, err))
        tap.case("%s: get-metric-statistics, list-metrics, get-metric-data, errors" % label,
                 t_cli)


def main():
    tap = C.Tap()
    env = W.Env(tap)
    ok = tap.case("trainctld --local-hosts 1 runs a job that prints metrics",
                  env.start, "cwm-job-1")
    if not ok:
        tap.note(env.daemon.log_tail() if env.daemon else "")
        return tap.finish()
    tap.log_hint = env.daemon.log_tail
    cw = env.client("cloudwatch")
    W.run(tap, env, cw, "boto3 %s (query)" % __import__("botocore").__version__)
    raw_cases(tap, env)
    cli_cases(tap, env)
    if tap.failed:
        tap.note(env.daemon.log_tail(40))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
