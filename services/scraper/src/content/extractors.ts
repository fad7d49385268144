// Extractors: {name: selector} → values from the rendered page. A selector is a CSS selector
// (text of the first match, or null), "selector@attr" (an attribute of the first match), or an
// object {selector, attribute?, all?} (all: every match, as a list).

import type { extractorSpecSchema } from "@capstan/shared/clients/scraper-wire";
import type { CheerioAPI } from "cheerio";
import { load } from "cheerio";
import type { z } from "zod";
import { ScraperError } from "../errors.ts";

// The extractors' schema is the scraper's wire with its client (request bodies), defined once.
export { extractorSpecSchema, extractorsSchema, MAX_EXTRACTORS } from "@capstan/shared/clients/scraper-wire";

export type ExtractorSpec = z.output<typeof extractorSpecSchema>;
export type ExtractedValue = string | null | string[];

interface NormalisedSpec {
  selector: string;
  attribute: string | undefined;
  all: boolean;
}

function normalise(spec: ExtractorSpec): NormalisedSpec {
  if (typeof spec !== "string") return { selector: spec.selector, attribute: spec.attribute, all: spec.all };
  // "a.link@href": an attribute; "@" inside brackets or quotes belongs to the selector.
  const match = /^(.*[^\s@])@([a-zA-Z_:][-a-zA-Z0-9_:.]*)$/.exec(spec);
  if (match && !/[[\]"']/.test(match[2] as string)) {
    return { selector: match[1] as string, attribute: match[2], all: false };
  }
  return { selector: spec, attribute: undefined, all: false };
}

const EMPTY = load("<html><body></body></html>");

/** Checks every selector before a page is rendered for it; throws BAD_SELECTOR. */
export function validateExtractors(extractors: Record<string, ExtractorSpec>): void {
  for (const [name, spec] of Object.entries(extractors)) {
    try {
      EMPTY(normalise(spec).selector);
    } catch {
      throw new ScraperError("BAD_SELECTOR", [name]);
    }
  }
}

const text = (s: string) => s.replace(/\s+/g, " ").trim();

export function runExtractors(
  $: CheerioAPI,
  extractors: Record<string, ExtractorSpec>,
  baseUrl: string,
): Record<string, ExtractedValue> {
  const out: Record<string, ExtractedValue> = {};
  for (const [name, spec] of Object.entries(extractors)) {
    const { selector, attribute, all } = normalise(spec);
    const value = (el: Parameters<CheerioAPI>[0]): string | null => {
      if (!attribute) return text($(el).text());
      const raw = $(el).attr(attribute);
      if (raw === undefined) return null;
      if (attribute === "href" || attribute === "src") {
        try {
          return new URL(raw, baseUrl).href;
        } catch {
          return raw;
        }
      }
      return raw;
    };
    const matches = $(selector);
    if (all) {
      out[name] = matches
        .toArray()
        .map((el) => value(el))
        .filter((v): v is string => v !== null);
    } else {
      const first = matches.first();
      out[name] = first.length ? value(first.get(0) as Parameters<CheerioAPI>[0]) : null;
    }
  }
  return out;
}
