#!/usr/bin/env python3
"""The tree's shape, measured: what docs/architecture.md promises.

  scripts/health.py          a report, one section per rule
  scripts/health.py --tap    the same rules as TAP checks (tests/run.sh)
  scripts/health.py graph [--calls build/obj] FOLDER...
                             one folder's circles (of includes, or of the
                             symbols its objects use) and its headers' fan-in

Rules (docs/architecture.md, "Rules of the tree"):
  1. no function outside tests/ and generated code above cyclomatic
     complexity 25 or 120 lines (pmccabe's traditional count);
  2. no source file outside generated code above 1,200 lines;
  3. controller/'s own modules (x.c with x.h; not its wings) form no
     include circle of more than two, and no wing has one either;
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
    """Circles of more than two modules, one per set of modules: for each
    edge u -> v, the shortest way back from v to u that does not take the
    edge v -> u. A star of two-module circles around one shared header
    (a context every module includes and that names their types) holds
    no longer circle and is not reported."""
    out, seen = [], set()
    for u in sorted(edges):
        for v in sorted(edges[u]):
            prev, queue = {v: None}, [v]
            while queue and u not in prev:
                nxt = []
                for x in queue:
                    for y in sorted(edges.get(x, ())):
                        if (x, y) == (v, u) or y in prev:
                            continue
                        prev[y] = x
                        nxt.append(y)
                queue = nxt
            if u not in prev:
                continue
            path, x = [], u
            while x is not None:
                path.append(x)
                x = prev[x]
            path.reverse()  # v ... u
            cycle = [u] + path[:-1]
            key = frozenset(cycle)
            if len(cycle) > 2 and key not in seen:
                seen.add(key)
                out.append(cycle)
    return sorted(out, key=len, reverse=True)


def call_graph(folder, objdir):
    """Edges a -> b when a.o uses a symbol b.o defines (nm)."""
    defs, uses = {}, {}
    for c in sorted(f[:-2] for f in os.listdir(os.path.join(ROOT, folder))
                    if f.endswith(".c")):
        obj = os.path.join(objdir, folder, c + ".o")
        if not os.path.exists(obj):
            continue
        out = subprocess.run(["nm", obj], capture_output=True, text=True,
                             check=True).stdout
        d, u = set(), set()
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBR":
                d.add(f[2])
            elif len(f) == 2 and f[0] == "U":
                u.add(f[1])
        defs[folder + "/" + c], uses[folder + "/" + c] = d, u
    owner = {sym: c for c, ds in defs.items() for sym in ds}
    return {c: {owner[x] for x in us if x in owner and owner[x] != c}
            for c, us in uses.items()}


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


def graph(argv):
    """health.py graph [--calls OBJDIR] FOLDER...: each folder's circles of
    more than two modules (includes, or with --calls the symbols its
    objects use), and how many .c files include each of its headers."""
    files = set(tracked())
    objdir = None
    if argv[:1] == ["--calls"]:
        objdir, argv = argv[1], argv[2:]
    found = 0
    for folder in (a.rstrip("/") for a in argv):
        edges = call_graph(folder, objdir) if objdir else \
            module_graph(files, folder, False)
        big = circles(edges)
        found += len(big)
        print("%s: %d modules, %d edges, %d circle(s) of more than 2" % (
            folder, len(edges), sum(map(len, edges.values())), len(big)))
        for c in big:
            print("  " + " -> ".join(m.split("/")[-1] for m in c))
        n, counts = header_fan_in(sorted(files), folder)
        for h, k in sorted(counts.items(), key=lambda x: -x[1]):
            print("  %3d of %d files include %s" % (k, n, h))
    return 1 if found else 0


def main():
    if sys.argv[1:2] == ["graph"]:
        return graph(sys.argv[2:])
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
