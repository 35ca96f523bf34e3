#!/usr/bin/python3
"""The status page's Members view in a real headless Chromium (Debian's
chromium driven by playwright-core from tests/tools, as test_page.py).

Starts three trainctld members on loopback (tests/integration/halib.py)
and opens the page through a follower (which forwards it to the leader);
tests/web/members_page.js checks that the view lists the three members,
the leader, each one heard from with its lag, and that a follower killed
shows as not heard from without a reload. Screenshots go to
build/test-artifacts/web/.

TAP on stdout. Run with Debian's interpreter from the top of the tree:
    /usr/bin/python3 tests/web/test_members_page.py
"""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import webtest as wt  # noqa: E402
import test_page  # noqa: E402
import halib  # noqa: E402

sc = wt.sc
PAGE_JS = os.path.join(HERE, "members_page.js")
LIMIT_S = 90


class Members:
    """What webtest.run_browser() asks of a controller, for a cluster."""

    def __init__(self, cluster, tmp):
        self.cluster = cluster
        self.tmp = tmp

    def log_tail(self, n=30):
        return "\n".join("--- member %d\n%s" % (m.id, "\n".join(m.log().splitlines()[-n:]))
                         for m in self.cluster.members)

    def stacks(self):
        return ""


def main():
    tap = sc.Tap()
    why = test_page.missing_tools()
    if why:
        tap.skip("members view in headless chromium", why)
        return tap.finish()
    if not os.access(halib.DAEMON, os.X_OK):
        tap.skip("members view in headless chromium", "%s is not built" % halib.DAEMON)
        return tap.finish()
    tmp = tempfile.mkdtemp(prefix="trainctl-web-members-")
    cl = halib.Cluster(tmp, extra=["--ha-election-ms", "400", "--ha-heartbeat-ms", "50"])
    try:
        cl.start()
        lead = cl.wait_leader()
        if not tap.ok(lead is not None, "three members elect a leader", Members(cl, tmp).log_tail(10)):
            return tap.finish()
        fol = [m for m in cl.members if m is not lead]
        os.makedirs(wt.ARTIFACTS, exist_ok=True)
        kill_path = os.path.join(tmp, "kill")
        cfg = {
            "url": fol[0].url,
            "artifacts": wt.ARTIFACTS,
            "modules": test_page.MODULES,
            "chromium": test_page.CHROMIUM,
            "leader": lead.id,
            "victim": fol[1].id,
            "kill": kill_path,
        }
        # The browser half asks for the victim's end by writing kill_path:
        # a thread here does it (node cannot signal a member's group).
        import threading
        import time

        def killer():
            end = time.time() + LIMIT_S
            while time.time() < end and not os.path.exists(kill_path):
                time.sleep(0.05)
            if os.path.exists(kill_path):
                fol[1].kill9()
        t = threading.Thread(target=killer, daemon=True)
        t.start()
        wt.run_browser(tap, Members(cl, tmp), PAGE_JS, cfg, LIMIT_S, "members-", 1,
                       "members screenshots")
    finally:
        cl.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
