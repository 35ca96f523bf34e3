#!/usr/bin/env python3
"""The tree's shape, measured: what docs/architecture.md promises.

  scripts/health.py          a report, one section per rule
  scripts/health.py --tap    the same rules as TAP checks (tests/run.sh)

Rules (docs/architecture.md, "Rules of the tree"):
  1. no function outside tests/ and generated code above cyclomatic
     complexity 25 or 120 lines (pmccabe's traditional count);
  2. no source file outside generated code above 1,200 lines;
  3. controller/'s own files (not its wings) form no include circle of
     more than two files, and no wing has one of more than two either;
  4. no agent/ header is included by more than half of agent/'s files;
  5. folders import down only: api/ and db/ nothing of ours but common/,
     storage/ nothing but api/ (wire formats) and common/.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATED = {"api/model_gen.c"}
SOURCE_ENDINGS = (".c", ".h", ".py", ".js", ".sh", ".lua", ".css", ".html")
MAX_CC, MAX_LINES, MAX_FILE = 25, 120, 1200
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# What each folder may include of ours besides itself.
MAY_INCLUDE = {"api": {"common"}, "db": {"common"}, "common": set(),
               "storage": {"api", "common"}}


def tracked():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split("\n")
    return [f for f in out if f and os.path.isfile(os.path.join(ROOT, f))]


def c_sources(files):
    return [f for f in files if f.endswith(".c") and not f.startswith("tests/")
            and f not in GENERATED]


def functions(files):
    """(cc, lines, where) of every function pmccabe finds."""
    r = subprocess.run(["pmccabe"] + c_sources(files), cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode not in (0, 1) or not r.stdout:
        raise RuntimeError("pmccabe failed: %s" % r.stderr[-300:])
    rows = []
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if len(f) >= 6:
            rows.append((int(f[0]), int(f[4]), f[5]))
    return rows


def long_files(files):
    bad = []
    for f in files:
        if f in GENERATED or not f.endswith(SOURCE_ENDINGS) or "/data/" in f:
            continue
        with open(os.path.join(ROOT, f), "rb") as fh:
            n = fh.read().count(b"\n")
        if n > MAX_FILE:
            bad.append((n, f))
    return sorted(bad, reverse=True)


def includes(path):
    with open(os.path.join(ROOT, path), errors="replace") as fh:
        return INCLUDE.findall(fh.read())


def module_graph(files, folder, deep):
    """Edges between the modules (x.c with its x.h) of folder: a -> b
    when a's .c or .h includes b's header. deep: subfolders too."""
    def inside(f):
        d = os.path.dirname(f)
        return d == folder or (deep and d.startswith(folder + "/"))
    mods = {f[:-2] for f in files if inside(f) and f.endswith((".c", ".h"))}
    edges = {m: set() for m in mods}
    for m in mods:
        for ext in (".c", ".h"):
            if m + ext not in files:
                continue
            for inc in includes(m + ext):
                if inc.endswith(".h") and inc[:-2] in mods and inc[:-2] != m:
                    edges[m].add(inc[:-2])
    return edges


def circles(edges):
    """Strongly connected components with more than one module."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def folders_with_code(files, top):
    return sorted({os.path.dirname(f) for f in files
                   if f.startswith(top + "/") and f.endswith(".c")})


def header_fan_in(files, folder):
    cs = [f for f in files if os.path.dirname(f) == folder and f.endswith(".c")]
    counts = {}
    for h in (f for f in files if os.path.dirname(f) == folder and f.endswith(".h")):
        counts[h] = sum(h in includes(c) for c in cs)
    return len(cs), counts


def bad_imports(files):
    bad = []
    for f in files:
        top = f.split("/")[0]
        if top not in MAY_INCLUDE or not f.endswith((".c", ".h")):
            continue
        for inc in includes(f):
            other = inc.split("/")[0]
            if "/" in inc and other != top and other not in MAY_INCLUDE[top] \
                    and os.path.isdir(os.path.join(ROOT, other)):
                bad.append("%s includes %s" % (f, inc))
    return bad


def checks():
    """(ok, name, detail) for each rule."""
    files = tracked()
    fs = set(files)
    out = []
    try:
        rows = functions(files)
        over = sorted(r for r in rows if r[0] > MAX_CC or r[1] > MAX_LINES)
        out.append((not over, "no function above cc %d or %d lines (%d functions read)"
                    % (MAX_CC, MAX_LINES, len(rows)),
                    "\n".join("cc %d, %d lines: %s" % r for r in reversed(over))))
    except (OSError, RuntimeError) as e:
        out.append((False, "pmccabe measures the functions (make deps installs it)", str(e)))
    big = long_files(files)
    out.append((not big, "no source file above %d lines" % MAX_FILE,
                "\n".join("%d %s" % b for b in big)))
    core = circles(module_graph(fs, "controller", False))
    out.append((all(len(c) <= 2 for c in core),
                "controller/'s own files have no include circle of more than 2",
                "\n".join(" -> ".join(c) for c in core)))
    wings = []
    for d in folders_with_code(files, "controller"):
        if d != "controller":
            wings += [c for c in circles(module_graph(fs, d, True)) if len(c) > 2]
    out.append((not wings, "controller/'s wings have no include circle of more than 2",
                "\n".join(" -> ".join(c) for c in wings)))
    n, counts = header_fan_in(files, "agent")
    wide = sorted((k, h) for h, k in counts.items() if k > n // 2)
    out.append((not wide, "no agent/ header is included by more than half of its %d files" % n,
                "\n".join("%s: %d files" % (h, k) for k, h in wide)))
    imports = bad_imports(files)
    out.append((not imports, "api/, db/ and storage/ import only down",
                "\n".join(imports)))
    return out


def main():
    tap = "--tap" in sys.argv[1:]
    results = checks()
    if tap:
        print("1..%d" % len(results))
    failed = 0
    for i, (ok, name, detail) in enumerate(results, 1):
        failed += not ok
        if tap:
            print("%sok %d - %s" % ("" if ok else "not ", i, name))
            for line in (detail.splitlines() if not ok else []):
                print("# " + line)
        else:
            print("%s %s" % ("ok  " if ok else "FAIL", name))
            for line in detail.splitlines():
                print("     " + line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
