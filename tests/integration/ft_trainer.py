#!/usr/bin/python3
"""A small deterministic training program for the fault-tolerance tests
(tests/integration/test_faults.py) and bench/restart.py.

An MLP (64-32-10, ReLU, plain SGD) on sklearn's 8x8 digits
(/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz, or
the FT_DIGITS environment variable): `steps` mini-batch steps, the batch
of step n drawn from a generator seeded by (seed, n), so a run that
resumes from a checkpoint ends with exactly the weights of a run that did
not stop. Every host runs the same loop; rank 0 (the first of SM_HOSTS)
writes a checkpoint every `ckpt_every` steps into TRAINCTL_CHECKPOINT_DIR
(default /opt/ml/checkpoints, ./checkpoints outside a job) in the format
of docs/checkpoints.md:

    step-<10 digits>.rank-0/{params.bin,state.json[,pad.bin],MANIFEST.json}

written into `.tmp-step-<10 digits>.rank-0.<pid>` (every file fsync'ed,
MANIFEST.json last with sizes and SHA-256), renamed into place, the
directory fsync'ed; the newest 2 complete ones are kept. At start every
host loads the newest complete checkpoint (sizes and hashes checked).

Runs as `ft_trainer.py train` (TrainingImage file:///abs/path/ft_trainer.py)
or in script mode. Hyperparameters from SM_HPS (JSON), else
input/config/hyperparameters.json (each value JSON-decoded), else
`--key value` arguments:

  steps N                     steps in all (default 60)
  ckpt_every K                checkpoint every K steps (default 10; 0: none)
  step_sleep S                seconds to sleep per step (default 0)
  step_cpu S                  seconds of CPU time to compute per step, as a
                              step's forward and backward pass would (default
                              0): a host with less CPU takes longer for it
  sleep_pattern "S1,S2,..."   sleep S(n mod len) seconds after step n
                              instead of step_sleep (irregular logging)
  sync_dir D                  after each step wait (silently, no CPU to
                              speak of) until every host of SM_HOSTS has
                              reached it, like a collective; files in D
                              (a folder every host sees); a host that has
                              to wait prints `ft-sync step=<n> waiting`
  hang_at_step N              at step N sleep forever without output, as a
                              rank stuck inside a step (fail_host and
                              fail_attempt say where, as for fail_at_step)
  busy_at_step N              at step N compute silently for busy_s seconds
  busy_s S                    ... (default 10; fail_host and fail_attempt
                              say where)
  lr F, batch N, hidden N, seed N
  ckpt_pad_kb N               an extra pad.bin of N KiB in each checkpoint
  model_pad_mb N              an extra N MiB of random bytes in SM_MODEL_DIR
                              (makes the upload take a while) ...
  model_pad_host H            ... only on host H (default: every host)
  fail_at_step N              fail when about to run step N ...
  fail_host H                 ... on host H (default algo-1; "all": every host)
  fail_attempt A              ... in attempt A (TRAINCTL_ATTEMPT, default 1;
                              0: every attempt)
  fail_after_steps N          like fail_at_step, after N steps of this attempt
                              (whatever it resumed from)
  fail_signal SIG             ... by killing itself with SIG (e.g. 9)
                              instead of writing output/failure and exit 1
  ckpt_now B                  take checkpoint-now requests (docs/checkpoints.md):
                              create "$TRAINCTL_CHECKPOINT_NOW.listening" at
                              start; when the request file appears, rank 0
                              checkpoints after the step it is in, then every
                              host removes the file (default false)
  crash_in_checkpoint_at_step N  (rank 0, attempt fail_attempt) while saving
                              the checkpoint of step N: write part of it
                              into the .tmp- folder, then os._exit(3)
  write_success B             write output/success at the end, as the
                              SageMaker training toolkit does (default true;
                              the agent reads it for a rank it re-adopted
                              after a restart, whose exit status it lost)
  finish_when_orphaned B      once the agent that started this process is gone
                              (kill -9), run the remaining steps without
                              step_sleep, so that the process ends while no
                              agent runs (default false)
  orphan_exit_code N          with finish_when_orphaned: exit with N at the
                              end (after the results and output/success) when
                              the agent was found gone (default 0)
  marker S                    ignored (lets tests find the processes)

With FT_TRACE=<file> in the environment every step appends
`<unix s.us> <attempt> <host> <step>` to that file (O_APPEND, one write a
line), so a test can check that two attempts never ran at the same time.

SIGUSR1 makes it fail at once like fail_at_step does (output/failure, exit
1), so a test can inject an "exit 1" at a time of its choosing.

Output: `ft-start ts=<unix s.us> ...` first thing (before numpy is
imported), `step=<n> loss=<x>` per step, `ft-ckpt step=<n>` after each
checkpoint, `ft-die ts=<unix s.us> step=<n> ...` right before a planned
failure, `final validation:accuracy=<x>` at the end, and
<SM_MODEL_DIR>/ft-result-<host>.json = {"accuracy", "steps_run_this_attempt",
"resumed_from", "attempt", "host", "rank", "steps", "params_sha256"}.
"""
import os
import sys
import time

T_START = time.time()
ATTEMPT = int(os.environ.get("TRAINCTL_ATTEMPT") or "1")
HOST = os.environ.get("SM_CURRENT_HOST") or "algo-1"
print("ft-start ts=%.6f attempt=%d host=%s pid=%d" % (T_START, ATTEMPT, HOST, os.getpid()), flush=True)
if os.environ.get("FT_EXIT_AFTER_START") == "1":
    sys.exit(0)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import gzip  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402

import numpy as np  # noqa: E402

DIGITS = os.environ.get("FT_DIGITS") or "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
FORMAT = "trainctl-checkpoint-1"
CKPT_RE = re.compile(r"^step-(\d{10})\.rank-(0|[1-9]\d*)$")
KEEP = 2


def decode(v):
    if not isinstance(v, str):
        return v
    try:
        return json.loads(v)
    except ValueError:
        return v


def hyperparameters():
    env = os.environ.get("SM_HPS")
    if env:
        try:
            hps = json.loads(env)
            if isinstance(hps, dict):
                return {k: decode(v) for k, v in hps.items()}
        except ValueError:
            pass
    cfg = os.environ.get("SM_INPUT_CONFIG_DIR") or "/opt/ml/input/config"
    try:
        with open(os.path.join(cfg, "hyperparameters.json")) as f:
            return {k: decode(v) for k, v in json.load(f).items()}
    except (OSError, ValueError):
        pass
    hps, argv = {}, sys.argv[1:]
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("-") and i + 1 < len(argv):
            hps[a.lstrip("-").replace("-", "_")] = decode(argv[i + 1])
            i += 2
        else:
            i += 1
    return hps


HP = hyperparameters()


def hp(name, default, kind):
    v = HP.get(name, HP.get(name.replace("_", "-"), default))
    if v is None or v == "":
        return default
    return kind(v)


def hosts_and_rank():
    try:
        hosts = json.loads(os.environ.get("SM_HOSTS") or "[]")
    except ValueError:
        hosts = []
    if not hosts:
        hosts = [HOST]
    rank = hosts.index(HOST) if HOST in hosts else 0
    return hosts, rank


def output_dir():
    d = os.environ.get("SM_OUTPUT_DIR")
    if d:
        return d
    md = os.environ.get("SM_MODEL_DIR")
    if md:
        return os.path.join(os.path.dirname(md.rstrip("/")), "output")
    return "/opt/ml/output" if os.path.isdir("/opt/ml") else "output"


def ckpt_dir():
    d = os.environ.get("TRAINCTL_CHECKPOINT_DIR")
    if d:
        return d
    return "/opt/ml/checkpoints" if os.path.isdir("/opt/ml") else "checkpoints"


# ---------------------------------------------------------------- data, model

def load_digits(seed):
    with gzip.open(DIGITS, "rt") as f:
        data = np.loadtxt(f, delimiter=",", ndmin=2)
    x = data[:, :64].astype(np.float64) / 16.0
    y = data[:, 64].astype(np.int64)
    order = np.random.RandomState(seed).permutation(len(y))
    n_val = len(y) // 5
    val, train = order[:n_val], order[n_val:]
    return x[train], y[train], x[val], y[val]


NAMES = ("W1", "b1", "W2", "b2")


def init_params(seed, hidden):
    rng = np.random.RandomState(seed + 7)
    return {"W1": rng.normal(0, np.sqrt(2.0 / 64), (64, hidden)), "b1": np.zeros(hidden),
            "W2": rng.normal(0, np.sqrt(1.0 / hidden), (hidden, 10)), "b2": np.zeros(10)}


def forward(p, x):
    h = np.maximum(0.0, x @ p["W1"] + p["b1"])
    z = h @ p["W2"] + p["b2"]
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return h, e / e.sum(axis=1, keepdims=True)


def sgd_step(p, x, y, lr):
    h, prob = forward(p, x)
    n = len(y)
    loss = -np.log(prob[np.arange(n), y] + 1e-12).mean()
    d = prob.copy()
    d[np.arange(n), y] -= 1.0
    d /= n
    gW2 = h.T @ d
    gb2 = d.sum(axis=0)
    dh = (d @ p["W2"].T) * (h > 0)
    gW1 = x.T @ dh
    gb1 = dh.sum(axis=0)
    p["W1"] -= lr * gW1
    p["b1"] -= lr * gb1
    p["W2"] -= lr * gW2
    p["b2"] -= lr * gb2
    return float(loss)


def accuracy(p, x, y):
    return float((forward(p, x)[1].argmax(axis=1) == y).mean())


def params_bytes(p):
    return b"".join(np.ascontiguousarray(p[k], dtype="<f8").tobytes() for k in NAMES)


def params_from(blob, hidden):
    shapes = {"W1": (64, hidden), "b1": (hidden,), "W2": (hidden, 10), "b2": (10,)}
    p, off = {}, 0
    for k in NAMES:
        n = int(np.prod(shapes[k]))
        p[k] = np.frombuffer(blob, dtype="<f8", count=n, offset=off * 8).reshape(shapes[k]).copy()
        off += n
    if off * 8 != len(blob):
        raise ValueError("params.bin has %d bytes, expected %d" % (len(blob), off * 8))
    return p


# ---------------------------------------------------------------- checkpoints

def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def complete(path, name, verify=True):
    """The manifest of a complete checkpoint folder, else None."""
    m = CKPT_RE.match(name)
    if not m:
        return None
    try:
        with open(os.path.join(path, "MANIFEST.json")) as f:
            man = json.load(f)
        if man.get("format") != FORMAT or man.get("step") != int(m.group(1)) or man.get("rank") != int(m.group(2)):
            return None
        for fe in man["files"]:
            fp = os.path.join(path, fe["name"])
            if not os.path.isfile(fp) or os.path.getsize(fp) != fe["size"]:
                return None
            if verify and sha256_of(fp) != fe["sha256"]:
                return None
        return man
    except (OSError, ValueError, KeyError, TypeError):
        return None


def checkpoints(root, rank, verify=True):
    """[(step, path)] of the complete checkpoints of rank, newest first."""
    out = []
    try:
        names = os.listdir(root)
    except OSError:
        return out
    for name in names:
        m = CKPT_RE.match(name)
        if not m or int(m.group(2)) != rank:
            continue
        path = os.path.join(root, name)
        if complete(path, name, verify):
            out.append((int(m.group(1)), path))
    out.sort(reverse=True)
    return out


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(root, step, rank, world, files, crash=False):
    name = "step-%010d.rank-%d" % (step, rank)
    os.makedirs(root, exist_ok=True)
    for old in os.listdir(root):
        if re.match(r"^\.tmp-step-\d{10}\.rank-%d\.\d+$" % rank, old):
            shutil.rmtree(os.path.join(root, old), ignore_errors=True)
    tmp = os.path.join(root, ".tmp-%s.%d" % (name, os.getpid()))
    os.mkdir(tmp)
    entries = []
    for fname, data in files:
        if crash:
            # Part of the first file, then die: no manifest, no rename.
            with open(os.path.join(tmp, fname), "wb") as f:
                f.write(data[:max(1, len(data) // 2)])
                f.flush()
                os.fsync(f.fileno())
            print("ft-die ts=%.6f step=%d crash in checkpoint (wrote %d of %d bytes of %s into %s)" % (
                time.time(), step, max(1, len(data) // 2), len(data), fname, os.path.basename(tmp)), flush=True)
            os._exit(3)
        write_file(os.path.join(tmp, fname), data)
        entries.append({"name": fname, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    man = {"format": FORMAT, "step": step, "rank": rank, "world_size": world, "files": entries}
    write_file(os.path.join(tmp, "MANIFEST.json"), json.dumps(man, indent=1).encode())
    fsync_dir(tmp)
    final = os.path.join(root, name)
    if os.path.exists(final):
        gone = os.path.join(root, ".tmp-old-%s.%d" % (name, os.getpid()))
        os.rename(final, gone)
        shutil.rmtree(gone, ignore_errors=True)
    os.rename(tmp, final)
    fsync_dir(root)
    # Keep the new one and the newest KEEP-1 other complete ones.
    for s, path in checkpoints(root, rank, verify=False)[KEEP:]:
        shutil.rmtree(path, ignore_errors=True)
    fsync_dir(root)


# ---------------------------------------------------------------- main

def die(step, how, use_signal=True):
    sig = HP.get("fail_signal") if use_signal else None
    print("ft-die ts=%.6f step=%d attempt=%d host=%s %s" % (time.time(), step, ATTEMPT, HOST, how), flush=True)
    if sig not in (None, "", 0, "0"):
        signum = int(sig) if str(sig).isdigit() else int(getattr(signal, str(sig).upper()))
        os.kill(os.getpid(), signum)
        time.sleep(5)
        os._exit(99)
    try:
        od = output_dir()
        os.makedirs(od, exist_ok=True)
        with open(os.path.join(od, "failure"), "w") as f:
            f.write("FtTrainerError: failed on purpose (%s) at step %d in attempt %d on %s" % (how, step, ATTEMPT, HOST))
    except OSError as e:
        print("cannot write the failure file: %s" % e, flush=True)
    sys.stdout.flush()
    os._exit(1)


def on_usr1(signum, frame):
    die(CURRENT[0], "on SIGUSR1", use_signal=False)


CURRENT = [0]
ORPHANED = [False]


def parent_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def agent_watch():
    """A function that says whether the agent that started this process
    is gone: our parent is its rank keeper (`trainagent keep-rank`), whose
    parent is the agent, or the agent itself."""
    me = os.getppid()
    try:
        with open("/proc/%d/cmdline" % me, "rb") as f:
            kept = b"keep-rank" in f.read().split(b"\0")
    except OSError:
        kept = False
    agent = parent_of(me) if kept else me
    if kept:
        return lambda: parent_of(me) != agent
    return lambda: os.getppid() != agent


def planned(kind_step, step):
    if kind_step is None or int(kind_step) != step:
        return False
    fa = hp("fail_attempt", 1, int)
    if fa and fa != ATTEMPT:
        return False
    fh = str(HP.get("fail_host", "algo-1"))
    return fh in ("all", "*") or fh == HOST


def sync_hosts(sync, hosts, step):
    """Waits until every host has written step (or more) into sync."""
    os.makedirs(sync, exist_ok=True)
    mine = os.path.join(sync, "a%d-%s" % (ATTEMPT, HOST))
    with open(mine + ".tmp", "w") as f:
        f.write("%d" % step)
    os.rename(mine + ".tmp", mine)
    said = False
    while True:
        behind = []
        for h in hosts:
            try:
                with open(os.path.join(sync, "a%d-%s" % (ATTEMPT, h))) as f:
                    if int(f.read() or "0") >= step:
                        continue
            except (OSError, ValueError):
                pass
            behind.append(h)
        if not behind:
            return
        if not said:
            print("ft-sync step=%d waiting for %s" % (step, ",".join(behind)), flush=True)
            said = True
        time.sleep(0.05)


def busy(seconds):
    """Computes silently (CPU time, no output) for seconds."""
    end, x = time.time() + seconds, 0
    while time.time() < end:
        for i in range(20000):
            x = (x * 31 + i) % 1000003
    return x


def compute(cpu_s):
    """Computes silently until cpu_s seconds of CPU time were spent."""
    end, x = time.process_time() + cpu_s, 0
    while time.process_time() < end:
        for i in range(2000):
            x = (x * 31 + i) % 1000003
    return x


def main():
    steps = hp("steps", 60, int)
    every = hp("ckpt_every", 10, int)
    sleep = hp("step_sleep", 0.0, float)
    step_cpu = hp("step_cpu", 0.0, float)
    pattern = [float(x) for x in str(HP.get("sleep_pattern") or "").split(",") if x.strip()]
    sync = HP.get("sync_dir")
    lr = hp("lr", 0.5, float)
    batch = hp("batch", 64, int)
    hidden = hp("hidden", 32, int)
    seed = hp("seed", 1, int)
    pad_kb = hp("ckpt_pad_kb", 0, int)
    hosts, rank = hosts_and_rank()
    root = ckpt_dir()
    signal.signal(signal.SIGUSR1, on_usr1)
    xt, yt, xv, yv = load_digits(seed)

    params, start = init_params(seed, hidden), 0
    found = checkpoints(root, 0)
    for s, path in found:
        try:
            with open(os.path.join(path, "params.bin"), "rb") as f:
                params = params_from(f.read(), hidden)
            start = s
            break
        except (OSError, ValueError) as e:
            print("checkpoint %s unusable: %s" % (path, e), flush=True)
    print("ft-resume host=%s rank=%d attempt=%d resumed_from=%d checkpoints=%s dir=%s" % (
        HOST, rank, ATTEMPT, start, [s for s, _ in found], root), flush=True)

    now_file = os.environ.get("TRAINCTL_CHECKPOINT_NOW") if hp(
        "ckpt_now", False, lambda v: str(v).lower() in ("true", "1", "yes")) else None
    if now_file:
        open(now_file + ".listening", "w").close()
    run = 0
    loss = float("nan")
    trace = os.environ.get("FT_TRACE")
    trace_fd = os.open(trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if trace else -1
    orphaned = agent_watch() if hp("finish_when_orphaned", False,
                                   lambda v: str(v).lower() in ("true", "1", "yes")) else None
    for step in range(start + 1, steps + 1):
        CURRENT[0] = step
        if orphaned and orphaned():
            print("ft-orphaned step=%d: the agent is gone, finishing at once" % step, flush=True)
            orphaned, sleep, pattern = None, 0, []
            ORPHANED[0] = True
        if planned(HP.get("fail_at_step"), step):
            die(step, "fail_at_step")
        if planned(HP.get("fail_after_steps"), run):
            die(step, "fail_after_steps")
        if planned(HP.get("hang_at_step"), step):
            while True:
                time.sleep(3600)
        if planned(HP.get("busy_at_step"), step):
            busy(hp("busy_s", 10.0, float))
        idx = np.random.RandomState(seed * 1000003 + step).randint(0, len(yt), batch)
        loss = sgd_step(params, xt[idx], yt[idx], lr)
        if step_cpu > 0:
            compute(step_cpu)
        run += 1
        print("step=%d loss=%.6f" % (step, loss), flush=True)
        if trace_fd >= 0:
            os.write(trace_fd, ("%.6f %d %s %d\n" % (time.time(), ATTEMPT, HOST, step)).encode())
        nap = pattern[step % len(pattern)] if pattern else sleep
        if nap > 0:
            time.sleep(nap)
        if sync and len(hosts) > 1:
            sync_hosts(sync, hosts, step)
        asked = now_file is not None and os.path.exists(now_file)
        if rank == 0 and ((every > 0 and step % every == 0) or asked):
            crash = planned(HP.get("crash_in_checkpoint_at_step"), step) and rank == 0
            files = [("params.bin", params_bytes(params)),
                     ("state.json", json.dumps({"step": step, "loss": loss, "hidden": hidden}).encode())]
            if pad_kb > 0:
                files.append(("pad.bin", hashlib.sha256(b"%d" % step).digest() * (pad_kb * 32)))
            save_checkpoint(root, step, rank, len(hosts), files, crash=crash)
            print("ft-ckpt step=%d%s" % (step, " (requested)" if asked else ""), flush=True)
        if asked:
            try:
                os.unlink(now_file)
            except FileNotFoundError:
                pass

    acc = accuracy(params, xv, yv)
    res = {"accuracy": acc, "steps_run_this_attempt": run, "resumed_from": start, "attempt": ATTEMPT,
           "host": HOST, "rank": rank, "steps": steps, "final_loss": loss,
           "params_sha256": hashlib.sha256(params_bytes(params)).hexdigest()}
    md = os.environ.get("SM_MODEL_DIR") or "model"
    os.makedirs(md, exist_ok=True)
    pad_mb = hp("model_pad_mb", 0, int)
    if pad_mb > 0 and str(HP.get("model_pad_host", HOST)) == HOST:
        with open(os.path.join(md, "pad-%s.bin" % HOST), "wb") as f:
            for _ in range(pad_mb):
                f.write(os.urandom(1 << 20))
    tmp = os.path.join(md, ".ft-result-%s.json.tmp" % HOST)
    with open(tmp, "w") as f:
        json.dump(res, f, sort_keys=True)
    os.rename(tmp, os.path.join(md, "ft-result-%s.json" % HOST))
    if hp("write_success", True, lambda v: str(v).lower() not in ("false", "0", "no")):
        try:
            od = output_dir()
            os.makedirs(od, exist_ok=True)
            open(os.path.join(od, "success"), "w").close()
        except OSError as e:
            print("cannot write output/success: %s" % e, flush=True)
    print("final validation:accuracy=%.6f" % acc, flush=True)
    print("ft-end ts=%.6f attempt=%d host=%s steps_run=%d resumed_from=%d" % (
        time.time(), ATTEMPT, HOST, run, start), flush=True)
    code = hp("orphan_exit_code", 0, int)
    if code and ORPHANED[0]:
        sys.exit(code)


if __name__ == "__main__":
    main()
