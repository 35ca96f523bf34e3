#!/usr/bin/python3
"""boto3 (Debian 1.26 / botocore 1.29, model M22) against trainctld.

Run from the repository root: /usr/bin/python3 tests/compat/test_boto3.py
Prints TAP; exits non-zero when a case failed. Starts its own trainctld
(free loopback port, temp state dir) and stops it by PID.

Sections: the common cases (smcore.Core), raw HTTP robustness, the REST
face, SigV4 authentication (a second daemon with --credentials), restart on
the same state dir, clean exit on SIGTERM.
"""
import datetime
import http.client
import json
import os
import re
import select
import socket
import sys
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smcompat as C  # noqa: E402
import smcore  # noqa: E402

C.hermetic_env()
import botocore  # noqa: E402
import botocore.exceptions  # noqa: E402


def is_4xx(r):
    return 400 <= r.status < 500


def want(r, status, type_=None, what=""):
    ok = (r.status in status) if isinstance(status, (tuple, list, range)) else r.status == status
    C.expect(ok, "%sexpected HTTP %s, got %r" % (what, status, r))
    if type_:
        got = (r.json or {}).get("__type", "") if isinstance(r.json, dict) else ""
        got = got.split("#")[-1]
        types = (type_,) if isinstance(type_, str) else type_
        if types == ("*",):
            C.expect(got, "%sno __type in the error body: %r" % (what, r))
        else:
            C.expect(got in types, "%s__type %r, expected %s: %r" % (what, got, "/".join(types), r))
    return r


# ---------------------------------------------------------------- raw HTTP

def big_body(port, size):
    """POSTs a ListTrainingJobs with a body of size bytes, reading the answer
    as soon as one comes (a server may answer 413 before the body is in).
    Returns (status or None, text)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    head = ("POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/x-amz-json-1.1\r\n"
            "X-Amz-Target: SageMaker.ListTrainingJobs\r\nContent-Length: %d\r\n\r\n" % (port, size)).encode()
    body = b'{"NameContains": "' + b"a" * (size - 21) + b'"}'
    data = head + body
    sent, answer, note = 0, b"", ""
    s.setblocking(False)
    deadline = time.time() + 30
    try:
        while time.time() < deadline:
            r, w, _ = select.select([s], [s] if sent < len(data) else [], [], 1.0)
            if r:
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
                if b"\r\n\r\n" in answer:
                    break
            if w and sent < len(data):
                sent += s.send(data[sent:sent + 262144])
    except OSError as e:
        note = "%s after %d of %d bytes" % (type(e).__name__, sent, len(data))
    finally:
        s.close()
    m = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    return (int(m.group(1)) if m else None), (answer[:300].decode("latin-1") + " " + note)


def half_request(port):
    """Headers promising 1000 bytes, 10 sent, then close."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(("POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: SageMaker.ListTrainingJobs\r\n"
               "Content-Type: application/x-amz-json-1.1\r\nContent-Length: 1000\r\n\r\n{\"MaxResul").encode())
    s.close()


def raw_cases(tap, d, core):
    port = d.port
    ids = []

    def t_request_id():
        r = want(C.amz_json(port, "DescribeTrainingJob", {"TrainingJobName": "compat-create-1"}), 200)
        C.expect(r.headers.get("x-amzn-requestid"), "no x-amzn-RequestId header: %r" % r)
        ids.append(r.headers["x-amzn-requestid"])
        ct = r.headers.get("content-type", "")
        C.expect(ct.startswith("application/x-amz-json-1.1"), "Content-Type %r" % ct)
        j = r.json
        for k in ("CreationTime", "LastModifiedTime"):
            C.expect(isinstance(j.get(k), (int, float)) and not isinstance(j.get(k), bool),
                     "%s is %r, expected epoch seconds as a JSON number" % (k, j.get(k)))
        C.expect(abs(j["CreationTime"] - core.t_create0) < 60, "CreationTime %r is not epoch seconds" % j["CreationTime"])
        for t in j.get("SecondaryStatusTransitions", []):
            C.expect(isinstance(t.get("StartTime"), (int, float)), "transition StartTime %r" % t.get("StartTime"))

    def t_error_request_id():
        r = want(C.amz_json(port, "DescribeTrainingJob", {"TrainingJobName": "no-such-job"}), 400, "ValidationException")
        C.expect(r.headers.get("x-amzn-requestid"), "no x-amzn-RequestId on an error: %r" % r)
        C.expect(isinstance(r.json.get("message") or r.json.get("Message"), str), "no message: %r" % r)
        ids.append(r.headers["x-amzn-requestid"])
        C.expect(len(set(ids)) == len(ids), "request ids repeat: %s" % ids)

    def t_not_5xx(r, what):
        C.expect(r.status < 500, "%s: HTTP %s (5xx makes clients retry): %r" % (what, r.status, r))
        return r

    cases = [
        ("unknown X-Amz-Target -> 400 with __type",
         lambda: want(C.amz_json(port, "NoSuchOperation", {}), 400, "*")),
        ("unknown X-Amz-Target names a known operation of another service -> 400",
         lambda: want(C.amz_json(port, "ListBuckets", {}), 400, "*")),
        ("missing X-Amz-Target -> 4xx with __type",
         lambda: want(C.http_request(port, "POST", "/", b"{}", {"Content-Type": "application/x-amz-json-1.1"}),
                      range(400, 500), "*")),
        ("X-Amz-Target with another prefix -> 4xx",
         lambda: want(C.http_request(port, "POST", "/", b"{}", {"Content-Type": "application/x-amz-json-1.1",
                                                                "X-Amz-Target": "Logs_20140328.ListTrainingJobs"}),
                      range(400, 500), "*")),
        ("malformed JSON body -> 400 with __type",
         lambda: want(C.amz_json(port, "ListTrainingJobs", b'{"MaxResults": '), 400, "*")),
        ("JSON array body -> 400",
         lambda: want(C.amz_json(port, "ListTrainingJobs", b"[1, 2]"), 400, "*")),
        ("JSON with trailing garbage -> 400",
         lambda: want(C.amz_json(port, "ListTrainingJobs", b'{"MaxResults": 1} xyz'), 400, "*")),
        ("deeply nested JSON (100k '[') -> 4xx",
         lambda: want(C.amz_json(port, "ListTrainingJobs", b'{"a":' + b"[" * 100000), range(400, 500), "*")),
        ("invalid UTF-8 in a string -> 4xx",
         lambda: want(C.amz_json(port, "DescribeTrainingJob", b'{"TrainingJobName": "ab\xff\xfe"}'),
                      range(400, 500), "*")),
        ("NUL in TrainingJobName -> ValidationException",
         lambda: want(C.amz_json(port, "DescribeTrainingJob", b'{"TrainingJobName": "compat\\u0000-create-1"}'),
                      400, ("ValidationException", "SerializationException"))),
        ("TrainingJobName of the wrong JSON type -> 400",
         lambda: want(C.amz_json(port, "DescribeTrainingJob", {"TrainingJobName": 123}), 400,
                      ("ValidationException", "SerializationException"))),
        ("MaxResults as a string -> 400",
         lambda: want(C.amz_json(port, "ListTrainingJobs", {"MaxResults": "10"}), 400,
                      ("ValidationException", "SerializationException"))),
        ("MaxResults 1.5 -> 400",
         lambda: want(C.amz_json(port, "ListTrainingJobs", {"MaxResults": 1.5}), 400,
                      ("ValidationException", "SerializationException"))),
        ("DescribeTrainingJob without TrainingJobName -> ValidationException",
         lambda: want(C.amz_json(port, "DescribeTrainingJob", {}), 400, "ValidationException")),
        ("unknown members are ignored (List)",
         lambda: want(C.amz_json(port, "ListTrainingJobs", {"MaxResults": 1, "SomeFutureMember": {"x": [1]}}), 200)),
        ("empty body for ListTrainingJobs -> 200 or 4xx, never 5xx",
         lambda: t_not_5xx(C.amz_json(port, "ListTrainingJobs", b""), "empty body")),
        ("Content-Type text/plain -> accepted or 4xx, never 5xx",
         lambda: t_not_5xx(C.amz_json(port, "ListTrainingJobs", {}, {"Content-Type": "text/plain"}), "text/plain")),
        ("Content-Type application/json -> accepted or 4xx, never 5xx",
         lambda: t_not_5xx(C.amz_json(port, "ListTrainingJobs", {}, {"Content-Type": "application/json"}),
                           "application/json")),
        ("no Content-Type -> accepted or 4xx, never 5xx",
         lambda: t_not_5xx(C.http_request(port, "POST", "/", b"{}", {"X-Amz-Target": "SageMaker.ListTrainingJobs"}),
                           "no Content-Type")),
        ("GET / (the web UI's page, or an error) -> never 5xx",
         lambda: t_not_5xx(C.http_request(port, "GET", "/"), "GET /")),
    ]
    tap.case("raw: x-amzn-RequestId, Content-Type, epoch-number timestamps on success", t_request_id)
    tap.case("raw: x-amzn-RequestId and message on an error; ids unique", t_error_request_id)
    for name, fn in cases:
        tap.case("raw: " + name, fn)

    def t_unknown_create_member():
        # Neither model has them: refused by name, never silently ignored.
        for where, mutate in (("SomeFutureMember", lambda r: r.update(SomeFutureMember={"Enabled": True})),
                              ("ResourceConfig.SomeFutureResourceMember",
                               lambda r: r["ResourceConfig"].update(SomeFutureResourceMember="x"))):
            req = C.small_request("raw-future-member")
            mutate(req)
            r = want(C.amz_json(port, "CreateTrainingJob", req), 400, "ValidationException")
            msg = (r.json or {}).get("message", "")
            C.expect(where + " is not a member" in msg, "message %r does not name %s" % (msg, where))
        r = want(C.amz_json(port, "DescribeTrainingJob", {"TrainingJobName": "raw-future-member"}), 400,
                 "ValidationException")
    tap.case("raw: CreateTrainingJob with unknown members -> ValidationException naming them, nothing created",
             t_unknown_create_member)

    def t_big():
        st, text = big_body(port, 8 * 1024 * 1024)
        C.expect(st is not None and 400 <= st < 500, "8 MiB body: status %s; %s" % (st, text))
        tap.note("8 MiB body answered %s" % st)
    tap.case("raw: 8 MiB body -> 4xx", t_big)

    def t_chunked():
        body = b'{"MaxResults": 2}'
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.putrequest("POST", "/")
        conn.putheader("Content-Type", "application/x-amz-json-1.1")
        conn.putheader("X-Amz-Target", "SageMaker.ListTrainingJobs")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        conn.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        r = conn.getresponse()
        data = r.read()
        conn.close()
        C.expect(r.status < 500, "chunked body: HTTP %s %r" % (r.status, data[:300]))
    tap.case("raw: chunked request body -> 200 or 4xx, never 5xx", t_chunked)

    def t_keepalive():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        st = []
        for op, body in (("ListTrainingJobs", b'{"MaxResults": 1}'),
                         ("DescribeTrainingJob", b'{"TrainingJobName": "no-such-job"}'),
                         ("DescribeTrainingJob", b'{"TrainingJobName": "compat-create-1"}')):
            conn.request("POST", "/", body, {"Content-Type": "application/x-amz-json-1.1",
                                             "X-Amz-Target": "SageMaker." + op})
            r = conn.getresponse()
            r.read()
            st.append(r.status)
        conn.close()
        C.expect(st == [200, 400, 200], "statuses on one connection: %s" % st)
    tap.case("raw: three requests (one an error) on one keep-alive connection", t_keepalive)

    def t_race_create():
        res = []

        def go():
            r = C.amz_json(port, "CreateTrainingJob", C.small_request("race-create"))
            res.append((r.status, (r.json or {}).get("__type")))
        ts = [threading.Thread(target=go) for _ in range(32)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        core.created.append("race-create")
        wins = [r for r in res if r[0] == 200]
        others = set(r for r in res if r[0] != 200)
        C.expect(len(wins) == 1 and others <= {(400, "ResourceInUse")}, "32 parallel creates of one name: %s"
                 % sorted(res, key=str))

    def t_race_stop():
        core.sm.create_training_job(**C.small_request("race-stop"))
        core.created.append("race-stop")
        res = []

        def go():
            r = C.amz_json(port, "StopTrainingJob", {"TrainingJobName": "race-stop"})
            res.append((r.status, (r.json or {}).get("__type")))
        ts = [threading.Thread(target=go) for _ in range(16)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        wins = [r for r in res if r[0] == 200]
        others = set(r for r in res if r[0] != 200)
        C.expect(len(wins) == 1 and others <= {(400, "ValidationException")}, "16 parallel stops: %s"
                 % sorted(res, key=str))
        C.wait_status(core.sm, "race-stop", "Stopped")

    def t_parallel_distinct():
        res, arns = [], []
        names = ["par-%d-%02d" % (w, i) for w in range(8) for i in range(25)]

        def go(w):
            for n in names[w * 25:(w + 1) * 25]:
                r = C.amz_json(port, "CreateTrainingJob", C.small_request(n))
                res.append(r.status)
                arns.append((r.json or {}).get("TrainingJobArn"))
        ts = [threading.Thread(target=go, args=(w,)) for w in range(8)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        core.created.extend(sorted(names))   # order among them is the server's
        C.expect(res.count(200) == 200, "statuses: %s" % sorted(set(res)))
        C.expect(len(set(arns)) == 200, "ARNs not unique")
        listed = [s["TrainingJobName"] for s in C.list_all(core.sm, page_size=100, NameContains="par-")[0]]
        C.expect(sorted(listed) == sorted(names) and len(listed) == 200, "listed %d of 200" % len(listed))
        core.created[-200:] = listed         # keep the creation log in the server's order

    def t_many_connections():
        socks = []
        try:
            for _ in range(300):
                socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            for s in socks[:100]:
                s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: SageMaker.ListTrainingJobs\r\n"
                          b"Content-Length: 100\r\n\r\n{")
            t = time.time()
            r = C.amz_json(port, "ListTrainingJobs", {"MaxResults": 1})
            dt = time.time() - t
        finally:
            for s in socks:
                s.close()
        C.expect(r.status == 200 and dt < 10.0, "with 300 idle connections (100 half-sent): %r after %.2f s" % (r, dt))

    def t_big_header():
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: SageMaker.ListTrainingJobs\r\nX-Big: "
                      + b"a" * 200000 + b"\r\nContent-Length: 2\r\n\r\n{}")
            answer = s.recv(200)
        except OSError as e:
            answer = ("(%s)" % e).encode()
        finally:
            s.close()
        m = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
        C.expect(m and 400 <= int(m.group(1)) < 500, "200 KB header: %r" % answer[:120])

    def t_http10():
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST / HTTP/1.0\r\nX-Amz-Target: SageMaker.ListTrainingJobs\r\n"
                  b"Content-Type: application/x-amz-json-1.1\r\nContent-Length: 2\r\n\r\n{}")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        C.expect(re.match(rb"HTTP/1\.[01] 200", data) and b"TrainingJobSummaries" in data, "HTTP/1.0: %r" % data[:200])

    tap.case("raw: 32 parallel creates of one name: exactly one succeeds, the rest ResourceInUse", t_race_create)
    tap.case("raw: 16 parallel stops of one job: exactly one succeeds, the rest ValidationException", t_race_stop)
    tap.case("raw: 8 clients x 25 creates in parallel: all succeed, unique ARNs, all listed", t_parallel_distinct)
    tap.case("raw: a request is answered promptly with 300 idle and 100 half-sent connections open",
             t_many_connections)
    tap.case("raw: a 200 KB header -> 4xx", t_big_header)
    tap.case("raw: HTTP/1.0 request works (connection closed after the answer)", t_http10)

    def t_alive():
        half_request(port)
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GARBAGE\r\n\r\n")
            s.close()
        C.expect(d.alive(), "trainctld exited\n" + d.log_tail())
        want(C.amz_json(port, "DescribeTrainingJob", {"TrainingJobName": "compat-create-1"}), 200)
        core.sm.list_training_jobs(MaxResults=1)
    tap.case("raw: daemon alive and answering after the abuse above", t_alive)


# ---------------------------------------------------------------- REST face

def rest_cases(tap, d, core):
    port = d.port
    J = {"Content-Type": "application/json"}

    def get(path):
        return C.http_request(port, "GET", path)

    def post(path, obj):
        return C.http_request(port, "POST", path, json.dumps(obj).encode(), J)

    state = {}

    def t_create():
        for n in ("rest-1", "rest-2", "rest-3"):
            r = want(post("/v1/training-jobs", C.job_request(n)), (200, 201))
            arn = (r.json or {}).get("TrainingJobArn", "")
            C.expect(re.match(C.ARN_RE % n, arn), "%s: TrainingJobArn %r: %r" % (n, arn, r))
            state[n] = arn
            core.created.append(n)
            time.sleep(0.01)

    def t_get():
        r = want(get("/v1/training-jobs/rest-1"), 200)
        j = r.json or {}
        C.expect(j.get("TrainingJobName") == "rest-1" and j.get("TrainingJobArn") == state.get("rest-1"),
                 "name/arn: %r" % r)
        C.expect(j.get("TrainingJobStatus") == "InProgress" and j.get("SecondaryStatus") == "Starting",
                 "status: %s/%s" % (j.get("TrainingJobStatus"), j.get("SecondaryStatus")))
        C.expect(isinstance(j.get("CreationTime"), (int, float)), "CreationTime %r" % j.get("CreationTime"))
        C.expect(j.get("HyperParameters") == C.job_request("rest-1")["HyperParameters"], "HyperParameters %r"
                 % j.get("HyperParameters"))
        same = core.sm.describe_training_job(TrainingJobName="rest-1")
        C.expect(same["TrainingJobArn"] == j["TrainingJobArn"]
                 and abs(same["CreationTime"].timestamp() - j["CreationTime"]) < 0.002,
                 "JSON API and REST disagree: %s vs %s" % (C.short(same), C.short(j)))
        r = want(get("/v1/training-jobs/compat-create-1"), 200)
        C.expect(r.json.get("TrainingJobArn") == core.arn1, "boto3-created job via REST: %r" % r)

    def t_list():
        r = want(get("/v1/training-jobs?NameContains=rest-&MaxResults=2"), 200)
        s = r.json.get("TrainingJobSummaries")
        C.expect([x["TrainingJobName"] for x in s] == ["rest-1", "rest-2"], "page 1: %r" % r)
        C.expect(all(isinstance(x.get("CreationTime"), (int, float)) and x.get("TrainingJobArn") for x in s),
                 "summary shape: %s" % C.short(s))
        tok = r.json.get("NextToken")
        C.expect(tok, "no NextToken on page 1: %r" % r)
        r = want(get("/v1/training-jobs?" + urllib.parse.urlencode(
            {"NameContains": "rest-", "MaxResults": 2, "NextToken": tok})), 200)
        C.expect([x["TrainingJobName"] for x in r.json["TrainingJobSummaries"]] == ["rest-3"]
                 and "NextToken" not in r.json, "page 2: %r" % r)
        r = want(get("/v1/training-jobs?NameContains=rest-&SortBy=Name&SortOrder=Descending"), 200)
        C.expect([x["TrainingJobName"] for x in r.json["TrainingJobSummaries"]] == ["rest-3", "rest-2", "rest-1"],
                 "SortBy=Name Descending: %r" % r)
        r = want(get("/v1/training-jobs?MaxResults=1"), 200)
        C.expect(len(r.json["TrainingJobSummaries"]) == 1 and r.json.get("NextToken"), "MaxResults=1: %r" % r)
        t = int(time.time()) + 3600
        r = want(get("/v1/training-jobs?NameContains=rest-&CreationTimeAfter=%d" % t), 200)
        C.expect(r.json["TrainingJobSummaries"] == [], "CreationTimeAfter=now+1h: %r" % r)

    def t_list_invalid():
        for q in ("StatusEquals=Bogus", "MaxResults=101", "SortBy=Bogus", "MaxResults=abc"):
            want(get("/v1/training-jobs?" + q), 400, "ValidationException", q + ": ")

    def t_stop():
        r = want(C.http_request(port, "POST", "/v1/training-jobs/rest-1/stop"), 200)
        C.expect(r.json == {}, "stop body %r, expected {}" % r)
        deadline = time.time() + 15
        while True:
            j = want(get("/v1/training-jobs/rest-1"), 200).json
            if j["TrainingJobStatus"] == "Stopped":
                break
            C.expect(j["TrainingJobStatus"] == "Stopping", "status after stop: %s" % j["TrainingJobStatus"])
            C.expect(time.time() < deadline, "not Stopped after 15 s")
            time.sleep(0.1)
        C.expect(j.get("SecondaryStatus") == "Stopped", "SecondaryStatus %r" % j.get("SecondaryStatus"))
        want(C.http_request(port, "POST", "/v1/training-jobs/rest-1/stop"), 400, "ValidationException",
             "second stop: ")

    def t_errors():
        want(get("/v1/training-jobs/no-such-job"), (400, 404), ("ValidationException", "ResourceNotFound"),
             "unknown job: ")
        want(post("/v1/training-jobs", C.job_request("rest-1")), (400, 409), "ResourceInUse", "duplicate: ")
        want(post("/v1/training-jobs", C.job_request("rest_bad")), 400, "ValidationException", "bad name: ")
        want(C.http_request(port, "POST", "/v1/training-jobs", b"{not json", J), 400, "*", "bad JSON: ")
        want(C.http_request(port, "POST", "/v1/training-jobs/no-such-job/stop"), (400, 404),
             ("ValidationException", "ResourceNotFound"), "stop unknown: ")
        for method, path in (("GET", "/v1/no-such-collection"), ("PUT", "/v1/training-jobs"),
                             ("GET", "/v1/training-jobs/rest-1/no-such-action")):
            r = C.http_request(port, method, path)
            C.expect(400 <= r.status < 500, "%s %s: %r" % (method, path, r))

    def t_delete():
        want(C.http_request(port, "DELETE", "/v1/training-jobs/rest-2"), (400, 409), "ResourceInUse",
             "delete of an InProgress job: ")
        want(C.http_request(port, "DELETE", "/v1/training-jobs/rest-1"), (200, 202, 204))
        deadline = time.time() + 15
        while get("/v1/training-jobs/rest-1").status == 200:
            C.expect(time.time() < deadline, "rest-1 still there 15 s after DELETE")
            time.sleep(0.1)
        core.deleted.add("rest-1")
        want(get("/v1/training-jobs/rest-1"), (400, 404), ("ValidationException", "ResourceNotFound"),
             "after delete: ")
        C.expect_error(lambda: core.sm.describe_training_job(TrainingJobName="rest-1"), "ValidationException",
                       400, "Requested resource not found.", "JSON API after delete: ")
        names = [x["TrainingJobName"] for x in want(get("/v1/training-jobs?NameContains=rest-"), 200)
                 .json["TrainingJobSummaries"]]
        C.expect(names == ["rest-2", "rest-3"], "list after delete: %s" % names)
        want(post("/v1/training-jobs", C.job_request("rest-1")), (200, 201), what="reuse of a deleted name: ")
        core.created.append("rest-1")

    tap.case("rest: POST /v1/training-jobs creates (TrainingJobArn)", t_create)
    tap.case("rest: GET /v1/training-jobs/{name} has the Describe shape, same data as the JSON API", t_get)
    tap.case("rest: GET /v1/training-jobs with MaxResults/NextToken/SortBy/CreationTimeAfter", t_list)
    tap.case("rest: invalid list query parameters -> 400 ValidationException", t_list_invalid)
    tap.case("rest: POST .../stop -> {} then Stopped; again -> ValidationException", t_stop)
    tap.case("rest: errors (unknown, duplicate, bad name, bad JSON, unknown paths)", t_errors)
    tap.case("rest: DELETE (InProgress -> ResourceInUse; Stopped -> gone; name reusable)", t_delete)


# ---------------------------------------------------------------- SigV4

KEY2, SECRET2 = "AKIDCOMPATSECONDKEY02", "second-secret-0000000000000000000000000"


def auth_cases(tap, base_dir_note=None):
    d = C.Daemon(credentials={"default": (C.KEY, C.SECRET), "other": (KEY2, SECRET2)}, name="trainctld-auth")
    why = d.start()
    if not tap.ok(why is None, "auth: trainctld --credentials starts", why):
        return
    port = d.port
    good = C.make_client(d.endpoint)
    auth_codes = ("SignatureDoesNotMatch", "InvalidSignatureException", "IncompleteSignature",
                  "InvalidClientTokenId", "MissingAuthenticationToken", "AccessDeniedException",
                  "UnrecognizedClientException")

    def t_signed():
        r = good.create_training_job(**C.small_request("auth-1"))
        C.expect(r.get("TrainingJobArn"), "no ARN")
        C.expect(good.describe_training_job(TrainingJobName="auth-1")["TrainingJobStatus"] == "InProgress", "status")
        C.expect([s["TrainingJobName"] for s in good.list_training_jobs()["TrainingJobSummaries"]] == ["auth-1"],
                 "list")
        good.stop_training_job(TrainingJobName="auth-1")
        C.expect_error(lambda: good.describe_training_job(TrainingJobName="nope"), "ValidationException", 400)

    def t_second_profile():
        other = C.make_client(d.endpoint, key=KEY2, secret=SECRET2)
        other.list_training_jobs()

    def t_wrong_secret():
        bad = C.make_client(d.endpoint, secret="wrong-secret-xxxxxxxxxxxxxxxxxxxxxxxxxx")
        C.expect_error(lambda: bad.list_training_jobs(), "SignatureDoesNotMatch", 403)
        C.expect_error(lambda: bad.create_training_job(**C.small_request("auth-wrong-secret")),
                       "SignatureDoesNotMatch", 403)
        C.expect_error(lambda: good.describe_training_job(TrainingJobName="auth-wrong-secret"),
                       "ValidationException", 400, what="job created by a bad signature? ")

    def t_other_key_secret():
        mixed = C.make_client(d.endpoint, key=KEY2, secret=C.SECRET)
        C.expect_error(lambda: mixed.list_training_jobs(), "SignatureDoesNotMatch", 403)

    def t_unknown_key():
        bad = C.make_client(d.endpoint, key="AKIDUNKNOWNKEY0000000")
        C.expect_error(lambda: bad.list_training_jobs(), "InvalidClientTokenId", 403)

    def t_unsigned():
        want(C.amz_json(port, "ListTrainingJobs", {}), 403, "MissingAuthenticationToken")

    def t_malformed():
        want(C.amz_json(port, "ListTrainingJobs", {}, {"Authorization": "AWS4-HMAC-SHA256 Credential=foo"}),
             400, "IncompleteSignature")
        r = C.amz_json(port, "ListTrainingJobs", {}, {"Authorization": "Basic dXNlcjpwYXNz"})
        want(r, range(400, 404), auth_codes, "Basic auth with unknown credentials: ")

    def t_own_signer():
        want(C.amz_json(port, "DescribeTrainingJob", {"TrainingJobName": "auth-1"}, auth=(C.KEY, C.SECRET)), 200)

    def t_tampered():
        body = json.dumps({"TrainingJobName": "auth-1"}).encode()
        h = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker.DescribeTrainingJob"}
        h.update(C.sigv4_sign("POST", "127.0.0.1:%d" % port, "/", "", body, C.KEY, C.SECRET, h))
        want(C.http_request(port, "POST", "/", body.replace(b"auth-1", b"auth-2"), h), 403,
             "SignatureDoesNotMatch", "body changed after signing: ")
        h2 = dict(h)
        h2["X-Amz-Target"] = "SageMaker.StopTrainingJob"
        want(C.http_request(port, "POST", "/", body, h2), 403, "SignatureDoesNotMatch", "target changed: ")

    def t_stale():
        old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
        body = b"{}"
        h = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker.ListTrainingJobs"}
        h.update(C.sigv4_sign("POST", "127.0.0.1:%d" % port, "/", "", body, C.KEY, C.SECRET, h, when=old))
        want(C.http_request(port, "POST", "/", body, h), (400, 403), ("InvalidSignatureException",
                                                                    "SignatureDoesNotMatch"), "1 h old: ")

    def t_wrong_service():
        body = b"{}"
        h = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker.ListTrainingJobs"}
        h.update(C.sigv4_sign("POST", "127.0.0.1:%d" % port, "/", "", body, C.KEY, C.SECRET, h, service="s3"))
        want(C.http_request(port, "POST", "/", body, h), (400, 403), auth_codes, "scope service s3: ")

    def t_rest_auth():
        want(C.http_request(port, "GET", "/v1/training-jobs"), 403, "MissingAuthenticationToken", "unsigned GET: ")
        want(C.http_request(port, "GET", "/v1/training-jobs/auth-1"), 403, "MissingAuthenticationToken",
             "unsigned GET job: ")
        want(C.http_request(port, "POST", "/v1/training-jobs", json.dumps(C.small_request("auth-rest-x")).encode(),
                            {"Content-Type": "application/json"}), 403, "MissingAuthenticationToken",
             "unsigned POST: ")
        q = "NameContains=auth-&MaxResults=5"
        h = C.sigv4_sign("GET", "127.0.0.1:%d" % port, "/v1/training-jobs", q, b"", C.KEY, C.SECRET)
        r = want(C.http_request(port, "GET", "/v1/training-jobs?" + q, b"", h), 200, what="signed GET: ")
        C.expect([s["TrainingJobName"] for s in r.json["TrainingJobSummaries"]] == ["auth-1"], "signed GET: %r" % r)
        h = C.sigv4_sign("GET", "127.0.0.1:%d" % port, "/v1/training-jobs", q, b"", C.KEY, "bad-secret")
        want(C.http_request(port, "GET", "/v1/training-jobs?" + q, b"", h), 403, "SignatureDoesNotMatch",
             "GET signed with a bad secret: ")

    def t_cross_site():
        # What a hostile web page can make a browser send: a form POST
        # (text/plain or urlencoded body, no custom headers) carrying the
        # Basic credentials the browser cached for the web UI. It must not
        # create jobs (which run code) nor stop them.
        import base64
        basic = "Basic " + base64.b64encode(("%s:%s" % (C.KEY, C.SECRET)).encode()).decode()
        evil = {"Authorization": basic, "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
        good.create_training_job(**C.small_request("auth-victim"))
        body = json.dumps(C.small_request("auth-csrf-made"))
        r1 = C.http_request(port, "POST", "/v1/training-jobs", body.encode(), dict(evil, **{"Content-Type": "text/plain"}))
        r2 = C.http_request(port, "POST", "/v1/training-jobs/auth-victim/stop", b"",
                            dict(evil, **{"Content-Type": "application/x-www-form-urlencoded"}))
        r3 = C.http_request(port, "POST", "/", body.encode(), dict(evil, **{"Content-Type": "text/plain"}))
        problems = []
        try:
            good.describe_training_job(TrainingJobName="auth-csrf-made")
            problems.append("a cross-site text/plain POST created a job: %r" % r1)
        except botocore.exceptions.ClientError:
            pass
        st = good.describe_training_job(TrainingJobName="auth-victim")["TrainingJobStatus"]
        if st != "InProgress":
            problems.append("a cross-site form POST stopped a job (now %s): %r" % (st, r2))
        for what, r in (("create", r1), ("stop", r2), ("JSON API", r3)):
            if not 400 <= r.status < 500:
                problems.append("cross-site %s answered %r" % (what, r))
        C.expect(not problems, "\n".join(problems))

    tap.case("auth: correctly signed boto3 create/describe/list/stop work", t_signed)
    tap.case("auth: a second profile's key works", t_second_profile)
    tap.case("auth: wrong secret -> SignatureDoesNotMatch (403), nothing created", t_wrong_secret)
    tap.case("auth: a known key with another key's secret -> SignatureDoesNotMatch", t_other_key_secret)
    tap.case("auth: unknown access key -> InvalidClientTokenId (403)", t_unknown_key)
    tap.case("auth: unsigned request -> MissingAuthenticationToken (403)", t_unsigned)
    tap.case("auth: malformed Authorization -> IncompleteSignature (400)", t_malformed)
    tap.case("auth: a request signed by an independent SigV4 signer works", t_own_signer)
    tap.case("auth: body or X-Amz-Target changed after signing -> SignatureDoesNotMatch", t_tampered)
    tap.case("auth: signature dated 1 h ago -> rejected", t_stale)
    tap.case("auth: credential scoped to another service -> rejected", t_wrong_service)
    tap.case("auth: REST face needs signatures too; signed GET with a query works", t_rest_auth)
    tap.case("auth: cross-site form POSTs with cached Basic credentials create and stop nothing", t_cross_site)
    tap.case("auth: daemon still alive", lambda: C.expect(d.alive(), d.log_tail()))
    rc, killed = d.stop()
    tap.ok(rc == 0 and not killed, "auth: trainctld exits 0 on SIGTERM", "exit status %s%s\n%s"
           % (rc, " (needed SIGKILL)" if killed else "", d.log_tail()))


# ---------------------------------------------------------------- restart

def restart_cases(tap, d, core):
    sm = core.sm
    before = C.list_all(sm, page_size=100)[0]
    desc = sm.describe_training_job(TrainingJobName="compat-create-1")
    t = time.time()
    rc, killed = d.stop()
    tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM (within 10 s)",
           "exit status %s%s, %.1f s\n%s" % (rc, " (needed SIGKILL)" if killed else "", time.time() - t, d.log_tail()))
    d2 = C.Daemon(state_dir=d.state_dir, name="trainctld-restarted")
    why = d2.start()
    if not tap.ok(why is None, "restart: trainctld starts again on the same state dir", why):
        return

    def t_same():
        sm2 = C.make_client(d2.endpoint)
        after = C.list_all(sm2, page_size=100)[0]
        b = [(s["TrainingJobName"], s["TrainingJobArn"], s["TrainingJobStatus"], s["CreationTime"]) for s in before]
        a = [(s["TrainingJobName"], s["TrainingJobArn"], s["TrainingJobStatus"], s["CreationTime"]) for s in after]
        C.expect(a == b, "listing changed across the restart:\nbefore %s\nafter  %s" % (C.short(b, 800), C.short(a, 800)))
        d2x = sm2.describe_training_job(TrainingJobName="compat-create-1")
        for k in ("TrainingJobArn", "TrainingJobStatus", "SecondaryStatus", "HyperParameters", "CreationTime",
                  "InputDataConfig", "Environment"):
            C.expect(d2x.get(k) == desc.get(k), "%s: %r -> %r" % (k, desc.get(k), d2x.get(k)))
        C.expect_error(lambda: sm2.create_training_job(**C.small_request("compat-create-1")), "ResourceInUse", 400)
        sm2.stop_training_job(TrainingJobName="compat-create-1")
        C.wait_status(sm2, "compat-create-1", "Stopped")
    tap.case("restart: jobs, statuses and descriptions survive; stop still works", t_same)
    rc, killed = d2.stop()
    tap.ok(rc == 0 and not killed, "restart: second trainctld exits 0 on SIGTERM", "exit status %s\n%s"
           % (rc, d2.log_tail()))


def main():
    tap = C.Tap()
    tap.note("botocore %s (%s), trainctld %s" % (botocore.__version__, botocore.__file__, C.DAEMON))
    d = C.Daemon()
    why = d.start()
    if not tap.ok(why is None, "trainctld starts and listens on a loopback port", why):
        return tap.finish()
    core = smcore.Core(tap, d, "m22")
    try:
        core.run()
        raw_cases(tap, d, core)
        rest_cases(tap, d, core)
        tap.case("daemon still alive after all cases", lambda: C.expect(d.alive(), d.log_tail()))
    finally:
        if tap.failed:
            tap.note(d.log_tail(40))
    auth_cases(tap)
    restart_cases(tap, d, core)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
