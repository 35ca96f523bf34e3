#!/bin/sh
# Installs the test-only npm tools (tests/tools/package.json: s3rver) into
# tests/tools/node_modules, from the lock file. Idempotent: does nothing
# when they are installed already. Needs node and npm (scripts/deps.sh
# installs nodejs; npm comes with it or as Debian's npm package).
set -eu

cd "$(dirname "$0")/../tests/tools"

if [ -f node_modules/s3rver/bin/s3rver.js ] &&
	[ -f node_modules/playwright-core/package.json ]; then
	[ "${1:-}" = "-q" ] || echo "npm-deps: s3rver present"
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	if ! command -v node >/dev/null 2>&1; then
		echo "npm-deps: node is missing (run scripts/deps.sh)" >&2
		exit 1
	fi
	# Debian's nodejs ships npm separately; nodesource's includes it.
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	echo "npm-deps: installing Debian's npm" >&2
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q \
		--no-install-recommends npm >&2
fi

echo "npm-deps: npm ci in tests/tools" >&2
# ci installs exactly the lock file's versions; no audit, fund or scripts.
npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2
