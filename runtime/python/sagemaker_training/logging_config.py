"""The toolkit's logger."""
import json
import logging

_NAME = "sagemaker-training-toolkit"


def get_logger():
    """The toolkit's logger."""
    return logging.getLogger(_NAME)


def configure_logger(level, log_format="%(asctime)s %(name)-12s "
                     "%(levelname)-8s %(message)s"):
    """Sends log records of level and above to stderr in log_format."""
    logging.basicConfig(format=log_format, level=level)
    logging.getLogger("boto3").setLevel(logging.INFO)
    logging.getLogger("s3transfer").setLevel(logging.INFO)
    logging.getLogger("botocore").setLevel(logging.WARN)


def log_script_invocation(cmd, env_vars, logger=None):
    """Logs the command about to run and its SM_* environment, as the
    toolkit's preamble does."""
    logger = logger or get_logger()
    env = {k: v for k, v in env_vars.items() if k.startswith("SM_")}
    lines = ["%s=%s" % (k, v) for k, v in sorted(env.items())]
    try:
        training_env = json.dumps(json.loads(env_vars.get("SM_TRAINING_ENV",
                                                          "{}")),
                                  indent=4, sort_keys=True)
    except ValueError:
        training_env = env_vars.get("SM_TRAINING_ENV", "")
    logger.info("Invoking user script\n\nTraining Env:\n\n%s\n\n"
                "Environment variables:\n\n%s\n\nInvoking script with the "
                "following command:\n\n%s\n\n", training_env,
                "\n".join(lines), " ".join(cmd))
