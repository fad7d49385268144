// The two tests every fuzz file runs against its service process: the published document is a
// valid OpenAPI 3.1 document, and schemathesis finds no failure in it (summary printed if it does).
import { describe, expect, it } from "vitest";
import type { ManagedProcess } from "../ground/process.ts";
import { type FuzzOptions, fuzz, validateDocument } from "./schemathesis.ts";

export interface FuzzTarget {
  origin: string;
  /** The real key every request carries (Authorization: Bearer). */
  key: string;
  proc: ManagedProcess;
  /** Extra environment of schemathesis (hooks). */
  env?: Record<string, string>;
}

/**
 * `target()` is read when the tests run (after the file's beforeAll started the service);
 * `reached()` asserts that the cases got past authentication and validation into the service's
 * real work, so a run refused at the door cannot pass.
 */
export function fuzzTests(
  service: string,
  target: () => FuzzTarget,
  limits: Pick<FuzzOptions, "maxExamples" | "hardTimeoutS" | "requestTimeoutS">,
  reached: () => Promise<void> | void,
): void {
  describe(`${service} under schemathesis`, () => {
    it("publishes a valid OpenAPI 3.1 document (openapi-spec-validator)", async () => {
      const result = await validateDocument(target().origin);
      expect(result.code, result.output).toBe(0);
    }, 90_000);

    it(
      "answers every generated request without a 5xx, a hang or a response the document does not declare",
      async () => {
        const { origin, key, proc, env } = target();
        const result = await fuzz({
          origin,
          headers: { authorization: `Bearer ${key}` },
          ...(env ? { env } : {}),
          ...limits,
        });
        if (result.code !== 0) console.error(result.output);
        expect(result.code, "schemathesis found failures (its report is printed above)").toBe(0);
        await reached();
        expect(proc.output()).not.toContain(key);
      },
      (limits.hardTimeoutS + 30) * 1000,
    );
  });
}
