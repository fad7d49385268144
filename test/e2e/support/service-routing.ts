// What a ClusterIP really routes to on the e2e node. kube-proxy (iptables mode) turns each
// Service's ready endpoints into DNAT rules some time after the EndpointSlice changes; on this
// two-core machine under a full test load that lag was seen to last long enough for a
// connection to the Service to time out after a rollout (the rules still named the replaced
// pods). A test that calls a Service right after its pods were replaced first waits for the
// node's rules to name exactly the ready endpoints, as a client of a real cluster would retry.
import { execFileSync } from "node:child_process";
import type { TestKube } from "../../ground/kube-client.ts";
import { eventually, list } from "./kube.ts";

interface Slice {
  endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[];
}

/** The ready endpoint addresses of a Service, from its EndpointSlices. */
export async function readyEndpoints(kube: TestKube, namespace: string, service: string): Promise<string[]> {
  const slices = (await list(
    kube,
    "EndpointSlice",
    "discovery.k8s.io/v1",
    namespace,
    `kubernetes.io/service-name=${service}`,
  )) as unknown as Slice[];
  return slices
    .flatMap((s) => s.endpoints ?? [])
    .filter((e) => e.conditions?.ready !== false)
    .flatMap((e) => e.addresses)
    .sort();
}

/**
 * The pod addresses the node's kube-proxy rules send the Service's traffic to: the endpoints its
 * KUBE-SVC chain jumps to (kube-proxy comments each jump "<ns>/<svc>:<port> -> <ip>:<port>"), so an
 * endpoint chain left over from before the rollout but no longer used does not count.
 */
export function programmedEndpoints(namespace: string, service: string): string[] {
  const rules = execFileSync("iptables-save", ["-t", "nat"], { encoding: "utf8" });
  const out = new Set<string>();
  for (const line of rules.split("\n")) {
    if (!line.startsWith("-A KUBE-SVC-")) continue;
    const m = /--comment "([^"/]+)\/([^":]+):[^" ]* -> ([\d.]+):\d+"/.exec(line);
    if (m && m[1] === namespace && m[2] === service && m[3]) out.add(m[3]);
  }
  return [...out].sort();
}

/**
 * Waits until the node routes the Service to exactly its ready endpoints (at least one), and
 * returns them. The error names both sides when it does not converge.
 */
export async function serviceRouted(kube: TestKube, namespace: string, service: string, timeoutMs = 120_000) {
  let seen = "";
  const started = Date.now();
  try {
    const ready = await eventually(
      `Service ${namespace}/${service} routed to its ready endpoints`,
      async () => {
        const [ready, programmed] = [
          await readyEndpoints(kube, namespace, service),
          programmedEndpoints(namespace, service),
        ];
        seen = `ready ${ready.join(",") || "none"}, kube-proxy rules ${programmed.join(",") || "none"}`;
        return ready.length > 0 && ready.join() === programmed.join() ? ready : undefined;
      },
      timeoutMs,
      250,
    );
    console.log(
      `[e2e] Service ${namespace}/${service}: kube-proxy routes to its ${ready.length} ready endpoint(s) after ${Date.now() - started} ms`,
    );
    return ready;
  } catch (err) {
    throw new Error(`${(err as Error).message}: ${seen}`);
  }
}
