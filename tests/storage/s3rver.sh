#!/bin/sh
# Starts and stops a private s3rver for the storage tests and benchmark.
#
#   s3rver.sh start DIR   installs s3rver if missing (scripts/npm-deps.sh),
#                         starts it on 127.0.0.1 on a free port with its
#                         data in DIR/data and the buckets named in
#                         $S3RVER_BUCKETS, writes DIR/port and DIR/pid and
#                         prints the port. Exit 77: cannot run here.
#   s3rver.sh stop DIR               stops it by its PID (never by name).
#
# s3rver accepts the access key S3RVER (any secret) and does not check
# signatures.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$here/../lib.sh"
cmd=${1:-}
dir=${2:-}
[ -n "$dir" ] || { echo "usage: s3rver.sh start|stop DIR" >&2; exit 2; }

case "$cmd" in
start)
	shift 2
	if ! command -v node >/dev/null 2>&1; then
		echo "s3rver: node is not installed" >&2
		exit 77
	fi
	if ! "$top/scripts/npm-deps.sh" -q >&2; then
		echo "s3rver: cannot install s3rver" >&2
		exit 77
	fi
	mkdir -p "$dir/data"
	set --
	for b in ${S3RVER_BUCKETS:-}; do
		set -- "$@" --configure-bucket "$b"
	done
	# Port 0: the kernel picks a free one and s3rver logs it.
	# DES (continuation tokens) needs the legacy provider on OpenSSL 3.
	node --openssl-legacy-provider \
		"$top/tests/tools/node_modules/s3rver/bin/s3rver.js" \
		-d "$dir/data" -a 127.0.0.1 -p 0 --no-vhost-buckets "$@" \
		>"$dir/log" 2>&1 &
	echo $! >"$dir/pid"
	i=0
	while [ $i -lt 200 ]; do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/log" 2>/dev/null | head -n1)
		if [ -n "$port" ]; then
			echo "$port" >"$dir/port"
			echo "$port"
			exit 0
		fi
		if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
			break
		fi
		sleep 0.05
		i=$((i + 1))
	done
	echo "s3rver: did not start:" >&2
	cat "$dir/log" >&2
	kill "$(cat "$dir/pid")" 2>/dev/null
	exit 1
	;;
stop)
	if [ -f "$dir/pid" ]; then
		t_stop "$(cat "$dir/pid")" 5
		rm -f "$dir/pid"
	fi
	;;
*)
	echo "usage: s3rver.sh start|stop DIR" >&2
	exit 2
	;;
esac
