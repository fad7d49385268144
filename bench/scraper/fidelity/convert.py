"""The two converters the scraper is compared with, on the same pages: markdownify and html2text.

Reads a JSON list of {"file", "url"} on stdin, writes {url: {"markdownify": md, "html2text": md}}
on stdout. Each gets the page's HTML as served and its URL (html2text resolves links against it;
markdownify has no such option, and the benchmark resolves every converter's links the same way).
"""
import json
import sys

import html2text
from markdownify import markdownify

out = {}
for page in json.load(sys.stdin):
    with open(page["file"], encoding="utf-8", errors="replace") as f:
        html = f.read()
    h = html2text.HTML2Text(baseurl=page["url"])
    h.body_width = 0  # no reflow
    out[page["url"]] = {
        "markdownify": markdownify(html, heading_style="ATX"),
        "html2text": h.handle(html),
    }
json.dump(out, sys.stdout)
