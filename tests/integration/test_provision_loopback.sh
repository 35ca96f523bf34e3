#!/bin/sh
# SSH provisioning against a real sshd on loopback (no namespaces needed):
# the controller copies the agent to two hosts of two instance types,
# starts it over SSH, runs a job on it, places a queued job of one type
# behind a long queue of the other, finds the agents again after a restart
# without provisioning, and refuses a host whose key does not match
# known_hosts. TAP output.
set -u
. "$(dirname "$0")/../lib.sh"
BUILD=${BUILD:-build}

if [ ! -x /usr/sbin/sshd ] || [ "$(id -u)" != 0 ]; then
	t_skip_all "needs root and /usr/sbin/sshd"
fi
t_hermetic_aws
t_tmpdir trainctl-prov
T=$T_TMP
# The agents (started over SSH, not ours to wait for) write their PIDs.
t_on_exit 'for w in work1 work2; do
	[ -f "$T/$w/agent.pid" ] && t_stop "$(cat "$T/$w/agent.pid")"
done'
t_plan 7
ports=$(t_free_port 2)
SSH_PORT=${ports% *}
API_PORT=${ports#* }
mkdir -p /run/sshd "$T/home"
ssh-keygen -q -t ed25519 -N '' -f "$T/hostkey"
ssh-keygen -q -t ed25519 -N '' -f "$T/client"
cp "$T/client.pub" "$T/authorized_keys"
cat >"$T/sshd_config" <<CONF
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $T/hostkey
AuthorizedKeysFile $T/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $T/sshd.pid
CONF
/usr/sbin/sshd -f "$T/sshd_config" -E "$T/sshd.log"
i=0
while [ ! -s "$T/sshd.pid" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
SSHD_PID=$(cat "$T/sshd.pid" 2>/dev/null)
[ -n "$SSHD_PID" ] && t_track_pid "$SSHD_PID"
echo "[127.0.0.1]:$SSH_PORT $(cut -d' ' -f1,2 "$T/hostkey.pub")" >"$T/known_hosts"
cat >"$T/inv.json" <<INV
{"hosts": [{"name": "node1", "address": "127.0.0.1", "port": $SSH_PORT,
  "user": "root", "identity_file": "$T/client",
  "known_hosts": "$T/known_hosts", "instance_type": "ml.c5.xlarge",
  "cpus": 2, "agent_path": "$T/agent-bin", "work_dir": "$T/work1"},
 {"name": "node2", "address": "127.0.0.1", "port": $SSH_PORT,
  "user": "root", "identity_file": "$T/client",
  "known_hosts": "$T/known_hosts", "instance_type": "ml.g5.xlarge",
  "cpus": 2, "agent_path": "$T/agent-bin", "work_dir": "$T/work2"}]}
INV
# start_ctl: the controller on API_PORT, its state and log
# ($T/trainctld.log) kept across restarts.
start_ctl() {
	t_start_trainctld -p "$API_PORT" --inventory "$T/inv.json" -v
}
# host_state [NAME]: "state error" of node1 (or NAME).
host_state() {
	curl -s "http://127.0.0.1:$API_PORT/v1/hosts" | /usr/bin/python3 -c \
		'import json,sys; h=[h for h in json.load(sys.stdin)["hosts"] if h["name"] == sys.argv[1]][0]; print(h["state"], h["error"] or "")' "${1:-node1}" 2>/dev/null
}
# wait_state STATE [NAME]: until node1 (or NAME) is in STATE, 30 s at most.
wait_state() {
	i=0
	while [ $i -lt 300 ]; do
		s=$(host_state "${2:-node1}")
		case "$s" in "$1"*) return 0 ;; esac
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
start_ctl
if wait_state ready && wait_state ready node2 && [ -x "$T/agent-bin" ]; then
	t_pass "the agent is copied over SSH, started, and registers"
else
	t_fail "the agent is copied over SSH, started, and registers" "$(host_state); $(tail -5 "$T/trainctld.log")"
fi
export TRAINCTL_ENDPOINT="http://127.0.0.1:$API_PORT"
printf '#!/bin/sh\necho "hello from $SM_CURRENT_HOST"\n' >"$T/train.sh"
chmod +x "$T/train.sh"
"$BUILD/bin/trainctl" create-training-job --name prov-1 --image "file://$T/train.sh" \
	--instance-type ml.c5.xlarge --instance-count 1 \
	--output-path "file://$T/out" >/dev/null
"$BUILD/bin/trainctl" wait prov-1 --timeout 60 2>/dev/null
if [ $? -eq 0 ] && [ -f "$T/out/prov-1/output/model.tar.gz" ]; then
	t_pass "a job runs on the provisioned host"
else
	t_fail "a job runs on the provisioned host" "$("$BUILD/bin/trainctl" describe-training-job prov-1 2>&1 | head -5)"
fi
if "$BUILD/bin/trainctl" logs prov-1 | grep -q "hello from algo-1"; then
	t_pass "its log reaches the controller"
else
	t_fail "its log reaches the controller"
fi
# Both hosts busy, then 70 jobs queued for node1's type and one for
# node2's: when node2 frees up, its job starts, however long the other
# type's queue before it (a pass reads the queue per type of free host).
printf '#!/bin/sh\nsleep 300\n' >"$T/long.sh"
chmod +x "$T/long.sh"
create() { # NAME IMAGE TYPE
	"$BUILD/bin/trainctl" create-training-job --name "$1" --image "file://$T/$2" \
		--instance-type "$3" --instance-count 1 --output-path "file://$T/out" >/dev/null
}
status() {
	"$BUILD/bin/trainctl" --output json describe-training-job "$1" 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["TrainingJobStatus"], j["SecondaryStatus"])' 2>/dev/null
}
create long-a long.sh ml.c5.xlarge
create long-b long.sh ml.g5.xlarge
i=0
while [ $i -lt 300 ] && { [ "$(status long-a)" != "InProgress Training" ] || [ "$(status long-b)" != "InProgress Training" ]; }; do
	sleep 0.1
	i=$((i + 1))
done
q=1
while [ $q -le 70 ]; do create "queued-a-$q" train.sh ml.c5.xlarge; q=$((q + 1)); done
create queued-b train.sh ml.g5.xlarge
sleep 1
"$BUILD/bin/trainctl" stop-training-job long-b >/dev/null
"$BUILD/bin/trainctl" wait queued-b --timeout 60 >/dev/null 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(status queued-a-1)" = "InProgress Starting" ]; then
	t_pass "a queued job of one type starts when its host frees up, behind 70 queued for another type"
else
	t_fail "a queued job of one type starts when its host frees up, behind 70 queued for another type" \
		"wait: $rc; queued-b: $(status queued-b); queued-a-1: $(status queued-a-1)"
fi
q=1
while [ $q -le 70 ]; do
	"$BUILD/bin/trainctl" stop-training-job "queued-a-$q" >/dev/null
	q=$((q + 1))
done
"$BUILD/bin/trainctl" stop-training-job long-a >/dev/null
"$BUILD/bin/trainctl" wait long-a --timeout 60 >/dev/null 2>&1
out=$("$BUILD/bin/trainctl" create-training-job --name prov-2 --image "file://$T/train.sh" \
	--instance-type ml.p3.2xlarge --instance-count 1 --output-path "file://$T/out" 2>&1)
case "$out" in
*ResourceLimitExceeded*) t_pass "a type the inventory lacks: ResourceLimitExceeded" ;;
*) t_fail "a type the inventory lacks: ResourceLimitExceeded" "$out" ;;
esac
t_stop "$T_PID" 60
apid=$(cat "$T/work1/agent.pid")
start_ctl
if wait_state ready && [ "$(cat "$T/work1/agent.pid")" = "$apid" ] &&
	[ "$(grep -c 'agent started over SSH' "$T/trainctld.log")" = 2 ]; then
	t_pass "after a controller restart the running agent comes back, not provisioned again"
else
	t_fail "after a controller restart the running agent comes back, not provisioned again" "$(host_state)"
fi
ssh-keygen -q -t ed25519 -N '' -f "$T/otherkey"
echo "[127.0.0.1]:$SSH_PORT $(cut -d' ' -f1,2 "$T/otherkey.pub")" >"$T/known_hosts"
kill "$apid"
if wait_state "lost host key mismatch"; then
	t_pass "a host whose key does not match known_hosts is refused and reported"
else
	t_fail "a host whose key does not match known_hosts is refused and reported" "$(host_state)"
fi
t_done
