#!/usr/bin/python3
"""Fault tolerance end to end: jobs survive the death of a rank, an agent,
the controller, a checkpoint write and a host, restart from their newest
complete checkpoint and end with the weights of a run that never stopped.

The training program is tests/integration/ft_trainer.py (an MLP on
sklearn's digits in numpy, deterministic per step, checkpoints in the
docs/checkpoints.md format every K=10 steps, fault knobs as
hyperparameters), run as a file:// image. For every fault the test checks:
the job ends Completed, Describe's SecondaryStatusTransitions show
`Restarting` ("Attempt N failed: <reason>. Restarting (K restarts left)")
then `Starting` ("Starting attempt N+1 of the training job"), the final
accuracy is >= 0.9 and the weights equal those of a fault-free run made
here, the steps lost <= K (the step rank 0 had reached in attempt N minus
the step attempt N+1 resumed from, from the program's own log lines), no
process of the job is left (environment marker FT_MARKER in /proc), and no
torn checkpoint is under its CheckpointConfig.S3Uri in the embedded store
(every step-* folder has a MANIFEST.json matching its files, no .tmp-*).

Embedded local cluster (trainctld --local-hosts 3 --heartbeat-ms 200
--host-deadline-ms 1000 --max-retries 0; RetryStrategy per job):
  (a) kill -9 of one rank (found in /proc by its marker)
  (b) a rank that exits 1 (fail_at_step)
  (c) kill -9 of an agent (the controller restarts it, it re-adopts its
      ranks), once with a program that writes output/success like the
      SageMaker toolkit, once with one that does not
  (d) kill -9 of trainctld mid-training with 20 CreateTrainingJob calls
      in flight, restarted at once with the same arguments: the job goes
      on, every acknowledged job exists and runs; (d2) the same with the
      controller away longer than the host deadline: the agents see its
      machine refuse connections (no partition), so they do not fence
      themselves and the attempt goes on without a restart
  (e) a crash in the middle of writing a checkpoint
  (f) a job failing on every attempt (MaximumRetryAttempts 2): Failed with
      the last attempt's reason, 3 attempts
  (k) a ClientError failure is not retried
  (u) SIGSTOP of an agent once training ended, before its host's model
      arrived (Uploading): the host is lost, the job restarts from its
      last checkpoint on the spare host and Completes
  (i) chaos: 4 jobs, random kill -9 of ranks, exit 1 of ranks (SIGUSR1),
      kill -9 of agents for ~40 s (one fixed seed, CHAOS_SEED, unless
      FT_CHAOS_SEED names another); at least CHAOS_MIN_FAULTS faults must
      be injected and a restart seen, and a failure prints how to replay
Network-namespace cluster (root only; scripts/cluster.sh up with a prefix,
/24 and port of this run, trainctld -- --heartbeat-ms 200
--host-deadline-ms 1000 --restart-wait 30):
  (g) `cluster.sh link-down` of a host of a 2-host job, a spare third host:
      the job restarts on the spare and Completes; the partitioned host's
      ranks are gone (self-fenced) while it is still partitioned
  (h) no spare (3-host job on 3 hosts): the job waits in Restarting, and
      Completes after `link-up`; the partitioned host's old ranks are gone
  (r) the link heals while trainctld reprovisions the lost host: `link-up`
      a fraction of a second after trainctld declared the host lost (and
      decided to start an agent there over SSH, whose connection then
      gets through), 3 rounds: the agent that came back is never replaced
      (same PID and start time, no stop in its log, never a second one);
      a 4th round freezes the agent (SIGSTOP) until a provisioning ran:
      the start script itself leaves it running

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_faults.py
BUILD names the build directory (default build); TRAINCTL_TEST_KEEP=1
keeps the temp dir; FT_ONLY=a,b,... runs only those cases; FT_CHAOS_SEED
picks another seed for the chaos case. Takes about 2.5 minutes on 2 cores (the
namespace part about 30 s of it).
"""
import os
import random
import re
import signal
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
from ftlib import Fail, expect, short  # noqa: E402

fl.sc.hermetic_env()

K = 10
ACC_MIN = 0.9
# The chaos case (i) plays one fixed scenario (FT_CHAOS_SEED picks
# another) and must inject at least this many faults.
CHAOS_SEED = 7
CHAOS_MIN_FAULTS = 5
BASE = {"steps": 120, "ckpt_every": K, "step_sleep": 0.03}
LOCAL_ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--max-retries", "0",
              "--grace-period", "2", "-v"]
NS_PREFIX, NS_NET, NS_PORT = fl.sc.run_names("ft")  # this run's own
NS_ARGS = ["--grace-period", "2", "--heartbeat-ms", "200", "--host-deadline-ms", "1000",
           "--restart-wait", "30", "--max-retries", "0", "-v"]
RESTART_RE = re.compile(r"^Attempt (\d+) failed: (.*)\. Restarting \((\d+) restarts? left\)$", re.S)
T0 = time.time()
RUN = "%x" % (int(time.time() * 1000) % 0xfffffff)
ONLY = set(x.strip() for x in os.environ.get("FT_ONLY", "").split(",") if x.strip())


def log(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


def wanted(case):
    return not ONLY or case in ONLY


# ---------------------------------------------------------------- one job

class FaultJob:
    def __init__(self, case, label, count, hps=None, retries=2, checkpoint=True, expect_status="Completed"):
        self.case, self.label, self.count = case, label, count
        self.name = "ft-%s-%s" % (case, RUN)
        self.hps = dict(BASE)
        self.hps.update(hps or {})
        self.retries = retries
        self.req = fl.job_request(self.name, count, self.hps, retries=retries, checkpoint=checkpoint)
        self.expect_status = expect_status
        self.desc = None
        self.seen = []
        self.error = None
        self.info = {}
        self.notes = []
        self.logs = {}
        self.res = {}
        self.left = []
        self.t_created = None

    def title(self, what):
        return "(%s) %s: %s" % (self.case, self.label, what)


def wait_step(cluster, job, algo, step, attempt=1, timeout=40):
    """Until algo logged step >= step in attempt (the program's own lines)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = fl.attempt_logs(cluster.logs_dir(job.name)).get(attempt, {}).get(algo, [])
        if fl.last_step(rows) >= step:
            return
        time.sleep(0.05)
    raise Fail("%s never logged step=%d in attempt %d within %d s" % (algo, step, attempt, timeout))


def run_job(cluster, sm, job, drive=None, timeout=90):
    """Creates, drives, waits, collects. Never raises: job.error."""
    try:
        sm.create_training_job(**job.req)
        job.t_created = time.time()
        if drive:
            drive(job)
        job.desc, _ = fl.wait_job(sm, job.name, fl.terminal, timeout, seen=job.seen)
    except Exception as e:
        job.error = "%s: %s\n%s" % (type(e).__name__, e, "".join(traceback.format_exc().splitlines(True)[-5:]))
        try:
            job.desc = sm.describe_training_job(TrainingJobName=job.name)
            if not fl.terminal(job.desc):
                sm.stop_training_job(TrainingJobName=job.name)
                job.desc, _ = fl.wait_job(sm, job.name, fl.terminal, 30, seen=job.seen)
        except Exception as e2:
            job.error += "\n(after the error: %s)" % e2
    collect(cluster, job)


def collect(cluster, job):
    job.left = fl.wait_no_procs(job.name, 5.0)
    job.logs = fl.attempt_logs(cluster.logs_dir(job.name))
    try:
        job.res = fl.results(cluster.s3_path(fl.model_uri(job.name)))
    except Fail as e:
        job.res = {}
        job.notes.append(str(e))
    job.store = fl.store_problems(cluster.s3_path(fl.ckpt_uri(job.name)))


def seen_text(job):
    return " -> ".join("%s@%.1f" % (s, t - (job.t_created or t)) for t, s in job.seen)


def restarts_of(job):
    """[(attempt, reason, left)] from the Restarting transitions."""
    out = []
    for st, msg in fl.transitions(job.desc or {}):
        if st == "Restarting":
            m = RESTART_RE.match(msg)
            out.append((int(m.group(1)), m.group(2), int(m.group(3))) if m else (None, msg, None))
    return out


def lost_steps(job):
    """[(attempt n, step algo-1 reached in n, step n+1 resumed from)]."""
    out = []
    for a in sorted(job.logs):
        if a + 1 in job.logs and "algo-1" in job.logs[a] and "algo-1" in job.logs[a + 1]:
            reached = fl.last_step(job.logs[a]["algo-1"])
            rf = fl.field(job.logs[a + 1]["algo-1"], "ft-resume", "resumed_from")
            out.append((a, reached, int(rf[0]) if rf else None))
    return out


def diag(cluster, job):
    return "%s\nseen: %s\ntransitions: %s\nnotes: %s\n%s" % (
        job.error or "", seen_text(job), short(fl.transitions(job.desc or {}), 1500), job.notes,
        cluster.log_tail(12, grep=job.name))


# -- the checks every fault job gets

def check_status(cluster, job):
    d = job.desc
    expect(job.error is None and d is not None, diag(cluster, job))
    expect(d["TrainingJobStatus"] == job.expect_status,
           "ended %s/%s, expected %s; FailureReason %r\n%s" % (d["TrainingJobStatus"], d.get("SecondaryStatus"),
                                                               job.expect_status, d.get("FailureReason"),
                                                               diag(cluster, job)))


def check_restart_visible(cluster, job, reason_re=None, first_attempt=1):
    tr = fl.transitions(job.desc or {})
    sts = [s for s, _ in tr]
    rs = restarts_of(job)
    expect(rs, "no Restarting transition: %s" % short(tr, 1500))
    a, reason, left = rs[0]
    expect(a == first_attempt, "Restarting message %r does not match 'Attempt %d failed: <reason>. "
                               "Restarting (K restarts left)'" % (reason if a is None else tr, first_attempt))
    if reason_re:
        expect(re.search(reason_re, reason), "restart reason %r does not match %r" % (reason, reason_re))
    expect(left == job.retries - 1, "first restart says %d restarts left, MaximumRetryAttempts %d" % (
        left, job.retries))
    i = sts.index("Restarting")
    msgs = [m for s, m in tr[i + 1:] if s == "Starting"]
    expect(msgs and msgs[0] == "Starting attempt %d of the training job" % (first_attempt + 1),
           "after Restarting: %s" % short(tr[i:], 800))


def check_accuracy(cluster, job):
    expect(job.res, "no ft-result in model.tar.gz (%s)" % job.notes)
    ref = fl.reference(job.hps)
    bad = []
    for host in sorted(job.res):
        r = job.res[host]
        if r["accuracy"] < ACC_MIN:
            bad.append("%s accuracy %.4f < %.2f" % (host, r["accuracy"], ACC_MIN))
        if r["params_sha256"] != ref["params_sha256"]:
            bad.append("%s: weights differ from a fault-free run (accuracy %.6f vs %.6f, resumed_from %s, "
                       "attempt %s)" % (host, r["accuracy"], ref["accuracy"], r["resumed_from"], r["attempt"]))
    expect(len(job.res) == job.count, "results from %s, expected %d hosts" % (sorted(job.res), job.count))
    expect(not bad, "; ".join(bad))
    return "accuracy %.4f" % job.res["algo-1"]["accuracy"]


def check_lost(cluster, job, limit=K):
    ls = lost_steps(job)
    expect(ls, "no attempt followed another in the logs (attempts %s)" % sorted(job.logs))
    worst = max((reached - (rf or 0)) for _, reached, rf in ls)
    expect(all(rf is not None for _, _, rf in ls), "an attempt without ft-resume line: %s" % ls)
    expect(worst <= limit, "lost %d steps > %d: (attempt, step reached, next resumed from) %s" % (worst, limit, ls))
    return ls


def check_no_procs(cluster, job):
    expect(not job.left, "still running after the job ended:\n%s" % "\n".join(
        "%d %s %s" % (p, h, c) for p, h, _, c in job.left))


def check_store(cluster, job):
    problems, names = job.store
    expect(not problems, "\n".join(problems))
    expect(names, "no checkpoint at all under %s" % fl.ckpt_uri(job.name))
    return names


def emit_common(tap, cluster, job, restart=True, reason_re=None, lost_limit=K):
    tap.case(job.title("ends %s" % job.expect_status), check_status, cluster, job)
    if restart:
        tap.case(job.title("Restarting -> Starting attempt 2 in SecondaryStatusTransitions"),
                 check_restart_visible, cluster, job, reason_re)
    if job.expect_status == "Completed":
        tap.case(job.title("accuracy >= %.1f, weights equal to a run without faults" % ACC_MIN),
                 check_accuracy, cluster, job)
    if restart and lost_limit is not None:
        ls = tap.case(job.title("steps lost <= one checkpoint interval (%d)" % K), check_lost, cluster, job,
                      lost_limit)
        if ls:
            log("%s: (attempt, step rank 0 reached, next attempt resumed from): %s" % (job.name, ls))
    tap.case(job.title("no process of the job left"), check_no_procs, cluster, job)
    tap.case(job.title("no torn checkpoint under its S3Uri"), check_store, cluster, job)
    log("%s: %s in %.1f s; %s%s" % (job.name, job.desc and job.desc["TrainingJobStatus"],
                                     (job.seen[-1][0] - job.t_created) if job.seen and job.t_created else -1,
                                     seen_text(job), ("; " + "; ".join(job.notes)) if job.notes else ""))


# ---------------------------------------------------------------- local cases

def case_a(tap, cl, sm):
    job = FaultJob("a", "kill -9 of one rank (algo-2 of 3 hosts)", 3)

    def drive(j):
        wait_step(cl, j, "algo-2", 35)
        victims = [p for p, h, a, _ in fl.procs_with(j.name) if h == "algo-2" and a == 1]
        expect(victims, "no process of algo-2 found by its marker")
        fl.kill_pids(victims)
        j.info["killed"] = victims
    run_job(cl, sm, job, drive)
    emit_common(tap, cl, job, reason_re=r"algo-2.*(signal 9|SIGKILL|killed)")


def case_b(tap, cl, sm):
    job = FaultJob("b", "a rank exits 1 (algo-2 of 2, step 45)", 2,
                   {"fail_at_step": 45, "fail_host": "algo-2"})
    run_job(cl, sm, job)
    emit_common(tap, cl, job, reason_re=r"FtTrainerError: failed on purpose \(fail_at_step\) at step 45 "
                                        r"in attempt 1 on algo-2")


def kill_agent(cl, j, algo, step, hold):
    """kill -9 of the agent running algo of j once it reached step; with
    hold, trainctld is frozen (SIGSTOP) meanwhile, so that it starts no new
    agent, until the rank of algo has ended (at most 0.5 s, well within the
    host deadline)."""
    wait_step(cl, j, algo, step)
    host = cl.host_of(j.name, algo)
    expect(host, "GET /v1/hosts names no host for %s" % algo)
    agents = cl.agent_pids()
    expect(host in agents, "no trainagent --host %s found in /proc: %s" % (host, agents))
    if hold:
        os.kill(cl.proc.pid, signal.SIGSTOP)
    try:
        os.kill(agents[host], signal.SIGKILL)
        t = time.time()
        while hold and time.time() - t < 0.5:
            if not [p for p in fl.procs_with(j.name) if p[1] == algo]:
                j.info["rank_ended_s"] = time.time() - t
                break
            time.sleep(0.005)
    finally:
        if hold:
            os.kill(cl.proc.pid, signal.SIGCONT)
            log("%s: trainctld held %s" % (j.name, "until the rank of %s ended, %.3f s" % (
                algo, j.info["rank_ended_s"]) if "rank_ended_s" in j.info else "0.5 s; the rank still ran"))
    return host, agents[host]


def kill_agent_case(tap, cl, sm, case, label, hps, algo="algo-2", step=30, hold=False):
    job = FaultJob(case, label, 2, hps)

    def drive(j):
        host, old = kill_agent(cl, j, algo, step, hold)
        t = time.time()
        j.info.update(host=host, old_agent=old)
        while time.time() - t < 15:
            new = cl.agent_pids().get(host)
            if new and new != old:
                j.info["new_agent"] = new
                j.info["agent_back_s"] = time.time() - t
                break
            time.sleep(0.02)
    run_job(cl, sm, job, drive)

    def agent_back():
        expect("new_agent" in job.info, "no new trainagent for %s within 15 s (%s)\n%s" % (
            job.info.get("host"), job.info, diag(cl, job)))
        return "pid %d -> %d in %.2f s" % (job.info["old_agent"], job.info["new_agent"], job.info["agent_back_s"])
    r = tap.case(job.title("the controller starts the killed agent again"), agent_back)
    if r:
        log("%s: agent of %s %s" % (job.name, job.info.get("host"), r))
    restarted = bool(restarts_of(job))
    emit_common(tap, cl, job, restart=False)
    if restarted:
        tap.case(job.title("the restart it needed lost <= one checkpoint interval"), check_lost, cl, job)
    how = ("a restart WAS needed: %s" % short(restarts_of(job), 400)) if restarted else \
        "no restart was needed: the new agent re-adopted the running ranks and attempt 1 ran to the end"
    log("%s: %s" % (job.name, how))
    job.info["restarted"] = restarted
    return job


def case_c(tap, cl, sm):
    j1 = kill_agent_case(tap, cl, sm, "c", "kill -9 of an agent (program writes output/success)", {})
    j2 = kill_agent_case(tap, cl, sm, "c2", "kill -9 of an agent (program without output/success)",
                         {"write_success": "false"})

    log("(c): with output/success: %s; without: %s" % (
        "restarted" if j1.info.get("restarted") else "no restart", "restarted" if j2.info.get("restarted") else
        "no restart"))
    # The rank's keeper recorded its real exit status, output/success or not.
    for j in (j1, j2):
        tap.case(j.title("attempt 1 ran to the end without a restart"), no_restart, cl, j)


def no_restart(cl, job):
    expect(not job.info.get("restarted"), "a restart was needed: %s\n%s" % (
        short(restarts_of(job), 400), diag(cl, job)))


def agent_notes(cl, job, pattern):
    """The agent's notes in the job's logs that match pattern."""
    rows = [r for by_algo in fl.attempt_logs(cl.logs_dir(job.name)).values() for rs in by_algo.values()
            for r in rs]
    return [r[3] for r in rows if r[3].startswith("trainagent: ") and re.search(pattern, r[3])]


def case_c3(tap, cl, sm):
    """A rank that ends while its agent is dead: its keeper records the exit
    status, and the agent started again reads it (0 -> the job goes on to
    Completed; 3 -> the attempt fails with exit code 3, not a guess)."""
    # algo-1's host: (c) killed algo-2's twice, and trainctld starts an
    # agent that keeps dying with a growing delay (200 ms, 400 ms, ...).
    # The kill comes at step 110 of 120; the last steps run at full speed
    # while trainctld is held, so that no agent runs when the rank ends.
    hps = {"write_success": "false", "finish_when_orphaned": "true"}
    j = kill_agent_case(tap, cl, sm, "c3", "a rank ends while its agent is dead (exit 0)", hps, "algo-1", 110,
                        hold=True)
    tap.case(j.title("attempt 1 ran to the end without a restart"), no_restart, cl, j)

    def noted():
        expect("rank_ended_s" in j.info, "the rank of algo-1 did not end within 0.5 s of the kill")
        notes = agent_notes(cl, j, r"rank 0 \(pid \d+\) ended while no agent ran: exit status 0")
        expect(notes, "no note of the rank's exit status in the job's log\n%s" % diag(cl, j))
        log("(c3): %s" % notes[0])
    tap.case(j.title("the new agent took exit status 0 from the keeper"), noted)

    hps = dict(hps, orphan_exit_code=3)
    j = FaultJob("c4", "a rank ends while its agent is dead (exit 3)", 2, hps, retries=None,
                 expect_status="Failed")

    run_job(cl, sm, j, lambda job: kill_agent(cl, job, "algo-1", 110, True))
    tap.case(j.title("ends Failed"), check_status, cl, j)

    def reason():
        fr = (j.desc or {}).get("FailureReason") or ""
        expect(re.search(r"AlgorithmError: algo-1 \(host \S+\) RANK 0 exited with code 3", fr),
               "FailureReason %r does not name exit code 3\n%s" % (fr, diag(cl, j)))
        return fr
    tap.case(j.title("FailureReason names the rank's own exit code 3"), reason)
    tap.case(j.title("no process of the job is left"), check_no_procs, cl, j)


def case_u(tap, cl, sm):
    # algo-1 writes 64 MiB more model than the others, so that its host's
    # upload is still packing when the job is Uploading.
    job = FaultJob("u", "an agent frozen while Uploading", 2, {"model_pad_mb": 64, "model_pad_host": "algo-1"})

    def drive(j):
        deadline = time.time() + 60
        while True:
            d = sm.describe_training_job(TrainingJobName=j.name)
            if d["SecondaryStatus"] == "Uploading":
                break
            expect(not fl.terminal(d) and time.time() < deadline, "never Uploading: %s" % d["SecondaryStatus"])
            time.sleep(0.02)
        host = cl.host_of(j.name, "algo-1")
        agents = cl.agent_pids()
        expect(host in agents, "no trainagent --host %s found in /proc: %s" % (host, agents))
        os.kill(agents[host], signal.SIGSTOP)
        j.info["frozen"] = host
        t = threading.Timer(2.5, os.kill, (agents[host], signal.SIGCONT))
        t.daemon = True
        t.start()
    run_job(cl, sm, job, drive)
    emit_common(tap, cl, job, reason_re=r"host \S+ \(algo-1\) stopped responding")

    def after_uploading():
        sts = [s for s, _ in fl.transitions(job.desc or {})]
        i = sts.index("Restarting") if "Restarting" in sts else -1
        expect(i > 0 and sts[i - 1] == "Uploading", "Restarting does not follow Uploading: %s" % sts)
    tap.case(job.title("Uploading -> Restarting, not Failed"), after_uploading)


def small_req(i):
    return fl.job_request("ft-d-small-%s-%02d" % (RUN, i), 1, {"steps": 3, "ckpt_every": 0}, checkpoint=False)


def case_d(tap, cl, sm):
    job = FaultJob("d", "kill -9 of trainctld mid-training, restarted at once", 2, {"steps": 160})
    acked, errors = {}, {}
    lock = threading.Lock()
    enough = threading.Event()

    def create(i):
        try:
            sm.create_training_job(**small_req(i))
            with lock:
                acked[i] = time.time()
                if len(acked) >= 10:
                    enough.set()
        except Exception as e:
            with lock:
                errors[i] = "%s: %s" % (type(e).__name__, e)

    def drive(j):
        wait_step(cl, j, "algo-1", 25)
        ths = [threading.Thread(target=create, args=(i,), daemon=True) for i in range(20)]
        for t in ths:
            t.start()
        enough.wait(15)
        cl.kill9()
        j.info["killed_at"] = time.time()
        with lock:
            j.info["acked_at_kill"] = len(acked)
        for t in ths:
            t.join(20)
        err = cl.start(wait_hosts=False)
        expect(err is None, "trainctld did not start again: %s" % err)
        j.info["down_s"] = time.time() - j.info["killed_at"]
    run_job(cl, sm, job, drive)
    log("%s: trainctld down %.2f s; %d of 20 creates acknowledged at the kill, %d in all, %d failed: %s" % (
        job.name, job.info.get("down_s", -1), job.info.get("acked_at_kill", -1), len(acked), len(errors),
        short(errors, 600)))
    restarted = bool(restarts_of(job))
    emit_common(tap, cl, job, restart=False)
    if restarted:
        tap.case(job.title("the restart it needed lost <= one checkpoint interval"), check_lost, cl, job)
    log("%s: %s" % (job.name, ("a restart WAS needed: %s" % short(restarts_of(job), 400)) if restarted else
                    "no restart needed: the restarted controller re-adopted the agents and the running attempt"))

    def all_acked_exist():
        expect(acked, "no CreateTrainingJob was acknowledged")
        missing, states = [], {}
        deadline = time.time() + 60
        for i in sorted(acked):
            name = small_req(i)["TrainingJobName"]
            try:
                d, _ = fl.wait_job(sm, name, fl.terminal, max(1, deadline - time.time()), interval=0.2)
                states[name] = d["TrainingJobStatus"]
            except Exception as e:
                missing.append("%s: %s" % (name, e))
        expect(not missing, "acknowledged but lost or stuck:\n" + "\n".join(missing))
        bad = {n: s for n, s in states.items() if s != "Completed"}
        expect(not bad, "acknowledged jobs that did not complete: %s" % bad)
        unacked = []
        for i in sorted(errors):
            name = small_req(i)["TrainingJobName"]
            try:
                sm.describe_training_job(TrainingJobName=name)
            except Exception:
                unacked.append("%d does not exist" % i)
                continue
            try:
                d, _ = fl.wait_job(sm, name, fl.terminal, max(1, deadline - time.time()), interval=0.2)
                unacked.append("%d exists (%s)" % (i, d["TrainingJobStatus"]))
            except Exception as e:
                unacked.append("%d exists, stuck: %s" % (i, e))
        return "%d acknowledged jobs all Completed%s" % (len(states), ("; unacknowledged: " + ", ".join(unacked))
                                                         if unacked else "")
    r = tap.case(job.title("every acknowledged CreateTrainingJob (%d of 20) exists after the restart and "
                           "Completes" % len(acked)), all_acked_exist)
    if r:
        log(r)
    left = []
    for i in range(20):
        left += fl.procs_with(small_req(i)["TrainingJobName"])
    tap.ok(not left, job.title("no process of the 20 small jobs left"), short(left))


def case_d2(tap, cl, sm):
    job = FaultJob("d2", "trainctld killed and away 2.5 s (> host deadline)", 2, {"steps": 160})

    def drive(j):
        wait_step(cl, j, "algo-1", 35)
        cl.kill9()
        t = time.time()
        time.sleep(2.5)
        err = cl.start(wait_hosts=False)
        expect(err is None, "trainctld did not start again: %s" % err)
        j.info["down_s"] = time.time() - t
    run_job(cl, sm, job, drive)
    emit_common(tap, cl, job, restart=False)

    def not_fenced():
        rows = [r for a in job.logs.get(1, {}).values() for r in a if "self-fencing" in r[3]]
        expect(not rows, "agents fenced themselves although the controller's machine answered: %s"
               % rows[:2])
        attempts = sorted(job.logs)
        # As in (d): the attempt normally goes on; on a loaded machine an
        # agent may re-register later than the 1 s deadline after the
        # restart and cost one restart, which the checks above bound.
        return "attempts %s while trainctld was away %.2f s%s" % (
            attempts, job.info.get("down_s", -1),
            "" if attempts == [1] else " (a restart WAS needed: a host missed the deadline after the restart)")
    r = tap.case(job.title("no self-fencing while trainctld was away"), not_fenced)
    if r:
        log(r)


def case_e(tap, cl, sm):
    job = FaultJob("e", "crash while writing the checkpoint of step 50", 2,
                   {"crash_in_checkpoint_at_step": 50, "fail_host": "algo-1"})
    run_job(cl, sm, job)
    emit_common(tap, cl, job, reason_re=r"algo-1.*exited with code 3")

    def resumed_previous():
        rows = job.logs.get(2, {}).get("algo-1", [])
        rf = fl.field(rows, "ft-resume", "resumed_from")
        ck = [r[3] for r in rows if r[3].startswith("ft-resume")]
        expect(rf and int(rf[0]) == 40, "attempt 2 resumed from %s, expected 40 (the complete one before the "
                                        "torn step 50): %s" % (rf, ck))
        expect(ck and "50" not in re.search(r"checkpoints=\[([^\]]*)\]", ck[0]).group(1).split(", "),
               "attempt 2 saw a checkpoint of step 50: %s" % ck)
        return ck[0]
    r = tap.case(job.title("attempt 2 resumed from step 40, the torn step 50 was never restored"),
                 resumed_previous)
    if r:
        log(r)


def case_f(tap, cl, sm):
    job = FaultJob("f", "failing on every attempt, MaximumRetryAttempts 2", 1,
                   {"fail_at_step": 15, "fail_attempt": 0}, retries=2, expect_status="Failed")
    run_job(cl, sm, job)
    tap.case(job.title("ends Failed"), check_status, cl, job)

    def last_reason():
        fr = job.desc.get("FailureReason") or ""
        expect(re.search(r"failed on purpose \(fail_at_step\) at step 15 in attempt 3 on algo-1", fr),
               "FailureReason %r is not the third attempt's" % fr)
        return fr

    def three_attempts():
        rs = restarts_of(job)
        expect([(a, left) for a, _, left in rs] == [(1, 1), (2, 0)],
               "Restarting transitions %s, expected attempts 1 and 2 with 1 and 0 restarts left" % rs)
        for a, reason, _ in rs:
            expect("in attempt %d on" % a in reason, "restart of attempt %d names %r" % (a, reason))
        starts = [m for s, m in fl.transitions(job.desc) if s == "Starting"]
        expect(starts[1:] == ["Starting attempt 2 of the training job", "Starting attempt 3 of the training job"],
               "Starting transitions %s" % starts)
        expect(sorted(job.logs) == [1, 2, 3], "log files of attempts %s" % sorted(job.logs))
        rf = [fl.field(job.logs[a].get("algo-1", []), "ft-resume", "resumed_from") for a in (2, 3)]
        expect(rf == [["10"], ["10"]], "attempts 2, 3 resumed from %s, expected 10" % rf)
    r = tap.case(job.title("FailureReason is the last (third) attempt's"), last_reason)
    if r:
        log("FailureReason: %s" % r)
    tap.case(job.title("3 attempts: 2 Restarting, Starting attempt 2 and 3, each resumed from step 10"),
             three_attempts)

    def streams_per_attempt():
        files = fl.log_files(cl.logs_dir(job.name))
        expect(sorted(files) == ["algo-1"] and len(set(files["algo-1"])) == 3,
               "log streams %s: expected 3 of algo-1, one per attempt (an attempt that starts within the "
               "same second as the one before takes the next second)" % files)
    tap.case(job.title("3 attempts: 3 log streams of algo-1, one per attempt"), streams_per_attempt)
    tap.case(job.title("no process of the job left"), check_no_procs, cl, job)
    tap.case(job.title("no torn checkpoint under its S3Uri"), check_store, cl, job)


def case_k(tap, cl, sm):
    job = FaultJob("k", "a ClientError (empty channel) is not retried", 1, retries=3, expect_status="Failed")
    job.req["InputDataConfig"] = [{"ChannelName": "train", "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": "s3://%s/nothing-%s/" % (fl.BUCKET, RUN),
        "S3DataDistributionType": "FullyReplicated"}}}]
    run_job(cl, sm, job)

    def not_retried():
        check_status(cl, job)
        fr = job.desc.get("FailureReason") or ""
        expect(fr.startswith("ClientError"), "FailureReason %r" % fr)
        expect(not restarts_of(job), "restarted: %s" % restarts_of(job))
    tap.case(job.title("Failed with ClientError, no Restarting"), not_retried)


# ---------------------------------------------------------------- chaos

def case_i(tap, cl, sm):
    seed = int(os.environ.get("FT_CHAOS_SEED") or CHAOS_SEED)
    rng = random.Random(seed)
    log("chaos seed %d (FT_CHAOS_SEED=%d reproduces the choices)" % (seed, seed))
    t_start = time.time()
    window, budget = 40.0, 88.0
    hps = {"steps": 400, "step_sleep": 0.05}
    jobs = [FaultJob("i%d" % n, "chaos job %d (%d host%s)" % (n, c, "s" if c > 1 else ""), c, hps, retries=30)
            for n, c in ((1, 1), (2, 2), (3, 1), (4, 1))]
    for j in jobs:
        sm.create_training_job(**j.req)
        j.t_created = time.time()
    faults = []
    while time.time() - t_start < window:
        time.sleep(rng.uniform(0.8, 2.5))
        kind = rng.choice(["rank-kill9", "rank-exit1", "agent-kill9"])
        try:
            if kind == "agent-kill9":
                busy = sorted(h["name"] for h in cl.hosts() if h.get("job"))
                if not busy:
                    faults.append((time.time() - t_start, "?", "not injected: %s found no busy host" % kind))
                    continue
                host = rng.choice(busy)
                pid = cl.agent_pids().get(host)
                if not pid:
                    faults.append((time.time() - t_start, "?", "not injected: no agent on %s" % host))
                    continue
                os.kill(pid, signal.SIGKILL)
                faults.append((time.time() - t_start, kind, host))
            else:
                cands = sorted((p, j.name, h, a) for j in jobs for p, h, a, _ in fl.procs_with(j.name))
                if not cands:
                    if all(fl.terminal(sm.describe_training_job(TrainingJobName=j.name)) for j in jobs):
                        break
                    faults.append((time.time() - t_start, "?", "not injected: %s found no rank" % kind))
                    continue
                pid, name, host, a = rng.choice(cands)
                os.kill(pid, signal.SIGKILL if kind == "rank-kill9" else signal.SIGUSR1)
                faults.append((time.time() - t_start, kind, "%s %s attempt %s" % (name[:6], host, a)))
        except (OSError, Fail) as e:
            faults.append((time.time() - t_start, "?", "not injected: %s: %s" % (kind, e)))
    log("chaos: %d faults in %.0f s: %s" % (len(faults), time.time() - t_start, "; ".join(
        "%.1f %s %s" % f for f in faults)))
    for j in jobs:
        try:
            j.desc, _ = fl.wait_job(sm, j.name, fl.terminal, max(1.0, budget - (time.time() - t_start)),
                                    interval=0.2, seen=j.seen)
        except Exception as e:
            j.error = str(e)
            try:
                j.desc = sm.describe_training_job(TrainingJobName=j.name)
                sm.stop_training_job(TrainingJobName=j.name)
            except Exception:
                pass
    for j in jobs:
        collect(cl, j)
    log("chaos: all jobs ended after %.1f s" % (time.time() - t_start))

    def all_done():
        bad = []
        for j in jobs:
            st = j.desc and j.desc["TrainingJobStatus"]
            n_r = len(restarts_of(j))
            if j.error or st not in ("Completed", "Failed"):
                bad.append("%s: %s %s" % (j.name, st, j.error or ""))
            elif st == "Failed" and n_r < j.retries:
                bad.append("%s Failed after %d restarts of %d: %r" % (j.name, n_r, j.retries,
                                                                    j.desc.get("FailureReason")))
        expect(not bad, "\n".join(bad) + "\n" + cl.log_tail(10))
        return ", ".join("%s %s after %d restarts" % (j.name, j.desc["TrainingJobStatus"], len(restarts_of(j)))
                         for j in jobs)
    injected = [f for f in faults if f[1] != "?"]
    replay = "replay: FT_CHAOS_SEED=%d FT_ONLY=i /usr/bin/python3 tests/integration/test_faults.py" % seed

    def enough():
        n_r = sum(len(restarts_of(j)) for j in jobs)
        expect(len(injected) >= CHAOS_MIN_FAULTS and n_r >= 1,
               "%d faults injected (at least %d wanted), %d restarts (at least 1)\n%s\n%s" % (
                   len(injected), CHAOS_MIN_FAULTS, n_r, replay,
                   "; ".join("%.1f %s %s" % f for f in faults)))
        return "%d faults, %d restarts" % (len(injected), n_r)
    tap.case("(i) chaos (seed %d): at least %d faults injected and a restart seen" % (
        seed, CHAOS_MIN_FAULTS), enough)
    r = tap.case("(i) chaos (seed %d, %d faults): every job Completed (or Failed out of retries)" % (
        seed, len(injected)), all_done)
    if r:
        log(r)

    def weights():
        bad = []
        for j in jobs:
            if j.desc and j.desc["TrainingJobStatus"] == "Completed":
                try:
                    check_accuracy(cl, j)
                except Fail as e:
                    bad.append("%s: %s" % (j.name, e))
        expect(not bad, "\n".join(bad))
    tap.case("(i) chaos: accuracy >= %.1f and weights equal to a fault-free run, every completed job" % ACC_MIN,
             weights)
    tap.ok(not any(j.left for j in jobs), "(i) chaos: no process of any job left",
           "\n".join("%s: %s" % (j.name, j.left) for j in jobs if j.left))
    probs = ["%s: %s" % (j.name, p) for j in jobs for p in j.store[0]]
    tap.ok(not probs, "(i) chaos: no torn checkpoint under any job's S3Uri", "\n".join(probs))
    for j in jobs:
        ls = lost_steps(j)
        if ls:
            log("%s: %d restarts; (attempt, step reached, resumed from) %s; reasons: %s" % (
                j.name, len(restarts_of(j)), ls, "; ".join("%s: %s" % (a, r[:90]) for a, r, _ in restarts_of(j))))

    def healthy():
        cl.wait_hosts(lambda hs: sum(h.get("state") == "ready" for h in hs) == cl.n_hosts, 15, "3 hosts ready")
        agents = cl.agent_pids()
        expect(len(agents) == cl.n_hosts, "agents: %s" % agents)
    tap.case("(i) chaos: afterwards all 3 hosts ready, one agent each", healthy)


# ---------------------------------------------------------------- namespace cluster

def ns_wait_step(ns, job, algo, step, attempt=1, timeout=40):
    wait_step(ns, job, algo, step, attempt, timeout)


def ns_partition_case(tap, ns, sm, case, label, count, spare):
    job = FaultJob(case, label, count, {"steps": 150, "step_sleep": 0.04}, retries=2)
    job.req["ResourceConfig"]["InstanceType"] = ns.itype

    def drive(j):
        ns_wait_step(ns, j, "algo-2", 30)
        victim = ns.host_of(j.name, "algo-2")
        expect(victim, "GET /v1/hosts names no host for algo-2")
        j.info["victim"] = victim
        j.info["hosts1"] = {h["name"]: h.get("algo") for h in ns.hosts() if h.get("job") == j.name}
        old = [p for p, h, a, _ in fl.procs_with(j.name) if h == "algo-2" and a == 1]
        expect(old, "no rank of algo-2 found in /proc")
        j.info["old"] = old
        t0 = time.time()
        ns.link(victim, up=False)
        j.info["down_at"] = t0
        try:
            d, _ = fl.wait_job(sm, j.name, lambda d: d.get("SecondaryStatus") != "Training" or fl.terminal(d),
                               15, interval=0.02, seen=j.seen)
            j.info["noticed_s"] = time.time() - t0
            # While it is still partitioned: its ranks stopped themselves.
            gone_at = None
            while time.time() - t0 < 6:
                rows = ns.exec_ps(victim)
                if not any(p in [x for x, _ in rows] for p in old):
                    gone_at = time.time() - t0
                    break
                time.sleep(0.1)
            j.info["fenced_s"] = gone_at
            rows = ns.exec_ps(victim)
            j.info["ps_after"] = [r for r in rows if r[0] in old]
            # Every process of the job still in the host's namespace (ps
            # there sees the whole machine: one PID namespace).
            j.info["in_ns"] = ns.netns_pids(victim, [p for p, _, _, _ in fl.procs_with(j.name)])
            if spare:
                d, _ = fl.wait_job(sm, j.name, lambda d: any(m == "Starting attempt 2 of the training job"
                                                              for _, m in fl.transitions(d)) or fl.terminal(d),
                                   20, interval=0.05, seen=j.seen)
                t = time.time()
                while time.time() - t < 10:
                    hs = {h["name"]: h.get("algo") for h in ns.hosts() if h.get("job") == j.name}
                    if len(hs) == count:
                        j.info["hosts2"] = hs
                        break
                    time.sleep(0.05)
                j.info["lost_state"] = {h["name"]: h["state"] for h in ns.hosts()}.get(victim)
            else:
                held = time.time()
                while time.time() - held < 4:
                    d = sm.describe_training_job(TrainingJobName=j.name)
                    if d.get("SecondaryStatus") != "Restarting":
                        break
                    time.sleep(0.1)
                j.info["restarting_held_s"] = time.time() - held
                j.info["restarting_status"] = "%s/%s" % (d["TrainingJobStatus"], d.get("SecondaryStatus"))
                j.info["lost_state"] = {h["name"]: h["state"] for h in ns.hosts()}.get(victim)
        finally:
            if not spare:
                ns.link(victim, up=True)
                j.info["up_at"] = time.time()
    run_job(ns, sm, job, drive, timeout=90)
    if spare:
        try:
            ns.link(job.info.get("victim", "node2"), up=True)
        except Fail as e:
            job.notes.append(str(e))
    emit_common(tap, ns, job, reason_re=r"%s.*stopped responding" % re.escape(job.info.get("victim", "?")))
    if len(restarts_of(job)) > 1:
        log("%s: %d restarts: %s" % (job.name, len(restarts_of(job)), restarts_of(job)))

    def fenced():
        expect(job.info.get("fenced_s") is not None,
               "the old ranks %s still run on partitioned %s 6 s after link-down:\n%s" % (
                   job.info.get("old"), job.info.get("victim"), short(job.info.get("ps_after"))))
        expect(not job.info.get("ps_after"), "old ranks in `cluster.sh exec %s -- ps` while partitioned: %s" % (
            job.info.get("victim"), job.info.get("ps_after")))
        expect(not job.info.get("in_ns"), "processes of the job in %s's network namespace while partitioned: %s"
               % (job.info.get("victim"), job.info.get("in_ns")))
        return "%.2f s after link-down" % job.info["fenced_s"]
    r = tap.case(job.title("the partitioned host's ranks are gone while it is partitioned (cluster.sh exec ps)"),
                 fenced)
    if r:
        log("%s: old ranks %s on %s gone %s; controller noticed after %.2f s" % (
            job.name, job.info.get("old"), job.info.get("victim"), r, job.info.get("noticed_s", -1)))
    if spare:
        def moved():
            h2 = job.info.get("hosts2") or {}
            v = job.info.get("victim")
            expect(h2 and v not in h2, "attempt 2 hosts %s include the partitioned %s" % (h2, v))
            spare_host = [h for h in h2 if h not in (job.info.get("hosts1") or {})]
            expect(spare_host and h2[spare_host[0]] == "algo-2", "attempt 1 on %s, attempt 2 on %s" % (
                job.info.get("hosts1"), h2))
            expect(job.info.get("lost_state") not in ("ready", "busy"),
                   "GET /v1/hosts said %s was %r while partitioned" % (v, job.info.get("lost_state")))
            return "attempt 1 %s, attempt 2 %s; %s was %r" % (job.info.get("hosts1"), h2, v,
                                                             job.info.get("lost_state"))
        r = tap.case(job.title("algo-2 moved to the spare host"), moved)
        if r:
            log(r)
    else:
        def waited():
            expect(job.info.get("restarting_held_s", 0) >= 3.9,
                   "left Restarting after %.1f s without a host to run on (%s)" % (
                       job.info.get("restarting_held_s", -1), job.info.get("restarting_status")))
            starts = [m for s, m in fl.transitions(job.desc or {}) if s == "Starting"]
            expect("Starting attempt 2 of the training job" in starts, "no attempt 2: %s" % starts)
            return "in Restarting %.1f s while partitioned" % job.info["restarting_held_s"]
        r = tap.case(job.title("waits in Restarting while partitioned, attempt 2 after link-up"), waited)
        if r:
            log(r)
    ready = lambda hs: sum(h.get("state") == "ready" for h in hs) == ns.n_hosts
    ns.wait_hosts(ready, 30, "all hosts ready")


def agent_of(ns, node):
    """(pid, start time in clock ticks) of node's agent, from its
    agent.pid, or None when that process does not run."""
    try:
        with open(os.path.join(ns.state, "hosts", node, "work", "agent.pid")) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/stat" % pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    if st[0] == "Z" or not any(a.endswith(b"trainagent") for a in argv[:1]):
        return None
    return pid, int(st[19])


def file_from(path, offset):
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


# Seconds from "host lost" to link-up; None: the agent is frozen
# (SIGSTOP) instead, and continued (SIGCONT) once the provisioning ran.
HEAL_AFTER = (0.2, 0.5, 0.8, None)


def ns_heal_race_case(tap, ns):
    """(r): heal the link just after trainctld declared the host lost and
    decided to provision it; the agent that comes back must keep running."""
    ctl_log = os.path.join(ns.state, "controller", "trainctld.log")
    ready = lambda hs: sum(h.get("state") == "ready" for h in hs) == ns.n_hosts
    rounds = []
    for i, delay in enumerate(HEAL_AFTER):
        node = "node%d" % (i % ns.n_hosts + 1)
        rd = {"node": node, "delay": delay}
        rounds.append(rd)
        ns.wait_hosts(ready, 30, "all hosts ready before round %d" % (i + 1))
        agent_log = os.path.join(ns.state, "hosts", node, "work", "agent.log")
        rd["before"] = agent_of(ns, node)
        c_off, a_off = file_size(ctl_log), file_size(agent_log)
        lost_re = re.compile(r"host '%s' lost: no heartbeat" % node)
        done_re = re.compile(r"host '%s': (agent started over SSH|provisioning failed|its agent is back|its agent runs)"
                             % node)
        decided_re = re.compile(r"host '%s': provisioning: " % node)
        if delay is None:
            expect(rd["before"], "no agent on %s" % node)
            os.kill(rd["before"][0], signal.SIGSTOP)
        else:
            ns.link(node, up=False)
        try:
            t = time.time()
            while time.time() - t < 15 and not lost_re.search(file_from(ctl_log, c_off)):
                time.sleep(0.02)
            rd["lost_s"] = time.time() - t
            if delay is None:
                # The start script ran while the agent was not heard
                # from: only the script's own check can keep it.
                while time.time() - t < 20 and not done_re.search(file_from(ctl_log, c_off)):
                    time.sleep(0.05)
            else:
                time.sleep(delay)
        finally:
            if delay is None:
                os.kill(rd["before"][0], signal.SIGCONT)
            else:
                ns.link(node, up=True)
        healed = time.time()
        # Every provisioning of the host decided since link-down has
        # ended (trainctld logs the decision and the outcome), the host
        # is ready again.
        while time.time() - healed < 20:
            text = file_from(ctl_log, c_off)
            n_dec, n_done = len(decided_re.findall(text)), len(done_re.findall(text))
            try:
                is_ready = ready(ns.hosts())
            except Fail:
                is_ready = False
            if is_ready and n_dec and n_done >= n_dec:
                break
            if is_ready and not n_dec and time.time() - healed > 8:
                break  # a trainctld that does not log its decisions
            time.sleep(0.1)
        # A kill would have come with the start script: give an agent
        # restarted by it time to write its PID.
        time.sleep(0.5)
        text = file_from(ctl_log, c_off)
        rd["outcomes"] = [m.group(1) for m in done_re.finditer(text)]
        rd["after"] = agent_of(ns, node)
        rd["stopped"] = [x for x in file_from(agent_log, a_off).splitlines()
                         if "signal 15" in x or " exiting" in x or "trainagent 0" in x]
        exe = os.path.join(ns.state, "trainagent")
        rd["agents"] = [p for p, argv in fl.proc_argvs()
                        if argv[:1] == [exe] and "watchdog" not in argv and "--host" in argv
                        and argv[argv.index("--host") + 1:argv.index("--host") + 2] == [node]]
        log("(r) round %d: %s lost after %.2f s, %s; provisionings: %s; agent %s -> %s" % (
            i + 1, node, rd["lost_s"], "agent continued after them" if delay is None else
            "healed %.1f s later" % delay, rd["outcomes"], rd["before"], rd["after"]))

    def kept():
        bad = []
        for i, rd in enumerate(rounds):
            if not rd["before"]:
                bad.append("round %d: no agent on %s before link-down" % (i + 1, rd["node"]))
            elif rd["after"] != rd["before"]:
                bad.append("round %d: %s's agent (pid, start) %s replaced by %s after the link healed "
                           "(provisionings: %s)" % (i + 1, rd["node"], rd["before"], rd["after"], rd["outcomes"]))
            if rd["stopped"]:
                bad.append("round %d: %s's agent log: %s" % (i + 1, rd["node"], rd["stopped"]))
            if len(rd["agents"]) > 1:
                bad.append("round %d: %d agents on %s: %s" % (i + 1, len(rd["agents"]), rd["node"], rd["agents"]))
        expect(not bad, "\n".join(bad) + "\n" + ns.log_tail(10, grep="prov"))
        return "%d rounds, each agent kept" % len(rounds)
    r = tap.case("(r) the link heals while trainctld reprovisions the lost host: the agent that came back "
                 "keeps running (same PID, not stopped, one agent)", kept)
    if r:
        log(r)

    def raced():
        ran = [rd for rd in rounds if rd["delay"] is not None
               and any(o != "provisioning failed" for o in rd["outcomes"])]
        expect(ran, "in no round did a provisioning decided while the host was lost get through after the "
               "link healed: %s" % [(rd["node"], rd["outcomes"]) for rd in rounds])
        return "%d of %d link-down rounds" % (len(ran), sum(rd["delay"] is not None for rd in rounds))
    r = tap.case("(r) a provisioning decided while the host was lost got through after the heal", raced)
    if r:
        log(r)

    def frozen():
        rd = rounds[-1]
        expect(rd["delay"] is None and rd["outcomes"][:1] == ["its agent runs"],
               "provisionings of %s while its agent was stopped: %s" % (rd["node"], rd["outcomes"]))
        return "%s: %s" % (rd["node"], rd["outcomes"])
    r = tap.case("(r) an agent not heard from but running (SIGSTOP): the start script leaves it running", frozen)
    if r:
        log(r)


def ns_cases(tap):
    reason = fl.ns_skip_reason()
    names = ["(g) link-down of a host of a 2-host job with a spare", "(h) link-down without a spare",
             "(r) the link heals while trainctld reprovisions the lost host"]
    if not (wanted("g") or wanted("h") or wanted("r")):
        return
    if reason:
        for n in names:
            tap.skip(n, reason)
        return
    ns = fl.NsCluster(NS_PREFIX, NS_NET, NS_PORT, extra=NS_ARGS)
    t = time.time()
    try:
        err = ns.up()
        if not tap.ok(err is None, "cluster.sh up --hosts 3 --prefix %s (%.1f s)" % (NS_PREFIX, time.time() - t),
                      err):
            return
        sm = ns.client()
        if wanted("g"):
            ns_partition_case(tap, ns, sm, "g", "link-down of algo-2's host, 2-host job, spare host", 2, True)
        if wanted("h"):
            ns_partition_case(tap, ns, sm, "h", "link-down of algo-2's host, 3-host job, no spare", 3, False)
        if wanted("r"):
            ns_heal_race_case(tap, ns)
    except Exception as e:
        tap.ok(False, "the namespace-cluster cases ran to their end", "%s: %s\n%s\n%s" % (
            type(e).__name__, e, traceback.format_exc(), ns.log_tail(15)))
    finally:
        rc, out, err = ns.down()
        left = [p for p, argv in fl.proc_argvs() if any(ns.state in a for a in argv)]
        tap.ok(rc == 0 and not left, "cluster.sh down --prefix %s: nothing left" % NS_PREFIX,
               "exit %d %s%s; left %s" % (rc, out, err, left))


# ---------------------------------------------------------------- main

def main():
    tap = fl.sc.Tap()
    try:
        fl.reference(BASE)
    except Exception as e:
        tap.ok(False, "ft_trainer.py runs here (reference run)", str(e))
        return tap.finish()
    local = [c for c in ("a", "b", "c", "c3", "d", "d2", "e", "f", "k", "u", "i") if wanted(c)]
    if local:
        cl = fl.LocalCluster(3, LOCAL_ARGS)
        err = cl.start()
        if tap.ok(err is None, "trainctld --local-hosts 3 %s starts, 3 hosts ready" % " ".join(LOCAL_ARGS), err):
            sm = cl.client()
            for c in local:
                t = time.time()
                try:
                    globals()["case_" + c](tap, cl, sm)
                except Exception as e:
                    tap.ok(False, "(%s) ran to its end" % c, "%s: %s\n%s" % (type(e).__name__, e,
                                                                           traceback.format_exc()))
                log("(%s) took %.1f s (at %.0f s)" % (c, time.time() - t, time.time() - T0))
                if cl.proc is None or cl.proc.poll() is not None:
                    err = cl.start()
                    if not tap.ok(err is None, "trainctld starts again after (%s)" % c, err):
                        break
        rc, killed = cl.stop()
        time.sleep(0.5)
        left = cl.own_pids()
        tap.ok(rc == 0 and not killed and not left, "trainctld exits 0 on SIGTERM, no agent left",
               "exit %r, SIGKILL needed %s, left %s" % (rc, killed, left))
        fl.kill_pids(left)
        if tap.failed:
            log(cl.log_tail(15))
        cl.cleanup()
    ns_cases(tap)
    log("took %.1f s" % (time.time() - T0))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
