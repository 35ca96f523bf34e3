#!/usr/bin/python3
"""examples/image_classification/train_ddp.py on the SSH test cluster: 3
network-namespace hosts provisioned over SSH (scripts/cluster.sh, as
tests/integration/test_distributed.py brings it up), one job through the
SageMaker SDK's request for a PyTorch estimator with
distribution={"torch_distributed": {"enabled": True}} (imgcls.py), the
training set as a ShardedByS3Key channel in the embedded store, at the
small size of imgcls.py: Completed, each host trained on its own shards
(2 of 6, none twice), held-out accuracy >= imgcls.DDP_MIN_ACC.

TAP on stdout; skips (1..0 # SKIP) when not root, without sshd or without
the data. Run from the top of the tree:
    /usr/bin/python3 tests/integration/test_image_cluster.py
"""
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import distlib  # noqa: E402
import imgcls as ic  # noqa: E402
from distlib import expect, wait_job  # noqa: E402

distlib.N_HOSTS = 3
CODE_URI = "s3://%s/code/image_classification/sourcedir.tar.gz" % distlib.BUCKET
DATA_URI = "s3://%s/fashion-mnist-shards/" % distlib.BUCKET
RANK_RE = re.compile(r"rank=(\d+) host=(algo-\d+) images=(\d+) files=(\S+)")


def run(tap, cluster):
    err = cluster.up()
    if not tap.ok(err is None, "a 3-host cluster comes up, agents provisioned over SSH", err):
        return
    ic.put_data(cluster.s3_path(DATA_URI))
    ic.put_code(cluster.s3_path(CODE_URI))
    sm = cluster.client()
    name = "img-cluster-%x" % (int(time.time() * 1000) % 0xfffffff)

    def case():
        t = time.time()
        sm.create_training_job(**ic.request(name, "train_ddp.py", 3, CODE_URI, DATA_URI, distlib.OUT,
                                            distlib.ITYPE, ic.HPS))
        d, seen = wait_job(sm, name, 150)
        out = ""
        deadline = time.time() + 15
        while time.time() < deadline:
            rc, out, _ = cluster.cli("logs", name)
            if ic.finals(out) and len(RANK_RE.findall(out)) == 3:
                break
            time.sleep(0.3)
        expect(d["TrainingJobStatus"] == "Completed", "%s: %s (seen %s)\n%s" % (
            d["TrainingJobStatus"], d.get("FailureReason"), " -> ".join(seen), out[-2000:]))
        ranks = RANK_RE.findall(out)
        files = [f for r in ranks for f in r[3].split(",")]
        expect(len(ranks) == 3 and sorted(files) == ["part-%05d.npz" % i for i in range(ic.SHARDS)],
               "shards per host: %s" % ranks)
        res = ic.finals(out)
        expect(len(res) == 1 and res[0][0] >= ic.DDP_MIN_ACC, "final lines %s (want accuracy >= %.2f)\n%s" % (
            res, ic.DDP_MIN_ACC, out[-2000:]))
        print("# accuracy %.4f after %d steps, job %.1f s" % (res[0][0], res[0][1], time.time() - t))

    tap.case("DDP CNN on 3 SSH-provisioned hosts, ShardedByS3Key: each host its own shards, "
             "accuracy >= %.2f" % ic.DDP_MIN_ACC, case)


def main():
    return distlib.cluster_main(run, skip=ic.skip_reason)


if __name__ == "__main__":
    sys.exit(main())
