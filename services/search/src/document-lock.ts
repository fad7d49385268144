// One write at a time per document in this process: an upload, a delete and the copy of an upload
// into a new vector set (carry-uploads.ts) each check and write a document under its lock, so the
// copy never overwrites a newer upload or brings back a deleted document. Locks are held for the
// store calls only, never while a text is embedded. Hand-written (a promise chain per key, removed
// once idle) rather than a dependency: the keyed locks of npm are this same chain.

export class DocumentLocks {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs fn once every earlier call for the same key has finished. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    let release = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = before.then(() => mine);
    this.tails.set(key, tail);
    await before;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Keys with a call running or waiting (0 when idle: nothing is kept). */
  get size(): number {
    return this.tails.size;
  }
}
