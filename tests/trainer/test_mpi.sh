#!/bin/sh
# libtrainer across three MPI ranks on this machine. Builds
# tests/trainer/mpi_check.c the way a user would, with
#     cc prog.c $(pkg-config --cflags --libs trainer)
# against $BUILD/lib/pkgconfig/trainer.pc (which proves the .pc file works
# and that the program runs without LD_LIBRARY_PATH), then runs it under
# mpirun over loopback TCP. Prints TAP.
#
# Run from the repository root: sh tests/trainer/test_mpi.sh (after
# `make trainer`; BUILD names the build directory, default build).
set -u

BUILD=${BUILD:-build}
PC_DIR=$BUILD/lib/pkgconfig

if ! command -v mpirun >/dev/null 2>&1; then
	echo "1..0 # SKIP mpirun is not installed"
	exit 0
fi
if [ ! -f "$PC_DIR/trainer.pc" ]; then
	echo "1..0 # SKIP no $PC_DIR/trainer.pc (run make trainer)"
	exit 0
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/test_trainer_mpi.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM HUP

# OpenMPI keeps memory until exit, which LeakSanitizer would report.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE TRAINCTL_RDZV_URL

flags=$(PKG_CONFIG_PATH=$PC_DIR pkg-config --cflags --libs trainer)
# shellcheck disable=SC2086
if cc -o "$TMP/mpi_check" tests/trainer/mpi_check.c $flags \
	>"$TMP/cc.log" 2>&1; then
	echo "ok 1 - mpi_check builds with pkg-config --cflags --libs trainer"
else
	echo "not ok 1 - mpi_check builds with pkg-config --cflags --libs trainer"
	sed 's/^/# /' "$TMP/cc.log"
	echo "1..1"
	exit 1
fi

mkdir -p "$TMP/ck"
TRAINCTL_CHECKPOINT_DIR=$TMP/ck
export TRAINCTL_CHECKPOINT_DIR
env -u LD_LIBRARY_PATH timeout -k 5 60 mpirun --allow-run-as-root \
	--oversubscribe -np 3 -mca btl self,tcp -mca btl_tcp_if_include lo \
	-mca oob_tcp_if_include lo -x TRAINCTL_CHECKPOINT_DIR -x ASAN_OPTIONS \
	"$TMP/mpi_check" 2 >"$TMP/out.log" 2>"$TMP/err.log"
rc=$?
cat "$TMP/out.log"
if [ "$rc" -ne 0 ]; then
	n=$(grep -cE '^(not )?ok [0-9]+' "$TMP/out.log")
	n=$((n + 1))
	echo "not ok $n - mpirun exited with status $rc"
	sed 's/^/# /' "$TMP/err.log" | tail -n 30
	grep -q '^1\.\.' "$TMP/out.log" || echo "1..$n"
	exit 1
fi
grep -q '^not ok' "$TMP/out.log" && exit 1
exit 0
