# Scraper (issue 5): Debian's Chromium headless shell (installed by setup.sh) driven by playwright-core, which
# never downloads a browser. Screenshots need at least one font; --no-install-recommends leaves
# Chromium without one on a minimal image.
missing=()
for p in chromium-headless-shell fonts-liberation; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -x "${CHROMIUM_PATH:-/usr/lib/chromium/chromium-headless-shell}" ]; then
  echo "[setup] scraper: no Chromium at ${CHROMIUM_PATH:-/usr/lib/chromium/chromium-headless-shell}" >&2
  exit 1
fi
echo "reused: Chromium's headless shell at ${CHROMIUM_PATH:-/usr/lib/chromium/chromium-headless-shell}"
