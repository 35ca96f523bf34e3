#!/usr/bin/python3
"""Handwritten digits with PyTorch DistributedDataParallel: a SageMaker
script-mode training script for the torch_distributed distribution
(`distribution={"torch_distributed": {"enabled": True}}` in the SDK, i.e.
the hyperparameter sagemaker_torch_distributed_enabled=true).

Every process is one rank. It joins the process group with env://
(MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, as torchrun or trainctl sets
them; backend nccl when CUDA is there, else gloo), reads sklearn's 8x8
digits from the `train` channel (SM_CHANNEL_TRAIN: digits.csv.gz, or any
*.csv / *.csv.gz with 64 pixel columns 0..16 and the label last), keeps
the same 20% of the rows aside on every rank (by --seed) and trains a small
MLP on its shard of the rest (DistributedSampler: rank r of W takes every
W-th row of a permutation shared by all ranks, reshuffled each epoch).
DDP averages the gradients, so every rank holds the same weights.

Output: rank 0 writes model.pt (the state_dict) and metrics.json into
SM_MODEL_DIR; with --hash-weights true every rank also writes
weights-rank<R>.json (a SHA-256 of its final state_dict) into
SM_OUTPUT_DATA_DIR, so a test can check that all ranks agree.

Prints (rank 0) per epoch `epoch=N train:loss=X validation:accuracy=Y`,
then `final validation:accuracy=Y` and
`throughput steps_per_s=S samples_per_s=T` (training loop only, per rank),
for MetricDefinitions and for comparing launchers.

Without any launcher (no RANK/WORLD_SIZE in the environment) it runs as a
single rank on 127.0.0.1.
"""
import argparse
import datetime
import glob
import gzip
import hashlib
import json
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def str2bool(v):
    return str(v).lower() in ("1", "true", "yes", "y")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--learning-rate", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--test-fraction", type=float, default=0.2)
    p.add_argument("--hash-weights", type=str2bool, default=False)
    p.add_argument("--timeout", type=int, default=120, help="seconds to wait for the other ranks")
    p.add_argument("--backend", default="", help="gloo or nccl (default: nccl with CUDA, else gloo)")
    p.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    p.add_argument("--output-data-dir", default=os.environ.get("SM_OUTPUT_DATA_DIR", "output"))
    p.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN", "/opt/ml/input/data/train"))
    # SageMaker passes every hyperparameter; tolerate ones we do not know.
    args, unknown = p.parse_known_args()
    return args, unknown


def load(train_dir):
    files = sorted(glob.glob(os.path.join(train_dir, "**", "*.csv.gz"), recursive=True) +
                   glob.glob(os.path.join(train_dir, "**", "*.csv"), recursive=True))
    if not files:
        sys.exit("no *.csv or *.csv.gz under %s" % train_dir)
    parts = []
    for f in files:
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rt") as fh:
            parts.append(np.loadtxt(fh, delimiter=",", ndmin=2))
    data = np.concatenate(parts)
    if data.shape[1] != 65:
        sys.exit("expected 65 columns (64 pixels + label), got %d" % data.shape[1])
    x = torch.tensor(data[:, :64] / 16.0, dtype=torch.float32)
    y = torch.tensor(data[:, 64], dtype=torch.int64)
    return x, y, files


class MLP(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(64, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def init_distributed(args):
    """env:// from the launcher's variables; a world of one without them."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(free_port()))
        os.environ["RANK"], os.environ["WORLD_SIZE"] = "0", "1"
        os.environ.setdefault("LOCAL_RANK", "0")
    cuda = torch.cuda.is_available()
    backend = args.backend or ("nccl" if cuda and dist.is_nccl_available() else "gloo")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    t = time.time()
    dist.init_process_group(backend, init_method="env://",
                            timeout=datetime.timedelta(seconds=args.timeout))
    return backend, device, time.time() - t


def state_hash(model):
    h = hashlib.sha256()
    for k, v in sorted(model.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    t0 = time.time()
    args, unknown = parse_args()
    backend, device, init_s = init_distributed(args)
    rank, world = dist.get_rank(), dist.get_world_size()
    host = os.environ.get("SM_CURRENT_HOST", socket.gethostname())
    lead = rank == 0
    if lead and unknown:
        print("ignoring unknown arguments: %s" % " ".join(unknown), flush=True)

    x, y, files = load(args.train)
    g = torch.Generator().manual_seed(args.seed)
    order = torch.randperm(len(y), generator=g)
    n_test = int(round(len(y) * args.test_fraction))
    test, train = order[:n_test], order[n_test:]
    train_set = TensorDataset(x[train], y[train])
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    x_test, y_test = x[test].to(device), y[test].to(device)
    print("rank %d of %d on %s (%s, %s): %d of %d training rows, %d held out, init %.2f s" % (
        rank, world, host, backend, device, len(sampler), len(train), len(test), init_s), flush=True)

    torch.manual_seed(args.seed + 1 + rank)  # different on purpose: DDP broadcasts rank 0's
    model = DDP(MLP(args.hidden).to(device), device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=args.momentum)

    steps, samples, train_s, acc, loss = 0, 0, 0.0, 0.0, float("nan")
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        model.train()
        t = time.time()
        total, n = 0.0, 0
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            out = F.cross_entropy(model(xb), yb)
            out.backward()
            opt.step()
            steps += 1
            samples += len(yb)
            total += out.item() * len(yb)
            n += len(yb)
        train_s += time.time() - t
        # The mean training loss over every rank's shard.
        s = torch.tensor([total, float(n)], device=device)
        dist.all_reduce(s)
        loss = (s[0] / s[1]).item()
        model.eval()
        with torch.no_grad():
            acc = (model(x_test).argmax(dim=1) == y_test).float().mean().item()
        if lead:
            print("epoch=%d train:loss=%.4f validation:accuracy=%.4f" % (epoch, loss, acc), flush=True)

    steps_per_s = steps / train_s if train_s > 0 else 0.0
    samples_per_s = samples / train_s if train_s > 0 else 0.0
    if args.hash_weights:
        os.makedirs(args.output_data_dir, exist_ok=True)
        with open(os.path.join(args.output_data_dir, "weights-rank%d.json" % rank), "w") as f:
            json.dump({"rank": rank, "world": world, "host": host, "sha256": state_hash(model.module),
                       "accuracy": acc, "steps": steps}, f)
    if lead:
        os.makedirs(args.model_dir, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(args.model_dir, "model.pt"))
        metrics = {"world": world, "backend": backend, "epochs": args.epochs, "train_rows": int(len(train)),
                   "test_rows": int(len(test)), "loss": loss, "accuracy": acc, "steps": steps,
                   "steps_per_s": round(steps_per_s, 2), "samples_per_s": round(samples_per_s, 1),
                   "train_seconds": round(train_s, 3), "seconds": round(time.time() - t0, 3)}
        with open(os.path.join(args.model_dir, "metrics.json"), "w") as f:
            json.dump(metrics, f, indent=1, sort_keys=True)
        print("final validation:accuracy=%.4f" % acc, flush=True)
        print("throughput steps_per_s=%.1f samples_per_s=%.1f (%d steps in %.2f s, world %d)" % (
            steps_per_s, samples_per_s, steps, train_s, world), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
