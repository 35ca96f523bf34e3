"""Shared pieces of the web and observability tests (not a test itself).

  Controller   build/bin/trainctld with the embedded local cluster
               (--local-hosts N) on a free loopback port and a temp state
               dir; stopped by PID (SIGTERM, then SIGKILL) at the end.
  job_body     a CreateTrainingJob body that runs a file:// script.
  run_browser  a node script of browser checks, one TAP line per check,
               then its screenshots counted.
  scripts      the training programs the tests run (POSIX sh).

Uses tests/compat/smcompat.py for TAP, the hermetic environment and raw
HTTP. Standard library only; run the tests with /usr/bin/python3.
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import smcompat as sc  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
BUILD_DIR = BUILD if os.path.isabs(BUILD) else os.path.join(REPO, BUILD)
TRAINCTLD = os.path.join(BUILD_DIR, "bin", "trainctld")
ARTIFACTS = os.path.join(BUILD_DIR, "test-artifacts", "web")
GROUP = "/aws/sagemaker/TrainingJobs"
ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
METRICS = [{"Name": "loss", "Regex": "loss=(.*?);"}, {"Name": "acc", "Regex": "acc=(.*?);"}]


def good_lines(algo, epochs):
    """What GOOD prints on host algo, in order."""
    return (["start on %s" % algo] +
            ["epoch %d loss=%.4f; acc=%.4f;" % (i, 1.0 / i, 1 - 0.5 / i) for i in range(1, epochs + 1)] +
            ["finished on %s" % algo])

# Prints EPOCHS lines "epoch N loss=X; acc=Y;" DELAY seconds apart on every
# host, and one line on stderr; exits 0.
GOOD = r"""#!/bin/sh
n=${EPOCHS:-6}
echo "start on $SM_CURRENT_HOST"
i=1
while [ "$i" -le "$n" ]; do
	echo "epoch $i loss=$(awk "BEGIN { printf \"%.4f\", 1 / $i }"); acc=$(awk "BEGIN { printf \"%.4f\", 1 - 0.5 / $i }");"
	i=$((i + 1))
	sleep "${DELAY:-0.4}"
done
echo "finished on $SM_CURRENT_HOST" >&2
"""

# algo-2 fails with exit code 3 after a second; the others wait to be
# aborted.
BAD = r"""#!/bin/sh
echo "start on $SM_CURRENT_HOST"
if [ "$SM_CURRENT_HOST" = algo-2 ]; then
	sleep 1
	echo "loss=9.5;"
	echo "something went wrong on purpose" >&2
	exit 3
fi
sleep 60
"""


def write_script(dirname, name, text):
    path = os.path.join(dirname, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def job_body(name, script, count=2, env=None, metrics=METRICS, hps=None):
    body = {
        "TrainingJobName": name,
        "RoleArn": ROLE,
        "AlgorithmSpecification": {"TrainingImage": "file://" + script, "TrainingInputMode": "File",
                                   "MetricDefinitions": metrics},
        "HyperParameters": hps or {"learning_rate": "0.01", "epochs": "6"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": count, "VolumeSizeInGB": 5},
        "OutputDataConfig": {"S3OutputPath": "s3://trainctl-web/out"},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
    }
    if env:
        body["Environment"] = env
    return body


def basic(key, secret):
    return "Basic " + base64.b64encode(("%s:%s" % (key, secret)).encode()).decode()


class Controller:
    """One trainctld with an embedded local cluster of `hosts` hosts."""

    def __init__(self, hosts=2, credentials=None, args=None):
        self.hosts = hosts
        self.credentials = credentials   # (key, secret) or None
        self.args = list(args or [])     # more trainctld options
        self.tmp = tempfile.mkdtemp(prefix="trainctl-web-")
        self.state = os.path.join(self.tmp, "state")
        self.log_path = os.path.join(self.tmp, "trainctld.log")
        self.proc = None
        self.port = None

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def headers(self):
        return {"Authorization": basic(*self.credentials)} if self.credentials else {}

    def start(self, timeout=30.0):
        """None when the cluster is ready, else why not."""
        if not os.access(TRAINCTLD, os.X_OK):
            return "%s not built" % TRAINCTLD
        os.makedirs(self.state, exist_ok=True)
        self.port = sc.free_port()
        args = [TRAINCTLD, "--local-hosts", str(self.hosts), "--listen", "127.0.0.1:%d" % self.port,
                "--state-dir", self.state, "-v"] + self.args
        if self.credentials:
            path = os.path.join(self.tmp, "credentials")
            with open(path, "w") as f:
                f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % self.credentials)
            args += ["--credentials", path]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return "trainctld exited with %s\n%s" % (self.proc.returncode, self.log_tail())
            try:
                r = self.get("/v1/hosts", timeout=2)
                if r.status == 200 and r.json:
                    ready = [x for x in r.json["hosts"] if x["state"] in ("ready", "busy")]
                    if len(ready) >= self.hosts:
                        return None
            except OSError:
                pass
            time.sleep(0.1)
        return "hosts not ready after %.0f s\n%s" % (timeout, self.log_tail())

    def request(self, method, path, body=None, headers=None, timeout=15):
        """With credentials, reads sign in like the page (HTTP Basic) and
        writes are SigV4-signed (Basic credentials never write)."""
        h = {}
        data = b""
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        if self.credentials and method in ("GET", "HEAD"):
            h.update(self.headers())
        elif self.credentials:
            p, _, q = path.partition("?")
            h.update(sc.sigv4_sign(method, "127.0.0.1:%d" % self.port, p, q, data,
                                   self.credentials[0], self.credentials[1], h))
        h.update(headers or {})
        return sc.http_request(self.port, method, path, data, h, timeout=timeout)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def create(self, body):
        r = self.request("POST", "/v1/training-jobs", body)
        sc.expect(r.status == 200, "create %s: %r" % (body["TrainingJobName"], r))
        return r.json

    def describe(self, name):
        r = self.get("/v1/training-jobs/" + name)
        sc.expect(r.status == 200, "describe %s: %r" % (name, r))
        return r.json

    def wait(self, name, statuses=("Completed", "Failed", "Stopped"), timeout=60.0):
        deadline = time.time() + timeout
        d = None
        while time.time() < deadline:
            d = self.describe(name)
            if d["TrainingJobStatus"] in statuses:
                return d
            time.sleep(0.1)
        raise sc.Fail("job %s still %s after %.0f s\n%s" % (
            name, d and d.get("TrainingJobStatus"), timeout, self.log_tail()))

    def stop(self, timeout=20.0):
        if not self.proc:
            return
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def cleanup(self):
        self.stop()
        if os.environ.get("TRAINCTL_TEST_KEEP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)

    def stacks(self):
        """Every thread's stack of the running trainctld (gdb), for a
        failure that looks like a hang; empty without gdb."""
        if not self.proc or self.proc.poll() is not None or not shutil.which("gdb"):
            return ""
        try:
            r = subprocess.run(["gdb", "-p", str(self.proc.pid), "-batch", "-ex", "thread apply all bt 25"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
        except subprocess.TimeoutExpired:
            return "(gdb timed out)"
        keep = [l for l in r.stdout.decode("utf-8", "replace").splitlines() if l.startswith(("Thread", "#"))]
        return "--- trainctld threads ---\n" + "\n".join(keep)

    def log_tail(self, n=30):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
            return "--- trainctld log (last %d lines) ---\n%s" % (n, "\n".join(lines[-n:]))
        except OSError:
            return "(no log)"


def run_browser(tap, ctl, script, cfg, limit_s, shots_prefix, min_shots, shots_label="screenshots"):
    """Runs node on script with cfg (as the file PAGE_CONFIG names) against
    ctl, makes a TAP line of each check it prints (a JSON line: name, ok,
    diag; the first failure also gets where the controller's threads are),
    then checks that at least min_shots screenshots whose names start with
    shots_prefix are in ARTIFACTS, written by this session: those of an
    earlier run do not count."""
    t0 = time.time()
    path = os.path.join(ctl.tmp, os.path.splitext(os.path.basename(script))[0] + ".json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    env = dict(os.environ, PAGE_CONFIG=path, NO_PROXY="127.0.0.1,localhost")
    proc = subprocess.Popen(["node", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        out, errout = proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, errout = proc.communicate()
        tap.ok(False, "browser checks finish within %d s" % limit_s, errout.decode("utf-8", "replace")[-2000:])
    lines = [l for l in out.decode("utf-8", "replace").splitlines() if l.startswith("{")]
    stacks_shown = False
    for line in lines:
        r = json.loads(line)
        diag = (r.get("diag") or "") + ("" if r["ok"] else "\n" + ctl.log_tail(15))
        if not r["ok"] and not stacks_shown:
            # Once: where every thread of the controller is (a page that
            # waits in vain may be a controller that hangs).
            diag += "\n" + ctl.stacks()
            stacks_shown = True
        tap.ok(r["ok"], r["name"], diag)
        if r["ok"] and r.get("diag"):
            tap.note(r["diag"])
    if proc.returncode != 0 and not any(not json.loads(l)["ok"] for l in lines):
        tap.ok(False, "browser session ends cleanly", errout.decode("utf-8", "replace")[-2000:])
    os.makedirs(ARTIFACTS, exist_ok=True)
    shots = sorted(f for f in os.listdir(ARTIFACTS) if f.startswith(shots_prefix) and f.endswith(".png") and
                   os.path.getmtime(os.path.join(ARTIFACTS, f)) >= t0 - 1)
    tap.ok(len(shots) >= min_shots, "%s saved under %s" % (shots_label, os.path.relpath(ARTIFACTS, REPO)),
           "found: %s" % shots)
    tap.note("screenshots: " + ", ".join(shots))
