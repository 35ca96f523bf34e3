#!/usr/bin/python3
"""The training program of bench/goodput.py: the same file under trainctl
(a file:// image with sagemaker_torch_distributed_enabled), torchrun and
srun. It writes its own ground truth, from which the benchmark computes
ETTR.

Rank and world come from RANK / WORLD_SIZE (trainctl's agent, torchrun)
or SLURM_PROCID / SLURM_NTASKS (srun; MASTER_ADDR and MASTER_PORT are
then given by the caller). The attempt is TRAINCTL_ATTEMPT, else
TORCHELASTIC_RESTART_COUNT + 1, else GP_TRY (the Slurm script's count).

A step is GP_STEP_S seconds (default 0.1) of sleep standing for compute,
then an allreduce of two floats over gloo (the second: rank 0's answer
to a checkpoint-now request; collective timeout GP_TIMEOUT s, default
30), so that every rank goes at the pace of the slowest and a lost rank
stops the others. Every GP_CKPT_S seconds of steps (default 10, rounded
to whole steps) every rank saves a checkpoint of GP_CKPT_MB MiB (default
16) in docs/checkpoints.md's format,
`step-<10 digits>.rank-<R>/{pad.bin,state.json,MANIFEST.json}`, written
into `.tmp-...` and renamed into place (no fsync, as torch.save), then
waits for the others (the stall is the slowest rank's); the newest 2 of
each rank are kept. The folder is TRAINCTL_CHECKPOINT_DIR (trainctl's
checkpoint channel: its agent mirrors it to the store and restores it on
a retry), else GP_CKPT_DIR (a folder every host sees). pad.bin's bytes
are the same in every checkpoint of an attempt and its SHA-256 is
computed once at start: the write is paid each time, the hash is not.
A checkpoint-now request (TRAINCTL_CHECKPOINT_NOW, docs/checkpoints.md)
is answered at the next step.

At start every rank finds the newest step whose own folder (rank R, else
rank 0: the replicas are alike) is complete (manifest, files of the
listed sizes); the ranks agree on the smallest of those (an allreduce
MIN), and each reads that folder back in full (the restore the program
sees). Rank 0 appends the ground truth to GP_TRUTH, one JSON object a
line: {"ev": "start", "t", "attempt", "resumed", "load_s", "world",
"host"}, {"ev": "step", "step", "t0", "t1", "attempt"}, {"ev": "ckpt",
"step", "s", "t", "attempt"}. It prints `trainctl_step=N` after each step and
`#metric trainctl_checkpoint_seconds=S step=N` after each checkpoint
(docs/goodput.md), which only trainctl reads.
"""
import datetime
import hashlib
import json
import os
import re
import shutil
import socket
import sys
import time


def env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else default


def attempt():
    if os.environ.get("TRAINCTL_ATTEMPT"):
        return int(os.environ["TRAINCTL_ATTEMPT"])
    if os.environ.get("TORCHELASTIC_RESTART_COUNT"):
        return int(os.environ["TORCHELASTIC_RESTART_COUNT"]) + 1
    return env_int("GP_TRY", 1)


RANK = env_int("RANK", env_int("SLURM_PROCID", 0))
WORLD = env_int("WORLD_SIZE", env_int("SLURM_NTASKS", 1))
ATTEMPT = attempt()
CKPT_DIR = os.environ.get("TRAINCTL_CHECKPOINT_DIR") or os.environ.get("GP_CKPT_DIR") or "checkpoints"
STEP_S = float(os.environ.get("GP_STEP_S") or 0.1)
CKPT_EVERY = max(1, int(round(float(os.environ.get("GP_CKPT_S") or 10) / STEP_S)))
CKPT_MB = env_int("GP_CKPT_MB", 16)
TRUTH = os.environ.get("GP_TRUTH")
NOW = os.environ.get("TRAINCTL_CHECKPOINT_NOW")
DIR_RE = re.compile(r"^step-(\d{10})\.rank-(0|[1-9]\d*)$")
KEEP = 2


def truth(**kv):
    if RANK == 0 and TRUTH:
        kv["attempt"] = ATTEMPT
        with open(TRUTH, "a") as f:
            f.write(json.dumps(kv) + "\n")


def complete(d, deep=False):
    """The manifest of folder d when it is complete (files of the listed
    sizes; deep: read in full), else None."""
    try:
        with open(os.path.join(d, "MANIFEST.json")) as f:
            man = json.load(f)
        for e in man["files"]:
            p = os.path.join(d, e["name"])
            if os.path.getsize(p) != e["size"]:
                return None
            if deep:
                with open(p, "rb") as g:
                    while g.read(1 << 22):
                        pass
        return man
    except (OSError, ValueError, KeyError, TypeError):
        return None


def folders():
    """{step: {rank: path}} of the checkpoint folders there."""
    out = {}
    try:
        names = os.listdir(CKPT_DIR)
    except OSError:
        return out
    for n in names:
        m = DIR_RE.match(n)
        if m:
            out.setdefault(int(m.group(1)), {})[int(m.group(2))] = os.path.join(CKPT_DIR, n)
    return out


def newest_mine():
    """The newest step with a complete folder for this rank (or rank 0)."""
    for step, ranks in sorted(folders().items(), reverse=True):
        d = ranks.get(RANK, ranks.get(0))
        if d and complete(d):
            return step
    return 0


def load(step):
    """Reads step's folder back in full; seconds it took."""
    if step == 0:
        return 0.0
    t = time.time()
    ranks = folders().get(step, {})
    d = ranks.get(RANK, ranks.get(0))
    if not d or not complete(d, deep=True):
        raise SystemExit("goodput_prog: rank %d: checkpoint %d is gone" % (RANK, step))
    return time.time() - t


class Saver:
    def __init__(self, mb):
        self.pad = os.urandom(1 << 20) * mb
        self.sha = hashlib.sha256(self.pad).hexdigest()

    def save(self, step):
        os.makedirs(CKPT_DIR, exist_ok=True)
        name = "step-%010d.rank-%d" % (step, RANK)
        tmp = os.path.join(CKPT_DIR, ".tmp-%s.%d" % (name, os.getpid()))
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        state = json.dumps({"step": step, "rank": RANK, "world": WORLD}).encode()
        files = []
        for fn, data, sha in (("pad.bin", self.pad, self.sha), ("state.json", state, None)):
            with open(os.path.join(tmp, fn), "wb") as f:
                f.write(data)
            files.append({"name": fn, "size": len(data), "sha256": sha or hashlib.sha256(data).hexdigest()})
        man = {"format": "trainctl-checkpoint-1", "step": step, "rank": RANK, "world_size": WORLD,
               "files": files}
        with open(os.path.join(tmp, "MANIFEST.json"), "w") as f:
            json.dump(man, f)
        final = os.path.join(CKPT_DIR, name)
        shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
        mine = sorted(s for s, r in folders().items() if RANK in r)
        for s in mine[:-KEEP]:
            shutil.rmtree(folders()[s][RANK], ignore_errors=True)


def agree(dist, torch, value, op):
    t = torch.tensor([float(value)])
    dist.all_reduce(t, op=op)
    return int(t.item())


def main():
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ["RANK"], os.environ["WORLD_SIZE"] = str(RANK), str(WORLD)
    dist.init_process_group("gloo", rank=RANK, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=env_int("GP_TIMEOUT", 30)))
    if NOW and RANK == 0:
        open(NOW + ".listening", "w").close()
    saver = Saver(CKPT_MB)
    step = agree(dist, torch, newest_mine(), dist.ReduceOp.MIN)
    load_s = load(step)
    agree(dist, torch, 0, dist.ReduceOp.MAX)
    truth(ev="start", t=time.time(), resumed=step, load_s=load_s, world=WORLD, host=socket.gethostname())
    print("goodput-start rank=%d attempt=%d resumed=%d load_s=%.3f world=%d" % (RANK, ATTEMPT, step, load_s, WORLD),
          flush=True)
    while step < env_int("GP_STEPS", 10 ** 9):
        t0 = time.time()
        time.sleep(STEP_S)
        # The step's collective carries rank 0's checkpoint-now answer.
        x = torch.tensor([1.0, 1.0 if (NOW and RANK == 0 and os.path.exists(NOW)) else 0.0])
        dist.all_reduce(x, op=dist.ReduceOp.MAX)
        asked = x[1].item() > 0
        step += 1
        t1 = time.time()
        truth(ev="step", step=step, t0=t0, t1=t1)
        if RANK == 0:
            print("trainctl_step=%d" % step, flush=True)
        if asked or step % CKPT_EVERY == 0:
            c0 = time.time()
            saver.save(step)
            agree(dist, torch, 0, dist.ReduceOp.MAX)
            s = time.time() - c0
            truth(ev="ckpt", step=step, s=s, t=time.time())
            if RANK == 0:
                print("#metric trainctl_checkpoint_seconds=%.3f step=%d" % (s, step), flush=True)
                if asked:
                    os.unlink(NOW)
    dist.barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
