"""boto3's CloudWatch Logs client against trainctld's Logs_20140328 subset.

Not a test by itself: tests/web/test_logs_clients.py runs it under Debian's
python3 (botocore 1.29) and pyenv's (botocore 1.43) with
    python3 logs_boto3.py CONFIG.json
where CONFIG holds {"endpoint", "key", "secret", "job", "lines": {algo:
[messages in order]}}. Prints one JSON line per check: {"name", "ok",
"diag"}. Standard library plus boto3/botocore.
"""
import json
import os
import re
import sys
import traceback

for k in list(os.environ):
    if k.startswith("AWS_"):
        del os.environ[k]
os.environ.update({"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
                   "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "NO_PROXY": "127.0.0.1,localhost"})

import boto3  # noqa: E402
import botocore  # noqa: E402
import botocore.config  # noqa: E402

GROUP = "/aws/sagemaker/TrainingJobs"
CFG = json.load(open(sys.argv[1]))
JOB = CFG["job"]
LINES = CFG["lines"]
GEN = "botocore %s" % botocore.__version__


class Fail(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Fail(msg)


def client(secret=None):
    cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                 connect_timeout=5, read_timeout=30)
    return boto3.session.Session().client(
        "logs", region_name="us-east-1", endpoint_url=CFG["endpoint"], aws_access_key_id=CFG["key"],
        aws_secret_access_key=secret or CFG["secret"], config=cfg)


def check(name, fn):
    try:
        diag = fn()
        print(json.dumps({"name": "%s (%s)" % (name, GEN), "ok": True, "diag": diag or ""}))
    except Exception as e:
        tb = traceback.format_exc() if not isinstance(e, Fail) else str(e)
        print(json.dumps({"name": "%s (%s)" % (name, GEN), "ok": False, "diag": tb[-1500:]}))
    sys.stdout.flush()


logs = client()
state = {}


def error_code(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return None


def describe():
    r = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=JOB + "/",
                                  orderBy="LogStreamName", limit=len(LINES))
    names = [s["logStreamName"] for s in r["logStreams"]]
    expect(len(names) == len(LINES), "streams: %s" % names)
    for algo, n in zip(sorted(LINES), names):
        expect(re.match(r"^%s/%s-\d{10}$" % (re.escape(JOB), algo), n), "stream name %s for %s" % (n, algo))
    for s in r["logStreams"]:
        expect(s["firstEventTimestamp"] <= s["lastEventTimestamp"], "event times %s" % s)
        expect(s["storedBytes"] > 0 and s["creationTime"] > 0, "stream %s" % s)
        expect(s["arn"].endswith(":log-group:%s:log-stream:%s" % (GROUP, s["logStreamName"])), s["arn"])
    state["streams"] = dict(zip(sorted(LINES), names))
    return ", ".join(names)


def describe_paged():
    p = logs.get_paginator("describe_log_streams")
    names = []
    pages = 0
    for page in p.paginate(logGroupName=GROUP, orderBy="LastEventTime", descending=True,
                           PaginationConfig={"PageSize": 1}):
        pages += 1
        names += [s["logStreamName"] for s in page["logStreams"]]
    mine = [n for n in names if n.startswith(JOB + "/")]
    expect(sorted(mine) == sorted(state["streams"].values()), "paged: %s" % names)
    expect(pages >= len(names), "pages %d for %d streams" % (pages, len(names)))
    return "%d pages" % pages


def get_all():
    for algo, stream in state["streams"].items():
        r = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, startFromHead=True)
        got = [e["message"] for e in r["events"]]
        expect(got == LINES[algo], "%s: %s != %s" % (stream, got, LINES[algo]))
        ts = [e["timestamp"] for e in r["events"]]
        expect(ts == sorted(ts), "timestamps out of order")
        again = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, nextToken=r["nextForwardToken"])
        expect(again["events"] == [] and again["nextForwardToken"] == r["nextForwardToken"],
               "at the end the forward token must repeat: %s" % again)


def get_paged_forward():
    stream = state["streams"]["algo-1"]
    got, token, calls = [], None, 0
    while calls < 50:
        kw = {"nextToken": token} if token else {"startFromHead": True}
        r = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, limit=2, **kw)
        calls += 1
        got += [e["message"] for e in r["events"]]
        if r["nextForwardToken"] == token:
            break
        token = r["nextForwardToken"]
    expect(got == LINES["algo-1"], "paged forward: %s" % got)
    return "%d calls" % calls


def get_backward():
    stream = state["streams"]["algo-2"]
    r = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, limit=2)
    expect([e["message"] for e in r["events"]] == LINES["algo-2"][-2:], "newest two: %s" % r["events"])
    r2 = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, limit=2,
                             nextToken=r["nextBackwardToken"])
    expect([e["message"] for e in r2["events"]] == LINES["algo-2"][-4:-2], "two before: %s" % r2["events"])
    r3 = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, nextToken=r["nextForwardToken"])
    expect(r3["events"] == [], "after the newest: %s" % r3["events"])


def get_time_window():
    stream = state["streams"]["algo-1"]
    allev = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, startFromHead=True)["events"]
    t1, t2 = allev[1]["timestamp"], allev[3]["timestamp"]
    r = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, startFromHead=True,
                            startTime=t1, endTime=t2)
    want = [e["message"] for e in allev if t1 <= e["timestamp"] < t2]
    expect([e["message"] for e in r["events"]] == want, "window: %s != %s" % (r["events"], want))


def filter_all():
    p = logs.get_paginator("filter_log_events")
    events = []
    for page in p.paginate(logGroupName=GROUP, logStreamNamePrefix=JOB + "/",
                           PaginationConfig={"PageSize": 3}):
        events += page["events"]
    want = sorted(m for v in LINES.values() for m in v)
    expect(sorted(e["message"] for e in events) == want, "filtered: %s" % [e["message"] for e in events])
    ids = [e["eventId"] for e in events]
    expect(len(set(ids)) == len(ids), "event ids repeat")
    ts = [e["timestamp"] for e in events]
    expect(ts == sorted(ts), "events are not in time order")
    expect(all(e["logStreamName"] in state["streams"].values() for e in events), "stream names")
    return "%d events" % len(events)


def filter_patterns():
    def msgs(**kw):
        r = logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix=JOB + "/", **kw)
        return [e["message"] for e in r["events"]]
    every = [m for v in LINES.values() for m in v]
    got = msgs(filterPattern="loss")
    expect(sorted(got) == sorted(m for m in every if "loss" in m), "loss: %s" % got)
    got = msgs(filterPattern='"epoch 3 "')
    expect(len(got) == len(LINES) and all("epoch 3 " in m for m in got), "phrase: %s" % got)
    got = msgs(filterPattern="?finished ?start")
    expect(sorted(got) == sorted(m for m in every if "finished" in m or "start" in m), "or: %s" % got)
    got = msgs(filterPattern="-epoch")
    expect(sorted(got) == sorted(m for m in every if "epoch" not in m), "not: %s" % got)
    one = state["streams"]["algo-2"]
    r = logs.filter_log_events(logGroupName=GROUP, logStreamNames=[one])
    expect([e["message"] for e in r["events"]] == LINES["algo-2"], "one stream: %s" % r["events"])
    expect(r["searchedLogStreams"] == [{"logStreamName": one, "searchedCompletely": True}],
           "searched: %s" % r.get("searchedLogStreams"))


def errors():
    c1 = error_code(lambda: logs.describe_log_streams(logGroupName="/aws/no/such/group"))
    c2 = error_code(lambda: logs.get_log_events(logGroupName=GROUP, logStreamName=JOB + "/algo-9-1"))
    c3 = error_code(lambda: logs.get_log_events(logGroupName=GROUP, logStreamName=state["streams"]["algo-1"],
                                                nextToken="garbage"))
    c4 = error_code(lambda: logs.filter_log_events(logGroupName=GROUP, logStreamNames=["a"],
                                                   logStreamNamePrefix="b"))
    c5 = error_code(lambda: client("wrong-secret").describe_log_streams(logGroupName=GROUP))
    got = [c1, c2, c3, c4, c5]
    want = ["ResourceNotFoundException", "ResourceNotFoundException", "InvalidParameterException",
            "InvalidParameterException", "SignatureDoesNotMatch"]
    expect(got == want, "error codes %s, want %s" % (got, want))


check("DescribeLogStreams lists the job's streams by the contract's names", describe)
if "streams" in state:
    check("DescribeLogStreams pages by LastEventTime", describe_paged)
    check("GetLogEvents from the head returns every line in order", get_all)
    check("GetLogEvents pages forward with nextForwardToken", get_paged_forward)
    check("GetLogEvents reads backward from the newest", get_backward)
    check("GetLogEvents honours startTime and endTime", get_time_window)
    check("FilterLogEvents paginates over every stream", filter_all)
    check("FilterLogEvents filter patterns and logStreamNames", filter_patterns)
    check("errors: unknown group and stream, bad token, bad signature", errors)
