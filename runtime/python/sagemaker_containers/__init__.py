"""sagemaker_containers: the older name of SageMaker's training toolkit,
which scripts written for the first framework containers import.

In trainctl's script mode it is a face over sagemaker_training: the same
environment under the names those scripts use (``training_env()``,
``beta.framework.env``, ``modules``, ``entry_point``, ...).
"""


def training_env():
    """The job's TrainingEnv, read from its configuration files."""
    from sagemaker_containers import _env

    return _env.TrainingEnv(
        resource_config=_env.read_resource_config(),
        input_data_config=_env.read_input_data_config(),
        hyperparameters=_env.read_hyperparameters())
