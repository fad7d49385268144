# Sourced by scripts/setup.sh and scripts/ground.sh: each step is numbered, announced and timed, so a
# person watching a long first run sees which component is being made and how long it took. What a
# step finds already in place it says itself, in a line starting with "reused:" (the Go builds say
# "cached at"), since only the step knows whether it built something.
#   steps_begin NAME     starts the clock and names the log prefix ([NAME])
#   step "what" CMD...   runs CMD, then reports its time (or its failure)
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
  # The step's own lines, indented under its header (pipefail, set by the callers, keeps its status).
  if ! "$@" 2>&1 | sed -u 's/^/    /'; then
    say "($STEPS_N) $what: FAILED after $((SECONDS - began)) s"
    return 1
  fi
  took=$((SECONDS - began))
  say "($STEPS_N) $what: done in ${took} s"
}
steps_end() { say "done in $((SECONDS - STEPS_START)) s (total elapsed since this script started)"; }
