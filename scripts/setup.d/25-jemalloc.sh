# jemalloc, the malloc the runtime images preload (Dockerfile, runtime stage): the memory benchmark
# (bench/memory/idle-rss.ts) runs each process with it, as its image does.
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
apt_install_missing libjemalloc2
