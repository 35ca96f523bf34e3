"""Helpers for framework code: ``env``, ``modules``, ``entry_point``,
``mapping``, ``params``, ... and training_env().

The serving parts of the original (server, worker, transformer) belong to
inference containers, which trainctl does not run.
"""
import sagemaker_containers  # noqa: F401
from sagemaker_containers import _content_types as content_types  # noqa
from sagemaker_containers import _encoders as encoders  # noqa: F401
from sagemaker_containers import _env as env
from sagemaker_containers import _errors as errors  # noqa: F401
from sagemaker_containers import _files as files  # noqa: F401
from sagemaker_containers import _functions as functions  # noqa: F401
from sagemaker_containers import _logging as logging  # noqa: F401
from sagemaker_containers import _mapping as mapping  # noqa: F401
from sagemaker_containers import _modules as modules  # noqa: F401
from sagemaker_containers import _params as params  # noqa: F401
from sagemaker_containers import _runner as runner  # noqa: F401
from sagemaker_containers import entry_point  # noqa: F401


def training_env(resource_config=None, input_data_config=None,
                 hyperparameters=None):
    """The job's TrainingEnv; arguments default to its files."""
    return env.TrainingEnv(
        resource_config=resource_config or env.read_resource_config(),
        input_data_config=input_data_config or env.read_input_data_config(),
        hyperparameters=hyperparameters or env.read_hyperparameters())
