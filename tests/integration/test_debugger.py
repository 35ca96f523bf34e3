#!/usr/bin/python3
"""SageMaker Debugger's hook and profiler configs on the embedded local cluster.

Starts its own `trainctld --local-hosts 1` and runs script-mode jobs through
boto3 with what the SageMaker Python SDK sends by default: DebugHookConfig
and ProfilerConfig. The program prints the config files SageMaker writes
for the smdebug hook (input/config/debughookconfig.json,
profilerconfig.json) and writes files where the hook and the profiler
would; they must arrive under <S3OutputPath>/<job>/debug-output/ and
/profiler-output/, and Describe must say ProfilingStatus. With
DisableProfiler the profiler has no config file and the status is
Disabled.

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_debugger.py
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))
sys.path.insert(0, HERE)

import smcompat as sc  # noqa: E402
import test_netiso as tn  # noqa: E402

sc.hermetic_env()
Fail, expect = sc.Fail, sc.expect
OUT = "s3://%s/out" % tn.BUCKET

TRAIN = r'''
import json, os
cfg = "/opt/ml/input/config/"
for name in ("debughookconfig.json", "profilerconfig.json"):
    p = cfg + name
    print("dbg %s %s" % (name, json.dumps(json.load(open(p))) if os.path.exists(p) else "absent"), flush=True)
for d, rel, text in (("/opt/ml/output/tensors", "events/000000000000_worker_0.tfevents", "tensors"),
                     ("/opt/ml/output/profiler", "system/incremental/algo-1.json", "system")):
    os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
    with open(os.path.join(d, rel), "w") as f:
        f.write(text)
print("dbg done", flush=True)
'''


def run(daemon, sm, name, extra):
    uri = tn.put_code(daemon, name, TRAIN)
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "trainctl/python", "TrainingInputMode": "File"},
        "RoleArn": sc.ROLE,
        "HyperParameters": {"sagemaker_program": '"train.py"', "sagemaker_submit_directory": '"%s"' % uri},
        "OutputDataConfig": {"S3OutputPath": OUT},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
    }
    req.update(extra)
    sm.create_training_job(**req)
    deadline = time.time() + 120
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        if d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            return d
        if time.time() > deadline:
            raise Fail("%s still %s after 120 s" % (name, d["TrainingJobStatus"]))
        time.sleep(0.2)


def printed(out):
    got = {}
    for line in out.splitlines():
        if " dbg " in " " + line and ".json " in line:
            words = line.split("dbg ", 1)[1].split(" ", 1)
            got[words[0]] = words[1]
    return got


def main():
    tap = sc.Tap()
    daemon = sc.Daemon(extra=["--local-hosts", "1", "--grace-period", "2"])
    try:
        err = daemon.start()
        if not tap.ok(err is None, "trainctld --local-hosts 1 starts", err):
            return tap.finish()
        sm = sc.make_client(daemon.endpoint)
        store = lambda uri: os.path.join(daemon.state_dir, "s3", uri[len("s3://"):])

        def on():
            name = "dbg-on"
            d = run(daemon, sm, name, {
                "DebugHookConfig": {"S3OutputPath": OUT, "CollectionConfigurations": [
                    {"CollectionName": "losses", "CollectionParameters": {"save_interval": "10"}}]},
                "ProfilerConfig": {"S3OutputPath": OUT, "DisableProfiler": False}})
            expect(d["TrainingJobStatus"] == "Completed", "ended %s: %r" % (
                d["TrainingJobStatus"], d.get("FailureReason")))
            expect(d.get("ProfilingStatus") == "Enabled", "ProfilingStatus %r" % d.get("ProfilingStatus"))
            expect(d.get("DebugHookConfig", {}).get("LocalPath") == "/opt/ml/output/tensors",
                   "Describe's DebugHookConfig %s" % d.get("DebugHookConfig"))
            expect(d.get("ProfilerConfig", {}).get("ProfilingIntervalInMilliseconds") == 500,
                   "Describe's ProfilerConfig %s" % d.get("ProfilerConfig"))
            out = tn.logs(daemon, name, ["dbg done"])
            got = printed(out)
            hook = json.loads(got.get("debughookconfig.json", "null") or "null")
            expect(isinstance(hook, dict) and hook.get("LocalPath") == "/opt/ml/output/tensors"
                   and hook.get("CollectionConfigurations", [{}])[0].get("CollectionName") == "losses",
                   "debughookconfig.json: %s\n%s" % (got.get("debughookconfig.json"), out[-1500:]))
            prof = json.loads(got.get("profilerconfig.json", "null") or "null")
            expect(isinstance(prof, dict) and prof.get("ProfilingIntervalInMilliseconds") == 500,
                   "profilerconfig.json: %s" % got.get("profilerconfig.json"))
            for rel, text in (("debug-output/events/000000000000_worker_0.tfevents", "tensors"),
                              ("profiler-output/system/incremental/algo-1.json", "system")):
                path = store("%s/%s/%s" % (OUT, name, rel))
                deadline = time.time() + 20
                while not os.path.exists(path) and time.time() < deadline:
                    time.sleep(0.2)
                expect(os.path.exists(path), "no %s in the store" % rel)
                with open(path) as f:
                    expect(f.read() == text, "%s holds something else" % rel)
        tap.case("DebugHookConfig and ProfilerConfig: config files, outputs under <S3OutputPath>/<job>/, "
                 "ProfilingStatus Enabled", on)

        def off():
            name = "dbg-off"
            d = run(daemon, sm, name, {"ProfilerConfig": {"DisableProfiler": True}})
            expect(d["TrainingJobStatus"] == "Completed", "ended %s: %r" % (
                d["TrainingJobStatus"], d.get("FailureReason")))
            expect(d.get("ProfilingStatus") == "Disabled", "ProfilingStatus %r" % d.get("ProfilingStatus"))
            got = printed(tn.logs(daemon, name, ["dbg done"]))
            expect(got.get("profilerconfig.json") == "absent" and got.get("debughookconfig.json") == "absent",
                   "config files: %s" % got)
            expect(not os.path.exists(store("%s/%s/profiler-output" % (OUT, name))),
                   "profiler output uploaded though the profiler is off")
        tap.case("DisableProfiler: no config file, nothing uploaded, ProfilingStatus Disabled", off)
    finally:
        daemon.stop()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
