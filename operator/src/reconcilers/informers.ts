// The operator's shared informers (its cache of the five kinds and the objects it owns), apart from
// the reconcilers' context so the fleet metrics can read them without importing that context.
import type { AccessChannel, Agent, KnowledgeBase, Scraper, SearchKey } from "@capstan/shared/api";
import type { KubeObject } from "@capstan/shared/kube";
import type { Informer } from "../kube/informer.ts";

export interface Informers {
  agents: Informer<Agent & KubeObject>;
  channels: Informer<AccessChannel & KubeObject>;
  searchKeys: Informer<SearchKey & KubeObject>;
  knowledgeBases: Informer<KnowledgeBase & KubeObject>;
  scrapers: Informer<Scraper & KubeObject>;
  secrets: Informer<KubeObject>;
  deployments: Informer<KubeObject>;
  services: Informer<KubeObject>;
}
