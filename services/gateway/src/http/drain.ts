// The gateway's state during a graceful stop. `begin()` (on SIGTERM) makes readiness fail while
// requests are still served, so endpoints move new requests to other replicas; `cut()` (at the end
// of the drain window) ends what is still open: a stream gets an OpenAI error event instead of
// being closed silently, a request still waiting for its answer gets a 503 the SDKs retry.
declare module "fastify" {
  interface FastifyInstance {
    /** The gateway's graceful-stop state, decorated by buildApp (shutdown.ts drives it). */
    gatewayDrain: Drain;
  }
}

export class Drain {
  private begunAt: number | undefined;
  private wasCut = false;
  private readonly open = new Set<() => void>();

  get draining(): boolean {
    return this.begunAt !== undefined;
  }

  /** Requests still registered (streams and answers in progress). */
  get inFlight(): number {
    return this.open.size;
  }

  begin(now = Date.now()): void {
    this.begunAt ??= now;
  }

  /**
   * Registers a request in progress: `cut` resolves when it must end now. Call `done` when it
   * ends, so a long-lived process does not keep one entry per request.
   */
  track(): { cut: Promise<"cut">; done: () => void } {
    let fire: () => void = () => {};
    const cut = new Promise<"cut">((resolve) => {
      fire = () => resolve("cut");
    });
    if (this.wasCut) {
      fire();
      return { cut, done: () => {} };
    }
    this.open.add(fire);
    return { cut, done: () => this.open.delete(fire) };
  }

  cut(): void {
    this.begin();
    this.wasCut = true;
    for (const fire of this.open) fire();
    this.open.clear();
  }
}
