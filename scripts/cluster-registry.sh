# The image registry of cluster.sh's test cluster (sourced by cluster.sh,
# which defines STATE, PROG, pid_from, term_pids and the rest it uses).
# shellcheck shell=bash


registry_dir() { echo "$STATE/registry"; }

# The registry's PID when it runs (its command line names our config).
registry_pid() { pid_from "$(registry_dir)/registry.pid" "$(registry_dir)/config.yml"; }

# Whether something listens on port $2 of address $1 or of every address.
port_taken() {
	command -v ss >/dev/null 2>&1 || return 1
	ss -Hltn 2>/dev/null | awk -v a="$1:$2" -v p=":$2" '
		$4 == a || $4 == "0.0.0.0" p || $4 == "*" p || $4 == "[::]" p { f = 1 }
		END { exit !f }'
}

# Before anything is made: the registry's port must be free (exit 3).
check_registry_port() {
	if [ "$REGISTRY_PORT" = "$PORT" ] && [ "$SUB" = up ]; then
		usage_error "--registry $REGISTRY_PORT: that is the controller's --port"
	fi
	if port_taken "$NET.1" "$REGISTRY_PORT"; then
		say "error: port $REGISTRY_PORT is in use on $NET.1 (not this cluster's); pass --registry PORT"
		exit $EXIT_CONFLICT
	fi
}

# docker-registry on NET.1:REGISTRY_PORT, storage in <state>/registry/data
# (kept from an earlier cluster of the same state dir that went down with
# --keep). Sets REGISTRY_ADDR/REGISTRY_PID and records them in cluster.env.
# Returns 1 after saying why.
start_registry() {
	local d addr=$NET.1:$REGISTRY_PORT p code deadline
	d=$(registry_dir)
	[ -x "$REGISTRY_BIN" ] || {
		say "error: --registry: $REGISTRY_BIN not found (install docker-registry)"
		return 1
	}
	command -v curl >/dev/null 2>&1 || {
		say "error: --registry: curl not found"
		return 1
	}
	mkdir -p "$d/data" || return 1
	{
		echo "# container image registry of the trainctl test cluster $STATE"
		echo "version: 0.1"
		printf 'log:\n  level: info\n  formatter: text\n  accesslog:\n    disabled: false\n'
		printf 'storage:\n  filesystem:\n    rootdirectory: %s\n' "$d/data"
		printf '  delete:\n    enabled: true\n'
		printf 'http:\n  addr: %s\n  secret: %s\n' "$addr" "$(random_alnum 32 'A-Za-z0-9')"
	} | write_file "$d/config.yml" 644
	setsid "$REGISTRY_BIN" serve "$d/config.yml" </dev/null >>"$d/registry.log" 2>&1 9>&- &
	p=$!
	echo "$p" >"$d/registry.pid"
	deadline=$(($(now_ms) + 10000))
	while :; do
		if ! pid_alive "$p"; then
			tail -n 5 "$d/registry.log" | sed 's/^/  registry: /' >&2
			say "error: docker-registry exited (log $d/registry.log)"
			return 1
		fi
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 --noproxy '*' \
			"http://$addr/v2/" 2>/dev/null || true)
		[ "$code" = 200 ] && break
		if [ "$(now_ms)" -gt $deadline ]; then
			tail -n 5 "$d/registry.log" | sed 's/^/  registry: /' >&2
			say "error: docker-registry on $addr does not answer (log $d/registry.log)"
			return 1
		fi
		sleep 0.05
	done
	REGISTRY_ADDR=$addr
	REGISTRY_PID=$p
	printf 'REGISTRY_ADDR=%s\nREGISTRY_PID=%s\n' "$addr" "$p" >>"$STATE/cluster.env"
}

stop_registry() {
	local p
	p=$(registry_pid) || return 0
	term_pids 50 "$p"
	rm -f "$(registry_dir)/registry.pid"
}
