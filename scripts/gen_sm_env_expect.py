#!/usr/bin/python3
"""Writes tests/api/data/sm_env/*.json: inputs for api_sm_env_build() and the
environment and argv sagemaker-training-toolkit (TK) would give the user's
process for them.

The reference is Python itself: TK builds every value with json.loads,
json.dumps and str(), so the expected bytes come from running TK's logic on a
real interpreter. mapping.py is used from an installed sagemaker_training when
there is one; otherwise the functions below are ports of TK @33839372
(aws/sagemaker-training-toolkit src/sagemaker_training/mapping.py,
environment.py Environment.__init__ / get_* / to_env_vars, params.py) that
keep TK's statements as they are, with the file reads and os.environ replaced
by the case's inputs. environment.py itself is never imported: importing it
creates /opt/ml and needs boto3.

Run from the top of the tree: /usr/bin/python3 scripts/gen_sm_env_expect.py
"""
import collections
import itertools
import json
import logging
import os
import sys

OUT_DIR = os.path.join("tests", "api", "data", "sm_env")

# ---- params.py ----
SAGEMAKER_PREFIX = "sagemaker_"
CURRENT_HOST_ENV = "CURRENT_HOST"
USER_PROGRAM_PARAM = "sagemaker_program"
USER_PROGRAM_ENV = USER_PROGRAM_PARAM.upper()
S3_OUTPUT_LOCATION_PARAM = "sagemaker_s3_output"
TRAINING_JOB_ENV = "TRAINING_JOB_NAME"
SUBMIT_DIR_PARAM = "sagemaker_submit_directory"
ENABLE_METRICS_PARAM = "sagemaker_enable_cloudwatch_metrics"
LOG_LEVEL_PARAM = "sagemaker_container_log_level"
JOB_NAME_PARAM = "sagemaker_job_name"
JOB_NAME_ENV = JOB_NAME_PARAM.upper()
TUNING_METRIC_PARAM = "_tuning_objective_metric"
DEFAULT_MODULE_NAME_PARAM = "default_user_module_name"
REGION_NAME_PARAM = "sagemaker_region"
REGION_NAME_ENV = REGION_NAME_PARAM.upper()
FRAMEWORK_TRAINING_MODULE_ENV = "SAGEMAKER_TRAINING_MODULE"
SM_HP_MP_PARAMETERS = "SM_HP_MP_PARAMETERS"
SAGEMAKER_HYPERPARAMETERS = (
    USER_PROGRAM_PARAM,
    SUBMIT_DIR_PARAM,
    ENABLE_METRICS_PARAM,
    REGION_NAME_PARAM,
    LOG_LEVEL_PARAM,
    JOB_NAME_PARAM,
    DEFAULT_MODULE_NAME_PARAM,
    TUNING_METRIC_PARAM,
    S3_OUTPUT_LOCATION_PARAM,
)

# ---- mapping.py ----
SplitResultSpec = collections.namedtuple("SplitResultSpec", "included excluded")


def _to_env_vars(mapping):
    def format_key(key):
        if key:
            decoded_name = "SM_%s" % str(key).upper()
            return decoded_name
        else:
            return ""

    def format_value(_mapping):
        if isinstance(_mapping, bytes):
            return _mapping.decode("latin1")
        elif _mapping is None:
            return ""
        elif isinstance(_mapping, str):
            return str(_mapping)
        else:
            return json.dumps(_mapping, sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    return {format_key(k): format_value(v) for k, v in mapping.items()}


def _decode(obj):
    if obj is None:
        return ""
    if isinstance(obj, bytes):
        return obj.decode("latin1")
    return str(obj)


def _to_cmd_args(mapping):
    sorted_keys = sorted(mapping.keys())

    def arg_name(obj):
        string = _decode(obj)
        if string:
            return "--%s" % string if len(string) > 1 else "-%s" % string
        else:
            return ""

    arg_names = [arg_name(argument) for argument in sorted_keys]

    def arg_value(value):
        if hasattr(value, "items"):
            map_items = ["%s=%s" % (k, v) for k, v in sorted(value.items())]
            return ",".join(map_items)
        return _decode(value)

    arg_values = [arg_value(mapping[key]) for key in sorted_keys]

    items = zip(arg_names, arg_values)

    return [item for item in itertools.chain.from_iterable(items)]


def _split_by_criteria(dictionary, keys=None, prefix=None):
    keys = keys or []
    keys = set(keys)

    included_items = {
        k: dictionary[k]
        for k in dictionary.keys()
        if k in keys or (prefix and k.startswith(prefix))
    }
    excluded_items = {k: dictionary[k] for k in dictionary.keys() if k not in included_items}

    return SplitResultSpec(included=included_items, excluded=excluded_items)


to_env_vars, to_cmd_args, split_by_criteria = _to_env_vars, _to_cmd_args, _split_by_criteria
TK_SOURCE = "port of TK @33839372 mapping.py"
try:  # TK's own mapping.py when it is installed
    from sagemaker_training import mapping as _tk_mapping  # noqa: E402

    to_env_vars = _tk_mapping.to_env_vars
    to_cmd_args = _tk_mapping.to_cmd_args
    split_by_criteria = _tk_mapping.split_by_criteria
    TK_SOURCE = "installed sagemaker_training.mapping"
except ImportError:
    pass


# ---- environment.py ----
def read_hyperparameters(text):
    hyperparameters = json.loads(text)
    deserialized_hps = {}
    for k, v in hyperparameters.items():
        try:
            v = json.loads(v)
        except (ValueError, TypeError):
            pass
        deserialized_hps[k] = v
    return deserialized_hps


DISTRIBUTION_FLAGS = (
    "sagemaker_mpi_enabled",
    "sagemaker_parameter_server_enabled",
    "sagemaker_distributed_dataparallel_enabled",
    "sagemaker_pytorch_ddp_enabled",
    "sagemaker_pytorch_xla_multi_worker_enabled",
    "sagemaker_multi_worker_mirrored_strategy_enabled",
    "sagemaker_torch_distributed_enabled",
)


class Environment:
    """Environment.__init__ with its inputs passed in; attribute names as in TK."""

    PROPERTIES = sorted([
        "additional_framework_parameters", "channel_input_dirs", "current_host",
        "current_instance_group", "current_instance_group_hosts",
        "current_instance_type", "distribution_hosts",
        "distribution_instance_groups", "framework_module", "hosts",
        "hyperparameters", "input_config_dir", "input_data_config", "input_dir",
        "instance_groups", "instance_groups_dict", "is_hetero", "is_master",
        "is_modelparallel_enabled", "is_smddpmprun_installed",
        "is_smddprun_installed", "job_name", "log_level", "master_hostname",
        "model_dir", "module_dir", "module_name", "network_interface_name",
        "num_cpus", "num_gpus", "num_neurons", "output_data_dir", "output_dir",
        "output_intermediate_dir", "resource_config", "topology",
        "user_entry_point",
    ])

    def __init__(self, inp, environ):
        base_dir = inp.get("base_dir") or "/opt/ml"
        code_dir = os.path.join(base_dir, "code")
        model_dir = os.path.join(base_dir, "model")
        input_dir = os.path.join(base_dir, "input")
        _input_data_dir = os.path.join(input_dir, "data")
        input_config_dir = os.path.join(input_dir, "config")
        output_dir = os.path.join(base_dir, "output")
        output_data_dir = os.path.join(output_dir, "data")
        output_intermediate_dir = os.path.join(output_dir, "intermediate")

        def channel_path(channel):
            return os.path.join(_input_data_dir, channel)

        # api_sm_env_input.user_entry_point stands for SAGEMAKER_PROGRAM.
        if inp.get("user_entry_point") is not None:
            module_name = inp["user_entry_point"]
        else:
            module_name = environ.get(USER_PROGRAM_ENV, None)
        self._num_gpus = inp.get("num_gpus", 0)
        self._num_cpus = inp.get("num_cpus", 0)
        self._num_neurons = inp.get("num_neurons", 0)
        self._module_name = module_name
        self._user_entry_point = module_name
        self._model_dir = model_dir

        resource_config = json.loads(inp["resource_config_json"])
        input_data_config = json.loads(inp.get("input_data_config_json") or "{}")
        all_hyperparameters = read_hyperparameters(inp.get("hyperparameters_json") or "{}")

        hosts = resource_config["hosts"]
        current_instance_type = resource_config.get("current_instance_type", "local")
        current_instance_group = resource_config.get("current_group_name", "homogeneousCluster")
        current_host = resource_config["current_host"]

        self._current_host = current_host
        self._current_instance_type = current_instance_type
        self._current_instance_group = current_instance_group

        split_result = split_by_criteria(
            all_hyperparameters, keys=SAGEMAKER_HYPERPARAMETERS, prefix=SAGEMAKER_PREFIX
        )
        sagemaker_hyperparameters = split_result.included
        additional_framework_parameters = {
            k: sagemaker_hyperparameters[k]
            for k in sagemaker_hyperparameters.keys()
            if k not in SAGEMAKER_HYPERPARAMETERS
        }

        # boto3.session.Session().region_name: AWS_DEFAULT_REGION, else the
        # region the case says boto3 would find in its configuration.
        if "AWS_DEFAULT_REGION" in environ:
            boto_region = environ["AWS_DEFAULT_REGION"]
        else:
            boto_region = inp.get("region")
        sagemaker_region = sagemaker_hyperparameters.get(REGION_NAME_PARAM, boto_region)

        environ[JOB_NAME_ENV] = sagemaker_hyperparameters.get(JOB_NAME_PARAM, "")
        environ[CURRENT_HOST_ENV] = current_host
        environ[REGION_NAME_ENV] = sagemaker_region or ""

        self._hosts = hosts
        self._network_interface_name = resource_config.get("network_interface_name", "eth0")
        self._hyperparameters = split_result.excluded
        self._additional_framework_parameters = additional_framework_parameters
        self._resource_config = resource_config
        self._input_data_config = input_data_config
        self._output_data_dir = output_data_dir
        self._output_intermediate_dir = output_intermediate_dir
        self._channel_input_dirs = {channel: channel_path(channel) for channel in input_data_config}

        if self._module_name is None:
            self._module_name = str(sagemaker_hyperparameters.get(USER_PROGRAM_PARAM, None))
        self._user_entry_point = self._user_entry_point or sagemaker_hyperparameters.get(
            USER_PROGRAM_PARAM
        )

        if inp.get("module_dir") is not None:
            self._module_dir = inp["module_dir"]
        else:
            self._module_dir = str(sagemaker_hyperparameters.get(SUBMIT_DIR_PARAM, code_dir))
        self._log_level = sagemaker_hyperparameters.get(LOG_LEVEL_PARAM, logging.INFO)
        if inp.get("framework_module") is not None:
            self._framework_module = inp["framework_module"]
        else:
            self._framework_module = environ.get(FRAMEWORK_TRAINING_MODULE_ENV, None)

        self._input_dir = input_dir
        self._input_config_dir = input_config_dir
        self._output_dir = output_dir
        self._job_name = environ.get(TRAINING_JOB_ENV.upper(), None)

        self._current_instance_group_hosts = self.get_current_instance_group_hosts()
        self._instance_groups = self.get_instance_groups()
        self._instance_groups_dict = self.get_instance_groups_dict()
        self._distribution_instance_groups = self._additional_framework_parameters.get(
            "sagemaker_distribution_instance_groups",
            self.get_distribution_instance_groups_from_resource_config(),
        )
        self._distribution_hosts = self.get_distribution_hosts()
        self._is_hetero = bool(len(self._instance_groups) > 1)
        self._master_hostname = self.get_master_hostname()
        self._is_master = current_host == self._master_hostname

        mp_parameters = environ.get(SM_HP_MP_PARAMETERS)
        self._is_modelparallel_enabled = mp_parameters and mp_parameters != "{}"
        self._is_smddpmprun_installed = False  # `which smddpmprun` fails here
        self._is_smddprun_installed = False
        self._topology = resource_config.get("topology", None)

    def get_distribution_instance_groups_from_resource_config(self):
        distribution_instance_groups = []
        current_instance_group = self._resource_config.get(
            "current_group_name", "homogeneousCluster"
        )
        if any(self._additional_framework_parameters.get(f, False) for f in DISTRIBUTION_FLAGS):
            distribution_instance_groups.append(current_instance_group)
        return distribution_instance_groups

    def get_distribution_hosts(self):
        distribution_hosts = []
        instance_groups_config = self._resource_config.get("instance_groups", [])
        if instance_groups_config:
            for group in instance_groups_config:
                if group["instance_group_name"] in self._distribution_instance_groups:
                    distribution_hosts.extend(group["hosts"])
        else:
            distribution_hosts = self._hosts.copy()
        return distribution_hosts

    def get_current_instance_group_hosts(self):
        instance_groups_config = self._resource_config.get("instance_groups", [])
        for group in instance_groups_config:
            if self._current_instance_group == group["instance_group_name"]:
                return group["hosts"]
        return []

    def get_instance_groups(self):
        instance_groups = []
        for group in self._resource_config.get("instance_groups", []):
            instance_groups.append(group["instance_group_name"])
        return instance_groups

    def get_instance_groups_dict(self):
        instance_groups_dict = {}
        for group in self._resource_config.get("instance_groups", []):
            instance_groups_dict[group["instance_group_name"]] = group
        return instance_groups_dict

    def get_master_hostname(self):
        if self._distribution_hosts:
            return list(self._distribution_hosts)[0]
        return list(self._hosts)[0]

    # The properties dict(self) lists (MappingMixin.properties()).
    def prop(self, name):
        if name == "module_name":
            p = self._module_name
            if p and p.endswith(".py"):
                return p[:-3]
            return p
        return getattr(self, "_" + name)

    def training_env(self):
        return {name: self.prop(name) for name in self.PROPERTIES}

    def to_env_vars(self):
        env = {
            "hosts": self.prop("hosts"),
            "network_interface_name": self.prop("network_interface_name"),
            "hps": self.prop("hyperparameters"),
            "user_entry_point": self.prop("user_entry_point"),
            "framework_params": self.prop("additional_framework_parameters"),
            "resource_config": self.prop("resource_config"),
            "input_data_config": self.prop("input_data_config"),
            "output_data_dir": self.prop("output_data_dir"),
            "channels": sorted(self._channel_input_dirs.keys()),
            "current_host": self.prop("current_host"),
            "current_instance_type": self.prop("current_instance_type"),
            "current_instance_group": self.prop("current_instance_group"),
            "current_instance_group_hosts": self.prop("current_instance_group_hosts"),
            "instance_groups": self.prop("instance_groups"),
            "instance_groups_dict": self.prop("instance_groups_dict"),
            "distribution_instance_groups": self.prop("distribution_instance_groups"),
            "is_hetero": self.prop("is_hetero"),
            "module_name": self.prop("module_name"),
            "log_level": self.prop("log_level"),
            "framework_module": self.prop("framework_module"),
            "input_dir": self.prop("input_dir"),
            "input_config_dir": self.prop("input_config_dir"),
            "output_dir": self.prop("output_dir"),
            "num_cpus": self.prop("num_cpus"),
            "num_gpus": self.prop("num_gpus"),
            "num_neurons": self.prop("num_neurons"),
            "model_dir": self.prop("model_dir"),
            "module_dir": self.prop("module_dir"),
            "training_env": self.training_env(),
            "user_args": to_cmd_args(self._hyperparameters),
            "output_intermediate_dir": self.prop("output_intermediate_dir"),
        }
        if self._topology:
            env["topology"] = self._topology
        for name, path in self._channel_input_dirs.items():
            env["channel_%s" % name] = path
        for key, value in self._hyperparameters.items():
            env["hp_%s" % key] = value
        return to_env_vars(env)


def expected(inp):
    """The user process's environment: layers as api/sm_env.h describes."""
    environ = dict(inp.get("environment", {}))
    if inp.get("job_name") is not None:
        environ["TRAINING_JOB_NAME"] = inp["job_name"]
    if inp.get("job_arn") is not None:
        environ["TRAINING_JOB_ARN"] = inp["job_arn"]
    env = Environment(inp, environ)
    environ.update(env.to_env_vars())  # write_env_vars(), less PYTHONPATH
    for name, value in environ.items():  # what os.putenv would refuse
        if "=" in name or "\0" in name or "\0" in value:
            raise ValueError("illegal environment variable %r" % name)
        os.fsencode(name), os.fsencode(value)
    return {"env": environ, "user_args": to_cmd_args(env.prop("hyperparameters"))}


# ---- the cases ----
def rc(current, hosts, groups=None, itype="ml.c5.xlarge", iface="eth0", topology=None,
       group_name="homogeneousCluster"):
    if groups is None:
        groups = [{"instance_group_name": group_name, "instance_type": itype, "hosts": hosts}]
    return json.dumps({
        "current_host": current, "current_instance_type": itype,
        "current_group_name": group_name, "hosts": hosts, "instance_groups": groups,
        "network_interface_name": iface, "topology": topology,
    }, separators=(",", ":"))


def idc(*names):
    return json.dumps({n: {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated",
                           "RecordWrapperType": "None"} for n in names}, separators=(",", ":"))


def hps(d):
    return json.dumps(d, separators=(",", ":"), ensure_ascii=False)


CASES = {
    "one_host": {
        "description": "one host, no channels, no hyperparameters",
        "input": {
            "hyperparameters_json": "{}", "input_data_config_json": "{}",
            "resource_config_json": rc("algo-1", ["algo-1"]),
            "job_name": "job-1", "job_arn": "arn:aws:sagemaker:us-east-1:000000000000:training-job/job-1",
            "num_cpus": 4, "num_gpus": 0, "num_neurons": 0,
        },
    },
    "three_hosts": {
        "description": "three hosts, train and test channels, algo-2's view",
        "input": {
            "base_dir": "/var/lib/trainagent/jobs/mnist-1/1/algo-2",
            "hyperparameters_json": hps({"epochs": "10", "batch-size": "64"}),
            "input_data_config_json": idc("train", "test"),
            "resource_config_json": rc("algo-2", ["algo-1", "algo-2", "algo-3"], itype="ml.p3.2xlarge"),
            "job_name": "mnist-1", "job_arn": "arn:aws:sagemaker:us-east-1:000000000000:training-job/mnist-1",
            "region": "us-west-2",
            "num_cpus": 8, "num_gpus": 1, "num_neurons": 0,
            "environment": {"FOO": "bar"},
        },
    },
    "hp_types": {
        "description": "hyperparameters of every type, as the SDK json-encodes them",
        "input": {
            "hyperparameters_json": hps({
                "epochs": "10", "lr": "0.1", "eps": "1e-05", "decay": "10.0",
                "big": "123456789012345678901234567890", "neg_zero": "-0", "negf": "-0.0",
                "huge": "1e16", "tiny": "0.0001", "pi": "3.141592653589793", "third": "0.3333333333333333",
                "e300": "1.5e300", "sub": "5e-324", "inf": "Infinity", "nan": "NaN", "ninf": "-Infinity",
                "overflow": "1e400",
                "flag": "true", "off": "false", "none": "null",
                "quoted": "\"he said \\\"hi\\\"\"", "apostrophe": "\"it's\"", "both": "\"it's \\\"x\\\"\"",
                "tab": "\"a\\tb\\nc\\u0001\\u007f\"",
                "unicode": "\"caf\\u00e9 \\u00a0 \\ud83d\\ude00 \\u200b\"",
                "raw_unicode": "h\u00e9llo w\u00f6rld",
                "list": "[1, 2.5, \"a\", true, null, [\"x\", \"it's\"]]",
                "dict": "{\"b\": [true, null], \"a\": 1, \"c\": {\"z\": \"q\", \"y\": 0.5}}",
                "empty_dict": "{}", "empty_list": "[]",
                "optimizer": "adam", "path": "/opt/ml/input/data/train", "empty": "", "spaces": " 7 ",
                "empty_json_str": "\"\"", "bad_json": "{\"a\": }", "leading_zero": "01",
                "trailing": "1.", "dup": "{\"a\": 1, \"b\": 2, \"a\": 3}",
                "unicode_list": "[\"caf\\u00e9\", \"\\u00a0\", \"\\ud83d\\ude00\", \"\\u200b\", "
                                "\"a\\nb\\u0000\", \"\\\\\", \"\\u0085\", \"\\ud800\"]",
                "floats": "[1e22, 1e21, 123456789012345680.0, 2.2250738585072014e-308, "
                          "1.7976931348623157e308, 9007199254740993, 4.35, 0.000123, 100.0, "
                          "1e-7, 2e-4, 9.5367431640625e-07, 8.98846567431158e307, 1E2, 12.5e-1]",
                "k": "3", "learning-rate": "0.01", "x": "\"single\"",
                "sagemaker_program": "\"train.py\"",
                "sagemaker_submit_directory": "\"s3://bucket/job/source/sourcedir.tar.gz\"",
                "sagemaker_torch_distributed_enabled": "true",
                "sagemaker_container_log_level": "20",
                "sagemaker_job_name": "\"hp-types-1\"",
                "sagemaker_region": "\"eu-west-1\"",
                "sagemaker_instance_type": "\"ml.p4d.24xlarge\"",
                "_tuning_objective_metric": "\"loss\"",
            }),
            "input_data_config_json": idc("train"),
            "resource_config_json": rc("algo-1", ["algo-1", "algo-2"]),
            "job_name": "hp-types-1", "num_cpus": 96, "num_gpus": 8, "num_neurons": 0,
        },
    },
    "channel_names": {
        "description": "channel names with dots, dashes, underscores and capitals",
        "input": {
            "hyperparameters_json": hps({"a": "1"}),
            "input_data_config_json": idc("train.v1", "test-set", "my_chan", "Validation"),
            "resource_config_json": rc("algo-1", ["algo-1"], iface="ethwe"),
            "job_name": "chan-1", "num_cpus": 2,
        },
    },
    "hetero_master": {
        "description": "heterogeneous groups; distribution on 'gpu' whose host algo-2 is listed first",
        "input": {
            "hyperparameters_json": hps({
                "sagemaker_distribution_instance_groups": "[\"gpu\"]",
                "sagemaker_mpi_enabled": "true",
                "sagemaker_program": "\"train.py\"",
            }),
            "input_data_config_json": idc("train"),
            "resource_config_json": rc("algo-1", ["algo-1", "algo-2", "algo-3"], groups=[
                {"instance_group_name": "gpu", "instance_type": "ml.p3.2xlarge", "hosts": ["algo-2"]},
                {"instance_group_name": "cpu", "instance_type": "ml.c5.xlarge", "hosts": ["algo-1", "algo-3"]},
            ], group_name="cpu", itype="ml.c5.xlarge"),
            "job_name": "hetero-1", "num_cpus": 4,
        },
    },
    "hetero_master_self": {
        "description": "the same job seen from algo-2, the master",
        "input": {
            "hyperparameters_json": hps({
                "sagemaker_distribution_instance_groups": "[\"gpu\"]",
                "sagemaker_mpi_enabled": "true",
            }),
            "input_data_config_json": idc("train"),
            "resource_config_json": rc("algo-2", ["algo-1", "algo-2", "algo-3"], groups=[
                {"instance_group_name": "gpu", "instance_type": "ml.p3.2xlarge", "hosts": ["algo-2"]},
                {"instance_group_name": "cpu", "instance_type": "ml.c5.xlarge", "hosts": ["algo-1", "algo-3"]},
            ], group_name="gpu", itype="ml.p3.2xlarge"),
            "job_name": "hetero-1", "num_cpus": 8, "num_gpus": 1,
        },
    },
    "group_order_master": {
        "description": "one group listing algo-2 first with a distribution flag: algo-2 is master",
        "input": {
            "hyperparameters_json": hps({"sagemaker_pytorch_ddp_enabled": "true"}),
            "input_data_config_json": "{}",
            "resource_config_json": rc("algo-1", ["algo-1", "algo-2"], groups=[
                {"instance_group_name": "homogeneousCluster", "instance_type": "ml.p4d.24xlarge",
                 "hosts": ["algo-2", "algo-1"]}], itype="ml.p4d.24xlarge"),
            "job_name": "ddp-1", "num_cpus": 96, "num_gpus": 8,
        },
    },
    "environment": {
        "description": "the request's Environment: SAGEMAKER_PROGRAM, a training module, a region, overrides",
        "input": {
            "hyperparameters_json": hps({"sagemaker_program": "\"ignored.py\"", "lr": "0.5",
                                         "LR": "0.7", "sagemaker_submit_directory": "[\"odd\", 1]"}),
            "input_data_config_json": idc("training"),
            "resource_config_json": rc("algo-1", ["algo-1"], topology={"ultraserver": "u-1", "rank": [0, 1]}),
            "job_name": "env-1", "job_arn": "arn:aws:sagemaker:us-east-1:000000000000:training-job/env-1",
            "num_cpus": 1, "num_neurons": 64,
            "environment": {
                "SAGEMAKER_PROGRAM": "entry.sh", "SAGEMAKER_TRAINING_MODULE": "pkg.mod:main",
                "AWS_DEFAULT_REGION": "ap-south-1", "SM_MODEL_DIR": "/elsewhere",
                "TRAINING_JOB_NAME": "from-env", "CURRENT_HOST": "nope",
                "SM_HP_MP_PARAMETERS": "{\"partitions\": 2}",
            },
        },
    },
    "no_groups": {
        "description": "an old-style resource config without groups, type or interface; no program",
        "input": {
            "base_dir": "/job/",
            "hyperparameters_json": hps({"sagemaker_mpi_enabled": "\"false\"", "n": "2"}),
            "input_data_config_json": idc("train"),
            "resource_config_json": json.dumps({"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]}),
            "num_cpus": 2,
            "environment": {"SM_HP_MP_PARAMETERS": "{}"},
        },
    },
    "overrides": {
        "description": "the caller's module_dir, user_entry_point and framework_module overrides",
        "input": {
            "hyperparameters_json": hps({"sagemaker_program": "\"x.py\"", "epochs": "2"}),
            "input_data_config_json": "{}",
            "resource_config_json": rc("algo-1", ["algo-1"]),
            "module_dir": "/work/code", "user_entry_point": "main.py",
            "framework_module": "", "job_name": "ov-1", "num_cpus": 3,
            "environment": {"SM_HP_MP_PARAMETERS": ""},
        },
    },
}


def float_cases():
    """Doubles and Python's repr() of each: every power of two (where the
    rounding interval is lopsided), edge values and seeded random bits."""
    import random
    import struct

    values = [2.0 ** e for e in range(-1074, 1024)]
    values += [0.1, 0.2, 0.3, 1 / 3, 2 / 3, 1e16, 1e15, 9999999999999998.0, 1e-4, 1e-5,
               5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 123.456, 1e100]
    rnd = random.Random(20260131)
    while len(values) < 4000:
        v = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
        if v == v and v not in (float("inf"), float("-inf")):
            values.append(v)
    return [["%016x" % struct.unpack("<Q", struct.pack("<d", v))[0], repr(v)] for v in values]


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    with open(os.path.join(OUT_DIR, "float_repr.txt"), "w") as f:
        f.write("# IEEE-754 bits, then Python's repr(); from scripts/gen_sm_env_expect.py\n")
        for bits, text in float_cases():
            f.write("%s %s\n" % (bits, text))
    for name, case in sorted(CASES.items()):
        case = dict(case)
        case["expect"] = expected(case["input"])
        case["generator"] = "scripts/gen_sm_env_expect.py (%s, Python %d.%d)" % (
            TK_SOURCE, sys.version_info[0], sys.version_info[1])
        path = os.path.join(OUT_DIR, name + ".json")
        with open(path, "w") as f:
            json.dump(case, f, indent=1, sort_keys=True, ensure_ascii=False)
            f.write("\n")
        print("wrote", path)


if __name__ == "__main__":
    main()
