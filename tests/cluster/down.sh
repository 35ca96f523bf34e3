#!/bin/sh
# tests/cluster/down.sh [--prefix NAME] [--state-dir DIR] [--keep]
# Tears down what tests/cluster/up.sh created (idempotent); see
# scripts/cluster.sh (hosts-down).
exec "$(dirname "$0")/../../scripts/cluster.sh" hosts-down "$@"
