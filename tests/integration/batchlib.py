"""Shared by the suites that drive AWS Batch's service-job API: they need
a botocore with service jobs (1.43; Debian's 1.29 predates them), so they
run themselves again with an interpreter that has it (the pyenv python3)."""
import os
import subprocess
import sys


def has_batch(py):
    code = ("import botocore.session,sys;m=botocore.session.get_session()"
            ".get_service_model('batch');sys.exit(0 if 'SubmitServiceJob' "
            "in m.operation_names else 1)")
    try:
        return subprocess.run([py, "-c", code], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def reexec():
    """Runs this script with an interpreter whose botocore has service jobs."""
    if os.environ.get("TRAINCTL_BATCH_PY") == sys.executable:
        return
    if has_batch(sys.executable):
        return
    cands = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cands.append(os.path.join(d, "python3"))
    cands.append(os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")),
                              "shims", "python3"))
    for c in cands:
        if not os.access(c, os.X_OK) or os.path.realpath(c).startswith("/usr/bin/python3"):
            continue
        if has_batch(c):
            os.environ["TRAINCTL_BATCH_PY"] = c
            os.execv(c, [c] + sys.argv)
    print("1..0 # SKIP newer botocore (with AWS Batch service jobs) not installed")
    sys.exit(0)


def client(endpoint, key, region, validate=False):
    """boto3's batch client for key (id, secret), retries off."""
    import boto3
    import botocore.config
    cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                 parameter_validation=validate, connect_timeout=5, read_timeout=60)
    s = boto3.session.Session(aws_access_key_id=key[0], aws_secret_access_key=key[1],
                              region_name=region)
    return s.client("batch", endpoint_url=endpoint, config=cfg)
