#!/usr/bin/env python3
"""Circles between the .c files of each folder.

    scripts/include-graph.py [--calls BUILD_OBJ_DIR] [--fan-in] FOLDER...

Include graph (default): an edge a.c -> b.c when a.c includes "x/b.h" (a
header named after another .c file of the same folder). A header with no
.c of its own name (a folder's shared types) adds no edge.

Call graph (--calls build/obj): an edge a.c -> b.c when a.o uses a symbol
that b.o defines (nm), whatever header declared it.

Prints, per folder, every strongly connected component of more than two
files (a circle longer than two). --fan-in also prints how many .c files of
the folder include each of its headers.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def include_edges(folder):
    cs = sorted(f for f in os.listdir(folder) if f.endswith(".c"))
    names = {f[:-2] for f in cs}
    edges = {c[:-2]: set() for c in cs}
    for c in cs:
        with open(os.path.join(folder, c), encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            d, _, h = inc.rpartition("/")
            if d != folder.rstrip("/") or not h.endswith(".h"):
                continue
            t = h[:-2]
            if t in names and t != c[:-2]:
                edges[c[:-2]].add(t)
    return edges


def nm_symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True,
                         check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def call_edges(folder, objdir):
    cs = sorted(f[:-2] for f in os.listdir(folder) if f.endswith(".c"))
    defs, uses = {}, {}
    for c in cs:
        obj = os.path.join(objdir, folder, c + ".o")
        if os.path.exists(obj):
            defs[c], uses[c] = nm_symbols(obj)
    owner = {}
    for c, ds in defs.items():
        for s in ds:
            owner[s] = c
    edges = {c: set() for c in defs}
    for c, us in uses.items():
        for s in us:
            t = owner.get(s)
            if t and t != c:
                edges[c].add(t)
    return edges


def sccs(edges):
    """Tarjan's algorithm, iterative."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in edges:
                    continue
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def fan_in(folder):
    cs = sorted(f for f in os.listdir(folder) if f.endswith(".c"))
    hs = sorted(f for f in os.listdir(folder) if f.endswith(".h"))
    texts = {}
    for c in cs:
        with open(os.path.join(folder, c), encoding="utf-8") as fh:
            texts[c] = set(INCLUDE.findall(fh.read()))
    print(f"{folder}: {len(cs)} .c files")
    for h in hs:
        n = sum(1 for c in cs if f"{folder.rstrip('/')}/{h}" in texts[c])
        print(f"  {n:3d}  {h}")


def main(argv):
    objdir = None
    show_fan_in = False
    folders = []
    i = 0
    while i < len(argv):
        if argv[i] == "--calls":
            objdir = argv[i + 1]
            i += 2
            continue
        if argv[i] == "--fan-in":
            show_fan_in = True
        else:
            folders.append(argv[i].rstrip("/"))
        i += 1
    if not folders:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    found = 0
    for folder in folders:
        if show_fan_in:
            fan_in(folder)
        edges = call_edges(folder, objdir) if objdir else \
            include_edges(folder)
        n_edges = sum(len(v) for v in edges.values())
        big = [c for c in sccs(edges) if len(c) > 2]
        print(f"{folder}: {len(edges)} files, {n_edges} edges, "
              f"{len(big)} circle(s) longer than 2")
        for comp in sorted(big, key=len, reverse=True):
            found += 1
            print(f"  {len(comp)}: " + " ".join(comp))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
