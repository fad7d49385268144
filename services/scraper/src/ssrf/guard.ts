// The scraper's SSRF guard: the platform's egress guard (@capstan/shared/egress: resolve, decide
// on the resolved addresses, connect to exactly the address checked, so DNS rebinding cannot
// redirect a connection) with the scraper's errors (BLOCKED_TARGET, UNREACHABLE), the target URL
// check, and the upstream proxy. Every outbound HTTP request of the rendering service goes
// through guard.dispatcher().
import { EgressGuard } from "@capstan/shared/egress";
import { type Dispatcher, ProxyAgent } from "undici";
import { ScraperError } from "../errors.ts";

export type { EgressGuardOptions as GuardOptions, Resolver } from "@capstan/shared/egress";

/** Parses a scrape target: http(s) only, with a host. Throws BAD_URL. */
export function parseTargetUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ScraperError("BAD_URL", [`'${raw.slice(0, 200)}' is not an absolute URL`]);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ScraperError("BAD_URL", [`scheme ${url.protocol} is not supported (http and https only)`]);
  }
  if (!url.hostname) throw new ScraperError("BAD_URL", ["missing host"]);
  return url;
}

export class SsrfGuard extends EgressGuard {
  // The scraper's callers are its operators' own components: the reason keeps the address.
  protected override refused(reason: string): ScraperError {
    return new ScraperError("BLOCKED_TARGET", [reason]);
  }

  protected override unresolved(detail: string): ScraperError {
    return new ScraperError("UNREACHABLE", [detail]);
  }

  /** Refuses a target for a reason of its own (a redirect to another scheme): counted and logged like the rest. */
  override refuse(stage: string, target: string, reason: string): ScraperError {
    return super.refuse(stage, target, reason) as ScraperError;
  }

  /**
   * The dispatcher for outbound requests. With an upstream proxy the proxy resolves names, so
   * the guard checks the target before the request (callers use check()) and the connection
   * goes to the operator-configured proxy.
   */
  dispatcher(proxy?: { server?: string | undefined; username?: string | undefined; password?: string | undefined }) {
    const common = { connections: 64, keepAliveTimeout: 4_000, headersTimeout: 30_000, bodyTimeout: 30_000 };
    if (proxy?.server) {
      const token =
        proxy.username !== undefined
          ? `Basic ${Buffer.from(`${proxy.username}:${proxy.password ?? ""}`).toString("base64")}`
          : undefined;
      return new ProxyAgent({ uri: proxy.server, ...(token ? { token } : {}), ...common }) as Dispatcher;
    }
    return this.agent(common);
  }
}
