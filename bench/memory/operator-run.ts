// The operator's part of the memory benchmark (idle-rss.ts): a private etcd + kube-apiserver
// (test/ground/kube.ts), the five CRDs, one Agent, then the operator's process on it with the
// NODE_OPTIONS its chart gives it (operator.nodeOptions in that tree's values.yaml). Its
// "requests" are AccessChannels: `count` are created (32 at a time) and each must be Ready with
// its key Secret on the API server, i.e. reconciled, before the process is left idle.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { startKube } from "../../test/ground/kube.ts";
import { freePort } from "../../test/ground/ports.ts";
import { type ManagedProcess, waitFor } from "../../test/ground/process.ts";
import { Driver, expectChannelsDone, installCrds, seedNamespace } from "../operator/driver.ts";

const ns = "bench";

/** The chart's NODE_OPTIONS for the operator in `root`'s values.yaml ("" when it has none). */
export function chartNodeOptions(root: string): string {
  const values = parse(readFileSync(join(root, "charts/capstan/values.yaml"), "utf8")) as {
    operator?: { nodeOptions?: string };
  };
  return values.operator?.nodeOptions ?? "";
}

export async function runOperator(
  start: (env: Record<string, string>, readyUrl: string) => Promise<ManagedProcess>,
  count: number,
): Promise<{ proc: ManagedProcess; metrics: string; stop: () => Promise<void> }> {
  const kube = await startKube();
  const client = new Driver(kube.server, kube.dir);
  const stop = async () => {
    await client.close();
    await kube.stop();
  };
  try {
    await installCrds(client);
    await seedNamespace(client, ns);
    const [metricsPort, healthPort] = [await freePort(), await freePort()];
    const proc = await start(
      {
        KUBECONFIG: kube.kubeconfig,
        CAPSTAN_NAMESPACE: ns,
        CAPSTAN_WATCH_NAMESPACE: ns,
        LEADER_ELECT: "false",
        METRICS_PORT: String(metricsPort),
        HEALTH_PORT: String(healthPort),
      },
      `http://127.0.0.1:${healthPort}/readyz`,
    );
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < count) {
          const name = `ch-${next++}`;
          await client.json(`/apis/capstan.dev/v1alpha1/namespaces/${ns}/accesschannels`, {
            method: "POST",
            body: {
              apiVersion: "capstan.dev/v1alpha1",
              kind: "AccessChannel",
              metadata: { name, namespace: ns },
              spec: { channelName: name, agentRef: { name: "agent" } },
            },
          });
        }
      }),
    );
    const ready = async () =>
      (
        await client.list<{ status?: { conditions?: { type: string; status: string }[] } }>(
          `/apis/capstan.dev/v1alpha1/namespaces/${ns}/accesschannels`,
        )
      ).filter((c) => c.status?.conditions?.some((k) => k.type === "Ready" && k.status === "True")).length;
    await waitFor(`${count} AccessChannels Ready`, async () => (await ready()) === count, {
      timeoutMs: 600_000,
      proc,
    });
    await expectChannelsDone(client, ns, "idle-rss", count, await ready());
    return { proc, metrics: `http://127.0.0.1:${metricsPort}/metrics`, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
