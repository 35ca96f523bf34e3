"""SageMaker's built-in algorithms as trainctl serves them (docs/algorithms.md).

Each module runs as ``python3 -m trainctl_algorithms.<name> train`` once per
host of a job that names the algorithm's image, reading the job's files as
SageMaker lays them out (/opt/ml/input/config, /opt/ml/input/data/<channel>,
/opt/ml/model, /opt/ml/output) through the SM_* variables trainctl sets.
"""
