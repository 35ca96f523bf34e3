"""Running a user entry point."""
from sagemaker_training.entry_point import install, run  # noqa: F401
