import { appendFile, mkdir, readFile, rm, writeFile, rename } from "node:fs/promises";
import path from "node:path";
import { newId } from "@mailroom/kit/ids.js";
import type { CapturedEntry, CapturedMail, CapturedMessage } from "../domain/ports.js";

export interface CaptureInput {
  deliveryId: string;
  workspaceId: string;
  messageId: string;
  from: string;
  to: string;
  subject: string;
  raw: Buffer;
  html: string;
  text: string;
}

const ID = /^cap_[0-9a-z]{26}$/;

export interface CaptureListOptions {
  workspaceId?: string;
  /** Text the subject or the recipient contains (case-insensitive). */
  query?: string;
  /** An entry's id: only older entries. */
  before?: string;
}

/**
 * Locally captured mail, for running without a relay: <dir>/<id>.eml (the raw message as
 * it would have been sent), <id>.json (its html and text parts) and index.jsonl, one
 * line per message, appended (several processes may share the folder).
 */
export class CaptureStore implements CapturedMail {
  private readonly indexFile: string;
  private ready?: Promise<void>;
  private writes: Promise<unknown> = Promise.resolve();
  private savedSincePrune = 0;

  constructor(
    readonly dir: string,
    private readonly maxEntries = 10_000,
  ) {
    this.indexFile = path.join(dir, "index.jsonl");
  }

  static isId(id: string): boolean {
    return ID.test(id);
  }

  async save(input: CaptureInput): Promise<CapturedEntry> {
    await (this.ready ??= mkdir(this.dir, { recursive: true }).then(() => undefined));
    const entry: CapturedEntry = {
      id: newId("cap"),
      deliveryId: input.deliveryId,
      workspaceId: input.workspaceId,
      messageId: input.messageId,
      from: input.from,
      to: input.to,
      subject: input.subject,
      capturedAt: new Date().toISOString(),
      size: input.raw.length,
    };
    await writeFile(path.join(this.dir, `${entry.id}.eml`), input.raw);
    await writeFile(path.join(this.dir, `${entry.id}.json`), JSON.stringify({ html: input.html, text: input.text }));
    // Index lines are appended one at a time so a reader never sees half a line.
    const write = this.writes.then(() => appendFile(this.indexFile, `${JSON.stringify(entry)}\n`));
    this.writes = write.catch(() => undefined);
    await write;
    if (++this.savedSincePrune >= Math.min(500, this.maxEntries)) {
      this.savedSincePrune = 0;
      await this.prune();
    }
    return entry;
  }

  /**
   * Newest first: up to `limit` entries older than the `before` id (ids grow with time), whose
   * subject or recipient contains `query` (case-insensitive) when one is given; `more` when
   * older ones match too.
   */
  async list(limit: number, opts: CaptureListOptions = {}): Promise<{ entries: CapturedEntry[]; more: boolean }> {
    const needle = opts.query?.trim().toLowerCase();
    const picked: CapturedEntry[] = [];
    const all = await this.readIndex();
    // The index is in capture order; the cursor's own line is the start (ids of one millisecond
    // need not sort), else (pruned or cleared since) the ids' order.
    const at = opts.before ? all.findIndex((e) => e.id === opts.before) : -1;
    for (let i = (at >= 0 ? at : all.length) - 1; i >= 0 && picked.length <= limit; i--) {
      const e = all[i];
      if (opts.before && at < 0 && e.id >= opts.before) continue;
      if (opts.workspaceId && e.workspaceId !== opts.workspaceId) continue;
      if (needle && !e.subject.toLowerCase().includes(needle) && !e.to.toLowerCase().includes(needle)) continue;
      picked.push(e);
    }
    return { entries: picked.slice(0, limit), more: picked.length > limit };
  }

  /** Forgets every captured message; returns how many there were. */
  async clear(): Promise<number> {
    const all = await this.readIndex();
    const write = this.writes.then(async () => {
      const tmp = `${this.indexFile}.${process.pid}.tmp`;
      await writeFile(tmp, "");
      await rename(tmp, this.indexFile);
    });
    this.writes = write.catch(() => undefined);
    await write;
    for (const e of all) {
      await rm(path.join(this.dir, `${e.id}.eml`), { force: true });
      await rm(path.join(this.dir, `${e.id}.json`), { force: true });
    }
    return all.length;
  }

  async get(id: string, workspaceId?: string): Promise<CapturedMessage | undefined> {
    if (!CaptureStore.isId(id)) return undefined;
    const entry = (await this.readIndex()).find((e) => e.id === id);
    if (!entry || (workspaceId && entry.workspaceId !== workspaceId)) return undefined;
    try {
      const raw = await readFile(path.join(this.dir, `${id}.eml`));
      const parts = JSON.parse(await readFile(path.join(this.dir, `${id}.json`), "utf8")) as { html: string; text: string };
      return { entry, raw, html: parts.html, text: parts.text };
    } catch {
      return undefined; // pruned meanwhile
    }
  }

  async flush(): Promise<void> {
    await this.writes;
  }

  private async readIndex(): Promise<CapturedEntry[]> {
    await this.writes;
    let text: string;
    try {
      text = await readFile(this.indexFile, "utf8");
    } catch {
      return [];
    }
    const entries: CapturedEntry[] = [];
    for (const line of text.split("\n")) {
      if (!line) continue;
      try {
        entries.push(JSON.parse(line) as CapturedEntry);
      } catch {
        // a line cut by a crash: skip it
      }
    }
    return entries;
  }

  /** Keeps the newest maxEntries messages. */
  private async prune(): Promise<void> {
    const all = await this.readIndex();
    if (all.length <= this.maxEntries) return;
    const drop = all.slice(0, all.length - this.maxEntries);
    const keep = all.slice(all.length - this.maxEntries);
    const tmp = `${this.indexFile}.${process.pid}.tmp`;
    await writeFile(tmp, keep.map((e) => JSON.stringify(e)).join("\n") + "\n");
    await rename(tmp, this.indexFile);
    for (const e of drop) {
      await rm(path.join(this.dir, `${e.id}.eml`), { force: true });
      await rm(path.join(this.dir, `${e.id}.json`), { force: true });
    }
  }
}
