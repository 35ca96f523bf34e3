"""A checker of recorded client histories against a replicated controller,
in the spirit of Jepsen's: concurrent clients create, stop, describe and
list training jobs while the controllers' leader is killed, cut off or
frozen; each operation is recorded with the time it was invoked, the time
it completed and what it returned; the checker says whether the history is
linearizable for each job's status.

A job's status is a monotonic register: it only moves forward,

    (absent) -> InProgress -> Stopping -> Stopped
                           \\-> Completed | Failed

so a history is linearizable for it when every operation can take effect
at one instant between its invocation and its completion, which for such a
register comes down to pairwise rules between operations that do not
overlap in time (A completed before B was invoked: B takes effect after A):

  (h1) an acknowledged create is never missing: a describe or a list
       invoked after the create's acknowledgement finds the job, and so
       does the final read of the cluster;
  (h2) no status goes backwards: a read invoked after another read of the
       same job completed sees a status at least as far along;
  (h3) no two outcomes: the job ends in at most one terminal status;
  (h4) nothing is seen before it could have happened: a job is not seen
       before its create was invoked, nor Stopping/Stopped before a stop
       of it was invoked (when jobs cannot stop on their own);
  (h5) an acknowledged stop holds: a read invoked after a stop's
       acknowledgement does not see the job InProgress;
  (h6) one create wins: two creates of one name are not both acknowledged.

Operations whose outcome is not known (a timeout, a connection lost after
the request was sent) may or may not have taken effect; they constrain
nothing, as in Jepsen's "info" results.

An operation is a dict:
    {"op": "create" | "stop" | "describe" | "list",
     "name": job name (not for list),
     "t0": invoked (seconds, one clock for every client),
     "t1": completed,
     "result": "ok" | "fail" | "unknown",
     "status": for a describe that answered: the status, or None when the
               job was not found,
     "names": for a list that answered: the names it returned}

check(history, final=None, self_stopping=False) returns a list of
violations (strings); empty when the history is linearizable. final is the
list of names a quiet cluster returns at the end (every acknowledged create
must be in it).
"""

ORDER = {"InProgress": 1, "Stopping": 2, "Stopped": 3, "Completed": 3,
         "Failed": 3}
TERMINAL = ("Stopped", "Completed", "Failed")


def _rank(status):
    if status not in ORDER:
        raise ValueError("unknown status %r" % (status,))
    return ORDER[status]


def _reads(history):
    """(op, name, status or None) for every answered read of a job:
    describes, and each name a list returned (status unknown: None is
    'not found' only for describes, so lists give ("list", name, True))."""
    out = []
    for op in history:
        if op["result"] != "ok":
            continue
        if op["op"] == "describe":
            out.append((op, op["name"], op.get("status")))
        elif op["op"] == "list":
            for n in op.get("names") or ():
                out.append((op, n, True))
    return out


def _fmt(op):
    what = op["op"] + (" " + op["name"] if op.get("name") else "")
    return "%s [%.3f, %.3f] %s" % (what, op["t0"], op["t1"], op["result"])


def _check_creates(history, reads, final, out):
    acked = {}
    invoked = {}
    for op in history:
        if op["op"] != "create":
            continue
        invoked.setdefault(op["name"], []).append(op)
        if op["result"] == "ok":
            if op["name"] in acked:
                out.append("h6: %s acknowledged twice: %s and %s" % (
                    op["name"], _fmt(acked[op["name"]]), _fmt(op)))
            acked.setdefault(op["name"], op)
    lists = [op for op in history if op["op"] == "list" and op["result"] == "ok"]
    for name, c in acked.items():
        for op, n, st in reads:
            if n == name and op["op"] == "describe" and st is None \
                    and op["t0"] > c["t1"]:
                out.append("h1: %s acknowledged by %s, not found by %s" % (
                    name, _fmt(c), _fmt(op)))
        for op in lists:
            if op["t0"] > c["t1"] and name not in (op.get("names") or ()):
                if not op.get("partial"):
                    out.append("h1: %s acknowledged by %s, not listed by %s"
                               % (name, _fmt(c), _fmt(op)))
        if final is not None and name not in final:
            out.append("h1: %s acknowledged by %s, missing at the end"
                       % (name, _fmt(c)))
    for op, n, st in reads:
        if st is None:
            continue
        first = min((c["t0"] for c in invoked.get(n, ())), default=None)
        if first is None or op["t1"] < first:
            out.append("h4: %s seen by %s before any create of it was "
                       "invoked" % (n, _fmt(op)))
    return acked


def _check_job(name, ops, self_stopping, out):
    reads = [op for op in ops if op["op"] == "describe"
             and op["result"] == "ok" and op.get("status")]
    stops = [op for op in ops if op["op"] == "stop"]
    # h2: real-time order between reads
    for a in reads:
        for b in reads:
            if a["t1"] < b["t0"] and _rank(b["status"]) < _rank(a["status"]):
                out.append("h2: %s went back from %s (%s) to %s (%s)" % (
                    name, a["status"], _fmt(a), b["status"], _fmt(b)))
    # h3: one outcome
    ends = sorted({op["status"] for op in reads if op["status"] in TERMINAL})
    if len(ends) > 1:
        out.append("h3: %s has two outcomes: %s" % (name, ", ".join(ends)))
    # h4: not stopped before a stop was invoked
    if not self_stopping:
        first_stop = min((s["t0"] for s in stops), default=None)
        for op in reads:
            if op["status"] in ("Stopping", "Stopped") and (
                    first_stop is None or op["t1"] < first_stop):
                out.append("h4: %s seen %s by %s before any stop of it was "
                           "invoked" % (name, op["status"], _fmt(op)))
    # h5: an acknowledged stop holds
    for s in stops:
        if s["result"] != "ok":
            continue
        for op in reads:
            if op["t0"] > s["t1"] and op["status"] == "InProgress":
                out.append("h5: %s stopped by %s, InProgress again in %s" % (
                    name, _fmt(s), _fmt(op)))


def check(history, final=None, self_stopping=False):
    """The violations of history (a list of operation dicts); [] if none."""
    out = []
    for op in history:
        if op["t1"] < op["t0"]:
            out.append("bad record: %s completes before it starts" % _fmt(op))
        if op["result"] not in ("ok", "fail", "unknown"):
            out.append("bad record: %s" % _fmt(op))
    if out:
        return out
    reads = _reads(history)
    _check_creates(history, reads, final, out)
    by_name = {}
    for op in history:
        if op.get("name"):
            by_name.setdefault(op["name"], []).append(op)
    for name in sorted(by_name):
        _check_job(name, by_name[name], self_stopping, out)
    return out


def summary(history):
    """Counts per operation and result, for a report."""
    counts = {}
    for op in history:
        key = "%s %s" % (op["op"], op["result"])
        counts[key] = counts.get(key, 0) + 1
    return ", ".join("%s: %d" % kv for kv in sorted(counts.items()))
