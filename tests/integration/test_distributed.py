#!/usr/bin/python3
"""Distributed training modes on a 3-host test cluster (network namespaces,
scripts/cluster.sh, as test_cluster_jobs.py), against the contract of
SAGEMAKER-CONTRACT.md 6 and what trainctl adds.

  refusals  (a local trainctld, no hosts) CreateTrainingJob refuses with
            ValidationException naming the hyperparameter: the modes that
            need SageMaker's own libraries (sagemaker_pytorch_ddp_enabled,
            sagemaker_distributed_dataparallel_enabled,
            sagemaker_pytorch_xla_multi_worker_enabled), two modes at once,
            bad counts (0, "abc", "1.5", "", 300); it accepts the SDK's
            JSON encodings ("true", "\\"true\\"", "True", "\\"2\\"") and
            disabled flags; a refused request leaves no job behind.
  probes    tests/integration/dist_probe.py (standard library; torch only
            for an all_reduce) in every mode dumps its environment, argv,
            pid, parent's command line, hostname and interfaces into
            SM_MODEL_DIR; the test reads model.tar.gz from the controller's
            embedded store and checks, per mode:
              none      one process per host; MASTER_ADDR = algo-1's address
                        (algo-1 listens there on MASTER_PORT, the others
                        connect from their own addresses); no RANK/WORLD_SIZE
              torch     2 processes per host with an all_reduce over gloo
                        (sum of RANK+1 over 6 ranks), and the default (no
                        GPUs: 1 per host) on 2 hosts with rank 0 listening on
                        MASTER_PORT: RANK 0..W-1 once each, LOCAL_RANK,
                        NODE_RANK = GROUP_RANK = host index, WORLD_SIZE,
                        LOCAL_WORLD_SIZE, ROLE_*, GROUP_WORLD_SIZE,
                        TORCHELASTIC_RESTART_COUNT/RUN_ID, OMP_NUM_THREADS=1
                        only with more than one process per host
              mpi       2 per host: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK,
                        map-by slot, each rank's SM_CURRENT_HOST its own
                        host; mpirun's command line (the parent of algo-1's
                        ranks) has the contract's options, the
                        custom options and the program last; the other
                        hosts' ranks are children of orted; all output in
                        algo-1's stream, tagged [1,<rank>]<stdout>:; the
                        OpenMPI session directory is gone afterwards
              parameter_server  K=2 of 3 hosts: a server (rank 0) on the
                        first 2 hosts and a worker everywhere; TF_CONFIG
                        exactly, TRAINCTL_ROLE/ROLE_INDEX counts, and every
                        process listens on its own TF_CONFIG address and
                        reaches all the others
              multi_worker_mirrored  one worker per host, TF_CONFIG with
                        cluster.worker only, all reachable
            and in every mode: TRAINCTL_JOB/ATTEMPT/DISTRIBUTION/
            CHECKPOINT_DIR/RDZV_URL/RDZV_TOKEN, GLOO_SOCKET_IFNAME =
            NCCL_SOCKET_IFNAME = eth0, SM_HOSTS, the hostname and address
            of the host that runs the process (from the agents' logs),
            MASTER_PORT the same in a job and different between two jobs;
            the rendezvous store from inside the job: the leader PUTs, the
            others GET with wait_ms (a 64 KiB value too; one byte more is
            refused), a missing key answers 404 after the wait, a wrong or
            missing token 401, the token on attempt+1 401, another job's
            token on this job and this job's token on the other job 401.
  ddp       examples/pytorch_ddp (uploaded with `trainctl upload-source`,
            data with `trainctl cp`, its job.json as the request) on 2 and
            3 hosts: Completed, held-out accuracy >= 0.9
            (FinalMetricDataList and metrics.json), only rank 0's model in
            model.tar.gz, every rank's final weights the same SHA-256 and
            the same as the saved model.pt, the throughput line logged.
  examples  the C examples on libtrainer (make examples: build/examples/*)
            as file:// images, Fashion-MNIST (Debian's dataset-fashion-
            mnist) uploaded with `trainctl cp` as the train channel, in
            tests/examples/test_examples.sh's configuration (4000 training
            and 1000 held-out images, 3 epochs of batches of 32, seed 1,
            debug-hash; its threshold 0.75 and tolerance 1e-4), compared
            with single-process runs of the same binaries outside trainctl
            (started before the cluster comes up, so they overlap it):
              mlp_dp        MPI, 1 process per host, on 2 and on 3 hosts:
                            Completed, accuracy >= 0.75, model.bin within
                            1e-4 of the single process's, every rank's
                            weights-hash the same
              mlp_pipeline  MPI on 3 hosts (784-128-64-10, one layer per
                            host): model.bin exactly the unsplit network's
              param_server  parameter_server, 3 hosts, 2 servers: every
                            server saw the 3 workers done, model.bin within
                            1e-4 of mlp_dp's on 3 hosts (and alone)
            and every one's FinalMetricDataList has libtrainer's train:loss
            and validation:accuracy (the last #metric lines) though the
            requests have no MetricDefinitions.
  cleanup   after each job no process of it (TRAINCTL_JOB in its
            environment, or its marker on its command line) is left on any
            host; at the end the hosts run only sshd and their agent, and
            `cluster.sh down` leaves no process, namespace, link or
            /etc/netns entry behind.

The cluster: a prefix, a free /24 and a free controller port of this run
(sc.run_names), so overlapping runs never share them. The agent goes to /root/trainagent, which
is private to each host (its own home), as on separate machines. (With a
path in the shared /tmp the hosts' parallel copies replace one another
under agents already started, whose /proc/self/exe then ends in
" (deleted)": such an agent cannot start `trainagent mpi-worker` or give
mpirun a working `trainagent rsh`, and MPI jobs on it hang.)

TAP on stdout; skips (1..0 # SKIP) when not root, without sshd, or when the
binaries are not built. Run from the top of the tree:
    /usr/bin/python3 tests/integration/test_distributed.py
BUILD names the build directory (default build), FASHION_MNIST_DIR the
data (default /usr/share/datasets/fashion-mnist; without it or the
examples that section skips); TRAINCTL_TEST_KEEP=1 keeps the cluster's
state dir (logs) and the single-process runs' directory after tear-down.
"""
import glob
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from distlib import *  # noqa: E402,F401,F403
from distlib import sc  # noqa: E402


REFUSED = [
    ("sagemaker_pytorch_ddp_enabled", {"sagemaker_pytorch_ddp_enabled": "true"}, ["sagemaker_pytorch_ddp_enabled"]),
    ("sagemaker_distributed_dataparallel_enabled", {"sagemaker_distributed_dataparallel_enabled": "true"},
     ["sagemaker_distributed_dataparallel_enabled"]),
    ("sagemaker_pytorch_xla_multi_worker_enabled", {"sagemaker_pytorch_xla_multi_worker_enabled": "true"},
     ["sagemaker_pytorch_xla_multi_worker_enabled"]),
    ("two modes: torch_distributed and mpi",
     {"sagemaker_torch_distributed_enabled": "true", "sagemaker_mpi_enabled": "true"},
     ["sagemaker_torch_distributed_enabled", "sagemaker_mpi_enabled"]),
    ("two modes: parameter_server and multi_worker_mirrored",
     {"sagemaker_parameter_server_enabled": "true", "sagemaker_multi_worker_mirrored_strategy_enabled": "true"},
     ["sagemaker_parameter_server_enabled", "sagemaker_multi_worker_mirrored_strategy_enabled"]),
    ("mpi processes per host \"0\"",
     {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "0"},
     ["sagemaker_mpi_num_of_processes_per_host"]),
    ("mpi processes per host \"abc\"",
     {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "abc"},
     ["sagemaker_mpi_num_of_processes_per_host"]),
    ("mpi processes per host \"300\"",
     {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "300"},
     ["sagemaker_mpi_num_of_processes_per_host"]),
    ("mpi total processes \"-1\"",
     {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_processes": "-1"}, ["sagemaker_mpi_num_processes"]),
    ("torch processes per host \"0\"",
     {"sagemaker_torch_distributed_enabled": "true", "sagemaker_trainctl_processes_per_host": "0"},
     ["sagemaker_trainctl_processes_per_host"]),
    ("torch processes per host \"1.5\"",
     {"sagemaker_torch_distributed_enabled": "true", "sagemaker_trainctl_processes_per_host": "1.5"},
     ["sagemaker_trainctl_processes_per_host"]),
    ("torch processes per host \"\"",
     {"sagemaker_torch_distributed_enabled": "true", "sagemaker_trainctl_processes_per_host": ""},
     ["sagemaker_trainctl_processes_per_host"]),
    ("parameter servers \"x\"",
     {"sagemaker_parameter_server_enabled": "true", "sagemaker_trainctl_parameter_servers": "x"},
     ["sagemaker_trainctl_parameter_servers"]),
    ("parameter servers \"0\"",
     {"sagemaker_parameter_server_enabled": "true", "sagemaker_trainctl_parameter_servers": "0"},
     ["sagemaker_trainctl_parameter_servers"]),
]

ACCEPTED = [
    {"sagemaker_torch_distributed_enabled": "true"},
    {"sagemaker_torch_distributed_enabled": "\"true\"", "sagemaker_trainctl_processes_per_host": "\"2\""},
    {"sagemaker_torch_distributed_enabled": "True", "sagemaker_trainctl_processes_per_host": "2"},
    {"sagemaker_torch_distributed_enabled": "true", "sagemaker_mpi_enabled": "false"},
    {"sagemaker_pytorch_ddp_enabled": "false", "sagemaker_distributed_dataparallel_enabled": "false"},
    {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2",
     "sagemaker_mpi_num_processes": "4", "sagemaker_mpi_custom_mpi_options": "\"-x A=1\""},
    {"sagemaker_parameter_server_enabled": "true", "sagemaker_trainctl_parameter_servers": "\"1\""},
    {"sagemaker_multi_worker_mirrored_strategy_enabled": "true"},
]


def refusal_cases(tap, run_id):
    d = sc.Daemon(name="trainctld-refusals")
    err = d.start()
    if not tap.ok(err is None, "a local trainctld (no hosts) for the refusals", err):
        return
    try:
        sm = sc.make_client(d.endpoint)
        for i, (label, hps, names) in enumerate(REFUSED):
            def refused(hps=hps, names=names, i=i):
                req = sc.small_request("dr%d-%s" % (i, run_id))
                req["HyperParameters"].update(hps)
                code, msg, st = sc.expect_error(lambda: sm.create_training_job(**req), "ValidationException",
                                                status=400, contains=names)
                sc.expect_error(lambda: sm.describe_training_job(TrainingJobName=req["TrainingJobName"]),
                                ("ValidationException", "ResourceNotFound"), what="the refused job: ")
                return msg
            tap.case("CreateTrainingJob refuses %s: ValidationException naming %s, no job left" % (
                label, " and ".join(names)), refused)

        def accepted():
            p = []
            for i, hps in enumerate(ACCEPTED):
                req = sc.small_request("da%d-%s" % (i, run_id))
                req["HyperParameters"].update(hps)
                try:
                    sm.create_training_job(**req)
                except Exception as e:
                    p.append("%s: %s" % (hps, sc.err_of(e) if hasattr(e, "response") else e))
                    continue
                try:
                    sm.stop_training_job(TrainingJobName=req["TrainingJobName"])
                except Exception:
                    pass
            expect(not p, "refused:\n" + "\n".join(p))
        tap.case("CreateTrainingJob accepts the SDK's encodings (true, \"true\", True, \"2\") and disabled "
                 "flags (%d requests)" % len(ACCEPTED), accepted)
    finally:
        d.stop()


# ---------------------------------------------------------------- ddp

def state_hash(sd):
    h = hashlib.sha256()
    for k, v in sorted(sd.items()):
        h.update(k.encode())
        h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def place_ddp(cluster):
    rc, out, err = cluster.cli("upload-source", DDP_DIR, "--to", DDP_CODE)
    expect(rc == 0 and out.strip() == DDP_CODE + "sourcedir.tar.gz",
           "trainctl upload-source: exit %d: %s %s" % (rc, out, err))
    rc, out, err = cluster.cli("cp", DIGITS, DATA_URI + "digits.csv.gz")
    expect(rc == 0, "trainctl cp: exit %d: %s %s" % (rc, out, err))
    expect(os.path.exists(cluster.s3_path(DATA_URI + "digits.csv.gz")), "digits.csv.gz is not in the store")


def ddp_request(name, count):
    with open(os.path.join(DDP_DIR, "job.json")) as f:
        req = json.load(f)
    req["TrainingJobName"] = name
    req["RoleArn"] = ROLE
    hp = req["HyperParameters"]
    expect(hp.get("sagemaker_torch_distributed_enabled") == "true",
           "job.json does not enable torch_distributed: %s" % hp)
    hp["sagemaker_submit_directory"] = json.dumps(DDP_CODE + "sourcedir.tar.gz")
    hp["hash-weights"] = "true"
    hp["marker"] = json.dumps(name)
    req["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] = DATA_URI
    req["OutputDataConfig"] = {"S3OutputPath": OUT}
    req["ResourceConfig"] = {"InstanceType": ITYPE, "InstanceCount": count, "VolumeSizeInGB": 1}
    req["StoppingCondition"] = {"MaxRuntimeInSeconds": 240}
    return req


def check_ddp(cluster, job):
    import torch
    p = []
    d = job.desc
    final = {m["MetricName"]: m["Value"] for m in d.get("FinalMetricDataList") or []}
    acc = final.get("validation:accuracy")
    if acc is None or acc < 0.9:
        p.append("FinalMetricDataList validation:accuracy %r (expected >= 0.9): %s" % (acc, final))
    if not final.get("throughput:steps_per_s"):
        p.append("no throughput:steps_per_s in FinalMetricDataList: %s" % final)
    model = tar_files(cluster, "%s/%s/output/model.tar.gz" % (OUT, job.name))
    if sorted(model) != ["metrics.json", "model.pt"]:
        p.append("model.tar.gz holds %s, expected rank 0's metrics.json and model.pt only" % sorted(model))
    metrics = json.loads(model["metrics.json"]) if "metrics.json" in model else {}
    if metrics.get("world") != job.count or (metrics.get("accuracy") or 0) < 0.9:
        p.append("metrics.json: %s" % metrics)
    output = tar_files(cluster, "%s/%s/output/output.tar.gz" % (OUT, job.name))
    hashes = {}
    for r in range(job.count):
        data = output.get("weights-rank%d.json" % r)
        if data is None:
            p.append("no weights-rank%d.json in output.tar.gz (%s)" % (r, sorted(output)))
            continue
        w = json.loads(data)
        hashes[r] = w["sha256"]
        if w.get("host") != "algo-%d" % (r + 1) or w.get("world") != job.count:
            p.append("rank %d: %s (1 process per host: rank r on algo-(r+1))" % (r, w))
    if len(set(hashes.values())) != 1:
        p.append("the ranks' final weights differ: %s" % hashes)
    if "model.pt" in model and hashes:
        sd = torch.load(io.BytesIO(model["model.pt"]))
        saved = state_hash(sd)
        if saved != hashes.get(0):
            p.append("model.pt's weights (sha256 %s) are not rank 0's final ones (%s)" % (saved[:16],
                                                                                      hashes.get(0, "")[:16]))
    rc, out, err = cluster.cli("logs", job.name)
    for pat in (r"^\[algo-1\] final validation:accuracy=0\.9\d+$", r"^\[algo-1\] throughput steps_per_s=[0-9.]+ "):
        if not re.search(pat, out, re.M):
            p.append("trainctl logs: no line matching %r" % pat)
    expect(not p, "\n".join(p))
    log("%s: %d hosts, accuracy %.4f, %s steps/s (rank 0), %.1f s in all, weights %s on every rank" % (
        job.name, job.count, acc or 0, final.get("throughput:steps_per_s"), job.seconds,
        (hashes.get(0) or "")[:16]))


# ---------------------------------------------------------------- the C examples

def examples_missing():
    """Why the C examples cannot run here, or None."""
    for prog in ("mlp_dp", "mlp_pipeline", "param_server"):
        if not os.access(os.path.join(EXAMPLES, prog), os.X_OK):
            return "no %s (make examples)" % os.path.join(EXAMPLES, prog)
    for f in FMNIST_FILES:
        if not os.access(os.path.join(FMNIST, f), os.R_OK):
            return "no %s (apt-get install dataset-fashion-mnist)" % os.path.join(FMNIST, f)
    return None


class Reference:
    """A single-process run of an example outside trainctl, as
    tests/examples runs one: SM_HPS, SM_CHANNEL_TRAIN, SM_MODEL_DIR,
    SM_OUTPUT_DATA_DIR and TRAINCTL_CHECKPOINT_DIR and nothing else of a
    job in its environment. Started at once, waited for when needed."""

    def __init__(self, prog, hps, tmp):
        self.prog, self.hps = prog, hps
        self.dir = os.path.join(tmp, prog)
        env = {"PATH": "/usr/bin:/bin", "HOME": self.dir, "LANG": "C", "SM_HPS": json.dumps(hps),
               "SM_CHANNEL_TRAIN": FMNIST}
        for k, sub in (("SM_MODEL_DIR", "model"), ("SM_OUTPUT_DATA_DIR", "out"), ("TRAINCTL_CHECKPOINT_DIR", "ckpt")):
            env[k] = os.path.join(self.dir, sub)
            os.makedirs(env[k])
        env["ASAN_OPTIONS"] = EX_ASAN
        self.env = env
        self.argv = [os.path.join(EXAMPLES, prog), "train"]
        self.log = open(os.path.join(self.dir, "log"), "w+b")
        self.t = time.time()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env, cwd=self.dir)
        self.result = None
        self.ended = None
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self):
        self.proc.wait()
        self.ended = time.time()

    def wait(self, timeout=120):
        if self.result is None:
            try:
                rc = self.proc.wait(max(1, timeout - (time.time() - self.t)))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                rc = "killed after %d s" % timeout
            self.seconds = (self.ended or time.time()) - self.t
            self.log.seek(0)
            out = self.log.read().decode("utf-8", "replace")
            self.log.close()
            try:
                with open(os.path.join(self.env["SM_MODEL_DIR"], "model.bin"), "rb") as f:
                    model = f.read()
            except OSError:
                model = None
            self.result = (rc, out, model)
        return self.result

    def how(self):
        """A shell command line that repeats the run."""
        return "env -i %s %s" % (" ".join("%s=%s" % (k, shlex.quote(v)) for k, v in sorted(self.env.items())),
                                 " ".join(self.argv))

    def get(self):
        """(model.bin, output); Fail when the run failed."""
        rc, out, model = self.wait()
        expect(rc == 0 and model is not None, "the single-process %s run outside trainctl: exit %s, model.bin %s\n"
               "%s\n--- its output ---\n%s" % (self.prog, rc, "written" if model else "missing", self.how(),
                                               out[-2000:]))
        return model, out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.log.closed:
            self.log.close()


class References:
    """The single-process runs the jobs are compared with, started first
    so that they overlap the refusals, the bring-up and the first probes."""

    def __init__(self):
        self.why = examples_missing()
        self.tmp = None
        self.runs = {}
        if self.why:
            return
        self.tmp = tempfile.mkdtemp(prefix="tcdi-examples.")
        self.runs["mlp_dp"] = Reference("mlp_dp", EX_HPS, self.tmp)
        self.runs["mlp_pipeline"] = Reference("mlp_pipeline", dict(EX_HPS, **EX_PIPE_HPS), self.tmp)

    def close(self):
        for r in self.runs.values():
            r.stop()
        if self.tmp:
            if os.environ.get("TRAINCTL_TEST_KEEP") == "1":
                log("keeping %s" % self.tmp)
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)


def load_model_bin(data, what):
    """model.bin (examples/mlp_dp/README.md): layer sizes and weights."""
    expect(data[:8] == b"TCMLP001", "%s: not a model.bin (begins %r)" % (what, data[:8]))
    nl, = struct.unpack_from("<I", data, 8)
    expect(1 <= nl <= 8, "%s: %d layers" % (what, nl))
    sizes = struct.unpack_from("<%dI" % (nl + 1), data, 12)
    off = 12 + 4 * (nl + 1)
    want = sum(sizes[i] * sizes[i + 1] + sizes[i + 1] for i in range(nl))
    expect(len(data) - off == 4 * want, "%s: %d bytes of weights, want %d" % (what, len(data) - off, 4 * want))
    return sizes, struct.unpack_from("<%df" % want, data, off)


def model_diff(a, b, what_a, what_b):
    """The largest |difference| of two model.bin's weights (Fail when the
    layers differ)."""
    sa, wa = load_model_bin(a, what_a)
    sb, wb = load_model_bin(b, what_b)
    expect(sa == sb, "layers differ: %s %s, %s %s" % (what_a, sa, what_b, sb))
    return max(abs(x - y) for x, y in zip(wa, wb)), len(wa)


def place_fmnist(cluster):
    for f in FMNIST_FILES:
        rc, out, err = cluster.cli("cp", os.path.join(FMNIST, f), FMNIST_URI + f)
        expect(rc == 0, "trainctl cp %s %s: exit %d: %s %s" % (f, FMNIST_URI + f, rc, out, err))
        path = cluster.s3_path(FMNIST_URI + f)
        expect(os.path.exists(path) and os.path.getsize(path) == os.path.getsize(os.path.join(FMNIST, f)),
               "%s is not in the store (or not whole) after trainctl cp" % (FMNIST_URI + f))


# With `make check` the examples are sanitized builds: OpenMPI and hwloc
# leave their own allocations at exit, which LeakSanitizer would report
# (and fail the run with); every other check stays on.
EX_ASAN = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS", ""), "detect_leaks=0"]))


def example_request(name, prog, count, hps):
    """A CreateTrainingJob of an example: its binary as a file:// image,
    the data as the train channel, no MetricDefinitions (libtrainer's
    #metric lines are metrics of every job)."""
    raw = {k: json.dumps(v) for k, v in EX_HPS.items()}
    raw.update(hps)
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "file://" + os.path.join(EXAMPLES, prog),
                                   "TrainingInputMode": "File"},
        "RoleArn": ROLE,
        "HyperParameters": raw,
        "InputDataConfig": [{"ChannelName": "train", "ContentType": "application/x-idx",
                             "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": FMNIST_URI,
                                                             "S3DataDistributionType": "FullyReplicated"}}}],
        "OutputDataConfig": {"S3OutputPath": OUT},
        "ResourceConfig": {"InstanceType": ITYPE, "InstanceCount": count, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
        "Environment": {"ASAN_OPTIONS": EX_ASAN},
    }


# A line of the job's own output as `trainctl logs` shows it: the host's
# stream, then (MPI) mpirun's tag of the rank.
# trainctl logs prefixes each line with its host only when several hosts
# wrote something; without the prefix the line is the only stream's.
EX_LINE = r"^(?:\[(algo-\d+)\] )?(?:\[1,(\d+)\]<stdout>:)?"


def check_example_out(cluster, job):
    """Held-out accuracy from the final line; model.tar.gz holds model.bin."""
    rc, out, err = cluster.cli("logs", job.name)
    expect(rc == 0, "trainctl logs %s: exit %d: %s" % (job.name, rc, err[-500:]))
    job.logs = out
    p = []
    # trainctl logs prefixes lines by host only when several hosts wrote
    # something (a parameter-server worker may print nothing): a line
    # without the prefix is the only stream's, so ask for algo-1's alone.
    rc1, out1, err1 = cluster.cli("logs", job.name, "--host", "algo-1")
    expect(rc1 == 0, "trainctl logs --host algo-1 %s: exit %d: %s" % (job.name, rc1, err1[-500:]))
    finals = [("algo-1", m.group(1), float(m.group(2))) for m in
              re.finditer(r"^(?:\[algo-1\] )?(?:\[1,(\d+)\]<stdout>:)?final validation:accuracy=([0-9.]+)$",
                          out1, re.M)]
    others = [m.group(0) for m in re.finditer(r"^\[(algo-[2-9]\d*)\] .*final validation:accuracy=", out, re.M)]
    if others:
        p.append("'final validation:accuracy=' also from other hosts: %s" % others)
    if len(finals) != 1 or finals[0][0] != "algo-1" or finals[0][1] not in (None, "0"):
        p.append("'final validation:accuracy=' lines %s: expected one, from algo-1 (rank 0)" % finals)
    job.acc = finals[0][2] if finals else None
    if job.acc is None or job.acc < EX_MIN_ACC:
        p.append("held-out accuracy %s, expected >= %s" % (job.acc, EX_MIN_ACC))
    model = tar_files(cluster, "%s/%s/output/model.tar.gz" % (OUT, job.name))
    job.model = model.get("model.bin")
    if sorted(model) != ["model.bin"]:
        p.append("model.tar.gz holds %s, expected model.bin (rank 0's / the chief's) only" % sorted(model))
    expect(not p, "\n".join(p) + "\n--- trainctl logs %s (end) ---\n%s" % (job.name, out[-2500:]))
    log("%s: accuracy %.4f" % (job.name, job.acc))


def check_same_as(job, other, what, tol):
    """job's model.bin within tol of other's (bytes or a Job)."""
    data = other.model if isinstance(other, Job) else other
    expect(data is not None, "no model of %s to compare with" % what)
    d, n = model_diff(data, job.model, what, job.name)
    expect(d <= tol, "%s's model.bin is %g from %s's at most (over %d weights), tolerance %g" % (
        job.name, d, what, n, tol))
    log("%s: max |diff| %g from %s over %d weights (tolerance %g)" % (job.name, d, what, n, tol))


def hash_lines(job, pattern):
    text = job.logs or ""
    sole = None if re.search(r"^\[algo-\d+\] ", text, re.M) else "algo-1"
    return [((m.group(1) or sole),) + m.groups()[1:] for m in re.finditer(EX_LINE + pattern, text, re.M)]


def check_dp_hashes(job, ref_out):
    """debug-hash: every rank printed its final weights' hash, all equal."""
    got = hash_lines(job, r"rank (\d+) weights-hash ([0-9a-f]{16})$")
    ranks = sorted(int(g[2]) for g in got)
    expect(ranks == list(range(job.count)), "weights-hash lines of ranks %s, expected 0..%d once each: %s" % (
        ranks, job.count - 1, got))
    wrong_tag = [g for g in got if g[0] != "algo-1" or g[1] != g[2]]
    expect(not wrong_tag, "weights-hash lines not in algo-1's stream with their rank's mpirun tag: %s" % wrong_tag)
    hashes = {g[3] for g in got}
    expect(len(hashes) == 1, "the ranks' final weights differ: %s" % sorted((int(g[2]), g[3]) for g in got))
    ref = re.findall(r"^rank 0 weights-hash ([0-9a-f]{16})$", ref_out, re.M)
    log("%s: %d ranks' weights-hash %s (single process: %s)" % (job.name, job.count, hashes.pop(),
                                                               ref[0] if ref else "?"))
    world = re.findall(EX_LINE + r"mlp_dp: (\d+) ranks, ", job.logs, re.M)
    expect([int(w[2]) for w in world] == [job.count], "mlp_dp's own count of ranks: %s" % world)


def check_pp_stages(job, ref_out):
    """One layer per host, and the model's hash the unsplit network's."""
    got = sorted((int(g[2]), g[3], g[4], g[5]) for g in
                 hash_lines(job, r"mlp_pipeline: rank (\d+) of (\d+) holds layers (\d+\.\.\d+) of (\d+)$"))
    want = [(r, str(job.count), "%d..%d" % (r + 1, r + 1), "3") for r in range(job.count)]
    expect(got == want, "'holds layers' lines %s, expected %s" % (got, want))
    mine = [g[2] for g in hash_lines(job, r"model weights-hash ([0-9a-f]{16})$")]
    ref = re.findall(r"^model weights-hash ([0-9a-f]{16})$", ref_out, re.M)
    expect(len(mine) == 1 and mine == ref, "model weights-hash %s, the single-process run's %s" % (mine, ref))


def check_ps_roles(job, k):
    """k servers and job.count workers, every server saw all of them done."""
    chief = hash_lines(job, r"worker 0 \(chief\): (\d+) workers, (\d+) servers, ")
    expect([(g[0], int(g[2]), int(g[3])) for g in chief] == [("algo-1", job.count, k)],
           "the chief's line: %s, expected algo-1 with %d workers and %d servers" % (chief, job.count, k))
    done = sorted((g[0], int(g[2])) for g in
                  hash_lines(job, r"ps (\d+): all %d workers done at step %d$" % (job.count, EX_STEPS)))
    want = [("algo-%d" % (i + 1), i) for i in range(k)]
    expect(done == want, "'ps i: all %d workers done at step %d' from %s, expected %s" % (
        job.count, EX_STEPS, done, want))


def check_example_metrics(jobs):
    """Every example job's FinalMetricDataList has libtrainer's
    train:loss and validation:accuracy, the values of its last #metric
    lines, though the requests have no MetricDefinitions."""
    p = []
    for job in jobs:
        final = {m["MetricName"]: m["Value"] for m in (job.desc or {}).get("FinalMetricDataList") or []}
        for name in ("train:loss", "validation:accuracy"):
            lines = [float(g[2]) for g in hash_lines(job, r"#metric %s=(\S+) step=\d+$" % re.escape(name))]
            if not lines:
                p.append("%s: no '#metric %s=' line in trainctl logs" % (job.name, name))
            elif name not in final:
                p.append("%s: FinalMetricDataList has no %s (has %s), the logs %d '#metric %s=' lines" % (
                    job.name, name, sorted(final), len(lines), name))
            elif abs(final[name] - lines[-1]) > 1e-6 * max(1.0, abs(lines[-1])):
                p.append("%s: FinalMetricDataList %s=%r, the last #metric line says %r" % (
                    job.name, name, final[name], lines[-1]))
        acc = final.get("validation:accuracy")
        if acc is not None and job.acc is not None and abs(acc - job.acc) > 6e-5:
            p.append("%s: FinalMetricDataList validation:accuracy %r, the final line %.4f" % (job.name, acc, job.acc))
    expect(jobs, "no example job got this far")
    expect(not p, "\n".join(p))
    log("FinalMetricDataList: %s" % "; ".join("%s %s" % (j.name, {m["MetricName"]: m["Value"] for m in
                                                                  j.desc.get("FinalMetricDataList") or []})
                                             for j in jobs))


def examples_section(tap, cluster, sm, run_id, jobs, refs):
    """The C examples under trainctl on the cluster, compared with
    single-process runs outside it."""
    if refs.why:
        tap.skip("the C examples (mlp_dp, mlp_pipeline, param_server) on the cluster", refs.why)
        return
    have_mpi = shutil.which("mpirun") and shutil.which("orted")

    def ref_ok(prog):
        def fn():
            r = refs.runs[prog]
            model, out = r.get()
            acc = re.findall(r"^final validation:accuracy=([0-9.]+)$", out, re.M)
            expect(acc and float(acc[-1]) >= EX_MIN_ACC, "%s alone: accuracy %s, expected >= %s\n%s" % (
                prog, acc, EX_MIN_ACC, out[-1500:]))
            log("%s alone (outside trainctl): accuracy %s in %.1f s" % (prog, acc[-1], r.seconds))
        return fn
    ref_dp = tap.case("examples: a single-process mlp_dp run outside trainctl: exit 0, model.bin, accuracy >= %s"
                      % EX_MIN_ACC, ref_ok("mlp_dp"))
    ref_pp = tap.case("examples: a single-process mlp_pipeline (784-128-64-10) run outside trainctl: exit 0, "
                      "model.bin, accuracy >= %s" % EX_MIN_ACC, ref_ok("mlp_pipeline"))
    if not tap.case("examples: Fashion-MNIST (%s) uploaded to %s with trainctl cp" % (FMNIST, FMNIST_URI),
                    place_fmnist, cluster):
        return
    done = []

    def example(label, prog, mode, count, hps, checks):
        name = "dist-%s-%s" % (label, run_id)
        job = Job(name, mode, count, hps)
        job.model = job.logs = job.acc = None

        def go():
            run_job(cluster, sm, job, example_request(name, prog, count, hps), timeout=240)
        if tap.case("%s: %s in %s mode on %d hosts Completed" % (label, prog, mode, count), go):
            if tap.case("%s: held-out accuracy >= %s (the final line, in algo-1's stream), model.tar.gz holds "
                        "model.bin" % (label, EX_MIN_ACC), check_example_out, cluster, job):
                done.append(job)
                for title, fn in checks:
                    tap.case("%s: %s" % (label, title), fn, job)
        tap.case("%s: no process of the job left on any host" % label, check_no_leftovers, cluster, job)
        jobs[label] = job
        return job if job.model else None

    def need(ok, what):
        def fn(*a):
            expect(ok, "needs %s, which failed" % what)
        return fn

    dp_jobs = {}
    if not have_mpi:
        tap.skip("examples: mlp_dp and mlp_pipeline in MPI mode", "no mpirun/orted (apt-get install openmpi-bin)")
    else:
        for count in (2, 3):
            ref = refs.runs["mlp_dp"]
            dp_jobs[count] = example(
                "exdp%d" % count, "mlp_dp", "mpi", count,
                {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "1"}, [
                    ("model.bin within %g of the single-process run's (the same global batch)" % EX_TOL,
                     (lambda j, ref=ref: check_same_as(j, ref.get()[0], "mlp_dp alone", EX_TOL)) if ref_dp
                     else need(False, "the single-process mlp_dp run")),
                    ("every rank's final weights the same (debug-hash), %d ranks" % count,
                     lambda j, ref=ref: check_dp_hashes(j, ref.wait()[1]))])
        ref = refs.runs["mlp_pipeline"]
        example("expp2", "mlp_pipeline", "mpi", 2,
                {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "1",
                 "hidden": json.dumps(EX_PIPE_HPS["hidden"])}, [
                    ("model.bin equals the unsplit network's (the single-process run) exactly",
                     (lambda j: check_same_as(j, ref.get()[0], "mlp_pipeline alone", 0.0)) if ref_pp
                     else need(False, "the single-process mlp_pipeline run"))])
        example("expp3", "mlp_pipeline", "mpi", 3,
                {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "1",
                 "hidden": json.dumps(EX_PIPE_HPS["hidden"])}, [
                    ("one layer per host (rank r holds layer r+1 of 3)", lambda j: check_pp_stages(j, ref.wait()[1])),
                    ("model.bin equals the unsplit network's (the single-process run) exactly",
                     (lambda j: check_same_as(j, ref.get()[0], "mlp_pipeline alone", 0.0)) if ref_pp
                     else need(False, "the single-process mlp_pipeline run"))])
    example("exps2", "param_server", "parameter_server", 2,
            {"sagemaker_parameter_server_enabled": "true", "sagemaker_trainctl_parameter_servers": "1"}, [
                ("model.bin within %g of the single-process mlp_dp run's" % EX_TOL,
                 (lambda j: check_same_as(j, refs.runs["mlp_dp"].get()[0], "mlp_dp alone", EX_TOL)) if ref_dp
                 else need(False, "the single-process mlp_dp run"))])
    dp3 = dp_jobs.get(3)
    example("exps3", "param_server", "parameter_server", 3,
            {"sagemaker_parameter_server_enabled": "true", "sagemaker_trainctl_parameter_servers": "2"}, [
                ("the chief on algo-1 with 3 workers and 2 servers; servers on algo-1 and algo-2 each saw all 3 "
                 "workers done at step %d" % EX_STEPS, lambda j: check_ps_roles(j, 2)),
                ("model.bin within %g of mlp_dp's on 3 hosts (synchronous SGD over the same global batches)"
                 % EX_TOL, (lambda j: check_same_as(j, dp3, dp3.name, EX_TOL)) if dp3
                 else need(False, "the mlp_dp job on 3 hosts")),
                ("model.bin within %g of the single-process mlp_dp run's" % EX_TOL,
                 (lambda j: check_same_as(j, refs.runs["mlp_dp"].get()[0], "mlp_dp alone", EX_TOL)) if ref_dp
                 else need(False, "the single-process mlp_dp run"))])
    tap.case("examples: FinalMetricDataList of every example job has libtrainer's train:loss and "
             "validation:accuracy (no MetricDefinitions), the last #metric lines' values", check_example_metrics, done)


# ---------------------------------------------------------------- failures

def probe_procs(cluster, name):
    """The probe processes (ranks) of job name that are alive."""
    tag = ("\0TRAINCTL_JOB=%s\0" % name).encode()
    return [p for p in scan_procs() if tag in p["env"] + b"\0" and "dist_probe.py" in p["cmd"]
            and not p["cmd"].startswith(("/usr/bin/mpirun", "mpirun")) and p["state"] != "Z"]


def mpi_failures(tap, cluster, sm, run_id, jobs):
    """A rank that fails ends an MPI job (orte_abort_on_non_zero_status)
    and StopTrainingJob ends one; either way nothing of it is left: not
    mpirun, not the launchers, not the workers, not orted, not a rank."""
    name = "dist-mpifail-%s" % run_id
    hps = {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2",
           "fail_rank": "3", "fail_code": "3", "sleep": "60"}
    job = Job(name, "mpi", 3, hps)

    def failed():
        t = time.time()
        sm.create_training_job(**probe_request(name, 3, hps))
        d, seen = wait_job(sm, name, 60)
        job.seconds = time.time() - t
        expect(d["TrainingJobStatus"] == "Failed", "%s ended %s (seen %s)" % (name, d["TrainingJobStatus"],
                                                                           " -> ".join(seen)))
        expect(job.seconds < 30, "%s took %.1f s to fail: the other ranks (sleeping 60 s) were not stopped"
               % (name, job.seconds))
        reason = d.get("FailureReason") or ""
        expect(reason.startswith("AlgorithmError") and re.search(r"\b3\b", reason),
               "FailureReason %r: expected an AlgorithmError with the rank's exit status 3" % reason)
        log("%s Failed in %.1f s: %s" % (name, job.seconds, reason))
    tap.case("mpi: rank 3 exits 3, the others sleep: mpirun aborts, the job Failed (AlgorithmError, status 3) "
             "within 30 s", failed)
    tap.case("mpi: no process of the failed job left on any host", check_no_leftovers, cluster, job)
    jobs["mpifail"] = job

    name = "dist-mpistop-%s" % run_id
    hps = {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2", "sleep": "60"}
    job2 = Job(name, "mpi", 3, hps)

    def stopped():
        t = time.time()
        sm.create_training_job(**probe_request(name, 3, hps))
        deadline = time.time() + 40
        ranks = []
        while time.time() < deadline:
            ranks = probe_procs(cluster, name)
            if len(ranks) >= 6:
                break
            time.sleep(0.1)
        expect(len(ranks) == 6, "%d of 6 ranks seen running: %s" % (len(ranks), [r["cmd"][:80] for r in ranks]))
        time.sleep(0.5)
        t_stop = time.time()
        sm.stop_training_job(TrainingJobName=name)
        d, seen = wait_job(sm, name, 40)
        job2.seconds = time.time() - t
        expect(d["TrainingJobStatus"] == "Stopped", "%s ended %s (seen %s)" % (name, d["TrainingJobStatus"],
                                                                            " -> ".join(seen)))
        log("%s: 6 ranks running %.1f s after create; Stopped %.1f s after StopTrainingJob" % (
            name, t_stop - t, time.time() - t_stop))
    tap.case("mpi: StopTrainingJob while 6 ranks run: Stopped", stopped)
    tap.case("mpi: no process of the stopped job left on any host", check_no_leftovers, cluster, job2)
    jobs["mpistop"] = job2


# ---------------------------------------------------------------- main

def skip_reason():
    if os.geteuid() != 0:
        return "needs root (CAP_NET_ADMIN) for network namespaces"
    if not os.access("/usr/sbin/sshd", os.X_OK):
        return "no /usr/sbin/sshd (apt-get install openssh-server)"
    try:
        import botocore  # noqa: F401
    except ImportError:
        return "no botocore (run with /usr/bin/python3)"
    return None


def have_torch():
    try:
        import torch.distributed as dist  # noqa: F401
        return dist.is_available() and dist.is_gloo_available()
    except Exception:
        return False


def main():
    reason = skip_reason()
    if reason:
        print("1..0 # SKIP %s" % reason)
        return 0
    tap = sc.Tap()
    cluster = Cluster()
    t_start = time.time()
    run_id = "%x" % (int(time.time() * 1000) % 0xfffffff)
    refs = None
    try:
        # The examples' single-process runs overlap the refusals, the
        # bring-up and the first probes.
        refs = References()
        t = time.time()
        refusal_cases(tap, run_id)
        log("refusals: %.1f s" % (time.time() - t))
        run(tap, cluster, run_id, refs)
    except Exception as e:
        tap.ok(False, "the test ran to its end", "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()))
    finally:
        if refs:
            refs.close()
        if os.environ.get("TRAINCTL_TEST_KEEP") == "1" and os.path.isdir(STATE):
            log("keeping %s" % STATE)
        t = time.time()
        rc, out, err = cluster.down()
        took = time.time() - t
        problems = []
        if rc != 0:
            problems.append("cluster.sh down: exit %d: %s%s" % (rc, out, err))
        names = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE).stdout.decode()
        ours = [x.split()[0] for x in names.splitlines() if x.startswith(PREFIX + "-")]
        if ours:
            problems.append("namespaces left: %s" % ours)
        links = subprocess.run(["ip", "-o", "link", "show"], stdout=subprocess.PIPE).stdout.decode()
        left_links = [x.split(":")[1].strip() for x in links.splitlines()
                      if re.match(r"^\d+: %s-" % PREFIX, x)]
        if left_links:
            problems.append("links left: %s" % left_links)
        etc = glob.glob("/etc/netns/%s-*" % PREFIX)
        if etc:
            problems.append("/etc/netns entries left: %s" % etc)
        procs = cluster.procs_in_state()
        if procs:
            problems.append("processes left:\n" + "\n".join(procs))
        if os.environ.get("TRAINCTL_TEST_KEEP") != "1" and os.path.exists(STATE):
            problems.append("%s is still there" % STATE)
        tap.ok(not problems, "cluster.sh down: no process, namespace, link or /etc/netns entry left (%.2f s)"
               % took, "\n".join(problems))
        log("whole run %.1f s" % (time.time() - t_start))
    return tap.finish()


def run(tap, cluster, run_id, refs):
    err = cluster.up()
    if not tap.ok(err is None, "cluster.sh up --hosts %d --prefix %s --net %s.0/24: every host ready"
                  % (N_HOSTS, PREFIX, NET), err):
        return
    place_probe(cluster)
    sm = cluster.client()
    jobs = {}

    def probe(label, mode, count, hps, checks, n_procs, foreign=None):
        """One probe job: Completed, the checks, no process left."""
        name = "dist-%s-%s" % (label, run_id)
        hps = dict(hps)
        if foreign and foreign.recs:
            hps["foreign_url"] = json.dumps(env_of(foreign.recs[0], "TRAINCTL_RDZV_URL"))
            hps["foreign_token"] = json.dumps(env_of(foreign.recs[0], "TRAINCTL_RDZV_TOKEN"))
        job = Job(name, mode, count, hps)

        def go():
            run_job(cluster, sm, job, probe_request(name, count, hps))
            load_records(cluster, job)
        ok = tap.case("%s: %d-host job %s Completed" % (label, count, name), go)
        if ok:
            tap.case("%s: %d processes; TRAINCTL_*, MASTER_ADDR/PORT, GLOO/NCCL_SOCKET_IFNAME=eth0, SM_HOSTS, "
                     "hostname and address of the host each runs on" % (label, n_procs),
                     check_common, cluster, job, n_procs)
            for title, fn in checks:
                tap.case("%s: %s" % (label, title), fn, cluster, job)
            tap.case("%s: the rendezvous store from inside the job (PUT, GET with wait, 64 KiB, 404 after "
                     "wait_ms, 401 for a wrong token, attempt+1%s)" % (
                         label, ", another job's token both ways" if foreign else ""),
                     check_rdzv, cluster, job, foreign)
        tap.case("%s: no process of the job left on any host" % label, check_no_leftovers, cluster, job)
        jobs[label] = job
        return job if ok else None

    # -- none
    none = probe("none", "none", 3, {"put_delay": "1.0"}, [
        ("one process per host, no RANK/WORLD_SIZE; algo-1 listens on MASTER_ADDR:MASTER_PORT, the others "
         "reach it from their own addresses", check_none)], 3)

    # -- torch_distributed, default processes per host (no GPUs: 1), 2 hosts
    t1 = probe("torch1", "torch_distributed", 2, {"sagemaker_torch_distributed_enabled": "true"}, [
        ("default 1 process per host (no GPUs): RANK, LOCAL_RANK, NODE_RANK, WORLD_SIZE, ROLE_*, GROUP_*, "
         "TORCHELASTIC_*, no OMP_NUM_THREADS", lambda c, j: check_torch_env(c, j, 1)),
        ("rank 0 listens on MASTER_ADDR:MASTER_PORT, rank 1 reaches it", check_torch_mesh)], 2,
        foreign=none)

    def ports_differ():
        expect(none and t1, "needs both jobs")
        a, b = env_of(none.recs[0], "MASTER_PORT"), env_of(t1.recs[0], "MASTER_PORT")
        expect(a != b, "both jobs got MASTER_PORT %s" % a)
        log("MASTER_PORT: %s %s, %s %s" % (none.name, a, t1.name, b))
    tap.case("MASTER_PORT differs between two jobs", ports_differ)

    # -- torch_distributed, 2 processes per host, all_reduce over gloo
    if have_torch():
        probe("torch2", "torch_distributed", 3, {"sagemaker_torch_distributed_enabled": "true",
                                                  "sagemaker_trainctl_processes_per_host": "2",
                                                  "allreduce": "true"}, [
            ("2 processes per host: RANK 0..5 once each, LOCAL_RANK 0..1 per host, NODE_RANK = host index, "
             "WORLD_SIZE 6, LOCAL_WORLD_SIZE 2, OMP_NUM_THREADS=1", lambda c, j: check_torch_env(c, j, 2)),
            ("torch.distributed gloo env:// over the hosts: all_reduce and all_gather of 6 ranks",
             check_allreduce)], 6, foreign=none)
    else:
        tap.skip("torch2: torch_distributed with 2 processes per host", "no torch with gloo in /usr/bin/python3")

    # -- mpi
    if shutil.which("mpirun") and shutil.which("orted"):
        probe("mpi", "mpi", 3, {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2",
                                "sagemaker_mpi_custom_mpi_options": json.dumps(MPI_CUSTOM)}, [
            ("OMPI_COMM_WORLD_RANK 0..5, SIZE 6, LOCAL_RANK 0..1 per host, map-by slot, each rank's "
             "SM_CURRENT_HOST its own; algo-1's ranks children of mpirun, the others' of orted; the custom "
             "-x reaches every rank", lambda c, j: check_mpi(c, j, 2)),
            ("mpirun's command line: --host <algo-1 addr>:2,algo-2:2,algo-3:2 -np 6 and the contract's options, "
             "the custom options, the program last", lambda c, j: check_mpirun(c, j, 2)),
            ("all output in algo-1's log stream, tagged [1,<rank>]<stdout>:", lambda c, j: check_mpi_logs(c, j, 2))],
            6, foreign=t1)
        probe("mpinp", "mpi", 3, {"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2",
                                  "sagemaker_mpi_num_processes": "3"}, [
            ("sagemaker_mpi_num_processes 3 of 6 slots: ranks 0..2, two on algo-1, one on algo-2",
             lambda c, j: check_mpi(c, j, 2, 3)),
            ("mpirun's command line says -np 3", lambda c, j: check_mpirun(c, j, 2, 3))], 3)
    else:
        tap.skip("mpi: 2 processes per host", "no mpirun/orted (apt-get install openmpi-bin)")

    # -- parameter_server, K=2 of 3
    probe("ps", "parameter_server", 3, {"sagemaker_parameter_server_enabled": "true",
                                        "sagemaker_trainctl_parameter_servers": "2"}, [
        ("TF_CONFIG exactly (master, 2 ps, 2 workers), tasks by host and rank, TRAINCTL_ROLE ps=2 worker=3",
         lambda c, j: check_tf_config(c, j, 2)),
        ("every process listens on its TF_CONFIG address and reaches the 4 others", check_tf_mesh)], 5,
        foreign=none)

    # -- multi_worker_mirrored
    probe("mwms", "multi_worker_mirrored_strategy", 3,
          {"sagemaker_multi_worker_mirrored_strategy_enabled": "true"}, [
              ("TF_CONFIG exactly (cluster.worker only, one per host), task worker <host index>",
               check_tf_config),
              ("every worker listens on its TF_CONFIG address and reaches the 2 others", check_tf_mesh)], 3,
          foreign=none)

    # -- the PyTorch DDP example
    if not have_torch():
        tap.skip("examples/pytorch_ddp on 2 and 3 hosts", "no torch with gloo in /usr/bin/python3")
    elif tap.case("examples/pytorch_ddp placed with trainctl upload-source, digits with trainctl cp",
                  place_ddp, cluster):
        for count in (2, 3):
            name = "dist-ddp%d-%s" % (count, run_id)
            job = Job(name, "torch_distributed", count, {})

            def go(job=job, count=count):
                run_job(cluster, sm, job, ddp_request(job.name, count), timeout=200)
            if tap.case("ddp%d: examples/pytorch_ddp (its job.json) on %d hosts Completed" % (count, count), go):
                tap.case("ddp%d: accuracy >= 0.9, only rank 0's model, every rank's final weights identical and "
                         "saved, throughput logged" % count, check_ddp, cluster, job)
            tap.case("ddp%d: no process of the job left on any host" % count, check_no_leftovers, cluster, job)
            jobs["ddp%d" % count] = job

    # -- the C examples (libtrainer) on the same cluster
    examples_section(tap, cluster, sm, run_id, jobs, refs)

    if shutil.which("mpirun") and shutil.which("orted"):
        mpi_failures(tap, cluster, sm, run_id, jobs)

    tap.case("the hosts run nothing but sshd and their agent", check_hosts_quiet, cluster)
    log("jobs: %s" % ", ".join("%s %.1f s" % (j.name, j.seconds or 0) for j in jobs.values()))


if __name__ == "__main__":
    sys.exit(main())
