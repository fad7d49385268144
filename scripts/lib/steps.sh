# Sourced by scripts/setup.sh and scripts/ground.sh: each step is announced, timed, and reported as
# built or as already in place, so a person watching a long first run sees which component is being
# made, how long it took, and what was reused.
#   steps_begin NAME     starts the clock and names the log prefix ([NAME])
#   step "what" CMD...   runs CMD; a step that needed under REUSED_BELOW_S seconds (default 2) made
#                        nothing worth naming and is reported as reused from the cache
#   say TEXT             one line under the prefix
#   steps_end            the total time
steps_begin() {
  STEPS_NAME=$1
  STEPS_START=$SECONDS
  STEPS_N=0
}
say() { printf '[%s] %s\n' "$STEPS_NAME" "$*"; }
step() {
  local what=$1 began=$SECONDS took
  shift
  STEPS_N=$((STEPS_N + 1))
  say "($STEPS_N) $what ..."
  if ! "$@"; then
    say "($STEPS_N) $what: FAILED after $((SECONDS - began)) s"
    return 1
  fi
  took=$((SECONDS - began))
  if [ "$took" -lt "${REUSED_BELOW_S:-2}" ]; then
    say "($STEPS_N) $what: already in place, reused (${took} s)"
  else
    say "($STEPS_N) $what: done in ${took} s"
  fi
}
steps_end() { say "done in $((SECONDS - STEPS_START)) s (total elapsed since this script started)"; }
