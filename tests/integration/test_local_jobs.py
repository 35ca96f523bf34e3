#!/usr/bin/python3
"""End-to-end jobs on the embedded local cluster, checked against the
SageMaker contract (shared spec SAGEMAKER-CONTRACT.md §3, §4, §5, §7, §8).

Starts its own `trainctld --local-hosts 3 --grace-period 2` on a free
loopback port with a temp state dir, runs examples/probe/probe.py as the
training program through boto3 (retries off, hermetic environment) and
checks what every host's process saw (SM_* variables, argv, config files,
the /opt/ml tree, channel data), what DescribeTrainingJob says, the model
artifacts, logs and metrics, and the failure paths (exit codes, failure
file, signals, Stop, MaxRuntime, SIGTERM ignored, leftover grandchildren).

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_local_jobs.py
BUILD names the build directory (default build). TRAINCTL_TEST_KEEP=1
keeps the temp dir (state, logs) for inspection.
"""
import json
import os
import re
import signal
import sys
import tarfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from localjobs import *  # noqa: E402,F401,F403
from localjobs import sc  # noqa: E402


METRICS = [{"Name": "train:loss", "Regex": "loss=(.*?);"}, {"Name": "train:acc", "Regex": "acc=(.*?);"}]
FAILURE_TEXT = ("ProbeError: the probe failed on purpose\nsecond line\n" + "x" * 2000)[:1024] + "TAIL-BEYOND-1024" * 8


def build_jobs(run_id):
    def n(s):
        return "it-%s-%s" % (run_id, s)
    J = []
    # 3 hosts
    J.append(Job("3 hosts, no channels (logs, metrics)", n("h3-plain"), 3,
                 hps=dict(HP_TYPES, print_lines="4", print_metrics="3"), metrics=METRICS, drive=drive_follow_logs))
    J.append(Job("3 hosts, FullyReplicated channel", n("h3-repl"), 3, hps=HP_TYPES,
                 channels=[("training", REPLICATED, "FullyReplicated", "text/csv")]))
    J.append(Job("3 hosts, ShardedByS3Key channel of 7 objects", n("h3-shard"), 3, hps=HP_TYPES,
                 channels=[("train", SHARDED, "ShardedByS3Key", None)]))
    J.append(Job("3 hosts, sharded + replicated channels (repeat)", n("h3-both"), 3,
                 channels=[("train", SHARDED, "ShardedByS3Key", None),
                           ("Aux.v1", REPLICATED, "FullyReplicated", None)]))
    # 1 host
    J.append(Job("1 host, no channels, file:// executable", n("h1-exec"), 1, mode="exec", hps=HP_TYPES))
    J.append(Job("1 host, FullyReplicated channel, framework image", n("h1-repl"), 1, image=DLC, hps=HP_TYPES,
                 channels=[("training", REPLICATED, "FullyReplicated", "text/csv")]))
    J.append(Job("1 host, ShardedByS3Key channel", n("h1-shard"), 1, hps=HP_TYPES,
                 channels=[("train", SHARDED, "ShardedByS3Key", None)]))
    J.append(Job("1 host, ContainerEntrypoint + ContainerArguments", n("h1-entry"), 1, mode="entry",
                 entrypoint=["/usr/bin/python3", PROBE], arguments=["--from-arguments", "yes"]))
    J.append(Job("exit 3, no failure file", n("f-exit3"), 1, hps={"exit_code": "3"}, expect_status="Failed"))
    J.append(Job("exit 1 with a failure file", n("f-file"), 1, expect_status="Failed",
                 hps={"exit_code": "1", "write_failure": json.dumps(FAILURE_TEXT)}))
    J.append(Job("killed by signal 9", n("f-kill9"), 1, hps={"kill_self": "9"}, expect_status="Failed"))
    J.append(Job("StopTrainingJob during training", n("f-stop"), 1, sleep=60, drive=drive_stop,
                 expect_status="Stopped"))
    J.append(Job("MaxRuntimeInSeconds=2", n("f-maxrt"), 1, sleep=60, max_runtime=2, expect_status="Stopped"))
    J.append(Job("SIGTERM ignored + Stop", n("f-noterm"), 1, sleep=60, hps={"ignore_sigterm": "true"},
                 drive=drive_stop, expect_status="Stopped"))
    J.append(Job("grandchild in the process group", n("f-gchild"), 1, hps={"fork_grandchild": "true"}, sleep=0.5))
    return {j.name.split("-", 2)[2]: j for j in J}


def place_data(cluster):
    """Channel data and the probe's code in the embedded store."""
    sh = cluster.s3_path(SHARDED)
    for i in range(7):
        rel = "shard-%d.txt" % i if i < 6 else "deep/er/shard-%d.txt" % i
        os.makedirs(os.path.dirname(os.path.join(sh, rel)), exist_ok=True)
        with open(os.path.join(sh, rel), "w") as f:
            f.write("shard %d\n" % i * (i + 1))
    rp = cluster.s3_path(REPLICATED)
    for rel, text in (("a.csv", "1,2,3\n"), ("b.csv", "4,5,6\n"), ("sub/c.csv", "7,8,9\n")):
        os.makedirs(os.path.dirname(os.path.join(rp, rel)), exist_ok=True)
        with open(os.path.join(rp, rel), "w") as f:
            f.write(text)
    code = cluster.s3_path(CODE_URI)
    os.makedirs(os.path.dirname(code), exist_ok=True)
    with tarfile.open(code, "w:gz") as tf:
        tf.add(PROBE, arcname="probe.py")


# ---------------------------------------------------------------- main

def main():
    tap = sc.Tap()
    cluster = Cluster()
    jobs = {}
    err = cluster.start()
    if not tap.ok(err is None, "trainctld --local-hosts %d starts" % N_HOSTS, err):
        cluster.cleanup()
        return tap.finish()
    try:
        ok, text = cluster.wait_hosts()
        tap.ok(ok, "the %d local hosts register" % N_HOSTS, text)
        if ok:
            tap.note(text)
        place_data(cluster)
        run_id = "%x" % (int(time.time() * 1000) % 0xfffffff)
        jobs = build_jobs(run_id)
        pool = Pool(N_HOSTS)
        threads = []
        t_jobs = time.time()
        for j in jobs.values():
            th = threading.Thread(target=run_job, args=(cluster, pool, j), daemon=True)
            th.start()
            threads.append(th)
            time.sleep(0.02)    # FIFO order in the pool = list order
        for th in threads:
            th.join(300)
        tap.note("all jobs ran in %.1f s" % (time.time() - t_jobs))
        report(tap, cluster, jobs)
        for j in jobs.values():
            if j.created_at and j.desc:
                tap.note("%s: %s/%s, seen %s%s" % (j.name, j.desc["TrainingJobStatus"], j.desc.get("SecondaryStatus"),
                                                   j.seen_text(), "; " + "; ".join(j.notes) if j.notes else ""))
    finally:
        rc, killed = cluster.stop()
        tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit %r, SIGKILL needed: %s\n%s" % (
            rc, killed, cluster.log_tail(15)))
        time.sleep(0.5)
        left = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open("/proc/%s/cmdline" % d, "rb") as f:
                        if cluster.state.encode() in f.read():
                            left.append(int(d))
                except OSError:
                    pass
        tap.ok(not left, "no agent of this run is left after trainctld stops", ps_lines(set(left)))
        leftovers = [p for j in jobs.values() for p in procs_with(j.name)]
        if leftovers:
            tap.note("killing leftover job processes of this test: %s" % leftovers)
            for pid, _, _ in leftovers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if tap.failed:
            tap.note(cluster.log_tail(20))
        cluster.cleanup()
    tap.note("took %.1f s" % (time.time() - T0))
    return tap.finish()


def report(tap, cluster, jobs):
    def case(job, what, fn, *a):
        def wrapped():
            try:
                return fn(*a)
            except Fail as e:
                raise Fail("%s\n%s" % (e, cluster.log_grep(job.name, 12)))
        return tap.case("%s: %s" % (job.label, what), wrapped)

    assign = {}
    for key, j in jobs.items():
        if key.startswith("f-"):
            continue
        case(j, "ends Completed", check_status, j, "Completed", "Completed")
        case(j, "model.tar.gz at <S3OutputPath>/<job>/output/ holds one probe file per host", check_model, cluster, j)
        case(j, "output.tar.gz holds every host's output/data", check_output, j)
        case(j, "config files as the contract's format", check_configs, j)
        case(j, "every SM_* variable, argv, cwd of every host", check_env, cluster, j)
        for cname, uri, dist, _ in j.channels:
            if dist == "FullyReplicated":
                case(j, "channel %s: every object on every host" % cname, check_replicated, cluster, j, cname, uri)
            else:
                assign[key] = case(j, "channel %s: every object on exactly one host" % cname, check_sharded,
                                   cluster, j, cname, uri)
        case(j, "times, billable time, SecondaryStatusTransitions", check_times, j, "Completed")
        case(j, "no process of the job left", check_no_procs, j)
    if isinstance(assign.get("h3-shard"), dict) and isinstance(assign.get("h3-both"), dict):
        tap.ok(assign["h3-shard"] == assign["h3-both"], "ShardedByS3Key assignment is deterministic",
               "first %s\nthen  %s" % (assign["h3-shard"], assign["h3-both"]))
    else:
        tap.ok(False, "ShardedByS3Key assignment is deterministic", "a sharded job failed")

    j = jobs["h3-plain"]
    case(j, "FinalMetricDataList from MetricDefinitions", check_metrics, j, {"train:loss": 0.25, "train:acc": 0.7})
    case(j, "trainctl logs -f follows all hosts and exits when the job ends", check_follow, j)
    case(j, "trainctl logs (all hosts) and --host algo-2", check_cli_logs, cluster, j)
    case(j, "GET /v1/training-jobs/JOB/logs streams <job>/algo-<n>-<epoch>", check_rest_logs, cluster, j)

    def failed(job, pattern_fn):
        check_status(job, "Failed", "Failed")
        reason = job.desc.get("FailureReason")
        expect(isinstance(reason, str) and reason, "no FailureReason")
        pattern_fn(reason)

    def exit3(reason):
        expect("algo-1" in reason and "exited with code 3" in reason,
               "FailureReason %r should name algo-1 and say 'exited with code 3'" % reason)
        if not reason.startswith("AlgorithmError: "):
            jobs["f-exit3"].notes.append("FailureReason without the AlgorithmError: prefix: %r" % reason)

    def ffile(reason):
        want = "AlgorithmError: " + FAILURE_TEXT[:1024]
        expect(reason.startswith(want), "FailureReason %r...\nexpected it to start with %r..." % (
            reason[:200], want[:200]))
        expect("TAIL-BEYOND" not in reason, "FailureReason has more than the first 1024 characters of the file")

    def kill9(reason):
        expect(re.search(r"signal\s*9\b|SIGKILL", reason, re.I), "FailureReason %r does not mention signal 9" % reason)

    for key, fn, what in (("f-exit3", exit3, "Failed, FailureReason names the host and 'exited with code 3'"),
                          ("f-file", ffile, "Failed, FailureReason 'AlgorithmError: ' + first 1024 chars of the file"),
                          ("f-kill9", kill9, "Failed, FailureReason mentions signal 9")):
        j = jobs[key]
        case(j, what, failed, j, fn)
        case(j, "times and SecondaryStatusTransitions", check_times, j, "Failed")
        case(j, "no process of the job left", check_no_procs, j)

    def stopped(job, secondary, ignored):
        check_status(job, "Stopped", secondary)
        sts = [s for _, _, s in job.seen] + [t.get("Status") for t in job.desc.get("SecondaryStatusTransitions", [])]
        expect("Stopping" in sts, "never seen Stopping: %s" % job.seen_text())
        if "stop_at" in job.extra:
            expect(job.extra.get("stop_answer") == {}, "StopTrainingJob answered %r" % job.extra.get("stop_answer"))
            took = job.extra["stopped_at"] - job.extra["stop_at"]
            job.notes.append("stop took %.2f s" % took)
            if ignored:
                expect(took >= GRACE - 0.3, "Stopped %.2f s after the stop although SIGTERM was ignored (grace %d s)"
                       % (took, GRACE))
                expect(took <= GRACE + 15, "Stopped only %.1f s after the stop (grace %d s)" % (took, GRACE))
            else:
                expect(took <= GRACE + 15, "Stopped only %.1f s after the stop" % took)
        check_model(cluster, job, [] if ignored else ["sigterm-algo-1.txt"])

    j = jobs["f-stop"]
    case(j, "Stopping -> Stopped, SIGTERM delivered, model.tar.gz uploaded", stopped, j, "Stopped", False)
    case(j, "times and SecondaryStatusTransitions", check_times, j, "Stopped")
    case(j, "no process of the job left", check_no_procs, j)
    j = jobs["f-maxrt"]

    def maxrt(job):
        stopped(job, "MaxRuntimeExceeded", False)
        span = (job.desc["TrainingEndTime"] - job.desc["TrainingStartTime"]).total_seconds()
        expect(span <= 2 + GRACE + 10, "ran %.1f s with MaxRuntimeInSeconds=2" % span)
    case(j, "Stopped/MaxRuntimeExceeded, SIGTERM delivered, model.tar.gz uploaded", maxrt, j)
    case(j, "times and SecondaryStatusTransitions", check_times, j, "MaxRuntimeExceeded")
    case(j, "no process of the job left", check_no_procs, j)
    j = jobs["f-noterm"]
    case(j, "Stopped after the %d s grace via SIGKILL, model.tar.gz uploaded" % GRACE, stopped, j, "Stopped", True)
    case(j, "no process of the job left", check_no_procs, j)
    j = jobs["f-gchild"]

    def gchild(job):
        check_status(job, "Completed", "Completed")
        rec = probe_records(job).get("algo-1", {})
        pid = rec.get("grandchild_pid")
        expect(isinstance(pid, int), "the probe recorded no grandchild: %s" % short(rec.get("grandchild_pid")))
        alive = [p for p, _, _ in job.procs_later if p == pid]
        expect(not alive, "grandchild %d still runs after the job completed:\n%s" % (pid, ps_lines({pid})))
        check_no_procs(job)
    case(j, "Completed and the grandchild (same process group) is gone", gchild, j)


if __name__ == "__main__":
    sys.exit(main())
