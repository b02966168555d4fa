/**
 * An automation's email is lifecycle mail to a contact, so it carries what a broadcast carries
 * (Gmail / Yahoo bulk-sender rules, CAN-SPAM): the unsubscribe footer and the RFC 8058
 * List-Unsubscribe / List-Unsubscribe-Post pair, on the same signed one-click URL. A mail
 * client's one-click POST unsubscribes the contact, so the run exits before its next send. A
 * transactional API email (POST /v1/emails) stays without either. Real processes, the SMTP
 * sink; the received MIME is read as a mail client reads it (postal-mime).
 */
import PostalMime, { type Email } from "postal-mime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestSystem } from "../harness/system.js";
import { automations, SENDER, sleep, startAutomationSystem, stepsById, until, waitingIn, workspace } from "./support.js";

const SERIES = "ws_auto_unsub";
const OWN_LINK = "ws_auto_unsub_own";
const FOOTER = /You are receiving this email/;

/** The received messages to one address, parsed, in arrival order. */
const parsedTo = (sys: TestSystem, address: string): Promise<Email[]> =>
  Promise.all(sys.sink!.messages.filter((m) => m.to.includes(address)).map((m) => PostalMime.parse(m.raw)));
const header = (mail: Email, name: string) => mail.headers.find((h) => h.key === name)?.value;

/** The https (here the harness's http) one-click URL and the mailto of a List-Unsubscribe value. */
function listUnsubscribeParts(value: string | undefined) {
  const m = /^<(https?:\/\/[^>]+)>, <(mailto:[^>]+)>$/.exec(value ?? "");
  if (!m) throw new Error(`unexpected List-Unsubscribe: ${value}`);
  return { oneClick: m[1]!, mailto: m[2]! };
}

describe("an automation's email offers an unsubscribe (real processes)", () => {
  let sys: TestSystem;

  beforeAll(async () => {
    sys = await startAutomationSystem([
      workspace(SERIES, ["hello", "later", "receipt"]),
      workspace(OWN_LINK, [], {
        templates: [{
          name: "own-link", subject: "Own link for {{firstName}}", fromEmail: SENDER, fromName: "Acme",
          html: '<body><p>Hi {{firstName}}</p><p><a href="{{unsubscribeUrl}}">Leave</a> · <a href="{{manageUrl}}">Preferences</a></p></body>',
        }],
      }),
    ]);
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("footer and List-Unsubscribe on one one-click URL; the mail client's POST unsubscribes the contact and the run exits before its next send", async () => {
    const auto = automations(sys, SERIES);
    const automation = await auto.active({
      name: "Series", trigger: { type: "contact_created" },
      // 5 s: long enough to unsubscribe while the run waits, on a loaded machine too.
      steps: [{ id: "hello", type: "send", template: "hello" }, { id: "w", type: "wait", duration: "PT5S" }, { id: "later", type: "send", template: "later" }],
    });
    const contact = await auto.contact("pia@unsub.test", "Pia");
    // A transactional email from the same template, through the public API: no footer, no header.
    const receipt = await auto.api("POST", "/v1/emails", { to: "buyer@unsub.test", template: "receipt", variables: { firstName: "Bo" } });
    expect(receipt.status, JSON.stringify(receipt.body)).toBe(200);

    const [hello] = await until("the first send arrives", () => parsedTo(sys, "pia@unsub.test"), (m) => m.length >= 1, 15_000);
    expect(hello!.subject).toBe("hello for Pia");
    const { oneClick, mailto } = listUnsubscribeParts(header(hello!, "list-unsubscribe"));
    expect(header(hello!, "list-unsubscribe-post")).toBe("List-Unsubscribe=One-Click");
    expect(oneClick.startsWith(`${sys.publicUrl}/u/`)).toBe(true);
    // The mailto names the same token (in the local part, or the subject when too long for one).
    const token = oneClick.slice(`${sys.publicUrl}/u/`.length);
    expect(mailto).toMatch(/^mailto:unsubscribe/);
    expect(mailto).toContain(token);
    // The footer links the very same URL, and the manage page beside it, in HTML and text.
    expect(hello!.html).toMatch(FOOTER);
    expect(hello!.html).toContain(`href="${oneClick}"`);
    expect(hello!.html).toContain(`href="${oneClick}?manage=1"`);
    expect(hello!.text).toContain(oneClick);

    const [tx] = await until("the receipt arrives", () => parsedTo(sys, "buyer@unsub.test"), (m) => m.length >= 1, 15_000);
    expect(tx!.subject).toBe("receipt for Bo");
    expect(header(tx!, "list-unsubscribe")).toBeUndefined();
    expect(header(tx!, "list-unsubscribe-post")).toBeUndefined();
    expect(`${tx!.html}\n${tx!.text}`).not.toMatch(FOOTER);
    expect(tx!.html).not.toContain(`${sys.publicUrl}/u/`);

    await until("the run waits", () => auto.runs(automation.id), (r) => waitingIn(r[0], "w"));
    // What a mailbox provider sends on the user's click (RFC 8058): POST, form-encoded, no cookies.
    const res = await fetch(oneClick, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    expect(res.status).toBe(200);

    const got = await auto.api("GET", `/v1/contacts/${contact.id}`);
    expect(got.body.contact?.properties?.status).toBe("UNSUBSCRIBED");
    const [run] = await until("the run EXITED", () => auto.runs(automation.id), (r) => r[0]?.status === "EXITED", 10_000);
    expect(run.exitReason).toBe("unsubscribed");
    expect(stepsById(run).later).toBeUndefined();
    // The unsubscribe shows on the email it came through.
    const emailId = stepsById(run).hello.emailId;
    expect(emailId).toMatch(/^trs_/);
    const email = await until("the email shows the unsubscribe", async () => (await auto.api("GET", `/v1/emails/${emailId}`)).body.email, (e) => Boolean(e?.events?.unsubscribedAt), 10_000);
    expect(email.lastEvent?.type).toBe("UNSUBSCRIBED");
    // Past the end of the wait: still only the first message.
    await sleep(5_500);
    expect((await parsedTo(sys, "pia@unsub.test")).map((m) => m.subject)).toEqual(["hello for Pia"]);
    expect((await auto.stats(automation.id)).steps.find((s: any) => s.stepId === "later").entered).toBe(0);
  }, 60_000);

  it("a template that links {{unsubscribeUrl}} and {{manageUrl}} itself gets no footer, and the header names the same URL", async () => {
    const auto = automations(sys, OWN_LINK);
    await auto.active({ name: "Own", trigger: { type: "contact_created" }, steps: [{ id: "s", type: "send", template: "own-link" }] });
    await auto.contact("own@unsub.test", "Olga");
    const [mail] = await until("the send arrives", () => parsedTo(sys, "own@unsub.test"), (m) => m.length >= 1, 15_000);
    const { oneClick } = listUnsubscribeParts(header(mail!, "list-unsubscribe"));
    expect(header(mail!, "list-unsubscribe-post")).toBe("List-Unsubscribe=One-Click");
    expect(mail!.html).not.toMatch(FOOTER);
    expect(mail!.html).toContain(`<a href="${oneClick}">Leave</a> · <a href="${oneClick}?manage=1">Preferences</a>`);
    // The manage link opens this recipient's page (GET never unsubscribes: link scanners prefetch).
    const page = await fetch(`${oneClick}?manage=1`, { headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("own@unsub.test");
  }, 40_000);
});
