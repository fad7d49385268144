// The scraper's API key check, shared by the API and the rendering service (which accepts only
// the API's calls): a constant-time comparison of digests, so neither length nor content leaks.
import { createHash, timingSafeEqual } from "node:crypto";
import { bearerToken } from "@capstan/shared";

const digest = (v: string) => createHash("sha256").update(v).digest();

/** A check of an Authorization header against the key; undefined when no key is configured. */
export function apiKeyCheck(apiKey: string | undefined): ((authorization: string | undefined) => boolean) | undefined {
  if (!apiKey) return undefined;
  const expected = digest(apiKey);
  return (authorization) => {
    const token = bearerToken(authorization);
    return token !== undefined && timingSafeEqual(digest(token), expected);
  };
}
