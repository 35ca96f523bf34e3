#!/bin/sh
# The NCCL backend of libtrainer: when CUDA's nvcc and nccl.h are here,
# builds libtrainer with NCCL=yes into a temporary build directory, links
# tests/trainer/gpu_check.c against it through its trainer.pc and runs it.
#
# A GPU host is one where `nvidia-smi -L` lists a GPU or /dev/nvidia0
# exists. There trainer_init(..., TRAINER_DEVICE_GPU, ...) must succeed and
# the NCCL collectives must give the right values on device memory: in a
# world of one rank (where they are identities, so this checks only that
# the values round-trip through the device), and with two GPUs or more
# across 2 ranks under mpirun (NCCL gives each rank its own device), where
# every result differs from what each rank held. Without a GPU,
# trainer_init must return a clean error code, not crash, and the GPU
# checks are printed as skips. Prints TAP.
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

# The GPUs of this host (0: none); a GPU host whose nvidia-smi fails still
# is one (/dev/nvidia0): its GPU checks fail instead of skipping.
n_gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
	n_gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
fi
gpu_host=0
if [ "$n_gpus" -gt 0 ] || [ -e /dev/nvidia0 ]; then
	gpu_host=1
fi

t_plan 5
# Plain flags: a sanitized parent build must not leak into this one.
if make -s BUILD="$T_TMP/build" NCCL=yes CUDA_HOME="$CUDA_HOME" SAN= \
	OPT="-O1 -g" "$T_TMP/build/lib/libtrainer.a" \
	"$T_TMP/build/lib/pkgconfig/trainer.pc" >"$T_TMP/make.log" 2>&1 &&
	grep -q -- '-lnccl' "$T_TMP/build/lib/pkgconfig/trainer.pc"; then
	t_pass "libtrainer builds with NCCL=yes"
else
	t_fail "libtrainer builds with NCCL=yes"
	tail -n 30 "$T_TMP/make.log" | sed 's/^/# /'
	t_fail "gpu_check links" "no library"
	t_fail "trainer_init with TRAINER_DEVICE_GPU" "no library"
	t_fail "NCCL collectives, 1 rank" "no library"
	t_fail "NCCL collectives, 2 ranks" "no library"
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
	t_fail "trainer_init with TRAINER_DEVICE_GPU" "did not link"
	t_fail "NCCL collectives, 1 rank" "did not link"
	t_fail "NCCL collectives, 2 ranks" "did not link"
	t_done
fi

t_hermetic_job
# Its model/, output/ and checkpoints go to the temporary folder.
mkdir -p "$T_TMP/run/ck"
TRAINCTL_CHECKPOINT_DIR=$T_TMP/run/ck
export TRAINCTL_CHECKPOINT_DIR
if [ "$gpu_host" -eq 0 ]; then
	(cd "$T_TMP/run" && timeout -k 5 120 "$T_TMP/gpu_check") \
		>"$T_TMP/run.log" 2>&1
	rc=$?
	sed 's/^/# /' "$T_TMP/run.log"
	if [ "$rc" -eq 0 ]; then
		t_pass "trainer_init with TRAINER_DEVICE_GPU and no GPU: a clean error (ECOMM or ENOTSUP)"
	else
		t_fail "trainer_init with TRAINER_DEVICE_GPU and no GPU: exit status $rc (2: not a clean error)"
	fi
	t_skip "NCCL collectives, 1 rank" "no GPU (nvidia-smi -L lists none, no /dev/nvidia0)"
	t_skip "NCCL collectives, 2 ranks" "no GPU (nvidia-smi -L lists none, no /dev/nvidia0)"
	t_done
fi

t_diag "GPU host: $n_gpus GPU(s) listed by nvidia-smi -L"
(cd "$T_TMP/run" && GPU_CHECK_EXPECT_GPU=1 timeout -k 5 120 "$T_TMP/gpu_check") \
	>"$T_TMP/run.log" 2>&1
rc=$?
sed 's/^/# /' "$T_TMP/run.log"
t_ok "$(grep -q '^init: 0 ' "$T_TMP/run.log"; echo $?)" \
	"trainer_init with TRAINER_DEVICE_GPU on a GPU host succeeds"
t_ok "$(test "$rc" -eq 0 && grep -q '^gpu checks: passed (rank 0 of 1)' \
	"$T_TMP/run.log"; echo $?)" \
	"NCCL collectives, 1 rank: values round-trip through device memory (exit status $rc)"

if [ "$n_gpus" -lt 2 ]; then
	t_skip "NCCL collectives, 2 ranks" "$n_gpus GPU: NCCL gives each rank its own device"
elif ! command -v mpirun >/dev/null 2>&1; then
	t_fail "NCCL collectives, 2 ranks" "$n_gpus GPUs but no mpirun"
else
	(cd "$T_TMP/run" && GPU_CHECK_EXPECT_GPU=1 timeout -k 5 180 mpirun \
		--allow-run-as-root --oversubscribe -np 2 -mca btl self,tcp \
		-mca btl_tcp_if_include lo -mca oob_tcp_if_include lo \
		-x TRAINCTL_CHECKPOINT_DIR -x GPU_CHECK_EXPECT_GPU \
		-x ASAN_OPTIONS "$T_TMP/gpu_check") >"$T_TMP/mpi.log" 2>&1
	rc=$?
	sed 's/^/# /' "$T_TMP/mpi.log"
	passed=$(grep -c '^gpu checks: passed (rank [01] of 2)' "$T_TMP/mpi.log")
	t_ok "$(test "$rc" -eq 0 && test "$passed" -eq 2; echo $?)" \
		"NCCL collectives, 2 ranks (mpirun -np 2): SUM, MAX, MIN, AVG, broadcast across ranks (exit status $rc)"
fi
t_done
