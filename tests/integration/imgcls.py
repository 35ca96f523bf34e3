"""Helpers of test_image_classification.py and test_image_cluster.py: the
examples/image_classification programs, their data and the request the
SageMaker Python SDK sends for them (not a test itself).

The request is the one the SDK builds for

    PyTorch(entry_point="train_ddp.py", source_dir="examples/image_classification",
            image_uri=IMAGE, instance_count=3, instance_type=ITYPE,
            distribution={"torch_distributed": {"enabled": True}},
            checkpoint_s3_uri=CKPT, hyperparameters={...})
        .fit({"train": TrainingInput(TRAIN, distribution="ShardedByS3Key"),
              "test": TEST})

(image_uri given, so the SDK checks no instance type name: see
docs/distributed.md), minus the debugger and profiler members.
"""
import io
import json
import os
import re
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = os.path.join(REPO, "examples", "image_classification")
FMNIST = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.13.1-cpu-py39"
ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
# The small size of make test: 3000 training images in 6 shards (1000 per
# host of 3), the first 1000 test images, 2 epochs of batches of 16 per
# rank. The README states the figures these reach.
TRAIN_SAMPLES, TEST_SAMPLES, SHARDS = 3000, 1000, 6
HPS = {"epochs": 2, "batch-size": 16, "learning-rate": 0.05, "seed": 1, "checkpoint-steps": 10}
PIPE_HPS = {"epochs": 2, "batch-size": 48, "micro-batches": 4, "learning-rate": 0.05, "seed": 1}
DDP_MIN_ACC = 0.72
PIPE_MIN_ACC = 0.72
# A job restarted from its last checkpoint ends with the accuracy of an
# undisturbed one: the program resumes the data order too, so the weights
# are the same up to floating-point noise.
KILL_TOL = 0.02
FINAL_RE = re.compile(r"final validation:accuracy=([0-9.]+) steps=(\d+)")
RESUME_RE = re.compile(r"resume step=(\d+) images=(\d+)")


def skip_reason():
    if not os.path.exists(os.path.join(FMNIST, "train-images-idx3-ubyte.gz")):
        return "no Fashion-MNIST in %s (apt-get install dataset-fashion-mnist)" % FMNIST
    try:
        import torch  # noqa: F401
    except ImportError:
        return "no torch for %s (apt-get install python3-torch)" % sys.executable
    return None


def put_data(root):
    """prepare_data.py's shards into root (a folder of the embedded store):
    root/train/part-*.npz and root/test/test.npz."""
    subprocess.run([sys.executable, os.path.join(EXAMPLE, "prepare_data.py"), "--src", FMNIST, "--out", root,
                    "--shards", str(SHARDS), "--train-samples", str(TRAIN_SAMPLES),
                    "--test-samples", str(TEST_SAMPLES)], check=True, stdout=subprocess.DEVNULL)


def put_code(path):
    """The example's folder as sourcedir.tar.gz at path (upload-source's shape)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for f in sorted(os.listdir(EXAMPLE)):
            if f.endswith(".py"):
                tf.add(os.path.join(EXAMPLE, f), arcname=f)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def channel(name, uri, sharded):
    return {"ChannelName": name, "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": uri,
        "S3DataDistributionType": "ShardedByS3Key" if sharded else "FullyReplicated"}}}


def request(name, program, count, code_uri, data_uri, out_uri, itype, hps, ckpt_uri=None, retries=None,
            sharded=True, env=None):
    hp = {k: json.dumps(v) for k, v in hps.items()}
    hp.update({"sagemaker_program": json.dumps(program), "sagemaker_submit_directory": json.dumps(code_uri),
               "sagemaker_torch_distributed_enabled": "true", "sagemaker_container_log_level": "20",
               "sagemaker_job_name": json.dumps(name), "sagemaker_region": '"us-east-1"'})
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": IMAGE, "TrainingInputMode": "File",
                                   "EnableSageMakerMetricsTimeSeries": True},
        "RoleArn": ROLE,
        "HyperParameters": hp,
        "InputDataConfig": [channel("train", data_uri + "train/", sharded),
                            channel("test", data_uri + "test/", False)],
        "OutputDataConfig": {"S3OutputPath": out_uri},
        "ResourceConfig": {"InstanceType": itype, "InstanceCount": count, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
        "EnableNetworkIsolation": False,
        "EnableInterContainerTrafficEncryption": False,
        "EnableManagedSpotTraining": False,
    }
    if ckpt_uri:
        req["CheckpointConfig"] = {"S3Uri": ckpt_uri, "LocalPath": "/opt/ml/checkpoints"}
    if retries is not None:
        req["RetryStrategy"] = {"MaximumRetryAttempts": retries}
    if env:
        req["Environment"] = env
    return req


def finals(text):
    """[(accuracy, steps)] of the program's `final` lines in a log."""
    return [(float(a), int(s)) for a, s in FINAL_RE.findall(text)]


def resumes(text):
    return [int(s) for s, _ in RESUME_RE.findall(text)]
