"""Shared pieces of the SageMaker-compatibility tests (not a test itself).

Used by test_boto3.py (Debian /usr/bin/python3: boto3 1.26 / botocore 1.29,
model M22) and boto3_new.py (pyenv python3: botocore 1.43, model M26).
Keeps to the standard library plus boto3/botocore.

  Tap      TAP output: "ok N - name", "not ok N - name" + "# " diagnostics,
           the "1..N" plan at the end, exit status.
  Daemon   starts build/bin/trainctld on a free loopback port with a temp
           state dir, waits until it accepts connections, stops it by PID;
           temp dirs go at exit (TRAINCTL_TEST_KEEP=1 keeps them).
  Core     the cases both client generations must pass.
"""
import atexit
import datetime
import glob
import hashlib
import hmac
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
DAEMON = os.environ.get("TRAINCTLD") or os.path.join(REPO, BUILD, "bin", "trainctld")

REGION = "us-east-1"
KEY = "AKIDCOMPATTEST0000001"
SECRET = "compat/secret+key/0123456789abcdefABCDEF"
ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.13.1-cpu-py39"
ARN_RE = r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-job/%s$"


def hermetic_env():
    """No config files, no instance metadata, no ambient keys or endpoints,
    no proxies for loopback. Call before importing boto3/botocore."""
    for k in list(os.environ):
        if k.startswith("AWS_") or k.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            del os.environ[k]
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    os.environ["AWS_CONFIG_FILE"] = "/dev/null"
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = "/dev/null"
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"



def host_token(state_dir, host, timeout=30.0):
    """The agent token of host as the controller keeps it, in its store
    (db/secrets.h); waits up to timeout for the host's first token."""
    import sqlite3
    path = os.path.join(state_dir, "trainctl.db")
    end = time.time() + timeout
    while True:
        try:
            con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=5)
            try:
                row = con.execute("SELECT value FROM secrets WHERE name = ?",
                                  ("host-token/" + host,)).fetchone()
            finally:
                con.close()
        except sqlite3.Error:
            row = None
        if row or time.time() >= end:
            return row[0] if row else None
        time.sleep(0.1)

class Fail(AssertionError):
    pass


def expect(cond, msg):
    if not cond:
        raise Fail(msg)


def short(obj, limit=600):
    try:
        text = json.dumps(obj, default=str, sort_keys=True)
    except Exception:
        text = repr(obj)
    return text if len(text) <= limit else text[:limit] + "...(%d chars)" % len(text)


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0
        self.log_hint = None   # callable returning text to show after a failure

    def _emit(self, ok, name, diag=None, directive=None):
        self.n += 1
        line = "%s %d - %s" % ("ok" if ok else "not ok", self.n, name.replace("#", "\\#"))
        if directive:
            line += " # " + directive
        print(line)
        if diag:
            for d in str(diag).rstrip().splitlines():
                print("# " + d)
        sys.stdout.flush()

    def ok(self, cond, name, diag=None):
        if not cond:
            self.failed += 1
        self._emit(bool(cond), name, None if cond else diag)
        return bool(cond)

    def skip(self, name, reason):
        self._emit(True, name, directive="SKIP " + reason)

    def note(self, text):
        for d in str(text).splitlines():
            print("# " + d)
        sys.stdout.flush()

    def case(self, name, fn, *args, **kw):
        """Runs fn; Fail -> not ok with its message; any other exception ->
        not ok with the traceback. Returns fn's value (None on failure)."""
        try:
            value = fn(*args, **kw)
        except Fail as e:
            self.ok(False, name, str(e))
            return None
        except Exception as e:
            tb = traceback.format_exc().rstrip().splitlines()
            self.ok(False, name, "unexpected %s: %s\n%s" % (type(e).__name__, e, "\n".join(tb[-8:])))
            return None
        self.ok(True, name)
        return value if value is not None else True

    def finish(self):
        print("1..%d" % self.n)
        if self.failed:
            print("# %d of %d failed" % (self.failed, self.n))
        sys.stdout.flush()
        return 1 if self.failed else 0


_RNG = random.SystemRandom()  # not the global one: a test may seed that
_given_ports = set()


def _port_range():
    """20000 up to the kernel's ephemeral range (outgoing connections take
    their source ports there, so a port below it stays free until bound)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return (20000, low - 1) if low > 21000 else (1024, 65535)


def port_is_free(port, host="0.0.0.0"):
    """Whether a TCP socket can bind host:port now (0.0.0.0 also fails when
    any address holds the port)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_port():
    """A TCP port free on every address, picked at random below the
    ephemeral range and never twice in one process: overlapping runs rarely
    pick the same one. It stays free only until someone binds it: use it at
    once."""
    lo, hi = _port_range()
    for _ in range(500):
        port = _RNG.randint(lo, hi)
        if port not in _given_ports and port_is_free(port):
            _given_ports.add(port)
            return port
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_ports(n):
    """n distinct free_port()s."""
    return [free_port() for _ in range(n)]


# ---------------------------------------------------------------- per-run names

def _ip(*args):
    p = subprocess.run(["ip"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return p.stdout.decode("utf-8", "replace")


def net_is_free(net):
    """Whether no address of net.0/24 is on any interface and no route
    (other than the default) covers it."""
    for line in _ip("-4", "-o", "addr", "show").splitlines():
        f = line.split()
        if len(f) > 3 and f[3].startswith(net + "."):
            return False
    for line in _ip("-4", "route", "show", "match", net + ".1").splitlines():
        if line.strip() and not line.startswith("default"):
            return False
    return True


def free_net(first=160, last=239):
    """A private /24 "10.B.C" (B in first..last) that nothing on this
    machine uses now."""
    for _ in range(200):
        net = "10.%d.%d" % (_RNG.randint(first, last), _RNG.randint(0, 255))
        if net_is_free(net):
            return net
    raise Fail("no free 10.%d-%d.X.0/24 found" % (first, last))


def _proc_start(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except (OSError, ValueError):
        return None
    return s.rsplit(") ", 1)[1].split()[19]


def reap_dead_clusters():
    """Takes down scripts/cluster.sh clusters under /tmp left by test runs
    that are gone (cluster.env names an owner process that no longer runs).
    Clusters without an owner (a person's) and those of live runs stay."""
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "scripts", "cluster.sh")
    for env in glob.glob("/tmp/trainctl-cluster-*/cluster.env"):
        vals = {}
        try:
            with open(env) as f:
                for line in f:
                    k, _, v = line.strip().partition("=")
                    vals[k] = v.strip('"')
        except OSError:
            continue
        owner, prefix = vals.get("CLUSTER_OWNER", "").split(), vals.get("CLUSTER_PREFIX", "")
        if len(owner) != 2 or not owner[0].isdigit() or not prefix:
            continue
        if _proc_start(int(owner[0])) == owner[1]:
            continue
        subprocess.run(["/bin/bash", script, "down", "--prefix", prefix, "--state-dir", os.path.dirname(env)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=120)


def run_names(tag):
    """(prefix, net, port) of a scripts/cluster.sh cluster of this run:
    prefix tag (2 letters) + 6 random letters and digits (its bridge
    "<prefix>-br" and veths "<prefix>-vK" stay within 15 characters), a
    free private /24 and a free port. Names no namespace, link or state dir
    in use. Sets TRAINCTL_CLUSTER_OWNER to this process, so that cluster.sh
    records it as the owner: another run's up or down then refuses to touch
    the cluster while this process runs. Leftovers of runs that are gone
    are taken down first."""
    assert len(tag) == 2 and tag.isalpha() and tag.islower(), tag
    os.environ["TRAINCTL_CLUSTER_OWNER"] = str(os.getpid())
    if os.geteuid() == 0:
        try:
            reap_dead_clusters()
        except (OSError, subprocess.SubprocessError):
            pass
    alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
    links = _ip("-o", "link", "show")
    for _ in range(100):
        prefix = tag + "".join(_RNG.choice(alnum) for _ in range(6))
        if (glob.glob("/run/netns/%s-*" % prefix) or glob.glob("/etc/netns/%s-*" % prefix)
                or os.path.exists("/tmp/trainctl-cluster-" + prefix) or (" %s-" % prefix) in links):
            continue
        return prefix, free_net(), free_port()
    raise Fail("no free cluster prefix found")


_daemons = []
_tmpdirs = []


def _stop_all():
    for d in list(_daemons):
        d.stop()
    if os.environ.get("TRAINCTL_TEST_KEEP") != "1":
        for t in _tmpdirs:
            shutil.rmtree(t, ignore_errors=True)


atexit.register(_stop_all)


def _on_signal(signum, frame):
    _stop_all()
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


class Daemon:
    """One trainctld. state_dir=None: a fresh one under a temp dir."""

    def __init__(self, credentials=None, state_dir=None, name="trainctld", extra=()):
        self.credentials = credentials
        self.extra = list(extra)
        self.tmp = tempfile.mkdtemp(prefix="trainctl-compat-")
        _tmpdirs.append(self.tmp)
        self.state_dir = state_dir or os.path.join(self.tmp, "state")
        self.name = name
        self.proc = None
        self.port = None
        self.log_path = os.path.join(self.tmp, name + ".log")
        self.rc = None

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self, timeout=20.0):
        """Returns None when it listens, else a text saying why not."""
        if not os.access(DAEMON, os.X_OK):
            return "%s not built" % DAEMON
        os.makedirs(self.state_dir, exist_ok=True)
        self.port = getattr(self, "want_port", None) or free_port()
        args = [DAEMON, "--listen", "127.0.0.1:%d" % self.port, "--state-dir", self.state_dir,
                "--local-hosts", "0"]
        if self.credentials:
            path = os.path.join(self.tmp, "credentials")
            with open(path, "w") as f:
                for profile, (k, s) in self.credentials.items():
                    f.write("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % (profile, k, s))
            args += ["--credentials", path]
        args += self.extra
        args.append("-v")
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        _daemons.append(self)
        # The agent listener opens right after the API's: wait for both.
        ports = [self.port]
        if "--agent-listen" in self.extra:
            ports.append(int(self.extra[self.extra.index("--agent-listen") + 1].rpartition(":")[2]))
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return "exited with status %s before listening\n%s" % (self.proc.returncode, self.log_tail())
            try:
                while ports:
                    socket.create_connection(("127.0.0.1", ports[0]), timeout=0.5).close()
                    ports.pop(0)
                return None
            except OSError:
                time.sleep(0.05)
        return "not listening after %.0f s\n%s" % (timeout, self.log_tail())

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=10.0):
        """SIGTERM by PID, SIGKILL after timeout. Returns the exit status
        (negative: killed by that signal) and whether SIGKILL was needed."""
        if self.proc is None:
            return self.rc, False
        killed = False
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                killed = True
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.rc = self.proc.returncode
        self.proc = None
        if self in _daemons:
            _daemons.remove(self)
        return self.rc, killed

    def log_tail(self, n=25):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
            return "--- %s log (last %d lines) ---\n%s" % (self.name, n, "\n".join(lines[-n:]))
        except OSError:
            return "(no log)"


# ---------------------------------------------------------------- raw HTTP

class Resp:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers          # lower-case names
        self.body = body
        try:
            self.json = json.loads(body.decode("utf-8")) if body else None
        except Exception:
            self.json = None

    def __repr__(self):
        b = self.body[:400].decode("utf-8", "replace")
        return "HTTP %s %s body=%s" % (self.status, short(self.headers, 300), b)


def http_request(port, method, path, body=b"", headers=None, timeout=15):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        conn.close()


def amz_json(port, op, payload, headers=None, auth=None):
    """POST / with X-Amz-Target SageMaker.<op>. payload: dict or bytes.
    auth: (key, secret) to sign with our own SigV4 signer."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    h = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker." + op}
    if headers:
        h.update(headers)
    if auth:
        h.update(sigv4_sign("POST", "127.0.0.1:%d" % port, "/", "", body, auth[0], auth[1], h))
    return http_request(port, "POST", "/", body, h)


def sigv4_sign(method, host, path, query, body, key, secret, headers=None, when=None,
               region=REGION, service="sagemaker"):
    """Our own SigV4 (AWS docs' algorithm), independent of botocore, so that
    raw requests can be signed with any date. Returns the headers to add
    (Host, X-Amz-Date, X-Amz-Content-Sha256, Authorization)."""
    when = when or datetime.datetime.now(datetime.timezone.utc)
    amz_date = when.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    payload_hash = hashlib.sha256(body).hexdigest()
    hs = {"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash}
    for k, v in (headers or {}).items():
        if k.lower() in ("content-type", "x-amz-target"):
            hs[k.lower()] = v
    names = sorted(hs)
    canon_headers = "".join("%s:%s\n" % (n, " ".join(str(hs[n]).split())) for n in names)
    signed = ";".join(names)
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    canon_query = "&".join("%s=%s" % (urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~"))
                           for k, v in sorted(pairs))
    canon_path = urllib.parse.quote(path, safe="/-_.~")
    creq = "\n".join([method, canon_path, canon_query, canon_headers, signed, payload_hash])
    scope = "%s/%s/%s/aws4_request" % (day, region, service)
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(creq.encode()).hexdigest()])

    def h(k, m):
        return hmac.new(k, m.encode(), hashlib.sha256).digest()
    k = h(h(h(h(("AWS4" + secret).encode(), day), region), service), "aws4_request")
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    return {"Host": host, "X-Amz-Date": amz_date, "X-Amz-Content-Sha256": payload_hash,
            "Authorization": "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
                             % (key, scope, signed, sig)}


# ---------------------------------------------------------------- boto3

def make_client(endpoint, key=KEY, secret=SECRET, validate=True):
    """A sagemaker client with retries off; boto3 when importable, else
    botocore alone. endpoint=None: whatever the environment says."""
    import botocore.config
    cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                 parameter_validation=validate, connect_timeout=5, read_timeout=60)
    try:
        import boto3
    except ImportError:
        import botocore.session
        return botocore.session.get_session().create_client(
            "sagemaker", region_name=REGION, endpoint_url=endpoint, aws_access_key_id=key,
            aws_secret_access_key=secret, config=cfg)
    session = boto3.session.Session(aws_access_key_id=key, aws_secret_access_key=secret,
                                    region_name=REGION)
    return session.client("sagemaker", endpoint_url=endpoint, config=cfg)


def err_of(e):
    """(code, message, http status) of a botocore ClientError."""
    r = getattr(e, "response", {}) or {}
    err = r.get("Error", {})
    return err.get("Code"), err.get("Message", ""), r.get("ResponseMetadata", {}).get("HTTPStatusCode")


def expect_error(fn, codes, status=None, contains=None, what=""):
    """Calls fn(); it must raise a ClientError whose code is in codes (str or
    tuple). Returns (code, message, status)."""
    from botocore.exceptions import ClientError
    if isinstance(codes, str):
        codes = (codes,)
    try:
        resp = fn()
    except ClientError as e:
        code, msg, st = err_of(e)
        expect(code in codes, "%sexpected error %s, got %s (HTTP %s): %r" % (what, "/".join(codes), code, st, msg))
        if status is not None:
            ok = st in status if isinstance(status, (tuple, list, range)) else st == status
            expect(ok, "%s%s: expected HTTP %s, got %s" % (what, code, status, st))
        if contains:
            for c in ([contains] if isinstance(contains, str) else contains):
                expect(c in msg, "%s%s message %r does not contain %r" % (what, code, msg, c))
        return code, msg, st
    if isinstance(resp, dict):
        resp = {k: v for k, v in resp.items() if k != "ResponseMetadata"}
    raise Fail("%sexpected error %s, got success: %s" % (what, "/".join(codes), short(resp)))


def job_request(name, **top):
    """A realistic CreateTrainingJob request (what the SageMaker Python SDK
    sends for a PyTorch estimator), with top-level members replaced by top."""
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {
            "TrainingImage": IMAGE,
            "TrainingInputMode": "File",
            "MetricDefinitions": [{"Name": "train:loss", "Regex": "loss=([0-9\\.]+)"},
                                  {"Name": "validation:accuracy", "Regex": "val_acc=([0-9\\.]+)"}],
            "EnableSageMakerMetricsTimeSeries": True,
        },
        "RoleArn": ROLE,
        "InputDataConfig": [
            {"ChannelName": "train",
             "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                             "S3Uri": "s3://compat-bucket/data/train/",
                                             "S3DataDistributionType": "FullyReplicated"}},
             "ContentType": "text/csv", "CompressionType": "None"},
            {"ChannelName": "validation",
             "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                             "S3Uri": "s3://compat-bucket/data/validation/",
                                             "S3DataDistributionType": "ShardedByS3Key"}},
             "InputMode": "File"},
        ],
        "HyperParameters": {"epochs": "10", "lr": "0.01", "batch-size": "64",
                            "sagemaker_program": "\"train.py\"",
                            "sagemaker_submit_directory": "\"s3://compat-bucket/code/sourcedir.tar.gz\"",
                            "sagemaker_region": "\"us-east-1\""},
        "OutputDataConfig": {"S3OutputPath": "s3://compat-bucket/output"},
        "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        "Tags": [{"Key": "project", "Value": "compat"}, {"Key": "owner", "Value": "ci@example.com"}],
        "EnableNetworkIsolation": False,
        "EnableInterContainerTrafficEncryption": False,
        "EnableManagedSpotTraining": False,
        "CheckpointConfig": {"S3Uri": "s3://compat-bucket/checkpoints/%s" % name,
                             "LocalPath": "/opt/ml/checkpoints"},
        "Environment": {"LOG_LEVEL": "debug", "OMP_NUM_THREADS": "1"},
        "RetryStrategy": {"MaximumRetryAttempts": 2},
    }
    req.update(top)
    return req


def small_request(name):
    """A minimal valid request for the older (M22) model. Script-mode images
    need sagemaker_program (the controller fails the job at once without it)."""
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": IMAGE, "TrainingInputMode": "File"},
        "HyperParameters": {"sagemaker_program": "\"train.py\"",
                            "sagemaker_submit_directory": "\"s3://compat-bucket/code/sourcedir.tar.gz\""},
        "RoleArn": ROLE,
        "OutputDataConfig": {"S3OutputPath": "s3://compat-bucket/output"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 10},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    }


def list_tags_all(sm, arn):
    return [t for p in sm.get_paginator("list_tags").paginate(ResourceArn=arn) for t in p["Tags"]]


def is_dt(v):
    return isinstance(v, datetime.datetime) and v.tzinfo is not None


def subset_mismatch(want, got, path=""):
    """First place where got does not contain want (dicts: every key of want,
    recursively; lists: same length, element-wise). None when contained."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return "%s: expected an object, got %s" % (path or "/", short(got, 200))
        for k, v in want.items():
            if k not in got:
                return "%s/%s missing" % (path, k)
            m = subset_mismatch(v, got[k], "%s/%s" % (path, k))
            if m:
                return m
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return "%s: expected a list of %d, got %s" % (path, len(want), short(got, 200))
        for i, (a, b) in enumerate(zip(want, got)):
            m = subset_mismatch(a, b, "%s[%d]" % (path, i))
            if m:
                return m
        return None
    if want != got or type(want) is not type(got):
        return "%s: expected %r, got %r" % (path, want, got)
    return None


def list_all(sm, page_size=None, **kw):
    """All summaries through the list_training_jobs paginator, and the list
    of page lengths."""
    cfg = {"PageSize": page_size} if page_size else {}
    names, pages = [], []
    for page in sm.get_paginator("list_training_jobs").paginate(PaginationConfig=cfg, **kw):
        pages.append(len(page["TrainingJobSummaries"]))
        names.extend(page["TrainingJobSummaries"])
    return names, pages


def wait_status(sm, name, statuses, timeout=15.0):
    if isinstance(statuses, str):
        statuses = (statuses,)
    deadline = time.time() + timeout
    seen = []
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        st = d["TrainingJobStatus"], d.get("SecondaryStatus")
        if not seen or seen[-1] != st:
            seen.append(st)
        if st[0] in statuses:
            return d, seen
        if time.time() > deadline:
            raise Fail("%s: status %s after %.0f s (seen %s), wanted %s" % (name, st, timeout, seen, statuses))
        time.sleep(0.1)
