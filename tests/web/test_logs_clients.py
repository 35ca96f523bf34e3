#!/usr/bin/python3
"""CloudWatch Logs clients read a finished job's logs from trainctld
(Logs_20140328.DescribeLogStreams, GetLogEvents, FilterLogEvents on the
JSON 1.1 endpoint, log group /aws/sagemaker/TrainingJobs, stream names of
contract section 8).

One trainctld with credentials (so every client signs for service "logs")
and a local cluster of 2 hosts runs a job to completion; then
  - boto3's logs client, both generations: Debian's (botocore 1.29) and
    pyenv's (botocore 1.43), through tests/web/logs_boto3.py;
  - aws CLI v2 (/usr/bin/aws): logs tail, describe-log-streams,
    get-log-events, filter-log-events and an error's exit status;
  - aws CLI v1 (pyenv's aws): the same without tail (v1 has none).

TAP on stdout. Run with Debian's interpreter from the top of the tree:
    /usr/bin/python3 tests/web/test_logs_clients.py
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webtest as wt  # noqa: E402

sc = wt.sc
KEY = "AKIDWEBLOGSTEST00001"
SECRET = "web/logs+secret/0123456789abcdefABCDEF"
EPOCHS = 5
JOB = "web-logs-1"


def interpreters():
    """Debian's python3 and another one with boto3 (pyenv's), if any."""
    out = ["/usr/bin/python3"]
    seen = {os.path.realpath("/usr/bin/python3")}
    for cand in [shutil.which("python3"), os.path.expanduser("~/.pyenv/shims/python3")]:
        if not cand or not os.access(cand, os.X_OK):
            continue
        real = os.path.realpath(cand)
        if real in seen or real.startswith("/usr/bin/"):
            continue
        ok = subprocess.run([cand, "-c", "import boto3"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, timeout=60).returncode == 0
        if ok:
            out.append(cand)
            seen.add(real)
    return out


def aws_v1():
    """pyenv's aws-cli v1, or None."""
    for d in os.environ.get("PATH", "").split(":") + [os.path.expanduser("~/.pyenv/shims")]:
        cand = os.path.join(d, "aws")
        if not os.access(cand, os.X_OK) or os.path.realpath(cand).startswith("/usr/bin/"):
            continue
        try:
            v = subprocess.run([cand, "--version"], capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if (v.stdout + v.stderr).decode().startswith("aws-cli/1."):
            return cand
    return None


def cli_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
                "AWS_EC2_METADATA_DISABLED": "true", "AWS_PAGER": "", "NO_PROXY": "127.0.0.1,localhost"})
    return env


def run_cli(aws, ctl, args, timeout=60):
    p = subprocess.run([aws] + args + ["--endpoint-url", ctl.url, "--output", "json"] if args[1] != "tail"
                       else [aws] + args + ["--endpoint-url", ctl.url],
                       capture_output=True, env=cli_env(), timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def cli_checks(tap, aws, label, ctl, streams, lines, tail):
    every = sorted((streams[a], m) for a, ms in lines.items() for m in ms)

    def describe():
        rc, out, err = run_cli(aws, ctl, ["logs", "describe-log-streams", "--log-group-name", wt.GROUP,
                                          "--log-stream-name-prefix", JOB + "/"])
        sc.expect(rc == 0, "rc %d: %s" % (rc, err))
        names = [s["logStreamName"] for s in json.loads(out)["logStreams"]]
        sc.expect(names == sorted(streams.values()), "names %s" % names)

    def get():
        for algo, stream in streams.items():
            rc, out, err = run_cli(aws, ctl, ["logs", "get-log-events", "--log-group-name", wt.GROUP,
                                              "--log-stream-name", stream, "--start-from-head"])
            sc.expect(rc == 0, "rc %d: %s" % (rc, err))
            got = [e["message"] for e in json.loads(out)["events"]]
            sc.expect(got == lines[algo], "%s: %s" % (stream, got))

    def filt():
        rc, out, err = run_cli(aws, ctl, ["logs", "filter-log-events", "--log-group-name", wt.GROUP,
                                          "--log-stream-name-prefix", JOB + "/", "--page-size", "4"])
        sc.expect(rc == 0, "rc %d: %s" % (rc, err))
        got = sorted((e["logStreamName"], e["message"]) for e in json.loads(out)["events"])
        sc.expect(got == every, "events %s" % got)
        rc, out, err = run_cli(aws, ctl, ["logs", "filter-log-events", "--log-group-name", wt.GROUP,
                                          "--filter-pattern", "acc"])
        sc.expect(rc == 0, "rc %d: %s" % (rc, err))
        got = [e["message"] for e in json.loads(out)["events"]]
        sc.expect(len(got) == EPOCHS * len(streams) and all("acc=" in m for m in got), "acc: %s" % got)

    def error():
        rc, out, err = run_cli(aws, ctl, ["logs", "get-log-events", "--log-group-name", wt.GROUP,
                                          "--log-stream-name", JOB + "/algo-7-1"])
        want = 254 if "aws-cli/2" in label else 255
        sc.expect(rc == want and "ResourceNotFoundException" in err, "rc %d (want %d): %s" % (rc, want, err))

    def do_tail():
        rc, out, err = run_cli(aws, ctl, ["logs", "tail", wt.GROUP, "--log-stream-name-prefix", JOB + "/",
                                          "--since", "1d", "--format", "detailed"])
        sc.expect(rc == 0, "rc %d: %s" % (rc, err))
        got = []
        for line in out.splitlines():
            m = re.match(r"^(\S+) (\S+) (.*)$", line)
            sc.expect(m, "line %r" % line)
            got.append((m.group(2), m.group(3)))
        sc.expect(sorted(got) == every, "tail: %s" % got)
        return "%d lines" % len(got)

    tap.case("%s logs describe-log-streams" % label, describe)
    tap.case("%s logs get-log-events --start-from-head" % label, get)
    tap.case("%s logs filter-log-events (paginated, --filter-pattern)" % label, filt)
    tap.case("%s logs get-log-events on an unknown stream fails" % label, error)
    if tail:
        tap.case("%s logs tail %s" % (label, wt.GROUP), do_tail)


def main():
    tap = sc.Tap()
    ctl = wt.Controller(hosts=2, credentials=(KEY, SECRET))
    try:
        err = ctl.start()
        if not tap.ok(err is None, "trainctld with credentials and 2 local hosts starts", err):
            return tap.finish()
        script = wt.write_script(ctl.tmp, "good.sh", wt.GOOD)
        lines = {a: wt.good_lines(a, EPOCHS) for a in ("algo-1", "algo-2")}

        def run_job():
            ctl.create(wt.job_body(JOB, script, env={"EPOCHS": str(EPOCHS), "DELAY": "0.1"}))
            d = ctl.wait(JOB)
            sc.expect(d["TrainingJobStatus"] == "Completed", "job ended %s: %s" % (
                d["TrainingJobStatus"], d.get("FailureReason")))
            r = ctl.get("/v1/ui/jobs/" + JOB)
            return {"algo-%d" % (s["host_index"] + 1): s["name"] for s in r.json["streams"]}
        streams = tap.case("a job prints known lines on both hosts and completes", run_job)
        if not streams:
            return tap.finish()
        cfg = os.path.join(ctl.tmp, "logs.json")
        with open(cfg, "w") as f:
            json.dump({"endpoint": ctl.url, "key": KEY, "secret": SECRET, "job": JOB, "lines": lines}, f)
        for py in interpreters():
            p = subprocess.run([py, os.path.join(wt.HERE, "logs_boto3.py"), cfg], capture_output=True,
                               timeout=180)
            results = [json.loads(l) for l in p.stdout.decode().splitlines() if l.startswith("{")]
            if not results:
                tap.ok(False, "boto3 logs checks under %s" % py, p.stderr.decode()[-2000:])
            for r in results:
                tap.ok(r["ok"], r["name"], r["diag"] + "\n" + ctl.log_tail(10))
        cli_checks(tap, "/usr/bin/aws", "aws-cli/2", ctl, streams, lines, tail=True)
        v1 = aws_v1()
        if v1:
            cli_checks(tap, v1, "aws-cli/1", ctl, streams, lines, tail=False)
        else:
            tap.skip("aws-cli/1 logs commands", "no aws-cli v1 (pyenv) on PATH")
    finally:
        ctl.cleanup()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
