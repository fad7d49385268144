// The operator process minus listen(): shared informers (the cache) for the five kinds and the
// Secrets, Deployments and Services it owns, one controller per kind plus the data-plane
// controller, wired with For/Owns/Watches event sources, and leader election deciding which
// instance runs the controllers. Caches run on every instance so a standby takes over warm.
import { createLogger, createRegistry, type Logger, outboundMetrics, type Registry } from "@capstan/shared";
import { agentUpstreams, knowledgeIdOf } from "@capstan/shared/api";
import type { KubeConfig } from "@capstan/shared/kube";
import { DEPLOYMENT, KubeHttp, type KubeObject, SECRET, SERVICE } from "@capstan/shared/kube";
import type { OperatorConfig } from "./config.ts";
import { gatewayInternalUrl, SEARCH_NAME, searchInternalUrl, watchedNamespaces } from "./config.ts";
import { Controller, type Reconcile } from "./controller/controller.ts";
import { controllerMetrics } from "./controller/metrics.ts";
import { operatorMetrics } from "./fleet-metrics.ts";
import { type GatewayUsage, HttpGatewayUsage } from "./ingest/gateway-usage.ts";
import { RefreshJobs } from "./ingest/refresh-jobs.ts";
import { ClientScrape, type Scrape } from "./ingest/scrape.ts";
import { type SearchDocuments, TokenSearchDocuments } from "./ingest/search-documents.ts";
import { ObjectClient } from "./kube/client.ts";
import { EventRecorder } from "./kube/events.ts";
import { Informer, stripManagedFields } from "./kube/informer.ts";
import { LeaderElector } from "./leader/lease.ts";
import { accessChannelReconciler } from "./reconcilers/access-channel.ts";
import { agentReconciler } from "./reconcilers/agent.ts";
import {
  ACCESS_CHANNEL,
  AGENT,
  type Informers,
  KNOWLEDGE_BASE,
  type OperatorContext,
  SCRAPER,
  SEARCH_KEY,
} from "./reconcilers/context.ts";
import { knowledgeBaseReconciler } from "./reconcilers/knowledge-base.ts";
import { SearchWakeups } from "./reconcilers/knowledge-base-refill.ts";
import { PLATFORM_KEY, platformReconciler } from "./reconcilers/platform.ts";
import { scraperReconciler, scraperSecretRefs } from "./reconcilers/scraper.ts";
import { KB_BY_ID, kbIndexKey, searchKeyReconciler } from "./reconcilers/search-key.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "./translate/common.ts";
import { INTERNAL_TOKEN_KEY } from "./translate/workloads.ts";
import { queueMetrics } from "./workqueue/queue.ts";

export interface OperatorDeps {
  /** Where and as whom to reach the API server (client-node's KubeConfig). */
  kubeConfig: KubeConfig;
  registry?: Registry;
  logger?: Logger;
  search?: SearchDocuments;
  scrape?: Scrape;
  gatewayUsage?: GatewayUsage;
  now?: () => Date;
  /** Called when leadership is lost (the process should exit so it restarts clean). */
  onLostLeadership?: () => void;
}

/** Secrets the operator does not manage are cached without their values (key names kept). */
function secretTransform(obj: KubeObject & { data?: Record<string, string> }): KubeObject {
  stripManagedFields(obj);
  if (obj.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY && obj.data) {
    obj.data = Object.fromEntries(Object.keys(obj.data).map((k) => [k, ""]));
  }
  delete (obj as { stringData?: unknown }).stringData;
  return obj;
}

/** The caches: the five kinds in the watched namespaces, and the Secrets, Deployments and Services it owns. */
function createInformers(http: KubeHttp, config: OperatorConfig, logger: Logger): Informers {
  const watched = watchedNamespaces(config);
  const base = { namespaces: watched, resyncMs: config.resyncSeconds * 1000, logger };
  // The Deployments and Services it owns: in the watched namespaces (Scrapers) and its own
  // (the shared gateway and search), so namespaced RBAC suffices.
  const managed = {
    ...base,
    namespaces: watched && [...watched, config.namespace],
    labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
  };
  return {
    agents: new Informer(http, AGENT, base),
    channels: new Informer(http, ACCESS_CHANNEL, base),
    searchKeys: new Informer(http, SEARCH_KEY, base),
    knowledgeBases: new Informer(http, KNOWLEDGE_BASE, base),
    scrapers: new Informer(http, SCRAPER, base),
    // Only the Secrets it owns, in its own namespace (internal token, provider-key mirror): the
    // operator never lists or watches other Secrets; it gets the ones a resource names.
    secrets: new Informer(http, SECRET, {
      ...managed,
      namespaces: [config.namespace],
      resyncMs: 0,
      transform: secretTransform,
    }),
    deployments: new Informer(http, DEPLOYMENT, { ...managed, resyncMs: 0 }),
    services: new Informer(http, SERVICE, { ...managed, resyncMs: 0 }),
  } as Informers;
}

/** Search's documents API, called with the internal token read from its Secret in the cache at each call. */
function searchDocuments(
  config: OperatorConfig,
  secrets: Informers["secrets"],
  outbound: ReturnType<typeof outboundMetrics>,
): SearchDocuments {
  return new TokenSearchDocuments({
    baseURL: searchInternalUrl(config),
    metrics: outbound,
    token: () => {
      const s = secrets.get(config.namespace, config.internalTokenSecret) as
        | { data?: Record<string, string> }
        | undefined;
      const b64 = s?.data?.[INTERNAL_TOKEN_KEY];
      return b64 ? Buffer.from(b64, "base64").toString("utf8") : undefined;
    },
  });
}

const nsName = (ns: string | undefined, name: string) => `${ns ?? ""}/${name}`;

export class Operator {
  readonly config: OperatorConfig;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly http: KubeHttp;
  readonly client: ObjectClient;
  readonly informers: Informers;
  readonly controllers: Record<string, Controller>;
  readonly context: OperatorContext;
  private readonly elector: LeaderElector | undefined;
  private leading = false;
  private started = false;
  private stopping = false;

  constructor(config: OperatorConfig, deps: OperatorDeps) {
    this.config = config;
    this.registry = deps.registry ?? createRegistry();
    this.logger = deps.logger ?? createLogger({ name: "capstan-operator", level: config.logLevel });
    this.http = new KubeHttp(deps.kubeConfig, this.registry, { timeoutMs: config.apiTimeoutSeconds * 1000 });
    this.client = new ObjectClient(this.http);
    this.informers = createInformers(this.http, config, this.logger);
    this.addIndexes();
    this.context = this.createContext(deps);
    this.controllers = this.createControllers();
    this.wire();
    this.elector = config.leaderElection.enabled ? this.createElector(deps) : undefined;
  }

  /** What every reconciler works with: the caches, the clients of search, the scrapers and the gateway, metrics. */
  private createContext(deps: OperatorDeps): OperatorContext {
    const { config } = this;
    const outbound = outboundMetrics(this.registry, "capstan_operator");
    const search = deps.search ?? searchDocuments(config, this.informers.secrets, outbound);
    return {
      config,
      client: this.client,
      informers: this.informers,
      events: new EventRecorder(this.client, {
        controller: "capstan.dev/operator",
        instance: config.instanceId,
        logger: this.logger,
      }),
      logger: this.logger,
      now: deps.now ?? (() => new Date()),
      search,
      scrape: deps.scrape ?? new ClientScrape(outbound),
      gatewayUsage: deps.gatewayUsage ?? new HttpGatewayUsage(() => gatewayInternalUrl(config), outbound),
      metrics: operatorMetrics(this.registry, this.informers, deps.now),
      // A refresh that ends enqueues its KnowledgeBase: the next reconcile writes its status.
      refreshes: new RefreshJobs((key) => this.controllers.knowledgeBase?.enqueue(key)),
    };
  }

  /** One controller per kind, and the data-plane controller (the shared gateway and search). */
  private createControllers(): Record<string, Controller> {
    const { config } = this;
    const metrics = { controller: controllerMetrics(this.registry), queue: queueMetrics(this.registry) };
    const make = (kind: string, reconcile: Reconcile, workers = config.maxConcurrentReconciles) =>
      new Controller({
        name: kind.toLowerCase(),
        kind,
        reconcile,
        maxConcurrentReconciles: workers,
        metrics,
        logger: this.logger,
      });
    return {
      accessChannel: make("AccessChannel", accessChannelReconciler(this.context)),
      searchKey: make("SearchKey", searchKeyReconciler(this.context)),
      agent: make("Agent", agentReconciler(this.context)),
      scraper: make("Scraper", scraperReconciler(this.context)),
      knowledgeBase: make("KnowledgeBase", knowledgeBaseReconciler(this.context), config.knowledgeBaseConcurrency),
      platform: new Controller({
        name: "dataplane",
        reconcile: platformReconciler(this.context),
        maxConcurrentReconciles: 1,
        metrics,
        logger: this.logger,
      }),
    };
  }

  /** The Lease campaign: the controllers run while this instance leads. */
  private createElector(deps: OperatorDeps): LeaderElector {
    const { config } = this;
    const le = config.leaderElection;
    return new LeaderElector({
      client: this.client,
      namespace: le.namespace ?? config.namespace,
      name: le.leaseName,
      identity: config.instanceId,
      leaseDurationMs: le.leaseDurationSeconds * 1000,
      renewDeadlineMs: le.renewDeadlineSeconds * 1000,
      retryPeriodMs: le.retryPeriodSeconds * 1000,
      logger: this.logger,
      registry: this.registry,
      onStartedLeading: () => this.startControllers(),
      onStoppedLeading: () => {
        void this.stopControllers();
        if (!this.stopping) deps.onLostLeadership?.();
      },
    });
  }

  private addIndexes(): void {
    const i = this.informers;
    i.channels.addIndex("agent", (o) => [nsName(o.metadata.namespace, o.spec.agentRef.name)]);
    i.channels.addIndex("secret", (o) =>
      o.spec.keySecretRef ? [nsName(o.metadata.namespace, o.spec.keySecretRef.name)] : [],
    );
    i.searchKeys.addIndex("kb", (o) => o.spec.knowledgeIds.map((id) => kbIndexKey(o.metadata.namespace, id)));
    i.searchKeys.addIndex("secret", (o) =>
      o.spec.keySecretRef ? [nsName(o.metadata.namespace, o.spec.keySecretRef.name)] : [],
    );
    i.agents.addIndex("kb", (o) =>
      (o.spec.knowledge?.knowledgeIds ?? []).map((id) => kbIndexKey(o.metadata.namespace, id)),
    );
    i.agents.addIndex("secret", (o) =>
      agentUpstreams(o.spec).flatMap((u) =>
        u.apiKeySecretRef ? [nsName(o.metadata.namespace, u.apiKeySecretRef.name)] : [],
      ),
    );
    i.knowledgeBases.addIndex(KB_BY_ID, (o) => [kbIndexKey(o.metadata.namespace, knowledgeIdOf(o))]);
    i.scrapers.addIndex("secret", (o) => scraperSecretRefs(o).map((r) => nsName(o.metadata.namespace, r.name)));
  }

  private wire(): void {
    const i = this.informers;
    const c = this.controllers as Record<string, Controller>;
    const keys = (objs: KubeObject[]) => objs.map((o) => nsName(o.metadata.namespace, o.metadata.name));
    const secretKey = (o: KubeObject) => nsName(o.metadata.namespace, o.metadata.name);

    const ac = c.accessChannel as Controller;
    ac.watchFor(i.channels);
    ac.watchOwned(i.secrets, "AccessChannel");
    ac.watchMapped(i.agents, (a) => keys(i.channels.byIndex("agent", secretKey(a))));
    ac.watchMapped(i.secrets, (s) => keys(i.channels.byIndex("secret", secretKey(s))));
    // The key-verifier Secret appearing (first start): the user-supplied keys get their verifier.
    const isVerifier = (s: KubeObject) =>
      s.metadata.namespace === this.config.namespace && s.metadata.name === this.config.keyVerifierSecret;
    ac.watchMapped(i.secrets, (s) => (isVerifier(s) ? keys(i.channels.list().filter((o) => o.spec.keySecretRef)) : []));

    const sk = c.searchKey as Controller;
    sk.watchFor(i.searchKeys);
    sk.watchOwned(i.secrets, "SearchKey");
    const kbKey = (kb: KubeObject & { spec: { knowledgeId?: string } }) =>
      kbIndexKey(kb.metadata.namespace, knowledgeIdOf(kb));
    sk.watchMapped(i.knowledgeBases, (kb) => keys(i.searchKeys.byIndex("kb", kbKey(kb))));
    sk.watchMapped(i.secrets, (s) => keys(i.searchKeys.byIndex("secret", secretKey(s))));
    sk.watchMapped(i.secrets, (s) =>
      isVerifier(s) ? keys(i.searchKeys.list().filter((o) => o.spec.keySecretRef)) : [],
    );

    const ag = c.agent as Controller;
    ag.watchFor(i.agents);
    ag.watchMapped(i.knowledgeBases, (kb) => keys(i.agents.byIndex("kb", kbKey(kb))));
    ag.watchMapped(i.secrets, (s) => keys(i.agents.byIndex("secret", secretKey(s))));

    const sc = c.scraper as Controller;
    sc.watchFor(i.scrapers);
    sc.watchOwned(i.deployments, "Scraper");
    sc.watchOwned(i.services, "Scraper");
    sc.watchOwned(i.secrets, "Scraper");
    sc.watchMapped(i.secrets, (s) => keys(i.scrapers.byIndex("secret", secretKey(s))));

    const kbc = c.knowledgeBase as Controller;
    kbc.watchFor(i.knowledgeBases);
    // A KnowledgeBase claiming a duplicated id is reconciled again when its siblings change (the
    // owner deleted: the next oldest takes the id over).
    kbc.watchMapped(i.knowledgeBases, (kb) => keys(i.knowledgeBases.byIndex(KB_BY_ID, kbKey(kb))));
    // Search ready (its first start, a restart, a new store): KnowledgeBases at once (SearchWakeups).
    const wakeups = new SearchWakeups(this.config.namespace, SEARCH_NAME);
    kbc.watchMapped(i.deployments, (d) => keys(wakeups.wake(d, i.knowledgeBases.list())));

    const dp = c.platform as Controller;
    const platformNs = this.config.namespace;
    const mine = (o: KubeObject) =>
      o.metadata.namespace === platformNs && !o.metadata.ownerReferences?.length ? [PLATFORM_KEY] : [];
    dp.watchMapped(i.agents, () => [PLATFORM_KEY]);
    dp.watchMapped(i.deployments, mine);
    dp.watchMapped(i.services, mine);
    dp.watchMapped(i.secrets, (s) =>
      (s.metadata.namespace === platformNs && s.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY) ||
      i.agents.byIndex("secret", secretKey(s)).length > 0
        ? [PLATFORM_KEY]
        : [],
    );
  }

  get hasSynced(): boolean {
    return Object.values(this.informers).every((inf) => (inf as Informer<KubeObject>).hasSynced);
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Starts the caches, waits for them to sync, then campaigns for leadership (or leads at once). */
  async start(): Promise<void> {
    this.started = true;
    await Promise.all(Object.values(this.informers).map((inf) => (inf as Informer<KubeObject>).start()));
    this.logger.info({ objects: this.cacheSize() }, "caches synced");
    if (this.elector) this.elector.start();
    else this.startControllers();
  }

  cacheSize(): number {
    return Object.values(this.informers).reduce((n, inf) => n + (inf as Informer<KubeObject>).size, 0);
  }

  private startControllers(): void {
    if (this.leading) return;
    this.leading = true;
    (this.controllers.platform as Controller).enqueue(PLATFORM_KEY);
    for (const c of Object.values(this.controllers)) c.start();
  }

  private async stopControllers(): Promise<void> {
    this.leading = false;
    await Promise.all(Object.values(this.controllers).map((c) => c.stop()));
    // Refreshes stop too; the next leader (or this one after a restart) resumes them.
    await this.context.refreshes.stopAll();
  }

  /** Graceful stop: finish in-flight reconciles, release the Lease, stop watching. */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.stopping = true;
    await this.stopControllers();
    await this.elector?.stop();
    for (const inf of Object.values(this.informers)) (inf as Informer<KubeObject>).stop();
    await this.http.close();
  }
}
