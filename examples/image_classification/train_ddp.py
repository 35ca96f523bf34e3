#!/usr/bin/python3
"""Fashion-MNIST, data-parallel: a SageMaker script-mode program for the
torch_distributed distribution (the SDK's
`distribution={"torch_distributed": {"enabled": True}}`, i.e. the
hyperparameter sagemaker_torch_distributed_enabled=true).

Every process is one rank: env:// (MASTER_ADDR, MASTER_PORT, RANK,
WORLD_SIZE from the launcher), gloo on CPU, nccl with CUDA. Each rank
trains on what its host's `train` channel holds: with ShardedByS3Key the
host got its own share of the shard objects, so nothing is sampled across
ranks here. Every epoch each rank reshuffles its share (by --seed, the
epoch and the rank) and all ranks run the same number of steps (the
smallest share's). DDP averages the gradients, so all ranks hold the same
weights. Rank 0 evaluates on the `test` channel after every epoch.

Checkpoints: every --checkpoint-steps steps rank 0 writes ckpt.pt (the
step, the model and the optimizer) into the checkpoint folder
(CheckpointConfig.LocalPath, TRAINCTL_CHECKPOINT_DIR under trainctl),
through a temporary file and a rename. At start rank 0 loads ckpt.pt when
it is there and broadcasts it, so a restarted job goes on from that step
in the middle of an epoch, with the data order it would have had.

Prints (rank 0) `resume step=S` (0 without a checkpoint),
`epoch=E step=S train:loss=X validation:accuracy=Y` each epoch, then
`final validation:accuracy=Y steps=S seconds=T`. Rank 0 writes model.pt
and metrics.json into SM_MODEL_DIR.
"""
import argparse
import datetime
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fmnist  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16, help="per rank")
    p.add_argument("--learning-rate", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--width", type=int, default=8, help="channels of the first convolution")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--checkpoint-steps", type=int, default=10, help="0: no checkpoints")
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds to wait after each step (to watch a run, or stop a host by hand)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--timeout", type=int, default=120, help="seconds to wait for the other ranks")
    p.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    p.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN", "/opt/ml/input/data/train"))
    p.add_argument("--test", default=os.environ.get("SM_CHANNEL_TEST", "/opt/ml/input/data/test"))
    # SageMaker passes every hyperparameter; ignore the ones not ours.
    args, _ = p.parse_known_args()
    return args


def init_distributed(timeout):
    if "RANK" not in os.environ:
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29511")
    cuda = torch.cuda.is_available() and dist.is_nccl_available()
    device = torch.device("cpu")
    if cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout))
    return device


def evaluate(model, x, y, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 500):
            out = model(x[i:i + 500].to(device))
            correct += int((out.argmax(1).cpu() == y[i:i + 500]).sum())
    model.train()
    return correct / max(1, len(x))


def restore(ckpt_path, model, opt):
    """The step to go on from: rank 0's ckpt.pt, broadcast to every rank."""
    state = [None]
    if dist.get_rank() == 0 and os.path.exists(ckpt_path):
        state[0] = torch.load(ckpt_path, map_location="cpu")
    dist.broadcast_object_list(state, src=0)
    if state[0] is None:
        return 0
    model.load_state_dict(state[0]["model"])
    opt.load_state_dict(state[0]["optimizer"])
    return int(state[0]["step"])


def steps_per_epoch(n_local, batch, device):
    """The same number of steps on every rank: the smallest share's."""
    t = torch.tensor([n_local // batch], dtype=torch.int64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return int(t.item())


def train(args, device, rank, lead):
    x, y, files = fmnist.load_dir(args.train, "train")
    print("rank=%d host=%s images=%d files=%s" % (rank, os.environ.get("SM_CURRENT_HOST", "-"), len(x),
                                                   ",".join(os.path.basename(f) for f in files)), flush=True)
    x, y = fmnist.to_tensors(x, y)
    tx, ty = (None, None)
    if lead:
        tx, ty = fmnist.to_tensors(*fmnist.load_dir(args.test, "t10k")[:2])
    torch.manual_seed(args.seed)
    model = fmnist.net(args.width).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=args.momentum)
    ckpt_path = os.path.join(fmnist.checkpoint_dir(), "ckpt.pt")
    step = restore(ckpt_path, model, opt)
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    per_epoch = steps_per_epoch(len(x), args.batch_size, device)
    if per_epoch == 0:
        raise SystemExit("rank %d holds %d images, fewer than one batch of %d" % (rank, len(x), args.batch_size))
    if lead:
        print("resume step=%d images=%d steps_per_epoch=%d world=%d" % (
            step, len(x), per_epoch, dist.get_world_size()), flush=True)
    acc, loss = 0.0, torch.tensor(0.0)
    for epoch in range(step // per_epoch, args.epochs):
        perm = np.random.default_rng([args.seed, epoch, rank]).permutation(len(x))
        for i in range(step - epoch * per_epoch, per_epoch):
            idx = torch.from_numpy(perm[i * args.batch_size:(i + 1) * args.batch_size])
            opt.zero_grad()
            loss = F.cross_entropy(ddp(x[idx].to(device)), y[idx].to(device))
            loss.backward()
            opt.step()
            step += 1
            if lead and args.checkpoint_steps and step % args.checkpoint_steps == 0:
                fmnist.save_atomic({"step": step, "model": model.state_dict(),
                                    "optimizer": opt.state_dict()}, ckpt_path)
            if args.step_sleep:
                time.sleep(args.step_sleep)
        if lead:
            acc = evaluate(model, tx, ty, device)
            print("epoch=%d step=%d train:loss=%.4f validation:accuracy=%.4f" % (
                epoch + 1, step, float(loss), acc), flush=True)
    return model, step, acc


def main():
    t0 = time.time()
    args = parse_args()
    torch.set_num_threads(args.threads)
    device = init_distributed(args.timeout)
    rank = dist.get_rank()
    lead = rank == 0
    model, step, acc = train(args, device, rank, lead)
    if lead:
        os.makedirs(args.model_dir, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(args.model_dir, "model.pt"))
        with open(os.path.join(args.model_dir, "metrics.json"), "w") as f:
            json.dump({"validation:accuracy": acc, "steps": step}, f)
        print("final validation:accuracy=%.4f steps=%d seconds=%.1f" % (acc, step, time.time() - t0),
              flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
