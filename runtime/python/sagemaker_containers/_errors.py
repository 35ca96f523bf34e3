"""The toolkit's errors."""
from sagemaker_training.errors import *  # noqa: F401,F403
from sagemaker_training.errors import _CalledProcessError  # noqa: F401
