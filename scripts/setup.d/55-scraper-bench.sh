# The scraper's fidelity benchmark (bench/scraper/fidelity/): real documentation sites from Debian
# packages that ship HTML (Python's Sphinx docs, PostgreSQL's DocBook manual, rustdoc pages of the
# crates cargo-doc ships, the Debian Reference), and the two converters it is compared with,
# markdownify and html2text, from PyPI in a virtualenv under ~/.cache/capstan (never the system
# Python). About 115 MB. Not nodejs-doc: its files overlap NodeSource's nodejs package, and apt
# removes node and npm to install it.
missing=()
for p in python3.11-doc postgresql-doc-15 cargo-doc debian-reference-en python3-venv; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
venv="${CAPSTAN_CACHE:-$HOME/.cache/capstan}/scraper-bench/venv"
if ! "$venv/bin/python" -c "import markdownify, html2text" >/dev/null 2>&1; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "markdownify==1.2.2" "html2text==2025.4.15"
else
  echo "reused: the Debian documentation packages and $venv"
fi
