#!/usr/bin/python3
"""The embedded S3 store's objects on a replicated controller (docs/ha.md,
"What is replicated"): three trainctld members on loopback, boto3 against
them.

  (o1) PUTs (small, 20 MiB, and a multipart upload) through the leader
       and through a follower (20 MiB is more than a follower holds in
       memory: it is spooled, and read back through another follower),
       and PUTs of the agents' blob endpoint: when a PUT is
       answered, its object is on at least two members' disks byte for
       byte; soon on all three; a DeleteObject, a DeleteObjects and a blob
       DELETE reach every member
  (o2) the members' routes refuse bad input: no key or a wrong one, a path
       that leaves the store, metadata that is not an object's, a body
       over the limit; nothing is written
  (o3) kill -9 the leader: every acknowledged object is readable through
       the new leader, byte for byte
  (o4) the old leader, restarted after objects were written and deleted
       without it, catches up: every object there, the deletes applied
  (o5) a follower down: PUTs still succeed (two of three hold them)
  (o6) two members down: PUTs fail (503) and nothing is acknowledged
  (o7) a job's log (an agent started here, "agent": "external" in the
       inventory) is on two members while it runs, and so are the host's
       telemetry samples; kill -9 the leader: the new leader serves every
       line and the samples from before (GET /v1/hosts/h1/telemetry); the
       old one, back, catches up

TAP on stdout. Run from the top of the tree with Debian's interpreter.
"""
import hashlib
import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))
sys.path.insert(0, HERE)

import smcompat as sc  # noqa: E402
import test_ha as ha  # noqa: E402  (Cluster, Member, retrying)

sc.hermetic_env()
expect = sc.expect
TAP = sc.Tap()
BUCKET = "ha-objects"
MIB = 1024 * 1024
CATCH_UP_S = 20.0


def s3_client(m):
    import boto3
    import botocore.config
    conf = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                  signature_version="s3v4", s3={"addressing_style": "path"},
                                  connect_timeout=2, read_timeout=60)
    return boto3.session.Session(aws_access_key_id=sc.KEY, aws_secret_access_key=sc.SECRET,
                                 region_name=sc.REGION).client("s3", endpoint_url=m.endpoint,
                                                               config=conf)


def on_disk(m, key):
    """The bytes of BUCKET/key in member m's store, or None."""
    try:
        with open(os.path.join(m.state_dir, "s3", BUCKET, key), "rb") as f:
            return f.read()
    except OSError:
        return None


def members_key(m):
    c = sqlite3.connect("file:%s?mode=ro" % os.path.join(m.state_dir, "trainctl.db"),
                        uri=True, timeout=5)
    try:
        row = c.execute("SELECT value FROM secrets WHERE name = 'members'").fetchone()
    finally:
        c.close()
    return row[0] if row else None


class Objects:
    """What was acknowledged: key -> bytes (None: deleted)."""

    def __init__(self, cl):
        self.cl = cl
        self.acked = {}

    def put(self, m, key, body):
        s3 = s3_client(m)
        ha.retrying(lambda: s3.put_object(Bucket=BUCKET, Key=key, Body=body))
        self.acked[key] = body
        self.check_copies(key, 2)

    def multipart(self, m, key, parts):
        s3 = s3_client(m)
        up = ha.retrying(lambda: s3.create_multipart_upload(Bucket=BUCKET, Key=key))
        done = []
        for i, p in enumerate(parts):
            r = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up["UploadId"],
                               PartNumber=i + 1, Body=p)
            done.append({"PartNumber": i + 1, "ETag": r["ETag"]})
        s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=up["UploadId"],
                                     MultipartUpload={"Parts": done})
        self.acked[key] = b"".join(parts)
        self.check_copies(key, 2)

    def check_copies(self, key, least, members=None):
        have = [m.mid for m in (members or self.cl.members)
                if on_disk(m, key) == self.acked[key]]
        expect(len(have) >= least, "s3://%s/%s answered with its bytes on members %s only"
               % (BUCKET, key, have))

    def wait_all(self, m, timeout=CATCH_UP_S):
        """Member m's disk holds every acknowledged object, and none deleted."""
        deadline = time.time() + timeout
        while True:
            wrong = [k for k, v in self.acked.items() if on_disk(m, k) != v]
            if not wrong:
                return
            if time.time() > deadline:
                raise sc.Fail("member %d lacks or still holds %s\n%s"
                              % (m.mid, wrong[:5], m.log_tail(10)))
            time.sleep(0.1)

    def read_all(self, m):
        s3 = s3_client(m)
        for k, v in self.acked.items():
            if v is None:
                continue
            got = ha.retrying(lambda: s3.get_object(Bucket=BUCKET, Key=k))["Body"].read()
            expect(hashlib.sha256(got).digest() == hashlib.sha256(v).digest(),
                   "s3://%s/%s through member %d: %d other bytes" % (BUCKET, k, m.mid, len(got)))


def blobs(cl, ob, lead, fol):
    """The agents' uploads (models, checkpoints) through /v1/blobs/."""
    auth = {"Authorization": "Bearer " + sc.host_token(lead.state_dir, "h1")}
    for i, m in enumerate((lead, fol)):
        key = "blob/model-%d.tar.gz" % i
        body = os.urandom(70000 + i)
        st, text = raw(m, "PUT", "/v1/blobs/%s/%s" % (BUCKET, key), auth, body)
        expect(st == 200, "blob PUT through member %d: %d %r" % (m.mid, st, text[:200]))
        ob.acked[key] = body
        ob.check_copies(key, 2)
    st, _ = raw(lead, "DELETE", "/v1/blobs/%s/blob/model-0.tar.gz" % BUCKET, auth)
    expect(st == 204, "blob DELETE: %d" % st)
    ob.acked["blob/model-0.tar.gz"] = None


def o1(cl, ob):
    cl.start_all()
    lead = cl.leader()
    fol = [m for m in cl.members if m is not lead]
    s3 = s3_client(lead)
    ha.retrying(lambda: s3.create_bucket(Bucket=BUCKET))
    for i in range(6):
        via = lead if i % 2 else fol[i % 2]
        ob.put(via, "small/%d.bin" % i, os.urandom(1000 * (i + 1)))
    ob.put(fol[0], "empty", b"")
    ob.put(lead, "dir one/odd key+%.txt", b"odd")
    ob.multipart(fol[1], "big/multi.bin", [os.urandom(5 * MIB), os.urandom(MIB)])
    # Larger than a follower holds in memory (8 MiB): it passes through a
    # file of the follower's, both ways.
    large = os.urandom(20 * MIB)
    ob.put(fol[0], "big/through-follower.bin", large)
    got = s3_client(fol[1]).get_object(Bucket=BUCKET, Key="big/through-follower.bin")["Body"].read()
    expect(got == large, "20 MiB read back through a follower: %d bytes, differing" % len(got))
    s3.delete_object(Bucket=BUCKET, Key="small/0.bin")
    ob.acked["small/0.bin"] = None
    s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "small/1.bin"}]})
    ob.acked["small/1.bin"] = None
    blobs(cl, ob, lead, fol[0])
    for m in cl.members:
        ob.wait_all(m)
    heads = [s3_client(m).head_object(Bucket=BUCKET, Key="big/multi.bin")["ETag"]
             for m in [lead]]
    expect(heads[0].endswith('-2"'), "multipart ETag %s" % heads[0])


def raw(m, method, path, headers, body=b""):
    c = http.client.HTTPConnection("127.0.0.1", m.want_port, timeout=10)
    try:
        c.putrequest(method, path, skip_accept_encoding=True)
        for k, v in headers.items():
            c.putheader(k, v)
        if "Content-Length" not in headers:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders()
        if body:
            c.send(body)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def o2(cl, ob):
    lead = cl.leader()
    fol = [m for m in cl.members if m is not lead][0]
    key = members_key(fol)
    expect(key, "no members' key in the store")
    meta = ('{"etag":"%s","size":3,"mtime_ns":1}' % hashlib.md5(b"abc").hexdigest()).encode()
    good = {"Authorization": "Bearer " + key, "X-Trainctl-Meta": meta.hex()}
    path = "/v1/replica/objects/%s/" % BUCKET
    cases = [
        ("no key", path + "x1", {"X-Trainctl-Meta": meta.hex()}, b"abc", 403),
        ("wrong key", path + "x2", dict(good, Authorization="Bearer " + "0" * 48), b"abc", 403),
        ("outside the store", path + "../../etc/x3", good, b"abc", 400),
        ("bad bucket", "/v1/replica/objects/../x4", good, b"abc", 400),
        ("bad metadata", path + "x5", dict(good, **{"X-Trainctl-Meta": "zz"}), b"abc", 400),
        ("bytes not the ETag's", path + "x6", good, b"abd", 400),
        ("over the limit", path + "x7", dict(good, **{"Content-Length": str(6 << 30)}), b"", 400),
    ]
    for what, p, h, body, want in cases:
        try:
            st, text = raw(fol, "PUT", p, h, body)
        except OSError as e:
            raise sc.Fail("%s: %s" % (what, e))
        expect(st == want, "%s: %d %r (want %d)" % (what, st, text[:200], want))
    for k in ("x1", "x2", "x5", "x6", "x7"):
        expect(on_disk(fol, k) is None, "%s written" % k)
    expect(not os.path.exists(os.path.join(fol.state_dir, "x3")), "x3 written")
    left = [f for f in os.listdir(os.path.join(fol.state_dir, "s3", BUCKET)) if f.startswith(".")]
    expect(not left, "temp files left: %s" % left)
    try:
        st, _ = raw(lead, "GET", path + "small/2.bin", {"Authorization": "Bearer nope"})
    except OSError as e:
        raise sc.Fail("leader GET: %s\n%s" % (e, lead.log_tail(20)))
    expect(st == 403, "the leader's GET with a wrong key: %d" % st)
    st, _ = raw(fol, "PUT", path + "x8", good, b"abc")
    expect(st == 200 and on_disk(fol, "x8") == b"abc", "a good copy: %d" % st)
    os.unlink(os.path.join(fol.state_dir, "s3", BUCKET, "x8"))


def o3(cl, ob):
    lead = cl.leader()
    lead.kill9()
    took = cl.create_until([m for m in cl.members if m is not lead], "obj-kill", ha.FAILOVER_DEADLINE)
    TAP.note("kill -9 of the leader: writes again after %.2f s" % took)
    new = cl.leader()
    ob.read_all(new)
    return lead


def o4(cl, ob, old):
    lead = cl.leader()
    for i in range(4):
        ob.put(lead, "while-away/%d" % i, os.urandom(2000 + i))
    s3 = s3_client(lead)
    s3.delete_object(Bucket=BUCKET, Key="small/2.bin")
    ob.acked["small/2.bin"] = None
    why = old.start()
    expect(why is None, "restart: %s" % why)
    ob.wait_all(old)


def o5(cl, ob):
    lead = cl.leader()
    fol = [m for m in cl.members if m is not lead][0]
    fol.kill9()
    up = [m for m in cl.members if m is not fol]
    for i in range(3):
        ob.put(lead, "one-down/%d" % i, os.urandom(3000))
        ob.check_copies("one-down/%d" % i, 2, up)
    why = fol.start()
    expect(why is None, "restart: %s" % why)
    ob.wait_all(fol)


def o6(cl, ob):
    lead = cl.leader()
    others = [m for m in cl.members if m is not lead]
    for m in others:
        m.kill9()
    s3 = s3_client(lead)
    failed = 0
    for i in range(3):
        try:
            s3.put_object(Bucket=BUCKET, Key="two-down/%d" % i, Body=b"x" * 100)
            ob.acked["two-down/%d" % i] = b"x" * 100
        except Exception as e:  # noqa: BLE001 (a refusal, or the connection lost)
            st = (getattr(e, "response", None) or {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
            expect(st in (None, 503), "a PUT with two members down: %s" % e)
            failed += 1
    acked = [k for k in ob.acked if k.startswith("two-down/")]
    expect(failed == 3, "acknowledged with two members down: %s" % acked)
    for m in others:
        why = m.start()
        expect(why is None, "restart: %s" % why)
    lead = cl.leader(30)
    ob.put(lead, "two-back", b"back")
    for m in cl.members:
        ob.wait_all(m)


AGENT = os.path.join(REPO, os.environ.get("BUILD", "build"), "bin", "trainagent")
LOG_LINES = 40
SCRIPT = """i=0
while [ $i -lt %d ]; do echo "log line $i of the job"; i=$((i+1)); sleep 0.05; done
sleep 30
""" % LOG_LINES


def with_host(cl, tmp):
    """Every member gets an inventory of one host whose agent the test
    starts, and file:// images from tmp."""
    inv = os.path.join(tmp, "inventory.json")
    with open(inv, "w") as f:
        json.dump({"hosts": [{"name": "h1", "agent": "external", "cpus": 2}]}, f)
    for m in cl.members:
        m.extra += ["--inventory", inv, "--allow-file-root", tmp]


def log_on_disk(m, job):
    top = os.path.join(m.state_dir, "logs", job)
    out = b""
    for f in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        with open(os.path.join(top, f), "rb") as fh:
            out += fh.read()
    return out


def lines_of(m, job):
    return sum(1 for i in range(LOG_LINES) if (b"log line %d of" % i) in log_on_disk(m, job))


def samples_before(m, t_ms):
    """h1's samples older than t_ms in member m's telemetry store."""
    try:
        c = sqlite3.connect("file:%s?mode=ro" % os.path.join(m.state_dir, "telemetry.db"),
                            uri=True, timeout=5)
        try:
            return c.execute("SELECT COUNT(*) FROM host_samples WHERE host = 'h1' AND ts_ms < ?",
                             (t_ms,)).fetchone()[0]
        finally:
            c.close()
    except sqlite3.Error:
        return 0


def o7(cl, tmp):
    lead = cl.leader()
    token = sc.host_token(lead.state_dir, "h1")
    work = os.path.join(tmp, "agent")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, TRAINCTL_AGENT_TOKEN=token)
    agent = subprocess.Popen([AGENT, "--controller", ",".join(m.endpoint for m in cl.members),
                              "--host", "h1", "--work-dir", work, "--cpus", "2",
                              "--address", "127.0.0.1", "--telemetry-ms", "500"], env=env, stdin=subprocess.DEVNULL,
                             stdout=open(os.path.join(tmp, "agent.log"), "ab"),
                             stderr=subprocess.STDOUT, start_new_session=True)
    try:
        script = os.path.join(tmp, "job.sh")
        with open(script, "w") as f:
            f.write(SCRIPT)
        req = sc.small_request("ha-logs")
        req["AlgorithmSpecification"] = {"TrainingImage": "file:///bin/sh",
                                         "TrainingInputMode": "File",
                                         "ContainerArguments": [script]}
        req.pop("HyperParameters", None)
        sm = sc.make_client(lead.endpoint)
        ha.retrying(lambda: sm.create_training_job(**req))
        deadline = time.time() + 40
        while time.time() < deadline and lines_of(lead, "ha-logs") < LOG_LINES:
            time.sleep(0.2)
        expect(lines_of(lead, "ha-logs") == LOG_LINES, "the leader has %d of %d lines\n%s" % (
            lines_of(lead, "ha-logs"), LOG_LINES, lead.log_tail(15)))
        held = [m.mid for m in cl.members if lines_of(m, "ha-logs") == LOG_LINES]
        expect(len(held) >= 2, "every line on members %s only" % held)
        t_kill = int(time.time() * 1000)
        tm_before = samples_before(lead, t_kill)
        expect(tm_before > 0, "no telemetry of h1 on the leader")
        tm_held = [m.mid for m in cl.members if samples_before(m, t_kill) >= tm_before - 1]
        expect(len(tm_held) >= 2, "telemetry on members %s only\n%s" % (tm_held, "\n".join(m.log_tail(6) for m in cl.members)))
        lead.kill9()
        new = cl.leader(30)
        got = ha.retrying(lambda: sc.make_client(new.endpoint).describe_training_job(
            TrainingJobName="ha-logs"))
        text = log_on_disk(new, "ha-logs")
        expect(all((b"log line %d of" % i) in text for i in range(LOG_LINES)),
               "the new leader lacks lines (job %s)" % got["TrainingJobStatus"])
        path = "/v1/hosts/h1/telemetry?start=%d" % (t_kill - 120000)
        h = sc.sigv4_sign("GET", "127.0.0.1:%d" % new.want_port, path.split("?")[0],
                          path.split("?")[1], b"", sc.KEY, sc.SECRET, {})
        r = sc.http_request(new.want_port, "GET", path, b"", h)
        old = [x for x in json.loads(r.body).get("samples", []) if x["ts_ms"] < t_kill] \
            if r.status == 200 else []
        expect(len(old) >= tm_before - 1, "the new leader serves %d samples from before the "
               "fault, the old leader had %d (%d %r)" % (len(old), tm_before, r.status, r.body[:200]))
        why = lead.start()
        expect(why is None, "restart: %s" % why)
        deadline = time.time() + CATCH_UP_S
        while time.time() < deadline and log_on_disk(lead, "ha-logs") != log_on_disk(new, "ha-logs"):
            time.sleep(0.2)
        expect(lines_of(lead, "ha-logs") == LOG_LINES, "the restarted member has %d lines" %
               lines_of(lead, "ha-logs"))
        deadline = time.time() + CATCH_UP_S
        while time.time() < deadline and samples_before(lead, t_kill + 3000) < \
                samples_before(new, t_kill + 3000):
            time.sleep(0.2)
        expect(samples_before(lead, t_kill + 3000) >= samples_before(new, t_kill + 3000),
               "the restarted member's telemetry did not catch up")
    finally:
        os.killpg(agent.pid, signal.SIGKILL)
        agent.wait()


def main():
    cl = ha.Cluster()
    ob = Objects(cl)
    tmp = tempfile.mkdtemp(prefix="trainctl-ha-objects-")
    with_host(cl, tmp)
    try:
        if TAP.case("o1: PUTs answered with two copies; every member gets them", o1, cl, ob) is None:
            return TAP.finish()
        TAP.case("o2: the members' routes refuse bad input, nothing written", o2, cl, ob)
        old = TAP.case("o3: kill -9 the leader: every object read back", o3, cl, ob)
        if old is not None:
            TAP.case("o4: the old leader restarted catches up", o4, cl, ob, old)
        TAP.case("o5: a follower down: PUTs go on; back, it catches up", o5, cl, ob)
        TAP.case("o6: two members down: PUTs refused, nothing acknowledged", o6, cl, ob)
        TAP.case("o7: a job's log and telemetry on two members; read after the leader is killed",
                 o7, cl, tmp)
    finally:
        cl.stop_all()
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
