// The RBAC rules of the operator and of the read-only data plane, in one place: the chart's
// ClusterRoles and Roles are generated from here (charts/capstan/files/rbac/*.yaml, kept in step
// by a drift test) and docs/operator.md explains each rule. OPERATOR_RULES are granted by a
// ClusterRole when the operator watches every namespace, and by a Role in each watched namespace
// when it watches named ones (operator.watchNamespaces); RELEASE_NAMESPACE_RULES always by a Role
// in its own namespace. Nothing cluster-scoped is needed in namespaced mode.

import { GROUP, KIND_NAMES, KINDS as KIND_REGISTRY } from "@capstan/shared/api";

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const KINDS = KIND_NAMES.map((k) => KIND_REGISTRY[k].plural);

/** The operator's rules where it watches the five kinds: cluster-wide, or each watched namespace. */
export const OPERATOR_RULES: PolicyRule[] = [
  // Watch the five kinds; patch only to add/remove the KnowledgeBase finalizer and its document list.
  { apiGroups: [GROUP], resources: KINDS, verbs: ["get", "list", "watch", "patch"] },
  // Status through the status subresource (server-side apply).
  { apiGroups: [GROUP], resources: KINDS.map((k) => `${k}/status`), verbs: ["get", "patch"] },
  // Owner references with blockOwnerDeletion need update on the owner's finalizers.
  {
    apiGroups: [GROUP],
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
 * Rules of the operator in its own (the release) namespace, whatever it watches: the cache of the
 * Secrets it owns there (internal token, provider-key mirror; label-selected list and watch) and
 * their writes, the chart's ConfigMap that owns the shared data plane, the gateway and search
 * Deployments and Services, the leader-election Lease and Events.
 */
export const RELEASE_NAMESPACE_RULES: PolicyRule[] = [
  { apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"] },
  { apiGroups: [""], resources: ["configmaps"], verbs: ["get"] },
  { apiGroups: [""], resources: ["services"], verbs: ["get", "list", "watch", "create", "patch"] },
  { apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "list", "watch", "create", "patch"] },
  {
    apiGroups: ["coordination.k8s.io"],
    resources: ["leases"],
    verbs: ["get", "list", "watch", "create", "update", "patch"],
  },
  { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
];

/** The gateway and search pods: read-only on the five kinds, nothing else (never Secrets). */
export const DATA_PLANE_RULES: PolicyRule[] = [
  { apiGroups: [GROUP], resources: KINDS, verbs: ["get", "list", "watch"] },
];
