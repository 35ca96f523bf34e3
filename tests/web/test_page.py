#!/usr/bin/python3
"""The status page in a real headless Chromium (Debian's chromium driven by
playwright-core from tests/tools, see scripts/npm-deps.sh).

Starts trainctld with a local cluster of 2 hosts, opens the page, and
checks (tests/web/page.js does the browser part) that a new job appears,
that its status turns Completed live without a reload, that the job page
shows request, timeline, hosts, logs and metric plots that grow while the
job trains, that a failed job names its failing host and reason, and the
hosts page. Screenshots go to build/test-artifacts/web/.

TAP on stdout. Run with Debian's interpreter from the top of the tree:
    /usr/bin/python3 tests/web/test_page.py
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webtest as wt  # noqa: E402

sc = wt.sc
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TOOLS = os.path.join(wt.REPO, "tests", "tools")
MODULES = os.path.join(TOOLS, "node_modules")
PAGE_JS = os.path.join(wt.HERE, "page.js")
LIMIT_S = 240
RULE_IMAGE = "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest"
STALL = r"""#!/bin/sh
echo "start on $SM_CURRENT_HOST"
exec sleep 60
"""


def with_rules(body, threshold, stop):
    """The members the SageMaker SDK sends for rules=[Rule.sagemaker(
    rule_configs.stalled_training_rule()), ProfilerRule.sagemaker(
    rule_configs.OverallSystemUsage())], and InfraCheckConfig."""
    body["DebugRuleConfigurations"] = [{
        "RuleConfigurationName": "StalledTrainingRule", "RuleEvaluatorImage": RULE_IMAGE,
        "RuleParameters": {"rule_to_invoke": "StalledTrainingRule", "threshold": threshold,
                           "stop_training_on_fire": stop}}]
    body["ProfilerRuleConfigurations"] = [{
        "RuleConfigurationName": "OverallSystemUsage", "RuleEvaluatorImage": RULE_IMAGE,
        "RuleParameters": {"rule_to_invoke": "OverallSystemUsage", "scan_interval_us": "1000000"}}]
    body["DebugHookConfig"] = {"S3OutputPath": "s3://trainctl-web/out", "CollectionConfigurations": []}
    body["ProfilerConfig"] = {"S3OutputPath": "s3://trainctl-web/out", "DisableProfiler": False}
    body["InfraCheckConfig"] = {"EnableInfraCheck": True}
    return body


def missing_tools():
    """None when node, playwright-core and chromium are there, else why."""
    if not os.access(CHROMIUM, os.X_OK):
        return "%s is missing (scripts/deps.sh installs Debian's chromium)" % CHROMIUM
    if not os.path.isfile(os.path.join(MODULES, "playwright-core", "package.json")):
        npm_deps = os.path.join(wt.REPO, "scripts", "npm-deps.sh")
        if os.access(npm_deps, os.X_OK):
            subprocess.run([npm_deps, "-q"], stdout=subprocess.DEVNULL, timeout=300)
    if not os.path.isfile(os.path.join(MODULES, "playwright-core", "package.json")):
        # npm-deps.sh may only look for s3rver: install from the lock file.
        try:
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                           cwd=TOOLS, stdout=subprocess.DEVNULL, timeout=300)
        except (OSError, subprocess.TimeoutExpired):
            pass
    if not os.path.isfile(os.path.join(MODULES, "playwright-core", "package.json")):
        return "playwright-core is not installed in tests/tools (run scripts/npm-deps.sh)"
    try:
        subprocess.run(["node", "--version"], stdout=subprocess.DEVNULL, check=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return "node is missing (scripts/deps.sh installs nodejs)"
    return None


def main():
    tap = sc.Tap()
    why = missing_tools()
    if why:
        tap.skip("status page in headless chromium", why)
        return tap.finish()
    ctl = wt.Controller(hosts=2, args=["--infra-check-min-disk", "8", "--infra-check-min-shm", "1",
                                       "--telemetry-ms", "500"])
    try:
        err = ctl.start()
        if not tap.ok(err is None, "trainctld with a local cluster of 2 hosts starts", err):
            return tap.finish()
        scripts = os.path.join(ctl.tmp, "scripts")
        os.makedirs(scripts)
        good = wt.write_script(scripts, "good.sh", wt.GOOD)
        bad = wt.write_script(scripts, "bad.sh", wt.BAD)
        stall = wt.write_script(scripts, "stall.sh", STALL)
        os.makedirs(wt.ARTIFACTS, exist_ok=True)
        cfg = {
            "url": ctl.url,
            "artifacts": wt.ARTIFACTS,
            "modules": MODULES,
            "chromium": CHROMIUM,
            "tmp": ctl.tmp,
            "jobs": {
                "list": wt.job_body("web-list-1", good, env={"EPOCHS": "6", "DELAY": "0.4"}),
                "live": wt.job_body("web-live-1", good, env={"EPOCHS": "8", "DELAY": "0.5"}),
                "bad": wt.job_body("web-bad-1", bad),
                "rules": with_rules(wt.job_body("web-rules-1", good, env={"EPOCHS": "4", "DELAY": "0.3"}),
                                    "60", "False"),
                "stall": with_rules(wt.job_body("web-stall-1", stall), "3", "True"),
            },
        }
        wt.run_browser(tap, ctl, PAGE_JS, cfg, LIMIT_S, "", 5)
    finally:
        ctl.cleanup()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
