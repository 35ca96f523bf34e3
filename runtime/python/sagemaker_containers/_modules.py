"""The user's module: importing it, running it."""
import importlib
import os
import subprocess
import sys

from sagemaker_training import entry_point, environment, errors, files

DEFAULT_MODULE_NAME = "default_user_module_name"


def has_requirements(path):
    """Whether path holds a requirements.txt."""
    return os.path.exists(os.path.join(path, "requirements.txt"))


def prepare(path, name):
    """Nothing to prepare: trainctl's code folder is ready as given."""


def install(path, capture_error=False):
    """Makes the code in path importable (trainctl has installed its
    requirements.txt already)."""
    if path not in sys.path:
        sys.path.insert(0, path)


def download_and_install(uri, name=DEFAULT_MODULE_NAME, cache=True):
    """Puts the code at uri into the code folder and makes it importable."""
    if uri:
        files.download_and_extract(uri, environment.code_dir)
    install(environment.code_dir)


def import_module(uri, name=DEFAULT_MODULE_NAME, cache=None):
    """The user's module name from the code at uri, imported."""
    download_and_install(uri, name)
    try:
        return importlib.import_module(name)
    except Exception as e:
        raise errors.ImportModuleError(e)


def run(module_name, args=None, env_vars=None, wait=True,
        capture_error=False):
    """Runs ``python -m module_name args`` with env_vars added."""
    env = dict(os.environ)
    env.update({k: str(v) for k, v in (env_vars or {}).items()})
    cmd = [sys.executable, "-m", module_name] + list(args or [])
    proc = subprocess.Popen(cmd, cwd=environment.code_dir, env=env)
    if not wait:
        return proc
    proc.wait()
    if proc.returncode:
        raise errors.ExecuteUserScriptError(cmd=cmd,
                                            return_code=proc.returncode)
    return proc


def run_module(uri, args, env_vars=None, name=DEFAULT_MODULE_NAME,
               cache=None, wait=True, capture_error=False):
    """Runs the user's entry point name (a script or a module) from the
    code at uri."""
    if name.endswith((".py", ".sh")) or os.path.isfile(
            os.path.join(environment.code_dir, name)):
        return entry_point.run(uri, name, args, env_vars, wait=wait,
                               capture_error=capture_error)
    download_and_install(uri, name)
    return run(name, args, env_vars, wait, capture_error)
