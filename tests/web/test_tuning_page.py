#!/usr/bin/python3
"""The status page's tuning-job views in a real headless Chromium (Debian's
chromium driven by playwright-core from tests/tools, as test_page.py).

Starts trainctld with a local cluster of 2 hosts, opens the tuning-job list,
creates a Random tuning job of 3 training jobs, 3 in parallel, and checks
(tests/web/tuning_page.js does the browser part) that it appears in the
list without a reload, that its view follows it live to Completed, and
that the view shows its training jobs with their tuned values and
objectives, the best training job (linked to its job view), the objective
plot with the best-so-far line, the learning curves and one scatter per
tuned hyperparameter. Screenshots go to build/test-artifacts/web/.

TAP on stdout. Run with Debian's interpreter from the top of the tree:
    /usr/bin/python3 tests/web/test_tuning_page.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webtest as wt  # noqa: E402
import test_page  # noqa: E402

sc = wt.sc
PAGE_JS = os.path.join(wt.HERE, "tuning_page.js")
LIMIT_S = 240

# EPOCHS lines "epoch N loss=L" DELAY seconds apart, L falling towards
# (x - 0.3)^2 + 0.1 * |layers - 2| (+ 0.5 unless act is relu), read from
# SM_HPS. POSIX sh and awk.
TRAIN = r"""#!/bin/sh
hp() {
	printf '%s' "$SM_HPS" | sed -n "s/.*\"$1\": *\"\{0,1\}\([^\",}]*\).*/\1/p"
}
x=$(hp x)
layers=$(hp layers)
act=$(hp act)
i=1
while [ "$i" -le "${EPOCHS:-6}" ]; do
	awk -v x="${x:-0}" -v l="${layers:-1}" -v a="$act" -v i="$i" 'BEGIN {
		d = l - 2; if (d < 0) d = -d
		printf "epoch %d loss=%.6f;\n", i, (x - 0.3) ^ 2 + 0.1 * d + (a == "relu" ? 0 : 0.5) + 0.5 / i }'
	sleep "${DELAY:-0.5}"
	i=$((i + 1))
done
"""


def tuning_request(name, script):
    return {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "RandomSeed": 5,
            "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "loss"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 3, "MaxParallelTrainingJobs": 3},
            "ParameterRanges": {
                "ContinuousParameterRanges": [{"Name": "x", "MinValue": "0.01", "MaxValue": "1",
                                               "ScalingType": "Logarithmic"}],
                "IntegerParameterRanges": [{"Name": "layers", "MinValue": "1", "MaxValue": "3"}],
                "CategoricalParameterRanges": [{"Name": "act", "Values": ["relu", "tanh", "gelu"]}],
            },
        },
        "TrainingJobDefinition": {
            "StaticHyperParameters": {"epochs": "8"},
            "AlgorithmSpecification": {"TrainingImage": "file://" + script, "TrainingInputMode": "File",
                                       "MetricDefinitions": [{"Name": "loss", "Regex": "loss=(.*?);"}]},
            "Environment": {"EPOCHS": "8", "DELAY": "0.5"},
            "RoleArn": wt.ROLE,
            "OutputDataConfig": {"S3OutputPath": "s3://trainctl-web/out"},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 300},
        },
    }


def main():
    tap = sc.Tap()
    why = test_page.missing_tools()
    if why:
        tap.skip("tuning-job views in headless chromium", why)
        return tap.finish()
    ctl = wt.Controller(hosts=2)
    try:
        err = ctl.start()
        if not tap.ok(err is None, "trainctld with a local cluster of 2 hosts starts", err):
            return tap.finish()
        scripts = os.path.join(ctl.tmp, "scripts")
        os.makedirs(scripts)
        train = wt.write_script(scripts, "tune.sh", TRAIN)
        os.makedirs(wt.ARTIFACTS, exist_ok=True)
        cfg = {
            "url": ctl.url,
            "artifacts": wt.ARTIFACTS,
            "modules": test_page.MODULES,
            "chromium": test_page.CHROMIUM,
            "tuning": tuning_request("web-tune-1", train),
        }
        wt.run_browser(tap, ctl, PAGE_JS, cfg, LIMIT_S, "tuning-", 4, "tuning screenshots")
    finally:
        ctl.cleanup()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
