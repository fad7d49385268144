# The openai-python SDK (PyPI), pinned, in a virtual environment of its own under the cache
# (scripts/lib/venv.sh): test/gateway/providers-sdk.test.ts drives the gateway with it
# (completion, stream, tool call) in front of the Azure OpenAI and Anthropic fakes, as the
# openai-node SDK does.
set -euo pipefail
. "$(dirname "$0")/../lib/venv.sh"
pinned_venv openai-python openai 3.57.0
