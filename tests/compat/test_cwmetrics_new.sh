#!/bin/sh
# CloudWatch metrics with the newer botocore generation (1.43: JSON 1.0,
# RPC v2 CBOR and query) against trainctld. tests/run.sh runs *.py with
# /usr/bin/python3 (Debian's older botocore), so this wrapper finds the
# other interpreter (pyenv's python3) and runs tests/compat/cwmetrics_new.py
# with it. TAP on stdout.
set -u
here=$(dirname "$0")
. "$here/../lib.sh"

py=""
for cand in $(command -v python3 2>/dev/null) "${PYENV_ROOT:-$HOME/.pyenv}/shims/python3"; do
	[ -x "$cand" ] || continue
	case "$(readlink -f "$cand")" in
	/usr/bin/python3*) continue ;;
	esac
	# Must have a botocore whose cloudwatch model lists rpc-v2-cbor.
	if "$cand" -c 'import botocore.session, sys; m = botocore.session.get_session().get_service_model("cloudwatch"); sys.exit(0 if "smithy-rpc-v2-cbor" in m.metadata.get("protocols", []) else 1)' >/dev/null 2>&1; then
		py=$cand
		break
	fi
done

if [ -z "$py" ]; then
	t_skip_all "botocore with the smithy-rpc-v2-cbor cloudwatch model not installed"
fi
exec "$py" "$here/cwmetrics_new.py"
