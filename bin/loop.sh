#!/usr/bin/env bash
# loop.sh STEP COMMAND...
#
# Run COMMAND every STEP seconds for one minute: the seeds' bash loop, done right.
# - Ticks are fixed to the start of the minute (start + k*STEP), not "sleep STEP
#   after the command", so a slow run never makes the loop drift.
# - Each run holds one of SLOTS slots (a lock each; DELAYQ_LOOP_SLOTS, default 2) until it
#   ends. A slow run (a job of 50 s) keeps its slot while the next ticks run in another;
#   a tick finding every slot busy is skipped. The loop itself ends with its minute,
#   whatever still runs, so the next minute's loop starts on time: at most SLOTS runs of
#   COMMAND from this directory at once, and a slow run never stops the next minute's work.
# - One loop per COMMAND at a time: a new minute's loop waits up to STEP seconds for the
#   previous one to end its minute.
# - A run that exits 2 (wrong flags: they will stay wrong) stops the loop: it says so once
#   on stderr and exits 2. Otherwise it exits with the last non-zero exit code of the runs
#   that ended within its minute (0 if all succeeded).
#
# crontab:  * * * * * cd /srv/app && bin/loop.sh 2 bin/run_due.py >> var/delayq.log 2>&1
set -u

usage() { echo "loop.sh: error: $1 (usage: loop.sh STEP COMMAND...)" >&2; exit 2; }
[ $# -ge 1 ] && [ "$1" = "--help" ] && { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
[ $# -ge 2 ] || usage "need STEP and COMMAND"
step=$1; shift
[[ "$step" =~ ^[0-9]+$ ]] && (( step >= 1 && step <= 60 )) || usage "STEP must be a whole number of seconds from 1 to 60"
slots=${DELAYQ_LOOP_SLOTS:-2}
[[ "$slots" =~ ^[0-9]+$ ]] && (( slots >= 1 && slots <= 16 )) || usage "DELAYQ_LOOP_SLOTS must be 1 to 16"
command -v flock >/dev/null || { echo "loop.sh: error: flock not found (apt-get install util-linux)" >&2; exit 1; }

window=${DELAYQ_LOOP_SECONDS:-60}          # tests shorten the minute; cron uses 60
key=$(printf '%s' "$PWD $*" | cksum | cut -d' ' -f1)
lock=${DELAYQ_LOOP_LOCK:-${TMPDIR:-/tmp}/delayq-loop-$(id -u)-$key.lock}
exec 9>>"$lock"
if ! flock -w "$step" 9; then
  echo "loop.sh: warning: another loop of '$*' still holds $lock; skipping this minute" >&2
  exit 0
fi

free_slot() {   # prints a slot number whose lock is free right now
  local s
  for (( s = 1; s <= slots; s++ )); do
    if flock -n "$lock.$s" true 2>/dev/null; then echo "$s"; return 0; fi
  done
  return 1
}

declare -a pids=()
status=0
reap() {        # collect the runs that ended; stop for good on a usage error
  local keep=() pid code
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then keep+=("$pid"); continue; fi
    wait "$pid"; code=$?
    if (( code == 2 )); then
      echo "loop.sh: error: '$*' exited 2 (a usage error: its flags are wrong); the loop stops until they are fixed" >&2
      exit 2
    fi
    (( code != 0 )) && status=$code
  done
  pids=("${keep[@]}")
}

now_us() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
start=$(now_us)
end=$((start + window * 1000000))
step_us=$((step * 1000000))
tick=$start
skipped=0
while (( tick < end )); do
  wait_us=$((tick - $(now_us)))
  (( wait_us > 0 )) && sleep "$(printf '%d.%06d' $((wait_us / 1000000)) $((wait_us % 1000000)))"
  reap "$@"
  if slot=$(free_slot); then
    # the run takes its slot's lock itself and holds it until it ends (beyond this loop's minute if need be)
    flock -n "$lock.$slot" "$@" 9>&- &
    pids+=($!)
  else
    skipped=$((skipped + 1))
  fi
  now=$(now_us)
  tick=$((tick + step_us))
  while (( tick <= now )); do tick=$((tick + step_us)); done   # skip ticks a slow tick overran
done
reap "$@"
(( skipped > 0 )) && echo "loop.sh: warning: $skipped tick(s) skipped: all $slots slots busy with runs of '$*'" >&2
exit "$status"
