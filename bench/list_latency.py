#!/usr/bin/python3
"""ListTrainingJobs page latency against a running trainctld (no auth).

  /usr/bin/python3 bench/list_latency.py PORT [--pages N] [--repeat N] [--json FILE]
  /usr/bin/python3 bench/list_latency.py PORT --names-out FILE

The second form writes the names of all jobs, one a line, and prints how many.

One keep-alive connection, one request at a time, time per request
(send .. whole body read) with perf_counter; the client's garbage collector
is off while a request is timed (as Python's timeit does), so that its
pauses are not counted as the server's. Measures:
  walk asc       MaxResults 100, default order, following NextToken (up to --pages pages)
  walk desc      the same with SortOrder Descending
  first page     MaxResults 100 for each SortBy x SortOrder, --repeat times each
  filtered       NameContains that matches nothing / StatusEquals InProgress, first page
Prints one table row per series (n, p50, p90, p99, max in ms) and, with
--json, writes the figures there. Every answer must be HTTP 200 with
TrainingJobSummaries; non-200 answers are counted and reported.
"""
import argparse
import gc
import http.client
import json
import sys
import time


def pct(xs, p):
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


class Client:
    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.non200 = 0
        self.first_error = None

    def list(self, **kw):
        body = json.dumps(kw).encode()
        hdr = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker.ListTrainingJobs"}
        gc.disable()
        t = time.perf_counter()
        self.conn.request("POST", "/", body, hdr)
        r = self.conn.getresponse()
        data = r.read()
        dt = (time.perf_counter() - t) * 1000.0
        gc.enable()
        if r.status != 200:
            self.non200 += 1
            if self.first_error is None:
                self.first_error = "HTTP %d %s for %s" % (r.status, data[:300], kw)
            return dt, None
        return dt, json.loads(data)


def walk(c, pages, **kw):
    times, total, tok = [], 0, None
    for _ in range(pages):
        q = dict(kw, MaxResults=100)
        if tok:
            q["NextToken"] = tok
        dt, j = c.list(**q)
        times.append(dt)
        if j is None:
            break
        total += len(j["TrainingJobSummaries"])
        tok = j.get("NextToken")
        if not tok:
            break
    return times, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--json")
    ap.add_argument("--names-out")
    a = ap.parse_args()
    c = Client(a.port)
    if a.names_out:
        names, tok = [], None
        while True:
            q = {"MaxResults": 100}
            if tok:
                q["NextToken"] = tok
            j = c.list(**q)[1]
            if j is None:
                print("list failed: %s" % c.first_error, file=sys.stderr)
                return 1
            names += [s["TrainingJobName"] for s in j["TrainingJobSummaries"]]
            tok = j.get("NextToken")
            if not tok:
                break
        with open(a.names_out, "w") as f:
            f.write("".join(n + "\n" for n in names))
        print(len(names))
        return 0 if names and len(set(names)) == len(names) else 1
    series = []

    def add(name, times, extra=""):
        series.append({"name": name, "n": len(times), "p50": pct(times, 50), "p90": pct(times, 90),
                       "p99": pct(times, 99), "max": max(times) if times else float("nan"), "extra": extra})

    c.list(MaxResults=1)   # warm the connection
    t, total = walk(c, a.pages)
    add("walk asc (CreationTime)", t, "%d jobs seen" % total)
    t, total = walk(c, a.pages, SortOrder="Descending")
    add("walk desc (CreationTime)", t, "%d jobs seen" % total)
    t, total = walk(c, min(a.pages, 200), SortBy="Name")
    add("walk asc (Name)", t, "%d jobs seen" % total)
    for by in ("CreationTime", "Name", "Status"):
        for order in ("Ascending", "Descending"):
            times = [c.list(MaxResults=100, SortBy=by, SortOrder=order)[0] for _ in range(a.repeat)]
            add("first page %s %s" % (by, order), times)
    times = [c.list(MaxResults=100, NameContains="matches-nothing")[0] for _ in range(max(10, a.repeat // 5))]
    add("first page NameContains (no match)", times)
    first = c.list(MaxResults=1, SortOrder="Descending")[1]
    if first and first["TrainingJobSummaries"]:
        one = first["TrainingJobSummaries"][0]["TrainingJobName"]
        runs = [c.list(MaxResults=100, NameContains=one) for _ in range(max(10, a.repeat // 5))]
        add("first page NameContains (1 match)", [r[0] for r in runs],
            "%s: %d found" % (one, len((runs[0][1] or {}).get("TrainingJobSummaries", []))))
    times = [c.list(MaxResults=100, StatusEquals="InProgress")[0] for _ in range(max(10, a.repeat // 5))]
    add("first page StatusEquals InProgress", times)

    print("%-38s %6s %8s %8s %8s %8s  %s" % ("ListTrainingJobs (MaxResults 100)", "n", "p50 ms", "p90 ms",
                                             "p99 ms", "max ms", ""))
    for s in series:
        print("%-38s %6d %8.2f %8.2f %8.2f %8.2f  %s" % (s["name"], s["n"], s["p50"], s["p90"], s["p99"],
                                                         s["max"], s["extra"]))
    if c.non200:
        print("non-200 answers: %d (first: %s)" % (c.non200, c.first_error))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"series": series, "non200": c.non200, "first_error": c.first_error}, f)
    return 1 if c.non200 else 0


if __name__ == "__main__":
    sys.exit(main())
