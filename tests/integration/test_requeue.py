#!/usr/bin/python3
"""Requeue: a running training job preempted and put back in the queue.

trainctld --local-hosts 2 with an admin key and a user key; jobs run
ft_trainer.py (a checkpointing MLP, tests/integration/ft_trainer.py).

  (q1) an admin's POST /v1/training-jobs/NAME/requeue while it trains:
       SecondaryStatusTransitions show Interrupted (the ranks stop: SIGTERM,
       the grace period, a last checkpoint) then Starting (back in the
       queue) then Training again as attempt 2, which resumes from the last
       checkpoint with at most one checkpoint interval redone; the job
       Completes with the weights of a run without faults; no process of
       the preempted attempt is left
  (q2) the same through `trainctl requeue-training-job`; the preempted
       attempt spends no retry: with MaximumRetryAttempts 1, a rank failure
       in the attempt after the requeue still restarts the job, which
       Completes
  (q4) trainctld killed (kill -9) right after a requeue and started again:
       the preemption goes on from the store, the job Completes, and its
       attempts never ran at the same time (FT_TRACE of every step)
  (q5) a program that takes checkpoint-now requests (ckpt_now, with
       periodic checkpoints 20 steps apart) saves one when requeued, before
       its SIGTERM: attempt 2 resumes at most 2 steps before where attempt
       1 stopped
  (q3) a user key is refused (AccessDeniedException), even for its own
       job; a job that does not run (completed) is refused with a
       ValidationException naming its status; neither changes the job

TAP on stdout. Run from the top of the tree with Debian's interpreter.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
sc.hermetic_env()
expect = sc.expect

USER = ("AKIDREQUEUEUSER00001", "user/requeue/0123456789")
CKPT_EVERY = 10


def credentials(path):
    with open(path, "w") as f:
        f.write("[admin]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % (sc.KEY, sc.SECRET))
        f.write("[user]\naws_access_key_id = %s\naws_secret_access_key = %s\ntrainctl_user = daemon\n"
                "trainctl_s3_prefixes = %s/\n" % (USER + (fl.BUCKET,)))


def requeue(cl, name, key=None):
    key = key or (sc.KEY, sc.SECRET)
    path = "/v1/training-jobs/%s/requeue" % name
    h = sc.sigv4_sign("POST", "127.0.0.1:%d" % cl.port, path, "", b"", key[0], key[1], {})
    return sc.http_request(cl.port, "POST", path, b"", h)


def wait_step(cl, name, step, timeout=120):
    """Waits until algo-1 of the job's current attempt logged step >= step."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        logs = fl.attempt_logs(cl.logs_dir(name))
        rows = logs.get(max(logs), {}).get("algo-1", []) if logs else []
        if fl.last_step(rows) >= step:
            return
        time.sleep(0.1)
    raise sc.Fail("%s: step %d not reached in %d s\n%s" % (name, step, timeout, cl.log_tail(15, grep=name)))


def states(d):
    return [s for s, _ in fl.transitions(d)]


def trainctl(cl, *args, key=None):
    key = key or (sc.KEY, sc.SECRET)
    env = dict(os.environ, AWS_ACCESS_KEY_ID=key[0], AWS_SECRET_ACCESS_KEY=key[1])
    return subprocess.run([fl.TRAINCTL, "--endpoint", cl.endpoint] + list(args), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)


def run_requeued(cl, sm, name, hps, retries=None, cli=False):
    """Creates the job, requeues it at step 25 (through the REST face or
    `trainctl requeue-training-job`), waits for its end."""
    sm.create_training_job(**fl.job_request(name, 1, hps, retries=retries))
    wait_step(cl, name, 25)
    if cli:
        p = trainctl(cl, "requeue-training-job", name)
        expect(p.returncode == 0 and b"requeued" in p.stdout, "trainctl requeue-training-job %s: exit %d %r"
               % (name, p.returncode, p.stdout))
    else:
        r = requeue(cl, name)
        expect(r.status == 200, "requeue of %s: %r" % (name, r))
    d, seen = fl.wait_job(sm, name, fl.terminal, 240)
    return d, fl.attempt_logs(cl.logs_dir(name))


def case_requeue(tap, cl, sm):
    name = "rq-main-%d" % os.getpid()
    hps = {"steps": 60, "ckpt_every": CKPT_EVERY, "step_sleep": 0.1}
    d, logs = run_requeued(cl, sm, name, hps)

    def status():
        expect(d["TrainingJobStatus"] == "Completed", "%s: %s %r" % (name, d["TrainingJobStatus"],
                                                                    d.get("FailureReason")))
    tap.case("(q1) the requeued job Completes", status)

    def visible():
        st = states(d)
        expect("Interrupted" in st, "no Interrupted in %s" % fl.transitions(d))
        i = st.index("Interrupted")
        expect(st[i + 1:i + 2] == ["Starting"] and "Training" in st[i + 2:],
               "after Interrupted: %s" % st[i:])
        msgs = dict(fl.transitions(d))
        expect("requeued by" in msgs["Interrupted"] and "no retry" in msgs["Interrupted"],
               "Interrupted's message: %r" % msgs["Interrupted"])
        return " -> ".join(st)
    tap.case("(q1) Interrupted -> Starting -> Training in SecondaryStatusTransitions", visible)

    def resumed():
        expect(sorted(logs) == [1, 2], "attempts in the logs: %s" % sorted(logs))
        reached = fl.last_step(logs[1]["algo-1"])
        rf = fl.field(logs[2]["algo-1"], "ft-resume", "resumed_from")
        expect(rf, "attempt 2 did not resume from a checkpoint: %s" % logs[2]["algo-1"][:5])
        lost = reached - int(rf[0])
        expect(0 <= lost <= CKPT_EVERY, "attempt 1 reached step %d, attempt 2 resumed from %s: %d steps redone"
               % (reached, rf[0], lost))
        return "reached %d, resumed from %s" % (reached, rf[0])
    tap.case("(q1) attempt 2 resumes from the last checkpoint, <= one interval redone", resumed)

    def weights():
        path = cl.s3_path(fl.model_uri(name))
        got = fl.results(path)["algo-1"]
        ref = fl.reference(hps)
        expect(got["params_sha256"] == ref["params_sha256"], "weights differ from a run without faults")
    tap.case("(q1) the weights equal a run without faults", weights)

    def no_procs():
        left = fl.wait_no_procs(name, 10)
        expect(not left, "processes of %s left: %s" % (name, left))
    tap.case("(q1) no process of the job is left", no_procs)


def case_ckpt_now(tap, cl, sm):
    name = "rq-now-%d" % os.getpid()
    # No periodic checkpoint after the first: only the request saves one.
    hps = {"steps": 60, "ckpt_every": 20, "step_sleep": 0.1, "ckpt_now": True}

    def resumed_at_stop():
        d, logs = run_requeued(cl, sm, name, hps)
        expect(d["TrainingJobStatus"] == "Completed", "%s: %s %r" % (name, d["TrainingJobStatus"],
                                                                    d.get("FailureReason")))
        expect(sorted(logs) == [1, 2], "attempts in the logs: %s" % sorted(logs))
        first = logs[1]["algo-1"]
        asked = [r for r in first if "ft-ckpt" in r[-1] and "(requested)" in r[-1]]
        expect(asked, "attempt 1 saved no requested checkpoint: %s" % first[-5:])
        reached = fl.last_step(first)
        rf = fl.field(logs[2]["algo-1"], "ft-resume", "resumed_from")
        expect(rf, "attempt 2 did not resume from a checkpoint: %s" % logs[2]["algo-1"][:5])
        lost = reached - int(rf[0])
        # Requeued at step >= 25, periodic checkpoints at 20 and 40:
        # without the request up to 19 steps would be redone. With it,
        # only the steps of 0.1 s run between the save and the SIGTERM
        # that follows the answer (the agent looks every 50 ms).
        expect(0 <= lost <= 2, "attempt 1 reached step %d, attempt 2 resumed from %s: %d steps redone"
               % (reached, rf[0], lost))
        got = fl.results(cl.s3_path(fl.model_uri(name)))["algo-1"]
        expect(got["params_sha256"] == fl.reference(hps)["params_sha256"],
               "weights differ from a run without faults")
        return "reached %d, resumed from %s" % (reached, rf[0])
    tap.case("(q5) a program that takes checkpoint-now requests checkpoints when requeued: "
             "at most 2 steps of 0.1 s redone", resumed_at_stop)


def case_budget(tap, cl, sm):
    name = "rq-budget-%d" % os.getpid()
    hps = {"steps": 60, "ckpt_every": CKPT_EVERY, "step_sleep": 0.1, "fail_attempt": 2,
           "fail_after_steps": 5}

    def budget():
        d, logs = run_requeued(cl, sm, name, hps, retries=1, cli=True)
        expect(d["TrainingJobStatus"] == "Completed",
               "%s: %s %r; transitions %s" % (name, d["TrainingJobStatus"], d.get("FailureReason"),
                                              fl.transitions(d)))
        st = states(d)
        expect("Interrupted" in st and "Restarting" in st, "transitions: %s" % st)
        expect(sorted(logs) == [1, 2, 3], "attempts: %s" % sorted(logs))
    tap.case("(q2) after `trainctl requeue-training-job`, MaximumRetryAttempts 1 still restarts a failed "
             "attempt", budget)


def case_crash(tap, cl, sm):
    name = "rq-crash-%d" % os.getpid()
    hps = {"steps": 60, "ckpt_every": CKPT_EVERY, "step_sleep": 0.1}
    trace = os.path.join(cl.tmp, name + ".trace")

    def crash():
        req = fl.job_request(name, 1, hps)
        req["Environment"]["FT_TRACE"] = trace
        sm.create_training_job(**req)
        wait_step(cl, name, 25)
        r = requeue(cl, name)
        expect(r.status == 200, "requeue of %s: %r" % (name, r))
        cl.kill9()
        err = cl.start(wait_hosts=False) or fl.wait_hosts_signed(cl, (sc.KEY, sc.SECRET))
        expect(err is None, "trainctld does not start again: %s" % err)
        d, _ = fl.wait_job(cl.client(), name, fl.terminal, 240)
        expect(d["TrainingJobStatus"] == "Completed", "%s: %s %r" % (name, d["TrainingJobStatus"],
                                                                    d.get("FailureReason")))
        st = states(d)
        expect("Interrupted" in st and "Starting" in st[st.index("Interrupted"):], "transitions: %s" % st)
        tr = fl.read_trace(trace)
        expect(sorted(tr) == [1, 2], "attempts that ran steps: %s" % sorted(tr))
        bad = fl.overlaps(tr)
        expect(not bad, "; ".join(bad))
    tap.case("(q4) kill -9 of trainctld right after a requeue: the job Completes, attempts never overlap",
             crash)


def case_refusals(tap, cl, sm):
    name = "rq-main-%d" % os.getpid()

    def user():
        r = requeue(cl, name, USER)
        expect(r.status in (400, 403) and b"AccessDenied" in r.body, "user key: %r" % r)
        p = trainctl(cl, "requeue-training-job", name, key=USER)
        expect(p.returncode != 0 and b"AccessDenied" in p.stdout, "trainctl with a user key: exit %d %r"
               % (p.returncode, p.stdout))
    tap.case("(q3) a user key may not requeue (AccessDeniedException)", user)

    def ended():
        before = sm.describe_training_job(TrainingJobName=name)
        r = requeue(cl, name)
        expect(r.status == 400 and b"ValidationException" in r.body and b"Completed" in r.body,
               "requeue of a completed job: %r" % r)
        after = sm.describe_training_job(TrainingJobName=name)
        expect(after["SecondaryStatusTransitions"] == before["SecondaryStatusTransitions"],
               "the job changed")
    tap.case("(q3) a completed job cannot be requeued; it is unchanged", ended)

    def unknown():
        r = requeue(cl, "rq-no-such-job")
        expect(r.status in (400, 404) and (b"ResourceNotFound" in r.body or b"ValidationException" in r.body),
               "requeue of a job that does not exist: %r" % r)
        return r.body.decode()[:200]
    tap.case("(q3) requeue of a job that does not exist", unknown)


def main():
    tap = sc.Tap()
    cl = fl.LocalCluster(n_hosts=2, prefix="trainctl-requeue-")
    err = fl.start_signed(cl, credentials, (sc.KEY, sc.SECRET), ["--heartbeat-ms", "200"])
    if not tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
        sys.exit(tap.finish())
    try:
        sm = cl.client()
        case_requeue(tap, cl, sm)
        case_ckpt_now(tap, cl, sm)
        case_budget(tap, cl, sm)
        case_refusals(tap, cl, sm)
        case_crash(tap, cl, sm)
    finally:
        rc, killed = cl.stop()
        cl.check_stopped(tap, rc, killed)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
