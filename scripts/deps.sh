#!/bin/sh
# Install every Debian package the build, the tests and the demo need.
# Idempotent: packages already present are not touched, and apt-get update
# runs at most once per invocation.
set -eu

PKGS="build-essential pkg-config
libmicrohttpd-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev
libssh2-1-dev libssl-dev libcmocka-dev libpcre2-dev libarchive-dev
libinih-dev wrk libxml2-dev zlib1g-dev libcbor-dev nodejs
liblapacke-dev libblas-dev liblapack-dev python3-optuna
chromium python3-prometheus-client
clang clang-format pmccabe curl ca-certificates
python3 python3-boto3 python3-botocore awscli python3-sklearn
openssh-server openssh-client iproute2 util-linux pdsh slurm-wlm openmpi-bin
libopenmpi-dev python3-torch dataset-fashion-mnist python3-uvloop
python3-xgboost libraft-dev libuv1-dev keepalived
podman buildah skopeo runc crun conmon catatonit docker-registry
busybox-static apache2-utils iptables
python3-pip python3-venv python3-setuptools python3-wheel"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	[ "${1:-}" = "-q" ] || echo "deps: all packages present"
	exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
	SUDO="sudo"
fi

echo "deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
