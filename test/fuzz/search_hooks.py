# schemathesis hooks for search's fuzz test (test/fuzz/search.test.ts), loaded through
# SCHEMATHESIS_HOOKS. A knowledge id the key is not scoped to is refused (400) before any search
# runs, and generated ids never name the test's knowledge base; so half of the generated queries
# (chosen by the parity of their text's length, so a run with the same seed repeats) are scoped
# to it (CAPSTAN_FUZZ_KB) and run the whole pipeline (embedding, vector search, re-ranking) on
# the generated text, while the other half exercise the refusal.
import os

import schemathesis

KB = os.environ["CAPSTAN_FUZZ_KB"]


def _scope(query):
    if not isinstance(query, dict) or not isinstance(query.get("knowledgeIds"), list):
        return
    text = query.get("text")
    if isinstance(text, str) and len(text) % 2 == 0:
        query["knowledgeIds"] = [KB]


@schemathesis.hook
def map_case(context, case):
    body = case.body
    if isinstance(body, dict):
        _scope(body)
        if isinstance(body.get("queries"), list):
            for query in body["queries"]:
                _scope(query)
    return case
