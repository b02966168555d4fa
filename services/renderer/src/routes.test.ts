import { memoryTransport } from "@mailroom/kit/connect.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { ConnectError, createClient, type Client } from "@connectrpc/connect";
import {
  CompileRequestSchema,
  ContentKind,
  RendererService,
} from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { connectClient, startConnectServer, type ConnectServer } from "@mailroom/kit/connect.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { createLogger } from "@mailroom/kit/logger.js";
import { rendererRoutes } from "./routes.js";
import { Renderer } from "./domain/renderer.js";
import { parseRecipientToken, verifyClick } from "@mailroom/content/tokens.js";

const deps = { secret: "routes-secret-0123456789", publicUrl: "https://pub.test" };
const content = create(CompileRequestSchema, {
  html: '<body><h1>Hi {{firstName}}</h1><a href="https://x.test/?a=1">go</a></body>',
  subject: "Hello {{ firstName }}",
  previewText: "News for {{plan}}",
  trackClicks: true,
  trackOpens: true,
  kind: ContentKind.BROADCAST,
  contentId: "cmp_r",
  workspaceId: "ws_r",
});

async function expectAppError(call: Promise<unknown>, code: string, httpStatus: number) {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  expect(errorInfoOf(err)).toMatchObject({ code, httpStatus });
}

function contract(name: string, getClient: () => Client<typeof RendererService>) {
  describe(name, () => {
    it("DetectVariables classifies known and unknown names", async () => {
      const res = await getClient().detectVariables({
        html: "{{firstName}} {{company}} {{unsubscribeUrl}}",
        subject: "{{plan}}",
        previewText: "{{ nope }}",
        customProperties: ["plan"],
      });
      expect(res.detected).toEqual(["plan", "nope", "firstName", "company", "unsubscribeUrl"]);
      expect(res.unknown).toEqual(["nope", "company"]);
    });

    it("Compile returns segments and signed links; Render merges a recipient from them", async () => {
      const { compiled } = await getClient().compile(content);
      expect(compiled?.links.map((l) => l.url)).toEqual(["https://x.test/?a=1"]);
      expect(compiled?.unsubscribeFooterAdded).toBe(true);
      const res = await getClient().render({
        source: { case: "compiled", value: compiled! },
        variables: { firstName: "Ann & Bo", plan: "pro" },
        recipientEmail: "ann@x.test",
        contactId: "ct_1",
        messageId: "m1@x",
      });
      expect(res.subject).toBe("Hello Ann & Bo");
      expect(res.previewText).toBe("News for pro");
      expect(res.html).toContain("<h1>Hi Ann &amp; Bo</h1>");
      expect(res.listUnsubscribeUrl).toBe(res.unsubscribeUrl);
      expect(res.manageUrl).toBe(`${res.unsubscribeUrl}?manage=1`);
      expect(parseRecipientToken(deps.secret, res.unsubscribeUrl.split("/u/")[1])).toMatchObject({ email: "ann@x.test", workspaceId: "ws_r" });
      const m = res.html.match(/https:\/\/pub\.test\/t\/c\/([\w.-]+)\/([\w.-]+)/);
      expect(verifyClick(deps.secret, m![1], m![2])?.link.url).toBe("https://x.test/?a=1");
      expect(res.text).toContain("Hi Ann & Bo");
    });

    it("Render compiles and merges content in one call", async () => {
      const res = await getClient().render({ source: { case: "content", value: content }, recipientEmail: "b@x.test", messageId: "m2" });
      expect(res.subject).toBe("Hello ");
      expect(res.html).toMatch(/<img src="https:\/\/pub\.test\/t\/o\/[\w.-]+"/);
    });

    it("maps bad input to 4xx errors with codes", async () => {
      await expectAppError(getClient().compile({ ...content, html: "x".repeat(500 * 1024 + 1) }), "html_too_large", 413);
      await expectAppError(getClient().compile({ ...content, contentId: "" }), "content_id_required", 400);
      await expectAppError(getClient().render({ recipientEmail: "a@x.test" }), "source_required", 400);
      await expectAppError(
        getClient().render({ source: { case: "compiled", value: { html: { segments: [{ part: { case: "link", value: 9 } }] } } } }),
        "invalid_compiled_message",
        400,
      );
    });
  });
}

let server: ConnectServer;
let httpClient: Client<typeof RendererService>;
beforeAll(async () => {
  server = await startConnectServer({ routes: rendererRoutes(new Renderer(deps)), port: 0, logger: createLogger("renderer-test", "silent") });
  httpClient = connectClient(RendererService, server.url);
});
afterAll(() => server?.close());

contract("renderer over a real Connect server (HTTP, port 0)", () => httpClient);
const memoryClient = createClient(RendererService, memoryTransport(rendererRoutes(new Renderer(deps))));
contract("renderer over an in-memory router transport", () => memoryClient);

describe("health", () => {
  it("answers /healthz", async () => {
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
  });
});
