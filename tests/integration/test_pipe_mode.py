#!/usr/bin/python3
"""Pipe mode and TensorBoardOutputConfig end to end (docs/pipe-mode.md).

Starts its own `trainctld --local-hosts 2` (test_local_jobs.py's Cluster)
and runs tests/integration/pipe_reader.py as a file:// executable through
boto3:

- TrainingInputMode Pipe on 2 hosts, ShardedByS3Key: each host reads
  train_0 and train_1, and each epoch holds exactly its shard's objects,
  concatenated in key order;
- a channel-level InputMode Pipe beside a File channel, on 2 hosts;
- RecordWrapperType RecordIO and CompressionType Gzip, and a reader that
  closes an epoch early and leaves the last pipe open (the job still ends);
- TensorBoardOutputConfig: an events file shows up under S3OutputPath while
  the job runs; at the end every file is there with its final bytes.

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_pipe_mode.py
"""
import gzip
import hashlib
import itertools
import json
import os
import random
import signal
import struct
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import localjobs as tlj  # noqa: E402  (Cluster, Pool, read_tar, ...)

sc = tlj.sc
Fail, expect, short = sc.Fail, sc.expect, sc.short
tlj.N_HOSTS = 2
READER = os.path.join(HERE, "pipe_reader.py")
BUCKET = tlj.BUCKET
OUT = tlj.OUT
PIPE_DATA = "s3://%s/pipe/data/" % BUCKET
FILE_DATA = "s3://%s/pipe/files/" % BUCKET
GZ_DATA = "s3://%s/pipe/gz/" % BUCKET
MANIFEST = "s3://%s/pipe/manifest.json" % BUCKET
T0 = time.time()


def sha(b):
    return hashlib.sha256(b).hexdigest()


def recordio(objs):
    out = b""
    for data in objs:
        out += struct.pack("<II", 0xced7230a, len(data)) + data + b"\0" * ((4 - len(data) % 4) % 4)
    return out


class Data:
    """The channels' objects, put into the embedded store."""

    def __init__(self, cluster):
        rnd = random.Random(7)
        self.pipe = {
            "a.bin": bytes(rnd.getrandbits(8) for _ in range(3 * 1024 * 1024 + 5)),
            "b.txt": b"bee\n" * 1000,
            "c/d.bin": bytes(rnd.getrandbits(8) for _ in range(200 * 1024 + 1)),
            "e.empty": b"",
            "f.txt": b"eff\n",
        }
        self.files = {"x.csv": b"1,2\n", "deep/y.csv": b"3,4\n"}
        raw2 = bytes(rnd.getrandbits(8) for _ in range(2 * 1024 * 1024))
        self.gz_plain = [b"hello\n" * 1000, raw2 + b"second member\n"]
        self.gz = {"p1.gz": gzip.compress(self.gz_plain[0]),
                   "p2.gz": gzip.compress(raw2) + gzip.compress(b"second member\n")}
        # A manifest lists keys in its own order.
        self.manifest_keys = ["f.txt", "a.bin", "b.txt"]
        for uri, objs in ((PIPE_DATA, self.pipe), (FILE_DATA, self.files), (GZ_DATA, self.gz)):
            root = cluster.s3_path(uri)
            for rel, data in objs.items():
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
                with open(os.path.join(root, rel), "wb") as f:
                    f.write(data)
        with open(cluster.s3_path(MANIFEST), "wb") as f:
            f.write(json.dumps([{"prefix": PIPE_DATA}] + self.manifest_keys).encode())

    def shard(self, host_index, n_hosts):
        keys = sorted(self.pipe)
        return [self.pipe[k] for i, k in enumerate(keys) if i % n_hosts == host_index]


def request(name, count, channels, job_mode="File", env=None, extra=None):
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "file://" + READER, "TrainingInputMode": job_mode},
        "RoleArn": tlj.ROLE,
        "OutputDataConfig": {"S3OutputPath": OUT},
        "ResourceConfig": {"InstanceType": tlj.ITYPE, "InstanceCount": count, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
        "Environment": dict(env or {}, PROBE_MARKER=name),
        "InputDataConfig": channels,
    }
    if not channels:
        del req["InputDataConfig"]
    req.update(extra or {})
    return req


def channel(name, uri, dist="FullyReplicated", mode=None, **more):
    c = {"ChannelName": name, "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": dist}}}
    if mode:
        c["InputMode"] = mode
    c.update(more)
    return c


class Run:
    def __init__(self, label, name, count, req, drive=None):
        self.label, self.name, self.count, self.req, self.drive = label, name, count, req, drive
        self.desc = None
        self.error = None
        self.model = None
        self.model_error = None
        self.extra = {}
        self.created_at = None
        self.notes = []
        self.seen = []

    def read(self, host):
        raw = (self.model or {}).get("read-%s.json" % host)
        expect(raw is not None, "no read-%s.json in model.tar.gz (%s; holds %s)" % (
            host, self.model_error, sorted(self.model or {})))
        return json.loads(raw)


def run(cluster, pool, job):
    sm = sc.make_client(cluster.endpoint)
    pool.acquire(job.count)
    try:
        sm.create_training_job(**job.req)
        job.created_at = time.time()
        if job.drive:
            job.drive(cluster, sm, job)
        deadline = time.time() + 240
        while True:
            job.desc = sm.describe_training_job(TrainingJobName=job.name)
            if job.desc["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
                break
            if time.time() > deadline:
                raise Fail("still %s after 240 s" % job.desc["TrainingJobStatus"])
            time.sleep(0.2)
    except Exception as e:
        job.error = "%s: %s\n%s" % (type(e).__name__, e, "".join(traceback.format_exc().splitlines(True)[-6:]))
        try:
            sm.stop_training_job(TrainingJobName=job.name)
        except Exception:
            pass
    finally:
        job.model, job.model_error = tlj.read_tar(cluster.s3_path("%s/%s/output/model.tar.gz" % (OUT, job.name)))
        pool.release(job.count)


def completed(job):
    expect(job.error is None, job.error)
    st = job.desc and job.desc["TrainingJobStatus"]
    expect(st == "Completed", "status %s: %s" % (st, short(job.desc and job.desc.get("FailureReason"))))


def check_pipe_epochs(job, ch, want_by_host, epochs=2):
    for host, want in want_by_host.items():
        rec = job.read(host)
        got = rec["pipe"].get(ch)
        exp = [[len(want), sha(want)]] * epochs
        expect(got == exp, "%s %s: read %s, expected %s" % (host, ch, got, exp))


def check_pipe_env(job, ch, hosts):
    for host in hosts:
        rec = job.read(host)
        idc = rec["idc"][ch]
        expect(idc.get("TrainingInputMode") == "Pipe", "%s inputdataconfig.json[%s] = %s" % (host, ch, idc))
        env_idc = json.loads(rec["env"]["SM_INPUT_DATA_CONFIG"])
        expect(env_idc[ch].get("TrainingInputMode") == "Pipe",
               "%s SM_INPUT_DATA_CONFIG[%s] = %s" % (host, ch, env_idc[ch]))
        path = rec["env"].get("SM_CHANNEL_" + ch.upper(), "")
        expect(path.endswith("/input/data/" + ch), "SM_CHANNEL_%s = %r" % (ch.upper(), path))
        expect(not rec["folder_exists"][ch], "%s: a folder input/data/%s exists in Pipe mode" % (host, ch))


def drive_tb(cluster, sm, job):
    """Waits for the events file under S3OutputPath while the job runs."""
    key = cluster.s3_path("s3://%s/tb/%s/events.1" % (BUCKET, job.name))
    deadline = time.time() + 120
    while not os.path.exists(key):
        d = sm.describe_training_job(TrainingJobName=job.name)
        if d["TrainingJobStatus"] != "InProgress":
            raise Fail("the job is %s and %s never appeared" % (d["TrainingJobStatus"], key))
        if time.time() > deadline:
            raise Fail("no %s after 120 s while the job runs" % key)
        time.sleep(0.2)
    d = sm.describe_training_job(TrainingJobName=job.name)
    job.extra["status_when_seen"] = d["TrainingJobStatus"]
    with open(key, "rb") as f:
        job.extra["seen_bytes"] = f.read()
    with open(job.extra["release"], "w") as f:
        f.write("go\n")


def agent_pids(cluster):
    """Processes of this cluster's agents (and their forked workers)."""
    found = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    cmd = f.read()
                if cluster.state.encode() in cmd and b"trainagent" in cmd:
                    found.add(int(d))
            except OSError:
                pass
    return found


def main():
    tap = sc.Tap()
    cluster = tlj.Cluster()
    err = cluster.start()
    if not tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
        cluster.cleanup()
        return tap.finish()
    jobs = []
    try:
        ok, text = cluster.wait_hosts()
        tap.ok(ok, "the 2 local hosts register", text)
        data = Data(cluster)
        time.sleep(1)
        baseline = agent_pids(cluster)
        tap.note("%d processes of the agents before the jobs" % len(baseline))
        rid = "%x" % (int(time.time() * 1000) % 0xfffffff)
        release = os.path.join(cluster.tmp, "tb-release")
        job_pipe = Run("job-level Pipe, 2 hosts, ShardedByS3Key", "pm-%s-job" % rid, 2, request(
            "pm-%s-job" % rid, 2, [channel("train", PIPE_DATA, "ShardedByS3Key")], job_mode="Pipe"))
        chan_pipe = Run("channel-level Pipe beside a File channel, 2 hosts", "pm-%s-chan" % rid, 2, request(
            "pm-%s-chan" % rid, 2, [channel("train", PIPE_DATA, "ShardedByS3Key", mode="Pipe"),
                                    channel("aux", FILE_DATA)]))
        man_channel = channel("man", MANIFEST)
        man_channel["DataSource"]["S3DataSource"]["S3DataType"] = "ManifestFile"
        wrap = Run("RecordIO, Gzip, ManifestFile; a reader that stops early", "pm-%s-wrap" % rid, 1, request(
            "pm-%s-wrap" % rid, 1, [channel("rec", PIPE_DATA, RecordWrapperType="RecordIO"),
                                    channel("gz", GZ_DATA, CompressionType="Gzip"),
                                    man_channel],
            job_mode="Pipe", env={"PIPE_STOP_EARLY": "true"}))
        shuf_ch = channel("train", PIPE_DATA, "ShardedByS3Key", ShuffleConfig={"Seed": 42})
        shuffled = Run("ShuffleConfig with ShardedByS3Key, 2 hosts", "pm-%s-shuf" % rid, 2, request(
            "pm-%s-shuf" % rid, 2, [shuf_ch], job_mode="Pipe", env={"PIPE_EPOCHS": "3"}))
        tb_name = "pm-%s-tb" % rid
        tb = Run("TensorBoardOutputConfig", tb_name, 1, request(
            tb_name, 1, [], env={"TB_RELEASE": release},
            extra={"TensorBoardOutputConfig": {"S3OutputPath": "s3://%s/tb/%s" % (BUCKET, tb_name)}}),
            drive=drive_tb)
        tb.extra["release"] = release
        jobs = [job_pipe, chan_pipe, wrap, shuffled, tb]
        pool = tlj.Pool(2)
        threads = [threading.Thread(target=run, args=(cluster, pool, j)) for j in jobs]
        for th in threads:
            th.start()
            time.sleep(0.05)
        for th in threads:
            th.join(400)

        def case(job, what, fn, *a):
            def wrapped():
                try:
                    return fn(*a)
                except Fail as e:
                    raise Fail("%s\n%s" % (e, cluster.log_grep(job.name, 15)))
            return tap.case("%s: %s" % (job.label, what), wrapped)

        shards = {"algo-1": b"".join(data.shard(0, 2)), "algo-2": b"".join(data.shard(1, 2))}
        case(job_pipe, "Completed", completed, job_pipe)
        case(job_pipe, "each host reads its shard in train_0 and train_1", check_pipe_epochs, job_pipe,
             "train", shards)
        case(job_pipe, "inputdataconfig.json, SM_INPUT_DATA_CONFIG and SM_CHANNEL_TRAIN as SageMaker's",
             check_pipe_env, job_pipe, "train", shards)

        case(chan_pipe, "Completed", completed, chan_pipe)
        case(chan_pipe, "the Pipe channel streams each host's shard", check_pipe_epochs, chan_pipe,
             "train", shards)
        case(chan_pipe, "the Pipe channel is Pipe in the config", check_pipe_env, chan_pipe, "train", shards)

        def file_beside():
            for host in shards:
                rec = chan_pipe.read(host)
                want = {k: sha(v) for k, v in data.files.items()}
                expect(rec["file"].get("aux") == want, "%s aux: %s, expected %s" % (
                    host, rec["file"].get("aux"), want))
                expect(rec["idc"]["aux"]["TrainingInputMode"] == "File", "aux: %s" % rec["idc"]["aux"])
        case(chan_pipe, "the File channel beside it is downloaded", file_beside)

        case(wrap, "Completed although the reader left its last pipe open", completed, wrap)
        case(wrap, "RecordIO wraps each object in one record (after an epoch closed early)",
             check_pipe_epochs, wrap, "rec", {"algo-1": recordio(data.pipe[k] for k in sorted(data.pipe))})
        case(wrap, "Gzip objects stream decompressed", check_pipe_epochs, wrap, "gz",
             {"algo-1": b"".join(data.gz_plain)})
        case(wrap, "a ManifestFile streams its keys in the manifest's order", check_pipe_epochs, wrap, "man",
             {"algo-1": b"".join(data.pipe[k] for k in data.manifest_keys)})

        def shuffle_epochs():
            keys = sorted(data.pipe)
            r1, r2 = shuffled.read("algo-1")["pipe"]["train"], shuffled.read("algo-2")["pipe"]["train"]
            expect(len(r1) == 3 and len(r2) == 3, "epochs read: %s, %s" % (r1, r2))
            orders = []
            for e in range(3):
                match = None
                for p in itertools.permutations(keys):
                    a = b"".join(data.pipe[k] for k in p[0::2])
                    b = b"".join(data.pipe[k] for k in p[1::2])
                    if [len(a), sha(a)] == r1[e] and [len(b), sha(b)] == r2[e]:
                        match = p
                        break
                expect(match is not None, "epoch %d: the hosts' streams are no split of one order of the "
                       "objects: %s, %s" % (e, r1[e], r2[e]))
                orders.append(match)
            expect(len(set((r1[e][1], r2[e][1]) for e in range(3))) > 1, "every epoch came in the same order: %s"
                   % (orders,))
        case(shuffled, "Completed", completed, shuffled)
        case(shuffled, "each epoch is the objects in a new order, split between the hosts", shuffle_epochs)

        def tb_running():
            expect(tb.error is None, tb.error)
            expect(tb.extra.get("status_when_seen") == "InProgress", "seen while %s" % tb.extra.get(
                "status_when_seen"))
            expect(tb.extra.get("seen_bytes") == b"step 1\n" * 100, "events.1 while running: %s" % short(
                tb.extra.get("seen_bytes")))
        case(tb, "events.1 appears under S3OutputPath while the job runs", tb_running)

        def tb_final():
            completed(tb)
            root = cluster.s3_path("s3://%s/tb/%s" % (BUCKET, tb_name))
            want = {"events.1": b"step 1\n" * 100 + b"step 2\n" * 50, "sub/events.2": b"other run\n"}
            for rel, b in want.items():
                try:
                    with open(os.path.join(root, rel), "rb") as f:
                        got = f.read()
                except OSError as e:
                    raise Fail("%s: %s" % (rel, e))
                expect(got == b, "%s holds %s" % (rel, short(got)))
        case(tb, "at the end every file is there with its final bytes", tb_final)

        def tb_echo():
            d = tb.desc or {}
            want = {"S3OutputPath": "s3://%s/tb/%s" % (BUCKET, tb_name), "LocalPath": "/opt/ml/output/tensorboard"}
            expect(d.get("TensorBoardOutputConfig") == want, "Describe: %s" % d.get("TensorBoardOutputConfig"))
        case(tb, "Describe echoes TensorBoardOutputConfig", tb_echo)

        def no_writers():
            deadline = time.time() + 20
            while agent_pids(cluster) - baseline and time.time() < deadline:
                time.sleep(0.2)
            extra = agent_pids(cluster) - baseline
            expect(not extra, "processes of the agents left after the jobs ended:\n%s" % tlj.ps_lines(extra))
        tap.case("no Pipe writer is left once the jobs ended", no_writers)
    finally:
        rc, killed = cluster.stop()
        tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit %r, SIGKILL needed: %s" % (rc, killed))
        for j in jobs:
            for pid, _, _ in tlj.procs_with(j.name):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if tap.failed:
            tap.note(cluster.log_tail(30))
        cluster.cleanup()
    tap.note("took %.1f s" % (time.time() - T0))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
