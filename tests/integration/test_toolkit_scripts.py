#!/usr/bin/python3
"""Scripts written for SageMaker's framework containers, unmodified, in
script mode; the framework versions their image asks for.

Starts `trainctld --local-hosts 2 --image-map MAP` (and, for one case,
`--framework-versions strict --local-hosts 1`) on free loopback ports
with temp state dirs, and sends the SDK's CreateTrainingJob requests
(SAGEMAKER-CONTRACT.md §6: sagemaker_program, sagemaker_submit_directory,
sagemaker_container_log_level, sagemaker_job_name, sagemaker_region as
JSON-encoded hyperparameters, a framework image whose tag carries
framework_version and py_version) with boto3:

  - a script that does `from sagemaker_training import environment` and
    reads environment.Environment() runs on 2 hosts (image PyTorch
    1.13.1/py3, what the host has: the log and the Training transition
    say so) and on 1 host (image PyTorch 1.5.0: Completed, with a
    warning in the log and in the transition);
  - a script that does `import sagemaker_containers` (training_env(),
    beta.framework) runs on 2 hosts and on 1 host, the latter with an
    image --image-map points at a virtual environment of the operator's
    that has "PyTorch 1.4.0" (a torch distribution's metadata only): the
    ranks run that Python and the versions match;
  - under --framework-versions strict the PyTorch 1.5.0 image fails
    with a ClientError naming both versions, and no rank runs.

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_toolkit_scripts.py
"""
import io
import os
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import smcompat as sc  # noqa: E402

sc.hermetic_env()
Fail, expect = sc.Fail, sc.expect
BUILD = os.environ.get("BUILD", "build")
TRAINCTL = os.path.join(REPO, BUILD, "bin", "trainctl")
BUCKET = "toolkit"
OUT = "s3://%s/out" % BUCKET
ECR = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:"

# Written as SageMaker's examples write them: nothing here knows trainctl.
TRAIN_TK = r'''
import argparse, json, os
from sagemaker_training import environment

if __name__ == "__main__":
    env = environment.Environment()
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--model-dir", type=str, default=env.model_dir)
    args, _ = parser.parse_known_args()
    rows = open(os.path.join(env.channel_input_dirs["train"], "part-0.csv")).read().split()
    print("tk-env host=%s hosts=%s master=%s is_master=%s epochs=%d hps=%s rows=%d "
          "job=%s entry=%s module=%s gpus=%d cpus_ok=%s" % (
              env.current_host, ",".join(env.hosts), env.master_hostname, env.is_master,
              args.epochs, json.dumps(env.hyperparameters, sort_keys=True), len(rows),
              env.job_name, env.user_entry_point, env.module_name, env.num_gpus,
              env.num_cpus >= 1), flush=True)
    if env.is_master:
        with open(os.path.join(args.model_dir, "model.json"), "w") as f:
            json.dump({"rows": len(rows)}, f)
'''

TRAIN_SC = r'''
import json, os, sys
import sagemaker_containers
from sagemaker_containers.beta.framework import env as fw_env, modules, entry_point

env = sagemaker_containers.training_env()
print("sc-env host=%s hosts=%s hps=%s channels=%s model_dir_ok=%s master=%s python=%s" % (
    env.current_host, ",".join(env.hosts), json.dumps(env.hyperparameters, sort_keys=True),
    ",".join(sorted(env.channel_input_dirs)), env.model_dir == os.environ["SM_MODEL_DIR"],
    env.master_hostname, sys.executable), flush=True)
'''


def put(d, key, data):
    """An object in the daemon's embedded store."""
    path = os.path.join(d.state_dir, "s3", BUCKET, key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def sourcedir(text):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = text.encode()
        ti = tarfile.TarInfo("train.py")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def body(name, image, count):
    """The SDK's CreateTrainingJob for a PyTorch estimator's fit()."""
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingInputMode": "File", "TrainingImage": image,
                                   "EnableSageMakerMetricsTimeSeries": True},
        "OutputDataConfig": {"S3OutputPath": OUT},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
        "ResourceConfig": {"VolumeSizeInGB": 30, "InstanceCount": count,
                           "InstanceType": "ml.m5.large"},
        "RoleArn": sc.ROLE,
        "InputDataConfig": [{"DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": "s3://%s/data/train" % BUCKET,
            "S3DataDistributionType": "FullyReplicated"}}, "ChannelName": "train"}],
        "HyperParameters": {
            "epochs": "2", "learning-rate": "0.01",
            "sagemaker_submit_directory": '"s3://%s/%s/source/sourcedir.tar.gz"' % (BUCKET, name),
            "sagemaker_program": '"train.py"', "sagemaker_container_log_level": "20",
            "sagemaker_job_name": '"%s"' % name, "sagemaker_region": '"us-east-1"'},
    }


def run(d, sm, name, script, image, count, timeout=120):
    put(d, "%s/source/sourcedir.tar.gz" % name, sourcedir(script))
    sm.create_training_job(**body(name, image, count))
    deadline = time.time() + timeout
    while True:
        r = sm.describe_training_job(TrainingJobName=name)
        if r["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            return r
        if time.time() > deadline:
            raise Fail("%s still %s after %d s\n%s" % (name, r["SecondaryStatus"], timeout,
                                                      d.log_tail()))
        time.sleep(0.2)


def logs(d, name, want=(), timeout=15):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=sc.KEY, AWS_SECRET_ACCESS_KEY=sc.SECRET)
    deadline = time.time() + timeout
    while True:
        r = subprocess.run([TRAINCTL, "--endpoint", d.endpoint, "logs", name],
                           capture_output=True, env=env, timeout=30)
        out = r.stdout.decode("utf-8", "replace")
        if r.returncode == 0 and all(w in out for w in want):
            return out
        if time.time() > deadline:
            return out
        time.sleep(0.3)


def training_message(desc):
    for t in desc.get("SecondaryStatusTransitions", []):
        if t["Status"] == "Training":
            return t.get("StatusMessage", "")
    return ""


def host_versions():
    out = subprocess.run(["/usr/bin/python3", "-c",
                          "import sys, importlib.metadata as m;"
                          "print('%d.%d.%d' % sys.version_info[:3], m.version('torch'))"],
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], out[1]


def fake_venv(tmp):
    """A virtual environment of the operator's with "torch 1.4.0" in it."""
    venv = os.path.join(tmp, "torch14")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", venv], check=True,
                   timeout=60)
    site = subprocess.run([os.path.join(venv, "bin", "python3"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    meta = os.path.join(site, "torch-1.4.0.dist-info")
    os.makedirs(meta)
    with open(os.path.join(meta, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: torch\nVersion: 1.4.0\n")
    return os.path.join(venv, "bin", "python3")


def main():
    tap = sc.Tap()
    pyv, torchv = host_versions()
    tmpd = sc.Daemon(name="unused")
    venv_python = fake_venv(tmpd.tmp)
    mapfile = os.path.join(tmpd.tmp, "image-map")
    with open(mapfile, "w") as f:
        f.write("# a framework version the hosts lack, on a Python of our own\n"
                "*/pytorch-training:1.4.0-cpu-py3   %s\n" % venv_python)
    d = sc.Daemon(extra=["--local-hosts", "2", "--grace-period", "2", "--image-map", mapfile])
    strict = sc.Daemon(name="strict", extra=["--local-hosts", "1", "--grace-period", "2",
                                             "--framework-versions", "strict"])
    try:
        err = d.start()
        if not tap.ok(err is None, "trainctld --local-hosts 2 --image-map starts", err):
            return tap.finish()
        sm = sc.make_client(d.endpoint)
        put(d, "data/train/part-0.csv", b"1,2\n3,4\n5,6\n")
        tag = int(time.time()) % 100000

        def tk_two_hosts():
            name = "tk-env2-%d" % tag
            r = run(d, sm, name, TRAIN_TK, ECR + "1.13.1-cpu-py3", 2)
            expect(r["TrainingJobStatus"] == "Completed",
                   "%s: %s" % (r["TrainingJobStatus"], r.get("FailureReason")))
            out = logs(d, name, ["host=algo-1", "host=algo-2"])
            hps = '{"epochs": 2, "learning-rate": 0.01}'
            for h, master in (("algo-1", "True"), ("algo-2", "False")):
                line = ("tk-env host=%s hosts=algo-1,algo-2 master=algo-1 is_master=%s "
                        "epochs=2 hps=%s rows=3 job=%s entry=train.py module=train gpus=0 "
                        "cpus_ok=True" % (h, master, hps, name))
                expect(line in out, "no line %r in the log:\n%s" % (line, out[-3000:]))
            say = ("Script mode runs Python %s and PyTorch %s (/usr/bin/python3), as the image "
                   "asks for PyTorch 1.13.1 and py3." % (pyv, torchv))
            expect(say in out, "log lacks %r:\n%s" % (say, out[-2000:]))
            msg = training_message(r)
            expect(say in msg, "Training transition: %r" % msg)

        def tk_mismatch_warns():
            name = "tk-v15-%d" % tag
            r = run(d, sm, name, TRAIN_TK, ECR + "1.5.0-cpu-py3", 1)
            expect(r["TrainingJobStatus"] == "Completed",
                   "%s: %s" % (r["TrainingJobStatus"], r.get("FailureReason")))
            say = ("Script mode runs Python %s and PyTorch %s (/usr/bin/python3), but the image "
                   "asks for PyTorch 1.5.0 and py3: warning, running anyway. trainctld "
                   "--image-map can point the image at a Python of your own "
                   "(docs/script-mode.md)." % (pyv, torchv))
            out = logs(d, name, ["tk-env host=algo-1", say])
            expect(say in out, "log lacks the warning:\n%s" % out[-2000:])
            expect("tk-env host=algo-1 hosts=algo-1 master=algo-1 is_master=True" in out,
                   out[-2000:])
            expect(say in training_message(r), "Training transition: %r" % training_message(r))

        def sc_two_hosts():
            name = "sc-env2-%d" % tag
            r = run(d, sm, name, TRAIN_SC, ECR + "1.13.1-cpu-py3", 2)
            expect(r["TrainingJobStatus"] == "Completed",
                   "%s: %s" % (r["TrainingJobStatus"], r.get("FailureReason")))
            out = logs(d, name, ["sc-env host=algo-1", "sc-env host=algo-2"])
            for h in ("algo-1", "algo-2"):
                line = ('sc-env host=%s hosts=algo-1,algo-2 hps={"epochs": 2, "learning-rate": '
                        '0.01} channels=train model_dir_ok=True master=algo-1' % h)
                expect(line in out, "no line %r in the log:\n%s" % (line, out[-3000:]))

        def sc_mapped_venv():
            name = "sc-map-%d" % tag
            r = run(d, sm, name, TRAIN_SC, ECR + "1.4.0-cpu-py3", 1)
            expect(r["TrainingJobStatus"] == "Completed",
                   "%s: %s" % (r["TrainingJobStatus"], r.get("FailureReason")))
            say = ("Script mode runs Python %s and PyTorch 1.4.0 (%s), as the image asks for "
                   "PyTorch 1.4.0 and py3." % (pyv, venv_python))
            out = logs(d, name, ["sc-env host=algo-1", say])
            expect(say in out, "log lacks %r:\n%s" % (say, out[-2000:]))
            expect("python=%s" % venv_python in out, "the rank ran another Python:\n%s"
                   % out[-2000:])
            expect(say in training_message(r), "Training transition: %r" % training_message(r))

        def strict_refuses():
            err = strict.start()
            expect(err is None, "trainctld --framework-versions strict: %s" % err)
            sms = sc.make_client(strict.endpoint)
            put(strict, "data/train/part-0.csv", b"1,2\n")
            name = "tk-strict-%d" % tag
            r = run(strict, sms, name, TRAIN_TK, ECR + "1.5.0-cpu-py3", 1)
            why = r.get("FailureReason", "")
            expect(r["TrainingJobStatus"] == "Failed", "strict: %s" % r["TrainingJobStatus"])
            want = ("ClientError: algo-1 (host ")
            expect(why.startswith(want), why)
            want = ("Script mode runs Python %s and PyTorch %s (/usr/bin/python3), but the image "
                    "asks for PyTorch 1.5.0 and py3: refused (--framework-versions strict)."
                    % (pyv, torchv))
            expect(want in why, why)
            out = logs(strict, name, [want])
            expect("tk-env" not in out, "a rank ran:\n%s" % out[-2000:])

        tap.case("sagemaker_training script, 2 hosts: Environment() as SageMaker's; "
                 "versions in the log and the Training transition", tk_two_hosts)
        tap.case("sagemaker_training script, 1 host, PyTorch 1.5.0 image: runs, "
                 "with a warning in the log and the transition", tk_mismatch_warns)
        tap.case("sagemaker_containers script, 2 hosts: training_env() as SageMaker's",
                 sc_two_hosts)
        tap.case("sagemaker_containers script, 1 host: --image-map to a virtual "
                 "environment with the version asked for", sc_mapped_venv)
        tap.case("--framework-versions strict: the PyTorch 1.5.0 image fails with a "
                 "ClientError naming both versions; no rank runs", strict_refuses)
    finally:
        d.stop()
        strict.stop()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
