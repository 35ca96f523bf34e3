"""Files the toolkit reads and writes in the job's folder."""
import contextlib
import json
import os
import shutil
import tarfile
import tempfile

from sagemaker_training import environment


def write_success_file():
    """Writes the empty output/success file."""
    write_file(os.path.join(environment.output_dir, "success"), "")


def write_failure_file(failure_msg):
    """Writes output/failure (its first 1024 characters become the job's
    FailureReason) unless it exists already."""
    path = os.path.join(environment.output_dir, "failure")
    if not os.path.exists(path):
        write_file(path, failure_msg)


@contextlib.contextmanager
def tmpdir(suffix="", prefix="tmp", directory=None):
    """A temporary folder, removed on leaving the block."""
    path = tempfile.mkdtemp(suffix=suffix, prefix=prefix, dir=directory)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_file(path, data, mode="w"):
    """Writes data to path."""
    with open(path, mode) as f:
        f.write(data)


def read_file(path, mode="r"):
    """The contents of path."""
    with open(path, mode) as f:
        return f.read()


def read_json(path):
    """The JSON document at path."""
    with open(path) as f:
        return json.load(f)


def download_and_extract(uri, path):
    """Makes path hold the code at uri: a folder (copied), a .tar.gz
    (extracted), or the s3:// URI of the job's own code, which trainctl
    has already put into the code folder."""
    if uri.startswith("s3://"):
        if os.path.isdir(environment.code_dir) and \
                os.listdir(environment.code_dir):
            if os.path.abspath(path) != os.path.abspath(
                    environment.code_dir):
                shutil.copytree(environment.code_dir, path,
                                dirs_exist_ok=True)
            return
        raise ValueError("%s: trainctl downloads a job's code before it "
                         "starts; this one is not in %s"
                         % (uri, environment.code_dir))
    os.makedirs(path, exist_ok=True)
    if os.path.isdir(uri):
        if os.path.abspath(uri) != os.path.abspath(path):
            shutil.copytree(uri, path, dirs_exist_ok=True)
        return
    with tarfile.open(uri, mode="r:gz") as t:
        t.extractall(path=path)
