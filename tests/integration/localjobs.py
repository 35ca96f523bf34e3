"""Helpers of test_local_jobs.py: the local cluster, job runs and the
checks of what each host's process saw against the SageMaker contract."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import traceback
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))
sys.path.insert(0, os.path.join(REPO, "scripts"))

import smcompat as sc  # noqa: E402  (Tap, make_client, hermetic_env, ...)

sc.hermetic_env()

BUILD = os.environ.get("BUILD", "build")
BIN = os.path.join(REPO, BUILD, "bin") if not os.path.isabs(BUILD) else os.path.join(BUILD, "bin")
TRAINCTLD = os.path.join(BIN, "trainctld")
TRAINCTL = os.path.join(BIN, "trainctl")
PROBE = os.path.join(REPO, "examples", "probe", "probe.py")
N_HOSTS = 3
GRACE = 2
BUCKET = "trainctl-it"
OUT = "s3://%s/out" % BUCKET
CODE_URI = "s3://%s/code/probe.tar.gz" % BUCKET
SHARDED = "s3://%s/data/sharded/" % BUCKET
REPLICATED = "s3://%s/data/replicated/" % BUCKET
DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.13.1-cpu-py39"
DLC_MODULE = "sagemaker_pytorch_container.training:main"
ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
ITYPE = "ml.m5.large"
TK_KEYS = sorted([
    "additional_framework_parameters", "channel_input_dirs", "current_host", "current_instance_group",
    "current_instance_group_hosts", "current_instance_type", "distribution_hosts",
    "distribution_instance_groups", "framework_module", "hosts", "hyperparameters", "input_config_dir",
    "input_data_config", "input_dir", "instance_groups", "instance_groups_dict", "is_hetero", "is_master",
    "is_modelparallel_enabled", "is_smddpmprun_installed", "is_smddprun_installed", "job_name", "log_level",
    "master_hostname", "model_dir", "module_dir", "module_name", "network_interface_name", "num_cpus",
    "num_gpus", "num_neurons", "output_data_dir", "output_dir", "output_intermediate_dir", "resource_config",
    "topology", "user_entry_point"])

Fail, expect, short = sc.Fail, sc.expect, sc.short
T0 = time.time()


def cj(obj):
    """TK's format for non-string values: compact JSON, sorted keys."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def decode(v):
    try:
        return json.loads(v)
    except (ValueError, TypeError):
        return v


def cmd_args(hps):
    """TK's to_cmd_args, written from contract §5.2 (independent of scripts/)."""
    out = []
    for k in sorted(hps):
        v = hps[k]
        out.append(("--%s" % k) if len(k) > 1 else ("-%s" % k))
        if isinstance(v, dict):
            out.append(",".join("%s=%s" % (a, b) for a, b in sorted(v.items())))
        elif v is None:
            out.append("")
        else:
            out.append(str(v))
    return out


RESERVED = ("sagemaker_program", "sagemaker_submit_directory", "sagemaker_enable_cloudwatch_metrics",
            "sagemaker_region", "sagemaker_container_log_level", "sagemaker_job_name", "sagemaker_s3_output",
            "_tuning_objective_metric", "default_user_module_name")


def split_hps(raw):
    """(user hps decoded, framework params decoded) per contract §5.2."""
    dec = {k: decode(v) for k, v in raw.items()}
    user = {k: v for k, v in dec.items() if not (k.startswith("sagemaker_") or k in RESERVED)}
    fw = {k: v for k, v in dec.items() if k.startswith("sagemaker_") and k not in RESERVED}
    return user, fw


# ---------------------------------------------------------------- cluster

class Cluster:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="trainctl-it-")
        self.state = os.path.join(self.tmp, "state")
        self.log_path = os.path.join(self.tmp, "trainctld.log")
        self.proc = None
        self.port = None
        self.hosts = None          # GET /v1/hosts answer, when the route exists

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def s3_path(self, uri):
        assert uri.startswith("s3://")
        return os.path.join(self.state, "s3", uri[5:])

    def start(self, timeout=30.0):
        if not os.access(TRAINCTLD, os.X_OK):
            return "%s not built" % TRAINCTLD
        os.makedirs(self.state, exist_ok=True)
        self.port = sc.free_port()
        args = [TRAINCTLD, "--listen", "127.0.0.1:%d" % self.port, "--state-dir", self.state,
                "--local-hosts", str(N_HOSTS), "--grace-period", str(GRACE), "-v"]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return "exited with status %s\n%s" % (self.proc.returncode, self.log_tail())
            try:
                r = sc.http_request(self.port, "GET", "/healthz", timeout=2)
                if r.status == 200:
                    return None
            except OSError:
                pass
            time.sleep(0.05)
        return "not answering /healthz after %.0f s\n%s" % (timeout, self.log_tail())

    def get_json(self, path, timeout=15):
        r = sc.http_request(self.port, "GET", path, timeout=timeout)
        return r.status, r.json

    def wait_hosts(self, timeout=60.0):
        """Waits until N_HOSTS hosts are ready. Returns (ok, text)."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                st, js = self.get_json("/v1/hosts")
            except OSError as e:
                st, js = None, str(e)
            if st == 404:
                return True, "no GET /v1/hosts: jobs will be retried instead"
            if st == 200 and isinstance(js, dict):
                hosts = js.get("hosts") or []
                last = hosts
                ready = [h for h in hosts if h.get("state") in ("ready", "busy")]
                if len(ready) >= N_HOSTS:
                    self.hosts = hosts
                    return True, "hosts: %s" % short(hosts, 800)
            time.sleep(0.1)
        return False, "after %.0f s GET /v1/hosts says %s\n%s" % (timeout, short(last, 800), self.log_tail())

    def stop(self, timeout=20.0):
        if not self.proc:
            return None, False
        killed = False
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                killed = True
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        return rc, killed

    def log_tail(self, n=30):
        out = []
        for path in [self.log_path] + sorted(glob.glob(os.path.join(self.state, "hosts", "*", "agent.log"))):
            try:
                with open(path, "rb") as f:
                    lines = f.read().decode("utf-8", "replace").splitlines()
            except OSError:
                continue
            out.append("--- %s (last %d of %d lines) ---" % (os.path.relpath(path, self.tmp), min(n, len(lines)),
                                                            len(lines)))
            out.extend(lines[-n:])
        return "\n".join(out)

    def log_grep(self, word, n=40):
        """Lines mentioning word (a job name) in trainctld's and the agents' logs."""
        out = []
        for path in [self.log_path] + sorted(glob.glob(os.path.join(self.state, "hosts", "*", "agent.log"))):
            try:
                with open(path, "rb") as f:
                    lines = [x for x in f.read().decode("utf-8", "replace").splitlines() if word in x]
            except OSError:
                continue
            if lines:
                out.append("--- %s: %d lines with %s ---" % (os.path.relpath(path, self.tmp), len(lines), word))
                out.extend(lines[-n:])
        return "\n".join(out)

    def cleanup(self):
        if os.environ.get("TRAINCTL_TEST_KEEP") == "1":
            print("# kept %s" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


# ---------------------------------------------------------------- processes

def procs_with(marker):
    """[(pid, pgid, cmdline)] of processes whose environment has PROBE_MARKER=marker."""
    want = ("PROBE_MARKER=%s" % marker).encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
            if want not in env:
                continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[0] == "Z":
                continue
            found.append((int(d), int(fields[2]), cmd))
        except (OSError, ValueError, IndexError):
            continue
    return found


def ps_lines(pids):
    try:
        out = subprocess.run(["ps", "-eo", "pid,pgid,args"], stdout=subprocess.PIPE, timeout=10).stdout.decode()
    except Exception as e:
        return "ps failed: %s" % e
    lines = out.splitlines()
    keep = [lines[0]] + [x for x in lines[1:] if x.split() and x.split()[0].isdigit() and int(x.split()[0]) in pids]
    return "\n".join(keep)


# ---------------------------------------------------------------- host pool

class Pool:
    """Hands out the cluster's hosts first come, first served, so that
    3-host jobs are not starved by 1-host ones."""

    def __init__(self, n):
        self.free = n
        self.queue = []
        self.cv = threading.Condition()

    def acquire(self, n):
        me = object()
        with self.cv:
            self.queue.append(me)
            while self.queue[0] is not me or self.free < n:
                self.cv.wait()
            self.queue.pop(0)
            self.free -= n
            self.cv.notify_all()

    def release(self, n):
        with self.cv:
            self.free += n
            self.cv.notify_all()


# ---------------------------------------------------------------- jobs

class Job:
    """One training job: its request, how to drive it, and what was seen."""

    def __init__(self, label, name, count, hps=None, channels=(), mode="script", image=None, env=None,
                 max_runtime=300, metrics=None, entrypoint=None, arguments=None, drive=None,
                 sleep=1.2, expect_status="Completed"):
        self.label = label
        self.name = name
        self.count = count
        self.mode = mode                # script | exec | entry
        self.channels = list(channels)  # (name, uri, distribution, content_type)
        self.drive = drive
        self.expect_status = expect_status
        raw = {"marker": json.dumps(name)}
        if sleep:
            raw["sleep"] = json.dumps(sleep)
        raw.update(hps or {})
        if mode == "script":
            raw["sagemaker_program"] = json.dumps("probe.py")
            raw["sagemaker_submit_directory"] = json.dumps(CODE_URI)
        self.env = {"PROBE_MARKER": name, "IT_FOO": "bar baz=1"}
        self.env.update(env or {})
        spec = {"TrainingInputMode": "File"}
        if mode == "script":
            spec["TrainingImage"] = image or "trainctl/python"
        elif mode == "exec":
            spec["TrainingImage"] = "file://" + PROBE
        else:
            spec["TrainingImage"] = image or "trainctl/python"
            spec["ContainerEntrypoint"] = entrypoint
            if arguments:
                spec["ContainerArguments"] = arguments
        if metrics:
            spec["MetricDefinitions"] = metrics
        self.req = {
            "TrainingJobName": name,
            "AlgorithmSpecification": spec,
            "RoleArn": ROLE,
            "HyperParameters": raw,
            "OutputDataConfig": {"S3OutputPath": OUT},
            "ResourceConfig": {"InstanceType": ITYPE, "InstanceCount": count, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime},
            "Environment": self.env,
        }
        if self.channels:
            idc = []
            for cname, uri, dist, ctype in self.channels:
                c = {"ChannelName": cname, "DataSource": {"S3DataSource": {
                    "S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": dist}}}
                if ctype:
                    c["ContentType"] = ctype
                idc.append(c)
            self.req["InputDataConfig"] = idc
        # results
        self.error = None
        self.created_at = None
        self.seen = []            # (time, status, secondary)
        self.desc = None
        self.arn = None
        self.procs_at_end = None
        self.procs_later = None
        self.settle_s = None
        self.model = None         # {member: bytes} or None
        self.model_error = None
        self.output = None
        self.notes = []
        self.extra = {}

    # -- helpers used in the worker thread
    def describe(self, sm):
        d = sm.describe_training_job(TrainingJobName=self.name)
        st = (d["TrainingJobStatus"], d.get("SecondaryStatus"))
        if not self.seen or self.seen[-1][1:] != st:
            self.seen.append((time.time(), st[0], st[1]))
        return d

    def wait_for(self, sm, pred, timeout, interval=0.05):
        deadline = time.time() + timeout
        while True:
            d = self.describe(sm)
            if pred(d):
                return d
            if time.time() > deadline:
                raise Fail("%s: still %s/%s after %.0f s (seen %s)" % (
                    self.name, d["TrainingJobStatus"], d.get("SecondaryStatus"), timeout, self.seen_text()))
            time.sleep(interval)

    def seen_text(self):
        return ", ".join("%s/%s@%.1f" % (p, s, t - (self.created_at or t)) for t, p, s in self.seen)


def terminal(d):
    return d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped")


def create_with_retry(sm, job, timeout=90.0):
    """CreateTrainingJob; retried while the controller says it lacks capacity."""
    from botocore.exceptions import ClientError
    deadline = time.time() + timeout
    while True:
        try:
            r = sm.create_training_job(**job.req)
            job.created_at = time.time()
            job.arn = r.get("TrainingJobArn")
            return r
        except ClientError as e:
            code, msg, st = sc.err_of(e)
            if code in ("ResourceLimitExceeded", "ThrottlingException") and time.time() < deadline:
                job.notes.append("create answered %s: %s (retried)" % (code, msg))
                time.sleep(0.5)
                continue
            raise


def run_job(cluster, pool, job):
    sm = sc.make_client(cluster.endpoint)
    pool.acquire(job.count)
    try:
        create_with_retry(sm, job)
        if job.drive:
            job.drive(cluster, sm, job)
        else:
            wait_done(sm, job)
        job.desc = job.wait_for(sm, terminal, 90, interval=0.2)
    except Exception as e:
        job.error = "%s: %s\n%s" % (type(e).__name__, e, "".join(traceback.format_exc().splitlines(True)[-6:]))
        try:
            job.desc = sm.describe_training_job(TrainingJobName=job.name)
            if not terminal(job.desc):
                sm.stop_training_job(TrainingJobName=job.name)
                job.desc = job.wait_for(sm, terminal, 30, interval=0.2)
        except Exception as e2:
            job.error += "\n(after the error: %s)" % e2
    finally:
        collect(cluster, job)
        pool.release(job.count)


def wait_done(sm, job):
    """The boto3 waiter for success jobs; a poll loop for the others (the
    waiter raises on Failed)."""
    if job.expect_status == "Completed":
        sm.get_waiter("training_job_completed_or_stopped").wait(
            TrainingJobName=job.name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
    job.wait_for(sm, terminal, 120, interval=0.1)


def collect(cluster, job):
    job.procs_at_end = procs_with(job.name)
    t = time.time()
    job.procs_later = job.procs_at_end
    while job.procs_later and time.time() - t < 5:
        time.sleep(0.1)
        job.procs_later = procs_with(job.name)
    job.settle_s = time.time() - t
    path = cluster.s3_path("%s/%s/output/model.tar.gz" % (OUT, job.name))
    job.model, job.model_error = read_tar(path)
    job.output, _ = read_tar(cluster.s3_path("%s/%s/output/output.tar.gz" % (OUT, job.name)))


def read_tar(path):
    try:
        with tarfile.open(path, "r:*") as tf:
            files = {}
            for m in tf.getmembers():
                if m.isfile():
                    files[os.path.normpath(m.name).lstrip("/")] = tf.extractfile(m).read()
            return files, None
    except FileNotFoundError:
        return None, "%s does not exist" % path
    except Exception as e:
        return None, "%s: %s" % (path, e)


def job_dir_file(cluster, job, algo, rel):
    # <work>/jobs/<name>.<uid>/<attempt>/<algo> (agent/jobdir.c)
    pat = os.path.join(cluster.state, "hosts", "**", "jobs", job.name + ".*", "*", algo, rel)
    return glob.glob(pat, recursive=True)


def wait_training_and_probe(cluster, sm, job):
    """Until the job trains and the probe has written its file (its signal
    handling is set up by then); falls back to a pause when the job dir is
    not where the agent protocol says."""
    job.wait_for(sm, lambda d: d.get("SecondaryStatus") == "Training" or terminal(d), 60)
    deadline = time.time() + 10
    while time.time() < deadline:
        if job_dir_file(cluster, job, "algo-1", os.path.join("model", "probe-algo-1.json")):
            return
        time.sleep(0.05)
    job.notes.append("probe file not found in the agent's job dir after 10 s; went on")


def drive_stop(cluster, sm, job):
    wait_training_and_probe(cluster, sm, job)
    time.sleep(1.0)     # TrainingTimeInSeconds >= 1
    job.extra["stop_at"] = time.time()
    r = sm.stop_training_job(TrainingJobName=job.name)
    job.extra["stop_answer"] = {k: v for k, v in r.items() if k != "ResponseMetadata"}
    job.wait_for(sm, terminal, 60, interval=0.02)
    job.extra["stopped_at"] = time.time()


def drive_follow_logs(cluster, sm, job):
    """Follows the job's logs with `trainctl logs -f` while it runs."""
    path = os.path.join(cluster.tmp, "follow-%s.out" % job.name)
    env = dict(os.environ, TRAINCTL_ENDPOINT=cluster.endpoint)
    with open(path, "wb") as out:
        p = subprocess.Popen([TRAINCTL, "logs", "-f", job.name], stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env)
    try:
        wait_done(sm, job)
        job.extra["follow_rc"] = p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        job.extra["follow_rc"] = "still running 60 s after the job ended (killed)"
    with open(path, "rb") as f:
        job.extra["follow_out"] = f.read().decode("utf-8", "replace")


# ---------------------------------------------------------------- checks

def probe_records(job):
    """{algo: record} from the model tarball."""
    expect(job.desc is not None, "the job did not run: %s" % job.error)
    expect(job.model is not None, "no model.tar.gz: %s" % job.model_error)
    recs = {}
    for name, data in job.model.items():
        m = re.match(r"^probe-(algo-\d+)\.json$", name)
        if m:
            recs[m.group(1)] = json.loads(data.decode())
    return recs


def expected_hosts(job):
    return sorted("algo-%d" % i for i in range(1, job.count + 1))


def check_status(job, status, secondary):
    expect(job.error is None, job.error or "")
    d = job.desc
    expect(d is not None, "no describe")
    expect(d["TrainingJobStatus"] == status and d.get("SecondaryStatus") == secondary,
           "ended %s/%s, expected %s/%s; FailureReason %r; seen %s" % (
               d["TrainingJobStatus"], d.get("SecondaryStatus"), status, secondary, d.get("FailureReason"),
               job.seen_text()))


def check_model(cluster, job, extra_files=()):
    d = job.desc
    expect(d is not None, "no describe: %s" % job.error)
    want = "%s/%s/output/model.tar.gz" % (OUT, job.name)
    got = d.get("ModelArtifacts", {}).get("S3ModelArtifacts")
    expect(got == want, "ModelArtifacts.S3ModelArtifacts %r, expected %r" % (got, want))
    expect(job.model is not None, job.model_error)
    names = set(job.model)
    want_names = {"probe-%s.json" % h for h in expected_hosts(job)} | set(extra_files)
    expect(names == want_names, "model.tar.gz holds %s, expected %s" % (sorted(names), sorted(want_names)))
    recs = probe_records(job)
    for h, r in recs.items():
        expect(r.get("host") == h, "probe-%s.json was written by %s" % (h, r.get("host")))


def check_output(job):
    expect(job.output is not None, "no output.tar.gz (contract §7: /opt/ml/output/data -> output.tar.gz)")
    want = {"output-%s.txt" % h for h in expected_hosts(job)}
    names = {os.path.basename(n) for n in job.output}
    expect(want <= names, "output.tar.gz holds %s, expected %s" % (sorted(job.output), sorted(want)))


def expected_configs(job, host, iface):
    hosts = expected_hosts(job)
    group = {"instance_group_name": "homogeneousCluster", "instance_type": ITYPE, "hosts": hosts}
    rc = {"current_host": host, "current_instance_type": ITYPE, "current_group_name": "homogeneousCluster",
          "hosts": hosts, "instance_groups": [group], "network_interface_name": iface, "topology": None}
    idc = {}
    for cname, uri, dist, ctype in job.channels:
        c = {"TrainingInputMode": "File", "S3DistributionType": dist, "RecordWrapperType": "None"}
        if ctype:
            c["ContentType"] = ctype
        idc[cname] = c
    return rc, idc, dict(job.req["HyperParameters"])


def base_of(rec, host):
    if os.geteuid() == 0:
        return "/opt/ml"
    md = rec["environ"].get("SM_MODEL_DIR", "")
    return os.path.dirname(md)


def check_configs(job):
    recs = probe_records(job)
    problems = []
    for h in expected_hosts(job):
        r = recs.get(h)
        if r is None:
            problems.append("%s: no probe record" % h)
            continue
        confs = r.get("configs", {})
        try:
            rc_got = json.loads(confs.get("resourceconfig.json", "null"))
            idc_got = json.loads(confs.get("inputdataconfig.json", "null"))
            hp_got = json.loads(confs.get("hyperparameters.json", "null"))
        except (TypeError, ValueError) as e:
            problems.append("%s: a config file is not JSON: %s; %s" % (h, e, short(confs, 400)))
            continue
        iface = rc_got.get("network_interface_name") if isinstance(rc_got, dict) else None
        rc, idc, hp = expected_configs(job, h, iface)
        if not (isinstance(iface, str) and iface):
            problems.append("%s: network_interface_name %r" % (h, iface))
        elif iface not in r.get("net_interfaces", []):
            problems.append("%s: network_interface_name %r is not an interface of the host %s" % (
                h, iface, r.get("net_interfaces")))
        if rc_got != rc:
            problems.append("%s: resourceconfig.json %s\n  expected %s" % (h, confs.get("resourceconfig.json"),
                                                                        json.dumps(rc)))
        if isinstance(rc_got, dict) and list(rc_got) != list(rc):
            job.notes.append("%s: resourceconfig.json key order %s (the contract's: %s)" % (h, list(rc_got), list(rc)))
        if idc_got != idc:
            problems.append("%s: inputdataconfig.json %s\n  expected %s" % (h, confs.get("inputdataconfig.json"),
                                                                         json.dumps(idc)))
        if hp_got != hp:
            problems.append("%s: hyperparameters.json %s\n  expected %s" % (h, confs.get("hyperparameters.json"),
                                                                         json.dumps(hp)))
        base = base_of(r, h)
        tree = {e["path"]: e for e in r.get("tree", [])}
        for p in ("input/config/hyperparameters.json", "input/config/inputdataconfig.json",
                  "input/config/resourceconfig.json", "model", "output"):
            if p not in tree:
                problems.append("%s: %s/%s missing" % (h, base, p))
        for cname, _, _, _ in job.channels:
            if tree.get("input/data/" + cname, {}).get("type") != "d":
                problems.append("%s: %s/input/data/%s is not a directory" % (h, base, cname))
        if os.geteuid() == 0:
            if not r.get("opt_ml_exists"):
                problems.append("%s: /opt/ml does not exist for the job's process (root)" % h)
            if not r.get("opt_ml_mounts"):
                problems.append("%s: nothing mounted at /opt/ml in the job's mount namespace" % h)
    expect(not problems, "\n".join(problems))


def allowed_counts(cluster, rec):
    cpus = {rec.get("mp_cpu_count")}
    gpus = {rec.get("gpu_count")}
    for hinfo in cluster.hosts or []:
        if isinstance(hinfo.get("cpus"), int):
            cpus.add(hinfo["cpus"])
        if isinstance(hinfo.get("gpus"), int):
            gpus.add(hinfo["gpus"])
    return cpus, gpus


def check_env(cluster, job):
    """Every SM_* value of every host: hand-written from contract §5.3, then
    the whole set against the TK port in scripts/gen_sm_env_expect.py."""
    import gen_sm_env_expect as tk
    recs = probe_records(job)
    problems = []
    user, fw = split_hps(job.req["HyperParameters"])
    arn = job.desc.get("TrainingJobArn")
    for h in expected_hosts(job):
        r = recs.get(h)
        if r is None:
            problems.append("%s: no probe record" % h)
            continue
        env = r["environ"]
        base = base_of(r, h)
        try:
            rc_got = json.loads(r["configs"]["resourceconfig.json"])
            iface = rc_got.get("network_interface_name")
        except Exception:
            iface = None
        rc, idc, hp = expected_configs(job, h, iface)
        hosts = expected_hosts(job)
        group = rc["instance_groups"][0]
        cpus_ok, gpus_ok = allowed_counts(cluster, r)
        try:
            ncpu = int(env.get("SM_NUM_CPUS"))
        except (TypeError, ValueError):
            ncpu = None
        try:
            ngpu = int(env.get("SM_NUM_GPUS"))
        except (TypeError, ValueError):
            ngpu = None
        if ncpu not in cpus_ok:
            problems.append("%s: SM_NUM_CPUS %r, expected one of %s (cpu_count / the host's cpus)" % (
                h, env.get("SM_NUM_CPUS"), sorted(x for x in cpus_ok if x is not None)))
            ncpu = r.get("mp_cpu_count")
        if ngpu not in gpus_ok:
            problems.append("%s: SM_NUM_GPUS %r, expected one of %s" % (h, env.get("SM_NUM_GPUS"), sorted(gpus_ok)))
            ngpu = r.get("gpu_count")
        fmod = env.get("SM_FRAMEWORK_MODULE", "")
        fmods_ok = {job.env.get("SAGEMAKER_TRAINING_MODULE", "")}
        if job.req["AlgorithmSpecification"]["TrainingImage"] == DLC:
            fmods_ok.add(DLC_MODULE)
        if fmod not in fmods_ok:
            problems.append("%s: SM_FRAMEWORK_MODULE %r, expected one of %s" % (h, fmod, sorted(fmods_ok)))
            fmod = ""
        script = job.mode == "script"
        entry = "probe.py" if script else None
        want = {
            "SM_HOSTS": cj(hosts), "SM_CURRENT_HOST": h, "SM_CHANNELS": cj(sorted(idc)),
            "SM_HPS": cj(user), "SM_USER_ARGS": cj(cmd_args(user)),
            "SM_RESOURCE_CONFIG": cj(rc), "SM_INPUT_DATA_CONFIG": cj(idc),
            "SM_MODEL_DIR": base + "/model", "SM_INPUT_DIR": base + "/input",
            "SM_INPUT_CONFIG_DIR": base + "/input/config", "SM_OUTPUT_DIR": base + "/output",
            "SM_OUTPUT_DATA_DIR": base + "/output/data", "SM_OUTPUT_INTERMEDIATE_DIR": base + "/output/intermediate",
            "SM_CURRENT_INSTANCE_TYPE": ITYPE, "SM_CURRENT_INSTANCE_GROUP": "homogeneousCluster",
            "SM_CURRENT_INSTANCE_GROUP_HOSTS": cj(hosts), "SM_INSTANCE_GROUPS": cj(["homogeneousCluster"]),
            "SM_INSTANCE_GROUPS_DICT": cj({"homogeneousCluster": group}), "SM_IS_HETERO": "false",
            "SM_DISTRIBUTION_INSTANCE_GROUPS": "[]", "SM_NETWORK_INTERFACE_NAME": iface or "?",
            "SM_LOG_LEVEL": "20", "SM_FRAMEWORK_PARAMS": cj(fw), "SM_FRAMEWORK_MODULE": fmod,
            "SM_USER_ENTRY_POINT": entry or "", "SM_MODULE_NAME": "probe" if script else "None",
            "SM_MODULE_DIR": decode(job.req["HyperParameters"].get("sagemaker_submit_directory",
                                                                     json.dumps(base + "/code"))),
            "SM_NUM_NEURONS": "0",
            "TRAINING_JOB_NAME": job.name, "TRAINING_JOB_ARN": arn, "CURRENT_HOST": h,
            "SAGEMAKER_JOB_NAME": "",
        }
        for cname in idc:
            want["SM_CHANNEL_" + cname.upper()] = base + "/input/data/" + cname
        for k, v in user.items():
            want["SM_HP_" + k.upper()] = v if isinstance(v, str) else cj(v)
        for k, v in job.env.items():
            if not k.startswith("SM_"):
                want[k] = v
        for k, v in sorted(want.items()):
            if env.get(k) != v:
                problems.append("%s: %s=%r, expected %r" % (h, k, env.get(k), v))
        # SM_TRAINING_ENV
        try:
            te = json.loads(env.get("SM_TRAINING_ENV", ""))
        except ValueError:
            te = None
        if not isinstance(te, dict):
            problems.append("%s: SM_TRAINING_ENV not a JSON object: %r" % (h, env.get("SM_TRAINING_ENV")))
        else:
            if sorted(te) != TK_KEYS:
                problems.append("%s: SM_TRAINING_ENV keys differ: missing %s, extra %s" % (
                    h, sorted(set(TK_KEYS) - set(te)), sorted(set(te) - set(TK_KEYS))))
            for k, v in (("master_hostname", "algo-1"), ("is_master", h == "algo-1"), ("current_host", h),
                         ("hosts", hosts), ("job_name", job.name), ("hyperparameters", user),
                         ("distribution_hosts", []), ("resource_config", rc), ("input_data_config", idc),
                         ("channel_input_dirs", {c: base + "/input/data/" + c for c in idc})):
                if te.get(k) != v:
                    problems.append("%s: SM_TRAINING_ENV %s=%r, expected %r" % (h, k, te.get(k), v))
        # argv
        argv = r.get("argv", [])
        if script:
            if argv[1:] != cmd_args(user):
                problems.append("%s: argv %s, expected [probe.py] + %s" % (h, argv, cmd_args(user)))
            if os.path.basename(argv[0] if argv else "") != "probe.py":
                problems.append("%s: argv[0] %r" % (h, argv[:1]))
            if r.get("executable") != "/usr/bin/python3":
                problems.append("%s: interpreter %r, expected /usr/bin/python3" % (h, r.get("executable")))
            if r.get("cwd") != base + "/code":
                problems.append("%s: cwd %r, expected %s/code" % (h, r.get("cwd"), base))
            if "code/probe.py" not in {e["path"] for e in r.get("tree", [])}:
                problems.append("%s: %s/code/probe.py missing (submit directory not unpacked)" % (h, base))
        elif job.mode == "exec":
            if argv[1:] != ["train"]:
                problems.append("%s: argv %s, expected [%s, train]" % (h, argv, PROBE))
        else:
            want_args = job.req["AlgorithmSpecification"].get("ContainerArguments", [])
            if argv[1:] != want_args:
                problems.append("%s: argv %s, expected [probe.py] + %s" % (h, argv, want_args))
        # the whole set against the TK port
        try:
            inp = {"base_dir": base, "hyperparameters_json": json.dumps(hp),
                   "input_data_config_json": json.dumps(idc), "resource_config_json": json.dumps(rc),
                   "job_name": job.name, "job_arn": arn, "num_cpus": ncpu, "num_gpus": ngpu, "num_neurons": 0,
                   "environment": dict(job.env)}
            if fmod:
                inp["framework_module"] = fmod
            if entry:
                inp["user_entry_point"] = entry
            tk_env = tk.expected(inp)["env"]
        except Exception as e:
            problems.append("TK port failed: %s" % e)
            tk_env = {}
        names = {k for k in set(tk_env) | set(env) if k.startswith("SM_")}
        for k in sorted(names):
            if env.get(k) != tk_env.get(k):
                problems.append("%s: TK port: %s=%r, expected %r" % (h, k, env.get(k), tk_env.get(k)))
    expect(not problems, "\n".join(problems[:60]) + ("\n... %d more" % (len(problems) - 60)
                                                      if len(problems) > 60 else ""))


def objects_under(cluster, uri):
    """{relative key: sha256} of the embedded store's objects under uri."""
    import hashlib
    root = cluster.s3_path(uri)
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            full = os.path.join(dirpath, f)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def channel_view(job, cname):
    """{algo: {relpath: sha256}} of what each host got in channel cname."""
    recs = probe_records(job)
    out = {}
    for h in expected_hosts(job):
        files = recs.get(h, {}).get("channels", {}).get(cname)
        expect(isinstance(files, list), "%s: channel %s: %s" % (h, cname, short(files)))
        out[h] = {f["path"]: f["sha256"] for f in files}
    return out


def check_replicated(cluster, job, cname, uri):
    objs = objects_under(cluster, uri)
    view = channel_view(job, cname)
    for h, files in view.items():
        expect(files == objs, "%s: channel %s holds %s, expected all of %s" % (h, cname, short(files), short(objs)))


def check_sharded(cluster, job, cname, uri):
    objs = objects_under(cluster, uri)
    view = channel_view(job, cname)
    seen = {}
    problems = []
    for h, files in sorted(view.items()):
        for p, digest in files.items():
            seen.setdefault(p, []).append(h)
            if objs.get(p) != digest:
                problems.append("%s: %s has the wrong content (or is not an object)" % (h, p))
    for p in sorted(objs):
        if len(seen.get(p, [])) != 1:
            problems.append("object %s is on %s (must be exactly one host)" % (p, seen.get(p, [])))
    n = len(view)
    lo, hi = len(objs) // n, -(-len(objs) // n)
    for h, files in sorted(view.items()):
        if not lo <= len(files) <= hi:
            problems.append("%s got %d of %d objects (expected %d..%d: ~1/n each)" % (h, len(files), len(objs), lo, hi))
    expect(not problems, "\n".join(problems) + "\nassignment: %s" % short({h: sorted(f) for h, f in view.items()}))
    return {h: sorted(f) for h, f in view.items()}


def check_times(job, final):
    d = job.desc
    expect(d is not None, "no describe: %s" % job.error)
    problems = []
    for k in ("TrainingStartTime", "TrainingEndTime"):
        if not sc.is_dt(d.get(k)):
            problems.append("%s %r" % (k, d.get(k)))
    tt, bt = d.get("TrainingTimeInSeconds"), d.get("BillableTimeInSeconds")
    if not (isinstance(tt, int) and tt >= 1):
        problems.append("TrainingTimeInSeconds %r, expected an integer >= 1" % (tt,))
    if not (isinstance(bt, int) and 1 <= bt <= (tt if isinstance(tt, int) else bt)):
        problems.append("BillableTimeInSeconds %r (TrainingTimeInSeconds %r)" % (bt, tt))
    if not problems:
        span = (d["TrainingEndTime"] - d["TrainingStartTime"]).total_seconds()
        if span < 0 or abs(span - tt) > 1.5:
            problems.append("TrainingTimeInSeconds %d vs End-Start %.3f s" % (tt, span))
        if d["TrainingStartTime"] < d["CreationTime"]:
            problems.append("TrainingStartTime before CreationTime")
    tr = d.get("SecondaryStatusTransitions") or []
    sts = [t.get("Status") for t in tr]
    if final == "Completed":
        order = ["Starting", "Downloading", "Training", "Uploading", "Completed"]
        required = ["Starting", "Training", "Uploading", "Completed"]
    elif final == "Failed":
        order = ["Starting", "Downloading", "Training", "Uploading", "Failed"]
        required = ["Starting", "Training", "Failed"]
    else:   # Stopped / MaxRuntimeExceeded
        order = ["Starting", "Downloading", "Training", "Stopping", final]
        required = ["Starting", "Training", "Stopping", final]
    pos = [order.index(s) if s in order else -1 for s in sts]
    if -1 in pos or pos != sorted(pos) or len(set(pos)) != len(pos) or not set(required) <= set(sts) \
            or not sts or sts[-1] != final:
        problems.append("SecondaryStatusTransitions %s, expected %s (in that order)" % (
            sts, " -> ".join(s if s in required else "(%s)" % s for s in order)))
    for i, t in enumerate(tr):
        if not sc.is_dt(t.get("StartTime")):
            problems.append("transition %s without StartTime" % t.get("Status"))
            continue
        if i < len(tr) - 1:
            if not sc.is_dt(t.get("EndTime")):
                problems.append("closed transition %s without EndTime" % t.get("Status"))
            elif t["EndTime"] < t["StartTime"]:
                problems.append("transition %s ends before it starts" % t.get("Status"))
            nxt = tr[i + 1].get("StartTime")
            if sc.is_dt(t.get("EndTime")) and sc.is_dt(nxt) and abs((nxt - t["EndTime"]).total_seconds()) > 1:
                problems.append("gap between %s's EndTime and %s's StartTime" % (t.get("Status"), tr[i + 1].get("Status")))
    if final == "Completed" and "FailureReason" in d:
        problems.append("FailureReason on a completed job: %r" % d["FailureReason"])
    expect(not problems, "; ".join(problems) + "\n" + short(tr, 1500))


def check_no_procs(job):
    if job.procs_at_end and not job.procs_later:
        job.notes.append("processes of the job were still there when it ended and went within %.1f s: %s" % (
            job.settle_s, job.procs_at_end))
    expect(not job.procs_later, "processes of %s still running %.0f s after it ended:\n%s" % (
        job.name, job.settle_s, ps_lines({p for p, _, _ in job.procs_later})))


# ---------------------------------------------------------------- the jobs

def lines_of(job, host):
    n = int(decode(job.req["HyperParameters"].get("print_lines", "0")))
    return ["probe-line host=%s n=%d/%d" % (host, i, n) for i in range(1, n + 1)]


def check_cli_logs(cluster, job):
    env = dict(os.environ, TRAINCTL_ENDPOINT=cluster.endpoint)
    problems = []
    r = subprocess.run([TRAINCTL, "logs", job.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=30)
    out = r.stdout.decode("utf-8", "replace")
    if r.returncode != 0:
        problems.append("trainctl logs exit %d: %s" % (r.returncode, r.stderr.decode()[-500:]))
    for h in expected_hosts(job):
        for line in lines_of(job, h):
            if line not in out:
                problems.append("trainctl logs: %r missing" % line)
    r2 = subprocess.run([TRAINCTL, "logs", job.name, "--host", "algo-2"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, env=env, timeout=30)
    out2 = r2.stdout.decode("utf-8", "replace")
    if r2.returncode != 0:
        problems.append("trainctl logs --host algo-2 exit %d: %s" % (r2.returncode, r2.stderr.decode()[-500:]))
    for line in lines_of(job, "algo-2"):
        if line not in out2:
            problems.append("trainctl logs --host algo-2: %r missing" % line)
    for h in ("algo-1", "algo-3"):
        if "host=%s " % h in out2:
            problems.append("trainctl logs --host algo-2 shows %s's lines" % h)
    expect(not problems, "\n".join(problems) + "\n--- trainctl logs ---\n" + out[-1500:] +
           "\n--- --host algo-2 ---\n" + out2[-800:])


def check_follow(job):
    rc = job.extra.get("follow_rc")
    out = job.extra.get("follow_out", "")
    expect(rc == 0, "trainctl logs -f: exit %r\n%s" % (rc, out[-1000:]))
    missing = [line for h in expected_hosts(job) for line in lines_of(job, h) if line not in out]
    expect(not missing, "trainctl logs -f missed %s\n%s" % (missing, out[-1500:]))


def check_rest_logs(cluster, job):
    st, js = cluster.get_json("/v1/training-jobs/%s/logs" % job.name)
    expect(st == 200 and isinstance(js, dict), "GET logs: HTTP %s %s" % (st, short(js)))
    streams = js.get("streams") or []
    ct = job.desc["CreationTime"].timestamp()
    pat = re.compile(r"^%s/(algo-\d+)-(\d+)$" % re.escape(job.name))
    hosts = []
    problems = []
    for s in streams:
        m = pat.match(s)
        if not m:
            problems.append("stream %r is not <job>/algo-<n>-<epoch>" % s)
            continue
        hosts.append(m.group(1))
        if not ct - 5 <= int(m.group(2)) <= time.time() + 5:
            problems.append("stream %r: epoch %s not within the job's lifetime (created %.0f)" % (s, m.group(2), ct))
    if sorted(hosts) != expected_hosts(job):
        problems.append("streams %s, expected one per host %s" % (streams, expected_hosts(job)))
    for s in streams:
        m = pat.match(s)
        if not m:
            continue
        q = urllib.parse.quote(s, safe="")
        st2, ev = cluster.get_json("/v1/training-jobs/%s/logs?stream=%s" % (job.name, q))
        msgs = [e.get("message") for e in (ev or {}).get("events", [])]
        want = lines_of(job, m.group(1))
        got = [x for x in msgs if x in want]
        if got != want:
            problems.append("stream %s: probe lines %s, expected %s (all messages: %s)" % (
                s, got, want, short(msgs, 600)))
        if "probe-stderr host=%s" % m.group(1) not in msgs:
            problems.append("stream %s: the stderr line is missing" % s)
        if any(not isinstance(e.get("timestamp"), int) for e in (ev or {}).get("events", [])):
            problems.append("stream %s: events without integer timestamps" % s)
    expect(not problems, "\n".join(problems))


def check_metrics(job, want):
    fm = job.desc.get("FinalMetricDataList")
    expect(isinstance(fm, list) and fm, "FinalMetricDataList %r" % (fm,))
    got = {m.get("MetricName"): m for m in fm}
    problems = []
    for name, value in want.items():
        m = got.get(name)
        if not m:
            problems.append("metric %s missing" % name)
        elif not isinstance(m.get("Value"), (int, float)) or abs(m["Value"] - value) > 1e-6:
            problems.append("metric %s = %r, expected %r (the final value)" % (name, m.get("Value"), value))
        elif not sc.is_dt(m.get("Timestamp")):
            problems.append("metric %s Timestamp %r" % (name, m.get("Timestamp")))
    expect(not problems, "; ".join(problems) + "\n" + short(fm))


HP_TYPES = {
    "epochs": "3", "lr": "0.05", "flag": "true", "name": "\"probe\"", "layers": "[64, 32]",
    "opt": "{\"b\": 1, \"a\": \"x\"}", "learning-rate": "0.01", "k": "7", "plain": "adam",
    "sagemaker_container_log_level": "20", "sagemaker_extra_flag": "true",
}
