#!/usr/bin/python3
"""The route table (controller/front.c, controller/route.h): one table says
where every request to trainctld goes.

  (r1) trainctld --routes lists it, one row a line: listener, method,
       path pattern or X-Amz-Target, auth, body, serves/refuses; it ends
       in the catch-alls that refuse
  (r2) every endpoint the docs name is served by a row: the SageMaker
       operations of docs/api-compatibility.md, the CloudWatch metrics
       operations and protocols, the CloudWatch Logs operations of
       docs/web.md, and every `METHOD /path` the docs write (REST face,
       agent protocol, blobs, the page's JSON, /metrics, /healthz); and
       every X-Amz-Target row is documented
  (r3) nothing else answers: on a live trainctld, paths and targets of
       no serving row get the refusal ("no such resource",
       UnknownOperation, or the agents' "no such path")
  (r4) every serving row answers a live trainctld with something other
       than that refusal, on --listen
  (r5) --agent-listen serves its rows (/healthz, agents, rendezvous,
       blobs) and refuses every other path

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_routes.py
BUILD names the build directory (default build).
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "compat"))

import smcompat as sc  # noqa: E402

sc.hermetic_env()
DAEMON = sc.DAEMON
DOCS = os.path.join(TOP, "docs")
BUCKET = "routes-bucket"


# ------------------------------------------------------------ the table

class Row:
    def __init__(self, line):
        f = line.split("\t")
        if len(f) != 6:
            raise sc.Fail("a row of 6 tab-separated columns: %r" % line)
        self.listen = set(f[0].split(","))
        self.method = f[1]
        what = f[2]
        self.sniff = None
        m = re.match(r"^(\S+) \((.*)\)$", what)
        if m:
            what, self.sniff = m.group(1), m.group(2)
        self.target = None
        self.pattern = None
        if what.startswith("X-Amz-Target:"):
            self.target = what[len("X-Amz-Target:"):]
        else:
            self.pattern = what
        self.auth, self.body, self.role = f[3], f[4], f[5]
        self.line = line

    @property
    def serves(self):
        return self.role == "serves"

    def __repr__(self):
        return self.line.replace("\t", " | ")


def path_match(pattern, path):
    """controller/route.c's ctrl_route_match()."""
    i = j = 0
    while i < len(pattern):
        if pattern[i:] == "*":
            return True
        if pattern.startswith("{}", i):
            k = j
            while k < len(path) and path[k] != "/":
                k += 1
            if k == j:
                return False
            i += 2
            j = k
            continue
        if j >= len(path) or pattern[i] != path[j]:
            return False
        i += 1
        j += 1
    return j == len(path)


def target_match(pattern, target):
    if target is None:
        return False
    if pattern.endswith("*"):
        return target.startswith(pattern[:-1])
    return pattern == target


def sniff_ok(r, path, target, ctype):
    """What the row's sniffer says of a request (its description)."""
    s = r.sniff
    if s.startswith("S3"):
        # Path-style, only for a bucket that exists (the test's).
        return (target is None and not path.startswith("/v1/") and path != "/healthz"
                and path.split("/")[1:2] == [BUCKET])
    if "CBOR" in s:
        return target is None or target.startswith("GraniteServiceVersion20100801.")
    if "awsQuery" in s:
        return target is None and (ctype or "").startswith("application/x-www-form-urlencoded")
    if "JSON 1.0" in s:
        return True
    if s == "no X-Amz-Target":
        return target is None
    raise sc.Fail("a sniffer the test does not know: %r" % r)


def agent_path(rows, path):
    """--agent-listen takes only the paths of its unsniffed rows."""
    return any("agent" in r.listen and not r.sniff and r.pattern and path_match(r.pattern, path)
               for r in rows)


def first_row(rows, method, path, target=None, listen="api", ctype=None):
    """The row the table gives a request, None when the agent listener
    refuses it."""
    if listen == "agent" and not agent_path(rows, path):
        return None
    for r in rows:
        if listen not in r.listen:
            continue
        if r.method != "*" and method not in r.method.split(","):
            continue
        if r.target is not None:
            if not target_match(r.target, target):
                continue
        elif not path_match(r.pattern, path):
            continue
        if r.sniff and not sniff_ok(r, path, target, ctype):
            continue
        return r
    return None


def load_rows():
    p = subprocess.run([DAEMON, "--routes"], capture_output=True, text=True, timeout=30)
    sc.expect(p.returncode == 0, "--routes exit %d: %s" % (p.returncode, p.stderr))
    lines = [x for x in p.stdout.splitlines() if x.strip()]
    return [Row(x) for x in lines]


def check_listing(rows):
    sc.expect(len(rows) >= 40, "only %d rows" % len(rows))
    for r in rows:
        sc.expect(r.listen <= {"api", "agent"} and r.listen, "listener of %r" % r)
        sc.expect(set(r.method.split(",")) <= {"*", "GET", "HEAD", "POST", "PUT", "DELETE"},
                  "method of %r" % r)
        sc.expect(r.auth in ("none", "agent-token", "rdzv-token", "agent-token|sigv4-s3",
                             "sigv4-s3", "sigv4|basic", "admin"), "auth of %r" % r)
        sc.expect(r.body in ("buffered", "none", "file", "s3", "blob"), "body of %r" % r)
        sc.expect(r.role in ("serves", "refuses"), "role of %r" % r)
    last = rows[-1]
    sc.expect(last.role == "refuses" and last.method == "*" and last.pattern == "*",
              "the last row refuses everything else: %r" % last)
    kinds = {(r.body, r.auth) for r in rows}
    for want in [("s3", "sigv4-s3"), ("blob", "agent-token|sigv4-s3"), ("file", "agent-token"),
                 ("buffered", "rdzv-token"), ("buffered", "none"), ("buffered", "admin")]:
        sc.expect(want in kinds, "a row with body %s and auth %s" % want)


# ----------------------------------------------------------- the docs

def read(name):
    with open(os.path.join(DOCS, name), encoding="utf-8") as f:
        return f.read()


def sagemaker_ops():
    """The first column of api-compatibility.md's Operations table, up to
    the row of what is not supported."""
    text = read("api-compatibility.md")
    sec = text.split("## Operations", 1)[1].split("\n## ", 1)[0]
    ops = []
    for line in sec.splitlines():
        if not line.startswith("| ") or line.startswith("| operation") or line.startswith("| ---"):
            continue
        first = line.split("|")[1].strip()
        if first.startswith("Experiments") or first.startswith("("):
            continue
        ops += re.findall(r"\b([A-Z][A-Za-z]+)\b", re.sub(r"\(.*?\)", "", first))
    return ops


def cwmetrics_ops():
    text = read("api-compatibility.md")
    sec = text.split("## CloudWatch metrics", 1)[1].split("\n## ", 1)[0]
    sec = sec.split("| operation | behaviour |", 1)[1]
    return re.findall(r"^\| ([A-Z][A-Za-z]+) \|", sec, re.M)


def cwlogs_ops():
    text = read("web.md")
    m = re.search(r"`X-Amz-Target: Logs_20140328\.\*`[^.]*?for\s+(.*?)on the log group", text, re.S)
    sc.expect(m, "docs/web.md names the Logs_20140328 operations")
    return re.findall(r"`([A-Z][A-Za-z]+)`", m.group(1))


PLACEHOLDER = re.compile(r"\{[^}]*\}|<[^>]*>|\b[A-Z][A-Z_]+\b")


def doc_endpoints():
    """(method, path, where) for every `METHOD /path` and bare `/path` the
    docs write, placeholders made concrete."""
    out = []
    for name in sorted(os.listdir(DOCS)):
        if not name.endswith(".md"):
            continue
        text = read(name)
        for m in re.finditer(r"`(?:(GET|POST|PUT|DELETE|HEAD) )?(/(?:v1|healthz|metrics|ui|service)[^`\s]*)`",
                             text):
            method, path = m.group(1) or "GET", m.group(2)
            raw = m.group(0)
            path = re.sub(r"\[.*", "", path)  # optional parts: the base
            path = path.split("?")[0]
            path = path.split("|")[0].replace("\\", "")
            path = path.rstrip(",.")
            if path in ("/v1/", "/v1/..."):
                continue  # the face as a whole, no endpoint
            path = PLACEHOLDER.sub("x", path)
            if path == "/v1/blobs":
                path = "/v1/blobs/x"
            out.append((method, path, "%s: %s" % (name, raw)))
    return out


def check_docs(rows):
    targets = [r.target for r in rows if r.target and r.serves]
    named = ["SageMaker." + o for o in sagemaker_ops()] + \
            ["Logs_20140328." + o for o in cwlogs_ops()]
    sc.expect(len(named) >= 19, "only %d operations found in the docs: %s" % (len(named), named))
    for t in named:
        r = first_row(rows, "POST", "/", target=t)
        sc.expect(r and r.serves and r.target == t, "%s: no row (got %r)" % (t, r))
    for t in targets:
        if t.endswith("*"):
            continue
        sc.expect(t in named, "row X-Amz-Target %s is not in the docs" % t)
    cw = cwmetrics_ops()
    sc.expect(len(cw) >= 3, "CloudWatch metrics operations: %s" % cw)
    for op in cw:
        r = first_row(rows, "POST", "/", target="GraniteServiceVersion20100801." + op)
        sc.expect(r and r.serves and r.body == "buffered", "CloudWatch %s (JSON 1.0): %r" % (op, r))
        r = first_row(rows, "POST", "/service/GraniteServiceVersion20100801/operation/" + op)
        sc.expect(r and r.serves and r.sniff, "CloudWatch %s (CBOR): %r" % (op, r))
    r = first_row(rows, "POST", "/", ctype="application/x-www-form-urlencoded")
    sc.expect(r and r.serves and "awsQuery" in (r.sniff or ""), "CloudWatch awsQuery: %r" % r)
    eps = doc_endpoints()
    sc.expect(len(eps) >= 40, "only %d endpoints found in the docs" % len(eps))
    for method, path, where in eps:
        r = first_row(rows, method, path)
        sc.expect(r and r.serves, "%s (%s %s): %r" % (where, method, path, r))
    need = {"/healthz", "/metrics", "/v1/agents/register", "/v1/blobs/x", "/v1/changes"}
    seen = {p for _, p, _ in eps}
    sc.expect(need <= seen, "the docs name %s" % sorted(need - seen))
    return len(named) + len(cw) + len(eps)


# ------------------------------------------------------------ live

def is_refusal(resp):
    j = resp.json if isinstance(resp.json, dict) else {}
    t = j.get("__type", "")
    msg = j.get("message", "")
    if "UnknownOperation" in t:
        return True
    return resp.status == 404 and msg == "no such path"


def request_for(row, method):
    """A request that row should take: (method, path, headers, body)."""
    headers = {}
    body = b""
    if row.target is not None:
        t = row.target
        if t.endswith("*"):
            t = t[:-1] + "ListMetrics"
            headers["Content-Type"] = "application/x-amz-json-1.0"
        else:
            headers["Content-Type"] = "application/x-amz-json-1.1"
        headers["X-Amz-Target"] = t
        return method, "/", headers, b"{}"
    path = row.pattern.replace("{}", "x")
    if path.endswith("*"):
        path = path[:-1] + "x"
    if row.pattern == "*" and row.sniff and row.sniff.startswith("S3"):
        path = "/%s/no-such-key" % BUCKET
    elif row.sniff and "CBOR" in row.sniff:
        path = path[:-1] + "ListMetrics"
        headers = {"smithy-protocol": "rpc-v2-cbor", "Content-Type": "application/cbor",
                   "Accept": "application/cbor"}
        body = b"\xa0"
    elif row.sniff and "awsQuery" in row.sniff:
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        body = b"Action=ListMetrics&Version=2010-08-01"
    elif method in ("POST", "PUT"):
        headers = {"Content-Type": "application/json"}
        body = b"{}"
    if path.startswith("/v1/rendezvous/"):
        path = "/v1/rendezvous/x/1/k"
    if path == "/v1/changes":
        path += "?timeout=0"
    return method, path, headers, body


def method_reaching(rows, row, listen):
    """A method whose request_for() the table gives to row."""
    for m in (row.method.split(",") if row.method != "*" else ["GET", "PATCH", "POST", "PUT"]):
        _, path, headers, _ = request_for(row, m)
        if first_row(rows, m, path.split("?")[0], target=headers.get("X-Amz-Target"),
                     listen=listen, ctype=headers.get("Content-Type")) is row:
            return m
    return None


def send(port, method, path, headers, body):
    return sc.http_request(port, method, path, body, headers, timeout=20)


def check_rows_answer(rows, port, listen):
    n = 0
    for row in rows:
        if not row.serves or listen not in row.listen:
            continue
        m = method_reaching(rows, row, listen)
        if m is None and listen == "agent" and row.pattern == "*":
            continue  # S3 there only with a bucket's Host on its paths
        sc.expect(m, "no method reaches %r" % row)
        method, path, headers, body = request_for(row, m)
        r = send(port, method, path, headers, body)
        sc.expect(not is_refusal(r), "%r: %s %s answered the refusal: %r" % (row, method, path, r))
        sc.expect(r.status != 413, "%r: 413" % row)
        n += 1
    return n


NOT_ROUTES = [
    ("GET", "/nope", None), ("POST", "/nope", None), ("PATCH", "/", None),
    ("GET", "/v1/nope", None), ("POST", "/v1/training-jobs/x/nope", None),
    ("GET", "/v1/training-jobs/x/logs/nope", None), ("GET", "/v1/ui/jobsx", None),
    ("GET", "/uix", None), ("GET", "/healthzz", None), ("GET", "/metricsx", None),
    ("POST", "/", "SageMaker.NoSuchOperation"), ("POST", "/", "Logs_20140328.NoSuch"),
    ("POST", "/", "SageMaker.CreateExperiment"), ("GET", "/", "SageMaker.ListTrainingJobs"),
    ("POST", "/v1/agents/x/nope", None), ("GET", "/v1/agents/register", None),
    ("PUT", "/v1/agents/x/status", None), ("DELETE", "/v1/hostsx", None),
]


def mutations(rows):
    """Each literal path of a serving row, one segment longer or with its
    last segment changed; kept when the table says no serving row takes it."""
    out = []
    for r in rows:
        if not r.serves or r.pattern in (None, "*") or r.sniff:
            continue
        base = r.pattern.replace("{}", "x").rstrip("*").rstrip("/")
        for p in (base + "/zz", base + "zz", base + "/zz/zz"):
            for m in ("GET", "POST"):
                hit = first_row(rows, m, p)
                if hit is not None and not hit.serves and (m, p, None) not in out:
                    out.append((m, p, None))
    return out


def check_refusals(rows, port):
    probes = NOT_ROUTES + mutations(rows)
    n = 0
    for method, path, target in probes:
        hit = first_row(rows, method, path, target=target)
        sc.expect(hit is not None and not hit.serves,
                  "the table itself serves %s %s %s: %r" % (method, path, target, hit))
        headers = {"Content-Type": "application/x-amz-json-1.1"}
        if target:
            headers["X-Amz-Target"] = target
        r = send(port, method, path, headers, b"{}" if method != "GET" else b"")
        sc.expect(is_refusal(r), "%s %s (target %s) answered: %r" % (method, path, target, r))
        n += 1
    return n


def check_agent_listener(rows, port):
    n = check_rows_answer(rows, port, "agent")
    for method, path in [("GET", "/v1/training-jobs"), ("GET", "/"), ("GET", "/metrics"),
                         ("POST", "/v1/hosts/x/drain"), ("GET", "/ui/"), ("GET", "/nope")]:
        sc.expect(first_row(rows, method, path, listen="agent") is None,
                  "the table serves %s %s on --agent-listen" % (method, path))
        r = send(port, method, path, {}, b"")
        sc.expect(is_refusal(r) and "agent listener" in (r.json or {}).get("message", ""),
                  "%s %s on --agent-listen answered %r" % (method, path, r))
        n += 1
    return n


def main():
    tap = sc.Tap()
    rows = tap.case("r1 trainctld --routes lists the table", load_rows)
    if rows:
        tap.case("r1 rows are well formed and end in the refusals", check_listing, rows)
        tap.case("r2 every endpoint the docs name is a serving row", check_docs, rows)
    agent_port = sc.free_port()
    d = sc.Daemon(extra=["--agent-listen", "127.0.0.1:%d" % agent_port])
    why = d.start()
    tap.log_hint = d.log_tail
    if tap.ok(why is None, "trainctld starts", why) and rows:
        os.makedirs(os.path.join(d.state_dir, "s3", BUCKET), exist_ok=True)
        tap.case("r3 paths and targets of no row get the refusal", check_refusals, rows, d.port)
        tap.case("r4 every serving row answers on --listen", check_rows_answer, rows, d.port, "api")
        tap.case("r5 --agent-listen serves its rows and refuses the rest",
                 check_agent_listener, rows, agent_port)
    d.stop()
    if tap.failed:
        tap.note(d.log_tail())
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
