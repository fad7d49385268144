// History that survives short Redis outages: an exchange that cannot be written (the breaker is
// open, or the write fails) waits in a bounded in-process buffer, in order, and the buffer is
// written when Redis answers again (the breaker closes, or the next write succeeds). When the
// buffer is full the oldest waiting exchange is dropped: counted in
// capstan_gateway_history_buffer_dropped_total and logged once per interval, never once per request.
// Buffered exchanges keep their `created` time; their stream id (the cursor) is the time they are
// written, since Redis only appends to a stream.
import type { Logger } from "@capstan/shared";
import type { GatewayMetrics } from "../metrics.ts";
import type { RedisBreaker } from "../redis/breaker.ts";
import type { ExchangeRecord, HistoryPage, HistoryStore } from "./store.ts";

export interface BufferedHistoryOptions {
  /** Most exchanges kept while Redis is away (per replica). */
  maxBuffered: number;
  /** At most one "buffer full" line per this interval. */
  overflowLogIntervalMs: number;
  metrics: GatewayMetrics;
  logger: Logger;
}

interface Waiting {
  channelId: string;
  record: ExchangeRecord;
}

export class BufferedHistoryStore implements HistoryStore {
  private readonly inner: HistoryStore;
  private readonly breaker: RedisBreaker;
  private readonly opts: BufferedHistoryOptions;
  private readonly waiting: Waiting[] = [];
  private flushing: Promise<void> | undefined;
  private droppedSinceLog = 0;
  private overflowTimer: NodeJS.Timeout | undefined;

  constructor(inner: HistoryStore, breaker: RedisBreaker, opts: BufferedHistoryOptions) {
    this.inner = inner;
    this.breaker = breaker;
    this.opts = opts;
    breaker.onChange((state) => {
      if (state === "closed") void this.flush();
    });
  }

  get buffered(): number {
    return this.waiting.length;
  }

  async append(channelId: string, record: ExchangeRecord): Promise<void> {
    if (this.waiting.length === 0 && this.breaker.closed) {
      try {
        await this.breaker.run(() => this.inner.append(channelId, record));
        this.opts.metrics.historyWrites.inc({ outcome: "ok" });
        return;
      } catch {
        // Kept below; the breaker logs Redis' state, the buffer logs its own once.
      }
    }
    this.keep({ channelId, record });
    if (this.breaker.closed) void this.flush();
  }

  list(channelId: string, opts: { limit: number; before?: string }): Promise<HistoryPage> {
    return this.breaker.run(() => this.inner.list(channelId, opts));
  }

  private keep(item: Waiting): void {
    if (this.waiting.length === 0) {
      this.opts.logger.warn(
        { maxBuffered: this.opts.maxBuffered },
        "history cannot be written to Redis: buffering exchanges until it answers",
      );
    }
    this.waiting.push(item);
    this.opts.metrics.historyWrites.inc({ outcome: "buffered" });
    if (this.waiting.length > this.opts.maxBuffered) {
      this.waiting.shift();
      this.opts.metrics.historyDropped.inc();
      this.droppedSinceLog++;
      this.scheduleOverflowLog();
    }
    this.opts.metrics.historyBuffered.set(this.waiting.length);
  }

  private scheduleOverflowLog(): void {
    if (this.overflowTimer) return;
    // The first drop is said at once; later ones are summed up once per interval.
    const report = () => {
      if (this.droppedSinceLog === 0) {
        this.overflowTimer = undefined;
        return;
      }
      this.opts.logger.warn(
        { dropped: this.droppedSinceLog, maxBuffered: this.opts.maxBuffered },
        `history buffer full: ${this.droppedSinceLog} oldest exchange(s) dropped`,
      );
      this.droppedSinceLog = 0;
      this.overflowTimer = setTimeout(report, this.opts.overflowLogIntervalMs);
      this.overflowTimer.unref();
    };
    report();
  }

  /** Writes the waiting exchanges in order; stops at the first failure and keeps the rest. */
  flush(): Promise<void> {
    this.flushing ??= this.flushNow().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async flushNow(): Promise<void> {
    let written = 0;
    while (this.waiting.length > 0 && this.breaker.closed) {
      const next = this.waiting[0] as Waiting;
      try {
        await this.breaker.run(() => this.inner.append(next.channelId, next.record));
      } catch {
        break;
      }
      // A drop while the write was in flight may have shifted it out already.
      if (this.waiting[0] === next) this.waiting.shift();
      written++;
      this.opts.metrics.historyWrites.inc({ outcome: "flushed" });
      this.opts.metrics.historyBuffered.set(this.waiting.length);
    }
    if (written > 0) {
      this.opts.logger.info({ written, left: this.waiting.length }, "history buffer written to Redis");
    }
  }

  close(): void {
    clearTimeout(this.overflowTimer);
  }
}
