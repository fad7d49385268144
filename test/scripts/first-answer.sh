#!/usr/bin/env bash
# Measures a newcomer's path through the README: `git clone`, `bash scripts/setup.sh`, `npm start`,
# and the first chat answer from the key `npm start` prints, each step timed from the clone.
# Caches are empty for what setup fetches on a fresh machine: a new npm cache, no pip cache, and a new
# Python virtual environment first on the PATH (so the embedding model's PyPI packages are installed
# again, as on a machine without them). Debian packages already installed are not undone: their
# download is timed apart (apt-get --download-only into an empty folder) and printed with its size,
# so the figure can be judged.
# Usage: bash test/scripts/first-answer.sh [repository]   (default: this checkout). Uses the
# standalone ports (8080, 8081, 3000, 3002, 8090-8098): run it where nothing else holds them.
set -euo pipefail
src=${1:-$(git -C "$(dirname "$0")" rev-parse --show-toplevel)}
work=$(mktemp -d -t capstan-first-answer.XXXXXX)
start_pid=""
cleanup() {
  [ -n "$start_pid" ] && kill -- -"$start_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

t0=$(now)
git clone -q "$src" "$work/capstan"
clone_s=$(since "$t0")
cd "$work/capstan"
export npm_config_cache="$work/npm-cache" PIP_NO_CACHE_DIR=1
python3 -m venv "$work/python"
export PATH="$work/python/bin:$PATH"
bash scripts/setup.sh >"$work/setup.log" 2>&1
setup_s=$(since "$t0")
sed 's/^/    /' "$work/setup.log"

# npm start in its own session, stopped with it at exit.
touch "$work/start.log"
setsid npm start >"$work/start.log" 2>&1 &
start_pid=$!
for _ in $(seq 1 600); do
  grep -q '^Running\.' "$work/start.log" && break
  kill -0 "$start_pid" 2>/dev/null || { cat "$work/start.log" >&2; echo "npm start exited" >&2; exit 1; }
  sleep 0.5
done
grep -q '^Running\.' "$work/start.log" || { cat "$work/start.log" >&2; echo "npm start not running after 300 s" >&2; exit 1; }
running_s=$(since "$t0")
key=$(grep -o 'cap_chat_[A-Za-z0-9_-]*' "$work/start.log" | head -n 1)
answer=$(curl -s --max-time 60 http://127.0.0.1:8080/api/v1/chat/completions \
  -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"model":"any","messages":[{"role":"user","content":"What happens when I exceed the rate limit?"}]}')
answer_s=$(since "$t0")
echo "$answer" | grep -q '"chat.completion"' || { echo "no chat answer: $answer" >&2; exit 1; }

# What a machine without the Debian packages would add.
mkdir -p "$work/apt/partial"
t2=$(now)
apt-get install --reinstall --download-only -qq -o Dir::Cache::archives="$work/apt" \
  redis-server redis-tools chromium-headless-shell chromium-common fonts-liberation >/dev/null 2>&1 || true
apt_s=$(since "$t2")
apt_mb=$(du -sm "$work/apt" | cut -f1)

printf 'first answer: %s\n' "$(echo "$answer" | head -c 160)"
printf 'clone %s s | setup done %s s | npm start running %s s | first chat answer %s s (from the clone, %s)\n' \
  "$clone_s" "$setup_s" "$running_s" "$answer_s" "$(date -u +%Y-%m-%dT%H:%MZ)"
printf 'not in that figure on this machine: the Debian packages, %s MB downloaded in %s s\n' "$apt_mb" "$apt_s"
printf 'load average at the end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
