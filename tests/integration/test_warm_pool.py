#!/usr/bin/python3
"""Managed warm pools (ResourceConfig.KeepAlivePeriodInSeconds) on the
embedded local cluster (trainctld --local-hosts 3):

  (a) job A (2 hosts, keep-alive) completes: WarmPoolStatus Available and
      its hosts stay reserved: a 2-host job without a keep-alive waits
      although one host is free
  (b) a matching job B (same ResourceConfig, RoleArn, a keep-alive of its
      own) starts at once on A's hosts; A is Reused with ReusedByJob B
  (c) B's short period runs out: B Terminated, its hosts free, and the
      waiting job runs
  (d) ListTrainingJobs WarmPoolStatusEquals filters, summaries carry it
  (e) a restart of trainctld keeps an Available pool: its hosts stay
      reserved and a matching job reuses it afterwards
  (f) bad WarmPoolStatusEquals: ValidationException
  (g) draining a host of an Available pool terminates it
  (h) UpdateTrainingJob's KeepAlivePeriodInSeconds: refused for a job
      created without one and for an ended pool; a new period is echoed;
      0 terminates an Available pool and frees its hosts

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_warm_pool.py
BUILD names the build directory; TRAINCTL_TEST_KEEP=1 keeps the temp dir.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
expect = sc.expect


def request(name, count, keep=None, seconds=1, volume=1):
    req = fl.job_request(name, count, checkpoint=False, max_runtime=120)
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sh"
    req["AlgorithmSpecification"]["ContainerArguments"] = ["-c", "sleep %s" % seconds]
    req["ResourceConfig"]["VolumeSizeInGB"] = volume
    if keep is not None:
        req["ResourceConfig"]["KeepAlivePeriodInSeconds"] = keep
    return req


def describe(sm, name):
    return sm.describe_training_job(TrainingJobName=name)


def wait(sm, name, pred, timeout, what):
    deadline = time.time() + timeout
    d = None
    while time.time() < deadline:
        d = describe(sm, name)
        if pred(d):
            return d
        time.sleep(0.1)
    raise sc.Fail("%s: %s not after %.0f s: %s %s %s" % (
        name, what, timeout, d.get("TrainingJobStatus"), d.get("SecondaryStatus"),
        d.get("WarmPoolStatus")))


def pool(d):
    return (d.get("WarmPoolStatus") or {}).get("Status")


def hosts_of(cl, job):
    """{algo: host} of a running job, from GET /v1/hosts."""
    return {h["algo"]: h["name"] for h in cl.hosts() if h.get("job") == job and h.get("algo")}


def run_capturing_hosts(cl, sm, name, timeout=60):
    """Waits for the job to end; the hosts it ran on, seen while it ran."""
    seen = {}
    deadline = time.time() + timeout
    while time.time() < deadline:
        seen.update(hosts_of(cl, name))
        d = describe(sm, name)
        if d["TrainingJobStatus"] != "InProgress":
            expect(seen, "%s ended before its hosts were seen (make it run longer)" % name)
            return d, seen
        time.sleep(0.05)
    raise sc.Fail("%s did not end in %d s" % (name, timeout))


def names(sm, status):
    r = sm.list_training_jobs(WarmPoolStatusEquals=status, MaxResults=100)
    return sorted(s["TrainingJobName"] for s in r["TrainingJobSummaries"]
                  if (s.get("WarmPoolStatus") or {}).get("Status") == status)


class State:
    pass


def case_a(cl, sm, st):
    sm.create_training_job(**request("wp-a", 2, keep=60, seconds=1))
    d = wait(sm, "wp-a", lambda d: d["TrainingJobStatus"] == "InProgress" and pool(d) == "InUse", 30,
             "InUse while running")
    d, st.a_hosts = run_capturing_hosts(cl, sm, "wp-a")
    expect(d["TrainingJobStatus"] == "Completed", "wp-a: %s %s" % (d["TrainingJobStatus"],
                                                                  d.get("FailureReason")))
    expect(len(set(st.a_hosts.values())) == 2, "wp-a ran on %s" % st.a_hosts)
    d = wait(sm, "wp-a", lambda d: pool(d) == "Available", 10, "Available")
    expect(d["ResourceConfig"].get("KeepAlivePeriodInSeconds") == 60, "echo: %s" % d["ResourceConfig"])
    warm = sorted(h["name"] for h in cl.hosts() if h.get("state") == "warm" and h.get("job") == "wp-a")
    expect(warm == sorted(st.a_hosts.values()), "GET /v1/hosts: warm %s, wp-a ran on %s" % (warm, st.a_hosts))
    # A 2-host job without a keep-alive, and one with another volume size:
    # one host is free, the other two are A's.
    sm.create_training_job(**request("wp-cold", 2, seconds=0))
    sm.create_training_job(**request("wp-other", 2, keep=5, seconds=0, volume=2))
    time.sleep(3)
    for n in ("wp-cold", "wp-other"):
        d = describe(sm, n)
        expect(d["TrainingJobStatus"] == "InProgress" and d["SecondaryStatus"] == "Starting",
               "%s: %s/%s while the pool holds the hosts" % (n, d["TrainingJobStatus"], d["SecondaryStatus"]))
        msg = d["SecondaryStatusTransitions"][-1].get("StatusMessage", "")
        # The message names what holds the hosts: wp-a's pool.
        expect("waiting for 2 hosts" in msg and "hosts held: 2 by a warm pool" in msg,
               "%s waits: %s" % (n, d["SecondaryStatusTransitions"][-1]))
    expect(pool(describe(sm, "wp-a")) == "Available", "wp-a's pool taken by a job that does not match")


def case_b(cl, sm, st):
    t0 = time.time()
    sm.create_training_job(**request("wp-b", 2, keep=2, seconds=1))
    d, b_hosts = run_capturing_hosts(cl, sm, "wp-b")
    expect(d["TrainingJobStatus"] == "Completed", "wp-b: %s %s" % (d["TrainingJobStatus"],
                                                                  d.get("FailureReason")))
    expect(b_hosts == st.a_hosts, "wp-b ran on %s, wp-a on %s" % (b_hosts, st.a_hosts))
    a = describe(sm, "wp-a")
    wp = a.get("WarmPoolStatus") or {}
    expect(wp.get("Status") == "Reused" and wp.get("ReusedByJob") == "wp-b", "wp-a: %s" % wp)
    expect(0 <= wp.get("ResourceRetainedBillableTimeInSeconds", -1) <= time.time() - t0 + 60,
           "wp-a retained: %s" % wp)
    return "wp-b on the hosts of wp-a: %s" % sorted(b_hosts.values())


def case_c(cl, sm, st):
    # B's 2 s run out; then the queued jobs get the hosts.
    d = wait(sm, "wp-b", lambda d: pool(d) == "Terminated", 20, "Terminated")
    wp = d["WarmPoolStatus"]
    expect(1 <= wp.get("ResourceRetainedBillableTimeInSeconds", -1) <= 10, "wp-b retained: %s" % wp)
    for n in ("wp-cold", "wp-other"):
        d = wait(sm, n, lambda d: d["TrainingJobStatus"] != "InProgress", 60, "ends")
        expect(d["TrainingJobStatus"] == "Completed", "%s: %s" % (n, d["TrainingJobStatus"]))
    expect("WarmPoolStatus" not in describe(sm, "wp-cold"), "a job without keep-alive has no WarmPoolStatus")
    # wp-other asked for one; nobody reused it (5 s).
    wait(sm, "wp-other", lambda d: pool(d) == "Terminated", 20, "Terminated")


def case_d(cl, sm, st):
    expect(names(sm, "Reused") == ["wp-a"], "Reused: %s" % names(sm, "Reused"))
    expect(names(sm, "Terminated") == ["wp-b", "wp-other"], "Terminated: %s" % names(sm, "Terminated"))
    r = sm.list_training_jobs(WarmPoolStatusEquals="Available", MaxResults=100)
    expect(r["TrainingJobSummaries"] == [], "Available: %s" % r["TrainingJobSummaries"])
    r = sm.list_training_jobs(MaxResults=100)
    by = {s["TrainingJobName"]: s for s in r["TrainingJobSummaries"]}
    expect(by["wp-a"]["WarmPoolStatus"]["ReusedByJob"] == "wp-b" and "WarmPoolStatus" not in by["wp-cold"],
           "summaries: %s" % by)


def case_e(cl, sm, st):
    sm.create_training_job(**request("wp-e", 1, keep=600, seconds=2))
    d, e_hosts = run_capturing_hosts(cl, sm, "wp-e")
    expect(d["TrainingJobStatus"] == "Completed", "wp-e: %s" % d["TrainingJobStatus"])
    wait(sm, "wp-e", lambda d: pool(d) == "Available", 10, "Available")
    rc, killed = cl.stop()
    expect(rc == 0 and not killed, "trainctld stop: %s %s" % (rc, killed))
    err = cl.start(wait_hosts=False)
    expect(err is None, "trainctld restart: %s" % err)
    cl.wait_hosts(lambda hs: sum(h.get("state") in ("ready", "warm") for h in hs) == 3, 30,
                  "3 hosts ready or warm")
    sm = cl.client()
    d = describe(sm, "wp-e")
    expect(pool(d) == "Available", "after the restart: %s" % d.get("WarmPoolStatus"))
    # Reserved still: a 3-host job waits.
    sm.create_training_job(**request("wp-wide", 3, seconds=0))
    time.sleep(3)
    d = describe(sm, "wp-wide")
    expect(d["SecondaryStatus"] == "Starting", "wp-wide: %s while wp-e holds a host" % d["SecondaryStatus"])
    sm.create_training_job(**request("wp-f", 1, keep=1, seconds=2))
    d, f_hosts = run_capturing_hosts(cl, sm, "wp-f")
    expect(f_hosts == e_hosts, "wp-f ran on %s, wp-e on %s" % (f_hosts, e_hosts))
    wp = describe(sm, "wp-e")["WarmPoolStatus"]
    expect(wp["Status"] == "Reused" and wp["ReusedByJob"] == "wp-f", "wp-e: %s" % wp)
    d = wait(sm, "wp-wide", lambda d: d["TrainingJobStatus"] != "InProgress", 60, "ends")
    expect(d["TrainingJobStatus"] == "Completed", "wp-wide: %s" % d["TrainingJobStatus"])


def case_g(cl, sm, st):
    sm = cl.client()
    sm.create_training_job(**request("wp-g", 1, keep=600, seconds=2))
    d, g_hosts = run_capturing_hosts(cl, sm, "wp-g")
    wait(sm, "wp-g", lambda d: pool(d) == "Available", 10, "Available")
    host = g_hosts["algo-1"]
    r = sc.http_request(cl.port, "POST", "/v1/hosts/%s/drain" % host, body=b'{"reason": "test"}')
    expect(r.status == 200, "drain %s: %r" % (host, r))
    d = wait(sm, "wp-g", lambda d: pool(d) == "Terminated", 20, "Terminated after its host was drained")
    r = sc.http_request(cl.port, "POST", "/v1/hosts/%s/undrain" % host)
    expect(r.status == 200, "undrain %s: %r" % (host, r))


def case_h(cl, sm, st):
    sm = cl.client()

    def refused(name, seconds, words):
        try:
            sm.update_training_job(TrainingJobName=name, ResourceConfig={"KeepAlivePeriodInSeconds": seconds})
        except sm.exceptions.ClientError as e:
            err = e.response["Error"]
            expect(err["Code"] == "ValidationException" and words in err["Message"],
                   "update of %s: %s" % (name, err))
            return
        raise sc.Fail("update of %s to %d accepted" % (name, seconds))

    refused("wp-cold", 60, "KeepAlivePeriodInSeconds")   # created without one
    refused("wp-b", 60, "Terminated")                     # its pool ended
    sm.create_training_job(**request("wp-h", 1, keep=600, seconds=0))
    wait(sm, "wp-h", lambda d: pool(d) == "Available", 30, "Available")
    sm.update_training_job(TrainingJobName="wp-h", ResourceConfig={"KeepAlivePeriodInSeconds": 900})
    d = describe(sm, "wp-h")
    expect(pool(d) == "Available" and d["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 900,
           "after an update to 900: %s %s" % (d.get("WarmPoolStatus"), d["ResourceConfig"]))
    sm.update_training_job(TrainingJobName="wp-h", ResourceConfig={"KeepAlivePeriodInSeconds": 0})
    d = describe(sm, "wp-h")
    expect(pool(d) == "Terminated" and d["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 0,
           "after an update to 0: %s %s" % (d.get("WarmPoolStatus"), d["ResourceConfig"]))
    cl.wait_hosts(lambda hs: not any(h.get("state") == "warm" for h in hs), 10, "no warm host")


def case_f(cl, sm, st):
    try:
        sm.list_training_jobs(WarmPoolStatusEquals="Warm")
    except sm.exceptions.ClientError as e:
        expect(e.response["Error"]["Code"] == "ValidationException", "error: %s" % e.response["Error"])
        return
    raise sc.Fail("WarmPoolStatusEquals=Warm accepted")


def main():
    tap = sc.Tap()
    cl = fl.LocalCluster(3, ["--max-retries", "0"], prefix="trainctl-warm-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 3 starts", err):
        sm = cl.client()
        st = State()
        ok = tap.case("(a) an Available pool keeps its hosts from jobs that do not match", case_a, cl, sm, st)
        if ok is not None:
            r = tap.case("(b) a matching job starts on the pool's hosts; the pool is Reused", case_b, cl, sm, st)
            if isinstance(r, str):
                print("# " + r)
            tap.case("(c) the period runs out: Terminated, the hosts free, the queue runs", case_c, cl, sm, st)
            tap.case("(d) ListTrainingJobs WarmPoolStatusEquals and summaries", case_d, cl, sm, st)
        tap.case("(f) an unknown WarmPoolStatusEquals is a ValidationException", case_f, cl, sm, st)
        tap.case("(e) a restart keeps an Available pool, and it is reused after it", case_e, cl, sm, st)
        tap.case("(g) draining a host of an Available pool terminates it", case_g, cl, sm, st)
        tap.case("(h) UpdateTrainingJob KeepAlivePeriodInSeconds: rules, a new period, 0 ends the pool",
                 case_h, cl, sm, st)
    rc, killed = cl.stop()
    time.sleep(0.3)
    cl.check_stopped(tap, rc, killed)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
