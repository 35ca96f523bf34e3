#!/bin/bash
# trainctl cluster: a cluster of hosts on this machine, and a controller
# pointed at them.
#
#   cluster.sh up --hosts N [options] [-- TRAINCTLD-ARGS...]
#       the N hosts (hosts-up) and a trainctld that provisions them over SSH;
#       waits until GET /v1/hosts says every host is ready, then prints the
#       exports a client needs (eval "$(cluster.sh up --hosts 3)").
#   cluster.sh down [--prefix P] [--state-dir DIR] [--keep] [--force]
#       stops that trainctld (by PID) and tears the hosts down (and the
#       registry, with its images unless --keep).
#   cluster.sh hosts-up N [options]       only the hosts (tests/cluster/up.sh)
#   cluster.sh hosts-down [options]       only the hosts (tests/cluster/down.sh)
#   cluster.sh status [--prefix P]        what runs, one line per host
#   cluster.sh env [--prefix P]           the exports again
#   cluster.sh exec HOST [--] CMD...      runs CMD inside HOST's namespaces
#                                         (network, hostname, mounts)
#   cluster.sh sshd-stop|sshd-start HOST  faults: stops HOST's sshd (by PID),
#                                         starts it again (fresh UTS and mount
#                                         namespaces when nothing else ran)
#   cluster.sh link-down|link-up HOST     faults: a network partition of HOST
#                                         (its veth down), and the heal
#
# A host is a network namespace <prefix>-nodeK on a Linux bridge <prefix>-br
# in the root namespace. The bridge holds the gateway address NET.1/24, host
# K holds NET.(10+K) (node1 = NET.11) on its eth0. NET is a private /24 used
# only inside these namespaces: 10.211.0 for the default prefix "tc", another
# 10.211.X for other prefixes (--net overrides). The hosts have no route
# anywhere else: they reach each other and the bridge address, nothing more.
#
# Each host runs its own sshd (own ed25519 host key, key-only auth,
# ListenAddress its own address only, UsePAM no, StrictModes no) in its own
# UTS namespace (hostname nodeK: OpenMPI and gloo tell hosts apart by name)
# and its own mount namespace, in which:
#   /etc/hosts          = /etc/netns/<ns>/hosts, naming every host
#   /root               = <state>/hosts/nodeK/home: an empty home (with only
#                         .ssh/ for host-to-host ssh), so ssh runs no shell
#                         start-up files (pyenv costs ~85 ms per command)
#   /var/lib/trainagent = <state>/hosts/nodeK/work: the agent's default work
#                         directory, private to the host as on real machines
#   /sys                = the namespace's own (ip netns exec), and in it
#                         /sys/fs/cgroup mounted as in the root namespace
#                         (the same hierarchies): podman runs containers
# Everything else (/tmp, the repository, the controller's embedded store) is
# the same file system on every host.
#
# The state directory (default /tmp/trainctl-cluster-<prefix>) holds:
#   .trainctl-cluster marker: down removes only a folder that has it
#   cluster.env       what was created (read by down/status/env)
#   id_ed25519[.pub]  the client key every host accepts (authorized_keys)
#   known_hosts       every host's key, under its name and its address
#   ssh_config, ssh   `ssh -F ssh_config` settings, and a wrapper taking ssh's
#                     calling convention (for mpirun's plm_rsh_agent, pdsh)
#   hostfile          the host names, one per line
#   inventory.json    the hosts in trainctld's --inventory format
#   hosts/nodeK/      sshd_config, host key, sshd.pid, sshd.log, home/, work/
#   registry/         (--registry) config.yml, registry.pid, registry.log,
#                     data/ (the images pushed to it)
#   controller/       (up) credentials, trainctld.pid, trainctld.log, state/
#   env.sh            (up) the exports
#
# Controller and credentials: the agents in the namespaces can reach only
# the bridge address, not the root namespace's loopback, so trainctld
# listens on NET.1:PORT (the bridge) and advertises http://NET.1:PORT.
# trainctld refuses a non-loopback --listen without credentials, so `up`
# generates an AWS-style shared-credentials file (random key) and passes
# --credentials; the printed AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are
# what trainctl, boto3 and the aws CLI sign with. The bridge address is not
# reachable from outside this machine. --add-credentials FILE appends more
# profiles (users and roles, docs/security.md) to that file.
#
# TLS: with --tls, `up` makes a CA and a certificate for NET.1 with openssl
# in controller/tls/ (keys 0600), starts trainctld with --tls-cert/--tls-key
# /--tls-ca (the controller pins the CA in every agent it provisions),
# serves https://NET.1:PORT and exports AWS_CA_BUNDLE, which trainctl,
# boto3 and the aws CLI verify with.
#
# Registry: with --registry [PORT] (default 5000; --registry=PORT for a
# port below 1024), hosts-up and up also start a container image registry
# (Debian's docker-registry, distribution 2.8) on NET.1:PORT, the bridge
# address every host reaches: plain HTTP, no credentials, filesystem storage
# in <state>/registry/data. Its PID goes in cluster.env and down stops it by
# PID. up passes --insecure-registry NET.1:PORT to trainctld (hosts pull
# with TLS verification off, which lets podman fall back to plain HTTP) and
# prints export TRAINCTL_REGISTRY=NET.1:PORT; push images to it from this
# machine, e.g. skopeo copy --dest-tls-verify=false oci:DIR \
# docker://$TRAINCTL_REGISTRY/train/x:1 (tests/integration/imagelib.py).
# Something else listening on PORT is a conflict (exit 3).
#
# Ownership: the bridge carries the alias "trainctl-cluster:<state dir>".
# hosts-up refuses (exit 3) when the bridge, a namespace, /etc/netns/<ns> or
# an address of NET is there and is not ours. cluster.env records the owner:
# the process named by TRAINCTL_CLUSTER_OWNER (a PID; a test run passes its
# own) with its start time, or none. A cluster of the same prefix or state
# dir that is still live (its owner runs; without an owner, one of its sshd,
# trainctld or registry runs) is never torn down by up or hosts-up: they
# refuse (exit 3), unless the caller is that owner. A leftover (its owner
# is gone, or nothing of it runs) is reclaimed: torn down first. down and
# hosts-down refuse (exit 3) a cluster whose owner runs and is not the
# caller's TRAINCTL_CLUSTER_OWNER, unless --force. Creating and removing
# clusters is serialized machine-wide by flock(1) on
# /run/lock/trainctl-cluster.lock (TRAINCTL_CLUSTER_LOCK overrides), so two
# runs never both pick the same names. Down is idempotent.
#
# Exit status: 0 ok, 1 failed, 2 usage, 3 conflict with something not ours,
# 77 skipped: not root (network namespaces need CAP_NET_ADMIN).
set -u
umask 022
if [ -n "${TRAINCTL_CLUSTER_TRACE:-}" ]; then
	PS4='+ $EPOCHREALTIME '
	set -x
fi

PROG=${TRAINCTL_CLUSTER_PROG:-cluster.sh}
EXIT_FAIL=1
EXIT_USAGE=${TRAINCTL_CLUSTER_USAGE_EXIT:-2}
EXIT_CONFLICT=3
EXIT_SKIP=77
MARK=trainctl-cluster
MAX_HOSTS=64

# The registry's functions live beside this file (installed with it).
. "$(dirname "$(readlink -f "$0")")/cluster-registry.sh" || exit 1

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() {
	say "error: $*"
	exit $EXIT_FAIL
}
usage_error() {
	say "error: $*"
	usage >&2
	exit "$EXIT_USAGE"
}
usage() {
	cat <<EOF
usage: $PROG up --hosts N [--prefix P] [--state-dir DIR] [--net A.B.C]
                  [--port PORT] [--instance-type T[,T...]] [--cpus N] [--gpus N]
                  [--agent-path PATH] [--trainctld PATH] [--timeout S]
                  [--tls] [--add-credentials FILE] [--registry [PORT]]
                  [--host-env NAME=VALUE]... [-- TRAINCTLD-ARGS...]
       $PROG down [--prefix P] [--state-dir DIR] [--keep] [--force]
       $PROG hosts-up N [--prefix P] [--state-dir DIR] [--net A.B.C]
                  [--instance-type T[,T...]] [--cpus N] [--gpus N] [--agent-path PATH]
                  [--registry [PORT]] [--host-env NAME=VALUE]...
       $PROG hosts-down [--prefix P] [--state-dir DIR] [--keep] [--force]
       $PROG status [--prefix P] [--state-dir DIR]
       $PROG env [--prefix P] [--state-dir DIR]
       $PROG exec HOST [--prefix P] [--state-dir DIR] [--] CMD [ARGS...]
       $PROG sshd-stop|sshd-start|link-down|link-up HOST [--prefix P] [--state-dir DIR]
EOF
}

now_ms() { date +%s%3N; }

need_root() {
	if [ "$(id -u)" != 0 ]; then
		say "skipped: needs root (CAP_NET_ADMIN) to create network namespaces"
		exit $EXIT_SKIP
	fi
	local t
	for t in ip unshare nsenter ssh-keygen; do
		command -v "$t" >/dev/null 2>&1 || die "'$t' not found (install iproute2, util-linux, openssh-client)"
	done
	[ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd not found (install openssh-server)"
}

# ------------------------------------------------------------ options

PREFIX=tc
STATE=""
NET=""
NET_GIVEN=0
NHOSTS=""
PORT=8080
ITYPES=ml.c5.xlarge
CPUS=""
GPUS=0
AGENT_PATH=""
TRAINCTLD=""
TIMEOUT=60
KEEP=0
FORCE=0
TLS=0
ADD_CREDS=""
REGISTRY_PORT=""
REGISTRY_BIN=${TRAINCTL_REGISTRY_BIN:-/usr/bin/docker-registry}
EXTRA=()
REST=()
HOST_ENV=()

parse_opts() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--prefix) PREFIX=${2?}; shift 2 ;;
		--prefix=*) PREFIX=${1#*=}; shift ;;
		--state-dir) STATE=${2?}; shift 2 ;;
		--state-dir=*) STATE=${1#*=}; shift ;;
		--net) NET=${2?}; NET_GIVEN=1; shift 2 ;;
		--net=*) NET=${1#*=}; NET_GIVEN=1; shift ;;
		--hosts) NHOSTS=${2?}; shift 2 ;;
		--hosts=*) NHOSTS=${1#*=}; shift ;;
		--port) PORT=${2?}; shift 2 ;;
		--port=*) PORT=${1#*=}; shift ;;
		--instance-type) ITYPES=${2?}; shift 2 ;;
		--instance-type=*) ITYPES=${1#*=}; shift ;;
		--host-env) HOST_ENV+=("${2?}"); shift 2 ;;
		--host-env=*) HOST_ENV+=("${1#*=}"); shift ;;
		--cpus) CPUS=${2?}; shift 2 ;;
		--cpus=*) CPUS=${1#*=}; shift ;;
		--gpus) GPUS=${2?}; shift 2 ;;
		--gpus=*) GPUS=${1#*=}; shift ;;
		--agent-path) AGENT_PATH=${2?}; shift 2 ;;
		--agent-path=*) AGENT_PATH=${1#*=}; shift ;;
		--trainctld) TRAINCTLD=${2?}; shift 2 ;;
		--trainctld=*) TRAINCTLD=${1#*=}; shift ;;
		--timeout) TIMEOUT=${2?}; shift 2 ;;
		--timeout=*) TIMEOUT=${1#*=}; shift ;;
		--keep) KEEP=1; shift ;;
		--force) FORCE=1; shift ;;
		--tls) TLS=1; shift ;;
		--add-credentials) ADD_CREDS=${2?}; shift 2 ;;
		--add-credentials=*) ADD_CREDS=${1#*=}; shift ;;
		--registry)
			# An optional PORT: a number of 1024 or more (1..64 is a host count).
			if [[ ${2:-} =~ ^[0-9]+$ ]] && [ "$2" -ge 1024 ]; then
				REGISTRY_PORT=$2
				shift 2
			else
				REGISTRY_PORT=5000
				shift
			fi
			;;
		--registry=*) REGISTRY_PORT=${1#*=}; shift ;;
		-h | --help) usage; exit 0 ;;
		--) shift; EXTRA=("$@"); break ;;
		-*) usage_error "unknown option '$1'" ;;
		*) REST+=("$1"); shift ;;
		esac
	done
	[[ $PREFIX =~ ^[a-z][a-z0-9]{0,7}$ ]] ||
		usage_error "--prefix '$PREFIX': 1 to 8 lower-case letters and digits, starting with a letter"
	if [ -z "$NET" ]; then
		if [ "$PREFIX" = tc ]; then
			NET=10.211.0
		else
			# Another /24 per prefix; a clash is caught by the checks below.
			NET=10.211.$((1 + $(printf '%s' "$PREFIX" | cksum | cut -d' ' -f1) % 250))
		fi
	fi
	[[ $NET =~ ^10\.[0-9]{1,3}\.[0-9]{1,3}$ ]] ||
		usage_error "--net '$NET': expected 10.B.C (a private /24 NET.0/24)"
	[ -n "$STATE" ] || STATE=/tmp/trainctl-cluster-$PREFIX
	case "$STATE" in
	/*) ;;
	*) STATE=$PWD/$STATE ;;
	esac
	STATE=${STATE%/}
	BR=$PREFIX-br
	[[ $PORT =~ ^[0-9]+$ ]] && [ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ] ||
		usage_error "--port '$PORT'"
	[ -z "$REGISTRY_PORT" ] || { [[ $REGISTRY_PORT =~ ^[0-9]+$ ]] && [ "$REGISTRY_PORT" -ge 1 ] &&
		[ "$REGISTRY_PORT" -le 65535 ]; } || usage_error "--registry '$REGISTRY_PORT': a port"
	[[ $TIMEOUT =~ ^[0-9]+$ ]] || usage_error "--timeout '$TIMEOUT': whole seconds"
	[[ $GPUS =~ ^[0-9]+$ ]] || usage_error "--gpus '$GPUS'"
	[ -z "$CPUS" ] || [[ $CPUS =~ ^[0-9]+$ ]] || usage_error "--cpus '$CPUS'"
	local e
	for e in ${HOST_ENV[@]+"${HOST_ENV[@]}"}; do
		[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_./:-]*$ ]] ||
			usage_error "--host-env '$e': NAME=VALUE"
	done
}

ns_name() { echo "$PREFIX-node$1"; }
host_name() { echo "node$1"; }
host_addr() { echo "$NET.$((10 + $1))"; }
veth_name() { echo "$PREFIX-v$1"; }

# ------------------------------------------------------------ ownership

N_NEW=0

# Loads cluster.env when present; sets N_CREATED (0 when absent).
load_state() {
	N_CREATED=0
	REGISTRY_ADDR=""
	REGISTRY_PID=""
	CLUSTER_OWNER=""
	if [ -f "$STATE/cluster.env" ]; then
		# shellcheck disable=SC1091
		. "$STATE/cluster.env"
		N_CREATED=${CLUSTER_HOSTS:-0}
		PREFIX=${CLUSTER_PREFIX:-$PREFIX}
		[ "$NET_GIVEN" = 1 ] || NET=${CLUSTER_NET:-$NET}
		BR=$PREFIX-br
	fi
}

bridge_alias() { ip -o link show dev "$1" 2>/dev/null | sed -n 's/.*alias \([^ \\]*\).*/\1/p'; }

bridge_is_ours() { [ "$(bridge_alias "$BR")" = "$MARK:$STATE" ]; }

ns_exists() { [ -e "/run/netns/$1" ]; }

# The namespaces named like ours (prefix-nodeK), whatever created them.
our_named_ns() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$PREFIX-node[0-9]+\$" || true; }

# Serializes creating and removing clusters on this machine (fd 9; every
# daemon started below gets 9>&- so that none holds the lock).
LOCK=${TRAINCTL_CLUSTER_LOCK:-/run/lock/trainctl-cluster.lock}
LOCKED=0
lock_names() {
	[ $LOCKED = 0 ] || return 0
	command -v flock >/dev/null 2>&1 || return 0
	[ -d "$(dirname "$LOCK")" ] || LOCK=/tmp/.trainctl-cluster.lock
	exec 9>>"$LOCK" || die "cannot open the lock file $LOCK"
	flock -w 120 9 || die "$LOCK: held by another cluster.sh for 120 s"
	LOCKED=1
}
unlock_names() {
	[ $LOCKED = 1 ] || return 0
	flock -u 9 2>/dev/null
	exec 9>&-
	LOCKED=0
}

# Field 22 of /proc/PID/stat: the start time, which tells a reused PID.
proc_start() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	# shellcheck disable=SC2086
	set -- $s
	echo "${20}"
}

# The caller's owner ("PID START"), from TRAINCTL_CLUSTER_OWNER; "" if none.
my_owner() {
	local p=${TRAINCTL_CLUSTER_OWNER:-} st
	[[ $p =~ ^[1-9][0-9]*$ ]] || return 0
	st=$(proc_start "$p") || return 0
	echo "$p $st"
}

# Whether the owner recorded in cluster.env still runs.
owner_alive() {
	[ -n "${CLUSTER_OWNER:-}" ] || return 1
	local p=${CLUSTER_OWNER%% *}
	pid_alive "$p" && [ "$p $(proc_start "$p")" = "$CLUSTER_OWNER" ]
}

owner_desc() { # "pid N (command line)"
	local p=${CLUSTER_OWNER%% *}
	echo "pid $p ($(cmdline_of "$p" | cut -c1-80))"
}

# Prints why the cluster of STATE is live and returns 0, or returns 1: its
# owner runs; without an owner, one of its daemons runs.
cluster_live() {
	if [ -n "${CLUSTER_OWNER:-}" ]; then
		owner_alive || return 1
		echo "its owner $(owner_desc) runs"
		return 0
	fi
	local f p
	if p=$(pid_from "$STATE/controller/trainctld.pid" trainctld); then
		echo "its trainctld (pid $p) runs"
		return 0
	fi
	if p=$(registry_pid); then
		echo "its registry (pid $p) runs"
		return 0
	fi
	for f in "$STATE"/hosts/*/sshd.pid; do
		if p=$(pid_from "$f" "$STATE/hosts/"); then
			echo "its sshd (pid $p) runs"
			return 0
		fi
	done
	return 1
}

# up, hosts-up: exit 3 when the cluster of STATE is live and the caller is
# not its owner.
refuse_if_live() {
	local why
	why=$(cluster_live) || return 0
	if [ -n "${CLUSTER_OWNER:-}" ] && [ "$(my_owner)" = "$CLUSTER_OWNER" ]; then
		return 0
	fi
	say "error: cluster '$PREFIX' (state $STATE) is live: $why; not touching it." \
		"Pick another --prefix/--state-dir, or take it down first ($PROG down --prefix $PREFIX)"
	exit $EXIT_CONFLICT
}

# down, hosts-down: exit 3 when the cluster's owner runs and is not the
# caller (unless --force).
refuse_if_not_owner() {
	[ "$FORCE" = 0 ] || return 0
	owner_alive || return 0
	[ "$(my_owner)" != "$CLUSTER_OWNER" ] || return 0
	say "error: cluster '$PREFIX' (state $STATE) belongs to $(owner_desc), which still runs;" \
		"not tearing it down (--force does)"
	exit $EXIT_CONFLICT
}

# Refuses (exit 3) when something not ours holds the names or addresses.
check_conflicts() {
	local ours=0 ns
	if ip link show dev "$BR" >/dev/null 2>&1; then
		if bridge_is_ours; then
			ours=1
		else
			say "error: bridge $BR exists and is not this cluster's (alias '$(bridge_alias "$BR")'); use another --prefix"
			exit $EXIT_CONFLICT
		fi
	fi
	for ns in $(our_named_ns); do
		if [ $ours = 0 ] && ! grep -qsxF "# $MARK $STATE" "/etc/netns/$ns/hosts"; then
			say "error: network namespace $ns exists and is not this cluster's; use another --prefix"
			exit $EXIT_CONFLICT
		fi
	done
	# Any address of NET.0/24 on an interface other than our bridge.
	local line dev
	while read -r line; do
		dev=$(echo "$line" | awk '{print $2}')
		if [ "$dev" != "$BR" ]; then
			say "error: $NET.0/24 is in use on $dev ($line); pass another --net"
			exit $EXIT_CONFLICT
		fi
	done < <(ip -4 -o addr show | awk -v net="$NET." 'index($4, net) == 1')
	# A route that already covers NET.0/24 through another device.
	while read -r line; do
		case "$line" in
		default* | "") continue ;;
		esac
		dev=$(echo "$line" | sed -n 's/.* dev \([^ ]*\).*/\1/p')
		if [ -n "$dev" ] && [ "$dev" != "$BR" ]; then
			say "error: a route covers $NET.0/24 through $dev ($line); pass another --net"
			exit $EXIT_CONFLICT
		fi
	done < <(ip -4 route show match "$NET.1" 2>/dev/null)
	return 0
}

# ------------------------------------------------------------ processes

pid_alive() { [ -n "${1:-}" ] && [ -d "/proc/$1" ] && ! grep -qs '^State:[[:space:]]*Z' "/proc/$1/status"; }

# Waits until none of the PIDs is alive, at most $1 tenths of a second.
wait_gone() {
	local tenths=$1 p any
	shift
	while [ "$tenths" -gt 0 ]; do
		any=0
		for p in "$@"; do
			pid_alive "$p" && any=1
		done
		[ $any = 0 ] && return 0
		sleep 0.1
		tenths=$((tenths - 1))
	done
	return 1
}

# TERM, then KILL after $1 tenths of a second, the given PIDs.
term_pids() {
	local tenths=$1 p
	shift
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null
	if ! wait_gone "$tenths" "$@"; then
		for p in "$@"; do
			pid_alive "$p" && kill -KILL "$p" 2>/dev/null
		done
		wait_gone 20 "$@"
	fi
	return 0
}

cmdline_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }

# The PID in pidfile $1 when it runs a command line containing $2.
pid_from() {
	local p
	p=$(cat "$1" 2>/dev/null) || return 1
	[[ $p =~ ^[0-9]+$ ]] || return 1
	pid_alive "$p" || return 1
	case "$(cmdline_of "$p")" in
	*"$2"*) echo "$p" ;;
	*) return 1 ;;
	esac
}

# ------------------------------------------------------------ hosts-up

write_file() { # path mode < content
	local tmp="$1.tmp.$$"
	cat >"$tmp" && chmod "$2" "$tmp" && mv -f "$tmp" "$1"
}

hosts_up() {
	need_root
	local n=${REST[0]:-$NHOSTS}
	[ -n "$n" ] || usage_error "how many hosts? (hosts-up N, up --hosts N)"
	[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le $MAX_HOSTS ] ||
		usage_error "host count '$n': 1..$MAX_HOSTS"
	local t0
	t0=$(now_ms)
	lock_names
	load_state
	check_conflicts
	if bridge_is_ours || [ -f "$STATE/cluster.env" ] || [ -n "$(our_named_ns)" ]; then
		refuse_if_live
		say "tearing down a leftover cluster '$PREFIX' first (nothing of it runs, or it is the caller's)"
		hosts_down_quiet
	fi
	local owner
	owner=$(my_owner)
	[ -z "$REGISTRY_PORT" ] || check_registry_port
	[ -n "$CPUS" ] || CPUS=$(nproc)
	N_NEW=$n
	local k ns name addr dir
	if [ -d "$STATE" ] && [ ! -e "$STATE/.$MARK" ] && [ -n "$(ls -A "$STATE" 2>/dev/null)" ]; then
		say "error: $STATE exists, is not empty and is not a cluster state dir; pass another --state-dir"
		exit $EXIT_CONFLICT
	fi
	mkdir -p "$STATE" "$STATE/hosts" || die "cannot create $STATE"
	echo "$PREFIX" >"$STATE/.$MARK"
	chmod 700 "$STATE"
	mkdir -p -m 755 /run/sshd || die "cannot create /run/sshd"
	mkdir -p /var/lib/trainagent || die "cannot create the mount point /var/lib/trainagent"

	# Keys: the client's, one per host, all at once.
	rm -f "$STATE/id_ed25519" "$STATE/id_ed25519.pub"
	ssh-keygen -q -t ed25519 -N '' -C "$MARK-$PREFIX-client" -f "$STATE/id_ed25519" </dev/null ||
		die "ssh-keygen failed"
	cp "$STATE/id_ed25519.pub" "$STATE/authorized_keys"
	for k in $(seq 1 "$n"); do
		dir=$STATE/hosts/$(host_name "$k")
		rm -rf "$dir"
		mkdir -p "$dir/home/.ssh" "$dir/work"
		(ssh-keygen -q -t ed25519 -N '' -C "$(host_name "$k")" -f "$dir/ssh_host_ed25519_key" </dev/null) &
	done
	wait

	# Names, known_hosts, ssh settings.
	{
		echo "# $MARK $STATE"
		echo "127.0.0.1 localhost"
		for k in $(seq 1 "$n"); do
			echo "$(host_addr "$k") $(host_name "$k")"
		done
	} | write_file "$STATE/etc-hosts" 644
	for k in $(seq 1 "$n"); do
		printf '%s,%s %s\n' "$(host_name "$k")" "$(host_addr "$k")" \
			"$(cut -d' ' -f1,2 "$STATE/hosts/$(host_name "$k")/ssh_host_ed25519_key.pub")"
	done | write_file "$STATE/known_hosts" 644
	for k in $(seq 1 "$n"); do host_name "$k"; done | write_file "$STATE/hostfile" 644
	write_ssh_config "$STATE/ssh_config" "$STATE"
	printf '#!/bin/sh\n# ssh with this cluster'"'"'s key and known_hosts\nexec ssh -F %s "$@"\n' \
		"$STATE/ssh_config" | write_file "$STATE/ssh" 755

	# Root namespace: bridge, namespaces, veth pairs (peer eth0 inside).
	{
		echo "link add name $BR type bridge forward_delay 0 stp_state 0"
		echo "link set dev $BR alias $MARK:$STATE"
		echo "addr add $NET.1/24 dev $BR"
		echo "link set dev $BR up"
		for k in $(seq 1 "$n"); do
			ns=$(ns_name "$k")
			echo "netns add $ns"
			echo "link add $(veth_name "$k") type veth peer name eth0 netns $ns"
			echo "link set dev $(veth_name "$k") alias $MARK:$STATE"
			echo "link set dev $(veth_name "$k") master $BR"
			echo "link set dev $(veth_name "$k") up"
		done
	} >"$STATE/ip-batch"
	# Written before anything exists, so a failed bring-up can be torn down.
	{
		echo "CLUSTER_PREFIX=$PREFIX"
		echo "CLUSTER_NET=$NET"
		echo "CLUSTER_HOSTS=$n"
		echo "CLUSTER_STATE=$STATE"
		echo "CLUSTER_BRIDGE=$BR"
		echo "CLUSTER_GATEWAY=$NET.1"
		echo "CLUSTER_CREATED_MS=$t0"
		echo "CLUSTER_OWNER=\"$owner\""
	} | write_file "$STATE/cluster.env" 644
	mkdir -p /etc/netns
	for k in $(seq 1 "$n"); do
		ns=$(ns_name "$k")
		rm -rf "/etc/netns/$ns"
		mkdir -p "/etc/netns/$ns"
		cp "$STATE/etc-hosts" "/etc/netns/$ns/hosts"
	done
	if ! ip -b "$STATE/ip-batch" >"$STATE/ip-batch.log" 2>&1; then
		cat "$STATE/ip-batch.log" >&2
		hosts_down_quiet
		die "creating the bridge and namespaces failed"
	fi
	local ok=1
	for k in $(seq 1 "$n"); do
		ns=$(ns_name "$k")
		addr=$(host_addr "$k")
		printf 'link set dev lo up\naddr add %s/24 dev eth0\nlink set dev eth0 up\n' "$addr" |
			ip -n "$ns" -b - || ok=0
	done
	if [ $ok = 0 ]; then
		hosts_down_quiet
		die "configuring the namespaces' addresses failed"
	fi

	# One sshd per host, each in its own UTS and mount namespace.
	for k in $(seq 1 "$n"); do
		name=$(host_name "$k")
		dir=$STATE/hosts/$name
		write_sshd_config "$dir/sshd_config" "$dir" "$(host_addr "$k")"
		write_ssh_config "$dir/home/.ssh/config" "$STATE"
		cp "$STATE/id_ed25519" "$STATE/id_ed25519.pub" "$dir/home/.ssh/"
		cp "$STATE/known_hosts" "$dir/home/.ssh/known_hosts"
		start_sshd "$k" &
	done
	wait
	# Bounded: sshd writes its pid file once it listens.
	local deadline=$(($(now_ms) + 5000)) missing
	while :; do
		missing=""
		for k in $(seq 1 "$n"); do
			pid_from "$STATE/hosts/$(host_name "$k")/sshd.pid" sshd >/dev/null || missing="$missing $(host_name "$k")"
		done
		[ -z "$missing" ] && break
		if [ "$(now_ms)" -gt $deadline ]; then
			for k in $(seq 1 "$n"); do
				tail -n 5 "$STATE/hosts/$(host_name "$k")/sshd.log" 2>/dev/null | sed "s/^/  $(host_name "$k"): /" >&2
			done
			hosts_down_quiet
			die "sshd did not start on:$missing"
		fi
		sleep 0.02
	done
	if [ -n "$REGISTRY_PORT" ]; then
		start_registry || {
			hosts_down_quiet
			exit $EXIT_FAIL
		}
	fi
	write_inventory "$n"
	say "$n hosts up in $(($(now_ms) - t0)) ms: $(for k in $(seq 1 "$n"); do printf '%s=%s ' "$(host_name "$k")" "$(host_addr "$k")"; done)"
	echo "state dir: $STATE"
	echo "inventory: $STATE/inventory.json"
	echo "ssh:       $STATE/ssh node1 CMD"
	[ -z "$REGISTRY_ADDR" ] || echo "registry:  $REGISTRY_ADDR (pid $REGISTRY_PID)"
}

write_sshd_config() { # path hostdir address
	write_file "$1" 644 <<EOF
# sshd of one host of the trainctl test cluster $STATE
ListenAddress $3
Port 22
HostKey $2/ssh_host_ed25519_key
PidFile $2/sshd.pid
AuthorizedKeysFile $STATE/authorized_keys
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding yes
MaxStartups 200
MaxSessions 200
LoginGraceTime 30
Subsystem sftp internal-sftp
LogLevel INFO
EOF
	# --host-env: the environment of every session, the agent's included.
	[ ${#HOST_ENV[@]} = 0 ] || echo "SetEnv ${HOST_ENV[*]}" >> "$1"
}

write_ssh_config() { # path statedir (hosts 1..N_NEW get a Host block)
	write_file "$1" 644 <<EOF
# ssh settings for the trainctl test cluster $2 (ssh -F $1)
Host *
	User root
	IdentityFile $2/id_ed25519
	IdentitiesOnly yes
	UserKnownHostsFile $2/known_hosts
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	CheckHostIP no
	BatchMode yes
	KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org
	ConnectTimeout 5
	LogLevel ERROR
EOF
	local k
	for k in $(seq 1 "$N_NEW"); do
		printf '\nHost %s\n\tHostName %s\n' "$(host_name "$k")" "$(host_addr "$k")" >>"$1"
	done
}

# "FSTYPE OPTIONS MOUNTPOINT" of /sys/fs/cgroup and the hierarchies under
# it in this mount namespace, parents first (as mountinfo lists them).
cgroup_mounts() {
	awk '{
		for (i = 7; i < NF && $i != "-"; i++)
			;
		if ($5 == "/sys/fs/cgroup" || index($5, "/sys/fs/cgroup/") == 1)
			print $(i + 1), $(i + 3), $5
	}' /proc/self/mountinfo
}

start_sshd() { # k
	local k=$1 name dir
	name=$(host_name "$k")
	dir=$STATE/hosts/$name
	# ip netns exec: new mount namespace, /etc/netns/<ns>/hosts over
	# /etc/hosts, /sys of the namespace; unshare --uts: own hostname. Then
	# the cgroup hierarchies again (the fresh /sys has none, and podman
	# needs them: best effort, a failure is logged), the private home and
	# work directory, and sshd (it daemonizes after it listens and writes
	# its pid file).
	ip netns exec "$(ns_name "$k")" unshare --uts /bin/sh -c '
		hostname "$1" &&
		printf "%s\n" "$3" | while read -r t o m; do
			[ -n "$t" ] || continue
			mkdir -p "$m" 2>/dev/null
			mount -t "$t" -o "$o" "$t" "$m" || echo "cluster.sh: cannot mount $t on $m"
		done &&
		mount --bind "$2/home" /root &&
		mount --bind "$2/work" /var/lib/trainagent &&
		exec /usr/sbin/sshd -f "$2/sshd_config" -E "$2/sshd.log"' sh "$name" "$dir" "$(cgroup_mounts)" \
		</dev/null >>"$dir/sshd.log" 2>&1 9>&-
}

json_str() { # a JSON string literal of $1
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "$s"
}

write_inventory() { # n
	local n=$1 k itype types sep=""
	IFS=, read -r -a types <<<"$ITYPES"
	{
		echo '{"hosts": ['
		for k in $(seq 1 "$n"); do
			itype=${types[$(((k - 1) % ${#types[@]}))]}
			printf '%s  {"name": %s, "address": %s, "port": 22, "user": "root", ' "$sep" \
				"$(json_str "$(host_name "$k")")" "$(json_str "$(host_addr "$k")")"
			printf '"identity_file": %s, "known_hosts": %s, ' \
				"$(json_str "$STATE/id_ed25519")" "$(json_str "$STATE/known_hosts")"
			printf '"instance_type": %s, "cpus": %s, "gpus": %s, "accept_new_host_key": false' \
				"$(json_str "$itype")" "$CPUS" "$GPUS"
			[ -z "$AGENT_PATH" ] || printf ', "agent_path": %s' "$(json_str "$AGENT_PATH")"
			printf '}'
			sep=$',\n'
		done
		printf '\n]}\n'
	} | write_file "$STATE/inventory.json" 644
}

# ------------------------------------------------------------ hosts-down

# The nsfs inode of a named namespace ("" when gone).
ns_inode() { stat -L -c %i "/run/netns/$1" 2>/dev/null; }

# PIDs whose network namespace is the named one.
ns_pids() { ns_exists "$1" && ip netns pids "$1" 2>/dev/null; }

hosts_down_quiet() {
	local k ns n=$N_CREATED p pids
	[ "$n" -gt 0 ] 2>/dev/null || n=0
	# Namespaces of ours: those cluster.env counted, and any named like ours
	# when the bridge or /etc/netns says they are ours.
	local all_ns=()
	for k in $(seq 1 "$n"); do all_ns+=("$(ns_name "$k")"); done
	for ns in $(our_named_ns); do
		if bridge_is_ours || grep -qsxF "# $MARK $STATE" "/etc/netns/$ns/hosts"; then
			case " ${all_ns[*]} " in
			*" $ns "*) ;;
			*) all_ns+=("$ns") ;;
			esac
		fi
	done
	# 0. The registry by PID (its images stay until the state dir goes).
	stop_registry
	# 1. sshd by PID, from its pid file.
	pids=()
	for ns in "${all_ns[@]}"; do
		k=${ns##*-node}
		p=$(pid_from "$STATE/hosts/$(host_name "$k")/sshd.pid" "$STATE/hosts/") && pids+=("$p")
	done
	term_pids 20 "${pids[@]}"
	# 2. What else runs in the hosts (agents, jobs, daemons a test started):
	# the machines are switched off.
	pids=()
	for ns in "${all_ns[@]}"; do
		for p in $(ns_pids "$ns"); do pids+=("$p"); done
	done
	term_pids 20 "${pids[@]}"
	# 3. Links first (deleting a namespace frees its devices asynchronously),
	# then namespaces, the bridge, /etc/netns.
	{
		for ns in "${all_ns[@]}"; do
			k=${ns##*-node}
			ip link show dev "$(veth_name "$k")" >/dev/null 2>&1 && echo "link del dev $(veth_name "$k")"
			ns_exists "$ns" && echo "netns del $ns"
		done
		bridge_is_ours && echo "link del dev $BR"
	} >"/tmp/.$MARK-$PREFIX-down.$$"
	[ -s "/tmp/.$MARK-$PREFIX-down.$$" ] && ip -force -b "/tmp/.$MARK-$PREFIX-down.$$" >/dev/null 2>&1
	rm -f "/tmp/.$MARK-$PREFIX-down.$$"
	for ns in "${all_ns[@]}"; do
		grep -qsxF "# $MARK $STATE" "/etc/netns/$ns/hosts" && rm -rf "/etc/netns/$ns"
	done
	rm -f "$STATE/cluster.env"
	N_CREATED=0
	REGISTRY_ADDR=""
	REGISTRY_PID=""
}

hosts_down() {
	need_root
	lock_names
	load_state
	refuse_if_not_owner
	local t0 left
	t0=$(now_ms)
	hosts_down_quiet
	left=""
	ip link show dev "$BR" >/dev/null 2>&1 && left="$left bridge $BR"
	[ -z "$(our_named_ns)" ] || left="$left namespaces $(our_named_ns | tr '\n' ' ')"
	# Only a folder this script made (it holds the marker) is removed.
	if [ $KEEP = 0 ] && [ -e "$STATE/.$MARK" ] && [ -z "$left" ]; then
		rm -rf "$STATE"
	fi
	if [ -n "$left" ]; then
		say "warning: still there (not ours?):$left"
		return $EXIT_FAIL
	fi
	say "cluster '$PREFIX' down in $(($(now_ms) - t0)) ms"
}

# ------------------------------------------------------------ controller

find_trainctld() {
	local here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	if [ -n "$TRAINCTLD" ]; then
		echo "$TRAINCTLD"
		return
	fi
	local c
	for c in ${TRAINCTL_BIN_DIR:+"$TRAINCTL_BIN_DIR/trainctld"} "$here/trainctld" \
		"$here/../${BUILD:-build}/bin/trainctld" "$here/../bin/trainctld" "$here/../../bin/trainctld"; do
		if [ -x "$c" ]; then
			echo "$c"
			return
		fi
	done
	command -v trainctld || true
}

random_alnum() { # length charset
	LC_ALL=C tr -dc "$2" </dev/urandom | head -c "$1"
}

CTRL=""
ctrl_paths() {
	CTRL=$STATE/controller
	if [ "${CTRL_TLS:-$TLS}" = 1 ]; then
		ENDPOINT=https://$NET.1:$PORT
		CURL_TLS=(--cacert "$CTRL/tls/ca.pem")
	else
		ENDPOINT=http://$NET.1:$PORT
		CURL_TLS=()
	fi
}

# A CA and the controller's certificate for NET.1 (openssl), in
# $CTRL/tls: ca.pem is what clients and agents verify with.
make_tls() {
	command -v openssl >/dev/null 2>&1 || die "--tls needs openssl"
	local d=$CTRL/tls
	mkdir -p "$d" && chmod 755 "$d" || die "cannot create $d"
	(
		umask 077
		openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/ca.key" -out "$d/ca.pem" \
			-days 30 -subj "/CN=trainctl cluster $PREFIX CA" &&
			openssl req -newkey rsa:2048 -nodes -keyout "$d/server.key" -out "$d/server.csr" \
				-subj "/CN=$NET.1" &&
			printf 'subjectAltName=IP:%s\nbasicConstraints=CA:FALSE\n' "$NET.1" >"$d/server.ext" &&
			openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
				-CAcreateserial -out "$d/server.pem" -days 30 -extfile "$d/server.ext"
	) >/dev/null 2>&1 || die "openssl could not make the cluster's CA and certificate"
	chmod 644 "$d/ca.pem" "$d/server.pem"
}

# GET path on the controller, SigV4-signed; prints the body.
ctrl_get() {
	curl -sS --max-time 5 --noproxy '*' "${CURL_TLS[@]}" \
		--aws-sigv4 "aws:amz:${AWS_REGION_:-us-east-1}:sagemaker" \
		--user "$KEY_ID:$SECRET" "$ENDPOINT$1"
}

# "ready/total name=state ..." from a GET /v1/hosts body.
hosts_summary() {
	tr -d ' \n\t' | grep -o '"name":"[^"]*"\|"state":"[^"]*"' | sed 's/^"[a-z]*":"\(.*\)"$/\1/' |
		paste - - | awk '{n++; if ($2=="ready"||$2=="busy") r++; s=s" "$1"="$2} END {printf "%d/%d%s\n", r, n, s}'
}

print_exports() {
	echo "export TRAINCTL_ENDPOINT=$ENDPOINT"
	echo "export AWS_ACCESS_KEY_ID=$KEY_ID"
	echo "export AWS_SECRET_ACCESS_KEY=$SECRET"
	echo "export AWS_DEFAULT_REGION=us-east-1"
	if [ "${CTRL_TLS:-$TLS}" = 1 ]; then
		echo "export AWS_CA_BUNDLE=$CTRL/tls/ca.pem"
	fi
	[ -z "$REGISTRY_ADDR" ] || echo "export TRAINCTL_REGISTRY=$REGISTRY_ADDR"
	echo "# trainctl cluster '$PREFIX': $N_CREATED hosts, state $STATE, inventory $STATE/inventory.json"
}

cluster_up() {
	need_root
	[ -n "$NHOSTS" ] || NHOSTS=${REST[0]:-}
	[ -n "$NHOSTS" ] || usage_error "up: --hosts N is required"
	command -v curl >/dev/null 2>&1 || die "curl not found"
	local bin t0
	t0=$(now_ms)
	bin=$(find_trainctld)
	[ -n "$bin" ] && [ -x "$bin" ] || die "trainctld not found (build it, or pass --trainctld PATH)"
	if ! "$bin" --help 2>&1 | grep -q -- --inventory; then
		die "$bin has no --inventory option (too old?)"
	fi
	lock_names
	load_state
	refuse_if_live
	ctrl_paths
	stop_controller
	REST=("$NHOSTS")
	hosts_up >/dev/null || exit $?
	unlock_names
	load_state
	CTRL_TLS=$TLS
	ctrl_paths
	rm -rf "$CTRL"
	mkdir -p "$CTRL/state"
	KEY_ID=AKID$(random_alnum 16 'A-Z0-9')
	SECRET=$(random_alnum 40 'A-Za-z0-9')
	{
		printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$KEY_ID" "$SECRET"
		# More keys (users, roles: docs/security.md) after ours.
		if [ -n "$ADD_CREDS" ]; then
			echo
			cat "$ADD_CREDS" || exit 1
		fi
	} | write_file "$CTRL/credentials" 600
	local tls_args=()
	if [ "$TLS" = 1 ]; then
		make_tls
		tls_args=(--tls-cert "$CTRL/tls/server.pem" --tls-key "$CTRL/tls/server.key"
			--tls-ca "$CTRL/tls/ca.pem")
	fi
	local reg_args=()
	[ -z "$REGISTRY_ADDR" ] || reg_args=(--insecure-registry "$REGISTRY_ADDR")
	local args=("$bin" --inventory "$STATE/inventory.json" --local-hosts 0
		--listen "$NET.1:$PORT" --advertise-url "$ENDPOINT"
		--credentials "$CTRL/credentials" --state-dir "$CTRL/state" "${tls_args[@]}"
		"${reg_args[@]}" "${EXTRA[@]}")
	printf '%q ' "${args[@]}" >"$CTRL/trainctld.cmd"
	echo >>"$CTRL/trainctld.cmd"
	setsid "${args[@]}" </dev/null >>"$CTRL/trainctld.log" 2>&1 9>&- &
	echo $! >"$CTRL/trainctld.pid"
	local pid=$!
	local deadline=$(($(now_ms) + TIMEOUT * 1000)) body summary="" code
	while :; do
		if ! pid_alive "$pid"; then
			tail -n 20 "$CTRL/trainctld.log" >&2
			die "trainctld exited (log: $CTRL/trainctld.log); the hosts are still up: $PROG down${PREFIX:+ --prefix $PREFIX}"
		fi
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --noproxy '*' "${CURL_TLS[@]}" \
			"$ENDPOINT/healthz" || true)
		if [ "$code" = 200 ]; then
			body=$(ctrl_get /v1/hosts 2>/dev/null || true)
			summary=$(printf '%s' "$body" | hosts_summary)
			case "$summary" in
			"$NHOSTS/$NHOSTS"*) break ;;
			esac
		fi
		if [ "$(now_ms)" -gt $deadline ]; then
			tail -n 20 "$CTRL/trainctld.log" >&2
			say "GET /v1/hosts: ${body:-no answer (HTTP $code)}"
			die "not every host ready after $TIMEOUT s (${summary:-?}); the cluster stays up for a look: $PROG down${PREFIX:+ --prefix $PREFIX}"
		fi
		sleep 0.05
	done
	{
		echo "CTRL_ENDPOINT=$ENDPOINT"
		echo "CTRL_TLS=$TLS"
		echo "CTRL_PORT=$PORT"
		echo "CTRL_KEY_ID=$KEY_ID"
		echo "CTRL_SECRET=$SECRET"
		echo "CTRL_PID=$pid"
	} >>"$STATE/cluster.env"
	print_exports | write_file "$STATE/env.sh" 600
	say "controller $ENDPOINT (pid $pid) with $summary in $(($(now_ms) - t0)) ms; log $CTRL/trainctld.log"
	print_exports
}

stop_controller() {
	[ -n "$CTRL" ] || ctrl_paths
	local p
	p=$(pid_from "$CTRL/trainctld.pid" trainctld) || return 0
	term_pids 100 "$p"
	rm -f "$CTRL/trainctld.pid"
}

cluster_down() {
	need_root
	lock_names
	load_state
	refuse_if_not_owner
	ctrl_paths
	stop_controller
	hosts_down
}

cluster_env() {
	load_state
	[ -f "$STATE/env.sh" ] || die "no controller of cluster '$PREFIX' ($STATE/env.sh missing)"
	cat "$STATE/env.sh"
}

cluster_status() {
	load_state
	if [ "$N_CREATED" = 0 ]; then
		echo "cluster '$PREFIX': down"
		return 1
	fi
	local k name p ctl
	ctrl_paths
	ctl=$(pid_from "$CTRL/trainctld.pid" trainctld || true)
	echo "cluster '$PREFIX': $N_CREATED hosts on $NET.0/24 (bridge $BR), state $STATE"
	echo "controller: ${ctl:+pid $ctl, }${CTRL_ENDPOINT:-not started}"
	if [ -n "$REGISTRY_ADDR" ]; then
		if p=$(registry_pid); then
			echo "registry:   pid $p, $REGISTRY_ADDR"
		else
			echo "registry:   down, $REGISTRY_ADDR"
		fi
	fi
	for k in $(seq 1 "$N_CREATED"); do
		name=$(host_name "$k")
		p=$(pid_from "$STATE/hosts/$name/sshd.pid" sshd || true)
		printf '%-8s %-14s ns %-12s sshd %s\n' "$name" "$(host_addr "$k")" "$(ns_name "$k")" "${p:-down}"
	done
}

cluster_exec() {
	need_root
	load_state
	[ ${#REST[@]} -ge 1 ] || usage_error "exec HOST CMD..."
	local name=${REST[0]} k p
	k=${name#node}
	[[ $k =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] && [ "$k" -le "$N_CREATED" ] || die "no host '$name' in cluster '$PREFIX'"
	local cmd=("${REST[@]:1}" "${EXTRA[@]}")
	[ ${#cmd[@]} -ge 1 ] || usage_error "exec HOST CMD..."
	p=$(pid_from "$STATE/hosts/$name/sshd.pid" sshd) || die "$name: sshd is not running (its namespaces go with it)"
	exec nsenter -t "$p" -n -u -m -- "${cmd[@]}"
}

# ------------------------------------------------------------ faults

host_index() { # name -> k, or dies
	local k=${1#node}
	[[ $k =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] && [ "$k" -le "$N_CREATED" ] ||
		die "no host '$1' in cluster '$PREFIX'"
	echo "$k"
}

cluster_fault() { # sshd-stop|sshd-start|link-down|link-up
	need_root
	load_state
	[ ${#REST[@]} -eq 1 ] || usage_error "$1 HOST"
	local k p name
	k=$(host_index "${REST[0]}") || exit $EXIT_FAIL
	name=$(host_name "$k")
	case "$1" in
	sshd-stop)
		p=$(pid_from "$STATE/hosts/$name/sshd.pid" "$STATE/hosts/") || {
			say "$name: sshd is not running"
			return 0
		}
		term_pids 30 "$p"
		rm -f "$STATE/hosts/$name/sshd.pid"
		say "$name: sshd (pid $p) stopped"
		;;
	sshd-start)
		if p=$(pid_from "$STATE/hosts/$name/sshd.pid" "$STATE/hosts/"); then
			say "$name: sshd already runs (pid $p)"
			return 0
		fi
		rm -f "$STATE/hosts/$name/sshd.pid"
		start_sshd "$k"
		local deadline=$(($(now_ms) + 5000))
		until p=$(pid_from "$STATE/hosts/$name/sshd.pid" sshd); do
			[ "$(now_ms)" -le $deadline ] || die "$name: sshd did not start (see $STATE/hosts/$name/sshd.log)"
			sleep 0.02
		done
		say "$name: sshd started (pid $p)"
		;;
	link-down) ip link set dev "$(veth_name "$k")" down || die "cannot take $name's link down" ;;
	link-up) ip link set dev "$(veth_name "$k")" up || die "cannot bring $name's link up" ;;
	esac
}

# ------------------------------------------------------------ main

[ $# -ge 1 ] || {
	usage >&2
	exit "$EXIT_USAGE"
}
sub=$1
SUB=$sub
shift
case "$sub" in
-h | --help | help) usage; exit 0 ;;
up) parse_opts "$@"; cluster_up ;;
down) parse_opts "$@"; cluster_down ;;
hosts-up) parse_opts "$@"; hosts_up ;;
hosts-down) parse_opts "$@"; hosts_down ;;
status) parse_opts "$@"; cluster_status ;;
env) parse_opts "$@"; cluster_env ;;
exec)
	# exec HOST [options] [--] CMD...: options only before the command.
	host=${1:-}
	shift || true
	args=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--prefix | --state-dir) args+=("$1" "${2:-}"); shift 2 ;;
		--) shift; break ;;
		*) break ;;
		esac
	done
	parse_opts "${args[@]}"
	REST=("$host" "$@")
	cluster_exec
	;;
sshd-stop | sshd-start | link-down | link-up) parse_opts "$@"; cluster_fault "$sub" ;;
*) usage_error "unknown command '$sub'" ;;
esac
