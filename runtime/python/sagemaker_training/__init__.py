"""SageMaker's training toolkit, as trainctl's script mode provides it.

Scripts written for SageMaker's framework containers import this package
(``from sagemaker_training import environment``) to read what the job gives
them: hosts, channels, hyperparameters, folders. trainctl writes the same
SM_* environment and configuration files a container gets; these modules
read them back with the toolkit's documented names and types.

Written for trainctl from the toolkit's public documentation (docs/script-mode.md).
"""

__version__ = "4.8.0+trainctl"
