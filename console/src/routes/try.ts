// "Try a chat" (Agents page) and "try a scrape" (Scrapers page): one real call through the
// platform's own data plane, with the user's authority checked first. The console has no key of
// its own: a chat uses the key of an access channel the user picks (read from the channel's
// Secret with the user's token, as Add key does, so RBAC decides), sent to the gateway as any
// client would; a scrape goes to the Scraper the user may read, with its API key (when its auth
// is on) read from its Secret with the user's token. Both calls: a timeout, bounded retries with
// jitter, and the console's outbound metrics; a refusal comes back in the service's own words.
import type { OutboundMetrics } from "@capstan/shared";
import { ScraperClient, ScraperClientError } from "@capstan/shared/clients/scraper-client";
import { isStatus } from "@capstan/shared/kube";
import { OutboundPolicy } from "@capstan/shared/resilience";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { z } from "zod";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { ConsoleError, errors } from "../errors.ts";
import type { ConsoleApi, KubeObject } from "../user-api.ts";
import { chatAnswerSchema, chatBody, nsNameParams, scrapeAnswerSchema, scrapeBody } from "../wire.ts";

/** A refusal by the gateway (its OpenAI error object), kept for the user in its own words. */
class GatewayAnswer extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The value of a Secret's key, read with the user's token; undefined when absent. */
async function secretValue(api: ConsoleApi, ns: string, name: string, key: string): Promise<string | undefined> {
  try {
    const s = await api.getSecret(ns, name);
    const value = Buffer.from(s.data?.[key] ?? "", "base64")
      .toString("utf8")
      .trim();
    return value || undefined;
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

/** The key of a channel: its own Secret (`keySecretRef`) or the one the operator issued. */
export async function channelKey(api: ConsoleApi, ns: string, channel: KubeObject): Promise<string> {
  const ref = channel.spec?.keySecretRef as { name: string; key?: string } | undefined;
  const secret = ref?.name ?? (channel.status?.secretName as string | undefined) ?? `${channel.metadata.name}-chat-key`;
  const key = await secretValue(api, ns, secret, ref?.key ?? "key");
  if (!key) throw new ConsoleError(409, "NoKey", `channel ${channel.metadata.name} has no key yet (Secret ${secret})`);
  return key;
}

/** A "try" request and the path and body its route's schemas have validated. */
type Try<B extends z.ZodType> = [req: FastifyRequest, params: z.infer<typeof nsNameParams>, body: z.output<B>];

/** What the gateway answers to a chat completion, as far as "try a chat" reads it. */
type Completion = {
  error?: { message?: string };
  model?: string;
  choices?: { message?: { content?: string } }[];
  usage?: Record<string, number>;
};

/** The parts of a Scraper's spec that say where it listens and whether it wants a key. */
type ScraperSpec = {
  client?: { url?: string; timeoutSeconds?: number };
  auth?: { enabled?: boolean; apiKeySecretRef?: { name: string; key: string } };
};

export function tryRoutes(app: FastifyInstance, ctx: ConsoleContext, metrics: OutboundMetrics): void {
  const gatewayPolicy = new OutboundPolicy({
    target: "gateway",
    timeoutMs: 60_000,
    maxAttempts: 2,
    baseDelayMs: 300,
    metrics,
  });
  const api = app.withTypeProvider<ZodTypeProvider>();
  const chat = { params: nsNameParams, body: chatBody, response: { 200: chatAnswerSchema } };
  api.post("/api/namespaces/:ns/agents/:name/chat", { schema: chat }, (req) =>
    tryChat(ctx, gatewayPolicy, req, req.params, req.body),
  );
  const scrape = { params: nsNameParams, body: scrapeBody, response: { 200: scrapeAnswerSchema } };
  api.post("/api/namespaces/:ns/scrapers/:name/scrape", { schema: scrape }, (req) =>
    tryScrape(ctx, metrics, req, req.params, req.body),
  );
}

/** POST …/agents/:name/chat: one message to the agent through a channel that serves it. */
async function tryChat(ctx: ConsoleContext, policy: OutboundPolicy, ...[req, params, body]: Try<typeof chatBody>) {
  const { api } = await sessionOf(ctx, req);
  const ns = checkName("namespace", params.ns);
  if (!ctx.config.gatewayUrl) throw errors.notConfigured("the gateway's URL (CAPSTAN_GATEWAY_URL)");
  const channel = await api.get("accesschannels", ns, checkName("channel", body.channel));
  const agent = (channel.spec?.agentRef as { name?: string } | undefined)?.name;
  if (agent !== params.name) {
    throw errors.invalid(`channel ${body.channel} serves agent ${agent}, not ${params.name}`);
  }
  const key = await channelKey(api, ns, channel);
  const started = Date.now();
  try {
    const answer = await askGateway(policy, ctx.config.gatewayUrl, key, body.message);
    return {
      answer: answer.choices?.[0]?.message?.content ?? "",
      model: answer.model ?? null,
      usage: answer.usage ?? null,
      ms: Date.now() - started,
    };
  } catch (err) {
    if (err instanceof GatewayAnswer) throw errors.upstream(`the gateway answered ${err.status}`, err.message);
    throw errors.upstream("the gateway", (err as Error).message);
  }
}

/** Sends `message` to the gateway's chat completions as a client holding `key` would. */
async function askGateway(policy: OutboundPolicy, gatewayUrl: string, key: string, message: string) {
  return policy.execute(async ({ signal }) => {
    const res = await fetch(`${gatewayUrl}/api/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "console", messages: [{ role: "user", content: message }] }),
      signal,
    });
    const json = (await res.json().catch(() => ({}))) as Completion;
    if (!res.ok) throw new GatewayAnswer(res.status, json.error?.message ?? `HTTP ${res.status}`);
    return json;
  });
}

/** POST …/scrapers/:name/scrape: one page through the Scraper the user may read. */
async function tryScrape(
  ctx: ConsoleContext,
  metrics: OutboundMetrics,
  ...[req, params, body]: Try<typeof scrapeBody>
) {
  const { api } = await sessionOf(ctx, req);
  const ns = checkName("namespace", params.ns);
  const client = await scraperClient(ctx, api, ns, params.name, metrics);
  const started = Date.now();
  try {
    const page = await client.scrape(body.url, { pageOptions: { onlyMainContent: body.onlyMainContent } });
    return {
      markdown: page.markdown ?? "",
      title: page.metadata.title,
      statusCode: page.metadata.statusCode,
      ms: Date.now() - started,
    };
  } catch (err) {
    if (err instanceof ScraperClientError) throw errors.upstream("the scraper", err.message);
    throw err;
  } finally {
    await client.close();
  }
}

/**
 * A client for the Scraper `name`: its endpoint, and its API key when its auth is on. Reading the
 * Scraper with the user's token is the authority check: no `get`, no scrape.
 */
async function scraperClient(
  ctx: ConsoleContext,
  api: ConsoleApi,
  ns: string,
  name: string,
  metrics: OutboundMetrics,
): Promise<ScraperClient> {
  const scraper = await api.get("scrapers", ns, name);
  const spec = (scraper.spec ?? {}) as ScraperSpec;
  const url = ctx.config.scraperUrl ?? spec.client?.url ?? (scraper.status?.endpoint as string | undefined);
  if (!url) throw new ConsoleError(409, "NoEndpoint", `Scraper ${name} has no endpoint yet (not Ready?)`);
  let apiKey: string | undefined;
  if (spec.auth?.enabled) {
    // The operator's own default when auth is on without a reference (translate/scraper.ts).
    const ref = spec.auth.apiKeySecretRef ?? { name: `${name}-scraper-key`, key: "key" };
    apiKey = await secretValue(api, ns, ref.name, ref.key);
  }
  return new ScraperClient(
    { url, timeout: spec.client?.timeoutSeconds ?? 30, max_retries: 1, ...(apiKey ? { api_key: apiKey } : {}) },
    { metrics },
  );
}
