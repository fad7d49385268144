# Monitoring (issue 15): Debian's Prometheus and promtool. The integration tests start their own
# /usr/bin/prometheus per run (free loopback port, temporary storage) to scrape the platform and
# evaluate every alert and dashboard query; `promtool check rules` / `promtool test rules` check the
# chart's PrometheusRule. The package's own system service is not wanted: it is stopped and
# disabled where it runs (machines with systemd), and nothing else depends on it.
if ! dpkg -s prometheus >/dev/null 2>&1; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  # policy-rc.d exit 101: dpkg's maintainer scripts may not start the service during the install.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo_cmd tee "$policy" >/dev/null && $sudo_cmd chmod +x "$policy"
    trap '$sudo_cmd rm -f "$policy"' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends prometheus >/dev/null
else
  echo "reused: Debian's prometheus package is installed"
fi
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
for bin in /usr/bin/prometheus /usr/bin/promtool; do
  if [ ! -x "$bin" ]; then
    echo "[setup] prometheus: $bin missing after the install" >&2
    exit 1
  fi
done
