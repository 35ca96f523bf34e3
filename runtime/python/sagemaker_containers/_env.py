"""The job's environment under sagemaker_containers' names."""
from sagemaker_training.environment import (  # noqa: F401
    BASE_PATH_ENV, HYPERPARAMETERS_FILE, INPUT_DATA_CONFIG_FILE,
    RESOURCE_CONFIG_FILE, SAGEMAKER_BASE_PATH, Environment, base_dir,
    channel_path, code_dir, hyperparameters_file_dir, input_config_dir,
    input_data_config_file_dir, input_dir, model_dir, num_cpus, num_gpus,
    output_data_dir, output_dir, output_intermediate_dir, read_hyperparameters,
    read_input_data_config, read_resource_config, resource_config_file_dir,
    write_env_vars)


class TrainingEnv(Environment):
    """The training job (sagemaker_training's Environment)."""
