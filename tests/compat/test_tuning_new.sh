#!/bin/sh
# Hyperparameter tuning jobs with the newer boto3/botocore generation
# (model M26, with RandomSeed, TuningJobCompletionDetails and
# DeleteHyperParameterTuningJob) against trainctld. tests/run.sh runs *.py
# with /usr/bin/python3 (Debian's older botocore), so this wrapper finds the
# other interpreter (pyenv's python3) and runs tests/compat/tuning_new.py
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
	# Must have a botocore whose sagemaker model knows DeleteHyperParameterTuningJob.
	if "$cand" -c 'import botocore.session, sys; m = botocore.session.get_session().get_service_model("sagemaker"); sys.exit(0 if "DeleteHyperParameterTuningJob" in m.operation_names else 1)' >/dev/null 2>&1; then
		py=$cand
		break
	fi
done

if [ -z "$py" ]; then
	t_skip_all "newer botocore not installed"
fi
exec "$py" "$here/tuning_new.py"
