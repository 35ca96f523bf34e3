#!/bin/sh
# Two test runs on one machine do not destroy each other's clusters
# (scripts/cluster.sh): each run names its own prefix, /24 and state dir,
# and cluster.sh records the owner (TRAINCTL_CLUSTER_OWNER) of what it made.
#   (1) two clusters A and B brought up at the same time (hosts-up, owners
#       two processes standing for two runs) both come up
#   (2) B's hosts-up with A's prefix, and B's up with A's prefix, refuse
#       (exit 3): A's sshds, namespaces and bridge are the same as before
#       and A's hosts still answer ssh
#   (3) B's down of A, and a down of A without an owner, refuse (exit 3);
#       --force is needed to take down a live cluster of another run
#   (4) once A's owner is gone, A is a leftover: B's hosts-up of A's prefix
#       reclaims it
#   (5) each owner's down leaves no namespace, link, /etc/netns entry or
#       state dir
# TAP output. Root only (network namespaces).
set -u
. "$(dirname "$0")/../lib.sh"
BUILD=${BUILD:-build}
case "$BUILD" in
/*) ;;
*) BUILD=$T_ROOT/$BUILD ;;
esac
CL=$T_ROOT/scripts/cluster.sh

if [ "$(id -u)" != 0 ] || [ ! -x /usr/sbin/sshd ] || ! command -v ip >/dev/null 2>&1; then
	t_skip_all "needs root, /usr/sbin/sshd and ip (network namespaces)"
fi
[ -x "$BUILD/bin/trainctld" ] || t_skip_all "no $BUILD/bin/trainctld (make first)"
t_tmpdir trainctl-parallel
T=$T_TMP

# Two runs' names: prefix, /24, port (as every namespace test picks them).
names() {
	/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
import smcompat as sc
print(*sc.run_names(sys.argv[2]))' "$T_ROOT/tests/compat" "$1"
}
# shellcheck disable=SC2046
set -- $(names pa)
PA=$1 NA=$2
# shellcheck disable=SC2046
set -- $(names pb)
PB=$1 NB=$2
[ "$NA" != "$NB" ] || NB=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
import smcompat as sc
print(sc.free_net())' "$T_ROOT/tests/compat")
SA=/tmp/trainctl-cluster-$PA
# The two runs: a process each, as long as the run lasts.
sleep 300 &
OWNER_A=$!
t_track_pid $OWNER_A
sleep 300 &
OWNER_B=$!
t_track_pid $OWNER_B
t_on_exit 'for p in $PA $PB; do
	bash "$CL" down --force --prefix $p >/dev/null 2>&1
done'

as_a() { TRAINCTL_CLUSTER_OWNER=$OWNER_A bash "$CL" "$@"; }
as_b() { TRAINCTL_CLUSTER_OWNER=$OWNER_B bash "$CL" "$@"; }

# What of cluster A exists now: sshd PIDs, namespace inodes, bridge index.
snapshot_a() {
	for k in 1 2; do
		cat "$SA/hosts/node$k/sshd.pid" 2>/dev/null
		stat -L -c %i "/run/netns/$PA-node$k" 2>/dev/null
	done
	ip -o link show dev "$PA-br" 2>/dev/null | cut -d: -f1
}
a_alive() {
	for k in 1 2; do
		p=$(cat "$SA/hosts/node$k/sshd.pid" 2>/dev/null) && [ -d "/proc/$p" ] || return 1
		"$SA/ssh" "node$k" true </dev/null >/dev/null 2>&1 || return 1
	done
}
leftovers() { # prefix: anything of it still there
	ip netns list 2>/dev/null | awk '{print $1}' | grep "^$1-" | tr '\n' ' '
	ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep "^$1-" | tr '\n' ' '
	ls -d /etc/netns/"$1"-* "/tmp/trainctl-cluster-$1" 2>/dev/null | tr '\n' ' '
}

t_plan 8
t0=$(date +%s)

# (1) both at once
as_a hosts-up 2 --prefix "$PA" --net "$NA" >"$T/a.out" 2>&1 &
pa=$!
as_b hosts-up 2 --prefix "$PB" --net "$NB" >"$T/b.out" 2>&1 &
pb=$!
wait $pa
ra=$?
wait $pb
rb=$?
[ $ra = 0 ] && [ $rb = 0 ] && a_alive
t_ok $? "(1) clusters $PA ($NA.0/24) and $PB ($NB.0/24) come up at the same time" ||
	t_diag "exit $ra $rb" "$(cat "$T/a.out" "$T/b.out")"
before=$(snapshot_a)

# (2) B names A's prefix: refused, A untouched
as_b hosts-up 1 --prefix "$PA" --net "$NA" >"$T/o" 2>&1
rc=$?
[ $rc = 3 ] && grep -q "is live" "$T/o" && [ "$(snapshot_a)" = "$before" ] && a_alive
t_ok $? "(2) hosts-up of a live cluster's prefix by another run refuses (exit 3); the cluster is untouched" ||
	t_diag "exit $rc" "$(cat "$T/o")"
as_b up --hosts 1 --prefix "$PA" --port "$(t_free_port)" --trainctld "$BUILD/bin/trainctld" --timeout 20 >"$T/o" 2>&1
rc=$?
[ $rc = 3 ] && [ "$(snapshot_a)" = "$before" ] && a_alive
t_ok $? "(2) up of a live cluster's prefix by another run refuses (exit 3); the cluster is untouched" ||
	t_diag "exit $rc" "$(cat "$T/o")"

# (3) downs by others refuse
as_b down --prefix "$PA" >"$T/o" 2>&1
rc=$?
[ $rc = 3 ] && grep -q "not tearing it down" "$T/o" && [ "$(snapshot_a)" = "$before" ] && a_alive
t_ok $? "(3) down of a live cluster by another run refuses (exit 3); the cluster is untouched" ||
	t_diag "exit $rc" "$(cat "$T/o")"
env -u TRAINCTL_CLUSTER_OWNER bash "$CL" hosts-down --prefix "$PA" >"$T/o" 2>&1
rc=$?
[ $rc = 3 ] && [ "$(snapshot_a)" = "$before" ] && a_alive
t_ok $? "(3) hosts-down of a live run's cluster without an owner refuses (exit 3)" ||
	t_diag "exit $rc" "$(cat "$T/o")"

# (4) A's run is gone: its cluster is a leftover, reclaimed
t_stop $OWNER_A 5
as_b hosts-up 1 --prefix "$PA" --net "$NA" >"$T/o" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "leftover" "$T/o" && [ "$(snapshot_a)" != "$before" ] && [ ! -e "/run/netns/$PA-node2" ]
t_ok $? "(4) a cluster whose owner is gone is reclaimed by the next hosts-up of its prefix" ||
	t_diag "exit $rc" "$(cat "$T/o")"

# (5) each run takes down its own
as_b down --prefix "$PA" >"$T/o" 2>&1
rc=$?
left=$(leftovers "$PA")
[ $rc = 0 ] && [ -z "$left" ]
t_ok $? "(5) the owner's down of $PA leaves nothing" || t_diag "exit $rc; left: $left" "$(cat "$T/o")"
as_b down --prefix "$PB" >"$T/o" 2>&1
rc=$?
left=$(leftovers "$PB")
[ $rc = 0 ] && [ -z "$left" ]
t_ok $? "(5) the owner's down of $PB leaves nothing" || t_diag "exit $rc; left: $left" "$(cat "$T/o")"
t_diag "whole run $(($(date +%s) - t0)) s"
t_done
