# schemathesis hooks for the scraper's fuzz test (test/fuzz/scraper.test.ts), loaded through
# SCHEMATHESIS_HOOKS. They keep every scrape on loopback and bounded in time, and make a share of
# the generated targets real pages:
#  - any generated http(s) URL is pointed at the test's local site (CAPSTAN_FUZZ_SITE), path and
#    query kept, so no name is resolved and nothing leaves the machine;
#  - a third of the other generated `url`/`urls` strings (chosen by their length, so a run with
#    the same seed repeats) become the site's page, so Chromium renders real pages while the
#    rest exercise validation;
#  - pageOptions.waitFor and timeout are capped (1 s and 10 s), likewise a crawl's scrapeOptions
#    and a batch's top-level options, and bulk and batch lists to 3 URLs: the API honours up to
#    60 s and 600 s, which a legitimate client may ask for, but each case must answer within the
#    run's request timeout;
#  - a crawl's limit is capped to 2 pages, so the jobs it starts (they run on after the answer)
#    stay small (the site has two pages anyway); their start URLs are the site's, like any
#    other target.
import os
import urllib.parse

import schemathesis

SITE = os.environ["CAPSTAN_FUZZ_SITE"]


def _target(value):
    if not isinstance(value, str):
        return value
    try:
        parts = urllib.parse.urlsplit(value)
    except ValueError:
        parts = None
    if parts is not None and parts.scheme.lower() in ("http", "https") and parts.netloc:
        path = parts.path if parts.path.startswith("/") else "/" + parts.path
        return SITE + path + ("?" + parts.query if parts.query else "")
    if len(value) % 3 == 0:
        return SITE + "/page"
    return value


def _cap(options):
    if not isinstance(options, dict):
        return
    for field, most in (("waitFor", 1000), ("timeout", 10000)):
        value = options.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value > most:
            options[field] = most


@schemathesis.hook
def map_case(context, case):
    body = case.body
    if isinstance(body, dict):
        if "url" in body:
            body["url"] = _target(body["url"])
        if isinstance(body.get("urls"), list):
            body["urls"] = [_target(u) for u in body["urls"][:3]]
        _cap(body.get("pageOptions"))
        _cap(body.get("scrapeOptions"))
        if case.operation.path == "/batch/scrape":
            _cap(body)
        if case.operation.path == "/crawl":
            limit = body.get("limit")
            if isinstance(limit, int) and not isinstance(limit, bool) and limit > 2:
                body["limit"] = 2
    return case
