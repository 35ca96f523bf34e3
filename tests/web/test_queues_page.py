#!/usr/bin/python3
"""The status page's queues view in a real headless Chromium (Debian's
chromium driven by playwright-core from tests/tools, as test_page.py).

Starts trainctld with a local cluster of 2 hosts, makes an AWS Batch job
queue with two quota shares of 1 host each (vision and nlp, lending and
borrowing), runs a two-host service job in vision (it borrows nlp's host)
and makes a two-host job in nlp wait, then checks (tests/web/queues_page.js
does the browser part) that the queues view shows each share's guarantee,
in use, borrowed and lent hosts, a chart per share that grows without a
reload, and the waiting job with its place and reason. Screenshots go to
build/test-artifacts/web/.

TAP on stdout. Run with Debian's interpreter from the top of the tree:
    /usr/bin/python3 tests/web/test_queues_page.py
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webtest as wt  # noqa: E402
import test_page  # noqa: E402

sc = wt.sc
PAGE_JS = os.path.join(wt.HERE, "queues_page.js")
LIMIT_S = 120


def payload(name, script, count):
    body = wt.job_body(name, script, count=count)
    body["StoppingCondition"] = {"MaxRuntimeInSeconds": 120}
    return json.dumps(body)


def main():
    tap = sc.Tap()
    why = test_page.missing_tools()
    if why:
        tap.skip("queues view in headless chromium", why)
        return tap.finish()
    ctl = wt.Controller(hosts=2)
    try:
        err = ctl.start()
        if not tap.ok(err is None, "trainctld with a local cluster of 2 hosts starts", err):
            return tap.finish()
        scripts = os.path.join(ctl.tmp, "scripts")
        os.makedirs(scripts)
        sleeper = wt.write_script(scripts, "sleep.sh", "#!/bin/sh\nsleep 60\n")
        os.makedirs(wt.ARTIFACTS, exist_ok=True)
        cfg = {
            "url": ctl.url,
            "artifacts": wt.ARTIFACTS,
            "modules": test_page.MODULES,
            "chromium": test_page.CHROMIUM,
            "big": payload("web-q-big", sleeper, 2),
            "wait": payload("web-q-wait", sleeper, 2),
        }
        wt.run_browser(tap, ctl, PAGE_JS, cfg, LIMIT_S, "queues-", 1, "queues screenshots")
    finally:
        ctl.cleanup()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
