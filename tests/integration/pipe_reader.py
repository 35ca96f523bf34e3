#!/usr/bin/python3
"""Training program of test_pipe_mode.py: reads every channel as SageMaker
hands it over and writes what it read to <model dir>/read-<host>.json.

A channel whose inputdataconfig.json says TrainingInputMode Pipe is read
from the named pipes $SM_CHANNEL_<NAME>_<epoch>, epochs 0..PIPE_EPOCHS-1,
each to its end; its record holds [bytes, sha256] per epoch. A File channel
holds {relative path: sha256} of its folder.

Environment that drives it (all optional):
  PIPE_EPOCHS N        epochs to read (default 2)
  PIPE_STOP_EARLY B    first read 100 bytes of epoch 0 and close it, then
                       PIPE_EPOCHS whole epochs from epoch 1 on, then open
                       one more and read 10
                       bytes of it and exit without closing it (a reader
                       that stops must not keep the job from ending)
  TB_RELEASE PATH      TensorBoard: write <output dir>/tensorboard/events.1
                       (step 1), wait until PATH exists, append step 2,
                       write sub/events.2, exit
Standard library only.
"""
import hashlib
import json
import os
import sys
import time


def wait_path(p, timeout=120.0):
    deadline = time.time() + timeout
    while not os.path.exists(p):
        if time.time() > deadline:
            sys.exit("no %s after %.0f s" % (p, timeout))
        time.sleep(0.05)


def read_all(path):
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(65536)
            if not b:
                break
            h.update(b)
            n += len(b)
    return [n, h.hexdigest()]


def tensorboard(release):
    tb = os.path.join(os.environ["SM_OUTPUT_DIR"], "tensorboard")
    os.makedirs(os.path.join(tb, "sub"), exist_ok=True)
    with open(os.path.join(tb, "events.1"), "wb") as f:
        f.write(b"step 1\n" * 100)
    print("tensorboard: step 1 written", flush=True)
    wait_path(release, 300)
    with open(os.path.join(tb, "events.1"), "ab") as f:
        f.write(b"step 2\n" * 50)
    with open(os.path.join(tb, "sub", "events.2"), "wb") as f:
        f.write(b"other run\n")
    print("tensorboard: step 2 written", flush=True)


def main():
    if os.environ.get("TB_RELEASE"):
        tensorboard(os.environ["TB_RELEASE"])
        return 0
    host = os.environ["SM_CURRENT_HOST"]
    with open(os.path.join(os.environ["SM_INPUT_CONFIG_DIR"], "inputdataconfig.json")) as f:
        idc = json.load(f)
    epochs = int(os.environ.get("PIPE_EPOCHS", "2"))
    early = os.environ.get("PIPE_STOP_EARLY") == "true"
    res = {"host": host, "idc": idc, "env": {k: v for k, v in os.environ.items() if k.startswith("SM_")},
           "pipe": {}, "file": {}, "folder_exists": {}}
    held = []
    for ch in json.loads(os.environ["SM_CHANNELS"]):
        base = os.environ["SM_CHANNEL_" + ch.upper()]
        res["folder_exists"][ch] = os.path.isdir(base)
        if idc[ch]["TrainingInputMode"] == "Pipe":
            got = []
            first = 0
            if early:
                wait_path(base + "_0")
                with open(base + "_0", "rb") as f:
                    f.read(100)
                first = 1
            for e in range(first, first + epochs):
                p = "%s_%d" % (base, e)
                wait_path(p)
                got.append(read_all(p))
            if early:
                p = "%s_%d" % (base, first + epochs)
                wait_path(p)
                f = open(p, "rb")
                f.read(10)
                held.append(f)
            res["pipe"][ch] = got
        else:
            files = {}
            for d, _, names in os.walk(base):
                for n in names:
                    full = os.path.join(d, n)
                    files[os.path.relpath(full, base)] = read_all(full)[1]
            res["file"][ch] = files
    with open(os.path.join(os.environ["SM_MODEL_DIR"], "read-%s.json" % host), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    print("read all channels: %s" % sorted(res["pipe"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
