"""Files in the job's folder."""
from sagemaker_training.files import *  # noqa: F401,F403
