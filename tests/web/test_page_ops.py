#!/usr/bin/python3
"""The status page with many jobs, in a real headless Chromium (as
tests/web/test_page.py; tests/web/page_ops.js does the browser part).

Starts trainctld with a local cluster of 5 hosts sampling telemetry every
500 ms: a 3-host job trains on 3 of them for the whole test (algo-3 keeps a
core busy, the others sleep; each host reports its own loss), the other 2
run about 200 jobs (tiny file:///bin/true and /bin/false jobs, mixed
states) and the jobs below. Checks the jobs list (load time, pages, sort,
filters kept in the URL, Stop, Clone), the logs (search, filters,
downloads, jump to the error), the plots (time / step, hover, final
metrics, compare, a line per host), the hosts' telemetry on the hosts page
and side by side on the job page (the busy host marked) and a 420 px wide
screen.
Screenshots go to build/test-artifacts/web/.

TAP on stdout. Run with Debian's interpreter from the top of the tree:
    /usr/bin/python3 tests/web/test_page_ops.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_page as tp  # noqa: E402
import webtest as wt  # noqa: E402

sc = wt.sc
PAGE_JS = os.path.join(wt.HERE, "page_ops.js")
LIMIT_S = 400
BULK = 200

# Runs until stopped.
LONG = r"""#!/bin/sh
echo "long job on $SM_CURRENT_HOST"
sleep 120
"""

# Trains until stopped: a loss of its own on every host twice a second;
# algo-3 also keeps a core busy, the others sleep in between.
TEL = r"""#!/bin/sh
n=${SM_CURRENT_HOST#algo-}
if [ "$SM_CURRENT_HOST" = algo-3 ]; then
	( while :; do :; done ) &
fi
i=1
while [ "$i" -le 3000 ]; do
	echo "step $i loss=$(awk "BEGIN { printf \"%.4f\", $n + 1 / $i }");"
	i=$((i + 1))
	sleep 0.5
done
"""
TEL_HOSTS = 3

# A log longer than the page's view of 5,000 lines, with a line to find
# that more than 5,000 lines follow.
BIGLOG = r"""#!/bin/sh
seq -f "filler line %g" 1 2000
echo "the needle in the haystack"
seq -f "after line %g" 1 5200
"""


def main():
    tap = sc.Tap()
    why = tp.missing_tools()
    if why:
        tap.skip("status page with many jobs in headless chromium", why)
        return tap.finish()
    ctl = wt.Controller(hosts=2 + TEL_HOSTS, args=["--telemetry-ms", "500"])
    try:
        err = ctl.start()
        if not tap.ok(err is None, "trainctld with a local cluster of %d hosts starts" % ctl.hosts, err):
            return tap.finish()
        scripts = os.path.join(ctl.tmp, "scripts")
        os.makedirs(scripts)
        good = wt.write_script(scripts, "good.sh", wt.GOOD)
        bad = wt.write_script(scripts, "bad.sh", wt.BAD)
        long_ = wt.write_script(scripts, "long.sh", LONG)
        tel = wt.write_script(scripts, "tel.sh", TEL)
        biglog = wt.write_script(scripts, "biglog.sh", BIGLOG)
        tel_body = wt.job_body("ops-tel", tel, count=TEL_HOSTS)
        tel_body["StoppingCondition"]["MaxRuntimeInSeconds"] = 1800
        env = {"EPOCHS": "4", "DELAY": "0.2"}
        long_body = wt.job_body("ops-long", long_, count=1)
        long_body["ResourceConfig"]["InstanceType"] = "ml.c5.xlarge"
        bulk = []
        for i in range(BULK):
            b = wt.job_body("bulk-%03d" % i, "/bin/false" if i % 5 == 4 else "/bin/true", count=1, metrics=[])
            if i % 10 == 0:
                b["Tags"] = [{"Key": "team", "Value": "red"}]
            bulk.append(b)
        os.makedirs(wt.ARTIFACTS, exist_ok=True)
        cfg = {
            "url": ctl.url,
            "artifacts": wt.ARTIFACTS,
            "modules": tp.MODULES,
            "chromium": tp.CHROMIUM,
            "jobs": {
                "a": wt.job_body("ops-good-a", good, env=env, hps={"learning_rate": "0.01", "epochs": "4"}),
                "b": wt.job_body("ops-good-b", good, env=env, hps={"learning_rate": "0.1", "epochs": "4"}),
                "bad": wt.job_body("ops-bad", bad),
                "long": long_body,
                "tel": tel_body,
                "big": wt.job_body("ops-biglog", biglog, count=1, metrics=[]),
            },
            "bulk": bulk,
        }
        wt.run_browser(tap, ctl, PAGE_JS, cfg, LIMIT_S, "ops-", 8)
    finally:
        ctl.cleanup()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
