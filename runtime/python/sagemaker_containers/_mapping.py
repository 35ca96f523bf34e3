"""Dictionaries to environment variables and command lines."""
from sagemaker_training.mapping import (  # noqa: F401
    MappingMixin, SplitResultSpec, split_by_criteria, to_cmd_args,
    to_env_vars)
