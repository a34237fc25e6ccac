#!/usr/bin/env bash
# loop.sh STEP COMMAND...
#
# Run COMMAND every STEP seconds for one minute: the seeds' bash loop, done right.
# - Ticks are fixed to the start of the minute (start + k*STEP), not "sleep STEP
#   after the command", so a slow command never makes the loop drift; ticks that
#   a slow command overran are skipped, and no run starts after the minute ends.
# - One loop per COMMAND at a time (flock): if the previous minute's loop is still
#   in its last run, this one waits for it up to STEP seconds, then gives up
#   with a warning on stderr (cron mails it).
# - Exits with the last non-zero exit code of COMMAND (0 if every run succeeded).
#
# crontab:  * * * * * cd /srv/app && bin/loop.sh 2 bin/run_due.py >> var/delayq.log
set -u

usage() { echo "loop.sh: error: $1 (usage: loop.sh STEP COMMAND...)" >&2; exit 2; }
[ $# -ge 1 ] && [ "$1" = "--help" ] && { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
[ $# -ge 2 ] || usage "need STEP and COMMAND"
step=$1; shift
[[ "$step" =~ ^[0-9]+$ ]] && (( step >= 1 && step <= 60 )) || usage "STEP must be a whole number of seconds from 1 to 60"
command -v flock >/dev/null || { echo "loop.sh: error: flock not found (apt-get install util-linux)" >&2; exit 1; }

window=${DELAYQ_LOOP_SECONDS:-60}          # tests shorten the minute; cron uses 60
key=$(printf '%s' "$PWD $*" | cksum | cut -d' ' -f1)
lock=${DELAYQ_LOOP_LOCK:-${TMPDIR:-/tmp}/delayq-loop-$(id -u)-$key.lock}
exec 9>>"$lock"
if ! flock -w "$step" 9; then
  echo "loop.sh: warning: another loop of '$*' still holds $lock; skipping this minute" >&2
  exit 0
fi

now_us() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
start=$(now_us)
end=$((start + window * 1000000))
step_us=$((step * 1000000))
status=0
tick=$start
while (( tick < end )); do
  wait_us=$((tick - $(now_us)))
  (( wait_us > 0 )) && sleep "$(printf '%d.%06d' $((wait_us / 1000000)) $((wait_us % 1000000)))"
  "$@" || status=$?
  now=$(now_us)
  tick=$((tick + step_us))
  while (( tick <= now )); do tick=$((tick + step_us)); done   # skip ticks a slow run overran
done
exit "$status"
