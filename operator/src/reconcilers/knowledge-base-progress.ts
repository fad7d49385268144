// status.progress while a KnowledgeBase is refreshed: sources done, pages crawled and documents
// written so far (a crawl's pages are written while it goes on: "0/1 sources, 900 pages crawled,
// 840 written"), written at most every PROGRESS_INTERVAL_MS (a crawl reports after every poll
// that brought pages, a write when it ends, a source when it ends; counts that come sooner are
// written at the interval's end), one write at a time, each carrying the refresh's id
// (status.refresh); close() waits for the last one so it never lands after the final status.
import type { KnowledgeBase, KnowledgeBaseStatus } from "@capstan/shared/api";
import type { KubeObject } from "@capstan/shared/kube";
import { kbProgressStatus, type RunVectorSets } from "../translate/knowledge-base.ts";
import { KNOWLEDGE_BASE, type OperatorContext } from "./context.ts";
import { writeStatus } from "./status.ts";

export const PROGRESS_INTERVAL_MS = 2_000;

export class ProgressWriter {
  private done = 0;
  private pages = 0;
  private written = 0;
  private last = 0;
  private chain: Promise<void> = Promise.resolve();
  /** The write of counts that came within an interval of the last write, due at the interval's end. */
  private trailing: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly ctx: OperatorContext;
  private readonly kb: KnowledgeBase & KubeObject;
  private readonly sets: RunVectorSets | undefined;
  private readonly refresh: KnowledgeBaseStatus["refresh"];

  constructor(
    ctx: OperatorContext,
    kb: KnowledgeBase & KubeObject,
    sets: RunVectorSets | undefined,
    refresh: KnowledgeBaseStatus["refresh"],
  ) {
    this.ctx = ctx;
    this.kb = kb;
    this.sets = sets;
    this.refresh = refresh;
  }

  /** Sources done, pages crawled by every crawl source and documents written so far. */
  update(done: number, pages: number, written = 0): void {
    this.done = done;
    this.pages = pages;
    this.written = written;
    this.maybeWrite();
  }

  /** No more writes; resolves once the one in flight (if any) has ended. */
  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.trailing);
    return this.chain;
  }

  private maybeWrite(): void {
    const now = this.ctx.now();
    if (this.closed || this.trailing) return;
    const wait = this.last + PROGRESS_INTERVAL_MS - now.getTime();
    if (wait > 0) {
      // Too soon after the last write: these counts (or later ones) are written when the interval
      // ends, so the status does not stay behind when no more updates come for a while.
      this.trailing = setTimeout(() => {
        this.trailing = undefined;
        this.maybeWrite();
      }, wait);
      this.trailing.unref();
      return;
    }
    this.last = now.getTime();
    const total = this.kb.spec.sources.length;
    const status = kbProgressStatus(this.kb, this.done, total, now, this.sets, this.pages, this.refresh);
    if (this.pages > 0) status.progress = `${status.progress}, ${this.written} written`;
    this.chain = this.chain
      .then(() => (this.closed ? false : writeStatus(this.ctx.client, KNOWLEDGE_BASE, this.kb, status)))
      .then(
        () => undefined,
        (err: Error) => this.ctx.logger.debug({ err: err.message }, "progress not written"),
      );
  }
}
