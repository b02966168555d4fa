import { afterAll, beforeAll, describe, expect, it } from "vitest";
import nodemailer from "nodemailer";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { startNats, type NatsHandle } from "./nats.js";
import { startSmtpSink, type SmtpSink } from "./smtp-sink.js";

describe("test harness", () => {
  let nats: NatsHandle;
  let sink: SmtpSink;
  beforeAll(async () => {
    [nats, sink] = await Promise.all([startNats(), startSmtpSink()]);
  });
  afterAll(async () => {
    await Promise.all([nats?.stop(), sink?.stop()]);
  });

  it("starts a nats-server with JetStream enabled", async () => {
    const nc = await connect({ servers: nats.url });
    const jsm = await jetstreamManager(nc);
    const info = await jsm.getAccountInfo();
    expect(info.limits).toBeDefined();
    await nc.close();
  });

  it("records accepted mail and answers rejections and drops as told", async () => {
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: sink.port, secure: false, ignoreTLS: true });
    sink.setBehaviour((_raw, attempt) =>
      attempt === 1 ? { kind: "reject", code: 451, message: "try later" } : attempt === 2 ? { kind: "drop" } : { kind: "accept" },
    );
    const mail = { from: "a@example.test", to: "b@example.test", subject: "Hi", text: "hello" };
    await expect(transport.sendMail(mail)).rejects.toMatchObject({ responseCode: 451 });
    await expect(transport.sendMail(mail)).rejects.toThrow();
    await transport.sendMail(mail);
    const [msg] = await sink.waitFor(1);
    expect(msg.to).toEqual(["b@example.test"]);
    expect(msg.raw).toContain("Subject: Hi");
    expect(sink.attempts).toBe(3);
  });
});
