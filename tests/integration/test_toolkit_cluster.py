#!/usr/bin/python3
"""The training toolkit's modules on hosts that have no checkout of this
tree: a 2-host cluster of network namespaces provisioned over SSH
(scripts/cluster.sh, as test_distributed.py brings it up, with 2 hosts).

One job: a script that does `from sagemaker_training import environment`
and `import sagemaker_containers` runs unmodified on both hosts through
the SDK's CreateTrainingJob request for a PyTorch 1.5.0 image. The
modules come with trainagent (built into it, written into the job's
folder); each host reads its own view of the job; the log and the
Training transition say which Python and PyTorch run, with the warning
for the version the image asks for.

TAP on stdout; skips (1..0 # SKIP) when not root or without sshd. Run
from the top of the tree: /usr/bin/python3 tests/integration/test_toolkit_cluster.py
"""
import io
import os
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import distlib  # noqa: E402
from distlib import expect, wait_job  # noqa: E402

distlib.N_HOSTS = 2
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.5.0-cpu-py3"
CODE_URI = "s3://%s/code/toolkit/sourcedir.tar.gz" % distlib.BUCKET

TRAIN = r'''
import os, sys
from sagemaker_training import environment
import sagemaker_containers

env = environment.Environment()
old = sagemaker_containers.training_env()
print("cluster-tk host=%s hosts=%s master=%s same=%s from=%s" % (
    env.current_host, ",".join(env.hosts), env.is_master,
    dict(env) == dict(old), os.path.dirname(os.path.dirname(environment.__file__))), flush=True)
'''


def put_code(cluster):
    path = cluster.s3_path(CODE_URI)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = TRAIN.encode()
    with tarfile.open(path, "w:gz") as tf:
        ti = tarfile.TarInfo("train.py")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))


def request(name):
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": IMAGE, "TrainingInputMode": "File"},
        "RoleArn": distlib.ROLE,
        "HyperParameters": {
            "sagemaker_program": '"train.py"',
            "sagemaker_submit_directory": '"%s"' % CODE_URI,
            "sagemaker_container_log_level": "20", "sagemaker_job_name": '"%s"' % name,
            "sagemaker_region": '"us-east-1"'},
        "OutputDataConfig": {"S3OutputPath": distlib.OUT},
        "ResourceConfig": {"InstanceType": distlib.ITYPE, "InstanceCount": 2, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 150},
    }


def run(tap, cluster):
    err = cluster.up()
    if not tap.ok(err is None, "a 2-host cluster comes up, agents provisioned over SSH", err):
        return
    put_code(cluster)
    sm = cluster.client()
    name = "tk-cluster-%x" % (int(time.time() * 1000) % 0xfffffff)

    def case():
        sm.create_training_job(**request(name))
        d, seen = wait_job(sm, name, 120)
        expect(d["TrainingJobStatus"] == "Completed", "%s: %s (seen %s)" % (
            d["TrainingJobStatus"], d.get("FailureReason"), " -> ".join(seen)))
        out = ""
        deadline = time.time() + 15
        while time.time() < deadline:
            rc, out, _ = cluster.cli("logs", name)
            if out.count("cluster-tk host=") == 2:
                break
            time.sleep(0.3)
        for h, master in (("algo-1", "True"), ("algo-2", "False")):
            line = "cluster-tk host=%s hosts=algo-1,algo-2 master=%s same=True from=" % (h, master)
            expect(line in out, "no %r in the log:\n%s" % (line, out[-2000:]))
        expect("from=/" in out and "/.trainagent/runtime" in out,
               "the modules did not come from the job's folder:\n%s" % out[-2000:])
        expect("but the image asks for PyTorch 1.5.0 and py3: warning, running anyway" in out,
               "no version warning in the log:\n%s" % out[-2000:])
        msg = [t.get("StatusMessage", "") for t in d["SecondaryStatusTransitions"]
               if t["Status"] == "Training"]
        expect(msg and "Script mode runs Python 3." in msg[0] and "PyTorch 1.5.0" in msg[0],
               "Training transition: %r" % msg)

    tap.case("sagemaker_training and sagemaker_containers on 2 SSH-provisioned hosts; "
             "versions in the log and the transition", case)


def main():
    return distlib.cluster_main(run)


if __name__ == "__main__":
    sys.exit(main())
