"""What trainctld does with each member of CreateTrainingJobRequest.

Data for scripts/gen_model.py, which turns it into api/members_gen.c (the
refusals that api/members.c enforces) and into the table between the
markers in docs/api-compatibility.md, and which fails when a member of the
service model has no class here.

Every member path (structure members joined by '.', lists crossed without
an index) has one class:

  supported  it has an effect
  refused    CreateTrainingJob answers ValidationException naming it
  no-op      accepted and echoed, without an effect, for the reason given

A structure that is refused or a no-op covers its own members unless they
are listed too. VALUES classes single values of a member apart from the
member (a refused enum value, a boolean that is only refused when true).
"""

SUPPORTED = "supported"
REFUSED = "refused"
NOOP = "no-op"

# (path, class, note). Model order; the docs table keeps this order.
MEMBERS = [
    ("TrainingJobName", SUPPORTED, "the job's name; unique, case-insensitive"),
    ("HyperParameters", SUPPORTED,
     "`input/config/hyperparameters.json`, `SM_HPS`, the program's arguments"),
    ("AlgorithmSpecification", SUPPORTED, ""),
    ("AlgorithmSpecification.TrainingImage", SUPPORTED,
     "the image (or local runtime) that runs (docs/containers.md); "
     "SageMaker's XGBoost 1.7-1 image runs the built-in algorithm, other "
     "built-in algorithms are refused by name (docs/algorithms.md)"),
    ("AlgorithmSpecification.AlgorithmName", REFUSED,
     "there are no algorithm resources or marketplace algorithms here; "
     "give a TrainingImage (SageMaker's built-in algorithms are named by "
     "their image: docs/algorithms.md)"),
    ("AlgorithmSpecification.TrainingInputMode", SUPPORTED,
     "File; FastFile is staged as File (the channel's objects are "
     "downloaded before the program starts); Pipe streams named pipes "
     "(docs/pipe-mode.md)"),
    ("AlgorithmSpecification.MetricDefinitions", SUPPORTED,
     "`FinalMetricDataList`, the status page's plots; a built-in "
     "algorithm's job without any gets the algorithm's own "
     "(`validation:rmse`, ...: docs/algorithms.md)"),
    ("AlgorithmSpecification.MetricDefinitions.Name", SUPPORTED, ""),
    ("AlgorithmSpecification.MetricDefinitions.Regex", SUPPORTED,
     "matched against the first 1 KiB of a line under PCRE2's limits (20,000 steps from each start "
     "position); one that hits them or takes over 2 ms on 3 lines, or averages over 100 µs a line "
     "after 250 ms of CPU, is disabled for the rest of the job, with a line in the job's log saying so"),
    ("AlgorithmSpecification.EnableSageMakerMetricsTimeSeries", NOOP,
     "the time series of every MetricDefinition is always kept and "
     "plotted (docs/web.md); there is no CloudWatch to publish it to"),
    ("AlgorithmSpecification.ContainerEntrypoint", SUPPORTED, ""),
    ("AlgorithmSpecification.ContainerArguments", SUPPORTED, ""),
    ("AlgorithmSpecification.TrainingImageConfig", SUPPORTED, ""),
    ("AlgorithmSpecification.TrainingImageConfig.TrainingRepositoryAccessMode",
     NOOP,
     "hosts pull images themselves, with the controller's registry "
     "settings (docs/containers.md); there is no separate platform network"),
    ("AlgorithmSpecification.TrainingImageConfig.TrainingRepositoryAuthConfig",
     REFUSED,
     "registry credentials come from the controller's registry settings "
     "(docs/containers.md), not from a Lambda function"),
    ("RoleArn", NOOP,
     "format-checked and echoed; there is no IAM: programs get the "
     "credentials their host gives them"),
    ("InputDataConfig", SUPPORTED, "one folder per channel under "
     "`/opt/ml/input/data`, `inputdataconfig.json`, `SM_CHANNELS`"),
    ("InputDataConfig.ChannelName", SUPPORTED, ""),
    ("InputDataConfig.DataSource", SUPPORTED, ""),
    ("InputDataConfig.DataSource.S3DataSource", SUPPORTED, ""),
    ("InputDataConfig.DataSource.S3DataSource.S3DataType", SUPPORTED,
     "S3Prefix and ManifestFile"),
    ("InputDataConfig.DataSource.S3DataSource.S3Uri", SUPPORTED,
     "`s3://` (the embedded store or `--s3-endpoint`), `https://`, "
     "`file://`"),
    ("InputDataConfig.DataSource.S3DataSource.S3DataDistributionType",
     SUPPORTED, "FullyReplicated; ShardedByS3Key splits the objects "
     "between the hosts"),
    ("InputDataConfig.DataSource.S3DataSource.AttributeNames", REFUSED,
     "only for AugmentedManifestFile, which is not supported"),
    ("InputDataConfig.DataSource.S3DataSource.InstanceGroupNames", SUPPORTED,
     "the channel is staged, and listed in `inputdataconfig.json` and "
     "`SM_CHANNELS`, only on hosts of these instance groups"),
    ("InputDataConfig.DataSource.S3DataSource.ModelAccessConfig", NOOP,
     "there are no gated models here: the channel's objects are staged "
     "as they are"),
    ("InputDataConfig.DataSource.S3DataSource.HubAccessConfig", REFUSED,
     "there is no SageMaker Hub here"),
    ("InputDataConfig.DataSource.FileSystemDataSource", REFUSED,
     "EFS and FSx for Lustre are not mounted; use an S3 or file:// URI"),
    ("InputDataConfig.DataSource.DatasetSource", REFUSED,
     "there are no SageMaker Hub datasets here"),
    ("InputDataConfig.ContentType", SUPPORTED, "`inputdataconfig.json`"),
    ("InputDataConfig.CompressionType", SUPPORTED,
     "None; objects are staged as they are stored"),
    ("InputDataConfig.RecordWrapperType", SUPPORTED, "None"),
    ("InputDataConfig.InputMode", SUPPORTED,
     "the channel's own TrainingInputMode, as for the job"),
    ("InputDataConfig.ShuffleConfig", SUPPORTED,
     "shuffles the objects by Seed before ShardedByS3Key splits them; in "
     "Pipe mode anew every epoch"),
    ("InputDataConfig.ShuffleConfig.Seed", SUPPORTED, ""),
    ("OutputDataConfig", SUPPORTED, ""),
    ("OutputDataConfig.KmsKeyId", NOOP,
     "artifacts are written to the embedded store (the controller's disk) "
     "or to `--s3-endpoint` as that endpoint stores them; there is no KMS"),
    ("OutputDataConfig.S3OutputPath", SUPPORTED,
     "`<S3OutputPath>/<job>/output/model.tar.gz` and `output.tar.gz`"),
    ("OutputDataConfig.CompressionType", SUPPORTED,
     "GZIP (the default): `model.tar.gz`; NONE: the files of "
     "`/opt/ml/model` under `<S3OutputPath>/<job>/output/model/`, which "
     "`ModelArtifacts.S3ModelArtifacts` names"),
    ("ResourceConfig", SUPPORTED, ""),
    ("ResourceConfig.InstanceType", SUPPORTED,
     "picks hosts of that type (`local` for the local cluster)"),
    ("ResourceConfig.InstanceCount", SUPPORTED, ""),
    ("ResourceConfig.VolumeSizeInGB", NOOP,
     "jobs use their host's disk; no volume is made or limited to that "
     "size"),
    ("ResourceConfig.VolumeKmsKeyId", NOOP,
     "jobs use their host's disk, encrypted or not as the host is; there "
     "is no KMS"),
    ("ResourceConfig.KeepAlivePeriodInSeconds", SUPPORTED, "warm pools"),
    ("ResourceConfig.InstanceGroups", SUPPORTED,
     "heterogeneous clusters (`resourceconfig.json` instance_groups)"),
    ("ResourceConfig.InstanceGroups.InstanceType", SUPPORTED, ""),
    ("ResourceConfig.InstanceGroups.InstanceCount", SUPPORTED, ""),
    ("ResourceConfig.InstanceGroups.InstanceGroupName", SUPPORTED, ""),
    ("ResourceConfig.TrainingPlanArn", REFUSED,
     "there are no training plans (reserved capacity) here"),
    ("ResourceConfig.InstancePlacementConfig", REFUSED,
     "hosts are placed by the controller; there are no UltraServers"),
    ("VpcConfig", NOOP,
     "hosts are your own machines on your own network"),
    ("StoppingCondition", SUPPORTED, ""),
    ("StoppingCondition.MaxRuntimeInSeconds", SUPPORTED, ""),
    ("StoppingCondition.MaxWaitTimeInSeconds", SUPPORTED,
     "managed spot training"),
    ("StoppingCondition.MaxPendingTimeInSeconds", REFUSED,
     "a job waits for hosts without a deadline"),
    ("Tags", SUPPORTED, ""),
    ("Tags.Key", SUPPORTED, ""),
    ("Tags.Value", SUPPORTED, ""),
    ("EnableNetworkIsolation", SUPPORTED,
     "true: ranks reach only the job's hosts, never the controller "
     "(docs/security.md)"),
    ("EnableInterContainerTrafficEncryption", SUPPORTED,
     "false: traffic between hosts is not encrypted by the controller"),
    ("EnableManagedSpotTraining", SUPPORTED, "docs/checkpoints.md"),
    ("CheckpointConfig", SUPPORTED, "docs/checkpoints.md"),
    ("CheckpointConfig.S3Uri", SUPPORTED, ""),
    ("CheckpointConfig.LocalPath", SUPPORTED, ""),
    ("DebugHookConfig", SUPPORTED,
     "written to `input/config/debughookconfig.json` (defaults filled in) "
     "for the smdebug hook in the program; the hook's folder is copied to "
     "`<S3OutputPath>/<job>/debug-output/` while the job runs and at its "
     "end"),
    ("DebugHookConfig.LocalPath", SUPPORTED,
     "default `/opt/ml/output/tensors`; under `/opt/ml` only"),
    ("DebugHookConfig.S3OutputPath", SUPPORTED, ""),
    ("DebugHookConfig.HookParameters", SUPPORTED, ""),
    ("DebugHookConfig.CollectionConfigurations", SUPPORTED, ""),
    ("DebugHookConfig.CollectionConfigurations.CollectionName", SUPPORTED, ""),
    ("DebugHookConfig.CollectionConfigurations.CollectionParameters", SUPPORTED, ""),
    ("DebugRuleConfigurations", SUPPORTED,
     "Debugger rules the controller evaluates itself from what it collects "
     "(docs/distributed.md, \"Rules\"); a rule_to_invoke it cannot "
     "evaluate, or a parameter it does not honour, is refused by name"),
    ("DebugRuleConfigurations.RuleConfigurationName", SUPPORTED,
     "names the rule's status in `DebugRuleEvaluationStatuses`"),
    ("DebugRuleConfigurations.LocalPath", NOOP,
     "no rule container runs: the controller evaluates the rule"),
    ("DebugRuleConfigurations.S3OutputPath", NOOP,
     "no rule container runs, so it writes no output; the verdict is the "
     "rule's status"),
    ("DebugRuleConfigurations.RuleEvaluatorImage", NOOP,
     "no rule container runs: the controller evaluates the rule"),
    ("DebugRuleConfigurations.InstanceType", NOOP,
     "no rule container runs: the controller evaluates the rule"),
    ("DebugRuleConfigurations.VolumeSizeInGB", NOOP,
     "no rule container runs: the controller evaluates the rule"),
    ("DebugRuleConfigurations.RuleParameters", SUPPORTED,
     "`rule_to_invoke` names the built-in rule; the rule's parameters "
     "(docs/distributed.md, \"Rules\")"),
    ("TensorBoardOutputConfig", SUPPORTED,
     "LocalPath's files are copied to S3OutputPath while the job runs "
     "(docs/pipe-mode.md)"),
    ("TensorBoardOutputConfig.LocalPath", SUPPORTED, ""),
    ("TensorBoardOutputConfig.S3OutputPath", SUPPORTED, ""),
    ("ExperimentConfig", REFUSED,
     "SageMaker Experiments (CreateExperiment, trial components, "
     "BatchPutMetrics) are not served, so a script's load_run() would "
     "fail inside the job; see the Operations table"),
    ("ProfilerConfig", SUPPORTED,
     "enabled: `input/config/profilerconfig.json` for smdebug's profiler "
     "in the program, `ProfilingStatus` Enabled, and "
     "`/opt/ml/output/profiler` copied to `<S3OutputPath>/<job>/"
     "profiler-output/`; the service's own system monitor does not run "
     "(the hosts' telemetry feeds ProfilerRuleConfigurations)"),
    ("ProfilerConfig.S3OutputPath", SUPPORTED, ""),
    ("ProfilerConfig.ProfilingIntervalInMilliseconds", SUPPORTED, ""),
    ("ProfilerConfig.ProfilingParameters", SUPPORTED, ""),
    ("ProfilerConfig.DisableProfiler", SUPPORTED, ""),
    ("ProfilerRuleConfigurations", SUPPORTED,
     "Profiler rules the controller evaluates itself from what it collects "
     "(docs/distributed.md, \"Rules\"); a rule_to_invoke it cannot "
     "evaluate, or a parameter it does not honour, is refused by name"),
    ("ProfilerRuleConfigurations.RuleConfigurationName", SUPPORTED,
     "names the rule's status in `ProfilerRuleEvaluationStatuses`"),
    ("ProfilerRuleConfigurations.LocalPath", NOOP,
     "no rule container runs: the controller evaluates the rule"),
    ("ProfilerRuleConfigurations.S3OutputPath", NOOP,
     "no rule container runs, so it writes no output; the verdict is the "
     "rule's status"),
    ("ProfilerRuleConfigurations.RuleEvaluatorImage", NOOP,
     "no rule container runs: the controller evaluates the rule"),
    ("ProfilerRuleConfigurations.InstanceType", NOOP,
     "no rule container runs: the controller evaluates the rule"),
    ("ProfilerRuleConfigurations.VolumeSizeInGB", NOOP,
     "no rule container runs: the controller evaluates the rule"),
    ("ProfilerRuleConfigurations.RuleParameters", SUPPORTED,
     "`rule_to_invoke` names the built-in rule; the rule's parameters "
     "(docs/distributed.md, \"Rules\")"),
    ("Environment", SUPPORTED, "every process of the job"),
    ("RetryStrategy", SUPPORTED, ""),
    ("RetryStrategy.MaximumRetryAttempts", SUPPORTED, ""),
    ("RemoteDebugConfig", SUPPORTED, ""),
    ("RemoteDebugConfig.EnableRemoteDebug", SUPPORTED,
     "false: there is no remote access to a job's container"),
    ("InfraCheckConfig", SUPPORTED, ""),
    ("InfraCheckConfig.EnableInfraCheck", SUPPORTED,
     "true: each host checks its free disk and /dev/shm, its clock and "
     "its GPUs before the program starts, and the hosts of a multi-host "
     "job measure the round trip and bandwidth between them over TCP, "
     "each host compared with the job's median; a host that fails is "
     "replaced (docs/distributed.md, \"Infrastructure checks\")"),
    ("SessionChainingConfig", NOOP,
     "no IAM role is assumed, so there are no session tags to chain"),
    ("ServerlessJobConfig", REFUSED,
     "serverless fine-tuning of hosted base models is not available here"),
    ("MlflowConfig", REFUSED, "there is no MLflow integration"),
    ("ModelPackageConfig", REFUSED, "there is no model registry here"),
]

# (path, value, class, note): single values (JSON true/false as Python
# booleans, enum values as strings) classed apart from their member.
VALUES = [
    ("AlgorithmSpecification.TrainingInputMode", "Pipe", SUPPORTED,
     "Pipe mode"),
    ("InputDataConfig.DataSource.S3DataSource.S3DataType",
     "AugmentedManifestFile", REFUSED,
     "augmented manifests are not read; use S3Prefix or ManifestFile"),
    ("InputDataConfig.DataSource.S3DataSource.S3DataType", "Converse",
     REFUSED, "Converse datasets are not read; use S3Prefix or ManifestFile"),
    ("InputDataConfig.CompressionType", "Gzip", SUPPORTED,
     "Pipe mode gunzips each object as it streams; in File mode objects "
     "are staged as stored"),
    ("InputDataConfig.RecordWrapperType", "RecordIO", SUPPORTED,
     "Pipe mode wraps each object in a RecordIO record; in File mode "
     "objects are staged as stored"),
    ("InputDataConfig.InputMode", "Pipe", SUPPORTED, "Pipe mode"),
    ("EnableNetworkIsolation", True, SUPPORTED,
     "a cgroup and a firewall chain per assignment; a container image on "
     "one host only (docs/security.md)"),
    ("EnableInterContainerTrafficEncryption", True, REFUSED,
     "traffic between a job's hosts is not encrypted by the controller"),
    ("RemoteDebugConfig.EnableRemoteDebug", True, REFUSED,
     "there is no remote access to a job's container"),
]

# A refused structure is accepted when it holds this member with this
# value, because then it asks for nothing (ProfilerConfig with
# DisableProfiler true is what the SageMaker Python SDK sends for
# disable_profiler=True).
UNLESS = {
    "ProfilerConfig": ("DisableProfiler", True),
}

# Being implemented now: refused until the implementation lands, whatever
# MEMBERS or VALUES say (a structure here with everything it holds). Delete
# a line here to turn the member (or value) on; MEMBERS / VALUES already
# hold the classes and notes it and its members will have.
PENDING = [
]
