#!/usr/bin/python3
"""Fashion-MNIST, model-parallel: the network's parameters split across
hosts as pipeline stages over torch.distributed point-to-point (send and
recv; gloo on CPU). A SageMaker script-mode program for the
torch_distributed distribution, like train_ddp.py.

Rank r of W holds a contiguous run of fmnist.blocks() (the blocks are
dealt out as evenly as they go: with 2 ranks the convolutions on one, the
classifier on the other) and only those parameters, with its own
optimizer. Each batch is cut into --micro-batches parts and run GPipe's
way: every stage does all forward passes (receiving its input from rank
r-1, sending its output to rank r+1; the first stage reads the images, the
last one the labels and computes the loss), then all backward passes in
the other direction (receiving the gradient of its output from rank r+1,
sending the gradient of its input to rank r-1), then an optimizer step.
Activations go first as a shape (4 int64) and then as the data, so no
stage needs to know another stage's layers.

Every rank reads the whole `train` channel (FullyReplicated) and walks it
in the same order (by --seed and the epoch): the first stage takes the
images, the last the labels. The `test` channel is evaluated the same way
after every epoch; the last stage counts, and broadcasts the accuracy.

Prints (rank 0) `stages=W blocks=...`, `epoch=E step=S
validation:accuracy=Y` and `final validation:accuracy=Y steps=S
seconds=T`; every rank writes its stage's parameters as
model-stage<r>.pt into SM_MODEL_DIR.
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
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fmnist  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=48)
    p.add_argument("--micro-batches", type=int, default=4)
    p.add_argument("--learning-rate", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--width", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--timeout", type=int, default=120)
    p.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    p.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN", "/opt/ml/input/data/train"))
    p.add_argument("--test", default=os.environ.get("SM_CHANNEL_TEST", "/opt/ml/input/data/test"))
    args, _ = p.parse_known_args()
    return args


class Stage:
    """One rank's blocks, and the point-to-point traffic around them."""

    def __init__(self, args):
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.first, self.last = self.rank == 0, self.rank == self.world - 1
        torch.manual_seed(args.seed)
        all_blocks = fmnist.blocks(args.width)
        if self.world > len(all_blocks):
            raise SystemExit("%d stages but only %d blocks" % (self.world, len(all_blocks)))
        parts = np.array_split(np.arange(len(all_blocks)), self.world)
        self.blocks = [int(i) for i in parts[self.rank]]
        self.parts = [[int(i) for i in p] for p in parts]
        # Keep only this stage's blocks: the others are dropped here.
        self.model = nn.Sequential(*[all_blocks[i] for i in self.blocks])
        del all_blocks
        self.opt = torch.optim.SGD(self.model.parameters(), lr=args.learning_rate, momentum=args.momentum)

    def send(self, t, dst):
        shape = torch.zeros(4, dtype=torch.int64)
        shape[:t.dim()] = torch.tensor(t.shape)
        dist.send(torch.tensor([t.dim()], dtype=torch.int64), dst)
        dist.send(shape, dst)
        dist.send(t.contiguous(), dst)

    def recv(self, src):
        ndim = torch.zeros(1, dtype=torch.int64)
        dist.recv(ndim, src)
        shape = torch.zeros(4, dtype=torch.int64)
        dist.recv(shape, src)
        t = torch.empty([int(d) for d in shape[:int(ndim)]])
        dist.recv(t, src)
        return t

    def forward(self, xs, train):
        """All micro-batches forward: (inputs, outputs) kept for backward."""
        ins, outs = [], []
        for x in xs:
            if not self.first:
                x = self.recv(self.rank - 1)
                x.requires_grad_(train)
            out = self.model(x)
            if not self.last:
                self.send(out.detach(), self.rank + 1)
            ins.append(x)
            outs.append(out)
        return ins, outs

    def train_step(self, xs, ys):
        self.opt.zero_grad()
        ins, outs = self.forward(xs, True)
        loss = 0.0
        for x, out, y in zip(ins, outs, ys):
            if self.last:
                part = F.cross_entropy(out, y) / len(outs)
                part.backward()
                loss += float(part)
            else:
                out.backward(self.recv(self.rank + 1))
            if not self.first:
                self.send(x.grad, self.rank - 1)
        self.opt.step()
        return loss

    def accuracy(self, x, y):
        self.model.eval()
        correct = torch.zeros(1)
        with torch.no_grad():
            chunks = list(range(0, len(y), 500))
            _, outs = self.forward([x[i:i + 500] for i in chunks] if self.first else [None] * len(chunks), False)
            if self.last:
                for i, out in zip(chunks, outs):
                    correct += float((out.argmax(1) == y[i:i + 500]).sum())
        self.model.train()
        dist.broadcast(correct, self.world - 1)
        return float(correct) / max(1, len(y))


def main():
    t0 = time.time()
    args = parse_args()
    torch.set_num_threads(args.threads)
    if "RANK" not in os.environ:
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29512")
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=args.timeout))
    st = Stage(args)
    x, y = fmnist.to_tensors(*fmnist.load_dir(args.train, "train")[:2])
    tx, ty = fmnist.to_tensors(*fmnist.load_dir(args.test, "t10k")[:2])
    n_params = sum(p.numel() for p in st.model.parameters())
    print("stage rank=%d blocks=%s parameters=%d" % (st.rank, st.blocks, n_params), flush=True)
    if st.rank == 0:
        print("stages=%d blocks=%s images=%d" % (st.world, st.parts, len(y)), flush=True)
    step, acc, mb = 0, 0.0, max(1, args.batch_size // args.micro_batches)
    for epoch in range(args.epochs):
        perm = torch.from_numpy(np.random.default_rng([args.seed, epoch]).permutation(len(y)))
        for i in range(len(y) // args.batch_size):
            idx = perm[i * args.batch_size:(i + 1) * args.batch_size]
            parts = [idx[j:j + mb] for j in range(0, len(idx), mb)]
            st.train_step([x[p] for p in parts], [y[p] for p in parts])
            step += 1
        acc = st.accuracy(tx, ty)
        if st.rank == 0:
            print("epoch=%d step=%d validation:accuracy=%.4f" % (epoch + 1, step, acc), flush=True)
    os.makedirs(args.model_dir, exist_ok=True)
    torch.save({"blocks": st.blocks, "state_dict": st.model.state_dict()},
               os.path.join(args.model_dir, "model-stage%d.pt" % st.rank))
    if st.rank == 0:
        with open(os.path.join(args.model_dir, "metrics.json"), "w") as f:
            json.dump({"validation:accuracy": acc, "steps": step, "stages": st.world}, f)
        print("final validation:accuracy=%.4f steps=%d seconds=%.1f" % (acc, step, time.time() - t0), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
