#!/usr/bin/python3
"""Hyperparameter tuning jobs with Debian's boto3 1.26 (botocore 1.29,
model M22) against trainctld --local-hosts 3: the cases of tuncases.py
(create, Describe parsed with datetimes, both paginators, stop, errors,
tags). The newer botocore runs them too (test_tuning_new.sh). TAP on
stdout.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smcompat as C  # noqa: E402

C.hermetic_env()
import botocore  # noqa: E402
import tuncases as T  # noqa: E402


def main():
    tap = C.Tap()
    tap.note("botocore %s (%s), trainctld %s" % (botocore.__version__, botocore.__file__, C.DAEMON))
    d, why = T.start_daemon()
    if not tap.ok(why is None, "trainctld --local-hosts 3 starts, its hosts ready", why):
        return tap.finish()
    tap.log_hint = d.log_tail
    T.Cases(tap, d, "m22").run()
    tap.case("daemon still alive after all cases", lambda: C.expect(d.alive(), d.log_tail()))
    if tap.failed:
        tap.note(d.log_tail(40))
    rc, killed = d.stop()
    tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit status %s\n%s" % (rc, d.log_tail()))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
