#!/usr/bin/python3
"""Container images and a registry for the integration tests and benchmarks
(not a test itself). Standard library only; run with Debian's /usr/bin/python3.

  Registry      /usr/bin/docker-registry (distribution 2.8) on a free port:
                htpasswd auth, self-signed TLS, filesystem storage in a temp
                folder; counts the blob and manifest GETs it served (did the
                second job pull?); stopped by PID.
  busybox_image a shell script as /usr/bin/train on busybox-static.
  torch_image   Python 3.11 + torch (gloo) + numpy, copied from this machine.
  static_image  a C program, gcc -static, as /usr/bin/train.
  sized_image   about MB megabytes of incompressible data (pull benchmarks).
  push          an image into a registry (skopeo), returns its digest.
  Podman        a throw-away podman storage: pull, run (runc), cleanup.

No base image can be pulled here, so every image is built from files of
this machine with `podman build`: FROM scratch, one `COPY lN/ /` per layer,
nothing runs at build time. Each layer is described by its inputs (path,
size, mtime and mode of host files; the bytes of generated ones) and an
image by its layers' keys: the first call builds it in a throw-away podman
storage and copies it with skopeo to an OCI layout in the cache (its layers
compressed once), every later call with the same inputs finds that layout
(0.1 s), and a push sends only the blobs a registry lacks. Files keep their
modes and mtimes (host files their own, generated ones 2024-01-01): Python
checks a .pyc against its source's mtime, and with `podman build
--timestamp` every torch import in a container compiled again (2.7 s, not
1.2 s). So the layers are the same for the same inputs in every cache, but
the config holds the time of the build: a rebuild has a new manifest
digest. Measured on 2 cores, torch (626 MB, 237 MB compressed): 15 s to
find its files (ldd), 15-21 s podman build, 5-8 s skopeo's compression.
The images are checked by pulling and running them with podman
(`imagelib_main.py selftest`).

Cache: $TRAINCTL_IMAGE_CACHE, default ~/.cache/trainctl-test-images:
  images/NAME-KEY/      one OCI layout per image, by its inputs' key
  closure-KEY.json      the files the torch image needs (slow to find)
  bin/HEX               static_image's compiled programs
`imagelib_main.py clean` removes it.

podman on this machine (Debian 12, podman 4.3, cgroup v1 hybrid): crun
refuses hybrid cgroups, so containers run with --runtime runc, and the
default rlimits need CAP_SYS_RESOURCE, so --ulimit nofile/nproc are given.
"""
import base64
import fcntl
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import time

# Bump when the way images are built changes: every cached image is new.
# 3: no --timestamp (files keep their mtimes).
FORMAT = 3

REGISTRY_BIN = "/usr/bin/docker-registry"
BUSYBOX = "/bin/busybox"
PYTHON = "/usr/bin/python3"
PY_VER = "python3.11"
DIST = "/usr/lib/python3/dist-packages"
STDLIB = "/usr/lib/" + PY_VER
PATH_ENV = "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
# A fixed time for files the images' makers write (not copied from the host).
EPOCH = 1704067200  # 2024-01-01T00:00:00Z
RUN_FLAGS = ["--runtime", "runc", "--network", "host",
             "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"]



def cache_dir():
    d = os.environ.get("TRAINCTL_IMAGE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "trainctl-test-images")
    os.makedirs(d, exist_ok=True)
    return d


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _write_atomic(path, data):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


class _Lock:
    """flock on the cache: one build at a time across processes."""

    def __enter__(self):
        self.f = open(os.path.join(cache_dir(), ".lock"), "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


# ---------------------------------------------------------------- registry

def free_port(addr="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((addr, 0))
        return s.getsockname()[1]
    finally:
        s.close()


def _pid_alive(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return not re.search(r"^State:\s*Z", f.read(), re.M)
    except OSError:
        return False


# One access-log line (gorilla's combined format), e.g.
# 127.0.0.1 - - [..] "GET /v2/a/b/blobs/sha256:HEX HTTP/1.1" 200 123 "" "ua"
_ACCESS_RE = re.compile(r'"(GET|HEAD|PUT|POST|PATCH|DELETE) (/v2/\S*) HTTP/[0-9.]+" (\d{3}) ')
_BLOB_RE = re.compile(r"^/v2/(.+)/blobs/(sha256:[0-9a-f]{64})$")
_MANIFEST_RE = re.compile(r"^/v2/(.+)/manifests/([^/?]+)$")


class Registry:
    """A distribution registry (Debian docker-registry 2.8) of its own.

    Registry(addr, port=0: a free one, user/password: htpasswd auth,
    tls: a self-signed certificate for addr, workdir: where its config,
    data and log go; None: a temp folder under /tmp, removed by stop()).
    start() returns self once GET /v2/ answers; stop() ends it by PID.
    """

    def __init__(self, addr="127.0.0.1", port=0, user=None, password=None, tls=False, workdir=None):
        if (user is None) != (password is None):
            raise ValueError("user and password go together")
        self.addr = addr
        self.port = int(port or 0)
        self._auto_port = not port
        self.user, self.password, self.tls = user, password, tls
        self._own_workdir = workdir is None
        self.workdir = workdir
        self.proc = None
        self.pid = None
        self.cert = self.key = self.cert_dir = None

    # -- addresses
    @property
    def host(self):
        return "%s:%d" % (self.addr, self.port)

    @property
    def url(self):
        return "%s://%s" % ("https" if self.tls else "http", self.host)

    @property
    def creds(self):
        """'user:password' (skopeo --creds, podman --creds) or None."""
        return None if self.user is None else "%s:%s" % (self.user, self.password)

    @property
    def log_path(self):
        return os.path.join(self.workdir, "registry.log")

    def auth_json(self):
        """A containers auth.json text with this registry's credentials."""
        auths = {}
        if self.user is not None:
            auths[self.host] = {"auth": base64.b64encode(self.creds.encode()).decode()}
        return json.dumps({"auths": auths}, indent=1) + "\n"

    def write_auth_json(self, path=None):
        """Writes auth_json() (mode 0600) to path, default WORKDIR/auth.json."""
        path = path or os.path.join(self.workdir, "auth.json")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.auth_json())
        return path

    # -- life
    def _prepare(self):
        if self.workdir is None:
            self.workdir = tempfile.mkdtemp(prefix="trainctl-registry-", dir="/tmp")
        os.makedirs(os.path.join(self.workdir, "data"), exist_ok=True)
        auth = ""
        if self.user is not None:
            out = subprocess.run(["htpasswd", "-Bbn", self.user, self.password],
                                 capture_output=True, text=True, check=True).stdout
            with open(os.path.join(self.workdir, "htpasswd"), "w") as f:
                f.write(out.strip() + "\n")
            auth = ("auth:\n  htpasswd:\n    realm: trainctl-test-registry\n"
                    "    path: %s\n" % os.path.join(self.workdir, "htpasswd"))
        tls = ""
        if self.tls:
            d = os.path.join(self.workdir, "tls")
            os.makedirs(d, exist_ok=True)
            self.cert, self.key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
            san = "IP:%s" % self.addr if re.match(r"^[0-9.]+$", self.addr) else "DNS:%s" % self.addr
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                            "-keyout", self.key, "-out", self.cert, "-days", "7",
                            "-subj", "/CN=%s" % self.addr,
                            "-addext", "subjectAltName=%s,DNS:localhost" % san,
                            "-addext", "basicConstraints=critical,CA:TRUE"],
                           capture_output=True, check=True)
            # podman/skopeo --cert-dir: a folder of *.crt CAs.
            self.cert_dir = os.path.join(d, "certs.d")
            os.makedirs(self.cert_dir, exist_ok=True)
            shutil.copyfile(self.cert, os.path.join(self.cert_dir, "ca.crt"))
            tls = "  tls:\n    certificate: %s\n    key: %s\n" % (self.cert, self.key)
        cfg = ("version: 0.1\n"
               "log:\n  level: info\n  formatter: text\n  accesslog:\n    disabled: false\n"
               "storage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\n"
               "http:\n  addr: %s\n  secret: %s\n%s%s"
               % (os.path.join(self.workdir, "data"), self.host,
                  base64.b32encode(os.urandom(20)).decode(), tls, auth))
        self.config = os.path.join(self.workdir, "config.yml")
        with open(self.config, "w") as f:
            f.write(cfg)

    def _probe(self):
        """HTTP status of GET /v2/, or None when nothing answers."""
        try:
            if self.tls:
                ctx = ssl.create_default_context(cafile=self.cert)
                c = http.client.HTTPSConnection(self.addr, self.port, timeout=2, context=ctx)
            else:
                c = http.client.HTTPConnection(self.addr, self.port, timeout=2)
            c.request("GET", "/v2/")
            status = c.getresponse().status
            c.close()
            return status
        except (OSError, http.client.HTTPException):
            return None

    def start(self, timeout=15):
        for attempt in range(3):
            if self._auto_port:
                self.port = free_port(self.addr)
            self._prepare()
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen([REGISTRY_BIN, "serve", self.config], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            log.close()
            self.pid = self.proc.pid
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                status = self._probe()
                if status == 200 or (status == 401 and self.user is not None):
                    return self
                time.sleep(0.05)
            tail = self.log_tail()
            retry = self._auto_port and "address already in use" in tail and attempt < 2
            self.stop(remove=None if not retry else False)
            if retry:
                continue
            raise RuntimeError("docker-registry on %s did not come up; log %s:\n%s"
                               % (self.host, self.log_path, tail))
        raise AssertionError("unreachable")

    def log_tail(self, n=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self, remove=None):
        """SIGTERM by PID (its own process group), SIGKILL after 5 s; removes
        a temp workdir unless remove=False or TRAINCTL_TEST_KEEP=1."""
        if self.proc is not None:
            for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                if self.proc.poll() is not None:
                    break
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(wait)
                except subprocess.TimeoutExpired:
                    pass
            self.proc.wait()
            self.proc = None
        if remove is None:
            remove = self._own_workdir and os.environ.get("TRAINCTL_TEST_KEEP") != "1"
        if remove and self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self):
        return self.start() if self.proc is None else self

    def __exit__(self, *exc):
        self.stop()

    # -- what it served
    def requests(self):
        """(method, path, status) for every request in its access log."""
        out = []
        try:
            with open(self.log_path, errors="replace") as f:
                for line in f:
                    m = _ACCESS_RE.search(line)
                    if m:
                        out.append((m.group(1), m.group(2).split("?")[0], int(m.group(3))))
        except OSError:
            pass
        return out

    def _count(self, regex, repo):
        n = 0
        for method, path, status in self.requests():
            m = regex.match(path)
            if method == "GET" and m and 200 <= status < 300 and (repo is None or m.group(1) == repo):
                n += 1
        return n

    def blob_gets(self, repo=None):
        """Successful GET /v2/REPO/blobs/sha256:... so far (all repos when None)."""
        return self._count(_BLOB_RE, repo)

    def config_digests(self):
        """The config blob digest of every manifest the registry stores."""
        root = os.path.join(self.workdir, "data", "docker", "registry", "v2")
        out = set()
        for dirpath, _, filenames in os.walk(os.path.join(root, "repositories")):
            if "link" in filenames and "/_manifests/revisions/sha256/" in dirpath:
                hexd = os.path.basename(dirpath)
                try:
                    with open(os.path.join(root, "blobs", "sha256", hexd[:2], hexd, "data")) as f:
                        out.add(json.load(f)["config"]["digest"])
                except (OSError, ValueError, KeyError, TypeError):
                    pass
        return out

    def layer_gets(self, repo=None):
        """Successful GETs of layer blobs (blob_gets less the image configs):
        pulling an image a host already has GETs its manifest and, with
        podman 4.3, its config blob again, but no layer."""
        configs = self.config_digests()
        n = 0
        for method, path, status in self.requests():
            m = _BLOB_RE.match(path)
            if (method == "GET" and m and 200 <= status < 300 and m.group(2) not in configs
                    and (repo is None or m.group(1) == repo)):
                n += 1
        return n

    def manifest_gets(self, repo=None):
        """Successful GET /v2/REPO/manifests/REF so far."""
        return self._count(_MANIFEST_RE, repo)


# ---------------------------------------------------------------- layers

class _Layer:
    """The files of one layer, by path in the image (no leading /)."""

    def __init__(self, name):
        self.name = name
        self.entries = {}  # path -> (kind, mode, mtime, payload)

    def _put(self, path, kind, mode, mtime, payload):
        path = path.strip("/")
        if not path:
            return
        self.entries[path] = (kind, mode, mtime, payload)

    def dir(self, path, mode=0o755, mtime=EPOCH):
        self._put(path, "d", mode, mtime, None)

    def data(self, path, data, mode=0o644, mtime=EPOCH):
        if isinstance(data, str):
            data = data.encode()
        self._put(path, "f", mode, mtime, bytes(data))

    def random(self, path, size, seed, mode=0o644, mtime=EPOCH):
        """size bytes of shake_256(seed): incompressible, the same every
        time, made only when the layer is written."""
        self._put(path, "g", mode, mtime, [seed, size])

    def link(self, path, target, mtime=EPOCH):
        self._put(path, "l", 0o777, mtime, target)

    def host_file(self, path, src=None, mode=None):
        """A host file, copied as it is (mode, mtime), at path."""
        st = os.stat(src or path)
        self._put(path, "h", mode if mode is not None else stat.S_IMODE(st.st_mode), int(st.st_mtime),
                  (src or path, st.st_size, st.st_mtime_ns))

    def host_path(self, path):
        """A host path with every symlink on the way to it (merged /usr,
        /etc/alternatives, soname links), each at its own path, so that the
        image resolves it the way this machine does. Returns the real path,
        or None when it does not exist."""
        parts = [p for p in path.split("/") if p]
        cur = ""
        hops = 0
        while parts:
            nxt = cur + "/" + parts.pop(0)
            try:
                st = os.lstat(nxt)
            except OSError:
                return None
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(nxt)
                self.link(nxt, target, int(st.st_mtime))
                hops += 1
                if hops > 40:
                    return None
                base = "" if target.startswith("/") else cur
                parts = [p for p in (base + "/" + target).split("/") if p] + parts
                # Normalise "..", relative to the resolved prefix.
                resolved = []
                for p in parts:
                    if p == "..":
                        if resolved:
                            resolved.pop()
                    elif p != ".":
                        resolved.append(p)
                parts, cur = resolved, ""
                continue
            if stat.S_ISDIR(st.st_mode):
                if not parts:
                    self._put(nxt, "d", stat.S_IMODE(st.st_mode), int(st.st_mtime), None)
            elif stat.S_ISREG(st.st_mode):
                if parts:
                    return None
                self._put(nxt, "h", stat.S_IMODE(st.st_mode), int(st.st_mtime),
                          (nxt, st.st_size, st.st_mtime_ns))
            cur = nxt
        return cur or "/"

    def host_tree(self, top, skip_dir=lambda path: False, skip_file=lambda path: False):
        """A host folder: files, folders and symlinks as they are; a symlink
        to a file also brings the file it points to (as host_path)."""
        for dirpath, dirnames, filenames in os.walk(top):
            st = os.lstat(dirpath)
            self._put(dirpath, "d", stat.S_IMODE(st.st_mode), int(st.st_mtime), None)
            keep = []
            for d in sorted(dirnames):
                p = os.path.join(dirpath, d)
                if skip_dir(p):
                    continue
                if os.path.islink(p):
                    # A link to a folder (headers, tests): the link only.
                    self.link(p, os.readlink(p), int(os.lstat(p).st_mtime))
                    continue
                keep.append(d)
            dirnames[:] = keep
            for fn in filenames:
                p = os.path.join(dirpath, fn)
                if skip_file(p):
                    continue
                if os.path.islink(p):
                    self.host_path(p)
                else:
                    st = os.lstat(p)
                    if stat.S_ISREG(st.st_mode):
                        self._put(p, "h", stat.S_IMODE(st.st_mode), int(st.st_mtime),
                                  (p, st.st_size, st.st_mtime_ns))

    def key(self):
        h = hashlib.sha256(("trainctl-layer %d\n" % FORMAT).encode())
        for path in sorted(self.entries):
            kind, mode, mtime, payload = self.entries[path]
            if kind == "f":
                payload = _sha(payload)
            h.update(json.dumps([path, kind, mode, mtime, payload]).encode() + b"\n")
        return h.hexdigest()

    def _ordered(self):
        """Entries with every parent folder, parents first."""
        ents = dict(self.entries)
        for path in list(ents):
            parts = path.split("/")
            for i in range(1, len(parts)):
                ents.setdefault("/".join(parts[:i]), ("d", 0o755, EPOCH, None))
        return sorted(ents.items(), key=lambda kv: kv[0].split("/"))

    def unpacked(self):
        """Bytes of its files (about its size on disk)."""
        n = 0
        for kind, mode, mtime, payload in self.entries.values():
            if kind == "f":
                n += len(payload)
            elif kind == "g":
                n += payload[1]
            elif kind == "h":
                n += payload[1]
        return n

    def materialize(self, top):
        """Writes the layer's files under top, for `podman build`'s COPY:
        host files hard-linked where their mode is kept (else copied),
        generated ones written, links and folders made, modes and mtimes
        set (never on a host file's inode)."""
        for path, (kind, mode, mtime, payload) in self._ordered():
            dst = os.path.join(top, path)
            if kind == "d":
                os.makedirs(dst, exist_ok=True)
            elif kind == "l":
                os.symlink(payload, dst)
                os.utime(dst, (mtime, mtime), follow_symlinks=False)
                continue
            elif kind == "h":
                src = payload[0]
                if stat.S_IMODE(os.stat(src).st_mode) == mode:
                    try:
                        os.link(src, dst)
                        continue
                    except OSError:
                        pass
                shutil.copyfile(src, dst)
            elif kind == "f":
                with open(dst, "wb") as f:
                    f.write(payload)
            else:
                seed, size = payload
                with open(dst, "wb") as f:
                    f.write(hashlib.shake_256(seed.encode()).digest(size))
            os.chmod(dst, mode)
        # Folders last, deepest first: writing into one changes its mtime.
        for path, (kind, mode, mtime, payload) in reversed(self._ordered()):
            if kind == "d":
                os.chmod(os.path.join(top, path), mode)
                os.utime(os.path.join(top, path), (mtime, mtime))
            elif kind in "fg" or (kind == "h" and not os.path.samefile(payload[0], os.path.join(top, path))):
                os.utime(os.path.join(top, path), (mtime, mtime))


class Image:
    """An image in an OCI layout of the cache (what push() takes).

    name      what made it ("busybox", "torch", ...)
    layout    the OCI layout folder; ref is "oci:LAYOUT:latest" (skopeo,
              podman pull oci:...)
    digest    the manifest's digest: the digest a registry serves it under
    size      bytes a pull transfers (layers + config + manifest)
    unpacked  bytes of its layers' files (about its size on disk)
    layers    [{name, digest, size, diff_id, unpacked, cached}]
    seconds   what this call took; built: whether it was built now (not
              found in the cache)
    """

    def __init__(self, name, layout, digest, size, unpacked, layers, seconds):
        self.name, self.layout, self.digest = name, layout, digest
        self.size, self.unpacked, self.layers, self.seconds = size, unpacked, layers, seconds
        self.built = any(not la.get("cached") for la in layers)

    @property
    def ref(self):
        return "oci:%s:latest" % self.layout

    def __repr__(self):
        return "<Image %s %s %.1f MB>" % (self.name, self.digest[:19], self.size / 1e6)


def _podman_build(name, tag, layers, env, cmd, entrypoint, labels, layout):
    """`podman build` of the layers (FROM scratch, one COPY each) in a
    storage of its own, then `skopeo copy` to an OCI layout at layout:
    the layers compressed once, for every later push. --layers: a layer
    for each COPY (also where BUILDAH_LAYERS says otherwise); no
    --timestamp, which would set every file's mtime."""
    d = tempfile.mkdtemp(prefix="tcib-", dir="/tmp")  # podman: runroot <= 50 bytes
    try:
        ctx = os.path.join(d, "ctx")
        lines = ["FROM scratch"]
        for i, la in enumerate(layers):
            top = os.path.join(ctx, "l%d" % i)
            os.makedirs(top)
            la.materialize(top)
            lines.append("COPY l%d/ /" % i)
        for e in env:
            k, _, v = e.partition("=")
            lines.append("ENV %s=%s" % (k, json.dumps(v)))
        for k, v in sorted(dict(labels or {}, **{"org.trainctl.test-image": name}).items()):
            lines.append("LABEL %s=%s" % (json.dumps(k), json.dumps(v)))
        if entrypoint:
            lines.append("ENTRYPOINT " + json.dumps(list(entrypoint)))
        if cmd:
            lines.append("CMD " + json.dumps(list(cmd)))
        with open(os.path.join(ctx, "Containerfile"), "w") as f:
            f.write("\n".join(lines) + "\n")
        store = ["--root", d + "/s", "--runroot", d + "/r"]
        pm = ["podman"] + store + ["--storage-driver", "overlay", "--tmpdir", d + "/t", "--cgroup-manager", "cgroupfs",
                                  "--events-backend", "file"]
        ref = "localhost/trainctl-test/%s:%s" % (name, tag)
        r = subprocess.run(pm + ["build", "--quiet", "--layers", "--network", "none", "-t", ref,
                                 "-f", os.path.join(ctx, "Containerfile"), ctx],
                           capture_output=True, text=True, timeout=1800)
        if r.returncode:
            raise RuntimeError("podman build of %s failed: %s" % (name, r.stderr.strip()[-2000:]))
        tmp = layout + ".tmp.%d" % os.getpid()
        shutil.rmtree(tmp, ignore_errors=True)
        r = subprocess.run(["skopeo", "--policy", _policy(), "copy", "--quiet",
                            "containers-storage:[overlay@%s/s+%s/r]%s" % (d, d, ref), "oci:%s:latest" % tmp],
                           capture_output=True, text=True, timeout=1800)
        if r.returncode:
            raise RuntimeError("skopeo copy of %s to an OCI layout failed: %s" % (name, r.stderr.strip()[-2000:]))
        shutil.rmtree(layout, ignore_errors=True)
        os.rename(tmp, layout)
        subprocess.run(pm + ["rmi", "--all", "--force"], capture_output=True, timeout=300)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _read_layout(layout):
    """(manifest digest, manifest, config) of an OCI layout's one image."""
    with open(os.path.join(layout, "index.json")) as f:
        desc = json.load(f)["manifests"][0]
    blobs = os.path.join(layout, "blobs", "sha256")
    with open(os.path.join(blobs, desc["digest"].split(":", 1)[1])) as f:
        manifest = json.load(f)
    with open(os.path.join(blobs, manifest["config"]["digest"].split(":", 1)[1])) as f:
        config = json.load(f)
    return desc["digest"], manifest, config


def _assemble(name, layers, env, cmd=None, entrypoint=None, labels=None):
    """The image of these layers, from the cache or built now (podman
    build); returns an Image."""
    t0 = time.monotonic()
    h = hashlib.sha256(("trainctl-image %d\n" % FORMAT).encode())
    h.update(json.dumps([name, [la.key() for la in layers], list(env), cmd, entrypoint, labels],
                        sort_keys=True).encode())
    key = h.hexdigest()[:16]
    layout = os.path.join(cache_dir(), "images", "%s-%s" % (name, key))
    built = False
    with _Lock():
        if not os.path.exists(os.path.join(layout, "index.json")):
            os.makedirs(os.path.dirname(layout), exist_ok=True)
            _podman_build(name, key, layers, env, cmd, entrypoint, labels, layout)
            built = True
    digest, manifest, config = _read_layout(layout)
    diff_ids = config.get("rootfs", {}).get("diff_ids", [])
    metas = []
    for i, (la, desc) in enumerate(zip(layers, manifest["layers"])):
        metas.append({"name": la.name, "digest": desc["digest"], "size": desc["size"],
                      "diff_id": diff_ids[i] if i < len(diff_ids) else None, "unpacked": la.unpacked(),
                      "cached": not built})
    size = manifest["config"]["size"] + sum(m["size"] for m in metas)
    with open(os.path.join(layout, "index.json")) as f:
        size += json.load(f)["manifests"][0]["size"]
    return Image(name, layout, digest, size, sum(m["unpacked"] for m in metas), metas, time.monotonic() - t0)


def _extra_layer(extra_files, name="files"):
    """{path: bytes | str | (bytes, mode)}: mode 0755 for '#!' scripts,
    else 0644, unless given."""
    la = _Layer(name)
    for path, v in sorted((extra_files or {}).items()):
        if isinstance(v, tuple):
            data, mode = v
        else:
            data, mode = v, None
        if isinstance(data, str):
            data = data.encode()
        if mode is None:
            mode = 0o755 if data.startswith(b"#!") else 0o644
        la.data(path, data, mode)
    return la


_BASE = None


def _base_layer():
    """busybox-static at /usr/bin/busybox with an applet link for each of
    its commands, a merged /usr (/bin, /sbin, /lib, /lib64 are links as on
    Debian 12), root and nobody, /tmp."""
    global _BASE
    if _BASE is not None:
        return _BASE
    la = _Layer("base")
    for d in ("usr", "usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "usr/local", "usr/local/bin",
              "etc", "dev", "proc", "sys", "run", "var", "home", "mnt", "opt"):
        la.dir(d)
    la.dir("tmp", 0o1777)
    la.dir("var/tmp", 0o1777)
    la.dir("root", 0o700)
    for d in ("bin", "sbin", "lib", "lib64"):
        la.link(d, "usr/" + d)
    la.host_file("usr/bin/busybox", BUSYBOX, 0o755)
    listed = subprocess.run([BUSYBOX, "--list-full"], capture_output=True, text=True, check=True).stdout
    for p in listed.split():
        if "/" not in p:
            continue  # /linuxrc
        p = re.sub(r"^(s?bin)/", r"usr/\1/", p)
        if p != "usr/bin/busybox":
            la.link(p, "/usr/bin/busybox")
    la.data("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    la.data("etc/group", "root:x:0:\nnogroup:x:65534:\n")
    la.data("etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n")
    _BASE = la
    return la


# ---------------------------------------------------------------- images

def busybox_image(script_text, extra_files=None, env=()):
    """busybox with script_text as /usr/bin/train (a '#!/bin/sh' line is
    added when it has none): `podman run IMAGE train` runs it, as SageMaker
    runs `docker run IMAGE train`. No ENTRYPOINT, no CMD. extra_files:
    {path: bytes | str | (bytes, mode)}. Returns an Image."""
    if isinstance(script_text, bytes):
        script_text = script_text.decode()
    if not script_text.startswith("#!"):
        script_text = "#!/bin/sh\n" + script_text
    files = dict(extra_files or {})
    files["/usr/bin/train"] = (script_text.encode(), 0o755)
    return _assemble("busybox", [_base_layer(), _extra_layer(files)],
                     [PATH_ENV] + list(env))


def static_image(c_source_text, extra_files=None, env=()):
    """c_source_text compiled with gcc -static -O2 as /usr/bin/train, on
    busybox. Returns an Image."""
    if isinstance(c_source_text, bytes):
        c_source_text = c_source_text.decode()
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True, check=True).stdout
    h = _sha(("%s\n%s" % (gcc.splitlines()[0], c_source_text)).encode())
    binpath = os.path.join(cache_dir(), "bin", h)
    if not os.path.exists(binpath):
        os.makedirs(os.path.dirname(binpath), exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="trainctl-img-cc-", dir="/tmp") as tmp:
            src = os.path.join(tmp, "train.c")
            with open(src, "w") as f:
                f.write(c_source_text)
            r = subprocess.run(["gcc", "-static", "-O2", "-o", os.path.join(tmp, "train"), src],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("gcc -static failed:\n" + r.stderr)
            shutil.move(os.path.join(tmp, "train"), binpath + ".tmp")
            os.replace(binpath + ".tmp", binpath)
    with open(binpath, "rb") as f:
        binary = f.read()
    files = dict(extra_files or {})
    files["/usr/bin/train"] = (binary, 0o755)
    return _assemble("static", [_base_layer(), _extra_layer(files)], [PATH_ENV] + list(env))


def sized_image(mb, layers=4, seed="trainctl"):
    """busybox plus about mb MB of incompressible bytes (a fixed stream, so
    the same mb gives the same image) in /data/part-K.bin, spread over
    `layers` layers. Returns an Image."""
    total = int(mb * 1024 * 1024)
    n = max(1, min(layers, total // (1 << 20) or 1))
    out = [_base_layer()]
    for k in range(n):
        size = total // n + (1 if k < total % n else 0)
        la = _Layer("data%d" % k)
        la.random("data/part-%d.bin" % k, size, "%s-%d-%d" % (seed, total, k))
        out.append(la)
    img = _assemble("sized%d" % int(mb), out, [PATH_ENV])
    return img


# The torch image: what `import torch, torch.distributed, numpy` and a gloo
# process group load, found by running them here once (cached).
_CLOSURE_SCRIPT = r"""
import json, os, sys
sys.path.append(%(dist)r)
import torch, torch.distributed as dist, numpy
dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
t = torch.ones(2)
dist.all_reduce(t)
dist.destroy_process_group()
libs = set()
with open("/proc/self/maps") as f:
    for line in f:
        p = line.split()
        if len(p) >= 6 and p[5].startswith("/") and ".so" in p[5]:
            libs.add(p[5])
mods = sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)})
print(json.dumps({"torch": torch.__version__, "libs": sorted(libs), "modules": mods}))
"""

_STDLIB_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "dist-packages",
                "site-packages", "pydoc_data"}


def _stat_key(paths):
    h = hashlib.sha256()
    for p in paths:
        try:
            st = os.stat(p)
            h.update(("%s %d %d\n" % (p, st.st_size, st.st_mtime_ns)).encode())
        except OSError:
            h.update(("%s -\n" % p).encode())
    return h.hexdigest()


def _ldd(files):
    """Every library (absolute path as the loader finds it) that files need."""
    out = set()
    for i in range(0, len(files), 64):
        r = subprocess.run(["ldd"] + files[i:i + 64], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            m = re.match(r"^\s+\S+ => (/\S+) \(", line) or re.match(r"^\s+(/\S+) \(", line)
            if m:
                out.add(m.group(1))
    return sorted(out)


def _torch_closure():
    """{torch, packages: [dist-packages top-level paths], libs: [paths]},
    cached by the stat of the interpreter, torch and numpy."""
    probe = [os.path.realpath(PYTHON), DIST + "/torch/version.py", DIST + "/numpy/version.py",
             os.path.realpath("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13"), STDLIB + "/os.py"]
    key = _stat_key(probe + ["format %d" % FORMAT])
    path = os.path.join(cache_dir(), "closure-%s.json" % key[:32])
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        pass
    with tempfile.TemporaryDirectory(prefix="trainctl-img-probe-", dir="/tmp") as tmp:
        r = subprocess.run([PYTHON, "-I", "-S", "-B", "-c", _CLOSURE_SCRIPT % {"dist": DIST},
                            os.path.join(tmp, "store")], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("cannot import torch here:\n" + r.stderr[-2000:])
    found = json.loads(r.stdout.strip().splitlines()[-1])
    packages = set()
    for m in found["modules"]:
        if m.startswith(DIST + "/"):
            top = m[len(DIST) + 1:].split("/")[0]
            packages.add(os.path.join(DIST, top))
    # Their installed metadata too (importlib.metadata.version("torch")).
    names = {re.sub(r"[-_.]+", "_", os.path.basename(p).split(".py")[0].lower()) for p in packages}
    for e in sorted(os.listdir(DIST)):
        if e.endswith((".dist-info", ".egg-info")):
            if re.sub(r"[-_.]+", "_", e.split("-")[0].lower()) in names:
                packages.add(os.path.join(DIST, e))
    objs = [PYTHON] + found["libs"]
    for top in sorted(packages) + [STDLIB + "/lib-dynload"]:
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d != "tests"]
            objs += [os.path.join(dirpath, fn) for fn in filenames
                     if ".so" in fn and os.path.isfile(os.path.join(dirpath, fn))]
    libs = sorted(set(found["libs"]) | set(_ldd(sorted(set(objs)))))
    closure = {"torch": found["torch"], "packages": sorted(packages), "libs": libs,
               "modules": found["modules"]}
    _write_atomic(path, json.dumps(closure, indent=1).encode())
    return closure


_TORCH_OWN = re.compile(r"/lib(torch|c10|caffe2|shm|dnnl|gloo|tensorpipe|XNNPACK|sleef|onnx)[^/]*$")


def torch_image(extra_files=None, env=()):
    """Python 3.11 with torch (gloo) and numpy, from this machine's files:
    the interpreter, the standard library (no tests, idle, tkinter), the
    dist-packages that `import torch, torch.distributed, numpy` uses (whole
    packages, without their tests/ folders), every shared library they and
    the interpreter load (ldd), on busybox; Env PATH, PYTHONUNBUFFERED=1,
    LANG=C.UTF-8. extra_files as for busybox_image (e.g. '/usr/bin/train':
    a '#!/usr/bin/python3' script).
    Returns an Image; the first call here takes 35-45 s (2 cores), later
    ones with the same files about 0.1 s."""
    t0 = time.monotonic()
    cl = _torch_closure()
    own, other = _Layer("libtorch"), _Layer("libs")
    for lib in cl["libs"]:
        real = os.path.realpath(lib)
        (own if _TORCH_OWN.search(real) else other).host_path(lib)
    py = _Layer("python")
    py.host_path(PYTHON)
    py.host_path("/usr/bin/" + PY_VER)
    py.host_tree(STDLIB,
                 skip_dir=lambda p: p[len(STDLIB) + 1:] in _STDLIB_SKIP or
                 os.path.basename(p).startswith("config-"))
    site = _Layer("dist-packages")
    site.dir(DIST)
    for top in cl["packages"]:
        if os.path.isdir(top):
            site.host_tree(top, skip_dir=lambda p: os.path.basename(p) == "tests")
        else:
            site.host_path(top)
    layers = [_base_layer(), other, own, py, site]
    if extra_files:
        layers.append(_extra_layer(extra_files))
    # torch/lib/*.so link to the libraries: the libs layers hold them once.
    seen = {}
    for la in layers:
        for path, ent in list(la.entries.items()):
            if seen.get(path) == ent:
                del la.entries[path]
            else:
                seen[path] = ent
    img = _assemble("torch", layers,
                    [PATH_ENV, "PYTHONUNBUFFERED=1", "LANG=C.UTF-8"] + list(env),
                    labels={"org.trainctl.torch": cl["torch"]})
    img.seconds = time.monotonic() - t0
    return img


# ---------------------------------------------------------------- push

class Pushed(tuple):
    """(ref 'host/repo:tag', digest 'sha256:...'); .pinned is
    'host/repo@sha256:...'."""

    def __new__(cls, ref, digest):
        return tuple.__new__(cls, (ref, digest))

    ref = property(lambda self: self[0])
    digest = property(lambda self: self[1])

    @property
    def pinned(self):
        return self.ref.rsplit(":", 1)[0] + "@" + self.digest if "@" not in self.ref else self.ref


def _policy():
    path = os.path.join(cache_dir(), "policy.json")
    if not os.path.exists(path):
        _write_atomic(path, b'{"default":[{"type":"insecureAcceptAnything"}]}\n')
    return path


def push(image, registry, ref, creds=None, tls_verify=None, timeout=900):
    """Copies image (an Image, or an OCI layout folder) to registry (a
    Registry, or 'host:port') as ref ('repo:tag') with skopeo; blobs the
    registry has are not sent again. creds: 'user:password' (default: the
    Registry's). tls_verify: default off for a 'host:port' and a plain-HTTP
    Registry, on with the Registry's certificate for a TLS one. Returns a
    Pushed (ref 'host/repo:tag', digest)."""
    layout = image.layout if isinstance(image, Image) else image
    cert_dir = None
    if isinstance(registry, Registry):
        host = registry.host
        creds = creds if creds is not None else registry.creds
        if registry.tls and tls_verify is not False:
            tls_verify, cert_dir = True, registry.cert_dir
    else:
        host = registry
    dest = "%s/%s" % (host, ref)
    with tempfile.TemporaryDirectory(prefix="trainctl-img-push-", dir="/tmp") as tmp:
        digestfile = os.path.join(tmp, "digest")
        cmd = ["skopeo", "--policy", _policy(), "copy", "--quiet",
               "--dest-tls-verify=%s" % ("true" if tls_verify else "false"), "--digestfile", digestfile]
        if cert_dir:
            cmd += ["--dest-cert-dir", cert_dir]
        if creds:
            cmd += ["--dest-creds", creds]
        cmd += ["oci:%s:latest" % layout, "docker://" + dest]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("skopeo copy to %s failed: %s" % (dest, r.stderr.strip()[-2000:]))
        with open(digestfile) as f:
            digest = f.read().strip()
    return Pushed(dest, digest)


# ---------------------------------------------------------------- podman

class Podman:
    """podman with a storage of its own under a temp folder (never
    /var/lib/containers): pull, run (runc, the ulimits this machine needs,
    host network), cleanup() removes images and the folder."""

    def __init__(self, root=None):
        self.root = root or tempfile.mkdtemp(prefix="trainctl-podman-", dir="/tmp")
        for d in ("storage", "run", "tmp", "net"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)

    @property
    def base(self):
        r = self.root
        return ["podman", "--root", r + "/storage", "--runroot", r + "/run", "--tmpdir", r + "/tmp",
                "--network-config-dir", r + "/net", "--cgroup-manager", "cgroupfs",
                "--events-backend", "file"]

    def __call__(self, *args, timeout=600, check=True):
        r = subprocess.run(self.base + list(args), capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        if check and r.returncode != 0:
            raise RuntimeError("podman %s: exit %d: %s" % (" ".join(args[:2]), r.returncode,
                                                             (r.stderr or r.stdout).strip()[-2000:]))
        return r

    def pull(self, ref, creds=None, tls_verify=False, cert_dir=None, auth_file=None):
        args = ["pull", "--quiet", "--tls-verify=%s" % ("true" if tls_verify else "false")]
        if creds:
            args += ["--creds", creds]
        if cert_dir:
            args += ["--cert-dir", cert_dir]
        if auth_file:
            args += ["--authfile", auth_file]
        return self(*(args + [ref])).stdout.strip()

    def run(self, image, *cmd, args=(), check=True, timeout=600):
        """podman run --rm (runc, host network, ulimits) IMAGE CMD...;
        returns the CompletedProcess."""
        return self(*(["run", "--rm"] + RUN_FLAGS + list(args) + [image] + list(cmd)),
                    check=check, timeout=timeout)

    def cleanup(self):
        self("rm", "-a", "-f", check=False, timeout=120)
        self("rmi", "-a", "-f", check=False, timeout=120)
        # Storage mounts (overlay) must go before the folder does.
        with open("/proc/self/mountinfo") as f:
            mounts = [ln.split()[4] for ln in f]
        for m in sorted((m for m in mounts if m.startswith(self.root + "/")), key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


if __name__ == "__main__":
    import imagelib_main
    sys.exit(imagelib_main.main(sys.argv[1:]))
