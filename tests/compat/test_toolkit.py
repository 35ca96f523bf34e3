#!/usr/bin/python3
"""The training toolkit's modules trainctl gives script mode
(runtime/python/sagemaker_training, sagemaker_containers) against what the
real toolkit produces.

Each case of tests/api/data/sm_env/ holds a job's inputs (the three config
files, the host's CPUs and GPUs, the request's Environment) and the
environment sagemaker-training-toolkit gives the user's process for them
(scripts/gen_sm_env_expect.py; shared spec SAGEMAKER-CONTRACT.md §5.3):
exactly what trainctl's agent sets (tests/api/test_sm_env.c checks that).
Here a job folder is laid out from the case's inputs, that environment is
set, and in a fresh interpreter each time

  - environment.Environment() (and sagemaker_containers.training_env(),
    beta.framework.training_env()) must have every attribute of
    SM_TRAINING_ENV with the same value, and the scalar SM_* variables;
  - Environment().to_env_vars() must equal the SM_* variables, and
    to_cmd_args() SM_USER_ARGS;
  - params, mapping, logging_config, entry_point.run and the
    sagemaker_containers helpers behave as documented.

The two-host case is built here from the contract's 2-host layout
(algo-1, algo-2; train and validation channels) with the generator's
functions, so every fixture and a 2-host job are covered.

TAP on stdout. Run from the top of the tree:
    /usr/bin/python3 tests/compat/test_toolkit.py
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUNTIME = os.path.join(REPO, "runtime", "python")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "scripts"))

import smcompat as sc  # noqa: E402
import gen_sm_env_expect as gen  # noqa: E402

# Run inside the job: prints what the modules make of it, as JSON.
PROBE = r'''
import json, os, sys
from sagemaker_training import environment
import sagemaker_containers
from sagemaker_containers.beta import framework
env = environment.Environment()
names = env.properties()
out = {"props": {n: getattr(env, n) for n in names},
       "dict": dict(env),
       "env_vars": env.to_env_vars(),
       "cmd_args": env.to_cmd_args(),
       "tc": dict(sagemaker_containers.training_env()),
       "fw": dict(framework.training_env()),
       "fw_env": dict(framework.env.TrainingEnv()),
       "set": {k: os.environ.get(k) for k in
               ("SAGEMAKER_JOB_NAME", "CURRENT_HOST", "SAGEMAKER_REGION")}}
json.dump(out, sys.stdout, default=str)
'''


def two_hosts():
    """A 2-host job as algo-2 sees it (the contract's resourceconfig)."""
    hosts = ["algo-1", "algo-2"]
    rc = {"current_host": "algo-2", "current_instance_type": "ml.c5.xlarge",
          "current_group_name": "homogeneousCluster", "hosts": hosts,
          "instance_groups": [{"instance_group_name": "homogeneousCluster",
                               "instance_type": "ml.c5.xlarge",
                               "hosts": hosts}],
          "network_interface_name": "eth0", "topology": None}
    ch = {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated",
          "RecordWrapperType": "None"}
    hp = {"epochs": "3", "learning-rate": "0.01", "b": "true",
          "sagemaker_program": '"train.py"',
          "sagemaker_submit_directory": '"s3://b/j/source/sourcedir.tar.gz"',
          "sagemaker_container_log_level": "20",
          "sagemaker_job_name": '"tk-2"', "sagemaker_region": '"us-east-1"',
          "sagemaker_torch_distributed_enabled": "true"}
    inp = {"base_dir": "/var/lib/trainagent/jobs/tk-2/1/algo-2",
           "job_name": "tk-2",
           "job_arn": "arn:aws:sagemaker:us-east-1:000000000000:training-job/tk-2",
           "hyperparameters_json": json.dumps(hp),
           "input_data_config_json": json.dumps({"train": ch,
                                                 "validation": ch}),
           "resource_config_json": json.dumps(rc),
           "num_cpus": 2, "num_gpus": 0, "num_neurons": 0,
           "region": "us-east-1", "environment": {}}
    return {"description": "two hosts, algo-2's view", "input": inp,
            "expect": gen.expected(inp)}


def cases():
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, "tests", "api", "data",
                                              "sm_env", "*.json"))):
        with open(path) as f:
            c = json.load(f)
        if "input" in c and "env" in c.get("expect", {}):
            out.append((os.path.basename(path)[:-5], c))
    out.append(("two_hosts", two_hosts()))
    return out


def relocate(obj, old, new):
    """obj with every string's old folder prefix replaced by new."""
    if old.endswith("/"):
        new += "/"
    return json.loads(json.dumps(obj).replace(old, new))


def lay_out(tmp, inp):
    """The job folder of inp under tmp; returns its base."""
    base = os.path.join(tmp, "job")
    cfg = os.path.join(base, "input", "config")
    os.makedirs(cfg)
    for name, key in (("hyperparameters.json", "hyperparameters_json"),
                      ("inputdataconfig.json", "input_data_config_json"),
                      ("resourceconfig.json", "resource_config_json")):
        with open(os.path.join(cfg, name), "w") as f:
            f.write(inp.get(key) or "{}")
    return base


def probe(base, environ, extra=None):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": RUNTIME, "HOME": base}
    env.update(environ)
    env.update(extra or {})
    r = subprocess.run([sys.executable, "-c", PROBE], env=env,
                       capture_output=True, text=True, timeout=60)
    sc.expect(r.returncode == 0, "probe failed: %s" % r.stderr[-2000:])
    return json.loads(r.stdout)


def same(a, b):
    """Equal as JSON (NaN equals NaN, as in the toolkit's SM_* text)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def check_case(c):
    tmp = tempfile.mkdtemp(prefix="tk-conf-")
    try:
        base = lay_out(tmp, c["input"])
        old = c["input"].get("base_dir") or "/opt/ml"
        want = c["expect"]["env"]
        raw = probe(base, relocate(want, old, base))
        # Back to the case's folder: what the toolkit would say there.
        text = json.dumps(raw).replace(base + "/", old.rstrip("/") + "/")
        got = json.loads(text.replace(base, old.rstrip("/") or "/"))
        training_env = json.loads(want["SM_TRAINING_ENV"])
        props = got["props"]
        sc.expect(sorted(props) == sorted(training_env),
                  "attributes differ: %s" % sorted(set(props) ^
                                                   set(training_env)))
        for k, v in training_env.items():
            sc.expect(same(props[k], v),
                      "%s: %r, toolkit %r" % (k, props[k], v))
        for view in ("dict", "tc", "fw", "fw_env"):
            sc.expect(same(got[view], training_env),
                      "%s differs from SM_TRAINING_ENV" % view)
        # The toolkit's SM_* (not those the request's Environment set).
        given = c["input"].get("environment") or {}
        ev = got["env_vars"]
        sm = {k: v for k, v in want.items() if k.startswith("SM_") and
              (k not in given or k in ev)}
        for k in sorted(set(sm) | set(ev)):
            sc.expect(sm.get(k) == ev.get(k),
                      "to_env_vars %s: %r, toolkit %r" % (k, ev.get(k),
                                                          sm.get(k)))
        sc.expect(same(got["cmd_args"], json.loads(want["SM_USER_ARGS"])),
                  "to_cmd_args %r" % got["cmd_args"])
        for k in ("SAGEMAKER_JOB_NAME", "CURRENT_HOST", "SAGEMAKER_REGION"):
            sc.expect(got["set"][k] == want.get(k),
                      "%s %r, toolkit %r" % (k, got["set"][k], want.get(k)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_base_dir():
    """SAGEMAKER_BASE_DIR alone (no SM_*): the folders and files from it."""
    c = two_hosts()
    tmp = tempfile.mkdtemp(prefix="tk-base-")
    try:
        base = lay_out(tmp, c["input"])
        got = probe(base, {"SAGEMAKER_BASE_DIR": base,
                           "TRAINING_JOB_NAME": "tk-2"})["props"]
        sc.expect(got["model_dir"] == base + "/model", got["model_dir"])
        sc.expect(got["channel_input_dirs"] == {
            "train": base + "/input/data/train",
            "validation": base + "/input/data/validation"},
            got["channel_input_dirs"])
        sc.expect(got["hosts"] == ["algo-1", "algo-2"], got["hosts"])
        sc.expect(got["master_hostname"] == "algo-1" and
                  got["is_master"] is False, "leader")
        sc.expect(got["hyperparameters"] == {"epochs": 3,
                                             "learning-rate": 0.01,
                                             "b": True},
                  got["hyperparameters"])
        sc.expect(got["user_entry_point"] == "train.py" and
                  got["module_name"] == "train", "entry point")
        sc.expect(got["job_name"] == "tk-2", got["job_name"])
        sc.expect(got["num_cpus"] == os.cpu_count(), got["num_cpus"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


HELPERS = r'''
import io, logging, os, sys
from sagemaker_training import params, mapping, logging_config, entry_point
from sagemaker_training import errors
from sagemaker_containers.beta.framework import modules, env as fenv
from sagemaker_containers.beta.framework import mapping as fmapping
assert params.USER_PROGRAM_PARAM == "sagemaker_program"
assert params.SUBMIT_DIR_PARAM == "sagemaker_submit_directory"
assert params.LOG_LEVEL_PARAM == "sagemaker_container_log_level"
assert params.FRAMEWORK_TRAINING_MODULE_ENV == "SAGEMAKER_TRAINING_MODULE"
assert "_tuning_objective_metric" in params.SAGEMAKER_HYPERPARAMETERS
assert mapping.to_cmd_args({"a": 1, "bb": {"x": 1, "y": 2}, "c": None,
                            "d": True, "e": [1, 2]}) == [
    "-a", "1", "--bb", "x=1,y=2", "-c", "", "-d", "True", "-e", "[1, 2]"]
assert fmapping.to_env_vars({"x": {"b": 1, "a": [1]}, "n": None}) == {
    "SM_X": '{"a":[1],"b":1}', "SM_N": ""}
s = mapping.split_by_criteria({"sagemaker_x": 1, "y": 2}, prefix="sagemaker_")
assert s.included == {"sagemaker_x": 1} and s.excluded == {"y": 2}
logger = logging_config.get_logger()
buf = io.StringIO()
h = logging.StreamHandler(buf)
logger.addHandler(h)
logger.setLevel(logging.INFO)
logging_config.log_script_invocation(["python", "t.py"], {"SM_HOSTS": "[]"})
assert "python t.py" in buf.getvalue() and "SM_HOSTS=[]" in buf.getvalue()
code = fenv.code_dir
os.makedirs(code, exist_ok=True)
open(os.path.join(code, "child.py"), "w").write(
    "import os, sys\nprint('child', sys.argv[1:], os.environ.get('XX'))\n"
    "if __name__ == '__main__':\n    sys.exit(int(os.environ.get('RC', '0')))\n")
assert entry_point.run(code, "child.py", ["--a", "1"], {"XX": "yy"}) == 0
try:
    entry_point.run(code, "child.py", [], {"XX": "z", "RC": "3"},
                    capture_error=True)
    raise SystemExit("no error")
except errors.ExecuteUserScriptError as e:
    assert e.return_code == 3 and "ExitCode 3" in str(e), str(e)
p = entry_point.run(code, "child.py", [], {"XX": "w"}, wait=False)
assert p.wait() == 0
m = modules.import_module(code, "child")
assert m.__file__ == os.path.join(code, "child.py")
print("helpers ok")
'''


def check_helpers():
    tmp = tempfile.mkdtemp(prefix="tk-help-")
    try:
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": RUNTIME, "HOME": tmp,
               "SAGEMAKER_BASE_DIR": tmp}
        r = subprocess.run([sys.executable, "-c", HELPERS], env=env,
                           capture_output=True, text=True, timeout=60,
                           cwd=tmp)
        sc.expect(r.returncode == 0 and "helpers ok" in r.stdout,
                  "helpers: %s %s" % (r.stdout[-1000:], r.stderr[-2000:]))
        sc.expect("child ['--a', '1'] yy" in r.stdout, r.stdout[-1000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    tap = sc.Tap()
    for name, c in cases():
        tap.case("conformance %s: %s" % (name, c.get("description", "")),
                 check_case, c)
    tap.case("SAGEMAKER_BASE_DIR alone: folders, files, leader", check_base_dir)
    tap.case("params, mapping, logging_config, entry_point, modules",
             check_helpers)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
