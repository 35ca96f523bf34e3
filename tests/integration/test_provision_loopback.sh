#!/bin/sh
# SSH provisioning against a real sshd on loopback (no namespaces needed):
# the controller copies the agent, starts it over SSH, runs a job on it,
# finds it again after a restart without provisioning, and refuses a host
# whose key does not match known_hosts. TAP output.
set -u
BUILD=${BUILD:-build}
T=$(mktemp -d /tmp/trainctl-prov.XXXXXX)
SSHD_PID=
CTL_PID=
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
cleanup() {
	[ -n "$CTL_PID" ] && kill "$CTL_PID" 2>/dev/null && wait "$CTL_PID" 2>/dev/null
	if [ -f "$T/work1/agent.pid" ]; then
		kill "$(cat "$T/work1/agent.pid")" 2>/dev/null
	fi
	[ -n "$SSHD_PID" ] && kill "$SSHD_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

if [ ! -x /usr/sbin/sshd ] || [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root and /usr/sbin/sshd"
	exit 0
fi
echo "1..6"
free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
SSH_PORT=$(free_port)
API_PORT=$(free_port)
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
echo "[127.0.0.1]:$SSH_PORT $(cut -d' ' -f1,2 "$T/hostkey.pub")" >"$T/known_hosts"
cat >"$T/inv.json" <<INV
{"hosts": [{"name": "node1", "address": "127.0.0.1", "port": $SSH_PORT,
  "user": "root", "identity_file": "$T/client",
  "known_hosts": "$T/known_hosts", "instance_type": "ml.c5.xlarge",
  "cpus": 2, "agent_path": "$T/agent-bin", "work_dir": "$T/work1"}]}
INV
start_ctl() {
	"$BUILD/bin/trainctld" --listen "127.0.0.1:$API_PORT" \
		--state-dir "$T/state" --inventory "$T/inv.json" -v \
		>>"$T/trainctld.log" 2>&1 &
	CTL_PID=$!
}
host_state() {
	curl -s "http://127.0.0.1:$API_PORT/v1/hosts" | /usr/bin/python3 -c \
		'import json,sys; h=json.load(sys.stdin)["hosts"][0]; print(h["state"], h["error"] or "")' 2>/dev/null
}
wait_state() {
	i=0
	while [ $i -lt 300 ]; do
		s=$(host_state)
		case "$s" in "$1"*) return 0 ;; esac
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
start_ctl
if wait_state ready && [ -x "$T/agent-bin" ]; then
	ok "the agent is copied over SSH, started, and registers"
else
	not_ok "the agent is copied over SSH, started, and registers" "$(host_state); $(tail -5 "$T/trainctld.log")"
fi
export TRAINCTL_ENDPOINT="http://127.0.0.1:$API_PORT"
printf '#!/bin/sh\necho "hello from $SM_CURRENT_HOST"\n' >"$T/train.sh"
chmod +x "$T/train.sh"
"$BUILD/bin/trainctl" create-training-job --name prov-1 --image "file://$T/train.sh" \
	--instance-type ml.c5.xlarge --instance-count 1 \
	--output-path "file://$T/out" >/dev/null
"$BUILD/bin/trainctl" wait prov-1 --timeout 60 2>/dev/null
if [ $? -eq 0 ] && [ -f "$T/out/prov-1/output/model.tar.gz" ]; then
	ok "a job runs on the provisioned host"
else
	not_ok "a job runs on the provisioned host" "$("$BUILD/bin/trainctl" describe-training-job prov-1 2>&1 | head -5)"
fi
if "$BUILD/bin/trainctl" logs prov-1 | grep -q "hello from algo-1"; then
	ok "its log reaches the controller"
else
	not_ok "its log reaches the controller"
fi
out=$("$BUILD/bin/trainctl" create-training-job --name prov-2 --image "file://$T/train.sh" \
	--instance-type ml.p3.2xlarge --instance-count 1 --output-path "file://$T/out" 2>&1)
case "$out" in
*ResourceLimitExceeded*) ok "a type the inventory lacks: ResourceLimitExceeded" ;;
*) not_ok "a type the inventory lacks: ResourceLimitExceeded" "$out" ;;
esac
kill "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
apid=$(cat "$T/work1/agent.pid")
start_ctl
if wait_state ready && [ "$(cat "$T/work1/agent.pid")" = "$apid" ] &&
	[ "$(grep -c 'agent started over SSH' "$T/trainctld.log")" = 1 ]; then
	ok "after a controller restart the running agent comes back, not provisioned again"
else
	not_ok "after a controller restart the running agent comes back, not provisioned again" "$(host_state)"
fi
ssh-keygen -q -t ed25519 -N '' -f "$T/otherkey"
echo "[127.0.0.1]:$SSH_PORT $(cut -d' ' -f1,2 "$T/otherkey.pub")" >"$T/known_hosts"
kill "$apid"
if wait_state "lost host key mismatch"; then
	ok "a host whose key does not match known_hosts is refused and reported"
else
	not_ok "a host whose key does not match known_hosts is refused and reported" "$(host_state)"
fi
exit $fail
