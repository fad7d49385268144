import { describe, expect, it } from "vitest";
import { isRetryableNetworkCode, isRetryableProviderStatus, isRetryableStatus } from "./retryable.ts";

describe("what is worth another attempt", () => {
  it("retries 408, 429 and 5xx but 501 and 505 over HTTP; nothing else", () => {
    const retried = [200, 301, 400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 501, 502, 503, 504, 505, 529].filter(
      isRetryableStatus,
    );
    expect(retried).toEqual([408, 429, 500, 502, 503, 504, 529]);
  });

  it("adds 409 for LLM provider APIs, as their SDKs do", () => {
    expect([400, 409, 429, 501, 529].filter(isRetryableProviderStatus)).toEqual([409, 429, 529]);
  });

  it("retries connection failures a new connection may avoid, not others", () => {
    expect(
      ["ECONNREFUSED", "ECONNRESET", "UND_ERR_SOCKET", "ENOTFOUND", "CERT_HAS_EXPIRED", undefined].map(
        isRetryableNetworkCode,
      ),
    ).toEqual([true, true, true, false, false, false]);
  });
});
