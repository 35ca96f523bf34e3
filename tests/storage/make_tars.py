#!/usr/bin/python3
"""Writes the hostile archives of tests/storage/test_archive.c.

usage: make_tars.py OUTDIR OUTSIDE
OUTSIDE is an absolute folder outside the extraction target; every archive
tries to write into it (or to read from it) one way or another.
"""
import io
import os
import sys
import tarfile

out, outside = sys.argv[1], sys.argv[2]


def tar(name, members, mode="w:gz", fmt=tarfile.PAX_FORMAT):
    with tarfile.open(os.path.join(out, name), mode, format=fmt) as t:
        for m in members:
            info, data = m
            t.addfile(info, io.BytesIO(data) if data is not None else None)


def reg(name, data=b"pwned\n"):
    i = tarfile.TarInfo(name)
    i.size = len(data)
    return (i, data)


def sym(name, target):
    i = tarfile.TarInfo(name)
    i.type = tarfile.SYMTYPE
    i.linkname = target
    return (i, None)


def hard(name, target):
    i = tarfile.TarInfo(name)
    i.type = tarfile.LNKTYPE
    i.linkname = target
    return (i, None)


rel_outside = os.path.relpath(outside, os.path.join(out, "target"))

tar("traversal.tar.gz", [reg("ok.txt"), reg("../" + os.path.basename(outside) + "/dotdot.txt")])
tar("traversal_deep.tar.gz", [reg("a/b/../../../x.txt")])
tar("absolute.tar.gz", [reg(outside + "/absolute.txt")])
tar("symlink_abs.tar.gz", [sym("link", outside)])
tar("symlink_rel.tar.gz", [sym("sub/link", "../../" + rel_outside)])
tar("symlink_then_file.tar.gz", [sym("esc", outside), reg("esc/through.txt")])
tar("through_existing.tar.gz", [reg("evil/through.txt")])
tar("hardlink_abs.tar.gz", [hard("hl", outside + "/secret")])
tar("hardlink_rel.tar.gz", [hard("hl", "../" + os.path.basename(outside) + "/secret")])
dev = tarfile.TarInfo("dev")
dev.type = tarfile.CHRTYPE
dev.devmajor, dev.devminor = 1, 3
tar("device.tar.gz", [(dev, None)])
tar("many.tar.gz", [reg("f%d" % i, b"x") for i in range(10)])

# A header that claims 10 GB followed by a few bytes: written by hand so
# that nothing near 10 GB is ever produced.
big = tarfile.TarInfo("huge.bin")
big.size = 10 * 1000 ** 3
with open(os.path.join(out, "huge.tar"), "wb") as f:
    f.write(big.tobuf(format=tarfile.GNU_FORMAT))
    f.write(b"\0" * 4096)

# Fine: an internal symlink and a hard link to an earlier member.
tar("good.tar.gz", [reg("dir/a.txt", b"a"), sym("dir/l", "a.txt"), sym("up", "dir/a.txt"), hard("dir/h", "dir/a.txt")])
