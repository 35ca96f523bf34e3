#!/usr/bin/python3
"""The log views of a job (docs/web.md) on trainctld --local-hosts 2:

  (a) streams: one per host and attempt, labelled "attempt K · algo-N"
  (b) search: a substring over every stream with the lines around each
      match; regex=1; host, attempt and level filters; bad parameters 400
  (c) download: the whole log as a text attachment, merged by time and
      labelled; one stream alone
  (d) first_error=1: the line to jump to, the failing rank's first line on
      stderr in its last attempt
  (e) the page's job list: sort and order, status, instance type, tag and
      creation-time filters, pages; bad parameters 400

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_logview.py
"""
import json
import os
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
expect = sc.expect

# Attempt 1 fails on algo-1 after its lines (algo-2 is stopped with it);
# attempt 2 completes.
SCRIPT = r"""
h=$SM_CURRENT_HOST; a=$TRAINCTL_ATTEMPT
for i in 1 2 3 4 5; do echo "$h attempt-$a line-$i"; sleep 0.02; done
if [ "$a" = 1 ]; then
  echo "ERROR boom on $h" >&2
  # algo-1 fails the attempt; algo-2 is stopped with it
  if [ "$h" = algo-1 ]; then sleep 0.05; echo "after-boom $h"; exit 1; fi
  sleep 30
fi
echo "done $h"
"""

FAIL_SCRIPT = r"""
echo "starting $SM_CURRENT_HOST"
if [ "$SM_CURRENT_HOST" = algo-2 ]; then
  echo "warming up" ; echo "Traceback (most recent call last):" >&2; echo "ValueError: bad" >&2; exit 3
fi
sleep 5
"""


def request(cl, name, script, retries=None):
    path = os.path.join(cl.tmp, name + ".sh")
    with open(path, "w") as f:
        f.write(script)
    r = fl.job_request(name, 2, checkpoint=False, max_runtime=120)
    r["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sh"
    r["AlgorithmSpecification"]["ContainerArguments"] = [path]
    if retries:
        r["RetryStrategy"] = {"MaximumRetryAttempts": retries}
    return r


def get(cl, path, **q):
    url = path + ("?" + urllib.parse.urlencode(q) if q else "")
    return sc.http_request(cl.port, "GET", url)


def case_a(cl, sm):
    r = get(cl, "/v1/training-jobs/lv-retry/logs/streams")
    expect(r.status == 200, repr(r))
    labels = sorted(s["label"] for s in r.json["streams"])
    want = sorted("attempt %d \u00b7 algo-%d" % (a, h) for a in (1, 2) for h in (1, 2))
    expect(labels == want, "labels %s" % labels)
    expect(all(s["bytes"] > 0 and s["start"] > 0 for s in r.json["streams"]), r.json)


def case_b(cl, sm):
    r = get(cl, "/v1/training-jobs/lv-retry/logs/search", q="error BOOM", context=2)
    expect(r.status == 200, repr(r))
    m = r.json["matches"]
    expect(len(m) == 2 and all(x["attempt"] == 1 and x["stream"] == "stderr" for x in m), json.dumps(m)[:600])
    one = [x for x in m if x["host"] == "algo-1"][0]
    expect([b["message"] for b in one["before"]] == ["algo-1 attempt-1 line-4", "algo-1 attempt-1 line-5"],
           "before %s" % one["before"])
    expect([a["message"] for a in one["after"]][:1] == ["after-boom algo-1"], "after %s" % one["after"])
    expect(one["label"] == "attempt 1 \u00b7 algo-1", one["label"])
    r = get(cl, "/v1/training-jobs/lv-retry/logs/search", q="line-(1|3)$", regex="1", host="algo-2", attempt="2",
            context=0)
    got = sorted(x["message"] for x in r.json["matches"])
    expect(got == ["algo-2 attempt-2 line-1", "algo-2 attempt-2 line-3"], "regex/host/attempt: %s" % got)
    r = get(cl, "/v1/training-jobs/lv-retry/logs/search", level="error", context=0)
    expect(sorted(x["message"] for x in r.json["matches"]) == ["ERROR boom on algo-1", "ERROR boom on algo-2"],
           "level=error: %s" % r.json)
    r = get(cl, "/v1/training-jobs/lv-retry/logs/search", q="LINE-2", limit=1, context=0)
    expect(len(r.json["matches"]) == 1, "limit 1: %s" % r.json)
    for bad in ({"context": "99"}, {"limit": "0"}, {"level": "loud"}, {"q": "(", "regex": "1"},
                {"q": "x" * 300}):
        r = get(cl, "/v1/training-jobs/lv-retry/logs/search", **bad)
        expect(r.status == 400 and b"ValidationException" in r.body, "%s: %r" % (bad, r))
    r = get(cl, "/v1/training-jobs/nosuch/logs/search", q="x")
    expect(r.status in (400, 404), "unknown job: %r" % r)


def case_c(cl, sm):
    r = get(cl, "/v1/training-jobs/lv-retry/logs/download")
    expect(r.status == 200 and r.headers.get("content-type", "").startswith("text/plain") and
           "attachment" in r.headers.get("content-disposition", ""), repr(r))
    lines = r.body.decode().splitlines()
    ours = [ln for ln in lines if " line-" in ln or "ERROR boom" in ln or ": done" in ln]
    expect(len(ours) == 2 * (5 + 1) + 2 * (5 + 1), "%d lines:\n%s" % (len(ours), "\n".join(lines)))
    stamps = [ln.split(" ", 1)[0] for ln in lines]
    expect(stamps == sorted(stamps), "merged by time")
    expect(any("attempt 2 algo-1 rank 0: done algo-1" in ln for ln in lines), "labelled:\n%s" % lines[:4])
    expect(any("rank 0 stderr: ERROR boom on algo-2" in ln for ln in lines), "stderr marked")
    streams = get(cl, "/v1/training-jobs/lv-retry/logs/streams").json["streams"]
    s = [x for x in streams if x["label"] == "attempt 2 \u00b7 algo-2"][0]["log_stream"]
    r = get(cl, "/v1/training-jobs/lv-retry/logs/download", stream=s)
    lines = r.body.decode().splitlines()
    # A later attempt's stream opens with the line that says where it starts.
    expect(len(lines) == 7 and all("attempt 2 algo-2" in ln for ln in lines), "one stream: %s" % lines)
    expect("==== trainctl: attempt 2 of this job starts here (algo-2 on host " in lines[0],
           "the attempt's first line: %s" % lines[0])
    r = get(cl, "/v1/training-jobs/lv-retry/logs/download", stream="algo-9-1")
    expect(r.status == 404, "unknown stream: %r" % r)


def case_d(cl, sm):
    r = get(cl, "/v1/training-jobs/lv-fail/logs/search", first_error="1")
    m = r.json["matches"]
    expect(len(m) == 1 and m[0]["host"] == "algo-2" and m[0]["message"] == "Traceback (most recent call last):",
           "first error: %s" % r.json)
    expect([b["message"] for b in m[0]["before"]][-1:] == ["warming up"], "context: %s" % m[0]["before"])
    r = get(cl, "/v1/training-jobs/lv-retry/logs/search", first_error="1")
    expect(r.json["matches"] == [], "a completed job has none: %s" % r.json)


def names(cl, **q):
    r = get(cl, "/v1/ui/jobs", **q)
    expect(r.status == 200, "%s: %r" % (q, r))
    return [j["name"] for j in r.json["jobs"]], r.json.get("next_token")


def case_e(cl, sm):
    expect(names(cl, sort="name")[0] == ["lv-fail", "lv-retry"], "by name: %s" % (names(cl, sort="name"),))
    expect(names(cl, sort="name", order="desc")[0] == ["lv-retry", "lv-fail"], "by name, desc")
    expect(names(cl)[0] == ["lv-fail", "lv-retry"], "newest first by default")
    expect(names(cl, sort="status")[0] == ["lv-retry", "lv-fail"], "by status (Completed < Failed)")
    expect(names(cl, status="Failed")[0] == ["lv-fail"], "status filter")
    expect(names(cl, instance_type="ml.m5.large")[0] == ["lv-fail", "lv-retry"], "instance type")
    expect(names(cl, instance_type="ml.c5.xlarge")[0] == [], "another instance type")
    expect(names(cl, tag="team=logs")[0] == ["lv-retry"], "tag KEY=VALUE")
    expect(names(cl, tag="team")[0] == ["lv-retry"], "tag KEY")
    expect(names(cl, tag="team=other")[0] == [], "tag with another value")
    now = int(time.time() * 1000)
    expect(names(cl, created_after=str(now))[0] == [], "created after now")
    expect(names(cl, created_before=str(now))[0] == ["lv-fail", "lv-retry"], "created before now")
    first, token = names(cl, sort="name", limit="1")
    expect(first == ["lv-fail"] and token, "page 1: %s %s" % (first, token))
    second, token = names(cl, sort="name", limit="1", next_token=token)
    expect(second == ["lv-retry"], "page 2: %s" % second)
    r = get(cl, "/v1/ui/jobs/lv-retry/request")
    req = r.json
    expect(r.status == 200 and req["TrainingJobName"] == "lv-retry" and req["RetryStrategy"] ==
           {"MaximumRetryAttempts": 2} and req["Tags"] == [{"Key": "team", "Value": "logs"}],
           "the job's request: %r" % r)
    req["TrainingJobName"] = "lv-clone"
    r = sc.http_request(cl.port, "POST", "/v1/training-jobs", json.dumps(req).encode(),
                        {"Content-Type": "application/json"})
    expect(r.status == 200, "clone created: %r" % r)
    req["ResourceConfig"]["InstanceCount"] = 0
    req["TrainingJobName"] = "lv-clone2"
    r = sc.http_request(cl.port, "POST", "/v1/training-jobs", json.dumps(req).encode(),
                        {"Content-Type": "application/json"})
    expect(r.status == 400 and b"instanceCount" in r.body, "a bad clone is refused as any create: %r" % r)
    fl.wait_job(sm, "lv-clone", fl.terminal, 60)
    for bad in ({"sort": "size"}, {"order": "up"}, {"created_after": "soon"}, {"tag": "=v"},
                {"instance_type": "x" * 300}):
        r = get(cl, "/v1/ui/jobs", **bad)
        expect(r.status == 400, "%s: %r" % (bad, r))


def main():
    tap = sc.Tap()
    cl = fl.LocalCluster(2, ["--max-retries", "0"], prefix="trainctl-logview-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
        sm = cl.client()
        req = request(cl, "lv-retry", SCRIPT, retries=2)
        req["Tags"] = [{"Key": "team", "Value": "logs"}]
        sm.create_training_job(**req)
        d, _ = fl.wait_job(sm, "lv-retry", fl.terminal, 120)
        tap.ok(d["TrainingJobStatus"] == "Completed", "a job failing its first attempt completes its second",
               sc.short(d))
        sm.create_training_job(**request(cl, "lv-fail", FAIL_SCRIPT))
        d, _ = fl.wait_job(sm, "lv-fail", fl.terminal, 120)
        tap.ok(d["TrainingJobStatus"] == "Failed", "a job whose algo-2 rank fails ends Failed", sc.short(d))
        time.sleep(0.5)
        tap.case("(a) streams labelled by attempt and host", case_a, cl, sm)
        tap.case("(b) search with context; regex, host, attempt and level filters; bad parameters", case_b, cl, sm)
        tap.case("(c) download: the whole log merged by time, labelled; one stream", case_c, cl, sm)
        tap.case("(d) first_error: the failing rank's first line on stderr", case_d, cl, sm)
        tap.case("(e) the page's job list: sort, filters, pages", case_e, cl, sm)
    rc, killed = cl.stop()
    cl.check_stopped(tap, rc, killed)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
