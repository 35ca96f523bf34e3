#!/bin/sh
# The NCCL backend of libtrainer: when CUDA's nvcc and nccl.h are here,
# builds libtrainer with NCCL=yes into a temporary build directory, links
# tests/trainer/gpu_check.c against it through its trainer.pc and runs it.
# Without a GPU, trainer_init(..., TRAINER_DEVICE_GPU, ...) must return an
# error code, not crash; with one, it must succeed and the NCCL
# collectives must give the right values on device memory. Prints TAP.
#
# Run from the repository root: sh tests/trainer/test_gpu_build.sh.
# CUDA_HOME names the CUDA installation (default /usr/local/cuda).
set -u
. "$(dirname "$0")/../lib.sh"

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if ! { command -v nvcc >/dev/null 2>&1 || [ -x "$CUDA_HOME/bin/nvcc" ]; } ||
	[ ! -f "$CUDA_HOME/include/nccl.h" ]; then
	t_skip_all "no CUDA (nvcc and $CUDA_HOME/include/nccl.h)"
fi

t_tmpdir test_trainer_gpu
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

t_plan 3
# Plain flags: a sanitized parent build must not leak into this one.
if make -s BUILD="$T_TMP/build" NCCL=yes CUDA_HOME="$CUDA_HOME" SAN= \
	OPT="-O1 -g" "$T_TMP/build/lib/libtrainer.a" \
	"$T_TMP/build/lib/pkgconfig/trainer.pc" >"$T_TMP/make.log" 2>&1 &&
	grep -q -- '-lnccl' "$T_TMP/build/lib/pkgconfig/trainer.pc"; then
	t_pass "libtrainer builds with NCCL=yes"
else
	t_fail "libtrainer builds with NCCL=yes"
	tail -n 30 "$T_TMP/make.log" | sed 's/^/# /'
	t_fail "gpu_check links # SKIP no library"
	t_fail "trainer_init on the GPU # SKIP no library"
	t_done
fi

flags=$(PKG_CONFIG_PATH=$T_TMP/build/lib/pkgconfig pkg-config --cflags \
	--libs trainer)
# shellcheck disable=SC2086
if cc -o "$T_TMP/gpu_check" -I"$CUDA_HOME/include" tests/trainer/gpu_check.c $flags \
	>"$T_TMP/cc.log" 2>&1; then
	t_pass "gpu_check links against NCCL and CUDA"
else
	t_fail "gpu_check links against NCCL and CUDA"
	sed 's/^/# /' "$T_TMP/cc.log"
	t_fail "trainer_init on the GPU # SKIP did not link"
	t_done
fi

t_hermetic_job
timeout -k 5 120 "$T_TMP/gpu_check" >"$T_TMP/run.log" 2>&1
rc=$?
sed 's/^/# /' "$T_TMP/run.log"
if [ "$rc" -eq 0 ]; then
	t_pass "trainer_init on the GPU: collectives or a clean error"
else
	t_fail "trainer_init on the GPU: exit status $rc"
fi
t_done
