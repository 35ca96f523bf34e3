"""Running a user entry point: a Python script, a shell script or a
program, with the hyperparameters as arguments."""
import os
import subprocess
import sys

from sagemaker_training import environment, errors, files, logging_config
from sagemaker_training import runner


def _command(user_entry_point, args):
    if user_entry_point.endswith(".py"):
        return [sys.executable, user_entry_point] + list(args)
    if user_entry_point.endswith(".sh"):
        return ["/bin/sh", "-c", "./%s %s" % (user_entry_point,
                                              " ".join(args))]
    return ["./%s" % user_entry_point] + list(args)


def install(name, path=environment.code_dir, capture_error=False):
    """Makes name in path runnable: a program gets its execute bit. (A
    requirements.txt is installed by trainctl before the job's first rank
    starts.)"""
    target = os.path.join(path, name)
    if os.path.isfile(target) and not name.endswith((".py", ".sh")):
        os.chmod(target, 0o755)


def run(uri, user_entry_point, args, env_vars=None, wait=True,
        capture_error=False, runner_type=runner.ProcessRunnerType,
        extra_opts=None):
    """Runs user_entry_point from the code at uri with args and env_vars
    (added to this process's environment).

    A ``.py`` runs with this interpreter, a ``.sh`` with /bin/sh, anything
    else as a program. wait=False returns the running subprocess.Popen;
    otherwise the exit code, and a non-zero one raises
    errors.ExecuteUserScriptError (with stderr's text when capture_error).
    The runner type is accepted for compatibility: trainctl starts the
    job's ranks itself, so the program runs as one process here.
    """
    env_vars = dict(env_vars or {})
    path = environment.code_dir
    if uri and os.path.abspath(str(uri)) != os.path.abspath(path):
        files.download_and_extract(str(uri), path)
    install(user_entry_point, path, capture_error)
    env = dict(os.environ)
    env.update({k: str(v) for k, v in env_vars.items()})
    cmd = _command(user_entry_point, args)
    logging_config.log_script_invocation(cmd, env)
    proc = subprocess.Popen(cmd, cwd=path, env=env,
                            stderr=subprocess.PIPE if capture_error else None)
    if not wait:
        return proc
    _, err = proc.communicate()
    if proc.returncode:
        text = err.decode("utf-8", "replace") if err else None
        if text:
            sys.stderr.write(text)
        raise errors.ExecuteUserScriptError(cmd=cmd,
                                            return_code=proc.returncode,
                                            output=text)
    return proc.returncode
