// Conversation history of channels with spec.keepHistory: one Redis stream per channel,
//   capstan:history:<namespace>/<channel>
// one entry per exchange (field "exchange" = the JSON record below). Entries older than the
// retention are trimmed on every write (XADD MINID), the stream is capped at maxEntries and expires
// after the retention when the channel goes quiet. Read it with GET /api/v1/history (the channel's
// own key) or `redis-cli XREVRANGE capstan:history:<ns>/<name> + - COUNT 10`. Keys are never stored.
// On a Redis Cluster the append script's two keys share the stream's slot (markerKeyOf).
import { companionKey, type RedisClient } from "@capstan/shared/redis";
import type { Citation, Usage } from "../agents/types.ts";
import type { ChatMessage } from "../chat-request.ts";

export interface ExchangeRecord {
  id: string;
  channel: string;
  agent: string;
  mode: string;
  /** Unix milliseconds when the request arrived. */
  created: number;
  stream: boolean;
  /** HTTP status the client got (200, or the error status). */
  status: number;
  messages: ChatMessage[];
  answer: string | null;
  finishReason: string | null;
  usage: Usage | null;
  citations?: Citation[];
  error?: { code: string; message: string };
  timings: { totalMs: number; firstTokenMs: number | null };
}

export interface HistoryPage {
  data: Array<ExchangeRecord & { cursor: string }>;
  has_more: boolean;
}

export interface HistoryStore {
  append(channelId: string, record: ExchangeRecord): Promise<void>;
  /** Newest first; `before` is the cursor of the last entry of the previous page. */
  list(channelId: string, opts: { limit: number; before?: string }): Promise<HistoryPage>;
}

export interface HistoryOptions {
  keyPrefix: string;
  retentionSeconds: number;
  maxEntries: number;
}

const CURSOR = /^\d+-\d+$/;

// KEYS[1] = the channel's stream, KEYS[2] = the exchange's write marker; ARGV = min id, max
// entries, retention (s), the exchange's JSON, marker lifetime (s). The marker makes a write
// idempotent: a write that timed out while Redis was frozen may still run when it thaws, and the
// buffered copy written after it must not add the exchange twice.
const APPEND_SCRIPT = `
if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[5]) then return 0 end
redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[1], '*', 'exchange', ARGV[4])
redis.call('XTRIM', KEYS[1], 'MAXLEN', '~', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
`;
const MARKER_SECONDS = 3600;
type AppendRunner = (
  stream: string,
  marker: string,
  minId: string,
  maxEntries: number,
  retention: number,
  json: string,
  markerSeconds: number,
) => Promise<number>;

export class RedisHistoryStore implements HistoryStore {
  private readonly redis: RedisClient;
  private readonly opts: HistoryOptions;

  private readonly run: AppendRunner;

  constructor(redis: RedisClient, opts: HistoryOptions) {
    this.redis = redis;
    this.opts = opts;
    if (!(redis as unknown as Record<string, unknown>).capstanHistoryAppend) {
      redis.defineCommand("capstanHistoryAppend", { numberOfKeys: 2, lua: APPEND_SCRIPT });
    }
    const r = redis as unknown as { capstanHistoryAppend: AppendRunner };
    this.run = (...args) => r.capstanHistoryAppend(...args);
  }

  keyOf(channelId: string): string {
    return `${this.opts.keyPrefix}${channelId}`;
  }

  /**
   * The exchange's write marker, in the stream's hash slot (a script's keys must share one on a
   * Redis Cluster): `{<stream key>}:written:<id>`, which hashes as the stream key itself does.
   */
  markerKeyOf(channelId: string, exchangeId: string): string {
    return companionKey(this.keyOf(channelId), `written:${exchangeId}`);
  }

  async append(channelId: string, record: ExchangeRecord): Promise<void> {
    const minId = Date.now() - this.opts.retentionSeconds * 1000;
    await this.run(
      this.keyOf(channelId),
      this.markerKeyOf(channelId, record.id),
      String(minId),
      this.opts.maxEntries,
      this.opts.retentionSeconds,
      JSON.stringify(record),
      MARKER_SECONDS,
    );
  }

  async list(channelId: string, opts: { limit: number; before?: string }): Promise<HistoryPage> {
    const end = opts.before && CURSOR.test(opts.before) ? `(${opts.before}` : "+";
    const minId = Date.now() - this.opts.retentionSeconds * 1000;
    const rows = await this.redis.xrevrange(this.keyOf(channelId), end, String(minId), "COUNT", opts.limit + 1);
    const data = rows.slice(0, opts.limit).flatMap(([cursor, fields]) => {
      const i = fields.indexOf("exchange");
      const raw = i >= 0 ? fields[i + 1] : undefined;
      if (raw === undefined) return [];
      try {
        return [{ ...(JSON.parse(raw) as ExchangeRecord), cursor }];
      } catch {
        return [];
      }
    });
    return { data, has_more: rows.length > opts.limit };
  }
}

/** History of a gateway with no Redis: per process, bounded, lost on restart (said at start-up). */
export class MemoryHistoryStore implements HistoryStore {
  private readonly logs = new Map<string, Array<ExchangeRecord & { cursor: string }>>();
  private readonly opts: HistoryOptions;
  private seq = 0;

  constructor(opts: HistoryOptions) {
    this.opts = opts;
  }

  async append(channelId: string, record: ExchangeRecord): Promise<void> {
    let log = this.logs.get(channelId);
    if (!log) {
      log = [];
      this.logs.set(channelId, log);
    }
    log.push({ ...record, cursor: `${Date.now()}-${this.seq++}` });
    const minTime = Date.now() - this.opts.retentionSeconds * 1000;
    while (log.length > 0 && (log.length > this.opts.maxEntries || (log[0]?.created ?? 0) < minTime)) log.shift();
  }

  async list(channelId: string, opts: { limit: number; before?: string }): Promise<HistoryPage> {
    const log = [...(this.logs.get(channelId) ?? [])].reverse();
    const start = opts.before ? log.findIndex((e) => e.cursor === opts.before) + 1 : 0;
    const page = log.slice(start, start + opts.limit);
    return { data: page, has_more: start + opts.limit < log.length };
  }
}
