/**
 * CSV imports started from the console, as jobs: the upload is answered at once (303 to the
 * job's page) and the rows are upserted in the background, while the page polls progress.
 *
 * Jobs live in this gateway process's memory, keyed by workspace and job id, not in NATS KV:
 * the file itself is only in this process (multipart parsed into memory, 10 MB at most), so
 * a job cannot outlive or move away from it; a restart loses the job and its file alike,
 * and the page then says the job is unknown (re-uploading is safe: rows are upserts). With
 * several gateways behind a balancer, the job's page must reach the same gateway (sticky
 * sessions); progress in KV would not help, since no other gateway could finish the job.
 * Memory is bounded: at most MAX_JOBS jobs, finished ones dropped after an hour, and the
 * rejected-rows report capped by the import itself.
 */
import { randomBytes } from "node:crypto";
import { refusal } from "@mailroom/http/errors.js";
import { Readable } from "node:stream";
import {
  importContactsCsv,
  ImportAbortedError,
  type ContactsClient,
  type ImportSummary,
} from "@mailroom/kit/contacts-csv/import-csv.js";

export interface ImportJob {
  id: string;
  workspaceId: string;
  fileName: string;
  totalBytes: number;
  bytes: number;
  rows: number;
  rejected: number;
  state: "running" | "done" | "failed";
  summary?: ImportSummary;
  /** Why the whole file was refused (a header problem), or that the import broke off. */
  error?: string;
  startedAt: Date;
  finishedAt?: Date;
}

const MAX_JOBS = 200;
const KEEP_FINISHED_MS = 3600_000;
/** Rows per BatchUpsertContacts call: smaller than the CLI's, so the bar moves on small files. */
const BATCH_SIZE = 200;

export class ImportJobs {
  private readonly jobs = new Map<string, ImportJob>();

  constructor(private readonly now: () => number = Date.now) {}

  private key(workspaceId: string, id: string) {
    return `${workspaceId}\u0000${id}`;
  }

  /** The job, only for its own workspace. */
  get(workspaceId: string, id: string): ImportJob | undefined {
    return this.jobs.get(this.key(workspaceId, id));
  }

  /** Starts importing `file`; resolves with the job once it is registered (not when it ends). */
  start(client: ContactsClient, workspaceId: string, fileName: string, file: Buffer, log: { error(o: object, m: string): void }): ImportJob {
    this.prune();
    if (this.jobs.size >= MAX_JOBS) {
      throw refusal({ code: "too_many_imports", status: 429, message: "Too many contact imports are running on this server; try again in a few minutes." });
    }
    const job: ImportJob = {
      id: `imp_${randomBytes(12).toString("hex")}`,
      workspaceId,
      fileName,
      totalBytes: file.length,
      bytes: 0,
      rows: 0,
      rejected: 0,
      state: "running",
      startedAt: new Date(this.now()),
    };
    this.jobs.set(this.key(workspaceId, job.id), job);
    void importContactsCsv({
      client,
      workspaceId,
      input: Readable.from(chunks(file)),
      batchSize: BATCH_SIZE,
      onProgress: (p) => Object.assign(job, { bytes: p.bytes, rows: p.rows, rejected: p.rejected }),
    }).then(
      (summary) => Object.assign(job, { state: "done", summary, bytes: job.totalBytes, rows: summary.rows, rejected: summary.rejectedCount, finishedAt: new Date(this.now()) }),
      (err: unknown) => {
        if (!(err instanceof ImportAbortedError)) log.error({ err, workspaceId, job: job.id }, "console CSV import failed");
        Object.assign(job, {
          state: "failed",
          error: err instanceof ImportAbortedError ? err.message : "the import broke off (a service did not answer); rows imported so far stay, and importing the file again is safe",
          finishedAt: new Date(this.now()),
        });
      },
    );
    return job;
  }

  private prune() {
    const cutoff = this.now() - KEEP_FINISHED_MS;
    for (const [k, j] of this.jobs) if (j.finishedAt && j.finishedAt.getTime() < cutoff) this.jobs.delete(k);
  }
}

/** What the job's page polls. */
export function jobJson(job: ImportJob) {
  return {
    id: job.id,
    state: job.state,
    fileName: job.fileName,
    bytes: job.bytes,
    totalBytes: job.totalBytes,
    percent: job.totalBytes ? Math.min(100, Math.round((job.bytes / job.totalBytes) * 100)) : 100,
    rows: job.rows,
    rejected: job.rejected,
    created: job.summary?.created ?? 0,
    updated: job.summary?.updated ?? 0,
    error: job.error ?? "",
  };
}

/** In 64 KB pieces, so the parser pulls (and the bar moves) as batches are answered. */
function* chunks(file: Buffer): Generator<Buffer> {
  for (let i = 0; i < file.length; i += 64 * 1024) yield file.subarray(i, i + 64 * 1024);
}
