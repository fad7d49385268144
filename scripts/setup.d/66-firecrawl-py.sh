# Firecrawl's official Python SDK (issue 26: the scraper's /v1 and /v2 routes are checked with the
# SDKs users point at it), pinned, in a virtual environment of its own under the cache
# (scripts/lib/venv.sh). test/scraper/firecrawl-sdk.test.ts runs
# $CAPSTAN_CACHE/firecrawl-py/<version>/bin/python against a scraper on loopback.
set -euo pipefail
. "$(dirname "$0")/../lib/venv.sh"
pinned_venv firecrawl-py firecrawl-py 4.55.0
