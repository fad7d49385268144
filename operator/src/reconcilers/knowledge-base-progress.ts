// status.progress while a KnowledgeBase is refreshed: sources done and pages crawled so far,
// written at most every PROGRESS_INTERVAL_MS (a crawl reports after every poll that brought
// pages, a source when it ends), one write at a time, each carrying the refresh's id
// (status.refresh); close() waits for the last one so it never lands after the final status.
import type { KnowledgeBase, KnowledgeBaseStatus } from "@capstan/shared/api";
import type { KubeObject } from "@capstan/shared/kube";
import { kbProgressStatus, type RunGenerations } from "../translate/knowledge-base.ts";
import { KNOWLEDGE_BASE, type OperatorContext } from "./context.ts";
import { writeStatus } from "./status.ts";

export const PROGRESS_INTERVAL_MS = 2_000;

export class ProgressWriter {
  private done = 0;
  private pages = 0;
  private last = 0;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly ctx: OperatorContext;
  private readonly kb: KnowledgeBase & KubeObject;
  private readonly gens: RunGenerations | undefined;
  private readonly refresh: KnowledgeBaseStatus["refresh"];

  constructor(
    ctx: OperatorContext,
    kb: KnowledgeBase & KubeObject,
    gens: RunGenerations | undefined,
    refresh: KnowledgeBaseStatus["refresh"],
  ) {
    this.ctx = ctx;
    this.kb = kb;
    this.gens = gens;
    this.refresh = refresh;
  }

  /** Sources done and pages crawled by every crawl source so far. */
  update(done: number, pages: number): void {
    this.done = done;
    this.pages = pages;
    this.maybeWrite();
  }

  /** No more writes; resolves once the one in flight (if any) has ended. */
  close(): Promise<void> {
    this.closed = true;
    return this.chain;
  }

  private maybeWrite(): void {
    const now = this.ctx.now();
    if (this.closed || now.getTime() - this.last < PROGRESS_INTERVAL_MS) return;
    this.last = now.getTime();
    const total = this.kb.spec.sources.length;
    const status = kbProgressStatus(this.kb, this.done, total, now, this.gens, this.pages, this.refresh);
    this.chain = this.chain
      .then(() => (this.closed ? false : writeStatus(this.ctx.client, KNOWLEDGE_BASE, this.kb, status)))
      .then(
        () => undefined,
        (err: Error) => this.ctx.logger.debug({ err: err.message }, "progress not written"),
      );
  }
}
