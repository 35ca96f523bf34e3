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

TMP=$(mktemp -d "${TMPDIR:-/tmp}/test_make_deps.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM HUP

n=0
check() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		[ -f "$TMP/err" ] && sed 's/^/# /' "$TMP/err" | tail -n 5
	fi
}

echo "1..5"

# pkg-config's own search path, copied without jansson.pc.
mkdir -p "$TMP/pc" "$TMP/bin"
for d in $(pkg-config --variable pc_path pkg-config | tr ':' ' '); do
	[ -d "$d" ] || continue
	for f in "$d"/*.pc; do
		[ -e "$f" ] || continue
		b=$(basename "$f")
		[ "$b" = jansson.pc ] || [ -e "$TMP/pc/$b" ] ||
			ln -s "$f" "$TMP/pc/$b"
	done
done

# A dpkg-query that says every package is installed and leaves a mark.
cat >"$TMP/bin/dpkg-query" <<EOS
#!/bin/sh
touch "$TMP/dpkg-called"
printf 'install ok installed'
EOS
chmod +x "$TMP/bin/dpkg-query"

start=$(date +%s)
PATH="$TMP/bin:$PATH" PKG_CONFIG_LIBDIR="$TMP/pc" \
	make --no-print-directory BUILD="$TMP/build" all >"$TMP/out" 2>"$TMP/err"
rc=$?
took=$(($(date +%s) - start))
[ "$rc" -ne 0 ] && [ "$took" -le 10 ] && [ ! -e "$TMP/build" ]
check $? "(m1) make with libjansson-dev missing fails in ${took}s, building nothing"

grep -q 'libjansson-dev' "$TMP/err" && grep -q 'make deps' "$TMP/err" &&
	! grep -q 'libcurl4-openssl-dev\|libsqlite3-dev' "$TMP/err"
check $? "(m2) it names libjansson-dev alone and \`make deps\`"

[ ! -e "$TMP/dpkg-called" ]
check $? "(m3) plain make never asks the package manager"

rm -f "$TMP/dpkg-called" "$TMP/err"
PATH="$TMP/bin:$PATH" make --no-print-directory -n BUILD="$TMP/build" all \
	>"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 0 ] && [ ! -e "$TMP/dpkg-called" ]
check $? "(m4) with every package present make goes on to build"

PATH="$TMP/bin:$PATH" make --no-print-directory -n BUILD="$TMP/build" test \
	>"$TMP/out" 2>"$TMP/err"
[ -e "$TMP/dpkg-called" ]
check $? "(m5) make test checks the packages first (scripts/deps.sh)"
