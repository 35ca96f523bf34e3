#!/bin/sh
# trainctl upload-source, cp, ls and rm against each backend: the embedded
# store's folder (TRAINCTL_STATE_DIR), file://, a private s3rver, and the
# controller's blob endpoint when trainctld serves it. Prints TAP.
#
# Run from the repository root: sh tests/storage/test_cli.sh. TRAINCTL
# overrides the binary. Skips when trainctl has no upload-source command.
set -u

BUILD=${BUILD:-build}
CLI=${TRAINCTL:-$BUILD/bin/trainctl}
DAEMON=${TRAINCTLD:-$BUILD/bin/trainctld}

if [ ! -x "$CLI" ] || ! "$CLI" help 2>/dev/null | grep -q upload-source; then
	echo "1..0 # SKIP $CLI has no upload-source command"
	exit 0
fi

unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN \
	AWS_ENDPOINT_URL_S3 TRAINCTL_S3_ENDPOINT TRAINCTL_STATE_DIR \
	TRAINCTL_ENDPOINT TRAINCTL_BLOB_TOKEN TRAINCTL_TOKEN \
	http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
export AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null \
	AWS_SHARED_CREDENTIALS_FILE=/dev/null

TMP=$(mktemp -d "${TMPDIR:-/tmp}/test_storage_cli.XXXXXX")
S3DIR=$TMP/s3rver
DPID=""
cleanup() {
	sh tests/storage/s3rver.sh stop "$S3DIR" 2>/dev/null
	if [ -n "$DPID" ]; then
		kill "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

n=0
ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}
not_ok() {
	n=$((n + 1))
	echo "not ok $n - $1"
}
check() {
	name=$1
	shift
	if "$@" >"$TMP/out" 2>"$TMP/err"; then
		ok "$name"
	else
		not_ok "$name"
		sed 's/^/# /' "$TMP/err" "$TMP/out"
	fi
}
skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

mkdir -p "$TMP/src/pkg" "$TMP/data/sub"
echo 'print("hello")' >"$TMP/src/train.py"
echo 'x = 1' >"$TMP/src/pkg/mod.py"
head -c 3000000 /dev/urandom >"$TMP/data/big.bin"
echo a >"$TMP/data/sub/a.csv"

# Checks one backend: upload-source, cp both ways, cp -r, ls, rm.
backend() {
	tag=$1
	base=$2
	uri=$("$CLI" upload-source "$TMP/src" --to "$base/code/" 2>"$TMP/err")
	if [ "$uri" = "$base/code/sourcedir.tar.gz" ]; then
		ok "$tag: upload-source prints the URI"
	else
		not_ok "$tag: upload-source prints the URI"
		sed 's/^/# /' "$TMP/err"
	fi
	check "$tag: cp the tarball back" "$CLI" cp "$uri" "$TMP/$tag.tgz"
	check "$tag: the tarball holds the sources" sh -c \
		"tar -tzf '$TMP/$tag.tgz' | grep -qx pkg/mod.py"
	check "$tag: cp a file up" "$CLI" cp "$TMP/data/big.bin" "$base/d/big.bin"
	check "$tag: cp it down" "$CLI" cp "$base/d/big.bin" "$TMP/$tag.big"
	check "$tag: same bytes" cmp "$TMP/data/big.bin" "$TMP/$tag.big"
	check "$tag: cp --recursive up" "$CLI" cp --recursive "$TMP/data" "$base/tree"
	check "$tag: ls lists the tree" sh -c \
		"'$CLI' ls '$base/tree/' | grep -c 'tree/' | grep -qx 2"
	check "$tag: cp --recursive down" "$CLI" cp -r "$base/tree" "$TMP/$tag.tree"
	check "$tag: the tree came back" cmp "$TMP/data/sub/a.csv" "$TMP/$tag.tree/sub/a.csv"
	check "$tag: rm" "$CLI" rm "$base/d/big.bin"
	if "$CLI" cp "$base/d/big.bin" "$TMP/gone" 2>"$TMP/err"; then
		not_ok "$tag: a removed object is gone"
	else
		ok "$tag: a removed object is gone"
	fi
}

# 1. The embedded store's folder, as on the controller's machine.
export TRAINCTL_STATE_DIR="$TMP/state"
backend embedded s3://bkt
check "embedded: layout <state>/s3/<bucket>/<key>" \
	test -f "$TMP/state/s3/bkt/code/sourcedir.tar.gz"
unset TRAINCTL_STATE_DIR

# 2. file://
backend file "file://$TMP/shared"

# 3. s3rver
if PORT=$(S3RVER_BUCKETS=bkt sh tests/storage/s3rver.sh start "$S3DIR" 2>"$TMP/err"); then
	export TRAINCTL_S3_ENDPOINT=http://127.0.0.1:$PORT \
		AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
	backend s3 s3://bkt
	check "s3: the aws CLI reads what we wrote" /usr/bin/aws \
		--endpoint-url "$TRAINCTL_S3_ENDPOINT" --region us-east-1 \
		s3 cp s3://bkt/code/sourcedir.tar.gz "$TMP/aws.tgz"
	check "s3: identical to ours" cmp "$TMP/aws.tgz" "$TMP/s3.tgz"
	unset TRAINCTL_S3_ENDPOINT AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
else
	skip "s3: backend" "s3rver cannot run here"
fi

# 4. The controller's blob endpoint, once trainctld serves it.
if [ -x "$DAEMON" ]; then
	PORT=$(/usr/bin/python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
	mkdir -p "$TMP/ctrl"
	"$DAEMON" --listen "127.0.0.1:$PORT" --state-dir "$TMP/ctrl" \
		>"$TMP/ctrl.log" 2>&1 &
	DPID=$!
	i=0
	while [ $i -lt 100 ] && ! curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null; do
		sleep 0.05
		i=$((i + 1))
	done
	code=$(curl -s -o /dev/null -w '%{http_code}' \
		"http://127.0.0.1:$PORT/v1/blobs/bkt?prefix=")
	if [ "$code" = 200 ] || [ "$code" = 401 ] || [ "$code" = 403 ]; then
		export TRAINCTL_ENDPOINT=http://127.0.0.1:$PORT
		backend blob s3://bkt
		check "blob: stored in the controller's state folder" \
			test -f "$TMP/ctrl/s3/bkt/code/sourcedir.tar.gz"
	else
		skip "blob: backend" "trainctld does not serve /v1/blobs yet (HTTP $code)"
	fi
else
	skip "blob: backend" "$DAEMON is not built"
fi

check "usage: upload-source without --to" sh -c \
	"'$CLI' upload-source '$TMP/src'; test \$? -eq 129"
check "usage: cp between two local paths" sh -c \
	"'$CLI' cp /etc/hostname '$TMP/x'; test \$? -eq 129"
check "error: a bad URI is a usage error" sh -c \
	"'$CLI' cp '$TMP/data/big.bin' 's3://BAD/x'; test \$? -eq 129"

echo "1..$n"
