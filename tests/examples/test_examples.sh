#!/bin/sh
# The C examples (examples/mlp_dp, mlp_pipeline, param_server) trained for
# real on a Fashion-MNIST subset, checked against each other. Prints TAP.
#
# Run from the repository root: sh tests/examples/test_examples.sh (BUILD
# names the build directory, default build). Builds the examples with
# `make -C examples` (incremental) first; skips everything when
# libtrainer is not built or the data (Debian's dataset-fashion-mnist, or
# FASHION_MNIST_DIR) is not there. Every run has its own temporary
# SM_MODEL_DIR, SM_OUTPUT_DATA_DIR and TRAINCTL_CHECKPOINT_DIR.
#
# The configuration (4000 training images, 1000 held-out, 3 epochs of
# batches of 32, learning rate 0.01, momentum 0.9, seed 1) reaches about 0.8 held-out accuracy in a
# few seconds per run; the tests ask for at least $MIN_ACC.
set -u
. "$(dirname "$0")/../lib.sh"

BUILD=${BUILD:-build}
DATA=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
MIN_ACC=0.75
TOL=1e-4
N=22

if [ ! -f "$BUILD/lib/pkgconfig/trainer.pc" ]; then
	t_skip_all "no $BUILD/lib/pkgconfig/trainer.pc (run make trainer)"
fi
if [ ! -r "$DATA/train-images-idx3-ubyte.gz" ] ||
	[ ! -r "$DATA/t10k-labels-idx1-ubyte.gz" ]; then
	t_skip_all "no Fashion-MNIST in $DATA (apt install dataset-fashion-mnist)"
fi
if ! command -v mpirun >/dev/null 2>&1; then
	t_skip_all "mpirun is not installed"
fi

ABS_BUILD=$(cd "$BUILD" && pwd)
EX=$ABS_BUILD/examples
t_tmpdir test_examples

# Hermetic: nothing of an enclosing job leaks in.
t_hermetic_job
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

t_plan $N
# check NAME COMMAND...: ok when the command succeeds.
check() {
	name=$1
	shift
	"$@"
	t_ok $? "$name"
}
# show LOG: the tail of a log as TAP comments.
show() {
	t_diag_file "$1" 15
}

# make is incremental: this only rebuilds what changed, and a failed build
# is a failure here rather than a silent run of old binaries.
if ! make -s -C examples BUILD="$ABS_BUILD" >"$T_TMP/make.log" 2>&1 ||
	[ ! -x "$EX/mlp_dp" ] || [ ! -x "$EX/mlp_pipeline" ] ||
	[ ! -x "$EX/param_server" ]; then
	t_fail "examples build"
	show "$T_TMP/make.log"
	t_done
fi

BASE_HPS='"epochs": 3, "train-samples": 4000, "val-samples": 1000,
"batch-size": 32, "learning-rate": 0.01, "momentum": 0.9, "seed": 1,
"debug-hash": true'
export SM_CHANNEL_TRAIN=$DATA

# setup NAME EXTRA_HPS: a fresh directory and the environment of one run.
setup() {
	D=$T_TMP/$1
	mkdir -p "$D/model" "$D/out" "$D/ckpt"
	SM_MODEL_DIR=$D/model
	SM_OUTPUT_DATA_DIR=$D/out
	TRAINCTL_CHECKPOINT_DIR=$D/ckpt
	SM_HPS="{$BASE_HPS${2:+, $2}}"
	export SM_MODEL_DIR SM_OUTPUT_DATA_DIR TRAINCTL_CHECKPOINT_DIR SM_HPS
}

# mpi NP PROG: PROG under mpirun over loopback into $D/log.
mpi() {
	np=$1
	shift
	timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np "$np" \
		-mca btl self,tcp -mca btl_tcp_if_include lo \
		-mca oob_tcp_if_include lo -x SM_MODEL_DIR -x SM_OUTPUT_DATA_DIR \
		-x TRAINCTL_CHECKPOINT_DIR -x SM_HPS -x SM_CHANNEL_TRAIN \
		-x ASAN_OPTIONS ${TRAINCTL_ATTEMPT:+-x TRAINCTL_ATTEMPT} \
		"$@" train >"$D/log" 2>&1
}

# accuracy LOG: the number of the "final validation:accuracy=" line.
accuracy() {
	sed -n 's/^final validation:accuracy=\([0-9.]*\)$/\1/p' "$1" | tail -n 1
}

acc_ok() {
	a=$(accuracy "$1")
	[ -n "$a" ] && awk -v a="$a" -v m="$MIN_ACC" 'BEGIN { exit !(a >= m) }'
}

# same_hash LOG K: K ranks printed a weights hash, all of them equal.
same_hash() {
	c=$(grep -c 'weights-hash' "$1")
	u=$(sed -n 's/.*weights-hash //p' "$1" | sort -u | wc -l)
	[ "$c" -eq "$2" ] && [ "$u" -eq 1 ]
}

# close A B TOL: model.bin files with the same layers and every weight
# within TOL (prints the largest difference as a comment).
close() {
	/usr/bin/python3 - "$1" "$2" "$3" <<'EOF'
import struct, sys

def load(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != b"TCMLP001":
        sys.exit("%s: not a model.bin" % path)
    nl, = struct.unpack_from("<I", b, 8)
    sizes = struct.unpack_from("<%dI" % (nl + 1), b, 12)
    off = 12 + 4 * (nl + 1)
    want = sum(sizes[i] * sizes[i + 1] + sizes[i + 1] for i in range(nl))
    if len(b) - off != 4 * want:
        sys.exit("%s: %d bytes of weights, want %d" % (path, len(b) - off, 4 * want))
    return sizes, struct.unpack_from("<%df" % want, b, off)

sa, a = load(sys.argv[1])
sb, b = load(sys.argv[2])
if sa != sb:
    sys.exit("layers differ: %s vs %s" % (sa, sb))
d = max(abs(x - y) for x, y in zip(a, b))
print("# max |diff| = %g over %d weights" % (d, len(a)))
sys.exit(0 if d <= float(sys.argv[3]) else 1)
EOF
}

# ---- mlp_dp: 1, 2 and 3 processes on the same global batch ------------

for np in 1 2 3; do
	setup "dp$np"
	start=$(date +%s)
	mpi "$np" "$EX/mlp_dp"
	rc=$?
	echo "# mlp_dp -np $np: rc $rc, accuracy $(accuracy "$D/log"), $(($(date +%s) - start)) s"
	if [ "$rc" -eq 0 ] && acc_ok "$D/log" && same_hash "$D/log" "$np"; then
		t_pass "mlp_dp -np $np: accuracy >= $MIN_ACC, every rank has the same weights"
	else
		t_fail "mlp_dp -np $np: accuracy >= $MIN_ACC, every rank has the same weights"
		show "$D/log"
	fi
done
check "mlp_dp -np 2 ends within $TOL of -np 1" \
	close "$T_TMP/dp1/model/model.bin" "$T_TMP/dp2/model/model.bin" "$TOL"
check "mlp_dp -np 3 ends within $TOL of -np 1" \
	close "$T_TMP/dp1/model/model.bin" "$T_TMP/dp3/model/model.bin" "$TOL"

# ---- mlp_dp: a simulated crash, then a restart from the checkpoint -----

# 125 steps an epoch: checkpoints at 50, 100, 150; the crash after 180
# loses 30 steps, which the restart (attempt 2) redoes from step 150.
setup dpr '"checkpoint-steps": 50, "fail-at-step": 180'
mpi 2 "$EX/mlp_dp"
rc=$?
if [ "$rc" -ne 0 ] && grep -q 'simulated failure after step 180' "$D/log" &&
	[ -f "$D/ckpt/step-0000000150.rank-0/MANIFEST.json" ] &&
	[ -f "$D/ckpt/step-0000000150.rank-1/MANIFEST.json" ] &&
	[ ! -f "$D/model/model.bin" ]; then
	t_pass "mlp_dp fail-at-step 180 exits non-zero with checkpoints of step 150"
else
	t_fail "mlp_dp fail-at-step 180 exits non-zero with checkpoints of step 150"
	show "$D/log"
fi
TRAINCTL_ATTEMPT=2
export TRAINCTL_ATTEMPT
mpi 2 "$EX/mlp_dp"
rc=$?
unset TRAINCTL_ATTEMPT
if [ "$rc" -eq 0 ] && grep -q 'resumed from checkpoint step 150' "$D/log" &&
	close "$T_TMP/dp2/model/model.bin" "$D/model/model.bin" 0; then
	t_pass "mlp_dp restarted resumes at step 150 and ends with the uninterrupted run's weights"
else
	t_fail "mlp_dp restarted resumes at step 150 and ends with the uninterrupted run's weights"
	show "$D/log"
fi

# ---- mlp_pipeline: 784-128-64-10 unsplit, over 2 and over 3 ranks -------

for np in 1 2 3; do
	setup "pp$np" '"hidden": "128,64"'
	start=$(date +%s)
	mpi "$np" "$EX/mlp_pipeline"
	rc=$?
	echo "# mlp_pipeline -np $np: rc $rc, accuracy $(accuracy "$D/log"), $(($(date +%s) - start)) s"
	if [ "$rc" -eq 0 ] && acc_ok "$D/log" &&
		[ "$(grep -c 'holds layers' "$D/log")" -eq "$np" ]; then
		t_pass "mlp_pipeline -np $np: accuracy >= $MIN_ACC"
	else
		t_fail "mlp_pipeline -np $np: accuracy >= $MIN_ACC"
		show "$D/log"
	fi
done
# Each layer does the same arithmetic wherever it runs: expect equality.
check "mlp_pipeline over 2 ranks equals the unsplit network" \
	close "$T_TMP/pp1/model/model.bin" "$T_TMP/pp2/model/model.bin" 0
check "mlp_pipeline over 3 ranks equals the unsplit network" \
	close "$T_TMP/pp1/model/model.bin" "$T_TMP/pp3/model/model.bin" 0

setup ppr '"hidden": "128,64", "checkpoint-steps": 100, "fail-at-step": 260'
mpi 3 "$EX/mlp_pipeline"
rc1=$?
TRAINCTL_ATTEMPT=2
export TRAINCTL_ATTEMPT
mpi 3 "$EX/mlp_pipeline"
rc=$?
unset TRAINCTL_ATTEMPT
if [ "$rc1" -ne 0 ] && [ "$rc" -eq 0 ] &&
	grep -q 'resumed from checkpoint step 200' "$D/log" &&
	close "$T_TMP/pp1/model/model.bin" "$D/model/model.bin" 0; then
	t_pass "mlp_pipeline -np 3 restarted after a crash at step 260 ends with the same weights"
else
	t_fail "mlp_pipeline -np 3 restarted after a crash at step 260 ends with the same weights"
	show "$D/log"
fi

# ---- param_server: 2 workers with 1 and with 2 servers ------------------

# ps_run NSERVERS NWORKERS: one job's processes on 127.0.0.1, each with
# its TF_CONFIG; waits for all. PS_RC: 0 when every process exited 0.
# OpenMPI's singleton start (MPI_Init without mpirun, four at once) now
# and then fails on a loaded machine before the program runs at all
# ("An error occurred in MPI_Init_thread"): such a run is made once more.
ps_run() {
	ps_run_once "$@"
	if grep -qs 'An error occurred in MPI_Init' "$D"/ps*.log "$D"/log \
		"$D"/w*.log; then
		echo "# OpenMPI's singleton start failed (MPI_Init_thread): once more"
		ps_run_once "$@"
	fi
}

ps_run_once() {
	ns=$1
	nw=$2
	set -- $(t_free_port $((ns + nw)))
	master="\"127.0.0.1:$1\""
	shift
	workers=""
	i=1
	while [ "$i" -lt "$nw" ]; do
		workers="$workers${workers:+, }\"127.0.0.1:$1\""
		shift
		i=$((i + 1))
	done
	servers=""
	i=0
	while [ "$i" -lt "$ns" ]; do
		servers="$servers${servers:+, }\"127.0.0.1:$1\""
		shift
		i=$((i + 1))
	done
	cluster="{\"master\": [$master], \"worker\": [$workers], \"ps\": [$servers]}"
	pids=""
	i=0
	while [ "$i" -lt $((ns + nw)) ]; do
		if [ "$i" -lt "$ns" ]; then
			task="{\"type\": \"ps\", \"index\": $i}"
			role=ps
			log=$D/ps$i.log
			model=$D/model-ps$i
		elif [ "$i" -eq "$ns" ]; then
			task='{"type": "master", "index": 0}'
			role=worker
			log=$D/log
			model=$D/model
		else
			task="{\"type\": \"worker\", \"index\": $((i - ns - 1))}"
			role=worker
			log=$D/w$((i - ns)).log
			model=$D/model-w$((i - ns))
		fi
		mkdir -p "$model"
		TF_CONFIG="{\"cluster\": $cluster, \"environment\": \"cloud\", \"task\": $task}" \
			TRAINCTL_ROLE=$role SM_MODEL_DIR=$model \
			timeout -k 5 120 "$EX/param_server" train >"$log" 2>&1 &
		pids="$pids $!"
		t_track_pid $!
		i=$((i + 1))
	done
	PS_RC=0
	for p in $pids; do
		t_wait "$p" || PS_RC=1
	done
}

for ns in 1 2; do
	setup "ps$ns"
	start=$(date +%s)
	ps_run "$ns" 2
	echo "# param_server 2 workers $ns servers: rc $PS_RC, accuracy $(accuracy "$D/log"), $(($(date +%s) - start)) s"
	if [ "$PS_RC" -eq 0 ] && acc_ok "$D/log" &&
		[ "$(cat "$D"/ps*.log | grep -c 'all 2 workers done at step 375')" -eq "$ns" ]; then
		t_pass "param_server, 2 workers and $ns servers: accuracy >= $MIN_ACC"
	else
		t_fail "param_server, 2 workers and $ns servers: accuracy >= $MIN_ACC"
		show "$D/log"
		tail -n 5 "$D"/ps*.log "$D"/w*.log | sed 's/^/# /'
	fi
	# Synchronous SGD over the same global batches is data parallelism.
	check "param_server with $ns servers ends within $TOL of mlp_dp -np 2" \
		close "$T_TMP/dp2/model/model.bin" "$D/model/model.bin" "$TOL"
done

# The chief and the other worker crash after step 180: the servers must
# notice and exit non-zero (not hang); the restart resumes at step 150.
setup psr '"checkpoint-steps": 50, "fail-at-step": 180'
ps_run 2 2
rc1=$PS_RC
TRAINCTL_ATTEMPT=2
export TRAINCTL_ATTEMPT
ps_run 2 2
unset TRAINCTL_ATTEMPT
if [ "$rc1" -ne 0 ] && [ "$PS_RC" -eq 0 ] &&
	[ "$(cat "$D"/ps*.log | grep -c 'resumed from checkpoint step 150')" -eq 2 ] &&
	close "$T_TMP/ps2/model/model.bin" "$D/model/model.bin" 0; then
	t_pass "param_server restarted after a crash resumes from the servers' checkpoints"
else
	t_fail "param_server restarted after a crash resumes from the servers' checkpoints"
	show "$D/log"
	tail -n 5 "$D"/ps*.log | sed 's/^/# /'
fi

# ---- bad input: clear errors, no crashes --------------------------------

setup bad '"hidden": "128,x"'
"$EX/mlp_dp" train >"$D/log" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "hyperparameter 'hidden'" "$D/log"; then
	t_pass "mlp_dp rejects a bad hyperparameter by name"
else
	t_fail "mlp_dp rejects a bad hyperparameter by name (rc $rc)"
	show "$D/log"
fi

setup badtf
TF_CONFIG='{"cluster": {"ps": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}}' \
	"$EX/param_server" train >"$D/log" 2>&1
rc1=$?
TF_CONFIG='{"cluster": ' "$EX/param_server" train >>"$D/log" 2>&1
rc2=$?
if [ "$rc1" -eq 1 ] && [ "$rc2" -eq 1 ] &&
	grep -q 'TF_CONFIG names 0 workers' "$D/log" &&
	grep -q 'TF_CONFIG is not JSON' "$D/log"; then
	t_pass "param_server explains a bad TF_CONFIG"
else
	t_fail "param_server explains a bad TF_CONFIG ($rc1, $rc2)"
	show "$D/log"
fi

# A server that gets garbage, a stranger's oversized message and a
# half-open connection drops them and still serves the real job.
setup psg '"epochs": 1'
set -- $(t_free_port 2)
cluster="{\"master\": [\"127.0.0.1:$1\"], \"ps\": [\"127.0.0.1:$2\"]}"
TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"ps\", \"index\": 0}}" \
	timeout -k 5 120 "$EX/param_server" train >"$D/ps0.log" 2>&1 &
ps_pid=$!
t_track_pid "$ps_pid"
/usr/bin/python3 - "$2" <<'EOF'
import socket, struct, sys, time
port = int(sys.argv[1])
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", port)).close()
        break
    except OSError:
        time.sleep(0.1)
for msg in (b"GET / HTTP/1.0\r\n\r\n" + b"x" * 64,
            struct.pack("<IIQdII", 0x31535054, 1, 0, 0.0, 0, 0xFFFFFFFF),
            struct.pack("<IIQdII", 0x31535054, 7, 0, 0.0, 0, 1 << 30)):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(msg)
    s.close()
EOF
TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"master\", \"index\": 0}}" \
	timeout -k 5 120 "$EX/param_server" train >"$D/log" 2>&1
rc=$?
t_wait "$ps_pid"
prc=$?
if [ "$rc" -eq 0 ] && [ "$prc" -eq 0 ] && [ -n "$(accuracy "$D/log")" ]; then
	t_pass "param_server ignores garbage connections and still trains"
else
	t_fail "param_server ignores garbage connections and still trains ($rc, $prc)"
	show "$D/log"
	show "$D/ps0.log"
fi

# A worker with other hyperparameters than its server: both stop, saying
# why, instead of training something inconsistent.
setup psm
set -- $(t_free_port 2)
cluster="{\"master\": [\"127.0.0.1:$1\"], \"ps\": [\"127.0.0.1:$2\"]}"
TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"ps\", \"index\": 0}}" \
	timeout -k 5 60 "$EX/param_server" train >"$D/ps0.log" 2>&1 &
ps_pid=$!
t_track_pid "$ps_pid"
SM_HPS="{$BASE_HPS, \"hidden\": 64}" \
	TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"master\", \"index\": 0}}" \
	timeout -k 5 60 "$EX/param_server" train >"$D/log" 2>&1
rc=$?
t_wait "$ps_pid"
prc=$?
if [ "$rc" -eq 1 ] && [ "$prc" -eq 1 ] &&
	grep -q 'does not match this server' "$D/log" &&
	grep -q 'does not match this server' "$D/ps0.log"; then
	t_pass "param_server worker and server with different hyperparameters both stop with a reason"
else
	t_fail "param_server worker and server with different hyperparameters both stop with a reason ($rc, $prc)"
	show "$D/log"
	show "$D/ps0.log"
fi

t_done
