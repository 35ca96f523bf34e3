#!/bin/sh
# trainctl upload-source, cp, ls and rm against each backend: the embedded
# store's folder (TRAINCTL_STATE_DIR), file://, a private s3rver, and the
# controller's blob endpoint when trainctld serves it. Prints TAP.
#
# Run from the repository root: sh tests/storage/test_cli.sh. TRAINCTL
# overrides the binary. Skips when trainctl has no upload-source command.
set -u
. "$(dirname "$0")/../lib.sh"

BUILD=${BUILD:-build}
CLI=${TRAINCTL:-$BUILD/bin/trainctl}
DAEMON=${TRAINCTLD:-$BUILD/bin/trainctld}


t_hermetic_aws
t_tmpdir test_storage_cli
S3DIR=$T_TMP/s3rver
t_on_exit 'sh "$T_ROOT/tests/storage/s3rver.sh" stop "$S3DIR" 2>/dev/null'

# check NAME COMMAND...: ok when the command succeeds, else its output.
check() {
	name=$1
	shift
	"$@" >"$T_TMP/out" 2>"$T_TMP/err"
	t_ok $? "$name" || sed 's/^/# /' "$T_TMP/err" "$T_TMP/out"
}

mkdir -p "$T_TMP/src/pkg" "$T_TMP/data/sub"
echo 'print("hello")' >"$T_TMP/src/train.py"
echo 'x = 1' >"$T_TMP/src/pkg/mod.py"
head -c 3000000 /dev/urandom >"$T_TMP/data/big.bin"
echo a >"$T_TMP/data/sub/a.csv"

# Checks one backend: upload-source, cp both ways, cp -r, ls, rm.
backend() {
	tag=$1
	base=$2
	uri=$("$CLI" upload-source "$T_TMP/src" --to "$base/code/" 2>"$T_TMP/err")
	[ "$uri" = "$base/code/sourcedir.tar.gz" ]
	t_ok $? "$tag: upload-source prints the URI" || t_diag_file "$T_TMP/err"
	check "$tag: cp the tarball back" "$CLI" cp "$uri" "$T_TMP/$tag.tgz"
	check "$tag: the tarball holds the sources" sh -c \
		"tar -tzf '$T_TMP/$tag.tgz' | grep -qx pkg/mod.py"
	check "$tag: cp a file up" "$CLI" cp "$T_TMP/data/big.bin" "$base/d/big.bin"
	check "$tag: cp it down" "$CLI" cp "$base/d/big.bin" "$T_TMP/$tag.big"
	check "$tag: same bytes" cmp "$T_TMP/data/big.bin" "$T_TMP/$tag.big"
	check "$tag: cp --recursive up" "$CLI" cp --recursive "$T_TMP/data" "$base/tree"
	check "$tag: ls lists the tree" sh -c \
		"'$CLI' ls '$base/tree/' | grep -c 'tree/' | grep -qx 2"
	check "$tag: cp --recursive down" "$CLI" cp -r "$base/tree" "$T_TMP/$tag.tree"
	check "$tag: the tree came back" cmp "$T_TMP/data/sub/a.csv" "$T_TMP/$tag.tree/sub/a.csv"
	check "$tag: rm" "$CLI" rm "$base/d/big.bin"
	! "$CLI" cp "$base/d/big.bin" "$T_TMP/gone" 2>"$T_TMP/err"
	t_ok $? "$tag: a removed object is gone"
}

# 1. The embedded store's folder, as on the controller's machine.
export TRAINCTL_STATE_DIR="$T_TMP/state"
backend embedded s3://bkt
check "embedded: layout <state>/s3/<bucket>/<key>" \
	test -f "$T_TMP/state/s3/bkt/code/sourcedir.tar.gz"
unset TRAINCTL_STATE_DIR

# 2. file://
backend file "file://$T_TMP/shared"

# 3. s3rver
if PORT=$(S3RVER_BUCKETS=bkt sh tests/storage/s3rver.sh start "$S3DIR" 2>"$T_TMP/err"); then
	export TRAINCTL_S3_ENDPOINT=http://127.0.0.1:$PORT \
		AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
	backend s3 s3://bkt
	check "s3: the aws CLI reads what we wrote" /usr/bin/aws \
		--endpoint-url "$TRAINCTL_S3_ENDPOINT" --region us-east-1 \
		s3 cp s3://bkt/code/sourcedir.tar.gz "$T_TMP/aws.tgz"
	check "s3: identical to ours" cmp "$T_TMP/aws.tgz" "$T_TMP/s3.tgz"
	# trainctld --s3-endpoint: the controller (the job's model) and its
	# local agents reach that endpoint with none of it in their
	# environment.
	ep=$TRAINCTL_S3_ENDPOINT
	unset TRAINCTL_S3_ENDPOINT
	if [ ! -x "$DAEMON" ]; then
		t_skip "s3: trainctld --s3-endpoint" "$DAEMON is not built"
	elif t_start_trainctld -n s3ctrl -- --s3-endpoint "$ep" \
		--local-hosts 1; then
		TRAINCTL_ENDPOINT=$T_URL "$CLI" create-training-job --name s3job \
			--image file:///bin/true --instance-type ml.m5.large \
			--instance-count 1 --output-path s3://bkt/out --wait \
			>"$T_TMP/out" 2>"$T_TMP/err"
		t_ok $? "s3: a job of trainctld --s3-endpoint completes" ||
			t_diag_file "$T_TMP/err"
		check "s3: its model.tar.gz is in the bucket" /usr/bin/aws \
			--endpoint-url "$ep" --region us-east-1 \
			s3 ls s3://bkt/out/s3job/output/model.tar.gz
		t_stop "$T_PID"
	else
		t_fail "s3: trainctld --s3-endpoint starts"
	fi
	unset TRAINCTL_S3_ENDPOINT AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
else
	t_skip "s3: backend" "s3rver cannot run here"
fi

# 4. The controller's blob endpoint, once trainctld serves it.
if [ ! -x "$DAEMON" ]; then
	t_skip "blob: backend" "$DAEMON is not built"
elif ! t_start_trainctld -n ctrl; then
	t_fail "blob: trainctld starts"
else
	export TRAINCTL_ENDPOINT=$T_URL
	backend blob s3://bkt
	check "blob: stored in the controller's state folder" \
		test -f "$T_TMP/ctrl/s3/bkt/code/sourcedir.tar.gz"
fi

check "usage: upload-source without --to" sh -c \
	"'$CLI' upload-source '$T_TMP/src'; test \$? -eq 129"
check "usage: cp between two local paths" sh -c \
	"'$CLI' cp /etc/hostname '$T_TMP/x'; test \$? -eq 129"
check "error: a bad URI is a usage error" sh -c \
	"'$CLI' cp '$T_TMP/data/big.bin' 's3://BAD/x'; test \$? -eq 129"

t_done
