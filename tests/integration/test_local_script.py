#!/usr/bin/python3
"""Script mode on the embedded local cluster: requirements.txt and MPI logs.

Starts its own `trainctld --local-hosts 2` on a free loopback port with a
temp state dir and runs jobs through boto3:

  requirements.txt (shared spec SAGEMAKER-CONTRACT.md §5.1, step 4): two
  one-module wheels are built offline at test time; a job whose code has
  a requirements.txt naming one imports it and Completes (pip's output in
  the job's log, nothing in the host's Python); a job naming a package
  that does not exist Fails with "requirements.txt: pip install failed"
  and no rank runs; two jobs with different requirements do not see each
  other's packages. The job's Environment reaches pip (PIP_NO_INDEX,
  PIP_FIND_LINKS: no network).

  MPI (sagemaker_mpi_enabled over both hosts): a successful job's log has
  mpirun's job map once and no "killed by signal" line for the host whose
  worker ends with mpirun; a worker really stopped while mpirun runs is
  still reported as killed.

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_local_script.py
BUILD names the build directory (default build). TRAINCTL_TEST_KEEP=1
keeps the temp dir (state, logs) for inspection.
"""
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import smcompat as sc  # noqa: E402

sc.hermetic_env()

BUILD = os.environ.get("BUILD", "build")
BIN = os.path.join(REPO, BUILD, "bin") if not os.path.isabs(BUILD) else os.path.join(BUILD, "bin")
TRAINCTL = os.path.join(BIN, "trainctl")
PY = "/usr/bin/python3"
BUCKET = "trainctl-script"
OUT = "s3://%s/out" % BUCKET
MISSING = "trainctl-no-such-package-xyz"

Fail, expect, short = sc.Fail, sc.expect, sc.short

# The training program of the requirements jobs: imports what its
# requirements name, says what it sees of the other package and where its
# interpreter lives.
REQ_TRAIN = r'''
import importlib, os, sys
want = os.environ["WANT"]
other = os.environ.get("OTHER")
mod = importlib.import_module(want)
try:
    importlib.import_module(other)
    seen = "yes"
except ImportError:
    seen = "no"
print("req-ran host=%s value=%s other=%s venv=%s prefix=%s file=%s" % (
    os.environ.get("SM_CURRENT_HOST"), mod.VALUE, seen,
    int(sys.prefix != sys.base_prefix), sys.prefix, mod.__file__), flush=True)
'''

# Never meant to run: its requirements cannot be installed.
NEVER_TRAIN = 'print("never-ran: this line must not be in the log")\n'

# MPI: every rank says where it runs; with KILL_WORKER the rank on algo-2
# stops its host's trainagent mpi-worker (SIGTERM to its process group,
# as the agent does) while mpirun still runs.
MPI_TRAIN = r'''
import os, signal, sys, time
rank = os.environ.get("OMPI_COMM_WORLD_RANK")
host = os.environ.get("SM_CURRENT_HOST")
print("mpi-ran rank=%s host=%s venv=%d" % (rank, host, int(sys.prefix != sys.base_prefix)), flush=True)
if os.environ.get("KILL_WORKER") and host == "algo-2":
    pid = os.getpid()
    while pid > 1:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
        if len(argv) > 1 and argv[1] == b"mpi-worker":
            print("stopping the mpi-worker, pid %d" % pid, flush=True)
            os.killpg(os.getpgid(pid), signal.SIGTERM)
            break
        with open("/proc/%d/stat" % pid) as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
if os.environ.get("KILL_WORKER"):
    time.sleep(30)
'''


def build_wheels(tmp):
    """Two one-module wheels, built offline: tcreq_alpha and tcreq_beta."""
    src = os.path.join(tmp, "wheel-src")
    wheels = os.path.join(tmp, "wheels")
    os.makedirs(wheels)
    dirs = []
    for name in ("alpha", "beta"):
        d = os.path.join(src, name)
        os.makedirs(d)
        with open(os.path.join(d, "setup.py"), "w") as f:
            f.write("from setuptools import setup\nsetup(name='tcreq-%s', version='1.0', "
                    "py_modules=['tcreq_%s'])\n" % (name, name))
        with open(os.path.join(d, "tcreq_%s.py" % name), "w") as f:
            f.write("VALUE = %r\n" % name)
        dirs.append(d)
    r = subprocess.run([PY, "-m", "pip", "wheel", "--no-index", "--no-build-isolation", "--no-deps",
                        "-q", "-w", wheels] + dirs, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=120, env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
    got = sorted(os.listdir(wheels))
    if r.returncode or len(got) != 2:
        return None, "pip wheel: exit %d, made %s\n%s" % (r.returncode, got, r.stdout.decode()[-1500:])
    return wheels, None


class Runner:
    def __init__(self, daemon, wheels):
        self.d = daemon
        self.wheels = wheels
        self.sm = sc.make_client(daemon.endpoint)

    def put_code(self, name, files):
        """A sourcedir.tar.gz of files ({name: text}) in the embedded store."""
        key = "code/%s/sourcedir.tar.gz" % name
        path = os.path.join(self.d.state_dir, "s3", BUCKET, key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with tarfile.open(path, "w:gz") as tf:
            for fname, text in files.items():
                data = text.encode()
                ti = tarfile.TarInfo(fname)
                ti.size = len(data)
                ti.mode = 0o644
                tf.addfile(ti, io.BytesIO(data))
        return "s3://%s/%s" % (BUCKET, key)

    def run(self, name, files, count=1, env=None, hps=None, timeout=120):
        """Runs a script-mode job to its end; returns its description."""
        uri = self.put_code(name, files)
        raw = {"sagemaker_program": '"train.py"', "sagemaker_submit_directory": '"%s"' % uri}
        raw.update(hps or {})
        e = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": self.wheels}
        e.update(env or {})
        req = {
            "TrainingJobName": name,
            "AlgorithmSpecification": {"TrainingImage": "trainctl/python", "TrainingInputMode": "File"},
            "RoleArn": sc.ROLE,
            "HyperParameters": raw,
            "OutputDataConfig": {"S3OutputPath": OUT},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": count, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 300},
            "Environment": e,
        }
        from botocore.exceptions import ClientError
        deadline = time.time() + timeout
        while True:
            try:
                self.sm.create_training_job(**req)
                break
            except ClientError as ex:
                code = sc.err_of(ex)[0]
                if code in ("ResourceLimitExceeded", "ThrottlingException") and time.time() < deadline:
                    time.sleep(0.3)
                    continue
                raise
        while True:
            d = self.sm.describe_training_job(TrainingJobName=name)
            if d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
                return d
            if time.time() > deadline:
                raise Fail("%s still %s/%s after %d s\n%s" % (name, d["TrainingJobStatus"],
                                                             d.get("SecondaryStatus"), timeout,
                                                             self.d.log_tail()))
            time.sleep(0.2)

    def logs(self, name, want=(), timeout=15):
        """`trainctl logs NAME`, read again until every string of want is
        in it (log lines may trail the status by a moment)."""
        env = dict(os.environ, AWS_ACCESS_KEY_ID=sc.KEY, AWS_SECRET_ACCESS_KEY=sc.SECRET)
        deadline = time.time() + timeout
        while True:
            r = subprocess.run([TRAINCTL, "--endpoint", self.d.endpoint, "logs", name],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=30)
            out = r.stdout.decode("utf-8", "replace")
            if r.returncode == 0 and all(w in out for w in want):
                return out
            if time.time() > deadline:
                expect(r.returncode == 0, "trainctl logs %s: exit %d: %s" % (
                    name, r.returncode, r.stderr.decode()[-500:]))
                return out
            time.sleep(0.3)


def host_python_clean():
    """The host's interpreter does not see the test packages."""
    r = subprocess.run([PY, "-c", "import importlib.util as u; "
                        "print([m for m in ('tcreq_alpha', 'tcreq_beta') if u.find_spec(m)])"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    return r.stdout.decode().strip()


def lines_with(out, word):
    return [x for x in out.splitlines() if word in x]


def main():
    tap = sc.Tap()
    tmp = tempfile.mkdtemp(prefix="trainctl-script-")
    daemon = None
    try:
        wheels, why = build_wheels(tmp)
        if not tap.ok(wheels is not None, "two one-module wheels built offline with pip wheel", why):
            return tap.finish()
        clean = host_python_clean()
        if not tap.ok(clean == "[]", "the host's python3 has no tcreq_* module before the jobs", clean):
            return tap.finish()
        daemon = sc.Daemon(extra=["--local-hosts", "2", "--grace-period", "2"])
        err = daemon.start()
        if not tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
            return tap.finish()
        run = Runner(daemon, wheels)
        jobs = {}

        def job(key, *args, **kw):
            try:
                jobs[key] = (run.run(*args, **kw), None)
            except Exception as e:
                jobs[key] = (None, "%s: %s" % (type(e).__name__, e))

        # (a) alpha on both hosts; then beta and the failing job side by side.
        job("alpha", "req-alpha", {"train.py": REQ_TRAIN, "requirements.txt": "tcreq-alpha\n"}, count=2,
            env={"WANT": "tcreq_alpha", "OTHER": "tcreq_beta"})
        threads = [
            threading.Thread(target=job, args=("beta", "req-beta", {
                "train.py": REQ_TRAIN, "requirements.txt": "# beta only\ntcreq-beta==1.0\n"}),
                kwargs={"env": {"WANT": "tcreq_beta", "OTHER": "tcreq_alpha"}}),
            threading.Thread(target=job, args=("missing", "req-missing", {
                "train.py": NEVER_TRAIN, "requirements.txt": "tcreq-alpha\n%s\n" % MISSING})),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        def check_alpha():
            d, e = jobs["alpha"]
            expect(d is not None, e)
            expect(d["TrainingJobStatus"] == "Completed", "req-alpha ended %s: %r" % (
                d["TrainingJobStatus"], d.get("FailureReason")))
            out = run.logs("req-alpha", ["req-ran host=algo-1", "req-ran host=algo-2"])
            p = []
            for h in ("algo-1", "algo-2"):
                ran = [x for x in lines_with(out, "req-ran host=%s " % h)]
                if len(ran) != 1:
                    p.append("%s: %d req-ran lines" % (h, len(ran)))
                    continue
                x = ran[0]
                if "value=alpha" not in x or "venv=1" not in x:
                    p.append("%s did not import tcreq_alpha from a virtual environment: %s" % (h, x))
                if not x.startswith("[%s] " % h):
                    p.append("%s's line in another stream: %s" % (h, x))
                # pip ran on each host, its output in that host's stream.
                if not [y for y in lines_with(out, "Successfully installed tcreq-alpha-1.0")
                        if y.startswith("[%s] " % h)]:
                    p.append("%s: pip's 'Successfully installed tcreq-alpha-1.0' is not in its log" % h)
                if not [y for y in lines_with(out, "trainagent: requirements.txt: installing")
                        if y.startswith("[%s] " % h)]:
                    p.append("%s: no 'requirements.txt: installing' note" % h)
            expect(not p, "\n".join(p) + "\n--- trainctl logs ---\n" + out[-3000:])
        tap.case("requirements.txt installed on each host before the program: it imports the package, "
                 "pip's output in the job's log", check_alpha)

        def check_beta():
            d, e = jobs["beta"]
            expect(d is not None, e)
            expect(d["TrainingJobStatus"] == "Completed", "req-beta ended %s: %r" % (
                d["TrainingJobStatus"], d.get("FailureReason")))
            a = run.logs("req-alpha", ["req-ran"])
            b = run.logs("req-beta", ["req-ran"])
            p = [x for x in lines_with(a, "req-ran") if "other=no" not in x]
            p += [x for x in lines_with(b, "req-ran") if "other=no" not in x or "value=beta" not in x]
            expect(lines_with(b, "req-ran") and not p,
                   "a job sees the other's package:\n%s\n--- req-beta ---\n%s" % ("\n".join(p), b[-2000:]))
        tap.case("two jobs with different requirements do not see each other's packages", check_beta)

        def check_missing():
            d, e = jobs["missing"]
            expect(d is not None, e)
            reason = d.get("FailureReason") or ""
            want = "requirements.txt: pip install failed (exit 1): ERROR: No matching distribution found for " + MISSING
            expect(d["TrainingJobStatus"] == "Failed" and want in reason,
                   "req-missing ended %s, FailureReason %r; expected Failed with %r" % (
                       d["TrainingJobStatus"], reason, want))
            out = run.logs("req-missing", [MISSING])
            p = []
            if "never-ran" in out:
                p.append("the program ran although pip failed")
            if not lines_with(out, "No matching distribution found for " + MISSING):
                p.append("pip's error is not in the job's log")
            expect(not p, "\n".join(p) + "\n--- trainctl logs ---\n" + out[-2000:])
        tap.case("a package that does not exist fails the job with pip's reason; no rank ran", check_missing)

        clean = host_python_clean()
        tap.ok(clean == "[]", "the host's python3 still has no tcreq_* module after the jobs", clean)

        # MPI over both hosts; the first with a requirements.txt too, so
        # the ranks under orted get their host's environment as well.
        def check_mpi_ok(name, files, venv):
            d = run.run(name, files, count=2, hps={"sagemaker_mpi_enabled": "true",
                                                   "sagemaker_mpi_num_of_processes_per_host": "1"})
            expect(d["TrainingJobStatus"] == "Completed", "%s ended %s: %r" % (
                name, d["TrainingJobStatus"], d.get("FailureReason")))
            out = run.logs(name, ["mpi-ran rank=0", "mpi-ran rank=1"])
            p = []
            for rank, host in ((0, "algo-1"), (1, "algo-2")):
                ran = lines_with(out, "mpi-ran rank=%d host=%s venv=%d" % (rank, host, venv))
                if not ran:
                    p.append("no 'mpi-ran rank=%d host=%s venv=%d' line" % (rank, host, venv))
            maps = out.count("JOB MAP")
            if maps != 1:
                p.append("the job map is printed %d times, expected once" % maps)
            killed = lines_with(out, "killed by signal")
            if killed:
                p.append("a successful job's log says: %s" % killed)
            expect(not p, "\n".join(p) + "\n--- trainctl logs ---\n" + out[-3000:])

        if not shutil.which("mpirun"):
            for name in ("MPI with requirements.txt", "MPI without requirements.txt",
                         "MPI: a stopped worker is reported"):
                tap.skip(name, "mpirun (openmpi-bin) is not installed")
            return tap.finish()
        files = {"train.py": MPI_TRAIN, "requirements.txt": "tcreq-alpha\n"}
        tap.case("MPI with requirements.txt: Completed, the job map once, no 'killed by signal' line",
                 check_mpi_ok, "mpi-req", files, 1)
        tap.case("MPI without requirements.txt: no environment made, the job map once, "
                 "no 'killed by signal' line", check_mpi_ok, "mpi-plain", {"train.py": MPI_TRAIN}, 0)

        def check_mpi_killed():
            d = run.run("mpi-killed", {"train.py": MPI_TRAIN}, count=2,
                        env={"KILL_WORKER": "1"},
                        hps={"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "1"})
            expect(d["TrainingJobStatus"] == "Failed", "mpi-killed ended %s: %r" % (
                d["TrainingJobStatus"], d.get("FailureReason")))
            out = run.logs("mpi-killed", ["was killed by signal 15"])
            killed = [x for x in lines_with(out, "was killed by signal 15") if x.startswith("[algo-2] ")]
            expect(killed, "no '[algo-2] ... was killed by signal 15' line\n--- trainctl logs ---\n" +
                   out[-3000:])
        tap.case("MPI: a worker stopped while mpirun runs is still reported as killed by signal 15",
                 check_mpi_killed)
    finally:
        if daemon:
            daemon.stop()
            if os.environ.get("TRAINCTL_TEST_KEEP") == "1":
                print("# kept %s and %s" % (tmp, daemon.tmp))
        if os.environ.get("TRAINCTL_TEST_KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
