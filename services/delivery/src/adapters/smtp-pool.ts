import { SmtpConnection, type Reply, type SmtpClientOptions } from "./smtp-client.js";
import { SmtpFailure } from "../domain/ports.js";

/** A message's reply: the relay's answer to DATA, the other recipients it refused, whether it went over TLS. */
export type PoolReply = Reply & { refused: Array<{ address: string; reply: Reply }>; tls: boolean };

/**
 * Connections shared by several pools (direct delivery: one destination domain's MX hosts).
 * When it is spent, a pool that needs a connection asks the others to close an idle one.
 */
export class ConnectionBudget {
  private used = 0;
  private readonly pools = new Set<SmtpPool>();

  constructor(readonly limit: number) {}

  /** Connections open or opening under this budget. */
  get inUse(): number {
    return this.used;
  }

  join(pool: SmtpPool): void {
    this.pools.add(pool);
  }

  leave(pool: SmtpPool): void {
    this.pools.delete(pool);
  }

  take(by: SmtpPool): boolean {
    if (this.used < this.limit) {
      this.used += 1;
      return true;
    }
    // Closing an idle connection elsewhere gives its slot back (and wakes the pools).
    for (const pool of this.pools) if (pool !== by && pool.shedIdle()) break;
    return false;
  }

  give(): void {
    this.used -= 1;
    for (const pool of this.pools) pool.grow();
  }
}

/** No connection came free within `acquireTimeoutMs`: nothing was tried, the server is just busy. */
export class PoolWaitTimeout extends SmtpFailure {
  constructor(message: string) {
    super(message, 0, false, true);
    this.name = "PoolWaitTimeout";
  }
}

export interface SmtpPoolOptions {
  poolSize: number;
  maxMessagesPerConnection: number;
  /** How long a send waits for a free connection before failing temporarily; unset: as long as it takes. */
  acquireTimeoutMs?: number;
  /** An idle connection is closed after this; unset: kept until the server closes it. */
  idleTimeoutMs?: number;
  /** Shared with other pools: connections opened only while it has room. */
  budget?: ConnectionBudget;
}

interface Waiting {
  resolve(conn: SmtpConnection): void;
  reject(err: Error): void;
}

/**
 * Up to `poolSize` connections to one SMTP server (smtp-client.ts, with PIPELINING), each
 * retired after `maxMessagesPerConnection` messages; a send waits for a free one. A message
 * whose connection turns out to have been closed by the server while idle, before any reply
 * to it, is sent once more on a new connection.
 */
export class SmtpPool {
  private readonly idle: Array<{ conn: SmtpConnection; timer?: NodeJS.Timeout }> = [];
  private readonly live = new Set<SmtpConnection>();
  private opening = 0;
  private readonly waiting: Waiting[] = [];
  private closing = false;

  constructor(
    readonly client: SmtpClientOptions,
    private readonly opts: SmtpPoolOptions,
  ) {
    opts.budget?.join(this);
  }

  /** Connections open or being opened. */
  get size(): number {
    return this.live.size + this.opening;
  }

  /** No connection and no send waiting: the pool may be dropped. */
  get unused(): boolean {
    return this.size === 0 && this.waiting.length === 0;
  }

  async send(from: string, to: readonly string[], raw: Buffer): Promise<PoolReply> {
    for (let attempt = 0; ; attempt++) {
      const conn = await this.acquire();
      const reused = conn.sent > 0;
      try {
        const reply = await conn.send(from, to, raw);
        return { ...reply, tls: conn.tls };
      } catch (err) {
        // Closed by the server while idle, noticed only now: nothing of this message was answered.
        if (attempt === 0 && reused && err instanceof SmtpFailure && err.code === 0 && !conn.answered) continue;
        throw err;
      } finally {
        this.release(conn);
      }
    }
  }

  private acquire(): Promise<SmtpConnection> {
    if (this.closing) return Promise.reject(new SmtpFailure("delivery is shutting down", 0, false, true));
    for (let entry = this.idle.pop(); entry; entry = this.idle.pop()) {
      clearTimeout(entry.timer);
      if (!entry.conn.closed) return Promise.resolve(entry.conn);
    }
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiting = {
        resolve: (conn) => (clearTimeout(timer), resolve(conn)),
        reject: (err) => (clearTimeout(timer), reject(err)),
      };
      if (this.opts.acquireTimeoutMs !== undefined) {
        const ms = this.opts.acquireTimeoutMs;
        timer = setTimeout(() => {
          const i = this.waiting.indexOf(waiter);
          if (i < 0) return;
          this.waiting.splice(i, 1);
          reject(new PoolWaitTimeout(`4.4.5 no free connection to ${this.client.host} within ${ms} ms`));
        }, ms);
        timer.unref();
      }
      this.waiting.push(waiter);
      this.grow();
    });
  }

  /** Opens connections for waiting sends while the pool (and its budget) has room. */
  grow(): void {
    while (!this.closing && this.waiting.length > this.opening && this.size < this.opts.poolSize && (this.opts.budget?.take(this) ?? true)) {
      this.opening += 1;
      let conn: SmtpConnection | undefined;
      SmtpConnection.open(this.client, () => this.forget(conn))
        .then((opened) => {
          conn = opened;
          this.opening -= 1;
          this.live.add(opened);
          this.release(opened);
        })
        .catch((err: Error) => {
          this.opening -= 1;
          // With no connection left, every waiting send learns why (the server refused, timed
          // out); otherwise one does and the rest wait for the connections still open.
          if (this.live.size === 0 && this.opening === 0) for (const w of this.waiting.splice(0)) w.reject(err);
          else this.waiting.shift()?.reject(err);
          this.opts.budget?.give();
        });
    }
  }

  /** Closes one idle connection (another pool under the same budget needs its slot); false when none. */
  shedIdle(): boolean {
    const entry = this.idle.shift();
    if (!entry) return false;
    clearTimeout(entry.timer);
    this.retire(entry.conn);
    return true;
  }

  private release(conn: SmtpConnection): void {
    if (conn.closed || conn.sent >= this.opts.maxMessagesPerConnection || this.closing) {
      this.retire(conn);
      return;
    }
    const next = this.waiting.shift();
    if (next) {
      next.resolve(conn);
      return;
    }
    const entry: { conn: SmtpConnection; timer?: NodeJS.Timeout } = { conn };
    if (this.opts.idleTimeoutMs !== undefined) {
      entry.timer = setTimeout(() => {
        const i = this.idle.indexOf(entry);
        if (i >= 0) this.idle.splice(i, 1);
        this.retire(conn);
      }, this.opts.idleTimeoutMs);
      entry.timer.unref();
    }
    this.idle.push(entry);
  }

  private retire(conn: SmtpConnection): void {
    this.forget(conn);
    void conn.quit();
  }

  private forget(conn: SmtpConnection | undefined): void {
    if (!conn || !this.live.delete(conn)) return;
    const i = this.idle.findIndex((e) => e.conn === conn);
    if (i >= 0) clearTimeout(this.idle.splice(i, 1)[0]!.timer);
    if (this.opts.budget) this.opts.budget.give();
    else this.grow();
  }

  async close(): Promise<void> {
    this.closing = true;
    this.opts.budget?.leave(this);
    for (const w of this.waiting.splice(0)) w.reject(new SmtpFailure("delivery is shutting down", 0, false, true));
    await Promise.all(
      this.idle.splice(0).map(({ conn, timer }) => {
        clearTimeout(timer);
        return conn.quit();
      }),
    );
  }
}
