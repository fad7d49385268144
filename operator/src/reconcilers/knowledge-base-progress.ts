// status.progress while a KnowledgeBase is ingested: sources done and pages crawled so far,
// written at most every PROGRESS_INTERVAL_MS (a crawl reports after every poll that brought
// pages, a source when it ends), one write at a time; close() waits for the last one so it never
// lands after the refresh's final status.
import type { KnowledgeBase } from "@capstan/shared/api";
import type { KubeObject } from "@capstan/shared/kube";
import { kbProgressStatus, type RunGenerations } from "../translate/knowledge-base.ts";
import { KNOWLEDGE_BASE, type OperatorContext } from "./context.ts";
import { writeStatus } from "./status.ts";

export const PROGRESS_INTERVAL_MS = 2_000;

export class ProgressWriter {
  private done = 0;
  private readonly pages = new Map<string, number>();
  private last = 0;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly ctx: OperatorContext;
  private readonly kb: KnowledgeBase & KubeObject;
  private readonly gens: RunGenerations | undefined;

  constructor(ctx: OperatorContext, kb: KnowledgeBase & KubeObject, gens: RunGenerations | undefined) {
    this.ctx = ctx;
    this.kb = kb;
    this.gens = gens;
  }

  /** Pages crawled by every crawl source so far. */
  get crawledPages(): number {
    let n = 0;
    for (const p of this.pages.values()) n += p;
    return n;
  }

  sourceDone(): void {
    this.done++;
    this.maybeWrite();
  }

  crawled(sourceId: string, pages: number): void {
    this.pages.set(sourceId, pages);
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
    const status = kbProgressStatus(this.kb, this.done, this.kb.spec.sources.length, now, this.gens, this.crawledPages);
    this.chain = this.chain
      .then(() => (this.closed ? false : writeStatus(this.ctx.client, KNOWLEDGE_BASE, this.kb, status)))
      .then(
        () => undefined,
        (err: Error) => this.ctx.logger.debug({ err: err.message }, "progress not written"),
      );
  }
}
