#!/bin/sh
# Lays out a runtime image's whole root filesystem in /rootfs (run by the Dockerfile as root, on
# the base image, in a builder stage; the runtime stage copies /rootfs into an empty image):
#
#   slim-root.sh [DEBIAN_PACKAGE...]
#
# Only what a Capstan process runs on goes in, as a distroless image has it: the C and C++
# runtime libraries Node links (libc6, libstdc++6, libgcc-s1), the given Debian packages (the
# scraper: Chromium's headless shell and a font) and the packages they depend on, a POSIX shell
# (dash, for `kubectl exec` and the image checks), the CA certificates, /etc/passwd and /etc/group
# with the unprivileged user 10001, and Node with its symbol tables stripped (the base's node
# is the npm package's, 126 MB of which 18 MB are symbols). No package manager, no coreutils, no
# perl, no documentation; /var/lib/dpkg/status lists exactly the packages copied, so image
# scanners still see them.
set -eu

root=/rootfs
keep="libc6 libstdc++6 libgcc-s1 dash base-files netbase $*"
# Dependencies a runtime never uses: package maintainer scripts' tools (debconf, perl), the
# package managers themselves, and what chromium-common depends on for a desktop Chromium only:
# X11 and desktop tools and Mesa's GL drivers with LLVM (the headless shell renders in software;
# libgbm, which it links, loads a driver only when it has a GPU). The check at the end proves
# that every library the copied binaries link is there.
skip=" debconf perl-base dpkg apt adduser passwd init-system-helpers libdebconfclient0 \
  x11-utils xdg-utils libgl1-mesa-dri libllvm15 libglx-mesa0 libgl1 libglx0 libz3-4 "

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# binutils for strip; it stays in this builder stage.
apt-get install -y -qq --no-install-recommends binutils ca-certificates $keep >/dev/null

# The closure of Depends and Pre-Depends over the installed packages (the first installed
# alternative of each "a | b"), without the skipped ones.
todo=$keep
all=" "
while [ -n "$todo" ]; do
  next=""
  for p in $todo; do
    case "$all" in *" $p "*) continue ;; esac
    case "$skip" in *" $p "*) continue ;; esac
    all="$all$p "
    deps=$(dpkg-query -W -f='${Depends},${Pre-Depends}' "$p" 2>/dev/null || true)
    next="$next $(echo "$deps" | tr ',' '\n' | while read -r alt; do
      [ -n "$alt" ] || continue
      echo "$alt" | tr '|' '\n' | sed -e 's/(.*)//' -e 's/:any//' -e 's/ //g' | while read -r cand; do
        if dpkg-query -W -f='${Status}' "$cand" 2>/dev/null | grep -q 'ok installed'; then echo "$cand"; break; fi
      done
    done)"
  done
  todo=$next
done

mkdir -p "$root"
# Debian 12 merges /bin, /lib and /sbin into /usr: the same links, so packages' paths resolve.
for d in bin lib lib64 sbin; do
  if [ -L "/$d" ]; then mkdir -p "$root/$(readlink "/$d")" && ln -sfn "$(readlink "/$d")" "$root/$d"; fi
done

# Each package's files and links (not its folders: tar makes the ones that hold something),
# without documentation, manuals, translations or lintian overrides.
list=$(mktemp)
for p in $all; do
  dpkg-query -L "$p" | while read -r f; do
    case "$f" in /usr/share/doc/* | /usr/share/man/* | /usr/share/info/* | /usr/share/locale/* | /usr/share/lintian/*) continue ;; esac
    if [ -L "$f" ] || [ -f "$f" ]; then echo "${f#/}"; fi
  done
done | sort -u >"$list"
tar -C / --no-recursion -cf - -T "$list" | tar -C "$root" --keep-directory-symlink -xf -
rm -f "$list"
[ -e "$root/bin/sh" ] || ln -s dash "$root/usr/bin/sh"

# The installed-package database, cut down to the packages copied.
mkdir -p "$root/var/lib/dpkg"
awk -v keep="$all" 'BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) want[k[i]] = 1; RS = ""; ORS = "\n\n" }
  { if (match($0, /^Package: [^\n]+/) && want[substr($0, 10, RLENGTH - 9)]) print }' /var/lib/dpkg/status >"$root/var/lib/dpkg/status"

# CA certificates (the bundle update-ca-certificates wrote), users, name service configuration.
mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/app"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\ncapstan:x:10001:10001:Capstan:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\ncapstan:x:10001:\n' >"$root/etc/group"
cp /etc/nsswitch.conf "$root/etc/" 2>/dev/null || printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
chmod 1777 "$root/tmp"

mkdir -p "$root/usr/local/bin"
strip --strip-unneeded -o "$root/usr/local/bin/node" /usr/local/bin/node
"$root/usr/local/bin/node" --version >/dev/null
# Every binary and library of the named packages, and node, finds each library it links.
missing=$(for p in $keep; do dpkg-query -L "$p"; done | while read -r f; do
  case "$f" in *.so | *.so.* | */bin/* | /usr/lib/chromium/*) ;; *) continue ;; esac
  [ -f "$root$f" ] && [ ! -L "$root$f" ] && head -c 4 "$root$f" | grep -q ELF || continue
  chroot "$root" /lib64/ld-linux-x86-64.so.2 --list "$f" 2>&1 | grep 'not found' | sed "s|^|$f: |"
done; chroot "$root" /lib64/ld-linux-x86-64.so.2 --list /usr/local/bin/node | grep 'not found' || true)
if [ -n "$missing" ]; then echo "slim-root: libraries missing from the image:" >&2; echo "$missing" >&2; exit 1; fi
echo "slim-root: $(echo $all | wc -w) packages, $(du -sm "$root" | cut -f1) MB:$all"
