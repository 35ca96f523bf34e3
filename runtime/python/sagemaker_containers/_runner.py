"""Launcher kinds."""
from sagemaker_training.runner import *  # noqa: F401,F403
