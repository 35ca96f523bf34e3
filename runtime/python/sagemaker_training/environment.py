"""The training job as the script sees it: hosts, channels, hyperparameters,
folders.

``Environment()`` reads the job's configuration files
(``<base>/input/config/{resourceconfig,inputdataconfig,hyperparameters}.json``)
and the SM_* variables trainctl sets, and offers them under the training
toolkit's documented attribute names. The base folder is
``$SAGEMAKER_BASE_DIR``, else the parent of ``$SM_INPUT_DIR`` (a job whose
folder is not mounted at /opt/ml), else ``/opt/ml``. Unlike the toolkit,
importing this module creates no folders.
"""
import json
import logging
import multiprocessing
import os
import shutil
import subprocess

from sagemaker_training import mapping, params

SAGEMAKER_BASE_PATH = os.path.join("/opt", "ml")
BASE_PATH_ENV = "SAGEMAKER_BASE_DIR"
HYPERPARAMETERS_FILE = "hyperparameters.json"
RESOURCE_CONFIG_FILE = "resourceconfig.json"
INPUT_DATA_CONFIG_FILE = "inputdataconfig.json"

# Framework parameters that turn a distribution on.
_DISTRIBUTION_FLAGS = (
    params.MPI_ENABLED,
    params.PARAMETER_SERVER_ENABLED,
    "sagemaker_distributed_dataparallel_enabled",
    "sagemaker_pytorch_ddp_enabled",
    params.PYTORCH_XLA_MULTI_WORKER_ENABLED,
    params.MULTI_WORKER_MIRRORED_STRATEGY_ENABLED,
    "sagemaker_torch_distributed_enabled",
)


def _base_dir():
    if os.environ.get(BASE_PATH_ENV):
        return os.environ[BASE_PATH_ENV]
    if os.environ.get("SM_INPUT_DIR"):
        return os.path.dirname(os.environ["SM_INPUT_DIR"].rstrip("/"))
    return SAGEMAKER_BASE_PATH


base_dir = _base_dir()
code_dir = os.path.join(base_dir, "code")
model_dir = os.path.join(base_dir, "model")
input_dir = os.path.join(base_dir, "input")
input_config_dir = os.path.join(input_dir, "config")
output_dir = os.path.join(base_dir, "output")
output_data_dir = os.path.join(output_dir, "data")
output_intermediate_dir = os.path.join(output_dir, "intermediate")
hyperparameters_file_dir = os.path.join(input_config_dir, HYPERPARAMETERS_FILE)
input_data_config_file_dir = os.path.join(input_config_dir,
                                          INPUT_DATA_CONFIG_FILE)
resource_config_file_dir = os.path.join(input_config_dir, RESOURCE_CONFIG_FILE)
_input_data_dir = os.path.join(input_dir, "data")


def _read_json(path, missing=None):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        if missing is not None:
            return missing
        raise


def read_hyperparameters():
    """hyperparameters.json, each value decoded as JSON where it is JSON
    ("10" -> 10, '"a"' -> "a", "true" -> True), else kept as text."""
    out = {}
    for key, value in _read_json(hyperparameters_file_dir, {}).items():
        try:
            value = json.loads(value)
        except (TypeError, ValueError):
            pass
        out[key] = value
    return out


def read_resource_config():
    """resourceconfig.json: current_host, hosts, instance groups, ...

    Without the file (a script run by hand), one host named from
    SM_CURRENT_HOST, else algo-1."""
    host = os.environ.get("SM_CURRENT_HOST", "algo-1")
    hosts = json.loads(os.environ.get("SM_HOSTS", "null") or "null") or [host]
    return _read_json(resource_config_file_dir,
                      {"current_host": host, "hosts": hosts})


def read_input_data_config():
    """inputdataconfig.json: one entry per channel ({} without channels)."""
    return _read_json(input_data_config_file_dir, {})


def channel_path(channel):
    """The folder of channel's data."""
    return os.path.join(_input_data_dir, channel)


def _env_int(name):
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def num_gpus():
    """The GPUs this job may use: SM_NUM_GPUS as trainctl counted them for
    the job, else the lines of ``nvidia-smi --list-gpus``, else 0."""
    n = _env_int("SM_NUM_GPUS")
    if n is not None:
        return n
    try:
        out = subprocess.check_output(["nvidia-smi", "--list-gpus"],
                                      stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        return 0
    return sum(1 for line in out.decode().splitlines()
               if line.startswith("GPU "))


def num_cpus():
    """The CPUs: SM_NUM_CPUS as trainctl counted them, else the machine's."""
    n = _env_int("SM_NUM_CPUS")
    return n if n is not None else multiprocessing.cpu_count()


def num_neurons(instance_type=None):
    """Neuron cores: SM_NUM_NEURONS, else 0 (trainctl hosts have none)."""
    n = _env_int("SM_NUM_NEURONS")
    return n if n is not None else 0


def validate_smddprun():
    """Whether smddprun (SageMaker's data-parallel launcher) is installed."""
    return shutil.which("smddprun") is not None


def validate_smddpmprun():
    """Whether smddpmprun (SageMaker's model-parallel launcher) is
    installed."""
    return shutil.which("smddpmprun") is not None


def write_env_vars(env_vars=None):
    """Puts env_vars into this process's environment."""
    os.environ.update(env_vars or {})


class Environment(mapping.MappingMixin):
    """The training job, read from its configuration files and environment.

    Every argument defaults to the file the job was given. Attributes use
    the toolkit's names (``env.hosts``, ``env.channel_input_dirs``,
    ``env.hyperparameters``, ``env.model_dir``, ...) and ``dict(env)``
    holds them all, as SM_TRAINING_ENV does.
    """

    def __init__(self, resource_config=None, input_data_config=None,
                 hyperparameters=None):
        rc = resource_config or read_resource_config()
        idc = input_data_config or read_input_data_config()
        hps = hyperparameters or read_hyperparameters()
        program = os.environ.get(params.USER_PROGRAM_ENV)

        split = mapping.split_by_criteria(
            hps, keys=params.SAGEMAKER_HYPERPARAMETERS,
            prefix=params.SAGEMAKER_PREFIX)
        sm = split.included
        self._hyperparameters = split.excluded
        self._additional_framework_parameters = {
            k: v for k, v in sm.items()
            if k not in params.SAGEMAKER_HYPERPARAMETERS}

        self._resource_config = rc
        self._input_data_config = idc
        self._hosts = rc["hosts"]
        self._current_host = rc["current_host"]
        self._current_instance_type = rc.get("current_instance_type", "local")
        self._current_instance_group = rc.get("current_group_name",
                                              "homogeneousCluster")
        self._network_interface_name = rc.get("network_interface_name",
                                              "eth0")
        self._topology = rc.get("topology", None)
        self._num_gpus = num_gpus()
        self._num_cpus = num_cpus()
        self._num_neurons = num_neurons(self._current_instance_type)

        self._model_dir = model_dir
        self._input_dir = input_dir
        self._input_config_dir = input_config_dir
        self._output_dir = output_dir
        self._output_data_dir = output_data_dir
        self._output_intermediate_dir = output_intermediate_dir
        self._channel_input_dirs = {c: channel_path(c) for c in idc}

        if program is None:
            self._module_name = str(sm.get(params.USER_PROGRAM_PARAM, None))
        else:
            self._module_name = program
        self._user_entry_point = program or sm.get(params.USER_PROGRAM_PARAM)
        self._module_dir = str(sm.get(params.SUBMIT_DIR_PARAM, code_dir))
        self._log_level = sm.get(params.LOG_LEVEL_PARAM, logging.INFO)
        self._sagemaker_s3_output = sm.get(params.S3_OUTPUT_LOCATION_PARAM)
        self._framework_module = os.environ.get(
            params.FRAMEWORK_TRAINING_MODULE_ENV, None)
        self._job_name = os.environ.get(params.TRAINING_JOB_ENV, None)

        region = sm.get(params.REGION_NAME_PARAM) or \
            os.environ.get("AWS_REGION") or \
            os.environ.get("AWS_DEFAULT_REGION") or \
            os.environ.get(params.REGION_NAME_ENV)
        os.environ[params.JOB_NAME_ENV] = sm.get(params.JOB_NAME_PARAM, "")
        os.environ[params.CURRENT_HOST_ENV] = self._current_host
        os.environ[params.REGION_NAME_ENV] = region or ""

        self._take_overrides()
        self._groups()
        mp = os.environ.get(params.SM_HP_MP_PARAMETERS)
        self._is_modelparallel_enabled = mp and mp != "{}"
        self._is_smddpmprun_installed = validate_smddpmprun()
        self._is_smddprun_installed = validate_smddprun()

    def _take_overrides(self):
        """What trainctl decided in place of the toolkit's defaults (the
        code folder it downloaded the code to, the entry point it runs),
        as SM_TRAINING_ENV says for this host."""
        try:
            told = json.loads(os.environ.get("SM_TRAINING_ENV", "{}"))
        except ValueError:
            return
        if not isinstance(told, dict) or \
                told.get("current_host") != self._current_host:
            return
        for name in ("module_dir", "user_entry_point", "framework_module"):
            if name in told:
                setattr(self, "_" + name, told[name])
        if "module_name" in told:
            self._module_name = told["module_name"]

    def _groups(self):
        """Instance groups, the distribution's hosts and its leader."""
        groups = self._resource_config.get("instance_groups", [])
        self._instance_groups = [g["instance_group_name"] for g in groups]
        self._instance_groups_dict = {g["instance_group_name"]: g
                                      for g in groups}
        self._current_instance_group_hosts = next(
            (g["hosts"] for g in groups
             if g["instance_group_name"] == self._current_instance_group), [])
        extra = self._additional_framework_parameters
        if params.DISTRIBUTION_INSTANCE_GROUPS in extra:
            dist = extra[params.DISTRIBUTION_INSTANCE_GROUPS]
        elif any(extra.get(f, False) for f in _DISTRIBUTION_FLAGS):
            dist = [self._resource_config.get("current_group_name",
                                              "homogeneousCluster")]
        else:
            dist = []
        self._distribution_instance_groups = dist
        if groups:
            self._distribution_hosts = [h for g in groups
                                        if g["instance_group_name"] in dist
                                        for h in g["hosts"]]
        else:
            self._distribution_hosts = list(self._hosts)
        self._is_hetero = len(self._instance_groups) > 1
        self._master_hostname = (self._distribution_hosts or self._hosts)[0]
        self._is_master = self._current_host == self._master_hostname

    # Methods the toolkit offers besides the attributes.
    def get_distribution_instance_groups_from_resource_config(self):
        return list(self._distribution_instance_groups)

    def get_current_instance_group(self):
        return self._current_instance_group

    def get_distribution_hosts(self):
        return list(self._distribution_hosts)

    def get_current_instance_group_hosts(self):
        return list(self._current_instance_group_hosts)

    def get_instance_groups(self):
        return list(self._instance_groups)

    def get_instance_groups_dict(self):
        return dict(self._instance_groups_dict)

    def get_master_hostname(self):
        return self._master_hostname

    def sagemaker_s3_output(self):
        """sagemaker_s3_output: where intermediate output goes, or None."""
        return self._sagemaker_s3_output

    def to_cmd_args(self):
        """The user hyperparameters as the script's arguments."""
        return mapping.to_cmd_args(self._hyperparameters)

    def to_env_vars(self):
        """The SM_* variables of this environment (SM_HOSTS, SM_HPS,
        SM_CHANNEL_<NAME>, SM_HP_<NAME>, SM_TRAINING_ENV, ...)."""
        env = {
            "hosts": self.hosts,
            "network_interface_name": self.network_interface_name,
            "hps": self.hyperparameters,
            "user_entry_point": self.user_entry_point,
            "framework_params": self.additional_framework_parameters,
            "resource_config": self.resource_config,
            "input_data_config": self.input_data_config,
            "output_data_dir": self.output_data_dir,
            "channels": sorted(self.channel_input_dirs.keys()),
            "current_host": self.current_host,
            "current_instance_type": self.current_instance_type,
            "current_instance_group": self.current_instance_group,
            "current_instance_group_hosts": self.current_instance_group_hosts,
            "instance_groups": self.instance_groups,
            "instance_groups_dict": self.instance_groups_dict,
            "distribution_instance_groups": self.distribution_instance_groups,
            "is_hetero": self.is_hetero,
            "module_name": self.module_name,
            "log_level": self.log_level,
            "framework_module": self.framework_module,
            "input_dir": self.input_dir,
            "input_config_dir": self.input_config_dir,
            "output_dir": self.output_dir,
            "num_cpus": self.num_cpus,
            "num_gpus": self.num_gpus,
            "num_neurons": self.num_neurons,
            "model_dir": self.model_dir,
            "module_dir": self.module_dir,
            "training_env": dict(self),
            "user_args": self.to_cmd_args(),
            "output_intermediate_dir": self.output_intermediate_dir,
        }
        if self._topology:
            env["topology"] = self._topology
        for name, path in self.channel_input_dirs.items():
            env["channel_%s" % name] = path
        for name, value in self.hyperparameters.items():
            env["hp_%s" % name] = value
        return mapping.to_env_vars(env)

    @staticmethod
    def _parse_module_name(program):
        if program and program.endswith(".py"):
            return program[:-3]
        return program

    module_name = property(lambda self: self._parse_module_name(
        self._module_name), doc="The entry point without .py.")


def _attribute(name, doc):
    return property(lambda self: getattr(self, "_" + name), doc=doc)


for _name, _doc in (
        ("additional_framework_parameters",
         "sagemaker_* hyperparameters that are a framework's."),
        ("channel_input_dirs", "{channel: its data folder}."),
        ("current_host", "This host's name, e.g. algo-2."),
        ("current_instance_group", "This host's instance group."),
        ("current_instance_group_hosts", "The hosts of this host's group."),
        ("current_instance_type", "This host's instance type."),
        ("distribution_hosts", "The hosts that run the distribution."),
        ("distribution_instance_groups", "The groups that run it."),
        ("framework_module", "$SAGEMAKER_TRAINING_MODULE, or None."),
        ("hosts", "Every host of the job, algo-1 first."),
        ("hyperparameters", "The user hyperparameters, decoded."),
        ("input_config_dir", "The folder of the configuration files."),
        ("input_data_config", "inputdataconfig.json."),
        ("input_dir", "The input folder."),
        ("instance_groups", "The names of the job's instance groups."),
        ("instance_groups_dict", "The instance groups by name."),
        ("is_hetero", "Whether the job has more than one group."),
        ("is_master", "Whether this host leads the job."),
        ("is_modelparallel_enabled", "Whether SM_HP_MP_PARAMETERS is set."),
        ("is_smddpmprun_installed", "Whether smddpmprun is installed."),
        ("is_smddprun_installed", "Whether smddprun is installed."),
        ("job_name", "The training job's name."),
        ("log_level", "sagemaker_container_log_level (default 20)."),
        ("master_hostname", "The leader: first distribution host."),
        ("model_dir", "The folder whose files become model.tar.gz."),
        ("module_dir", "sagemaker_submit_directory, else the code folder."),
        ("network_interface_name", "The interface between hosts."),
        ("num_cpus", "CPUs."),
        ("num_gpus", "GPUs."),
        ("num_neurons", "Neuron cores."),
        ("output_data_dir", "The folder whose files become output.tar.gz."),
        ("output_dir", "The output folder."),
        ("output_intermediate_dir", "Intermediate output."),
        ("resource_config", "resourceconfig.json."),
        ("topology", "resourceconfig.json's topology."),
        ("user_entry_point", "The entry point (sagemaker_program)."),
):
    setattr(Environment, _name, _attribute(_name, _doc))
del _name, _doc
