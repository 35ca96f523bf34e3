#!/usr/bin/python3
"""The torch DDP (gloo, CPU) program of bench/gray.py, the same file under
trainctl (a file:// image with sagemaker_torch_distributed_enabled),
torchrun and srun.

Its rank and world come from RANK / WORLD_SIZE (trainctl's agent and
torchrun set them) or SLURM_PROCID / SLURM_NTASKS (srun; MASTER_ADDR and
MASTER_PORT are then given by the caller). The attempt is TRAINCTL_ATTEMPT,
else TORCHELASTIC_RESTART_COUNT + 1, else 1.

Each step does GRAY_WORK (default 8) 256x256 matrix products of CPU work
on one thread, one DDP backward (an allreduce of the gradients over gloo)
and sleeps GRAY_STEP_SLEEP s (default 0.3); every rank prints
`gray-step step=N rank=R attempt=A ts=T` (T: time.time()) after each step,
so the normal progress interval is about 0.4 s. Rank 0 saves a checkpoint
every GRAY_CKPT_EVERY steps (default 4) into TRAINCTL_CHECKPOINT_DIR, else
GRAY_CKPT_DIR, else /opt/ml/checkpoints (torch.save to a temporary name,
then os.replace), and every rank resumes from it at start
(`gray-start rank=R attempt=A resumed_from=S ts=T`). GRAY_STEPS steps in
all (default 100000: the benchmark stops the job).

Fault (b): in attempt 1 the rank GRAY_HANG_RANK, on reaching step
GRAY_HANG_AT, prints `gray-stuck rank=R step=N ts=T` and sleeps forever
inside the step, before its backward: its peers wait in the allreduce.
"""
import os
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
    return 1


RANK = env_int("RANK", env_int("SLURM_PROCID", 0))
WORLD = env_int("WORLD_SIZE", env_int("SLURM_NTASKS", 1))
ATTEMPT = attempt()
CKPT_DIR = (os.environ.get("TRAINCTL_CHECKPOINT_DIR") or os.environ.get("GRAY_CKPT_DIR") or
            "/opt/ml/checkpoints")
CKPT = os.path.join(CKPT_DIR, "gray.pt")
STEPS = env_int("GRAY_STEPS", 100000)
WORK = env_int("GRAY_WORK", 8)
SLEEP = float(os.environ.get("GRAY_STEP_SLEEP") or 0.3)
CKPT_EVERY = env_int("GRAY_CKPT_EVERY", 4)
HANG_RANK = env_int("GRAY_HANG_RANK", -1)
HANG_AT = env_int("GRAY_HANG_AT", -1)


def say(text):
    print("%s ts=%.6f" % (text, time.time()), flush=True)


def main():
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ["RANK"], os.environ["WORLD_SIZE"] = str(RANK), str(WORLD)
    dist.init_process_group("gloo", rank=RANK, world_size=WORLD)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(256, 16))
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    start = 0
    if os.path.exists(CKPT):
        state = torch.load(CKPT)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["next_step"]
    say("gray-start rank=%d attempt=%d resumed_from=%d world=%d" % (RANK, ATTEMPT, start, WORLD))
    a = torch.randn(256, 256)
    for step in range(start, STEPS):
        if ATTEMPT == 1 and RANK == HANG_RANK and step == HANG_AT:
            say("gray-stuck rank=%d step=%d" % (RANK, step))
            while True:
                time.sleep(3600)
        x = a
        for _ in range(WORK):
            x = torch.tanh(x @ a / 16.0)
        loss = (model(x[:32]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if RANK == 0 and CKPT_EVERY > 0 and (step + 1) % CKPT_EVERY == 0:
            os.makedirs(CKPT_DIR, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "next_step": step + 1},
                       CKPT + ".tmp")
            os.replace(CKPT + ".tmp", CKPT)
        say("gray-step step=%d rank=%d attempt=%d" % (step, RANK, ATTEMPT))
        time.sleep(SLEEP)
    dist.barrier()
    say("gray-done rank=%d steps=%d" % (RANK, STEPS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
