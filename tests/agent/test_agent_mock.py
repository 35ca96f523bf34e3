#!/usr/bin/python3
"""trainagent against a scripted fake controller (docs/agent-protocol.md).

The real controller is tested with the agent in tests/integration/; this
test drives what the real one rarely does on cue: several processes per
host, an answer of 404 to a heartbeat (the agent must register again), a
controller that stops answering (the agent must kill its processes within
deadline_ms: self-fencing), abort, an unsupported channel type, a program
that cannot be executed. Standard library only; TAP on stdout.

    BUILD=build /usr/bin/python3 tests/agent/test_agent_mock.py
"""
import http.server
import io
import json
import os
import shutil
import socket
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
AGENT = os.path.join(BUILD if os.path.isabs(BUILD) else os.path.join(REPO, BUILD),
                     "bin", "trainagent")
TOKEN = "mock-token-123"
HOST = "mock-1"


class Mock:
    """The controller's side: desired state, and everything received."""

    def __init__(self):
        self.lock = threading.Condition()
        self.version = 1
        self.assignments = []
        self.registers = []
        self.reports = []          # every REPORT, in order
        self.lines = []            # every log line
        self.artifacts = {}        # "job/attempt/algo/file" -> bytes
        self.status_404 = 0        # answer this many status POSTs with 404
        self.hang_until = 0.0      # partition: hold every answer until then
        self.hang_a_until = 0.0    # the same, member A's answers only
        self.heartbeat_ms = 200
        self.deadline_ms = 1500
        self.bad_auth = 0
        self.terms = {}            # member -> the X-Trainctl-Term it answers with
        self.terms_seen = {}       # member -> the X-Trainctl-Term values it was sent
        self.stale_work = None     # member B's work while it is a deposed leader

    def set_work(self, assignments):
        with self.lock:
            self.assignments = assignments
            self.version += 1
            self.lock.notify_all()

    def last_report(self, job):
        with self.lock:
            for r in reversed(self.reports):
                if r["job"] == job:
                    return r
        return None

    def wait(self, pred, timeout=15):
        end = time.time() + timeout
        while time.time() < end:
            v = pred()
            if v:
                return v
            time.sleep(0.05)
        return None


MOCK = Mock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    member = "B"

    def log_message(self, *a):
        pass

    def reply(self, code, body=b"{}"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(code)
        term = MOCK.terms.get(self.member)
        if term:
            self.send_header("X-Trainctl-Term", str(term))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def partitioned(self):
        while time.time() < MOCK.hang_until:
            time.sleep(0.05)

    def authorized(self):
        seen = self.headers.get("X-Trainctl-Term")
        if seen:
            with MOCK.lock:
                MOCK.terms_seen.setdefault(self.member, set()).add(seen)
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            MOCK.bad_auth += 1
            self.reply(401, {"__type": "AccessDeniedException"})
            return False
        return True

    def do_POST(self):
        data = self.body()
        self.partitioned()
        if not self.authorized():
            return
        path = urllib.parse.urlparse(self.path).path
        if path == "/v1/agents/register":
            with MOCK.lock:
                MOCK.registers.append(json.loads(data))
            return self.reply(200, {"heartbeat_ms": MOCK.heartbeat_ms,
                                    "deadline_ms": MOCK.deadline_ms})
        if path == "/v1/agents/%s/status" % HOST:
            with MOCK.lock:
                if MOCK.status_404:
                    MOCK.status_404 -= 1
                    return self.reply(404, {"__type": "ResourceNotFound"})
                MOCK.reports.extend(json.loads(data)["assignments"])
            return self.reply(200)
        if path == "/v1/agents/%s/logs" % HOST:
            with MOCK.lock:
                MOCK.lines.extend(json.loads(data)["lines"])
            return self.reply(200)
        self.reply(404)

    def do_GET(self):
        self.partitioned()
        if not self.authorized():
            return
        u = urllib.parse.urlparse(self.path)
        if u.path != "/v1/agents/%s/work" % HOST:
            return self.reply(404)
        have = int(urllib.parse.parse_qs(u.query).get("version", ["-1"])[0])
        with MOCK.lock:
            if self.member == "B" and MOCK.stale_work is not None:
                return self.reply(200, {"version": MOCK.version + 100,
                                        "assignments": MOCK.stale_work})
            end = time.time() + 2
            while MOCK.version == have and time.time() < end:
                MOCK.lock.wait(0.1)
            body = {"version": MOCK.version, "assignments": MOCK.assignments}
        self.reply(200, body)

    def do_PUT(self):
        data = self.body()
        self.partitioned()
        if not self.authorized():
            return
        prefix = "/v1/agents/%s/artifacts/" % HOST
        if not self.path.startswith(prefix):
            return self.reply(404)
        with MOCK.lock:
            MOCK.artifacts[self.path[len(prefix):]] = data
        self.reply(200)


def assignment(job, port, argv, action="run", pph=1, channels=(), grace_ms=1000):
    hosts = ["algo-1", "algo-2"]
    rc = {"current_host": "algo-2", "current_instance_type": "ml.c5.xlarge",
          "current_group_name": "homogeneousCluster", "hosts": hosts,
          "instance_groups": [{"instance_group_name": "homogeneousCluster",
                               "instance_type": "ml.c5.xlarge", "hosts": hosts}],
          "network_interface_name": "lo", "topology": None}
    return {
        "job": job, "attempt": 1, "action": action,
        "job_arn": "arn:aws:sagemaker:us-east-1:000000000000:training-job/" + job,
        "algo": "algo-2", "host_index": 1, "hosts": hosts,
        "addresses": {"algo-1": "127.0.0.1", "algo-2": "127.0.0.1"},
        "instance_type": "ml.c5.xlarge", "hyperparameters": {"epochs": "2"},
        "input_data_config": {}, "resource_config": rc,
        "channels": list(channels), "environment": {"FOO": "bar"},
        "launch": {"mode": "exec", "argv": argv},
        "output_path": "s3://models/out", "checkpoint": None,
        "storage": {"blob_url": "http://127.0.0.1:%d/v1/blobs" % port,
                    "local_root": None},
        "rendezvous": {"master_addr": "127.0.0.1", "master_port": 29500},
        "processes_per_host": pph, "grace_ms": grace_ms,
    }


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        if not cond:
            self.failed += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.n, name))
        if not cond and detail:
            for line in str(detail).splitlines()[-15:]:
                print("# " + line)
        sys.stdout.flush()


def exit_code(proc, timeout):
    """The process's exit status, or None when it is still running after timeout s."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


def cpu_s(pid):
    """User + system CPU seconds of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tar_names(data):
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
        return sorted(m.name.lstrip("./") for m in t.getmembers() if m.isfile())


class HandlerA(Handler):
    """Member A of a replicated controller: the same state, its own
    partition."""
    member = "A"

    def partitioned(self):
        while time.time() < MOCK.hang_a_until:
            time.sleep(0.05)
        Handler.partitioned(self)


class QuietServer(http.server.ThreadingHTTPServer):
    """The agent hangs up on a cut-off member's answers: no traceback."""

    def handle_error(self, request, client_address):
        pass


def members_case(tap, port, env):
    """--controller A,B: member A cut off while a rank runs; the agent
    goes on with B and the rank is never fenced."""
    srv_a = QuietServer(("127.0.0.1", 0), HandlerA)
    srv_a.daemon_threads = True
    port_a = srv_a.server_address[1]
    threading.Thread(target=srv_a.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="trainagent-mock-")
    fd, logf = tempfile.mkstemp(prefix="trainagent-mock-", suffix=".log")
    log = os.fdopen(fd, "w")
    agent = subprocess.Popen([AGENT, "--controller",
                              "http://127.0.0.1:%d/,http://127.0.0.1:%d" % (port_a, port),
                              "--host", HOST, "--work-dir", work, "--cpus", "1",
                              "--gpus", "0", "-v"],
                             env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        n = len(MOCK.registers)
        tap.ok(MOCK.wait(lambda: len(MOCK.registers) > n),
               "--controller A,B: registers (with A, the first)")
        MOCK.set_work([assignment("member", port, ["/bin/sleep", "100"])])
        MOCK.wait(lambda: (MOCK.last_report("member") or {}).get("phase") == "running")
        pid = MOCK.last_report("member")["processes"][0]["pid"]
        t0 = time.time()
        MOCK.hang_a_until = t0 + 8
        n = len(MOCK.reports)
        alive = True
        while time.time() < t0 + 6:
            if not os.path.exists("/proc/%d" % pid):
                alive = False
                break
            time.sleep(0.1)
        moved = len(MOCK.reports) > n + 3
        with open(logf) as f:
            text = f.read()
        tap.ok(alive and moved and "trying the controller at http://127.0.0.1:%d" % port in text,
               "member A cut off: the agent goes on with B within the deadline, "
               "the rank is not fenced (%d reports in 6 s)" % (len(MOCK.reports) - n),
               "\n".join(text.splitlines()[-15:]))
        MOCK.set_work([assignment("member", port, ["/bin/sleep", "100"], action="abort")])
        MOCK.wait(lambda: (MOCK.last_report("member") or {}).get("phase") == "done")
        MOCK.set_work([])
        agent.send_signal(signal.SIGTERM)
        tap.ok(exit_code(agent, 10) == 0, "--controller A,B: SIGTERM, exit 0")
    finally:
        MOCK.hang_a_until = 0
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        srv_a.shutdown()
        shutil.rmtree(work, ignore_errors=True)
        log.close()
        os.unlink(logf)


def terms_case(tap, port, env):
    """--controller A,B: A leads in term 7; B is a deposed leader of term 6
    that still answers, with work that would stop the rank. A cut off for
    3 s: the agent tries B, drops its answers (and does not count them as
    the controller's), tells it the term it knows, and goes back to A; the
    rank is never stopped."""
    srv_a = QuietServer(("127.0.0.1", 0), HandlerA)
    srv_a.daemon_threads = True
    port_a = srv_a.server_address[1]
    threading.Thread(target=srv_a.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="trainagent-mock-")
    fd, logf = tempfile.mkstemp(prefix="trainagent-mock-", suffix=".log")
    log = os.fdopen(fd, "w")
    MOCK.terms = {"A": 7, "B": 6}
    MOCK.deadline_ms = 4500
    agent = subprocess.Popen([AGENT, "--controller",
                              "http://127.0.0.1:%d/,http://127.0.0.1:%d" % (port_a, port),
                              "--host", HOST, "--work-dir", work, "--cpus", "1",
                              "--gpus", "0", "-v"],
                             env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        n = len(MOCK.registers)
        tap.ok(MOCK.wait(lambda: len(MOCK.registers) > n), "terms: registers with A")
        MOCK.set_work([assignment("terms", port, ["/bin/sleep", "100"])])
        MOCK.wait(lambda: (MOCK.last_report("terms") or {}).get("phase") == "running")
        pid = MOCK.last_report("terms")["processes"][0]["pid"]
        MOCK.stale_work = [assignment("terms", port, ["/bin/sleep", "100"], action="abort")]
        t0 = time.time()
        MOCK.hang_a_until = t0 + 3
        alive = True
        while time.time() < t0 + 6:
            if not os.path.exists("/proc/%d" % pid):
                alive = False
                break
            time.sleep(0.1)
        with open(logf) as f:
            text = f.read()
        tap.ok(alive and "a deposed leader's answer, dropped" in text
               and "7" in MOCK.terms_seen.get("B", set()),
               "a deposed leader's work (term 6 < 7) is dropped: the rank runs on; "
               "B was told term 7 (sent: %s)" % sorted(MOCK.terms_seen.get("B", set())),
               "\n".join(text.splitlines()[-15:]))
        tap.ok((MOCK.last_report("terms") or {}).get("phase") == "running",
               "terms: the rank's last report is still 'running'")
        MOCK.stale_work = None
        MOCK.set_work([assignment("terms", port, ["/bin/sleep", "100"], action="abort")])
        MOCK.wait(lambda: (MOCK.last_report("terms") or {}).get("phase") == "done")
        MOCK.set_work([])
        agent.send_signal(signal.SIGTERM)
        tap.ok(exit_code(agent, 10) == 0, "terms: SIGTERM, exit 0")
    finally:
        MOCK.hang_a_until = 0
        MOCK.stale_work = None
        MOCK.terms = {}
        MOCK.deadline_ms = 1500
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        srv_a.shutdown()
        shutil.rmtree(work, ignore_errors=True)
        log.close()
        os.unlink(logf)


def main():
    tap = Tap()
    if not os.access(AGENT, os.X_OK):
        print("1..1\nok 1 - trainagent # SKIP %s not built" % AGENT)
        return 0
    srv = QuietServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="trainagent-mock-")
    log = open(os.path.join(work, "agent.log"), "w")
    env = dict(os.environ, TRAINCTL_AGENT_TOKEN=TOKEN)
    agent = subprocess.Popen([AGENT, "--controller", "http://127.0.0.1:%d" % port,
                              "--host", HOST, "--work-dir", work, "--cpus", "3",
                              "--gpus", "0", "-v"],
                             env=env, stdout=log, stderr=subprocess.STDOUT)

    def agent_log():
        with open(os.path.join(work, "agent.log")) as f:
            return f.read()

    try:
        r = MOCK.wait(lambda: MOCK.registers)
        tap.ok(bool(r) and r[0]["host"] == HOST and r[0]["cpus"] == 3 and
               r[0]["boot_id"] and r[0]["address"] == "127.0.0.1",
               "registers with host, cpus, boot_id, address", r)

        # Two processes per host, success, both artifacts uploaded.
        script = ("echo rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE "
                  "job=$TRAINCTL_JOB foo=$FOO tok=${TRAINCTL_AGENT_TOKEN:-none}; "
                  "echo m > $SM_MODEL_DIR/m$LOCAL_RANK; "
                  "echo o > $SM_OUTPUT_DATA_DIR/o$LOCAL_RANK")
        MOCK.set_work([assignment("pph", port, ["/bin/sh", "-c", script], pph=2)])
        done = MOCK.wait(lambda: (MOCK.last_report("pph") or {}).get("phase") == "done")
        rep = MOCK.last_report("pph")
        tap.ok(done and len(rep["processes"]) == 2 and
               all(p["exit_code"] == 0 and p["pid"] > 0 for p in rep["processes"]),
               "processes_per_host 2: both ranks exit 0, phase done", rep)
        phases = []
        for x in MOCK.reports:
            if x["job"] == "pph" and (not phases or phases[-1] != x["phase"]):
                phases.append(x["phase"])
        tap.ok(phases == sorted(phases, key=["preparing", "downloading", "running", "exited",
                                             "uploading", "done"].index),
               "phases only move forward", phases)
        texts = sorted((l["rank"], l["text"]) for l in MOCK.lines if l["job"] == "pph")
        tap.ok(texts == [(0, "rank=2 local=0 world=4 job=pph foo=bar tok=none"),
                         (1, "rank=3 local=1 world=4 job=pph foo=bar tok=none")],
               "rank environment, request environment, no token; logs per rank", texts)
        model = MOCK.artifacts.get("pph/1/algo-2/model.tar.gz")
        output = MOCK.artifacts.get("pph/1/algo-2/output.tar.gz")
        tap.ok(model is not None and tar_names(model) == ["m0", "m1"] and
               output is not None and tar_names(output) == ["o0", "o1"],
               "model.tar.gz and output.tar.gz PUT with every rank's files",
               sorted(MOCK.artifacts))
        jobdir = os.path.join(work, "jobs", "pph", "1", "algo-2")
        MOCK.set_work([])
        gone = MOCK.wait(lambda: not os.path.exists(jobdir))
        tap.ok(gone, "job directory removed once the controller forgets it")

        # A 404 to a heartbeat: register again.
        n = len(MOCK.registers)
        MOCK.status_404 = 1
        tap.ok(MOCK.wait(lambda: len(MOCK.registers) > n),
               "a 404 on status makes the agent register again")

        # Abort: SIGKILL now, nothing uploaded.
        MOCK.set_work([assignment("abort", port, ["/bin/sleep", "100"])])
        MOCK.wait(lambda: (MOCK.last_report("abort") or {}).get("phase") == "running")
        MOCK.set_work([assignment("abort", port, ["/bin/sleep", "100"], action="abort")])
        done = MOCK.wait(lambda: (MOCK.last_report("abort") or {}).get("phase") == "done")
        rep = MOCK.last_report("abort")
        tap.ok(done and rep["processes"][0]["signal"] == 9 and
               not any(k.startswith("abort/") for k in MOCK.artifacts),
               "abort: killed with signal 9, no upload", rep)
        MOCK.set_work([])

        # Stop: SIGTERM, then upload.
        MOCK.set_work([assignment("stop", port, ["/bin/sleep", "100"])])
        MOCK.wait(lambda: (MOCK.last_report("stop") or {}).get("phase") == "running")
        MOCK.set_work([assignment("stop", port, ["/bin/sleep", "100"], action="stop")])
        done = MOCK.wait(lambda: (MOCK.last_report("stop") or {}).get("phase") == "done")
        rep = MOCK.last_report("stop")
        tap.ok(done and rep["processes"][0]["signal"] == 15 and
               "stop/1/algo-2/model.tar.gz" in MOCK.artifacts,
               "stop: SIGTERM, then model.tar.gz uploaded", rep)
        MOCK.set_work([])

        # A program that cannot be run: exit 127 and a message in stderr.
        MOCK.set_work([assignment("noexec", port, ["/nonexistent/train", "train"])])
        MOCK.wait(lambda: (MOCK.last_report("noexec") or {}).get("phase") == "exited")
        rep = MOCK.last_report("noexec")
        MOCK.wait(lambda: [l for l in MOCK.lines if l["job"] == "noexec"])
        err = [l["text"] for l in MOCK.lines if l["job"] == "noexec" and l["stream"] == "stderr"]
        tap.ok(rep and rep["phase"] == "exited" and rep["processes"][0]["exit_code"] == 127 and
               any("/nonexistent/train" in t for t in err),
               "missing program: exit 127, the reason on stderr", (rep, err))
        MOCK.set_work([])

        # A ManifestFile channel whose manifest does not exist: phase error
        # naming it.
        ch = {"name": "train", "uri": "s3://data/manifest.json", "data_type": "ManifestFile",
              "distribution": "FullyReplicated"}
        MOCK.set_work([assignment("manifest", port, ["/bin/true"], channels=[ch])])
        MOCK.wait(lambda: (MOCK.last_report("manifest") or {}).get("phase") == "error")
        rep = MOCK.last_report("manifest")
        tap.ok(rep and rep["phase"] == "error" and "manifest.json" in (rep["error"] or ""),
               "ManifestFile channel with no manifest: phase error naming it", rep)
        MOCK.set_work([])

        # Partition: no answers for longer than deadline_ms -> SIGKILL.
        MOCK.set_work([assignment("fence", port, ["/bin/sleep", "100"])])
        rep = MOCK.wait(lambda: (MOCK.last_report("fence") or {}).get("phase") == "running")
        pid = MOCK.last_report("fence")["processes"][0]["pid"]
        t0 = time.time()
        # Silent for 12 s, eight times deadline_ms: a rank still alive
        # at the end was not fenced; when within that it died is timing.
        MOCK.hang_until = t0 + 12
        dead = None
        while time.time() < t0 + 12:
            if not os.path.exists("/proc/%d" % pid):
                dead = time.time() - t0
                break
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    dead = time.time() - t0
                    break
            time.sleep(0.05)
        tap.ok(dead is not None,
               "self-fencing: the process dies while the controller is silent "
               "(after %.2f s, deadline_ms 1.5 s)" % (dead or -1))
        rep = MOCK.wait(lambda: (MOCK.last_report("fence") or {}).get("phase") == "exited")
        rep = MOCK.last_report("fence")
        tap.ok(rep and rep["phase"] == "exited" and rep["processes"][0]["signal"] == 9,
               "after the partition: reported as exited with signal 9", rep)
        MOCK.set_work([])

        tap.ok(MOCK.bad_auth == 0, "every request carried the bearer token")

        # trainctld gone, its machine there (connections refused): an
        # agent that never fenced keeps trying at its backoff, past its
        # fencing deadline, and does not spin.
        s0 = socket.socket()
        s0.bind(("127.0.0.1", 0))
        closed = s0.getsockname()[1]
        s0.close()
        work2 = tempfile.mkdtemp(prefix="trainagent-mock-")
        lone = subprocess.Popen([AGENT, "--controller", "http://127.0.0.1:%d" % closed,
                                 "--host", "lone", "--work-dir", work2, "--cpus", "1", "--gpus", "0"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(4)
            c0 = cpu_s(lone.pid)
            time.sleep(3)
            used = cpu_s(lone.pid) - c0
            tap.ok(lone.poll() is None and used < 1.0,
                   "controller down (connection refused): the agent waits between tries "
                   "(%.2f s of CPU in 3 s)" % used)
            # Its work directory removed (the clean-up after a controller
            # that died): nothing left to serve, it exits.
            shutil.rmtree(work2, ignore_errors=True)
            rc = exit_code(lone, 30)
            tap.ok(rc == 0, "work directory removed: the agent exits 0 within 30 s", rc)
        finally:
            lone.kill()
            lone.wait()
            shutil.rmtree(work2, ignore_errors=True)
        agent.send_signal(signal.SIGTERM)
        rc = exit_code(agent, 10)
        tap.ok(rc == 0, "SIGTERM: the agent exits 0", rc)
        members_case(tap, port, env)
        terms_case(tap, port, env)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        srv.shutdown()
        if tap.failed:
            for line in agent_log().splitlines()[-40:]:
                print("# agent: " + line)
        shutil.rmtree(work, ignore_errors=True)
    print("1..%d" % tap.n)
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
