import { z } from "zod";
import { loadSettings } from "@mailroom/kit/config.js";

/**
 * The automation unit's settings; what every process shares (NATS, store, secret, URLs) is
 * kit's `loadConfig`.
 */
const schema = z.object({
  /** How often the claim loop looks for due runs when its last look found none (a wait ends at most this late). */
  MAILROOM_AUTOMATION_CLAIM_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(250),
  /** How long a claim holds a run: a process that dies leaves its runs to another after this. */
  MAILROOM_AUTOMATION_LEASE_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  /** Runs advanced at once (and enrolment messages handled at once per consumer). */
  MAILROOM_AUTOMATION_CONCURRENCY: z.coerce.number().int().min(1).max(4_096).default(256),
  /** Most send steps of one workspace in one SendBatch (the email service takes at most 50). */
  MAILROOM_AUTOMATION_SEND_BATCH: z.coerce.number().int().min(1).max(50).default(50),
});

export interface AutomationSettings {
  claimIntervalMs: number;
  leaseMs: number;
  concurrency: number;
  sendBatch: number;
}

/** Reads and validates the automation unit's settings; a bad value throws kit's ConfigError naming the variable. */
export function loadAutomationSettings(env: NodeJS.ProcessEnv = process.env): AutomationSettings {
  const c = loadSettings(schema, env);
  return {
    claimIntervalMs: c.MAILROOM_AUTOMATION_CLAIM_INTERVAL_MS,
    leaseMs: c.MAILROOM_AUTOMATION_LEASE_MS,
    concurrency: c.MAILROOM_AUTOMATION_CONCURRENCY,
    sendBatch: c.MAILROOM_AUTOMATION_SEND_BATCH,
  };
}
