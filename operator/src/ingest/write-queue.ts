// The documents of one source on their way to search, written while the source still brings more
// (a crawl's pages as its polls read them): at most `concurrency` writes at once, and at most
// `capacity` documents held (waiting or being written). push() resolves once the document is
// held and there is room for the next one, so a producer that awaits it stops while the buffer is
// full (backpressure): the memory a source takes is bounded by `capacity`, not by its size.
//
// One document per id, the last pushed wins: a document pushed while another of the same id waits
// replaces it (the earlier one is never written), and one pushed while another of the same id is
// being written waits until that write ended, so the later content always lands last.
//
// The first write that fails (after write()'s own waiting through a search restart) stops the
// queue: nothing more starts, and push() and drain() reject with that error.
import type { UpsertResult } from "@capstan/shared/clients/search-client";

export interface QueuedDocument {
  docsId: string;
}

export class WriteQueue<D extends QueuedDocument> {
  private readonly waiting: D[] = [];
  private readonly writing = new Set<string>();
  private error: { err: unknown } | undefined;
  /** Resolvers of those waiting for a change: a write ended (room made, or the queue failed). */
  private wakers: (() => void)[] = [];
  private readonly write: (doc: D) => Promise<UpsertResult>;
  private readonly onWritten: (r: UpsertResult) => void;
  private readonly concurrency: number;
  private readonly capacity: number;

  constructor(opts: {
    write: (doc: D) => Promise<UpsertResult>;
    /** Told of every write that ended well. */
    onWritten: (r: UpsertResult) => void;
    concurrency: number;
    capacity: number;
  }) {
    this.write = opts.write;
    this.onWritten = opts.onWritten;
    this.concurrency = opts.concurrency;
    this.capacity = Math.max(opts.capacity, opts.concurrency);
  }

  /** Documents held: waiting and being written. */
  get held(): number {
    return this.waiting.length + this.writing.size;
  }

  /** Holds doc for writing; resolves when there is room for another (rejects once a write failed). */
  async push(doc: D): Promise<void> {
    this.throwIfFailed();
    const same = this.waiting.findIndex((w) => w.docsId === doc.docsId);
    if (same >= 0) this.waiting[same] = doc;
    else this.waiting.push(doc);
    this.pump();
    while (this.held >= this.capacity) {
      await this.changed();
      this.throwIfFailed();
    }
  }

  /**
   * Resolves when every document pushed is written; rejects with the first write's error, once
   * the writes already running have ended (none lands after the source is reported).
   */
  async drain(): Promise<void> {
    while (this.writing.size > 0 || (this.held > 0 && !this.error)) await this.changed();
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.error) throw this.error.err;
  }

  private changed(): Promise<void> {
    return new Promise((resolve) => this.wakers.push(resolve));
  }

  private wake(): void {
    const wakers = this.wakers;
    this.wakers = [];
    for (const w of wakers) w();
  }

  /** Starts the waiting documents there is a slot for, each only once no write of its id is running. */
  private pump(): void {
    for (let i = 0; i < this.waiting.length && this.writing.size < this.concurrency && !this.error; ) {
      const doc = this.waiting[i] as D;
      if (this.writing.has(doc.docsId)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.writing.add(doc.docsId);
      this.write(doc).then(
        (r) => {
          this.writing.delete(doc.docsId);
          this.onWritten(r);
          this.pump();
          this.wake();
        },
        (err: unknown) => {
          this.writing.delete(doc.docsId);
          this.error ??= { err };
          this.wake();
        },
      );
    }
  }
}
