#!/bin/sh
# make demo: start trainctld on a free loopback port with a fresh state
# directory, submit a 2-instance training job through the trainctl CLI,
# show it, stop it, wait for the end and shut the controller down.
set -eu

BIN=${BUILD:-build}/bin
STATE=$(mktemp -d /tmp/trainctl-demo.XXXXXX)
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export TRAINCTL_ENDPOINT="http://127.0.0.1:$PORT"

"$BIN/trainctld" --listen "127.0.0.1:$PORT" --state-dir "$STATE" \
	2>"$STATE/trainctld.log" &
PID=$!
cleanup() {
	kill "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

i=0
until curl -fs "$TRAINCTL_ENDPOINT/healthz" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		echo "demo: trainctld did not start; its log:" >&2
		cat "$STATE/trainctld.log" >&2
		exit 1
	fi
	sleep 0.1
done
echo "== trainctld is up at $TRAINCTL_ENDPOINT (state in $STATE)"

NAME="demo-digits-$(date +%s)"
echo "== create-training-job $NAME (2 x ml.c5.xlarge)"
"$BIN/trainctl" create-training-job --name "$NAME" --image trainctl/python \
	--instance-type ml.c5.xlarge --instance-count 2 \
	--hyperparameter epochs=5 --hyperparameter learning-rate=0.1 \
	--output-path "file://$STATE/output"
echo "== describe-training-job $NAME"
"$BIN/trainctl" describe-training-job "$NAME"
echo "== list-training-jobs"
"$BIN/trainctl" list-training-jobs
echo "== stop-training-job $NAME (no agents run jobs yet: the job stops at once)"
"$BIN/trainctl" stop-training-job "$NAME"
rc=0
"$BIN/trainctl" wait "$NAME" --timeout 30 || rc=$?
echo "== final state"
"$BIN/trainctl" describe-training-job "$NAME"
# wait exits 4 for a Stopped job: that is the expected outcome here.
[ "$rc" -eq 4 ] || [ "$rc" -eq 0 ]
