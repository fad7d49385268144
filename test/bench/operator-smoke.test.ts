// The operator's benchmarks in their smoke mode (bench/work.ts): the bench on its own etcd and
// kube-apiserver with 3 channels at once and 6 in all, the A/B of the Kubernetes layers (both
// arms, the same tiny sizes) and the module-graph measurement (one process each). Each checks its
// own work (channels Ready with their key Secrets on the API server, the resync reconciling every
// channel, each arm on its own layer, each process loading what it measures); only that is asserted.
import { describe, expect, it } from "vitest";
import { smoke } from "./run-bench.ts";

describe("operator benchmarks (smoke)", () => {
  it("bench.ts readies every channel with its key Secret and resyncs every one", async () => {
    const out = await smoke("bench/operator/bench.ts", [], { timeoutMs: 120_000 });
    expect(out).toMatch(/work checked: 6 AccessChannels Ready with their key Secrets on the API server \(3 at once\)/);
    expect(out).toMatch(/RESULT .*"complete":true/);
  });

  it("ab.sh runs both arms, each on the layer it is named after", async () => {
    const out = await smoke("bench/operator/ab.sh", [], { timeoutMs: 180_000 });
    expect(out).toContain("work checked: 2 complete runs (1 per arm)");
    expect(out).toMatch(/^\| hand-written \| true \|/m);
    expect(out).toMatch(/^\| client-node \| true \|/m);
  });

  it("module-graph.sh measures undici, client-node and the bundle, each loaded", async () => {
    const out = await smoke("bench/operator/module-graph.sh", [], { timeoutMs: 60_000 });
    expect(out).toContain("work checked: 3 processes (1 each of undici, client-node, bundle)");
  });
});
