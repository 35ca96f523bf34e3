"""Fashion-MNIST for the image-classification examples: the data, the
network and a few helpers that train_ddp.py and train_pipeline.py share.

Data: every `*.npz` under a folder (arrays `x`, uint8 N x 28 x 28, and
`y`, uint8 N; what prepare_data.py writes), or the four IDX files as
Debian's dataset-fashion-mnist and the original site ship them
(`*-images-idx3-ubyte.gz` with `*-labels-idx1-ubyte.gz`). Standard
library, numpy and torch only: no torchvision, no download.
"""
import glob
import gzip
import os
import struct

import numpy as np
import torch
import torch.nn as nn

CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
           "Ankle boot")


def read_idx(path):
    """An IDX file (gzip or not) as a numpy array of uint8."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, kind, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or kind != 0x08:
        raise ValueError("%s: not an IDX file of unsigned bytes" % path)
    dims = struct.unpack(">%dI" % ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_dir(path, prefix="train"):
    """(x uint8 N x 28 x 28, y uint8 N, files) from a channel's folder:
    its *.npz files in name order, else the IDX pair named prefix."""
    files = sorted(glob.glob(os.path.join(path, "**", "*.npz"), recursive=True))
    if files:
        xs, ys = [], []
        for f in files:
            with np.load(f) as z:
                xs.append(z["x"])
                ys.append(z["y"])
        return np.concatenate(xs), np.concatenate(ys), files
    imgs = sorted(glob.glob(os.path.join(path, "**", "%s-images-idx3-ubyte*" % prefix), recursive=True))
    labels = sorted(glob.glob(os.path.join(path, "**", "%s-labels-idx1-ubyte*" % prefix), recursive=True))
    if not imgs or not labels:
        raise FileNotFoundError("no *.npz and no %s-*-ubyte files under %s" % (prefix, path))
    return read_idx(imgs[0]), read_idx(labels[0]), [imgs[0], labels[0]]


def to_tensors(x, y):
    """Images scaled to 0..1 with one channel, labels as int64."""
    xt = torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)
    return xt, torch.from_numpy(y.astype(np.int64))


def blocks(width=8):
    """The network as a list of blocks, in order: two convolutions with
    pooling, then a classifier. train_ddp.py runs them as one model;
    train_pipeline.py gives each host a contiguous run of them."""
    return [
        nn.Sequential(nn.Conv2d(1, width, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2)),        # 28 -> 14
        nn.Sequential(nn.Conv2d(width, 2 * width, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2)),  # 14 -> 7
        nn.Sequential(nn.Flatten(), nn.Linear(2 * width * 7 * 7, 128), nn.ReLU()),
        nn.Linear(128, 10),
    ]


def net(width=8):
    return nn.Sequential(*blocks(width))


def str2bool(v):
    return str(v).lower() in ("1", "true", "yes", "y")


def checkpoint_dir():
    """Where CheckpointConfig.LocalPath is for this process."""
    return os.environ.get("TRAINCTL_CHECKPOINT_DIR") or "/opt/ml/checkpoints"


def save_atomic(obj, path):
    """torch.save into path.tmp, then rename: a reader (or the agent's
    mirror) sees the old file or the new one, never half of one."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)
