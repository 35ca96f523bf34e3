#!/usr/bin/python3
"""A PyTorch DDP program that checkpoints the way most PyTorch programs
do, without libtrainer: rank 0 does

    torch.save(state, "/opt/ml/checkpoints/ckpt.pt.tmp")
    os.replace("/opt/ml/checkpoints/ckpt.pt.tmp", "/opt/ml/checkpoints/ckpt.pt")

after every step, and every rank loads ckpt.pt at start when it is there.
For tests/integration/test_ckpt_plain.py; run as a file:// image
(`plain_ckpt_trainer.py train`) with torch_distributed (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT from the agent; gloo).

Hyperparameters (SM_HPS):
  steps N          steps in all (default 30)
  step_sleep S     seconds per step (default 0.06)
  die_at_step N    the last rank kills itself with SIGKILL when about to
                   run step N ...
  die_attempt A    ... in attempt A (TRAINCTL_ATTEMPT, default 1)
  mode M           "ddp" (default); "write_exit" writes ckpt.pt and exits
                   at once with exit_code (no process group)
  exit_code N      for write_exit (default 0)

Prints `plain-start attempt=A rank=R resumed_from=S` (S = the step the
loaded checkpoint says comes next, 0 without one), `step=N` per step on
rank 0, `plain-done steps=N` at the end. Every rank appends its run
interval `<attempt> <rank> <start unix s> <end unix s>` to
output/data/intervals-rank<R>.txt.
"""
import json
import os
import signal
import sys
import time

T0 = time.time()
ATTEMPT = int(os.environ.get("TRAINCTL_ATTEMPT") or "1")
CKPT_DIR = os.environ.get("TRAINCTL_CHECKPOINT_DIR") or "/opt/ml/checkpoints"


def hps():
    """SM_HPS: the hyperparameters as JSON, values decoded (contract)."""
    try:
        raw = json.loads(os.environ.get("SM_HPS") or "{}")
    except ValueError:
        raw = {}
    return raw if isinstance(raw, dict) else {}


HP = hps()
CKPT = os.path.join(CKPT_DIR, "ckpt.pt")


def write_exit():
    os.makedirs(CKPT_DIR, exist_ok=True)
    with open(CKPT + ".tmp", "wb") as f:
        f.write(json.dumps({"step": 7, "attempt": ATTEMPT}).encode())
    os.replace(CKPT + ".tmp", CKPT)
    print("plain-wrote attempt=%d" % ATTEMPT, flush=True)
    sys.exit(int(HP.get("exit_code", 0)))


if HP.get("mode") == "write_exit":
    write_exit()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
STEPS = int(HP.get("steps", 30))
SLEEP = float(HP.get("step_sleep", 0.06))
DIE_AT = int(HP.get("die_at_step", 0))
DIE_ATTEMPT = int(HP.get("die_attempt", 1))
OUT_DIR = os.environ.get("SM_OUTPUT_DATA_DIR", "/opt/ml/output/data")


def record_interval(end):
    os.makedirs(OUT_DIR, exist_ok=True)
    with open(os.path.join(OUT_DIR, "intervals-rank%d.txt" % RANK), "a") as f:
        f.write("%d %d %.6f %.6f\n" % (ATTEMPT, RANK, T0, end))


def main():
    dist.init_process_group("gloo", rank=RANK, world_size=WORLD)
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = 0
    if os.path.exists(CKPT):
        state = torch.load(CKPT)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["next_step"]
    print("plain-start attempt=%d rank=%d resumed_from=%d" % (ATTEMPT, RANK, start), flush=True)
    for step in range(start, STEPS):
        if DIE_AT and step == DIE_AT and ATTEMPT == DIE_ATTEMPT and RANK == WORLD - 1:
            print("plain-die attempt=%d rank=%d step=%d" % (ATTEMPT, RANK, step), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        g = torch.Generator().manual_seed(step)
        x = torch.randn(16, 8, generator=g)
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= WORLD
        opt.step()
        if RANK == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "next_step": step + 1},
                       CKPT + ".tmp")
            os.replace(CKPT + ".tmp", CKPT)
            print("step=%d" % step, flush=True)
        time.sleep(SLEEP)
    dist.barrier()
    print("plain-done steps=%d" % STEPS, flush=True)
    record_interval(time.time())


if __name__ == "__main__":
    main()
