#!/usr/bin/python3
"""CreateTrainingJob members with an effect of their own, end to end on the
embedded local cluster (docs/api-compatibility.md, CreateTrainingJob
members):

  - OutputDataConfig.CompressionType NONE: every file of every host's
    /opt/ml/model lands under <S3OutputPath>/<job>/output/model/, no
    model.tar.gz is made, and ModelArtifacts.S3ModelArtifacts names that
    prefix;
  - S3DataSource.InstanceGroupNames with ResourceConfig.InstanceGroups: a
    channel is downloaded, and listed in inputdataconfig.json and
    SM_CHANNELS, only on the hosts of its groups; ShardedByS3Key splits it
    between those hosts alone.

Starts its own `trainctld --local-hosts 3` (tests/integration/
localjobs.py's Cluster: free loopback port, temp state dir, stopped
by PID) and runs examples/probe/probe.py, which records what each host
saw. TAP on stdout. Run from the top of the tree:
    /usr/bin/python3 tests/integration/test_members.py
"""
import json
import os
import sys
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import localjobs as L  # noqa: E402  (Cluster, Job, probe helpers)
from test_local_jobs import place_data  # noqa: E402

sc, expect, short = L.sc, L.expect, L.short


def uncompressed_job(run_id):
    j = L.Job("CompressionType NONE", "m-none-%s" % run_id, 2, sleep=0.2)
    j.req["OutputDataConfig"]["CompressionType"] = "NONE"
    return j


def groups_job(run_id):
    j = L.Job("InstanceGroupNames", "m-groups-%s" % run_id, 3, sleep=0.2,
              channels=[("everyone", L.REPLICATED, "FullyReplicated", None),
                        ("onlyg1", L.REPLICATED, "FullyReplicated", None),
                        ("onlyg2", L.SHARDED, "ShardedByS3Key", None)])
    j.req["ResourceConfig"] = {"InstanceGroups": [
        {"InstanceGroupName": "g1", "InstanceType": L.ITYPE, "InstanceCount": 1},
        {"InstanceGroupName": "g2", "InstanceType": L.ITYPE, "InstanceCount": 2}],
        "VolumeSizeInGB": 1}
    for c in j.req["InputDataConfig"]:
        if c["ChannelName"] == "onlyg1":
            c["DataSource"]["S3DataSource"]["InstanceGroupNames"] = ["g1"]
        elif c["ChannelName"] == "onlyg2":
            c["DataSource"]["S3DataSource"]["InstanceGroupNames"] = ["g2"]
    return j


def records_of(cluster, job, where):
    """{algo: probe record} from the model files at where ({name: bytes})."""
    recs = {}
    for name, data in (where or {}).items():
        if name.startswith("probe-") and name.endswith(".json"):
            rec = json.loads(data.decode())
            recs[rec["host"]] = rec
    return recs


def model_files(cluster, job):
    root = cluster.s3_path("%s/%s/output/model/" % (L.OUT, job.name))
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            full = os.path.join(dirpath, f)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, root)] = fh.read()
    return out


def check_uncompressed(cluster, job):
    L.check_status(job, "Completed", "Completed")
    want = "%s/%s/output/model/" % (L.OUT, job.name)
    got = job.desc.get("ModelArtifacts", {}).get("S3ModelArtifacts")
    expect(got == want, "ModelArtifacts.S3ModelArtifacts %r, expected %r" % (got, want))
    # Debian's botocore drops the member it does not know: read the raw answer.
    raw = sc.amz_json(cluster.port, "DescribeTrainingJob", {"TrainingJobName": job.name}).json or {}
    expect(raw.get("OutputDataConfig", {}).get("CompressionType") == "NONE",
           "OutputDataConfig echoed as %s" % short(raw.get("OutputDataConfig")))
    expect(job.model is None, "a model.tar.gz was stored too: %s" % short(sorted(job.model or {})))
    files = model_files(cluster, job)
    names = set(files)
    want_names = {"probe-algo-1.json", "probe-algo-2.json"}
    expect(names == want_names, "objects under %s: %s, expected %s" % (want, sorted(names), sorted(want_names)))
    for h, rec in records_of(cluster, job, files).items():
        expect("probe-%s.json" % h in files, "record of %s under another name" % h)
    expect(job.output is not None, "no output.tar.gz next to the uncompressed model")


def check_groups(cluster, job):
    L.check_status(job, "Completed", "Completed")
    recs = L.probe_records(job)
    expect(sorted(recs) == ["algo-1", "algo-2", "algo-3"], "records of %s" % sorted(recs))
    problems = []
    g2_hosts = []
    for h, rec in sorted(recs.items()):
        rc = json.loads(rec["configs"]["resourceconfig.json"])
        idc = json.loads(rec["configs"]["inputdataconfig.json"])
        group = rc.get("current_group_name")
        want = {"everyone", "onlyg1"} if group == "g1" else {"everyone", "onlyg2"}
        if group == "g2":
            g2_hosts.append(h)
        if set(idc) != want:
            problems.append("%s (%s): inputdataconfig.json has %s, expected %s" % (h, group, sorted(idc),
                                                                                    sorted(want)))
        sm_channels = json.loads(rec["environ"].get("SM_CHANNELS", "null") or "null")
        if set(sm_channels or []) != want:
            problems.append("%s (%s): SM_CHANNELS %s, expected %s" % (h, group, sm_channels, sorted(want)))
        if set(rec["channels"]) != want:
            problems.append("%s (%s): input/data holds %s, expected %s" % (h, group, sorted(rec["channels"]),
                                                                           sorted(want)))
        for c in ("onlyg1", "onlyg2"):
            var = "SM_CHANNEL_" + c.upper()
            if (c in want) != (var in rec["environ"]):
                problems.append("%s (%s): %s %s" % (h, group, var,
                                                     "missing" if c in want else "set"))
    expect(len(g2_hosts) == 2, "hosts of g2: %s" % g2_hosts)
    expect(not problems, "\n".join(problems))
    # every REPLICATED object on the g1 host's onlyg1 channel
    objs = L.objects_under(cluster, L.REPLICATED)
    g1 = [h for h in recs if h not in g2_hosts][0]
    got = {f["path"]: f["sha256"] for f in recs[g1]["channels"]["onlyg1"]}
    expect(got == objs, "%s: onlyg1 holds %s, expected %s" % (g1, short(got), short(objs)))
    # onlyg2 is sharded between the two g2 hosts alone: each object once
    objs = L.objects_under(cluster, L.SHARDED)
    seen = {}
    for h in g2_hosts:
        for f in recs[h]["channels"]["onlyg2"]:
            seen.setdefault(f["path"], []).append(h)
            expect(objs.get(f["path"]) == f["sha256"], "%s: %s has the wrong content" % (h, f["path"]))
    bad = {p: seen.get(p, []) for p in objs if len(seen.get(p, [])) != 1}
    expect(not bad, "objects not on exactly one g2 host: %s; assignment %s" % (bad, short(seen)))
    for h in g2_hosts:
        n = len(recs[h]["channels"]["onlyg2"])
        expect(3 <= n <= 4, "%s got %d of %d objects of onlyg2 (expected 3..4)" % (h, n, len(objs)))


def run_raw(cluster, pool, job):
    """localjobs.run_job, but CreateTrainingJob goes out as raw JSON:
    Debian's botocore does not know every member (OutputDataConfig.
    CompressionType is newer), and this interpreter has no other."""
    orig = L.create_with_retry

    def create(sm, j, timeout=90.0):
        deadline = time.time() + timeout
        while True:
            r = sc.amz_json(cluster.port, "CreateTrainingJob", j.req)
            code = (r.json or {}).get("__type", "") if isinstance(r.json, dict) else ""
            if r.status == 200:
                j.created_at = time.time()
                j.arn = r.json.get("TrainingJobArn")
                return r.json
            if code in ("ResourceLimitExceeded", "ThrottlingException") and time.time() < deadline:
                time.sleep(0.5)
                continue
            raise sc.Fail("CreateTrainingJob answered %s" % r)
    L.create_with_retry = create
    try:
        L.run_job(cluster, pool, job)
    finally:
        L.create_with_retry = orig


def main():
    tap = sc.Tap()
    cluster = L.Cluster()
    err = cluster.start()
    if not tap.ok(err is None, "trainctld --local-hosts %d starts" % L.N_HOSTS, err):
        cluster.cleanup()
        return tap.finish()
    jobs = []
    try:
        ok, text = cluster.wait_hosts()
        tap.ok(ok, "the %d local hosts register" % L.N_HOSTS, text)
        place_data(cluster)
        run_id = "%x" % (int(time.time() * 1000) % 0xfffffff)
        jobs = [uncompressed_job(run_id), groups_job(run_id)]
        pool = L.Pool(L.N_HOSTS)
        threads = []
        for j in jobs:
            th = threading.Thread(target=run_raw, args=(cluster, pool, j), daemon=True)
            th.start()
            th.join(300)
        for j, fn in zip(jobs, (check_uncompressed, check_groups)):
            def case(j=j, fn=fn):
                try:
                    fn(cluster, j)
                except sc.Fail as e:
                    raise sc.Fail("%s\nseen %s; error %s\n%s" % (e, j.seen_text(), j.error,
                                                                cluster.log_grep(j.name, 20)))
            tap.case("%s: %s" % (j.label, j.name), case)
    finally:
        rc, killed = cluster.stop()
        tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit %r, SIGKILL needed: %s" % (rc, killed))
        for j in jobs:
            for pid, _, _ in L.procs_with(j.name):
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
        cluster.cleanup()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
