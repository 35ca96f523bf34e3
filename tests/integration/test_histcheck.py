#!/usr/bin/python3
"""The history checker of the replicated controller's fault tests
(tests/integration/histcheck.py), on histories whose answer is known:

  (c1) a linearizable history with overlapping operations and operations
       of unknown outcome passes
  (c2)-(c7) each rule catches its violation: an acknowledged create
       missing (h1), a status going back (h2), two outcomes (h3), a job
       seen before it was created or stopped (h4), a stop undone (h5), a
       create acknowledged twice (h6)
  (c8) seeded random histories generated from a sequential model, each
       operation taking effect at an instant inside its interval, always
       pass; the same histories with one read made stale never do

TAP on stdout; no daemon. Run: /usr/bin/python3 tests/integration/test_histcheck.py
"""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "compat"))

import histcheck as hc  # noqa: E402
import smcompat as sc  # noqa: E402


def op(kind, name, t0, t1, result="ok", **kw):
    d = {"op": kind, "name": name, "t0": t0, "t1": t1, "result": result}
    d.update(kw)
    return d


def good_history():
    return [
        op("create", "a", 0.0, 1.0),
        op("describe", "a", 0.5, 0.8, status=None),      # overlaps the create
        op("describe", "a", 1.1, 1.2, status="InProgress"),
        op("create", "b", 1.0, 3.0, result="unknown"),  # may or may not exist
        op("describe", "b", 3.5, 3.6, status=None),
        op("stop", "a", 2.0, 4.0),
        op("describe", "a", 2.5, 2.6, status="InProgress"),  # stop not yet
        op("describe", "a", 3.0, 5.0, status="Stopping"),
        op("describe", "a", 5.5, 5.6, status="Stopped"),
        {"op": "list", "t0": 6.0, "t1": 6.1, "result": "ok", "names": ["a"]},
        op("create", "a", 6.5, 6.6, result="fail"),     # name in use
        op("describe", "a", 7.0, 7.1, result="unknown"),
    ]


def expect_rule(history, rule, final=None):
    v = hc.check(history, final=final)
    sc.expect(any(x.startswith(rule + ":") for x in v),
              "expected a %s violation, got %r" % (rule, v))


def case_good():
    v = hc.check(good_history(), final=["a"])
    sc.expect(v == [], "violations in a good history: %r" % v)


def case_missing():
    h = good_history() + [op("describe", "a", 8.0, 8.1, status=None)]
    expect_rule(h, "h1")
    expect_rule(good_history(), "h1", final=[])
    h = good_history() + [{"op": "list", "t0": 8.0, "t1": 8.1,
                           "result": "ok", "names": []}]
    expect_rule(h, "h1")


def case_backwards():
    h = good_history() + [op("describe", "a", 6.0, 6.2, status="Stopping")]
    expect_rule(h, "h2")


def case_two_outcomes():
    h = good_history() + [op("describe", "a", 9.0, 9.1, status="Failed")]
    expect_rule(h, "h3")


def case_too_early():
    h = [op("describe", "c", 0.0, 0.1, status="InProgress"),
         op("create", "c", 0.5, 0.6)]
    expect_rule(h, "h4")
    h = [op("create", "c", 0.0, 0.1),
         op("describe", "c", 0.2, 0.3, status="Stopping"),
         op("stop", "c", 0.5, 0.6)]
    expect_rule(h, "h4")
    sc.expect(not [x for x in hc.check(h, self_stopping=True)
                   if x.startswith("h4")],
              "a job that may stop on its own is not refused")


def case_stop_undone():
    h = [op("create", "d", 0.0, 0.1), op("stop", "d", 0.2, 0.3),
         op("describe", "d", 0.4, 0.5, status="InProgress")]
    expect_rule(h, "h5")


def case_twice():
    h = [op("create", "e", 0.0, 0.1), op("create", "e", 0.2, 0.3)]
    expect_rule(h, "h6")


def random_history(rng, jobs=6, clients=4, ops=120):
    """A history of a sequential model: each operation takes effect at an
    instant drawn inside its interval; clients overlap freely."""
    events = []
    clock = [0.0] * clients
    for _ in range(ops):
        c = rng.randrange(clients)
        t0 = clock[c] + rng.uniform(0.0, 0.5)
        t1 = t0 + rng.uniform(0.01, 2.0)
        clock[c] = t1
        at = rng.uniform(t0, t1)
        kind = rng.choice(["create", "create", "stop", "describe",
                           "describe", "describe", "list"])
        name = "j%d" % rng.randrange(jobs)
        events.append((at, kind, name, t0, t1))
    events.sort()
    state = {}
    history = []
    for at, kind, name, t0, t1 in events:
        unknown = rng.random() < 0.1
        if kind == "create":
            ok = name not in state
            if ok:
                state[name] = "InProgress"
            rec = op(kind, name, t0, t1, result="ok" if ok else "fail")
        elif kind == "stop":
            ok = state.get(name) == "InProgress"
            if ok:
                state[name] = "Stopping"
            rec = op(kind, name, t0, t1, result="ok" if ok else "fail")
        elif kind == "describe":
            rec = op(kind, name, t0, t1, status=state.get(name))
        else:
            rec = {"op": "list", "t0": t0, "t1": t1, "result": "ok",
                   "names": sorted(state)}
        # a stop finishes a moment later, as the controller's does
        for n, s in list(state.items()):
            if s == "Stopping" and rng.random() < 0.3:
                state[n] = "Stopped"
        if unknown:
            rec["result"] = "unknown"
            rec.pop("status", None)
            rec.pop("names", None)
        history.append(rec)
    return history, sorted(state)


def make_stale(rng, history):
    """One describe that saw Stopped (or Stopping) turned back to an
    earlier status after a read that saw the later one; None if there is
    no such pair."""
    reads = [r for r in history if r["op"] == "describe"
             and r["result"] == "ok" and r.get("status") in ("Stopping",
                                                            "Stopped")]
    rng.shuffle(reads)
    for a in reads:
        later = [b for b in history if b["op"] == "describe"
                 and b["result"] == "ok" and b.get("name") == a["name"]
                 and b["t0"] > a["t1"]]
        if later:
            b = rng.choice(later)
            b["status"] = "InProgress"
            return b
    return None


def case_random():
    rng = random.Random(39)
    mutated = 0
    for i in range(200):
        h, final = random_history(rng)
        v = hc.check(h, final=final)
        sc.expect(v == [], "seed 39 history %d: false alarm %r" % (i, v[:3]))
        if make_stale(rng, h):
            mutated += 1
            v = hc.check(h, final=final)
            sc.expect(any(x.startswith(("h2", "h5")) for x in v),
                      "history %d: a stale read went unnoticed" % i)
    sc.expect(mutated >= 50, "only %d histories could be made stale" % mutated)
    return mutated


def main():
    t = sc.Tap()
    t.case("(c1) a linearizable history passes", case_good)
    t.case("(c2) an acknowledged create missing is caught", case_missing)
    t.case("(c3) a status going back is caught", case_backwards)
    t.case("(c4) two outcomes are caught", case_two_outcomes)
    t.case("(c5) a job seen before its create or stop is caught",
           case_too_early)
    t.case("(c6) a stop undone is caught", case_stop_undone)
    t.case("(c7) a create acknowledged twice is caught", case_twice)
    t.case("(c8) random sequential histories pass; made stale, fail",
           case_random)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
