#!/bin/sh
# tests/cluster/up.sh N [--prefix NAME] [--state-dir DIR] [--net A.B.C] ...
# Brings up N hosts on this machine (network namespaces, one sshd each) and
# writes an inventory for trainctld; see scripts/cluster.sh (hosts-up) for
# what is created and where. Exit 77 when not root.
exec "$(dirname "$0")/../../scripts/cluster.sh" hosts-up "$@"
