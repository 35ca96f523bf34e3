#!/usr/bin/python3
"""Fashion-MNIST as the examples' channels: the training images cut into
shards (one object per shard, so that a ShardedByS3Key channel gives each
host its own share) and the test images in one file.

    prepare_data.py --out DIR [--shards 6] [--train-samples 60000]
                    [--test-samples 10000] [--src /usr/share/datasets/fashion-mnist]

writes DIR/train/part-00000.npz ... and DIR/test/test.npz (arrays x:
uint8 N x 28 x 28 and y: uint8 N). The first --train-samples training
images and the first --test-samples test images are kept, in their order.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fmnist  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", default=os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--out", required=True)
    p.add_argument("--shards", type=int, default=6)
    p.add_argument("--train-samples", type=int, default=60000)
    p.add_argument("--test-samples", type=int, default=10000)
    a = p.parse_args()
    x, y, _ = fmnist.load_dir(a.src, "train")
    tx, ty, _ = fmnist.load_dir(a.src, "t10k")
    x, y, tx, ty = x[:a.train_samples], y[:a.train_samples], tx[:a.test_samples], ty[:a.test_samples]
    os.makedirs(os.path.join(a.out, "train"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "test"), exist_ok=True)
    for i, idx in enumerate(np.array_split(np.arange(len(x)), a.shards)):
        np.savez(os.path.join(a.out, "train", "part-%05d.npz" % i), x=x[idx], y=y[idx])
    np.savez(os.path.join(a.out, "test", "test.npz"), x=tx, y=ty)
    print("%d training images in %d shards, %d test images, in %s" % (len(x), a.shards, len(tx), a.out))


if __name__ == "__main__":
    main()
