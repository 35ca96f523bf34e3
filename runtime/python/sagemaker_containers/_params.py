"""Reserved hyperparameter and environment variable names."""
from sagemaker_training.params import *  # noqa: F401,F403
