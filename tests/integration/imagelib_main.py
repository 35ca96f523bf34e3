#!/usr/bin/python3
"""imagelib.py's command line: `imagelib.py selftest` builds each kind of
image, pushes it to a throwaway registry and runs it with podman; `build
torch|busybox|sized [MB]` builds one; `clean` empties the cache."""
import base64
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from imagelib import *  # noqa: E402,F401,F403
from imagelib import _pid_alive  # noqa: E402


_BUSYBOX_SCRIPT = """#!/bin/sh
echo "train: uid=$(id -u) args=$* hostname-ok=$(hostname >/dev/null && echo y)"
ls /opt/ml >/dev/null 2>&1 || echo "train: no /opt/ml"
cat /etc/trainctl-test
"""

_TORCH_TRAIN = """#!/usr/bin/python3
import os, tempfile, torch, torch.distributed as dist
store = os.path.join(tempfile.mkdtemp(), "store")
dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
t = torch.arange(4.0)
dist.all_reduce(t)
print("torch", torch.__version__, "gloo", dist.is_gloo_available(), "sum", float(t.sum()))
"""

_TORCH_DDP = """import sys, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
sys.stdout.write("rank %d of %d sum %.1f\\n" % (dist.get_rank(), dist.get_world_size(), float(t)))
"""

_STATIC_SRC = r"""
#include <stdio.h>
int main(int argc, char **argv) { printf("static train argc=%d\n", argc); return 0; }
"""


def selftest():
    n = [0]
    failed = [0]
    timings = []

    def ok(cond, what, diag=""):
        n[0] += 1
        print("%sok %d - %s" % ("" if cond else "not ", n[0], what), flush=True)
        if not cond:
            failed[0] += 1
            for line in str(diag).splitlines()[-20:]:
                print("# " + line, flush=True)
        return cond

    def timed(label, fn):
        t = time.monotonic()
        v = fn()
        dt = time.monotonic() - t
        timings.append((label, dt))
        return v, dt

    reg = Registry(user="tester", password="s3cret-%d" % os.getpid())
    pm = Podman()
    try:
        _, dt = timed("registry start", reg.start)
        ok(True, "registry with htpasswd auth on %s (pid %d, %.2f s)" % (reg.host, reg.pid, dt))
        ok(reg._probe() == 401, "GET /v2/ without credentials is 401")

        bb, dt = timed("busybox build", lambda: busybox_image(
            _BUSYBOX_SCRIPT, {"/etc/trainctl-test": "extra file\n"}))
        ok(bb.size > 0, "busybox image %s, %.1f MB, %.2f s" % (bb.digest[:19], bb.size / 1e6, dt))
        bb2, dt = timed("busybox build (cached)", lambda: busybox_image(
            _BUSYBOX_SCRIPT, {"/etc/trainctl-test": "extra file\n"}))
        ok(bb2.digest == bb.digest and not bb2.built, "busybox again: same digest, nothing written (%.2f s)" % dt)

        st, dt = timed("static build", lambda: static_image(_STATIC_SRC))
        ok(st.size > 0, "static image %s, %.1f MB, %.2f s" % (st.digest[:19], st.size / 1e6, dt))

        tfiles = {"/usr/bin/train": _TORCH_TRAIN, "/opt/ddp.py": _TORCH_DDP}
        tr, dt = timed("torch build", lambda: torch_image(tfiles))
        ok(tr.size > 0, "torch image %s: %.0f MB compressed, %.0f MB unpacked, %.1f s (%s)"
           % (tr.digest[:19], tr.size / 1e6, tr.unpacked / 1e6, dt, "built" if tr.built else "cached"))
        tr2, dt = timed("torch build (cached)", lambda: torch_image(tfiles))
        ok(tr2.digest == tr.digest and not tr2.built and dt < 2,
           "torch again: same digest, nothing written, %.2f s" % dt)

        for img, repo in ((bb, "train/bb:1"), (st, "train/static:1"), (tr, "train/torch:1")):
            p, dt = timed("push " + repo, lambda: push(img, reg, repo))
            ok(p.digest == img.digest, "push %s: %s (%.1f s)" % (p.ref, p.digest[:19], dt), p)
        p, dt = timed("push torch again", lambda: push(tr, reg, "train/torch:2"))
        ok(p.digest == tr.digest and dt < 10, "push the torch image again as :2, blobs there: %.1f s" % dt)

        bad = Podman()
        try:
            r = bad("pull", "--quiet", "--tls-verify=false", reg.host + "/train/bb:1", check=False)
            ok(r.returncode != 0, "pull without credentials refused", r.stderr)
        finally:
            bad.cleanup()

        have = set()  # layers the fresh storage has
        for img, repo, cmd, want in (
                (bb, "train/bb:1", ["train", "a1"], "train: uid=0 args=a1"),
                (st, "train/static:1", ["train", "x", "y"], "static train argc=3"),
                (tr, "train/torch:1", ["train"], "gloo True sum 6.0")):
            before = reg.blob_gets(repo.split(":")[0])
            _, dt = timed("pull " + repo, lambda: pm.pull(reg.host + "/" + repo, creds=reg.creds))
            got = reg.blob_gets(repo.split(":")[0]) - before
            new = {la["digest"] for la in img.layers} - have
            have |= new
            ok(got == len(new) + 1, "pull %s on a fresh storage: %d blob GETs (%d new layers + config), %.1f s"
               % (repo, got, len(new), dt))
            r, dt = timed("run " + repo, lambda: pm.run(reg.host + "/" + repo, *cmd, check=False))
            ok(r.returncode == 0 and want in r.stdout, "run %s %s: %r (%.2f s)"
               % (repo, " ".join(cmd), r.stdout.strip().splitlines()[-1:] or "", dt),
               r.stdout + r.stderr)
        r = pm.run(reg.host + "/train/torch:1", "python3", "-c",
                   "import torch, torch.distributed as d; print(torch.__version__, d.is_gloo_available())",
                   check=False)
        ok(r.returncode == 0 and r.stdout.split()[-1:] == ["True"],
           "torch image: python3 -c 'import torch...': %s" % r.stdout.strip(), r.stderr)
        # Two ranks over TCP (env://). Not torchrun: Debian's torch 1.13
        # torchrun fails under Python 3.11 (Std.from_str returns None).
        two = ("export MASTER_ADDR=127.0.0.1 MASTER_PORT=%d WORLD_SIZE=2; "
               "RANK=0 python3 /opt/ddp.py & RANK=1 python3 /opt/ddp.py; wait" % free_port())
        r, dt = timed("run 2 gloo ranks", lambda: pm.run(reg.host + "/train/torch:1", "sh", "-c", two,
                                                         check=False))
        ok(r.returncode == 0 and r.stdout.count("sum 3.0") == 2,
           "torch image: 2 gloo ranks over TCP, all_reduce (%.1f s)" % dt, r.stdout + r.stderr)
        before = reg.layer_gets()
        m_before = reg.manifest_gets()
        _, dt = timed("pull torch again", lambda: pm.pull(reg.host + "/train/torch:1", creds=reg.creds))
        ok(reg.layer_gets() == before and reg.manifest_gets() > m_before,
           "second pull of the torch image: manifest (and config), no layer GET (%.1f s)" % dt)

        sz, dt = timed("sized 20 MB build", lambda: sized_image(20))
        ok(18e6 < sz.size < 25e6, "sized_image(20): %.1f MB in %d layers, %.1f s"
           % (sz.size / 1e6, len(sz.layers), dt))
        push(sz, reg, "bench/sized:20")
        _, dt = timed("pull sized 20 MB", lambda: pm.pull(reg.host + "/bench/sized:20", creds=reg.creds))
        r = pm.run(reg.host + "/bench/sized:20", "sh", "-c", "cat /data/* | wc -c", check=False)
        ok(r.stdout.strip() == str(20 << 20), "its /data holds %s bytes" % r.stdout.strip(), r.stderr)
        aj = json.loads(reg.auth_json())
        ok(base64.b64decode(aj["auths"][reg.host]["auth"]).decode() == reg.creds, "auth_json()")
        af = reg.write_auth_json()
        pm2 = Podman()
        try:
            pm2.pull(reg.host + "/train/bb:1", auth_file=af)
            ok(True, "pull with --authfile from auth_json()")
        except RuntimeError as e:
            ok(False, "pull with --authfile from auth_json()", e)
        finally:
            pm2.cleanup()
        with Registry(tls=True) as treg:
            p = push(bb, treg, "tls/bb:1")
            ok(p.digest == bb.digest, "push to a TLS registry (%s), certificate verified" % treg.url)
            pm3 = Podman()
            try:
                pm3.pull(treg.host + "/tls/bb:1", tls_verify=True, cert_dir=treg.cert_dir)
                ok(treg.blob_gets("tls/bb") == 3, "pull from it with --cert-dir")
            except RuntimeError as e:
                ok(False, "pull from it with --cert-dir", e)
            finally:
                pm3.cleanup()
    except Exception as e:  # noqa: BLE001 - a selftest reports, then cleans up
        import traceback
        ok(False, "selftest raised %s" % type(e).__name__, traceback.format_exc())
    finally:
        pid = reg.pid
        pm.cleanup()
        reg.stop()
        ok(pid is None or not _pid_alive(pid), "registry (pid %s) stopped" % pid)
    for label, dt in timings:
        print("# %-28s %7.2f s" % (label, dt))
    print("1..%d" % n[0])
    return 1 if failed[0] else 0


def main(argv):
    if len(argv) >= 1 and argv[0] == "selftest":
        return selftest()
    if len(argv) >= 2 and argv[0] == "build":
        what = argv[1]
        if what == "torch":
            img = torch_image()
        elif what == "busybox":
            img = busybox_image("echo hello from train\n")
        elif what == "sized":
            img = sized_image(float(argv[2]) if len(argv) > 2 else 100)
        else:
            print("imagelib_main.py: unknown image '%s'" % what, file=sys.stderr)
            return 2
        print("%s %s %d %.2f %s" % (img.name, img.digest, img.size, img.seconds, img.layout))
        return 0
    if argv[:1] == ["clean"]:
        shutil.rmtree(cache_dir(), ignore_errors=True)
        return 0
    print("usage: imagelib_main.py selftest | build torch|busybox|sized [MB] | clean", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
