// Every gateway replica, for the usage page when no Prometheus is configured: the endpoints of
// the gateway Service's EndpointSlices (label kubernetes.io/service-name), each read on the port
// the Service names "internal" (its /metrics). A Service's one address would reach one replica at
// random per read, and the page would draw that replica's counters as the platform's.
//
// Whose rights: the console's own ServiceAccount lists the EndpointSlices, with a Role the chart
// binds in the release namespace that allows `list` on `endpointslices` and nothing else; the
// signed-in user's token is not used here, since tenants hold no rights in the platform's
// namespace. What the page shows stays the user's: only the channels their token may list
// (docs/console.md, "Usage").
import type { Registry } from "@capstan/shared";
import { conciseError, type KubeConfig, KubeHttp } from "@capstan/shared/kube";
import { DiscoveryV1Api } from "@kubernetes/client-node";

/** The fields of an EndpointSlice read here (client-node's V1EndpointSlice has them). */
export interface SliceLike {
  addressType: string;
  endpoints?: { addresses: string[]; targetRef?: { uid?: string; name?: string } }[];
  ports?: { name?: string; port?: number }[];
}

/**
 * Pure: the /metrics URL of every endpoint of the slices on the port named `portName`, one per
 * pod (a dual-stack Service lists each pod in an IPv4 and an IPv6 slice: the first one wins). Every
 * endpoint counts, ready or not: a replica that is not ready still holds counts it has made.
 */
export function metricsUrlsOf(slices: SliceLike[], portName: string): string[] {
  const byPod = new Map<string, string>();
  const ordered = [...slices].sort((a, b) => a.addressType.localeCompare(b.addressType));
  for (const s of ordered) {
    const port = s.ports?.find((p) => p.name === portName)?.port;
    if (!port) continue;
    for (const e of s.endpoints ?? []) {
      // An endpoint's addresses are one pod's and fungible: the first serves.
      const address = e.addresses[0];
      if (!address) continue;
      const host = s.addressType === "IPv6" ? `[${address}]` : address;
      const pod = e.targetRef?.uid ?? e.targetRef?.name ?? `${host}:${port}`;
      if (!byPod.has(pod)) byPod.set(pod, `http://${host}:${port}/metrics`);
    }
  }
  return [...byPod.values()].sort();
}

/** `<namespace>/<service>`, as CAPSTAN_GATEWAY_METRICS_SERVICE names the gateway Service. */
export function parseServiceRef(ref: string): { namespace: string; name: string } {
  const [namespace, name, ...rest] = ref.split("/");
  if (!namespace || !name || rest.length) throw new Error(`expected <namespace>/<service>, got "${ref}"`);
  return { namespace, name };
}

export class GatewayReplicas {
  private readonly discovery: DiscoveryV1Api;
  private readonly service: { namespace: string; name: string };
  private readonly portName: string;

  constructor(cluster: KubeConfig, serviceRef: string, registry: Registry, portName = "internal") {
    // The console's own identity (its ServiceAccount in a pod), with the rest_client_* metrics.
    this.discovery = new KubeHttp(cluster, registry, { timeoutMs: 10_000 }).api(DiscoveryV1Api);
    this.service = parseServiceRef(serviceRef);
    this.portName = portName;
  }

  /** The metrics URLs of the replicas there are now; a refusal comes back as the API server's error. */
  async metricsUrls(): Promise<string[]> {
    try {
      const list = await this.discovery.listNamespacedEndpointSlice({
        namespace: this.service.namespace,
        labelSelector: `kubernetes.io/service-name=${this.service.name}`,
      });
      return metricsUrlsOf(list.items as SliceLike[], this.portName);
    } catch (err) {
      throw conciseError(err);
    }
  }

  describe(): string {
    return `the EndpointSlices of Service ${this.service.namespace}/${this.service.name}`;
  }
}
