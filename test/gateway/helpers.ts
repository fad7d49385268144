// Test helpers: resources in a ResourceView (as FileSource/KubeSource would feed it), a gateway
// listening on a free loopback port, and an OpenAI SDK client pointed at it.

import type { AddressInfo } from "node:net";
import { buildApp, type GatewayConfigInput, type GatewayDeps } from "@capstan/gateway";
import { createLogger, createRegistry, generateKey, hashKey, listenInternal } from "@capstan/shared";
import { parseResource } from "@capstan/shared/api";
import { ResourceView } from "@capstan/shared/resource-view";
import type { FastifyInstance } from "fastify";
import OpenAI from "openai";

export interface ChannelFixture {
  name: string;
  agent: string;
  qpm?: number;
  expiresAt?: string;
  keepHistory?: boolean;
}

export interface AgentFixture {
  name: string;
  spec: Record<string, unknown>;
}

/** A fresh namespace name so limiter and history keys never collide between tests or runs. */
export function uniqueNamespace(prefix = "gw"): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
}

/** Puts channels (each with a new key) and agents in the view; returns the keys by channel name. */
export function addResources(
  view: ResourceView,
  namespace: string,
  channels: ChannelFixture[],
  agents: AgentFixture[],
): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const a of agents) {
    view.upsert(
      parseResource({
        apiVersion: "capstan.dev/v1alpha1",
        kind: "Agent",
        metadata: { name: a.name, namespace, creationTimestamp: "2026-01-01T00:00:00Z" },
        spec: a.spec,
      }),
    );
  }
  for (const c of channels) {
    const key = generateKey("chat");
    keys[c.name] = key;
    view.upsert(
      parseResource({
        apiVersion: "capstan.dev/v1alpha1",
        kind: "AccessChannel",
        metadata: { name: c.name, namespace },
        spec: {
          channelName: `channel ${c.name}`,
          agentRef: { name: c.agent },
          ...(c.qpm !== undefined ? { qpm: c.qpm } : {}),
          ...(c.expiresAt ? { expiresAt: c.expiresAt } : {}),
          ...(c.keepHistory !== undefined ? { keepHistory: c.keepHistory } : {}),
        },
        status: { keyHash: hashKey(key), keyPrefix: key.slice(0, 13) },
      }),
    );
  }
  return keys;
}

export function emptyView(): ResourceView {
  const view = new ResourceView();
  view.replace("AccessChannel", []);
  view.replace("Agent", []);
  return view;
}

export interface RunningGateway {
  url: string;
  /** The internal port: /metrics, /healthz, /readyz (404 on `url`). */
  internalUrl: string;
  app: FastifyInstance;
  logs: string[];
  close(): Promise<void>;
}

/** The internal URL of each gateway started here, by its public URL (metricValue reads it). */
const internalUrls = new Map<string, string>();

/** The gateway's internal URL (metrics, health) for its public URL; a URL not started here as is. */
export function internalUrlOf(gatewayUrl: string): string {
  return internalUrls.get(gatewayUrl) ?? gatewayUrl;
}

/** Where the tests' fake providers listen: allowed explicitly (CAPSTAN_EGRESS_ALLOWED_HOSTS). */
export const TEST_PROVIDER_HOSTS = ["127.0.0.1"] as const;

/** buildApp + listen on 127.0.0.1:0 (and the internal port on another), logs kept in memory. */
export async function startGateway(config: GatewayConfigInput, deps: GatewayDeps): Promise<RunningGateway> {
  const logs: string[] = [];
  const logger = createLogger({
    name: "gateway",
    level: "info",
    destination: { write: (line: string) => logs.push(line) },
  });
  const app = buildApp(
    // The fake providers listen on loopback, which the egress policy refuses unless listed.
    { logLevel: "info", ...config, upstream: { allowedHosts: [...TEST_PROVIDER_HOSTS], ...config.upstream } },
    { logger, registry: createRegistry({ defaultMetrics: false }), ...deps },
  );
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const internal = (await listenInternal(app, { port: 0, host: "127.0.0.1" })).address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const internalUrl = `http://127.0.0.1:${internal.port}`;
  internalUrls.set(url, internalUrl);
  return {
    url,
    internalUrl,
    app,
    logs,
    close: () => {
      internalUrls.delete(url);
      return app.close();
    },
  };
}

export function client(gatewayUrl: string, key: string, opts: { maxRetries?: number; timeout?: number } = {}): OpenAI {
  return new OpenAI({
    baseURL: `${gatewayUrl}/api/v1`,
    apiKey: key,
    maxRetries: opts.maxRetries ?? 0,
    timeout: opts.timeout ?? 60_000,
  });
}

/** The value of one sample of a metric in Prometheus text (from the internal port), or 0. */
export async function metricValue(
  gatewayUrl: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`${internalUrlOf(gatewayUrl)}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.split(" ").at(-1));
  }
  return total;
}
