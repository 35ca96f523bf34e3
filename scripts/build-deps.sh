#!/bin/sh
# Checks, without installing anything, that what `make` needs to build is
# here: the compiler, pkg-config and the -dev packages of every library the
# build links. Prints the Debian packages that are missing, one line, and
# nothing when all are present. Always exits 0 (the Makefile decides).
#
# Each entry: pkg-config module, then the Debian package that ships it.
set -u

MODULES="libmicrohttpd:libmicrohttpd-dev jansson:libjansson-dev
sqlite3:libsqlite3-dev libcurl:libcurl4-openssl-dev libpcre2-8:libpcre2-dev
libcrypto:libssl-dev inih:libinih-dev libssh2:libssh2-1-dev
libarchive:libarchive-dev libxml-2.0:libxml2-dev zlib:zlib1g-dev
libcbor:libcbor-dev lapacke:liblapacke-dev blas:libblas-dev
raft:libraft-dev libuv:libuv1-dev
ompi-c:libopenmpi-dev"

missing=""
command -v "${CC:-cc}" >/dev/null 2>&1 || missing="$missing build-essential"
if ! command -v pkg-config >/dev/null 2>&1; then
	# Without it no module can be asked for: name them all.
	missing="$missing pkg-config"
	for m in $MODULES; do
		missing="$missing ${m#*:}"
	done
else
	for m in $MODULES; do
		pkg-config --exists "${m%%:*}" 2>/dev/null ||
			missing="$missing ${m#*:}"
	done
fi
echo "$missing"
