#!/usr/bin/python3
"""A training program with a known step time and checkpoint stall, for
the goodput test (tests/integration/test_goodput.py).

Runs as `goodput_trainer.py train` (TrainingImage file:///abs/path). Each
step sleeps step_s seconds and then prints `trainctl_step=<n>`; every
ckpt_every steps it writes a checkpoint of docs/checkpoints.md's format
into TRAINCTL_CHECKPOINT_DIR, sleeps ckpt_s seconds more (a stall) and
prints `#metric trainctl_checkpoint_seconds=<s> step=<n>`. At start it
resumes from the newest complete checkpoint. In attempt fail_attempt
(TRAINCTL_ATTEMPT) it exits 1 after step fail_after (0: never).

The ground truth goes to the file named by the `truth` hyperparameter,
one JSON object a line: {"ev": "start", "attempt", "t", "resumed"},
{"ev": "step", "attempt", "step", "t0", "t1"} (the step's start and
end), {"ev": "ckpt", "attempt", "step", "s"}, {"ev": "exit", ...}.
Hyperparameters come from SM_HPS (each value JSON-decoded).
"""
import hashlib
import json
import os
import sys
import time


def hps():
    out = {}
    try:
        for k, v in json.loads(os.environ.get("SM_HPS") or "{}").items():
            try:
                out[k] = json.loads(v) if isinstance(v, str) else v
            except ValueError:
                out[k] = v
    except ValueError:
        pass
    return out


HP = hps()
ATTEMPT = int(os.environ.get("TRAINCTL_ATTEMPT") or "1")
CKPT = os.environ.get("TRAINCTL_CHECKPOINT_DIR") or "checkpoints"
TRUTH = HP.get("truth")


def truth(**kv):
    if not TRUTH:
        return
    with open(TRUTH, "a") as f:
        f.write(json.dumps(kv) + "\n")


def latest():
    """The newest step with a complete checkpoint, 0: none."""
    best = 0
    try:
        names = os.listdir(CKPT)
    except OSError:
        return 0
    for n in names:
        if not (n.startswith("step-") and n.endswith(".rank-0")):
            continue
        d = os.path.join(CKPT, n)
        try:
            with open(os.path.join(d, "MANIFEST.json")) as f:
                m = json.load(f)
            for e in m["files"]:
                with open(os.path.join(d, e["name"]), "rb") as g:
                    if hashlib.sha256(g.read()).hexdigest() != e["sha256"]:
                        raise ValueError("hash")
            best = max(best, int(m["step"]))
        except (OSError, ValueError, KeyError):
            continue
    return best


def save(step):
    final = os.path.join(CKPT, "step-%010d.rank-0" % step)
    tmp = os.path.join(CKPT, ".tmp-step-%010d.rank-0.%d" % (step, os.getpid()))
    os.makedirs(tmp, exist_ok=True)
    data = json.dumps({"step": step}).encode()
    with open(os.path.join(tmp, "state.json"), "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    man = {"format": "trainctl-checkpoint-1", "step": step, "rank": 0, "world_size": 1,
           "files": [{"name": "state.json", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}]}
    with open(os.path.join(tmp, "MANIFEST.json"), "w") as f:
        json.dump(man, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, final)


def main():
    steps = int(HP.get("steps", 40))
    step_s = float(HP.get("step_s", 0.15))
    ckpt_every = int(HP.get("ckpt_every", 10))
    ckpt_s = float(HP.get("ckpt_s", 0.3))
    fail_after = int(HP.get("fail_after", 0))
    fail_attempt = int(HP.get("fail_attempt", 1))
    os.makedirs(CKPT, exist_ok=True)
    step = latest()
    truth(ev="start", attempt=ATTEMPT, t=time.time(), resumed=step)
    print("goodput-trainer attempt=%d resumed=%d" % (ATTEMPT, step), flush=True)
    while step < steps:
        t0 = time.time()
        time.sleep(step_s)
        step += 1
        t1 = time.time()
        print("trainctl_step=%d" % step, flush=True)
        truth(ev="step", attempt=ATTEMPT, step=step, t0=t0, t1=t1)
        if ckpt_every and step % ckpt_every == 0:
            c0 = time.time()
            save(step)
            time.sleep(ckpt_s)
            s = time.time() - c0
            print("#metric trainctl_checkpoint_seconds=%.3f step=%d" % (s, step), flush=True)
            truth(ev="ckpt", attempt=ATTEMPT, step=step, s=s)
        if fail_after and ATTEMPT == fail_attempt and step == fail_after:
            truth(ev="exit", attempt=ATTEMPT, t=time.time(), rc=1)
            print("goodput-trainer: failing on purpose after step %d" % step, flush=True)
            sys.stdout.flush()
            os._exit(1)
    truth(ev="exit", attempt=ATTEMPT, t=time.time(), rc=0)


if __name__ == "__main__":
    main()
