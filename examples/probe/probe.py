#!/usr/bin/python3
"""A probe training program: records what a SageMaker-style training job sees.

Writes <model dir>/probe-<current host>.json holding its whole environment,
argv, cwd, ids (uid, gid, pid, pgid, sid), a listing of the /opt/ml tree
(relative paths, sizes, the contents of input/config/*.json, the channels'
files with their SHA-256) and whether /opt/ml exists. Also writes
<output data dir>/output-<host>.txt, so output.tar.gz has something in it.

It runs in every launch mode: script mode (`python probe.py --key value ...`),
and as an executable (`probe.py train`): the hyperparameters are read from
input/config/hyperparameters.json (each value json-decoded as the
sagemaker-training-toolkit does), falling back to `--key value` arguments.

Hyperparameters that drive it (all optional):
  sleep N            sleep N seconds (float) before exiting
  exit_code N        exit with status N
  ignore_sigterm B   ignore SIGTERM (otherwise SIGTERM writes
                     <model dir>/sigterm-<host>.txt and exits 143)
  fork_grandchild B  start `sleep 1000` in the same process group and record
                     its pid (key "grandchild_pid")
  write_failure S    write S to <output dir>/failure
  kill_self N        kill itself with signal N (after the probe file)
  print_metrics N    print N lines "epoch=i loss=X; acc=Y;" (the same on
                     every host: loss 1, 0.5, 0.25, ...; acc 0.5, 0.6, ...)
  print_lines N      print N lines "probe-line host=<host> n=<i>/<N>" to stdout
                     and one "probe-stderr host=<host>" to stderr
  marker S           ignored; lets a test find the job's processes
Standard library only.
"""
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

BASE = "/opt/ml"


def decode(v):
    try:
        return json.loads(v)
    except (ValueError, TypeError):
        return v


def config_dir():
    return os.environ.get("SM_INPUT_CONFIG_DIR") or os.path.join(base_dir(), "input", "config")


def base_dir():
    md = os.environ.get("SM_MODEL_DIR")
    if md:
        return os.path.dirname(md.rstrip("/")) or "/"
    return BASE


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def hyperparameters():
    hps = read_json(os.path.join(config_dir(), "hyperparameters.json"))
    if isinstance(hps, dict):
        return {k: decode(v) for k, v in hps.items()}
    out = {}
    args = sys.argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and i + 1 < len(args):
            out[a.lstrip("-")] = decode(args[i + 1])
            i += 2
        else:
            i += 1
    return out


def current_host():
    h = os.environ.get("SM_CURRENT_HOST")
    if h:
        return h
    rc = read_json(os.path.join(config_dir(), "resourceconfig.json"))
    if isinstance(rc, dict) and rc.get("current_host"):
        return rc["current_host"]
    return socket.gethostname()


def sha256(path, limit=16 << 20):
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(65536)
            if not b:
                break
            n += len(b)
            if n > limit:
                return None
            h.update(b)
    return h.hexdigest()


def listing(root):
    """Every entry under root: relative path, type, size."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if os.path.islink(full):
                kind = "l"
            elif os.path.isdir(full):
                kind = "d"
            else:
                kind = "f"
            out.append({"path": rel, "type": kind, "size": st.st_size})
    return out


def channel_files(root):
    """{channel: [{"path", "size", "sha256"}]} of root/input/data."""
    data = os.path.join(root, "input", "data")
    chans = {}
    try:
        names = sorted(os.listdir(data))
    except OSError:
        return chans
    for ch in names:
        top = os.path.join(data, ch)
        if not os.path.isdir(top):
            chans[ch] = {"not_a_directory": True}
            continue
        files = []
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                files.append({"path": os.path.relpath(full, top), "size": os.path.getsize(full),
                              "sha256": sha256(full)})
        chans[ch] = files
    return chans


def configs(root):
    out = {}
    d = os.path.join(root, "input", "config")
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return out
    for name in names:
        if name.endswith(".json"):
            try:
                with open(os.path.join(d, name)) as f:
                    out[name] = f.read()
            except OSError as e:
                out[name] = {"error": str(e)}
    return out


def gpu_count():
    exe = shutil.which("nvidia-smi")
    if not exe:
        return 0
    try:
        out = subprocess.run([exe, "--list-gpus"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=20).stdout.decode("utf-8", "replace")
    except Exception:
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def opt_ml_mounts():
    try:
        with open("/proc/self/mountinfo") as f:
            return [line.rstrip("\n") for line in f if " /opt/ml " in line or " /opt/ml/" in line]
    except OSError:
        return []


def main():
    started = time.time()
    hps = hyperparameters()
    host = current_host()
    model_dir = os.environ.get("SM_MODEL_DIR") or os.path.join(BASE, "model")
    output_dir = os.environ.get("SM_OUTPUT_DIR") or os.path.join(BASE, "output")
    output_data_dir = os.environ.get("SM_OUTPUT_DATA_DIR") or os.path.join(output_dir, "data")

    if hps.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        def on_term(signum, frame):
            try:
                with open(os.path.join(model_dir, "sigterm-%s.txt" % host), "w") as f:
                    f.write("SIGTERM after %.3f s\n" % (time.time() - started))
            except OSError:
                pass
            print("probe %s: SIGTERM" % host, flush=True)
            os._exit(143)
        signal.signal(signal.SIGTERM, on_term)

    n = int(hps.get("print_lines") or 0)
    for i in range(1, n + 1):
        print("probe-line host=%s n=%d/%d" % (host, i, n), flush=True)
    if n:
        print("probe-stderr host=%s" % host, file=sys.stderr, flush=True)
    m = int(hps.get("print_metrics") or 0)
    for i in range(1, m + 1):
        print("epoch=%d loss=%s; acc=%s;" % (i, repr(1.0 / 2 ** (i - 1)), repr(round(0.4 + 0.1 * i, 6))),
              flush=True)

    grandchild = None
    if hps.get("fork_grandchild"):
        grandchild = subprocess.Popen(["sleep", "1000"])   # same process group, inherits stdout

    base = base_dir()
    record = {
        "host": host,
        "hyperparameters": hps,
        "environ": dict(os.environ),
        "argv": sys.argv,
        "executable": sys.executable,
        "cwd": os.getcwd(),
        "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
        "pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0), "sid": os.getsid(0),
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(), "mp_cpu_count": multiprocessing.cpu_count(),
        "gpu_count": gpu_count(),
        "net_interfaces": sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else [],
        "opt_ml_exists": os.path.isdir(BASE),
        "opt_ml_mounts": opt_ml_mounts(),
        "base": base,
        "model_dir_real": os.path.realpath(model_dir),
        "tree": listing(base),
        "configs": configs(base),
        "channels": channel_files(base),
        "grandchild_pid": grandchild.pid if grandchild else None,
        "started": started,
    }
    os.makedirs(model_dir, exist_ok=True)
    path = os.path.join(model_dir, "probe-%s.json" % host)
    tmp = os.path.join(model_dir, ".probe-%s.tmp" % host)
    with open(tmp, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
    os.rename(tmp, path)
    try:
        os.makedirs(output_data_dir, exist_ok=True)
        with open(os.path.join(output_data_dir, "output-%s.txt" % host), "w") as f:
            f.write("output of %s\n" % host)
    except OSError:
        pass
    print("probe %s: wrote %s" % (host, path), flush=True)

    text = hps.get("write_failure")
    if text is not None:
        os.makedirs(output_dir, exist_ok=True)
        with open(os.path.join(output_dir, "failure"), "w") as f:
            f.write(str(text))

    delay = float(hps.get("sleep") or 0)
    end = time.time() + delay
    while time.time() < end:
        time.sleep(min(0.2, max(0.0, end - time.time())))

    sig = hps.get("kill_self")
    if sig:
        sys.stdout.flush()
        os.kill(os.getpid(), int(sig))
        time.sleep(5)
    code = int(hps.get("exit_code") or 0)
    print("probe %s: exit %d" % (host, code), flush=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
