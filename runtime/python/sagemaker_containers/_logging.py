"""The toolkit's logger."""
from sagemaker_training.logging_config import (  # noqa: F401
    configure_logger, get_logger, log_script_invocation)
