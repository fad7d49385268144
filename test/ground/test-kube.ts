// A client for tests and benchmark drivers (no vitest import: global setups use it too).
import { KubeApiError, KubeHttp } from "@capstan/shared/kube";
import { type HttpMethod, RequestContext } from "@kubernetes/client-node";

export interface JsonRequest {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  timeoutMs?: number;
}

/**
 * The product's KubeHttp (client-node's authentication, the pooled transport, its metrics) with
 * one more call for tests and their drivers: any request by path, JSON in and out, so a test can
 * set up RBAC, tokens, CRDs and objects in a line. The product itself talks through client-node's
 * APIs; this is not part of it.
 */
export class TestKube extends KubeHttp {
  async json<T = unknown>(path: string, req: JsonRequest = {}): Promise<T> {
    const ctx = new RequestContext(this.server + path, (req.method ?? "GET") as HttpMethod);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) ctx.setQueryParam(k, String(v));
    ctx.setHeaderParam("Accept", "application/json");
    if (req.body !== undefined) {
      ctx.setHeaderParam("Content-Type", req.contentType ?? "application/json");
      ctx.setBody(JSON.stringify(req.body));
    }
    await this.authenticate(ctx);
    const res = await this.send(ctx, req.timeoutMs);
    const text = await res.body.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      json = { message: text.slice(0, 200) };
    }
    if (res.httpStatusCode >= 400) {
      const reason = String(json.reason ?? `HTTP ${res.httpStatusCode}`);
      throw new KubeApiError(res.httpStatusCode, reason, String(json.message ?? reason), json);
    }
    return json as T;
  }
}
