// The HTTP mechanics of one provider attempt (agents/upstream.ts): the attempt's abort signal with
// its timeout, and a non-stream exchange read into memory over undici's dispatch API.
import type { Dispatcher } from "undici";

/**
 * The abort signal of one attempt: the client going away, or the attempt's timeout (the whole
 * call, to the last byte). One controller and one timer, cleared as soon as a non-stream answer
 * is read (AbortSignal.any + AbortSignal.timeout cost a composite signal and a timer that lives
 * for the full timeout on every request). A stream's stays armed until the stream ends.
 */
export class AttemptTimeout {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly parent: AbortSignal;
  private readonly onParentAbort: () => void;
  aborted = false;

  constructor(parent: AbortSignal, ms: number) {
    this.parent = parent;
    this.onParentAbort = () => this.controller.abort(parent.reason);
    this.timer = setTimeout(() => {
      this.aborted = true;
      this.controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError"));
    }, ms);
    // Like AbortSignal.timeout's, the timer does not keep the process alive.
    this.timer.unref();
    if (parent.aborted) this.controller.abort(parent.reason);
    else parent.addEventListener("abort", this.onParentAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  clear(): void {
    clearTimeout(this.timer);
    this.parent.removeEventListener("abort", this.onParentAbort);
  }
}

export interface BufferedResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * A non-stream call through undici's dispatch API, the body collected in memory: no response
 * stream (BodyReadable) per call, which is most of what undici's request() costs on top of the
 * HTTP exchange itself. Same outcomes as request() + body.text(): rejects on connect errors,
 * timeouts and aborts (with the signal's reason); a non-200 answer whose body breaks off resolves
 * with the text received so far ("" in practice), as body.text().catch(() => "") did.
 */
export function bufferedRequest(
  dispatcher: Dispatcher,
  opts: Dispatcher.DispatchOptions,
  signal: AbortSignal,
): Promise<BufferedResponse> {
  return new Promise((resolve, reject) => {
    let controller: { abort(reason: Error): void } | undefined;
    let statusCode = 0;
    let headers: BufferedResponse["headers"] = {};
    const chunks: Buffer[] = [];
    const onAbort = () => controller?.abort(signal.reason);
    const settle = () => signal.removeEventListener("abort", onAbort);
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    dispatcher.dispatch(opts, {
      onRequestStart(c) {
        controller = c;
        if (signal.aborted) c.abort(signal.reason);
      },
      onResponseStart(_c, status, h) {
        statusCode = status;
        headers = h as BufferedResponse["headers"];
      },
      onResponseData(_c, chunk) {
        chunks.push(chunk);
      },
      onResponseEnd() {
        settle();
        resolve({ statusCode, headers, text: Buffer.concat(chunks).toString("utf8") });
      },
      onResponseError(_c, err) {
        settle();
        if (statusCode !== 0 && statusCode !== 200) resolve({ statusCode, headers, text: "" });
        else reject(err);
      },
    });
  });
}
