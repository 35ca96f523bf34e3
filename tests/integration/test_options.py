#!/usr/bin/python3
"""trainctld options that docs/configuration.md documents, each checked
against a real trainctld (local, a few seconds each):

  (o1) without --credentials, --listen on a non-loopback address is
       refused at start (exit 1, the reason on stderr) and nothing listens
  (o2) --check-config prints the effective values and exits 0; a bad value
       (--account-id of 3 digits) exits 1 naming the option, and neither
       listens nor writes a store
  (o3) --listen [::1]:PORT serves boto3 over IPv6 loopback
  (o4) --region and --account-id are the ARNs' region and account; a tag
       request naming another region's ARN is refused by name
  (o5) --max-body BYTES: a body one byte over gets 413, one at the limit
       is read (and judged by its contents)
  (o6) SIGINT shuts down cleanly (exit 0) and what was answered 200
       before is there after a restart on the same state
  (o7) --advertise-url is what the local cluster's agents are given to
       reach the controller (their command line), and they register
       through it
  (o8) --advertise-url naming several members (a replicated
       controller's, this one first): the agents are given them all,
       sorted; one member that does not answer is passed over and the
       agents register through the next; an empty member is refused

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_options.py
BUILD names the build directory (default build).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
sc.hermetic_env()
expect = sc.expect
TRAINCTLD = fl.TRAINCTLD


def listening(host, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(0.5)
    try:
        s.connect((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def run_once(args, timeout=20):
    return subprocess.run([TRAINCTLD] + args, capture_output=True, timeout=timeout)


def case_o1(tmp):
    port = sc.free_port()
    state = os.path.join(tmp, "o1")
    r = run_once(["--listen", "0.0.0.0:%d" % port, "--state-dir", state, "--local-hosts", "0"])
    err = r.stderr.decode()
    expect(r.returncode == 1 and "not a loopback address" in err and "--credentials" in err,
           "exit %d, stderr %r" % (r.returncode, err))
    expect(not listening("127.0.0.1", port), "something listens on port %d" % port)


def case_o2(tmp):
    state = os.path.join(tmp, "o2")
    r = run_once(["--listen", "127.0.0.1:18081", "--state-dir", state, "--region", "eu-west-3",
                  "--max-body", "65536", "--check-config"])
    out = r.stdout.decode()
    expect(r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr.decode()))
    for line in ("listen 127.0.0.1:18081", "state-dir %s" % state, "region eu-west-3", "max-body 65536",
                 "account-id 000000000000"):
        expect(line in out.splitlines(), "no line %r in:\n%s" % (line, out))
    r = run_once(["--state-dir", state, "--account-id", "123", "--check-config"])
    err = r.stderr.decode()
    expect(r.returncode == 1 and "--account-id" in err and "12 digits" in err,
           "a bad account id: exit %d, stderr %r" % (r.returncode, err))
    expect(not os.path.exists(os.path.join(state, "trainctl.db")), "--check-config wrote a store")


class Proc:
    """A trainctld with its own argv, stopped by PID."""

    def __init__(self, args, tmp, name):
        self.log = os.path.join(tmp, name + ".log")
        with open(self.log, "ab") as f:
            self.p = subprocess.Popen([TRAINCTLD] + args + ["-v"], stdin=subprocess.DEVNULL, stdout=f,
                                      stderr=f)

    def wait_listening(self, host, port, family=socket.AF_INET, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.p.poll() is not None:
                raise sc.Fail("trainctld exited %s before listening:\n%s" % (self.p.returncode, self.tail()))
            if listening(host, port, family):
                return
            time.sleep(0.05)
        raise sc.Fail("not listening after %d s:\n%s" % (timeout, self.tail()))

    def tail(self, n=15):
        with open(self.log, errors="replace") as f:
            return "".join(f.readlines()[-n:])

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                return None
        return self.p.returncode


def case_o3(tmp):
    port = sc.free_port()
    d = Proc(["--listen", "[::1]:%d" % port, "--state-dir", os.path.join(tmp, "o3"), "--local-hosts", "0"],
             tmp, "o3")
    try:
        d.wait_listening("::1", port, socket.AF_INET6)
        sm = sc.make_client("http://[::1]:%d" % port)
        jobs = sm.list_training_jobs()["TrainingJobSummaries"]
        expect(jobs == [], "ListTrainingJobs over [::1]: %r" % jobs)
        expect(not listening("127.0.0.1", port), "it listens on 127.0.0.1:%d too" % port)
    finally:
        d.stop()


def case_o4(tmp):
    port = sc.free_port()
    d = Proc(["--listen", "127.0.0.1:%d" % port, "--state-dir", os.path.join(tmp, "o4"), "--local-hosts", "0",
              "--region", "eu-west-3", "--account-id", "123456789012"], tmp, "o4")
    try:
        d.wait_listening("127.0.0.1", port)
        sm = sc.make_client("http://127.0.0.1:%d" % port)
        req = fl.job_request("opt-o4", 1, checkpoint=False, max_runtime=60)
        arn = sm.create_training_job(**req)["TrainingJobArn"]
        want = "arn:aws:sagemaker:eu-west-3:123456789012:training-job/opt-o4"
        expect(arn == want, "ARN %r, want %r" % (arn, want))
        expect(sm.describe_training_job(TrainingJobName="opt-o4")["TrainingJobArn"] == want,
               "Describe's ARN differs")
        tags = sm.list_tags(ResourceArn=want)["Tags"]
        expect(tags == [], "ListTags of the job: %r" % tags)
        try:
            sm.list_tags(ResourceArn="arn:aws:sagemaker:us-east-1:123456789012:training-job/opt-o4")
            raise sc.Fail("ListTags with another region's ARN was accepted")
        except sc.Fail:
            raise
        except Exception as e:
            code, msg, status = sc.err_of(e)
            expect(status == 400 and "us-east-1" in msg, "another region: %s %s %s" % (code, msg, status))
    finally:
        d.stop()


def case_o5(tmp):
    port = sc.free_port()
    limit = 4096
    d = Proc(["--listen", "127.0.0.1:%d" % port, "--state-dir", os.path.join(tmp, "o5"), "--local-hosts", "0",
              "--max-body", str(limit)], tmp, "o5")
    try:
        d.wait_listening("127.0.0.1", port)
        hdr = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker.ListTrainingJobs"}
        over = b"{" + b" " * (limit - 1) + b"}"
        r = sc.http_request(port, "POST", "/", body=over, headers=hdr)
        expect(r.status == 413, "a body of %d bytes: %r" % (len(over), r))
        at = b"{" + b" " * (limit - 2) + b"}"
        r = sc.http_request(port, "POST", "/", body=at, headers=hdr)
        expect(r.status == 200 and "TrainingJobSummaries" in json.loads(r.body),
               "a body of %d bytes: %r" % (len(at), r))
    finally:
        d.stop()


def case_o6(tmp):
    port = sc.free_port()
    state = os.path.join(tmp, "o6")
    args = ["--listen", "127.0.0.1:%d" % port, "--state-dir", state, "--local-hosts", "0"]
    d = Proc(args, tmp, "o6")
    try:
        d.wait_listening("127.0.0.1", port)
        sm = sc.make_client("http://127.0.0.1:%d" % port)
        sm.create_training_job(**fl.job_request("opt-o6", 1, checkpoint=False, max_runtime=60))
        rc = d.stop(signal.SIGINT)
        expect(rc == 0, "exit %r on SIGINT:\n%s" % (rc, d.tail()))
        expect(not listening("127.0.0.1", port), "still listening after SIGINT")
    finally:
        d.stop()
    d = Proc(args, tmp, "o6b")
    try:
        d.wait_listening("127.0.0.1", port)
        sm = sc.make_client("http://127.0.0.1:%d" % port)
        names = [j["TrainingJobName"] for j in sm.list_training_jobs()["TrainingJobSummaries"]]
        expect(names == ["opt-o6"], "after a restart: %r" % names)
    finally:
        d.stop()


def agents_of(state):
    """argv of the agents whose work folder lies under state."""
    out = []
    for _, argv in fl.proc_argvs():
        if argv and os.path.basename(argv[0]) == "trainagent" and any(state in a for a in argv):
            out.append(argv)
    return out


def advertised_agents(tmp, tag, advertise, want):
    """Starts a local cluster of one host with --advertise-url advertise
    and checks its agent registers, given --controller want."""
    port = sc.free_port()
    state = os.path.join(tmp, tag)
    d = Proc(["--listen", "127.0.0.1:%d" % port, "--state-dir", state, "--local-hosts", "1",
              "--advertise-url", advertise % {"port": port}], tmp, tag)
    want = want % {"port": port}
    try:
        d.wait_listening("127.0.0.1", port)
        deadline = time.time() + 30
        hosts = []
        while time.time() < deadline:
            r = sc.http_request(port, "GET", "/v1/hosts")
            hosts = (r.json or {}).get("hosts", []) if r.status == 200 else []
            if any(h.get("state") == "ready" for h in hosts):
                break
            time.sleep(0.1)
        expect(any(h.get("state") == "ready" for h in hosts), "no host ready: %r\n%s" % (hosts, d.tail()))
        argvs = [a for a in agents_of(state) if "--controller" in a]
        expect(argvs and all(a[a.index("--controller") + 1] == want for a in argvs),
               "the agents' command lines do not name %s: %r" % (want, argvs))
    finally:
        d.stop()


def case_o7(tmp):
    advertised_agents(tmp, "o7", "http://localhost:%(port)d", "http://localhost:%(port)d")


def case_o8(tmp):
    dead = sc.free_port()
    # this member first; sorted, the member that never answers comes first
    advertised_agents(tmp, "o8", "http://localhost:%%(port)d,http://127.0.0.1:%d" % dead,
                      "http://127.0.0.1:%d,http://localhost:%%(port)d" % dead)
    r = run_once(["--state-dir", os.path.join(tmp, "o8-bad"), "--check-config",
                  "--advertise-url", "http://a:1,,http://b:2"])
    err = r.stderr.decode()
    expect(r.returncode != 0 and "--advertise-url: '' is not an http:// or https:// URL" in err,
           "an empty member: exit %d, %r" % (r.returncode, err))


def main():
    tap = sc.Tap()
    tmp = tempfile.mkdtemp(prefix="trainctl-options-")
    try:
        tap.case("(o1) without --credentials, a non-loopback --listen is refused", case_o1, tmp)
        tap.case("(o2) --check-config prints the effective values; a bad one exits 1", case_o2, tmp)
        tap.case("(o3) --listen [::1]:PORT serves boto3 over IPv6 loopback", case_o3, tmp)
        tap.case("(o4) --region and --account-id make the ARNs", case_o4, tmp)
        tap.case("(o5) --max-body: one byte over is 413, at the limit is read", case_o5, tmp)
        tap.case("(o6) SIGINT shuts down cleanly and the store keeps what was answered", case_o6, tmp)
        tap.case("(o7) --advertise-url is how the local agents reach the controller", case_o7, tmp)
        tap.case("(o8) --advertise-url with several members: every agent is given them all",
                 case_o8, tmp)
    finally:
        fl.shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
