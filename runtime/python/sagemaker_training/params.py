"""Names of the hyperparameters and environment variables SageMaker reserves.

The SDK adds hyperparameters prefixed ``sagemaker_`` to every framework job;
they steer the toolkit and never reach the user's script as arguments.
"""

SAGEMAKER_PREFIX = "sagemaker_"
CURRENT_HOST_ENV = "CURRENT_HOST"
USER_PROGRAM_PARAM = "sagemaker_program"
USER_PROGRAM_ENV = "SAGEMAKER_PROGRAM"
S3_OUTPUT_LOCATION_PARAM = "sagemaker_s3_output"
S3_OUTPUT_LOCATION_ENV = "SAGEMAKER_S3_OUTPUT"
S3_ENDPOINT_URL = "S3_ENDPOINT_URL"
TRAINING_JOB_ENV = "TRAINING_JOB_NAME"
SUBMIT_DIR_PARAM = "sagemaker_submit_directory"
SUBMIT_DIR_ENV = "SAGEMAKER_SUBMIT_DIRECTORY"
ENABLE_METRICS_PARAM = "sagemaker_enable_cloudwatch_metrics"
ENABLE_METRICS_ENV = "SAGEMAKER_ENABLE_CLOUDWATCH_METRICS"
LOG_LEVEL_PARAM = "sagemaker_container_log_level"
LOG_LEVEL_ENV = "SAGEMAKER_CONTAINER_LOG_LEVEL"
JOB_NAME_PARAM = "sagemaker_job_name"
JOB_NAME_ENV = "SAGEMAKER_JOB_NAME"
TUNING_METRIC_PARAM = "_tuning_objective_metric"
DEFAULT_MODULE_NAME_PARAM = "default_user_module_name"
MPI_ENABLED = "sagemaker_mpi_enabled"
PARAMETER_SERVER_ENABLED = "sagemaker_parameter_server_enabled"
MULTI_WORKER_MIRRORED_STRATEGY_ENABLED = \
    "sagemaker_multi_worker_mirrored_strategy_enabled"
PYTORCH_XLA_MULTI_WORKER_ENABLED = "sagemaker_pytorch_xla_multi_worker_enabled"
REGION_NAME_PARAM = "sagemaker_region"
REGION_NAME_ENV = "SAGEMAKER_REGION"
DEFAULT_INVOCATIONS_ACCEPT_ENV = "SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT"
SAGEMAKER_BIND_TO_PORT_ENV = "SAGEMAKER_BIND_TO_PORT"
SAGEMAKER_SAFE_PORT_RANGE_ENV = "SAGEMAKER_SAFE_PORT_RANGE"
FRAMEWORK_TRAINING_MODULE_ENV = "SAGEMAKER_TRAINING_MODULE"

# The hyperparameters that are the toolkit's and never a framework's.
SAGEMAKER_HYPERPARAMETERS = (
    USER_PROGRAM_PARAM,
    SUBMIT_DIR_PARAM,
    ENABLE_METRICS_PARAM,
    REGION_NAME_PARAM,
    LOG_LEVEL_PARAM,
    JOB_NAME_PARAM,
    DEFAULT_MODULE_NAME_PARAM,
    TUNING_METRIC_PARAM,
    S3_OUTPUT_LOCATION_PARAM,
)

MPI_PROCESSES_PER_HOST = "sagemaker_mpi_num_of_processes_per_host"
MPI_NUM_PROCESSES = "sagemaker_mpi_num_processes"
MPI_CUSTOM_OPTIONS = "sagemaker_mpi_custom_mpi_options"
SAGEMAKER_NETWORK_INTERFACE_NAME = "sagemaker_network_interface_name"
SMDATAPARALLEL_CUSTOM_MPI_OPTIONS = \
    "sagemaker_distributed_dataparallel_custom_mpi_options"
SM_HP_MP_PARAMETERS = "SM_HP_MP_PARAMETERS"
DISTRIBUTION_INSTANCE_GROUPS = "sagemaker_distribution_instance_groups"
