// One operator on the real test API server, watching a namespace of its own into which every
// object of examples/ is created: the setup shared by operator.test.ts (what the examples become)
// and operator-lifecycle.test.ts (conditions, rotation, deletion). Call it at the top of a test
// file: it registers the beforeAll/afterAll hooks; `client` is set once beforeAll has run.
import { afterAll, beforeAll, inject } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, rawExamples, type TestKube } from "../ground/kube-client.ts";
import { create, InMemorySearchDocuments, type Obj, startOperatorFor } from "./helpers.ts";

export interface OperatorFixture {
  /** The namespace the operator watches, unique to this test file's run. */
  ns: string;
  /** The search service's documents API as the operator calls it (in memory). */
  search: InMemorySearchDocuments;
  /** The harness's admin client; set in beforeAll. */
  client: TestKube;
}

export function operatorWithExamples(prefix: string): OperatorFixture {
  const fixture = {
    ns: `${prefix}-${process.pid}-${Date.now().toString(36)}`,
    search: new InMemorySearchDocuments(),
  } as OperatorFixture;
  // Endpoints the operator only writes into the data plane's config; nothing dials them here.
  const overrides = { redis: { url: "redis://redis.example:6379" }, qdrant: { url: "http://qdrant.example:6333" } };
  let operator: Operator | undefined;
  beforeAll(async () => {
    fixture.client = harnessKubeClient();
    await installCrds(fixture.client);
    await ensureNamespace(fixture.client, fixture.ns);
    operator = startOperatorFor(inject("kubeconfig"), fixture.ns, overrides, { search: fixture.search });
    await operator.start();
    for (const raw of rawExamples()) {
      if (raw.kind === "Namespace") continue;
      await create(fixture.client, { ...raw, metadata: { ...raw.metadata, namespace: fixture.ns } } as Obj);
    }
  });
  afterAll(async () => {
    await operator?.stop();
  });
  return fixture;
}

/** A Secret's base64 data value as text. */
export function decode(b64: string | undefined): string {
  return Buffer.from(b64 ?? "", "base64").toString("utf8");
}
