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
. "$(dirname "$0")/../lib.sh"

BUILD=${BUILD:-build}
PC_DIR=$BUILD/lib/pkgconfig

if ! command -v mpirun >/dev/null 2>&1; then
	t_skip_all "mpirun is not installed"
fi
if [ ! -f "$PC_DIR/trainer.pc" ]; then
	t_skip_all "no $PC_DIR/trainer.pc (run make trainer)"
fi

t_tmpdir test_trainer_mpi

# OpenMPI keeps memory until exit, which LeakSanitizer would report.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
t_hermetic_job

flags=$(PKG_CONFIG_PATH=$PC_DIR pkg-config --cflags --libs trainer)
# shellcheck disable=SC2086
if cc -o "$T_TMP/mpi_check" tests/trainer/mpi_check.c $flags \
	>"$T_TMP/cc.log" 2>&1; then
	t_pass "mpi_check builds with pkg-config --cflags --libs trainer"
else
	t_fail "mpi_check builds with pkg-config --cflags --libs trainer"
	sed 's/^/# /' "$T_TMP/cc.log"
	t_done
fi

mkdir -p "$T_TMP/ck"
TRAINCTL_CHECKPOINT_DIR=$T_TMP/ck
export TRAINCTL_CHECKPOINT_DIR
env -u LD_LIBRARY_PATH timeout -k 5 60 mpirun --allow-run-as-root \
	--oversubscribe -np 3 -mca btl self,tcp -mca btl_tcp_if_include lo \
	-mca oob_tcp_if_include lo -x TRAINCTL_CHECKPOINT_DIR -x ASAN_OPTIONS \
	"$T_TMP/mpi_check" 2 >"$T_TMP/out.log" 2>"$T_TMP/err.log"
rc=$?
# mpi_check numbers its checks on from 2 and prints the plan: they are ours.
t_include "$T_TMP/out.log"
if [ "$rc" -ne 0 ]; then
	t_fail "mpirun exited with status $rc"
	sed 's/^/# /' "$T_TMP/err.log" | tail -n 30
fi
t_done
