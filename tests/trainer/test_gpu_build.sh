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

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if ! { command -v nvcc >/dev/null 2>&1 || [ -x "$CUDA_HOME/bin/nvcc" ]; } ||
	[ ! -f "$CUDA_HOME/include/nccl.h" ]; then
	echo "1..0 # SKIP no CUDA (nvcc and $CUDA_HOME/include/nccl.h)"
	exit 0
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/test_trainer_gpu.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM HUP
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

echo "1..3"
# Plain flags: a sanitized parent build must not leak into this one.
if make -s BUILD="$TMP/build" NCCL=yes CUDA_HOME="$CUDA_HOME" SAN= \
	OPT="-O1 -g" "$TMP/build/lib/libtrainer.a" \
	"$TMP/build/lib/pkgconfig/trainer.pc" >"$TMP/make.log" 2>&1 &&
	grep -q -- '-lnccl' "$TMP/build/lib/pkgconfig/trainer.pc"; then
	echo "ok 1 - libtrainer builds with NCCL=yes"
else
	echo "not ok 1 - libtrainer builds with NCCL=yes"
	tail -n 30 "$TMP/make.log" | sed 's/^/# /'
	echo "not ok 2 - gpu_check links # SKIP no library"
	echo "not ok 3 - trainer_init on the GPU # SKIP no library"
	exit 1
fi

flags=$(PKG_CONFIG_PATH=$TMP/build/lib/pkgconfig pkg-config --cflags \
	--libs trainer)
# shellcheck disable=SC2086
if cc -o "$TMP/gpu_check" -I"$CUDA_HOME/include" tests/trainer/gpu_check.c $flags \
	>"$TMP/cc.log" 2>&1; then
	echo "ok 2 - gpu_check links against NCCL and CUDA"
else
	echo "not ok 2 - gpu_check links against NCCL and CUDA"
	sed 's/^/# /' "$TMP/cc.log"
	echo "not ok 3 - trainer_init on the GPU # SKIP did not link"
	exit 1
fi

unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE TRAINCTL_RDZV_URL
timeout -k 5 120 "$TMP/gpu_check" >"$TMP/run.log" 2>&1
rc=$?
sed 's/^/# /' "$TMP/run.log"
if [ "$rc" -eq 0 ]; then
	echo "ok 3 - trainer_init on the GPU: collectives or a clean error"
else
	echo "not ok 3 - trainer_init on the GPU: exit status $rc"
	exit 1
fi
