"""Helpers of bench/goodput.py: the program's ground truth read as it
grows, the processes of a run found in /proc, faults on a namespace host,
and the figures computed from the truth (ETTR, lost work per failure)."""
import json
import os
import re
import signal
import statistics
import time

import graylib as gl
from graylib import fl

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "goodput_prog.py")
RESTORE_RE = re.compile(r"restored in (\d+) ms.*\(source: (\w+)\)")
EMPTY_RE = re.compile(r"checkpoint: 0 files \(0 bytes\) restored")


class Truth:
    """The program's ground truth file (rank 0's JSON lines), read
    incrementally."""

    def __init__(self, path):
        self.path, self.off, self.events, self.part = path, 0, [], b""

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.off)
                data = f.read()
        except OSError:
            return self.events
        self.off += len(data)
        data = self.part + data
        lines = data.split(b"\n")
        self.part = lines.pop()
        for x in lines:
            try:
                self.events.append(json.loads(x))
            except ValueError:
                pass
        return self.events

    def last_step_t(self):
        for e in reversed(self.poll()):
            if e["ev"] == "step":
                return e["t1"]
        return None

    def training(self, within=3.0):
        t = self.last_step_t()
        return t is not None and time.time() - t < within


def marked(marker):
    """Every process whose environment holds GP_MARKER=marker."""
    want = ("GP_MARKER=%s" % marker).encode()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
            if want in env:
                out.append((int(d), env))
        except OSError:
            pass
    return out


def argv_of(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def rank_procs(marker):
    """{rank: [pid]} of the program's processes (not its launchers)."""
    out = {}
    for pid, env in marked(marker):
        argv = argv_of(pid)
        if not argv or "python" not in argv[0] or not any(a.endswith("goodput_prog.py") for a in argv):
            continue
        if "torch.distributed.run" in argv:
            continue
        kv = dict(e.split(b"=", 1) for e in env if b"=" in e)
        r = kv.get(b"RANK", kv.get(b"SLURM_PROCID"))
        if r is not None:
            out.setdefault(int(r), []).append(pid)
    return out


def kill_marker(marker):
    for sig in (signal.SIGCONT, signal.SIGKILL):
        fl.kill_pids([p for p, _ in marked(marker)], sig)


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def trainagent_pid(cl, node):
    """The trainagent daemon in node's namespace (not the watchdog that
    starts it again, not its forked workers: the oldest)."""
    c = [pid for pid, argv in fl.proc_argvs()
         if argv and os.path.basename(argv[0]) == "trainagent" and "--controller" in argv
         and argv[1:2] != ["watchdog"]]
    mine = cl.netns_pids(node, c)
    return [min(mine)] if mine else []


def power_off(cl, node):
    """A host removed for good: its link down and every process in its
    network namespace but sshd killed (what a powered-off host runs)."""
    cl.link(node, up=False)
    pids = [p for p in cl.netns_pids(node, all_pids())
            if p != os.getpid() and not (argv_of(p)[:1] and "sshd" in argv_of(p)[0])]
    fl.kill_pids(pids, signal.SIGKILL)


# ------------------------------------------------------------ figures

def trajectory(events, t_end):
    """{step: step event} of the steps that count at t_end: a start
    resuming from step R drops the steps after R made before it."""
    keep = {}
    def when(e):
        return e["t1"] if e["ev"] == "step" else e["t"]
    for e in sorted((e for e in events if when(e) <= t_end), key=when):
        if e["ev"] == "start":
            for s in [s for s in keep if s > e["resumed"]]:
                del keep[s]
        elif e["ev"] == "step":
            keep[e["step"]] = e
    return keep


def ettr(events, t0, t_end):
    """(ETTR, productive s, steps that count, ckpt stall s) over
    [t0, t_end]."""
    keep = trajectory(events, t_end)
    prod = sum(e["t1"] - e["t0"] for e in keep.values())
    stall = sum(e["s"] for e in events if e["ev"] == "ckpt" and e["t"] <= t_end)
    return prod / (t_end - t0), prod, len(keep), stall


def per_fault(events, faults, t_end, step_s):
    """For each fault (abs time tf): the steps redone, the time from the
    last step before it to the first step after the restart (restart),
    and the wall time lost (to the first step past where it had got,
    less one step's nominal time); None where nothing restarted."""
    steps = sorted((e for e in events if e["ev"] == "step"), key=lambda e: e["t1"])
    starts = sorted((e for e in events if e["ev"] == "start"), key=lambda e: e["t"])
    out = []
    for k, f in enumerate(faults):
        tf = f["t"]
        tnext = faults[k + 1]["t"] if k + 1 < len(faults) else t_end
        before = [e for e in steps if e["t1"] <= tf]
        if not before:
            out.append(dict(f, restart=None, redone=None, lost=None, note="before the first step"))
            continue
        last = before[-1]
        st = next((s for s in starts if tf < s["t"] <= tnext), None)
        after = [e for e in steps if e["t1"] > tf and e["t1"] <= tnext]
        if st is None:
            gaps = [b["t1"] - a["t1"] for a, b in zip([last] + after, after)]
            lost = max(gaps) - step_s if gaps else tnext - last["t1"]
            out.append(dict(f, restart=None, redone=0, lost=max(0.0, lost), note="no restart"))
            continue
        again = [e for e in after if e["t1"] > st["t"]]
        new = [e for e in again if e["step"] > last["step"]]
        restart = (again[0]["t1"] - last["t1"]) if again else None
        lost = (new[0]["t1"] - last["t1"] - step_s) if new else (tnext - last["t1"])
        out.append(dict(f, restart=restart, redone=last["step"] - st["resumed"], lost=lost,
                        note="" if new else "not past its step before the next fault or the end"))
    return out


def stats(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return {"n": len(xs), "median": statistics.median(xs), "min": xs[0], "max": xs[-1], "sum": sum(xs)}


def fmt(xs, unit=""):
    s = stats(xs)
    if not s:
        return "-"
    if s["n"] == 1:
        return "%.1f%s" % (s["median"], unit)
    return "%.1f (%.1f-%.1f)%s" % (s["median"], s["min"], s["max"], unit)


def restores(lines):
    """[(source, ms)] of the agent's restore lines in a job's log (not
    those of an empty prefix: a first attempt has nothing to restore)."""
    out = []
    for x in lines:
        m = RESTORE_RE.search(x)
        if m and not EMPTY_RE.search(x):
            out.append((m.group(2), int(m.group(1))))
    return out


def wait_for(pred, timeout, interval=0.2, what="condition"):
    return gl.wait_for(pred, timeout, interval, what)
