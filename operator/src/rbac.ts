// The RBAC rules of the operator and of the read-only data plane, in one place: the chart's
// ClusterRoles and Role are generated from here (charts/capstan/files/rbac/*.yaml, kept in step
// by a drift test) and docs/operator.md explains each rule.

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const KINDS = ["agents", "accesschannels", "searchkeys", "knowledgebases", "scrapers"];

/** Cluster-wide (or, in single-namespace mode, namespaced) rules of the operator. */
export const OPERATOR_RULES: PolicyRule[] = [
  // Watch the five kinds; patch only to add/remove the KnowledgeBase finalizer and its document list.
  { apiGroups: ["capstan.dev"], resources: KINDS, verbs: ["get", "list", "watch", "patch"] },
  // Status through the status subresource (server-side apply).
  { apiGroups: ["capstan.dev"], resources: KINDS.map((k) => `${k}/status`), verbs: ["get", "patch"] },
  // Owner references with blockOwnerDeletion need update on the owner's finalizers.
  {
    apiGroups: ["capstan.dev"],
    resources: [
      "accesschannels/finalizers",
      "searchkeys/finalizers",
      "scrapers/finalizers",
      "knowledgebases/finalizers",
    ],
    verbs: ["update"],
  },
  // Key Secrets (created, rotated, replaced when left over from a deleted owner) and the Secrets a
  // resource names (user-supplied keys, provider keys, Scraper keys), each read by name. No list and
  // no watch: the operator cannot enumerate other teams' Secrets (RBAC cannot scope get by label,
  // see docs/security.md).
  { apiGroups: [""], resources: ["secrets"], verbs: ["get", "create", "update", "delete"] },
  // KnowledgeBase ConfigMap sources.
  { apiGroups: [""], resources: ["configmaps"], verbs: ["get"] },
  // Data-plane and Scraper workloads (server-side apply).
  { apiGroups: [""], resources: ["services"], verbs: ["get", "list", "watch", "create", "patch"] },
  { apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "list", "watch", "create", "patch"] },
  // Events for notable transitions.
  { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
];

/**
 * Namespaced rules of the operator in its own namespace: the leader-election Lease, and the cache
 * of the Secrets it owns there (internal token, provider-key mirror; label-selected watch).
 */
export const LEADER_ELECTION_RULES: PolicyRule[] = [
  { apiGroups: [""], resources: ["secrets"], verbs: ["list", "watch", "patch"] },
  {
    apiGroups: ["coordination.k8s.io"],
    resources: ["leases"],
    verbs: ["get", "list", "watch", "create", "update", "patch"],
  },
  { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
];

/** The gateway and search pods: read-only on the five kinds, nothing else (never Secrets). */
export const DATA_PLANE_RULES: PolicyRule[] = [
  { apiGroups: ["capstan.dev"], resources: KINDS, verbs: ["get", "list", "watch"] },
];
