#!/bin/bash
# ft_trainer.py behind a bash wrapper whose first line is the time the
# process was exec'd ($EPOCHREALTIME: no fork, ~2 ms after exec), for
# bench/restart.py: TrainingImage file:///abs/path/ft_trainer.sh.
echo "ft-exec ts=$EPOCHREALTIME attempt=${TRAINCTL_ATTEMPT:-1} host=${SM_CURRENT_HOST:-algo-1} pid=$$"
exec /usr/bin/python3 "$(dirname "$0")/ft_trainer.py" "$@"
