import type { Broadcast } from "../model.js";
import type { Clock, Directory, Logger, RenderedMessage } from "../ports.js";
import { analyseHtml } from "./analyse.js";
import type { LinkProbe, LinkResult, SpamResult, SpamScorer } from "./ports.js";

/**
 * The pre-send check (DESIGN §10.5): the message rendered as its first recipient would get
 * it, then looked at as a mailbox provider and a reader would: spam score, Gmail's clipping,
 * every link fetched, images, the text part, the unsubscribe link, subject and preview text.
 * Each problem is a finding, `warning` or `error`, naming where it is. Nothing is sent or kept.
 */

/** Gmail clips a message whose HTML is over 102 KB ("[Message clipped] View entire message"). */
export const GMAIL_CLIP_BYTES = 102 * 1024;
/** Most inboxes cut a subject after about 70 characters (mobile ones sooner). */
export const SUBJECT_MAX_CHARS = 70;
/** Inboxes show about 90 to 140 characters of preview text beside the subject. */
export const PREVIEW_TEXT_MAX_CHARS = 140;
/** Links fetched per check; a message with more gets a warning naming those left out. */
export const LINKS_MAX = 100;
/** About how long a check spends on links (the link probe's budget plus one link's timeout). */
const LINK_CHECK_SECONDS = 20;
/** Visible characters per image under which a message reads as "mostly image". */
const TEXT_CHARS_PER_IMAGE = 100;
const TEXT_CHARS_MIN_WITH_IMAGES = 200;

export type FindingLevel = "warning" | "error";
export interface Finding {
  level: FindingLevel;
  code: string;
  message: string;
  where: string;
}

export interface CheckResult {
  spam: SpamResult;
  size: { htmlBytes: number; clipped: boolean };
  links: LinkResult[];
  images: Array<{ src: string; alt?: string }>;
  text: { present: boolean; generated: boolean; chars: number };
  unsubscribe: { required: boolean; found: boolean };
  warnings: Finding[];
  errors: Finding[];
}

/** A rendered message and what the check must know about how it goes out. */
export interface CheckContent {
  subject: string;
  html: string;
  text: string;
  previewText: string;
  from: { email: string; name: string };
  replyTo: string[];
  /** The first recipient's address (a placeholder without one). */
  to: string;
  messageId: string;
  /** The recipient's own unsubscribe URL as the render put it in ("" : none). */
  unsubscribeUrl: string;
  /** Bulk mail: an unsubscribe link is required (and delivery adds List-Unsubscribe). */
  unsubscribeRequired: boolean;
  /** The author wrote the text part (false: generated from the HTML). */
  textGiven: boolean;
}

export interface PreSendCheckDeps {
  /** The broadcast use cases: `get` gates and answers 404; `preview` renders as sending would, without tracking. */
  broadcasts: {
    get(workspaceId: string, id: string): Promise<Broadcast>;
    preview(workspaceId: string, id: string, contactEmail: string): Promise<RenderedMessage & { contactFound: boolean; unsubscribeUrl?: string }>;
  };
  directory: Pick<Directory, "subscribedContacts">;
  links: LinkProbe;
  spam: SpamScorer;
  clock: Clock;
  logger: Logger;
}

const PLACEHOLDER_RECIPIENT = "preview@example.invalid";

export class PreSendCheck {
  constructor(private readonly deps: PreSendCheckDeps) {}

  /** A broadcast as its audience's first contact would get it; sample values when it has none. */
  async checkBroadcast(workspaceId: string, id: string): Promise<CheckResult> {
    const broadcast = await this.deps.broadcasts.get(workspaceId, id);
    const first = await this.firstContact(broadcast);
    const rendered = await this.deps.broadcasts.preview(workspaceId, id, first ?? "");
    return this.check({
      subject: rendered.subject,
      html: rendered.html,
      text: rendered.text,
      previewText: rendered.previewText,
      from: { email: broadcast.fromEmail, name: broadcast.fromName },
      replyTo: broadcast.replyTo ?? [],
      to: first ?? PLACEHOLDER_RECIPIENT,
      messageId: `<check.${broadcast.id}@${domainOf(broadcast.fromEmail)}>`,
      unsubscribeUrl: rendered.unsubscribeUrl ?? "",
      unsubscribeRequired: true,
      textGiven: broadcast.text.trim() !== "",
    });
  }

  /** The audience's first contact's address; undefined when it is empty or cannot be read now. */
  private async firstContact(broadcast: Broadcast): Promise<string | undefined> {
    try {
      for await (const batch of this.deps.directory.subscribedContacts(broadcast.workspaceId, broadcast.audience)) {
        if (batch.length) return batch[0].email;
      }
    } catch (err) {
      this.deps.logger.warn({ err, broadcastId: broadcast.id }, "pre-send check: audience not read; sample values used");
    }
    return undefined;
  }

  async check(content: CheckContent): Promise<CheckResult> {
    const facts = analyseHtml(content.html, content.unsubscribeUrl);
    const toFetch = facts.links.slice(0, LINKS_MAX);
    const [links, spam] = await Promise.all([
      this.deps.links.check(toFetch),
      this.deps.spam.score({
        from: content.from,
        to: content.to,
        replyTo: content.replyTo,
        subject: content.subject,
        html: content.html,
        text: content.text,
        messageId: content.messageId,
        listUnsubscribeUrl: content.unsubscribeRequired ? content.unsubscribeUrl : "",
        date: this.deps.clock.now(),
      }),
    ]);
    const htmlBytes = Buffer.byteLength(content.html, "utf8");
    const textChars = content.text.replace(/\s+/g, " ").trim().length;
    const result: CheckResult = {
      spam,
      size: { htmlBytes, clipped: htmlBytes > GMAIL_CLIP_BYTES },
      links,
      images: facts.images,
      text: { present: textChars > 0, generated: !content.textGiven, chars: textChars },
      unsubscribe: { required: content.unsubscribeRequired, found: facts.unsubscribeLink },
      warnings: [],
      errors: [],
    };
    for (const finding of findingsOf(content, result, facts.textChars, facts.links.length - toFetch.length)) {
      (finding.level === "error" ? result.errors : result.warnings).push(finding);
    }
    return result;
  }
}

/** Every finding of a check, in the order a reader meets them: the envelope, the body, its links and images, spam. */
export function findingsOf(content: CheckContent, result: CheckResult, visibleChars: number, linksLeftOut: number): Finding[] {
  const out: Finding[] = [];
  const warn = (code: string, where: string, message: string) => out.push({ level: "warning", code, message, where });
  const fail = (code: string, where: string, message: string) => out.push({ level: "error", code, message, where });

  const subject = [...content.subject.trim()].length;
  if (subject === 0) fail("subject_missing", "subject", "The subject is empty.");
  else if (subject > SUBJECT_MAX_CHARS) warn("subject_long", "subject", `The subject has ${subject} characters; most inboxes cut it after about ${SUBJECT_MAX_CHARS} (phones sooner).`);
  const preview = [...content.previewText.trim()].length;
  if (preview > PREVIEW_TEXT_MAX_CHARS) warn("preview_text_long", "preview_text", `The preview text has ${preview} characters; inboxes show at most about ${PREVIEW_TEXT_MAX_CHARS}.`);

  if (result.size.clipped) {
    warn("html_clipped", "html", `The HTML is ${(result.size.htmlBytes / 1024).toFixed(1)} KB; Gmail clips messages over 102 KB behind "View entire message", hiding what comes after (the unsubscribe link too).`);
  }
  if (result.unsubscribe.required && !result.unsubscribe.found) {
    fail("unsubscribe_missing", "html", "The HTML has no unsubscribe link: bulk mail must offer one (Gmail and Yahoo require it). Link {{ unsubscribeUrl }} somewhere the reader sees it, or leave it out and Mailroom adds its footer.");
  }
  if (!result.text.present) warn("text_missing", "text", "The message has no plain-text part with text in it: some readers and filters only read that part. Write one, or give the HTML some text to generate it from.");
  const images = result.images.length;
  if (images > 0 && visibleChars < Math.max(TEXT_CHARS_MIN_WITH_IMAGES, TEXT_CHARS_PER_IMAGE * images)) {
    warn("image_heavy", "html", `The message is mostly image: ${images} image${images === 1 ? "" : "s"} and ${visibleChars} characters of text. Filters distrust image-only mail and many readers load no images; say it in words too.`);
  }

  for (const link of result.links) {
    if (link.unchecked) linksLeftOut++;
    else if (link.refused) warn("link_refused", link.url, `Not checked: ${link.error ?? "its address is not public"}. Readers outside that network cannot open it.`);
    else if (link.status >= 400) fail("link_broken", link.url, `The link answers HTTP ${link.status}${link.redirects.length ? ` (at ${link.finalUrl}, after ${link.redirects.length} redirect${link.redirects.length === 1 ? "" : "s"})` : ""}.`);
    // No answer at all (a name that does not resolve here, a timeout) may be this server's network, not the link: a warning.
    else if (link.status === 0 || link.error) warn("link_unreachable", link.url, `The link could not be opened from this server: ${link.error ?? "no answer"}.`);
  }
  if (linksLeftOut > 0) warn("links_not_checked", "html", `${linksLeftOut} link${linksLeftOut === 1 ? " was" : "s were"} not checked: a check fetches up to ${LINKS_MAX}, for up to ${LINK_CHECK_SECONDS} seconds. Check again: links answered before are remembered for an hour.`);
  for (const image of result.images) {
    if (image.alt === undefined) warn("image_missing_alt", image.src || "html", "The image has no alt attribute: readers with images off (or a screen reader) get nothing in its place. Describe it, or write alt=\"\" for decoration.");
  }

  const spam = result.spam;
  if (spam.scored) {
    const top = [...spam.rules].filter((r) => r.score > 0).sort((a, b) => b.score - a.score).slice(0, 3).map((r) => `${r.name} ${r.score}`).join(", ");
    if (spam.score >= spam.required) fail("spam_score_high", "spam", `SpamAssassin scores the message ${spam.score} (spam from ${spam.required})${top ? `: ${top}` : ""}.`);
    else if (spam.score >= spam.required / 2) warn("spam_score", "spam", `SpamAssassin scores the message ${spam.score} of the ${spam.required} that makes spam${top ? `: ${top}` : ""}.`);
  } else if (spam.failed) {
    warn("spam_check_failed", "spam", spam.skipped);
  }
  return out;
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf("@") + 1) || "mailroom.invalid";
}
