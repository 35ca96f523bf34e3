#!/usr/bin/env python3
"""Generate api/model_gen.c from botocore's SageMaker service models.

Reads two generations of the SageMaker service model and merges them:

  M22  Debian botocore 1.29 (python3-botocore):
       /usr/lib/python3/dist-packages/botocore/data/sagemaker/2017-07-24/
       service-2.json
  M26  the newest other botocore that can be found (pyenv's 1.43 here):
       <botocore>/data/sagemaker/2017-07-24/service-2.json.gz

and writes C tables (types in api/model.h) for every shape reachable from the
input shapes of the training-job operations. Merge rules:

  - members of a structure: union of both models, M26's order first;
    a member whose shape differs between the models takes M26's shape
  - required: M26's list (the newer, looser model), except the members in
    KEEP_REQUIRED, which the controller needs to run a job
  - enum values: union (M26's order, then values only M22 has)
  - min / max / pattern: M26's when present, else M22's; a pattern that
    differs only by a leading '^' or trailing '$' keeps M22's text, because
    the real service prints the anchored form and the validator matches the
    whole string anyway
  - OVERRIDES: member shapes pinned on purpose (see the comment there)

It also reads scripts/training_members.py, what the controller does with
each member of CreateTrainingJobRequest, fails when a member of the merged
model has no class there, and writes api/members_gen.c (the refused members,
for api/members.c) and the members table of docs/api-compatibility.md
(between its markers). --check writes nothing and exits 1 when anything it
would write differs from the files (tests/compat/test_members.sh).

Usage: scripts/gen_model.py [--m22 FILE] [--m26 FILE] [-o api/model_gen.c]
                            [--check]

Without --m26 the script looks for botocore in this interpreter, in the
`python3` on PATH and under ~/.pyenv; when no M26 model is found it generates
from M22 alone and says so on stderr. Standard library only.
"""

import argparse
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

OPERATIONS = [
    "CreateTrainingJob",
    "DescribeTrainingJob",
    "ListTrainingJobs",
    "StopTrainingJob",
    "DeleteTrainingJob",  # M26 only
    "UpdateTrainingJob",
    "AddTags",
    "ListTags",
    "DeleteTags",
    "Search",
    "CreateHyperParameterTuningJob",
    "DescribeHyperParameterTuningJob",
    "ListHyperParameterTuningJobs",
    "StopHyperParameterTuningJob",
    "DeleteHyperParameterTuningJob",  # M26 only
    "ListTrainingJobsForHyperParameterTuningJob",
]

# Required although M26 relaxed them (ServerlessJobConfig needs neither):
# the controller cannot run a job without an image and instances.
KEEP_REQUIRED = {
    "CreateTrainingJobRequest": ["AlgorithmSpecification", "ResourceConfig"],
}

# (structure, member) -> shape, applied after the merge. M26 moved
# ResourceConfig.VolumeSizeInGB to OptionalVolumeSizeInGB (min 0) for
# serverless jobs, which have no ResourceConfig; since ResourceConfig stays
# required here, a 0 GB volume is still an error (M22's VolumeSizeInGB, min 1).
OVERRIDES = {
    ("ResourceConfig", "VolumeSizeInGB"): "VolumeSizeInGB",
}

# Product decisions on top of the models (docs/api-compatibility.md):
# file:// URIs are accepted wherever an S3 URI is (as SageMaker local mode
# does), and SageMaker local mode's instance types name the local cluster.
PRODUCT_PATTERNS = {
    "S3Uri": "^(https|s3|file)://([^/]*)/?(.*)$",
}
PRODUCT_ENUMS = {
    "TrainingInstanceType": ["local", "local_gpu"],
}

MODEL_REL = os.path.join("data", "sagemaker", "2017-07-24")
M22_DEFAULT = ("/usr/lib/python3/dist-packages/botocore/" + MODEL_REL +
               "/service-2.json")

KINDS = {
    "structure": "API__STRUCTURE",
    "list": "API__LIST",
    "map": "API__MAP",
    "string": "API__STRING",
    "integer": "API__INTEGER",
    "long": "API__LONG",
    "float": "API__FLOAT",
    "double": "API__DOUBLE",
    "boolean": "API__BOOLEAN",
    "timestamp": "API__TIMESTAMP",
    "blob": "API__BLOB",
}

# Java's POSIX classes (\p{Alnum} ...), which PCRE2 does not know, as the
# inside of a bracket expression. Java's are ASCII-only, like these.
JAVA_CLASSES = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": "!-/:-@\\[-`{-~",
    "Graph": "!-~",
    "Print": " -~",
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}


def warn(msg):
    sys.stderr.write("gen_model.py: " + msg + "\n")


def load_model(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def model_file(botocore_dir):
    """The SageMaker model file under a botocore package dir, or None."""
    for name in ("service-2.json.gz", "service-2.json"):
        p = os.path.join(botocore_dir, MODEL_REL, name)
        if os.path.isfile(p):
            return p
    return None


def botocore_version(botocore_dir):
    try:
        with open(os.path.join(botocore_dir, "__init__.py"),
                  encoding="utf-8") as f:
            m = re.search(r"""__version__\s*=\s*['"]([^'"]+)['"]""",
                          f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def version_key(v):
    return tuple(int(x) if x.isdigit() else 0 for x in (v or "0").split("."))


def find_botocore_dirs():
    """Every botocore package dir we can find, by several routes."""
    dirs = []
    try:
        import botocore  # noqa: F401 (only its location is used)
        dirs.append(os.path.dirname(botocore.__file__))
    except Exception:
        pass
    py = shutil.which("python3")
    if py:
        try:
            out = subprocess.run(
                [py, "-c",
                 "import botocore,os;print(os.path.dirname(botocore.__file__))"],
                capture_output=True, text=True, timeout=60, check=False)
            if out.returncode == 0 and out.stdout.strip():
                dirs.append(out.stdout.strip().splitlines()[-1])
        except (OSError, subprocess.SubprocessError):
            pass
    home = os.path.expanduser("~")
    for pat in (home + "/.pyenv/versions/*/lib/python3*/site-packages/botocore",
                home + "/.local/lib/python3*/site-packages/botocore",
                "/usr/local/lib/python3*/dist-packages/botocore",
                "/usr/local/lib/python3*/site-packages/botocore"):
        dirs.extend(sorted(glob.glob(pat)))
    seen = []
    for d in dirs:
        d = os.path.realpath(d)
        if d not in seen:
            seen.append(d)
    return seen


def find_m26(m22_path):
    """The newest botocore model that is not the M22 file, or None."""
    m22_real = os.path.realpath(m22_path)
    best = None
    for d in find_botocore_dirs():
        p = model_file(d)
        if not p or os.path.realpath(p) == m22_real:
            continue
        v = botocore_version(d)
        if best is None or version_key(v) > version_key(best[1]):
            best = (p, v)
    return best


def version_of_file(path):
    """botocore version for a model file inside a botocore package."""
    d = os.path.dirname(path)
    for _ in range(3):
        d = os.path.dirname(d)
    return botocore_version(d) or "unknown"


def strip_anchors(p):
    if p.startswith("^"):
        p = p[1:]
    if p.endswith("$") and not p.endswith("\\$"):
        p = p[:-1]
    return p


def merge_pattern(p22, p26):
    if p26 is None:
        return p22
    if p22 is not None and strip_anchors(p22) == strip_anchors(p26):
        return p22
    return p26


def override(struct, member, shape, shapes):
    """OVERRIDES' shape for struct.member when the models have it."""
    pinned = OVERRIDES.get((struct, member))
    if pinned is None or pinned == shape:
        return shape
    if pinned not in shapes:
        warn("%s.%s: pinned shape %s missing; using %s"
             % (struct, member, pinned, shape))
        return shape
    return pinned


def merge_shape(name, s22, s26, shapes):
    """One merged shape as a plain dict (type, min, max, ...)."""
    if s26 is None:
        base, other = s22, None
    elif s22 is None:
        base, other = s26, None
    else:
        base, other = s26, s22
        if s22["type"] != s26["type"]:
            warn("%s: type %s in M22, %s in M26; using M26"
                 % (name, s22["type"], s26["type"]))
            other = None
    out = {"type": base["type"]}
    if base["type"] not in KINDS:
        raise SystemExit("gen_model.py: %s: unsupported type %s"
                         % (name, base["type"]))
    for k in ("min", "max"):
        v = base.get(k, other.get(k) if other else None)
        if v is not None:
            if v != int(v):
                raise SystemExit("gen_model.py: %s: non-integral %s %r"
                                 % (name, k, v))
            out[k] = int(v)
    out["pattern"] = merge_pattern(other.get("pattern") if other else None,
                                   base.get("pattern"))
    if name in PRODUCT_PATTERNS:
        out["pattern"] = PRODUCT_PATTERNS[name]
    enums = list(base.get("enum", []))
    for v in (other.get("enum", []) if other else []):
        if v not in enums:
            enums.append(v)
    for v in PRODUCT_ENUMS.get(name, []):
        if v not in enums:
            enums.append(v)
    out["enum"] = enums
    for k in ("member", "key", "value"):
        if k in base:
            out[k] = base[k]["shape"]
    if base.get("union"):
        warn("%s: union shape; checked as a plain structure" % name)
    if base["type"] == "structure":
        members = [(m, d["shape"]) for m, d in base.get("members", {}).items()]
        if other:
            for m, d in other.get("members", {}).items():
                if m not in dict(members):
                    members.append((m, d["shape"]))
        members = [(m, override(name, m, sh, shapes)) for m, sh in members]
        # The newer model's required list when it has the shape.
        req = set(base.get("required", []))
        req.update(KEEP_REQUIRED.get(name, []))
        out["members"] = [(m, sh, m in req) for m, sh in members]
    return out


def merge(m22, m26):
    roots = []
    for op in OPERATIONS:
        for m in (m26, m22):
            if m and op in m["operations"]:
                shape = m["operations"][op].get("input", {}).get("shape")
                if shape and shape not in roots:
                    roots.append(shape)
                break
        else:
            warn("operation %s in neither model" % op)
    # Merge only what the operations reach: unrelated shapes need not fit.
    shapes = set(m22["shapes"] if m22 else ()) | set(m26["shapes"] if m26
                                                      else ())
    merged = {}
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in merged:
            continue
        s22 = m22["shapes"].get(n) if m22 else None
        s26 = m26["shapes"].get(n) if m26 else None
        if s22 is None and s26 is None:
            raise SystemExit("gen_model.py: unknown shape %s" % n)
        merged[n] = merge_shape(n, s22, s26, shapes)
        stack.extend(children(merged[n]))
    return merged, roots


def children(s):
    out = [sh for _, sh, _ in s.get("members", [])]
    out += [s[k] for k in ("member", "key", "value") if k in s]
    return out


def reachable(merged, roots):
    seen = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        if n not in merged:
            raise SystemExit("gen_model.py: unknown shape %s" % n)
        seen.add(n)
        stack.extend(children(merged[n]))
    return sorted(seen)


def max_depth(merged, roots):
    """Longest chain of shapes below a root, a recursive shape (Search's
    SearchExpression) counted once: the validator bounds the rest."""
    memo = {}

    def depth(n, path):
        if n in path:
            return 0
        if n not in memo:
            memo[n] = 1 + max([depth(c, path | {n})
                               for c in children(merged[n])] or [0])
        return memo[n]

    return max(depth(r, frozenset()) for r in roots)


def java_to_pcre2(p):
    """Rewrites Java-only syntax (\\p{Alnum}, ...) for PCRE2; None if same."""
    out = []
    i = 0
    in_class = False
    changed = False
    while i < len(p):
        c = p[i]
        if c == "\\":
            m = re.match(r"\\p\{(\w+)\}", p[i:])
            if m and m.group(1) in JAVA_CLASSES:
                body = JAVA_CLASSES[m.group(1)]
                out.append(body if in_class else "[" + body + "]")
                i += len(m.group(0))
                changed = True
                continue
            out.append(p[i:i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            i += 1
            # A ']' or '^]' right after '[' is a literal.
            if p[i:i + 1] == "^":
                out.append("^")
                i += 1
            if p[i:i + 1] == "]":
                out.append("]")
                i += 1
            continue
        if c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out) if changed else None


def lower_camel(name):
    return name[:1].lower() + name[1:]


def c_string(s):
    """A C string literal for s (UTF-8, with escapes; no trigraphs)."""
    out = ['"']
    prev = ""
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "?" and prev == "?":
            out.append("\\?")
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend("\\%03o" % b for b in ch.encode("utf-8"))
        prev = ch
    out.append('"')
    return "".join(out)


def c_ident(name):
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise SystemExit("gen_model.py: shape name %r is not an identifier"
                         % name)
    return name


def generate(merged, roots, sources, depth):
    names = reachable(merged, roots)
    index = {n: i for i, n in enumerate(names)}
    patterns = []
    pattern_index = {}
    lines = []
    emit = lines.append

    emit("/*")
    emit(" * generated by scripts/gen_model.py; do not edit.")
    emit(" *")
    emit(" * SageMaker service model shapes reachable from the inputs of "
         "the training-job")
    emit(" * operations, merged from " + sources + ".")
    emit(" * Regenerate: python3 scripts/gen_model.py")
    emit(" */")
    emit("#include <stddef.h>")
    emit("")
    emit('#include "api/model.h"')
    emit("")
    emit("/* clang-format off */")

    for n in names:
        s = merged[n]
        p = s.get("pattern")
        if p is not None and p not in pattern_index:
            pattern_index[p] = len(patterns)
            patterns.append(p)
        if s["enum"]:
            emit("")
            emit("static const char *const enum_%s[] = {" % c_ident(n))
            for v in s["enum"]:
                emit("\t%s," % c_string(v))
            emit("\tNULL")
            emit("};")
            order = sorted(range(len(s["enum"])),
                           key=lambda i: s["enum"][i].encode("utf-8"))
            emit("static const unsigned short enum_sorted_%s[] = {" % n)
            for i in range(0, len(order), 12):
                emit("\t" + " ".join("%d," % x for x in order[i:i + 12]))
            emit("};")
        if s["type"] == "structure" and s["members"]:
            emit("")
            emit("static const struct api__member members_%s[] = {"
                 % c_ident(n))
            for m, sh, req in s["members"]:
                emit("\t{ %s, %s, %d, %d }, /* %s */"
                     % (c_string(m), c_string(lower_camel(m)), index[sh],
                        1 if req else 0, sh))
            emit("};")

    emit("")
    emit("const struct api__pattern api__patterns[] = {")
    for i, p in enumerate(patterns):
        rx = java_to_pcre2(p)
        emit("\t/* %d */ { %s, %s }," % (i, c_string(p),
                                          c_string(rx) if rx else "NULL"))
    emit("};")
    emit("const size_t api__npatterns = %d;" % len(patterns))

    def ref(k, s):
        if k in s:
            return "%d /* %s */" % (index[s[k]], s[k])
        return "-1"

    emit("")
    emit("const struct api__shape api__shapes[] = {")
    for n in names:
        s = merged[n]
        emit("\t[%d] = {" % index[n])
        emit("\t\t.name = %s," % c_string(n))
        emit("\t\t.kind = %s," % KINDS[s["type"]])
        for k in ("min", "max"):
            if k in s:
                emit("\t\t.has_%s = 1, .%s = %dLL," % (k, k, s[k]))
        p = s.get("pattern")
        emit("\t\t.pattern = %d," % (pattern_index[p] if p is not None
                                     else -1))
        if s["enum"]:
            emit("\t\t.nenums = %d," % len(s["enum"]))
            emit("\t\t.enums = enum_%s," % n)
            emit("\t\t.enum_sorted = enum_sorted_%s," % n)
        if s["type"] == "structure" and s["members"]:
            emit("\t\t.nmembers = %d," % len(s["members"]))
            emit("\t\t.members = members_%s," % n)
        emit("\t\t.member = %s," % ref("member", s))
        emit("\t\t.key = %s," % ref("key", s))
        emit("\t\t.value = %s," % ref("value", s))
        emit("\t},")
    emit("};")
    emit("const size_t api__nshapes = %d;" % len(names))
    emit("")
    emit("/* clang-format on */")
    emit("")
    emit("/* Longest chain of nested shapes below an operation's input. */")
    emit("const int api__max_depth = %d;" % depth)
    return "\n".join(lines) + "\n", len(names), len(patterns)


# ---- what the controller does with each CreateTrainingJob member

MEMBERS_ROOT = "CreateTrainingJobRequest"
DOCS_BEGIN = "<!-- members:begin -->"
DOCS_END = "<!-- members:end -->"
CLASS_TEXT = {"supported": "supported", "refused": "refused",
              "no-op": "no-op by design"}


def member_paths(merged, root):
    """Every member path below root, depth first in model order; lists and
    maps are crossed without a path segment."""
    out = []

    def element(shape):
        while merged[shape]["type"] in ("list", "map"):
            s = merged[shape]
            shape = s["member"] if s["type"] == "list" else s["value"]
        return shape

    def walk(shape, prefix, seen):
        for m, sh, _ in merged[shape].get("members", []):
            path = prefix + m
            out.append(path)
            el = element(sh)
            if merged[el]["type"] == "structure" and el not in seen:
                walk(el, path + ".", seen | {el})

    walk(root, "", frozenset([root]))
    return out


def value_text(v):
    if v is True:
        return "true"
    if v is False:
        return "false"
    return v


def load_members():
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import training_members as tm
    return tm


def effective(tm):
    """[(path, value or None, class, note, pending, under)], MEMBERS then
    VALUES, with PENDING entries (pending) and the members of PENDING
    structures (under, too) refused."""
    pending = set(tm.PENDING)
    rows = []
    for path, cls, note in tm.MEMBERS:
        rows.append((path, None, cls, note, path in pending))
    for path, v, cls, note in tm.VALUES:
        rows.append((path, value_text(v), cls, note,
                     "%s=%s" % (path, value_text(v)) in pending))
    keys = {p if v is None else "%s=%s" % (p, v) for p, v, _, _, _ in rows}
    for p in pending:
        if p not in keys:
            raise SystemExit("gen_model.py: training_members.py: PENDING "
                             "names %s, which MEMBERS/VALUES lack" % p)
    out = []
    for p, v, c, n, pend in rows:
        # Members of a pending structure wait with it.
        parts = p.split(".")
        under = any(".".join(parts[:i]) in pending
                    for i in range(1, len(parts)))
        out.append((p, v, "refused" if pend or under else c, n,
                    pend or under, under))
    return out


def check_members(tm, merged, complete):
    """Problems: model members without a class, classes for members the
    model lacks (only when `complete`: both models were read)."""
    problems = []
    classes = {}
    for path, v, cls, _, _, _ in effective(tm):
        if cls not in CLASS_TEXT:
            problems.append("%s: unknown class %r" % (path, cls))
        if v is None:
            if path in classes:
                problems.append("%s: classified twice" % path)
            classes[path] = cls
    paths = member_paths(merged, MEMBERS_ROOT)
    for path in paths:
        if path in classes:
            continue
        parts = path.split(".")
        covered = any(classes.get(".".join(parts[:i])) in ("refused",
                                                            "no-op")
                      for i in range(1, len(parts)))
        if not covered:
            problems.append("%s.%s has no class in "
                            "scripts/training_members.py" %
                            (MEMBERS_ROOT, path))
    known = set(paths)
    for path, v, _, _, _, _ in effective(tm):
        if path not in known:
            msg = "training_members.py: %s is not in the model" % path
            if complete:
                problems.append(msg)
            else:
                warn(msg)
    for path in tm.UNLESS:
        if path not in classes:
            problems.append("UNLESS names %s, which MEMBERS lacks" % path)
    return problems


def generate_members(tm):
    """api/members_gen.c: the refusals api/members.c enforces."""
    lines = []
    emit = lines.append
    emit("/*")
    emit(" * generated by scripts/gen_model.py from "
         "scripts/training_members.py;")
    emit(" * do not edit.")
    emit(" *")
    emit(" * The CreateTrainingJob members (and single values of members) "
         "that the")
    emit(" * controller refuses with a ValidationException.")
    emit(" * Regenerate: python3 scripts/gen_model.py")
    emit(" */")
    emit("#include <stddef.h>")
    emit("")
    emit('#include "api/members.h"')
    emit("")
    emit("/* clang-format off */")
    emit("const struct api__refusal api__refusals[] = {")
    n = 0
    for path, v, cls, note, pending, under in effective(tm):
        # A pending structure's refusal covers what it holds.
        if cls != "refused" or under:
            continue
        why = "not implemented yet (%s)" % note if pending else note
        unless = tm.UNLESS.get(path) if v is None else None
        emit("	{ %s, %s, %s, %s, %s }," % (
            c_string(path), c_string(v) if v is not None else "NULL",
            c_string(unless[0]) if unless else "NULL",
            c_string(value_text(unless[1])) if unless else "NULL",
            c_string(why)))
        n += 1
    emit("};")
    emit("/* clang-format on */")
    emit("const size_t api__nrefusals = %d;" % n)
    return "\n".join(lines) + "\n"


def md_cell(s):
    return s.replace("|", "\\|")


def generate_docs_table(tm):
    out = [DOCS_BEGIN, "", "| member | class | what it does, or why not |",
           "| --- | --- | --- |"]
    for path, v, cls, note, pending, _ in effective(tm):
        name = "`%s`" % path if v is None else "`%s` = `%s`" % (path, v)
        text = CLASS_TEXT[cls]
        if pending:
            text = "refused (not implemented yet)"
        unless = tm.UNLESS.get(path) if v is None else None
        if unless:
            note += ("; accepted with %s %s, which asks for nothing"
                     % (unless[0], value_text(unless[1])))
        out.append("| %s | %s | %s |" % (name, text, md_cell(note)))
    out += ["", DOCS_END]
    return "\n".join(out)


def splice_docs(text, table):
    b, e = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if b < 0 or e < b:
        raise SystemExit("gen_model.py: docs/api-compatibility.md has no "
                         "members markers")
    return text[:b] + table + text[e + len(DOCS_END):]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m22", default=M22_DEFAULT,
                    help="older model (default: Debian python3-botocore)")
    ap.add_argument("--m26", help="newer model (default: searched for)")
    ap.add_argument("-o", "--output", help="output file "
                    "(default: api/model_gen.c next to this script)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when a member of "
                    "CreateTrainingJobRequest has no class or a generated "
                    "file differs from what is committed")
    args = ap.parse_args()

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    output = args.output or os.path.join(root, "api", "model_gen.c")

    m22 = m26 = None
    if not os.path.isfile(args.m22) and os.path.isfile(args.m22 + ".gz"):
        args.m22 += ".gz"
    if os.path.isfile(args.m22):
        m22 = load_model(args.m22)
        v22 = version_of_file(args.m22)

    if args.m26:
        m26_path, v26 = args.m26, version_of_file(args.m26)
    else:
        found = find_m26(args.m22)
        m26_path, v26 = found if found else (None, None)
    if m26_path and os.path.isfile(m26_path):
        m26 = load_model(m26_path)

    if m22 and m26:
        sources = "botocore %s (M22) and botocore %s (M26)" % (v22, v26)
    elif m22:
        warn("no newer botocore model found%s; generating from M22 "
             "(botocore %s) alone" % (" at " + m26_path if m26_path else "",
                                       v22))
        sources = "botocore %s (M22) alone" % v22
    elif m26:
        warn("M22 model %s not found (apt-get install python3-botocore); "
             "generating from M26 (botocore %s) alone" % (args.m22, v26))
        sources = "botocore %s (M26) alone" % v26
    else:
        raise SystemExit("gen_model.py: no SageMaker model found "
                         "(apt-get install python3-botocore)")

    merged, roots = merge(m22, m26)
    depth = max_depth(merged, roots)
    text, nshapes, npatterns = generate(merged, roots, sources, depth)
    tm = load_members()
    problems = check_members(tm, merged, bool(m22 and m26))
    members_c = generate_members(tm)
    docs_path = os.path.join(root, "docs", "api-compatibility.md")
    with open(docs_path, encoding="utf-8") as f:
        docs_old = f.read()
    docs_new = splice_docs(docs_old, generate_docs_table(tm))
    outputs = [(output, text),
               (os.path.join(root, "api", "members_gen.c"), members_c),
               (docs_path, docs_new)]
    if args.check:
        for path, want in outputs:
            try:
                with open(path, encoding="utf-8") as f:
                    have = f.read()
            except OSError as e:
                have = None
                problems.append("%s: %s" % (path, e))
            if have is not None and have != want:
                problems.append("%s is not what scripts/gen_model.py "
                                "generates (run it and commit the result)"
                                % os.path.relpath(path, root))
        for p in problems:
            sys.stderr.write("gen_model.py: %s\n" % p)
        sys.exit(1 if problems else 0)
    if problems:
        raise SystemExit("gen_model.py: " + "\ngen_model.py: ".join(problems))
    for path, want in outputs:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(want)
        os.replace(tmp, path)
    warn("wrote %s: %d shapes, %d patterns, from %s; api/members_gen.c; "
         "the members table in docs/api-compatibility.md"
         % (os.path.relpath(output), nshapes, npatterns, sources))

if __name__ == "__main__":
    main()
