/** What the pre-send check needs from outside (DESIGN §10.5): fetching links, scoring spam. */

export interface LinkRedirect {
  status: number;
  location: string;
}

export interface LinkResult {
  url: string;
  /** The last answer's status; 0 when none came. */
  status: number;
  redirects: LinkRedirect[];
  finalUrl: string;
  error?: string;
  /** Never fetched: the SSRF guard refused its address. */
  refused?: boolean;
  /** Never fetched: the check's time for links ran out before its turn. */
  unchecked?: boolean;
}

/** Fetches links (time-bounded, a few at a time, through the SSRF guard, results cached). */
export interface LinkProbe {
  check(urls: string[]): Promise<LinkResult[]>;
}

/** The message as delivery would build it, for a spam filter. */
export interface CheckMessage {
  from: { email: string; name: string };
  to: string;
  replyTo: string[];
  subject: string;
  html: string;
  text: string;
  messageId: string;
  /** The List-Unsubscribe target delivery adds to bulk mail ("" : none). */
  listUnsubscribeUrl: string;
  date: Date;
}

export interface SpamRule {
  name: string;
  score: number;
  description: string;
}

export type SpamResult =
  | { scored: true; score: number; required: number; rules: SpamRule[] }
  /** `failed`: a scorer is configured but did not answer (the reason is in `skipped`). */
  | { scored: false; skipped: string; failed?: boolean };

export interface SpamScorer {
  score(message: CheckMessage): Promise<SpamResult>;
}
