#!/bin/sh
# Prepares a runtime stage's operating system (run by the Dockerfile as root, on the base image):
#   runtime-os.sh [DEBIAN_PACKAGE...]
# installs the given Debian packages, adds the unprivileged user every Capstan image runs as
# (10001, as the chart's securityContext says), then removes the package managers and Node's
# tooling so nothing can install or build software in a running container. The Dockerfile copies
# the result into an empty (scratch) stage, so the removed files are in no layer at all.
set -eu

if [ "$#" -gt 0 ]; then
  # A package's install script must not start its service inside the build (redis-server would).
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi

# useradd is not in every Debian base (minbase has no `passwd` package); the files are enough.
grep -q '^capstan:' /etc/group || echo 'capstan:x:10001:' >>/etc/group
grep -q '^capstan:' /etc/passwd || echo 'capstan:x:10001:10001:Capstan:/nonexistent:/usr/sbin/nologin' >>/etc/passwd

# Package managers: apt, dpkg, debconf. /var/lib/dpkg (the installed-package database) stays:
# it is inert data without dpkg, and image scanners read it to list the image's packages.
rm -rf /usr/bin/apt* /usr/lib/apt /etc/apt /var/lib/apt /var/cache/apt /var/log/apt \
  /usr/lib/x86_64-linux-gnu/libapt-* /usr/lib/aarch64-linux-gnu/libapt-* \
  /usr/bin/dpkg* /usr/sbin/dpkg* /usr/lib/dpkg /usr/share/dpkg /etc/dpkg /var/log/dpkg.log \
  /usr/bin/debconf* /usr/sbin/dpkg-* /usr/share/debconf /var/cache/debconf
# Node's package managers and addon headers (the public node image also ships yarn and corepack).
rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
  /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* /usr/local/include/node \
  /usr/local/bin/docker-entrypoint.sh /root/.npm
rm -rf /tmp/* /var/tmp/* /var/log/*.log
