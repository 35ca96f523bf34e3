#!/bin/sh
# make demo: train a small MLP on sklearn's handwritten digits on a 2-host
# local cluster, the SageMaker way.
#
# Starts trainctld with an embedded cluster of 2 agents on a free loopback
# port and a fresh state directory, puts the data and the code into its
# embedded object store (s3://demo/...), submits examples/digits/job.json
# (2 x ml.m5.large, script mode, channel `train`) with the trainctl CLI,
# follows the job's logs, prints the final status, the metrics and where the
# model is, and stops the controller. Exits non-zero when anything fails.
#
# BUILD names the build directory (default build). The state directory is
# kept (it holds the model); its path is printed at the end.
set -eu

cd "$(dirname "$0")/.."
BIN=${BUILD:-build}/bin
PY=/usr/bin/python3
DIGITS=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
TIMEOUT=${DEMO_TIMEOUT:-300}

fail() {
	echo "demo: $*" >&2
	exit 1
}

for b in trainctld trainagent trainctl; do
	[ -x "$BIN/$b" ] || fail "$BIN/$b is not built (run make)"
done
[ -x "$PY" ] || fail "$PY not found (Debian's python3 with numpy runs the training script)"
"$PY" -c 'import numpy' 2>/dev/null || fail "$PY has no numpy (apt-get install python3-numpy)"
[ -r "$DIGITS" ] || fail "$DIGITS not found (apt-get install python3-sklearn)"

STATE=$(mktemp -d /tmp/trainctl-demo.XXXXXX)
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export TRAINCTL_ENDPOINT="http://127.0.0.1:$PORT"
# The CLI signs requests when AWS keys are set; the demo controller checks none.
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN 2>/dev/null || true

"$BIN/trainctld" --listen "127.0.0.1:$PORT" --state-dir "$STATE" --local-hosts 2 \
	2>"$STATE/trainctld.log" &
PID=$!
OK=0
cleanup() {
	kill "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
	if [ "$OK" -ne 1 ]; then
		echo "== demo failed; last lines of the controller's and agents' logs:" >&2
		for f in "$STATE/trainctld.log" "$STATE"/hosts/*/agent.log; do
			[ -f "$f" ] || continue
			echo "--- $f" >&2
			tail -n 15 "$f" >&2
		done
		echo "(state kept in $STATE)" >&2
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

i=0
until curl -fs "$TRAINCTL_ENDPOINT/healthz" >/dev/null 2>&1; do
	i=$((i + 1))
	kill -0 "$PID" 2>/dev/null || fail "trainctld exited at start"
	[ $i -le 100 ] || fail "trainctld did not answer within 10 s"
	sleep 0.1
done
echo "== trainctld is up at $TRAINCTL_ENDPOINT (state in $STATE)"

# Both local hosts registered?
i=0
until curl -fs "$TRAINCTL_ENDPOINT/v1/hosts" 2>/dev/null | "$PY" -c '
import json, sys
hosts = json.load(sys.stdin).get("hosts", [])
sys.exit(0 if sum(h.get("state") in ("ready", "busy") for h in hosts) >= 2 else 1)' 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 300 ] || fail "the 2 local hosts did not register within 30 s"
	sleep 0.1
done
echo "== 2 local hosts are ready"

# Data: the embedded store is the folder <state-dir>/s3/<bucket>/<key>.
mkdir -p "$STATE/s3/demo/digits" "$STATE/s3/demo/code"
cp "$DIGITS" "$STATE/s3/demo/digits/digits.csv.gz"
echo "== data: s3://demo/digits/digits.csv.gz (1797 images of 8x8 pixels)"

# Code: examples/digits as a tar.gz, as the SageMaker SDK packs source_dir.
CODE_URI=s3://demo/code/sourcedir.tar.gz
if "$BIN/trainctl" help 2>&1 | grep -q 'upload-source' &&
	"$BIN/trainctl" upload-source examples/digits --to s3://demo/code/ >/dev/null 2>&1; then
	echo "== code: trainctl upload-source examples/digits -> $CODE_URI"
else
	tar czf "$STATE/s3/demo/code/sourcedir.tar.gz" -C examples/digits .
	echo "== code: tar czf of examples/digits -> $CODE_URI"
fi

NAME="digits-$(date +%Y%m%d-%H%M%S)"
echo "== create-training-job $NAME (examples/digits/job.json: 2 x ml.m5.large)"
"$BIN/trainctl" create-training-job --cli-input-json file://examples/digits/job.json --name "$NAME"

if "$BIN/trainctl" help 2>&1 | grep -q '^ *logs'; then
	echo "== logs -f $NAME"
	timeout "$TIMEOUT" "$BIN/trainctl" logs -f "$NAME" || echo "(logs -f ended with status $?)"
fi
rc=0
"$BIN/trainctl" wait "$NAME" --timeout "$TIMEOUT" || rc=$?
echo "== describe-training-job $NAME"
"$BIN/trainctl" describe-training-job "$NAME"

DESC=$("$BIN/trainctl" --output json describe-training-job "$NAME")
STATUS=$(printf '%s' "$DESC" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["TrainingJobStatus"])')
[ "$rc" -eq 0 ] && [ "$STATUS" = Completed ] || fail "job $NAME ended $STATUS (trainctl wait exit $rc)"

echo "== final metrics (FinalMetricDataList)"
printf '%s' "$DESC" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
for m in d.get("FinalMetricDataList", []):
    print("   %-22s %s" % (m["MetricName"], m["Value"]))
print("   training time           %s s" % d.get("TrainingTimeInSeconds"))'

MODEL="$STATE/s3/demo/output/$NAME/output/model.tar.gz"
[ -f "$MODEL" ] || fail "no model at $MODEL"
echo "== model: $(printf '%s' "$DESC" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["ModelArtifacts"]["S3ModelArtifacts"])')"
echo "   = $MODEL"
tar tzvf "$MODEL" | sed 's/^/   /'
"$PY" - "$MODEL" <<'EOF'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as tf:
    names = [n.lstrip("./") for n in tf.getnames()]
    m = json.load(tf.extractfile([x for x in tf.getmembers() if x.name.endswith("metrics.json")][0]))
hosts = ["algo-1", "algo-2"]
missing = [h for h in hosts if "model-%s.npz" % h not in names]
print("   metrics.json: held-out accuracy %.4f on %d images (%d training rows on %s), %s s"
      % (m["accuracy"], m["test_rows"], m["train_rows"], m["host"], m["seconds"]))
if missing:
    sys.exit("demo: no weights of %s in the model" % ", ".join(missing))
if m["accuracy"] < 0.9:
    sys.exit("demo: accuracy %.4f is below 0.9" % m["accuracy"])
EOF
OK=1
echo "== done: $NAME Completed; state (model, logs) kept in $STATE"
