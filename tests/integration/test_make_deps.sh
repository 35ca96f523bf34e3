#!/bin/sh
# The build only builds: `make` installs nothing, and on a machine missing
# a -dev package it stops at once naming that package and `make deps`.
#
# Run from the repository root: sh tests/integration/test_make_deps.sh.
# Prints TAP. A package is "missing" by pointing pkg-config at a copy of the
# system's .pc files without it; dpkg-query is replaced on PATH by one that
# records each call, so a goal that would install is seen without
# installing anything.
set -u
. "$(dirname "$0")/../lib.sh"

t_tmpdir test_make_deps

# check STATUS NAME: one test; the tail of make's stderr when it fails.
check() {
	t_ok "$1" "$2" || { [ -f "$T_TMP/err" ] && tail -n 5 "$T_TMP/err" | t_diag; }
}

t_plan 5

# pkg-config's own search path, copied without jansson.pc.
mkdir -p "$T_TMP/pc" "$T_TMP/bin"
for d in $(pkg-config --variable pc_path pkg-config | tr ':' ' '); do
	[ -d "$d" ] || continue
	for f in "$d"/*.pc; do
		[ -e "$f" ] || continue
		b=$(basename "$f")
		[ "$b" = jansson.pc ] || [ -e "$T_TMP/pc/$b" ] ||
			ln -s "$f" "$T_TMP/pc/$b"
	done
done

# A dpkg-query that says every package is installed and leaves a mark.
cat >"$T_TMP/bin/dpkg-query" <<EOS
#!/bin/sh
touch "$T_TMP/dpkg-called"
printf 'install ok installed'
EOS
chmod +x "$T_TMP/bin/dpkg-query"

start=$(date +%s)
PATH="$T_TMP/bin:$PATH" PKG_CONFIG_LIBDIR="$T_TMP/pc" \
	make --no-print-directory BUILD="$T_TMP/build" all >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
took=$(($(date +%s) - start))
[ "$rc" -ne 0 ] && [ "$took" -le 10 ] && [ ! -e "$T_TMP/build" ]
check $? "(m1) make with libjansson-dev missing fails in ${took}s, building nothing"

grep -q 'libjansson-dev' "$T_TMP/err" && grep -q 'make deps' "$T_TMP/err" &&
	! grep -q 'libcurl4-openssl-dev\|libsqlite3-dev' "$T_TMP/err"
check $? "(m2) it names libjansson-dev alone and \`make deps\`"

[ ! -e "$T_TMP/dpkg-called" ]
check $? "(m3) plain make never asks the package manager"

rm -f "$T_TMP/dpkg-called" "$T_TMP/err"
PATH="$T_TMP/bin:$PATH" make --no-print-directory -n BUILD="$T_TMP/build" all \
	>"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
[ "$rc" -eq 0 ] && [ ! -e "$T_TMP/dpkg-called" ]
check $? "(m4) with every package present make goes on to build"

PATH="$T_TMP/bin:$PATH" make --no-print-directory -n BUILD="$T_TMP/build" test \
	>"$T_TMP/out" 2>"$T_TMP/err"
[ -e "$T_TMP/dpkg-called" ]
check $? "(m5) make test checks the packages first (scripts/deps.sh)"
t_done
