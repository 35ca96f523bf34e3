#!/bin/bash
# GPU ranks in containers (docs/containers.md): on a host with an NVIDIA
# GPU, a job of a container image whose `train` loads the CUDA driver
# (tests/integration/gpucheck.c: names the devices, allocates on the first)
# runs through trainctld --local-hosts 1 and a registry, and sees the GPUs:
# the agent counts them (nvidia-smi -L) and hands them to podman through
# the CDI device nvidia.com/gpu=all.
#
#   tests/integration/test_gpu_containers.sh      (root, after make)
#
# The host's CDI spec is used when one names nvidia.com/gpu; else
# `nvidia-ctk cdi generate` writes one; else this script writes a minimal
# one (the device nodes, and the driver's libcuda/libnvidia-* files mounted
# at /usr/local/nvidia-cdi/lib). Without podman on the PATH it unpacks
# TRAINCTL_PODMAN_TARBALL (Debian's podman, runc, crun, conmon, catatonit,
# skopeo, docker-registry and their libraries; bin/ lib/ share/ etc/) and
# points podman at it. TAP on stdout; skips without a GPU (this is the
# check for a GPU machine; make test runs it everywhere).
set -u
. "$(dirname "$0")/../lib.sh"
cd "$T_ROOT" || exit 1
BUILD=${BUILD:-build}
BIN=$PWD/$BUILD/bin
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $1"
	[ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/# /'
}

# TRAINCTL_GPU_TEST_FORCE=1 runs it without a GPU (its plumbing only). A
# host with /dev/nvidia0 has a GPU: there a driver that nvidia-smi cannot
# reach is a failure, not a skip.
if [ "${TRAINCTL_GPU_TEST_FORCE:-}" != 1 ] && { ! command -v nvidia-smi >/dev/null 2>&1 ||
	! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
	if [ -e /dev/nvidia0 ]; then
		echo "1..1"
		echo "not ok 1 - nvidia-smi -L lists the GPU of /dev/nvidia0"
		nvidia-smi -L 2>&1 | sed 's/^/# /'
		exit 1
	fi
	echo "1..0 # SKIP no NVIDIA GPU on this machine"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root (rootful podman)"
	exit 0
fi

# Under /tmp: podman's runroot ($W/run) must stay within 50 bytes.
tmpdir_was=${TMPDIR-}
TMPDIR=/tmp
t_tmpdir trainctl-gpu
TMPDIR=$tmpdir_was
W=$T_TMP
WROTE="" # system files this script wrote, removed at the end
MADE=""  # system folders it made, removed at the end when empty
# The daemons (t_track_pid) are stopped first, then these.
# shellcheck disable=SC2016
t_on_exit '[ -n "$WROTE" ] && rm -f $WROTE; [ -n "$MADE" ] && rmdir $MADE 2>/dev/null'
mkdir_sys() { [ -d "$1" ] || { mkdir -p "$1" && MADE="$1 $MADE"; }; }
# shellcheck disable=SC2016
[ "${TRAINCTL_TEST_KEEP:-}" != 1 ] || t_on_exit 'echo "# kept $T_TMP"; T_TMP='

# --- podman ---------------------------------------------------------------
TCENV=""
# The carried build also serves trainctld when this host lacks its
# libraries (a GPU machine of another distribution).
if ! command -v podman >/dev/null 2>&1 ||
	{ [ -n "${TRAINCTL_PODMAN_TARBALL:-}" ] && ldd "$BIN/trainctld" | grep -q 'not found'; }; then
	if [ -z "${TRAINCTL_PODMAN_TARBALL:-}" ]; then
		echo "1..0 # SKIP no podman (scripts/deps.sh) and no TRAINCTL_PODMAN_TARBALL"
		exit 0
	fi
	mkdir -p "$W/pm/wrap" && tar xJf "$TRAINCTL_PODMAN_TARBALL" -C "$W/pm" || exit 1
	# Each program with the carried libraries, nothing else of this
	# host's (its own curl, say) with them.
	for b in "$W"/pm/bin/*; do
		printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$W/pm/lib" "$b" \
			>"$W/pm/wrap/${b##*/}"
		chmod +x "$W/pm/wrap/${b##*/}"
	done
	export PATH=$W/pm/wrap:$PATH TRAINAGENT_PODMAN=$W/pm/wrap/podman
	TCENV="env LD_LIBRARY_PATH=$W/pm/lib"
	mkdir_sys /etc/containers
	for f in policy.json registries.conf; do
		[ ! -e "/etc/containers/$f" ] || continue
		cp "$W/pm/etc/containers/$f" "/etc/containers/$f" && WROTE="$WROTE /etc/containers/$f"
	done
	[ -e /etc/containers/containers.conf ] || WROTE="$WROTE /etc/containers/containers.conf"
	cat >/etc/containers/containers.conf <<EOF
[containers]
seccomp_profile = "$W/pm/share/containers/seccomp.json"
[engine]
conmon_path = ["$W/pm/wrap/conmon"]
init_path = "$W/pm/bin/catatonit"
[engine.runtimes]
runc = ["$W/pm/wrap/runc"]
crun = ["$W/pm/wrap/crun"]
EOF
	echo "# podman from $TRAINCTL_PODMAN_TARBALL"
fi
P="podman --root $W/storage --runroot $W/run --tmpdir $W/tmp --cgroup-manager cgroupfs --events-backend file"
# overlay over an overlay root does not mount: then the vfs driver, for
# this check and for the agent's store alike.
if ! $P info >/dev/null 2>"$W/info.err" && grep -qi overlay "$W/info.err"; then
	mkdir_sys /etc/containers
	[ -e /etc/containers/storage.conf ] || WROTE="$WROTE /etc/containers/storage.conf"
	printf '[storage]\ndriver = "vfs"\n' >/etc/containers/storage.conf
	rm -rf "$W/storage" "$W/run"
	echo "# storage: vfs ($(tail -1 "$W/info.err"))"
fi
if ! out=$($P info --format '{{.Store.GraphDriverName}} {{.Host.CgroupsVersion}} {{.Host.OCIRuntime.Name}}' 2>&1); then
	not_ok "podman info" "$out"
	echo "1..$n"
	exit 1
fi
echo "# podman: $(podman --version); store, cgroups, runtime: $out"

# --- the CDI spec ---------------------------------------------------------
mkdir_sys /etc/cdi
if grep -qs 'nvidia.com/gpu' /etc/cdi/* /var/run/cdi/*; then
	echo "# CDI: the host's spec"
elif command -v nvidia-ctk >/dev/null 2>&1 &&
	nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml >"$W/ctk.log" 2>&1; then
	WROTE="$WROTE /etc/cdi/nvidia.yaml"
	echo "# CDI: nvidia-ctk cdi generate"
else
	cuda=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 / {print $NF; exit}')
	[ -n "$cuda" ] || cuda=$(ls /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 2>/dev/null | head -1)
	drv=$(dirname "$cuda")
	WROTE="$WROTE /etc/cdi/trainctl-nvidia.json"
	{
		printf '{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[{"name":"all","containerEdits":{"deviceNodes":['
		sep=""
		for d in /dev/nvidia[0-9]* /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia-modeset; do
			[ -c "$d" ] || continue
			printf '%s{"path":"%s"}' "$sep" "$d"
			sep=","
		done
		printf ']}}],"containerEdits":{"env":["LD_LIBRARY_PATH=/usr/local/nvidia-cdi/lib"],"mounts":['
		sep=""
		for f in "$drv"/libcuda.so* "$drv"/libnvidia-*.so*; do
			[ -e "$f" ] || continue
			printf '%s{"hostPath":"%s","containerPath":"/usr/local/nvidia-cdi/lib/%s","options":["ro","nosuid","nodev","bind"]}' \
				"$sep" "$(readlink -f "$f")" "$(basename "$f")"
			sep=","
		done
		printf ']}}\n'
	} >/etc/cdi/trainctl-nvidia.json
	echo "# CDI: a minimal spec for the driver in $drv"
fi

# --- the image: gpucheck and the C library it links, FROM scratch -------------
mkdir -p "$W/ctx/rootfs/usr/bin" "$W/ctx/rootfs/opt/ml"
if [ -n "${GPUCHECK_BIN:-}" ]; then
	cp "$GPUCHECK_BIN" "$W/ctx/rootfs/usr/bin/train"
else
	cc -O2 -o "$W/ctx/rootfs/usr/bin/train" tests/integration/gpucheck.c -ldl || exit 1
fi
# The C library the probe links, and what the driver's libcuda needs of
# it (libm, librt, ...): an image brings its own C library; the CDI spec
# mounts only the driver's files.
cuda=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 / {print $NF; exit}')
for lib in $({ ldd "$W/ctx/rootfs/usr/bin/train"; [ -n "$cuda" ] && ldd "$cuda"; } |
	awk '/\// {print ($3 ~ /^\//) ? $3 : $1}' | grep -v -e nvidia -e libcuda | sort -u); do
	mkdir -p "$W/ctx/rootfs$(dirname "$lib")"
	cp -L "$lib" "$W/ctx/rootfs$lib"
done
ln -s usr/bin "$W/ctx/rootfs/bin"
cat >"$W/ctx/Containerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/bin
EOF
if out=$($P build -q -t localhost/gpucheck:1 "$W/ctx" 2>&1); then
	ok "podman build FROM scratch: gpucheck and its C library"
else
	not_ok "podman build of the gpucheck image" "$out"
fi

# --- registry, controller, job -------------------------------------------------
ports=$(t_free_port 2)
RPORT=${ports% *}
CPORT=${ports#* }
mkdir -p "$W/reg"
cat >"$W/reg/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $W/reg/data
http:
  addr: 127.0.0.1:$RPORT
EOF
setsid docker-registry serve "$W/reg/config.yml" >"$W/reg/log" 2>&1 &
t_track_pid $!
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$RPORT/v2/" >/dev/null && break; sleep 0.1; done
IMAGE=127.0.0.1:$RPORT/gpu/check:1
if out=$($P push -q --tls-verify=false localhost/gpucheck:1 "docker://$IMAGE" 2>&1); then
	ok "the image pushed to a local registry"
else
	not_ok "podman push" "$out"
fi
# shellcheck disable=SC2086
setsid $TCENV "$BIN/trainctld" --listen "127.0.0.1:$CPORT" --state-dir "$W/state" --local-hosts 1 \
	--insecure-registry "127.0.0.1:$RPORT" >"$W/trainctld.log" 2>&1 &
t_track_pid $!
export TRAINCTL_ENDPOINT=http://127.0.0.1:$CPORT
gpus=""
for _ in $(seq 100); do
	gpus=$($TCENV "$BIN/trainctl" --output json list-hosts 2>/dev/null | tr ',' '\n' | grep '"gpus"' | head -1)
	[ -n "$gpus" ] && break
	sleep 0.1
done
gpus=$(printf '%s' "$gpus" | grep -o '[0-9]*$')
if [ "${gpus:-0}" -gt 0 ]; then
	ok "the local host reports its $gpus GPUs"
else
	not_ok "the local host reports its GPUs" "$(tail -5 "$W/trainctld.log")"
fi
$TCENV "$BIN/trainctl" create-training-job --name gpu-check --image "$IMAGE" \
	--instance-type ml.g5.xlarge --instance-count 1 --output-path s3://gpu/out \
	--max-runtime 300 --wait >"$W/job.out" 2>&1
rc=$?
$TCENV "$BIN/trainctl" logs gpu-check >"$W/job.log" 2>&1
if [ $rc = 0 ] && grep -q 'gpu 0: ' "$W/job.log" &&
	grep -q 'allocated and freed on gpu 0: ok' "$W/job.log"; then
	ok "a container rank sees the GPU: $(grep -o 'gpu 0: .*' "$W/job.log" | head -1)"
else
	not_ok "a container rank sees the GPU (job exit $rc)" \
		"$(cat "$W/job.out" "$W/job.log"; tail -20 "$W/trainctld.log"; tail -20 "$W"/state/hosts/*/agent.log)"
fi
host=$(nvidia-smi -L 2>/dev/null | head -1 | sed 's/^GPU 0: //; s/ (UUID.*//')
if tar xzOf "$W/state/s3/gpu/out/gpu-check/output/model.tar.gz" gpu.txt 2>/dev/null |
	grep -qF "$host"; then
	ok "model.tar.gz names the host's GPU ($host)"
else
	not_ok "model.tar.gz names the host's GPU ($host)" \
		"$(tar tzvf "$W/state/s3/gpu/out/gpu-check/output/model.tar.gz" 2>&1)"
fi
# The agent's runroot: under its work directory, or (a path over podman's
# 50 bytes) /run/trainagent-<hash of host name and work directory>.
hw=$W/state/hosts/local-1
rr=$hw/containers/run
if [ ${#rr} -gt 50 ]; then
	d=/run
	[ -w /run ] || d=/tmp
	rr=$d/trainagent-$(printf '%s\n%s' "$(hostname)" "$hw" | sha256sum | cut -c1-16)
fi
left=$(podman --root "$hw/containers/storage" --runroot "$rr" --tmpdir "$hw/containers/tmp" \
	--cgroup-manager cgroupfs --events-backend file ps -a -q 2>&1)
if [ -z "$left" ]; then
	ok "no container left on the host"
else
	not_ok "no container left on the host" "$left"
fi
echo "1..$n"
[ $fails = 0 ]
