# Sourced by setup snippets: apt_install_missing PACKAGE... installs, without recommends, those of
# the Debian packages not installed yet (one apt-get update, only when something is missing).
apt_install_missing() {
  local missing=() p sudo_cmd=""
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
