#!/usr/bin/python3
"""SageMaker Debugger and Profiler built-in rules, evaluated by the
controller (docs/distributed.md, "Rules"), through boto3 with the members
the SageMaker Python SDK sends for
`Estimator(..., rules=[Rule.sagemaker(rule_configs.stalled_training_rule(),
rule_parameters={...}), ProfilerRule.sagemaker(rule_configs.X())])`:
RuleConfigurationName, RuleEvaluatorImage (the region's rule image) and
RuleParameters with rule_to_invoke; profiler rule parameters str()'d; the
DebugHookConfig and ProfilerConfig the SDK adds.

Embedded local cluster (trainctld --local-hosts 2 --hang-timeout 0: no
hang detection but a job's own StalledTrainingRule; --telemetry-ms 500),
tests/integration/ft_trainer.py:
  (i)   a 2-host job with StalledTrainingRule (threshold 4 s,
        stop_training_on_fire True) whose algo-2 rank is frozen with
        SIGSTOP: the rule is IssuesFound, its StatusDetails name algo-2's
        rank and host, the job ends Stopped (not Failed, no restart), its
        profiler rule is Stopped, no process is left
  (ii)  a healthy job with StalledTrainingRule (queued behind (i): the
        two hosts serve one job at a time): InProgress from the create on,
        NoIssuesFound once it Completed
  (iii) the same job's OverallSystemUsage and ProfilerReport reach
        NoIssuesFound from the hosts' telemetry (CPU hosts: the report
        says its GPU rules had nothing to judge)
  (iv)  IOBottleneck, an unknown rule and an unknown parameter are refused
        with a ValidationException naming them
  (v)   the statuses survive a restart of the controller
  (vi)  the healthy job's LossNotDecreasing (asking a 90 % drop every 2
        steps) becomes IssuesFound while the job still trains, its rules
        scanned every second (OverallSystemUsage's scan_interval_us)
  (vii) read as the SDK's rule_job_summary() reads them (Debug then
        Profiler statuses in one list): ProfilerRule.sagemaker(
        rule_configs.CPUBottleneck()) with the SDK's defaults, str()'d, is
        accepted, InProgress with the others, and ends Error on these CPU
        hosts (no GPU to judge)
  (viii) /metrics counts the verdicts: StalledTrainingRule's and
        LossNotDecreasing's issues, OverallSystemUsage's NoIssuesFound

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_rules.py
Takes about 30 s on 2 cores.
"""
import os
import re
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
from ftlib import expect, short  # noqa: E402

fl.sc.hermetic_env()

LOCAL_ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--max-retries", "0",
              "--grace-period", "1", "--hang-timeout", "0", "--telemetry-ms", "500", "-v"]
RUN = "%x" % (int(time.time() * 1000) % 0xfffffff)
T0 = time.time()
RULE_IMAGE = "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest"


def log(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


def debug_rule(name, **params):
    """Rule.sagemaker(rule_configs.<name>(), rule_parameters=params)."""
    rp = {"rule_to_invoke": name}
    rp.update(params)
    return {"RuleConfigurationName": name, "RuleEvaluatorImage": RULE_IMAGE, "RuleParameters": rp}


def profiler_rule(name, **params):
    """ProfilerRule.sagemaker(rule_configs.<name>()): its defaults, str()'d."""
    rp = {k: str(v) for k, v in params.items()}
    rp["rule_to_invoke"] = name
    return {"RuleConfigurationName": name, "RuleEvaluatorImage": RULE_IMAGE, "RuleParameters": rp}


def with_rules(req, debug=(), profiler=()):
    """What the SDK's estimator adds with rules: the hook and profiler configs."""
    if debug:
        req["DebugRuleConfigurations"] = list(debug)
        req["DebugHookConfig"] = {"S3OutputPath": fl.OUT, "CollectionConfigurations": []}
    if profiler:
        req["ProfilerRuleConfigurations"] = list(profiler)
    req["ProfilerConfig"] = {"S3OutputPath": fl.OUT, "DisableProfiler": False}
    return req


def statuses(d):
    """{name: (status, details)} of both lists."""
    out = {}
    for key in ("DebugRuleEvaluationStatuses", "ProfilerRuleEvaluationStatuses"):
        for s in d.get(key) or []:
            out[s["RuleConfigurationName"]] = (s["RuleEvaluationStatus"], s.get("StatusDetails") or "")
    return out


def wait_rules_final(sm, name, timeout=10):
    """Describe once no rule is InProgress (they settle as the job ends)."""
    deadline = time.time() + timeout
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        if all(st != "InProgress" for st, _ in statuses(d).values()) or time.time() > deadline:
            return d
        time.sleep(0.1)


def wait_step(cl, name, algo, step, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = fl.attempt_logs(cl.logs_dir(name)).get(1, {}).get(algo, [])
        if fl.last_step(rows) >= step:
            return
        time.sleep(0.05)
    raise fl.Fail("%s never logged step=%d within %d s" % (algo, step, timeout))


OVERALL = profiler_rule("OverallSystemUsage", scan_interval_us=1000000)
REPORT = profiler_rule("ProfilerReport", opt_out_telemetry=False, custom_rule_parameters={})
REPORT["RuleParameters"]["custom_rule_parameters"] = "{}"
# ProfilerRule.sagemaker(rule_configs.CPUBottleneck()): every default.
CPU_BOTTLENECK = profiler_rule("CPUBottleneck", threshold=50, gpu_threshold=10, cpu_threshold=90, patience=1000,
                               scan_interval_us=60 * 1000 * 1000)


def rule_job_summary(d):
    """What estimator.latest_training_job.rule_job_summary() returns."""
    out = d.get("DebugRuleEvaluationStatuses") or []
    out.extend(d.get("ProfilerRuleEvaluationStatuses") or [])
    return out


def stalled_job(cl):
    name = "rules-stall-" + RUN
    req = fl.job_request(name, 2, {"steps": 60, "ckpt_every": 0, "step_sleep": 0.3,
                                   "sync_dir": os.path.join(cl.tmp, "sync-" + name)},
                         retries=1, checkpoint=False, max_runtime=90)
    return name, with_rules(req, debug=[debug_rule("StalledTrainingRule", threshold="4",
                                                   stop_training_on_fire="True")],
                            profiler=[OVERALL])


def healthy_job():
    name = "rules-ok-" + RUN
    req = fl.job_request(name, 1, {"steps": 24, "ckpt_every": 0, "step_sleep": 0.25},
                         checkpoint=False, max_runtime=90)
    req["AlgorithmSpecification"]["MetricDefinitions"] = [{"Name": "train:loss", "Regex": r"loss=([0-9.]+)"}]
    return name, with_rules(req, debug=[debug_rule("StalledTrainingRule", threshold="20"),
                                        debug_rule("LossNotDecreasing", num_steps="2", diff_percent="90")],
                            profiler=[OVERALL, REPORT, CPU_BOTTLENECK])


def loss_fires_while_training(sm, name, timeout=40):
    """LossNotDecreasing (a 90 % drop every 2 steps: no loss does that)
    is IssuesFound while the job still trains (scanned every second)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        d = sm.describe_training_job(TrainingJobName=name)
        st, details = statuses(d).get("LossNotDecreasing", (None, ""))
        if st != "InProgress":
            expect(st == "IssuesFound" and d["TrainingJobStatus"] == "InProgress",
                   "LossNotDecreasing %s (%r) with the job %s" % (st, details, d["TrainingJobStatus"]))
            expect(re.match(r"^train:loss did not decrease by 90 % over 2 steps: ", details),
                   "StatusDetails %r" % details)
            return details
        time.sleep(0.1)
    raise fl.Fail("LossNotDecreasing still InProgress after %d s" % timeout)


def check_in_progress(sm, name):
    summary = rule_job_summary(sm.describe_training_job(TrainingJobName=name))
    names = [x["RuleConfigurationName"] for x in summary]
    expect(names == ["StalledTrainingRule", "LossNotDecreasing", "OverallSystemUsage", "ProfilerReport",
                     "CPUBottleneck"], "rule_job_summary() names %s" % names)
    expect(all(x["RuleEvaluationStatus"] == "InProgress" for x in summary), "statuses at start: %s" % summary)
    return ", ".join(names)


def check_summary(d):
    """Every rule final in rule_job_summary(); CPUBottleneck with the SDK's
    defaults has no GPU to judge here."""
    summary = {x["RuleConfigurationName"]: x for x in rule_job_summary(d)}
    left = [n for n, x in summary.items() if x["RuleEvaluationStatus"] == "InProgress"]
    expect(not left, "still InProgress: %s" % left)
    cpu = summary.get("CPUBottleneck") or {}
    expect(cpu.get("RuleEvaluationStatus") == "Error" and "no GPU" in cpu.get("StatusDetails", ""),
           "CPUBottleneck: %s" % cpu)
    return "; ".join("%s %s" % (n, x["RuleEvaluationStatus"]) for n, x in sorted(summary.items()))


def check_metrics(cl):
    r = fl.sc.http_request(cl.port, "GET", "/metrics")
    expect(r.status == 200, "GET /metrics: HTTP %s" % r.status)
    text = r.body.decode() if isinstance(r.body, bytes) else str(r.body)
    want = [r'trainctl_rule_issues_found_total\{rule="StalledTrainingRule"\} [1-9]',
            r'trainctl_rule_issues_found_total\{rule="LossNotDecreasing"\} [1-9]',
            r'trainctl_rule_verdicts_total\{rule="OverallSystemUsage",status="NoIssuesFound"\} [1-9]',
            r'trainctl_rule_verdicts_total\{rule="CPUBottleneck",status="Error"\} [1-9]']
    missing = [w for w in want if not re.search(r"(?m)^" + w, text)]
    expect(not missing, "/metrics lacks %s:\n%s" % (missing, "\n".join(
        x for x in text.splitlines() if x.startswith("trainctl_rule"))))
    return "%d rule counters as expected" % len(want)


def check_stalled(d, left):
    st = statuses(d)
    rule, details = st.get("StalledTrainingRule", (None, ""))
    expect(rule == "IssuesFound", "StalledTrainingRule: %s (%r); all: %s" % (rule, details, st))
    want = r"algo-2 \(host [^)]+\) rank 0 made no progress for \d+ s"
    expect(re.search(want, details), "StatusDetails %r do not match %r" % (details, want))
    expect(d["TrainingJobStatus"] == "Stopped", "job ended %s (FailureReason %r)" % (
        d["TrainingJobStatus"], d.get("FailureReason")))
    msgs = [m for _, m in fl.transitions(d)]
    expect(any(m.startswith("StalledTrainingRule found an issue") for m in msgs) and
           not any(s == "Restarting" for s, _ in fl.transitions(d)),
           "transitions: %s" % short(fl.transitions(d), 1500))
    expect(st.get("OverallSystemUsage", ("",))[0] == "Stopped", "OverallSystemUsage: %s" % (
        st.get("OverallSystemUsage"),))
    expect(not left, "still running after the job ended: %s" % left)
    return details


def check_healthy(d):
    st = statuses(d)
    expect(d["TrainingJobStatus"] == "Completed", "job ended %s (%r)" % (d["TrainingJobStatus"],
                                                                      d.get("FailureReason")))
    expect(st.get("StalledTrainingRule", ("",))[0] == "NoIssuesFound", "StalledTrainingRule: %s" % (
        st.get("StalledTrainingRule"),))
    for s in d["DebugRuleEvaluationStatuses"] + d["ProfilerRuleEvaluationStatuses"]:
        expect(set(s) == {"RuleConfigurationName", "RuleEvaluationStatus", "StatusDetails",
                          "LastModifiedTime"} and hasattr(s["LastModifiedTime"], "timestamp"),
               "members of %s" % s)
    return st["StalledTrainingRule"][1]


def check_profiler(d):
    st = statuses(d)
    overall, details = st.get("OverallSystemUsage", (None, ""))
    expect(overall == "NoIssuesFound" and re.search(r"algo-1 \(\d+ samples\): CPU p50/p95/p99 ", details),
           "OverallSystemUsage: %s %r" % (overall, details))
    report, rdetails = st.get("ProfilerReport", (None, ""))
    expect(report == "NoIssuesFound" and "LowGPUUtilization: Error (the job's hosts have no GPU" in rdetails,
           "ProfilerReport: %s %r" % (report, rdetails))
    return details


def check_refused(sm):
    base = fl.job_request("rules-bad-" + RUN, 1, {}, checkpoint=False)
    cases = [
        (with_rules(dict(base), profiler=[profiler_rule("IOBottleneck", threshold=50)]),
         ["IOBottleneck", "not supported"]),
        (with_rules(dict(base), debug=[debug_rule("VanishingGradient")]), ["VanishingGradient"]),
        (with_rules(dict(base), debug=[debug_rule("StalledTrainingRule", threshold="4", patience="2")]),
         ["RuleParameters patience", "StalledTrainingRule"]),
    ]
    for req, want in cases:
        fl.sc.expect_error(lambda: sm.create_training_job(**req), "ValidationException", status=400,
                           contains=want, what="%s: " % want[0])
    fl.sc.expect_error(lambda: sm.describe_training_job(TrainingJobName=base["TrainingJobName"]),
                       ("ValidationException", "ResourceNotFound"))
    return "%d refused" % len(cases)


def main():
    tap = fl.sc.Tap()
    cl = fl.LocalCluster(2, LOCAL_ARGS, prefix="trainctl-rules-")
    err = cl.start()
    if not tap.ok(err is None, "trainctld --local-hosts 2 %s starts" % " ".join(LOCAL_ARGS), err):
        return tap.finish()
    sm = cl.client()
    stall_name, stall_req = stalled_job(cl)
    ok_name, ok_req = healthy_job()
    done = {}
    try:
        sm.create_training_job(**stall_req)
        sm.create_training_job(**ok_req)
        r = tap.case("(ii) rules are InProgress from the create on", check_in_progress, sm, ok_name)
        if r:
            log("%s: %s" % (ok_name, r))
        wait_step(cl, stall_name, "algo-2", 3)
        victims = [p for p, h, a, _ in fl.procs_with(stall_name) if h == "algo-2" and a == 1]
        expect(victims, "no process of algo-2 found by its marker")
        fl.kill_pids(victims, signal.SIGSTOP)
        log("%s: SIGSTOP to %s" % (stall_name, victims))
        r = tap.case("(vi) LossNotDecreasing finds an issue while the job trains",
                     loss_fires_while_training, sm, ok_name)
        if r:
            log("(vi) %s" % r)
        for name in (ok_name, stall_name):
            fl.wait_job(sm, name, fl.terminal, 60)
            done[name] = wait_rules_final(sm, name)
    except Exception as e:
        tap.ok(False, "the jobs ran to their end", "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()))
    left = fl.wait_no_procs(stall_name, 5.0)
    if stall_name in done:
        r = tap.case("(i) StalledTrainingRule found the frozen rank: IssuesFound naming it, job Stopped",
                     check_stalled, done[stall_name], left)
        if r:
            log("(i) %s" % r)
    if ok_name in done:
        r = tap.case("(ii) a healthy job: StalledTrainingRule NoIssuesFound", check_healthy, done[ok_name])
        if r:
            log("(ii) %s" % r)
        r = tap.case("(iii) OverallSystemUsage and ProfilerReport: NoIssuesFound from telemetry",
                     check_profiler, done[ok_name])
        if r:
            log("(iii) %s" % short(r, 300))
        r = tap.case("(vii) rule_job_summary() as the SDK reads it: every rule final, CPUBottleneck "
                     "Error without a GPU", check_summary, done[ok_name])
        if r:
            log("(vii) %s" % short(r, 400))
    if done:
        tap.case("(viii) /metrics counts the rules' verdicts", check_metrics, cl)
    tap.case("(iv) rules that cannot be evaluated are refused by name", check_refused, sm)
    rc, killed = cl.stop()
    err = cl.start()
    if tap.ok(err is None, "trainctld starts again on the same state", err) and done:

        def same():
            for name, d in done.items():
                again = statuses(cl.client().describe_training_job(TrainingJobName=name))
                expect(again == statuses(d), "%s: %s, before the restart %s" % (name, again, statuses(d)))

        tap.case("(v) the statuses survive a restart", same)
        rc, killed = cl.stop()
    if tap.failed:
        log(cl.log_tail(15))
    cl.check_stopped(tap, rc, killed)
    log("took %.1f s" % (time.time() - T0))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
