// Tool approval and WebMCP-shaped tools (issue #21) through the built package in Chromium, with the bundled
// model: a tool that needs approval runs only after the page's `approve` says yes (approved, declined,
// thrown, aborted while waiting, no approver, decided per call), on the page and in worker mode; tools in
// WebMCP's `{ name, description, inputSchema, execute, annotations }` shape register beside `(spec, fn)`,
// and `useModelContext` follows a model context (a small polyfill of `document.modelContext` here).
// The runs name the tool in `toolChoice`, so the model's first message is a call whatever it would choose.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { browserFor } from "./harness.mjs";

// In the page: an agent on the bundled model with a destructive tool whose calls are counted.
function approvalHelpers() {
  window.makeAgent = async ({ worker = false, needsApproval = true, approve } = {}) => {
    const { createAgent } = await import("/pkg/index.js");
    const agent = await createAgent({
      model: { bundle: "/models/wisp-mini/manifest.json" },
      load: { backend: "cpu" },
      worker,
      approve,
      system: "You are a helpful assistant.",
      maxSteps: 2,
    });
    const ran = [];
    agent.tool(
      {
        name: "delete_files",
        description: "Delete the user's files under a path.",
        parameters: { type: "object", properties: { path: { type: "string", maxLength: 12 } }, required: ["path"] },
        needsApproval,
      },
      (args) => (ran.push(args), { deleted: 3 }),
    );
    return { agent, ran };
  };
  window.collect = async (agent, input, options = {}) => {
    const events = [];
    const outcome = await agent.run(input, { toolChoice: "delete_files", ...options, onEvent: (e) => events.push(e) }).then(
      (r) => ({ finishReason: r.finishReason, toolCalls: r.toolCalls.length }),
      (e) => ({ error: { name: e?.name, code: e?.code, message: e?.message } }),
    );
    return { events, outcome, types: events.map((e) => e.type) };
  };
}

const helpers = { helpers: approvalHelpers };

describe("tool approval", () => {
  const browser = browserFor(helpers);

  test("approved: the page is asked with the call, then the tool runs", async () => {
    const r = await browser.page.evaluate(async () => {
      const asked = [];
      const { agent, ran } = await makeAgent({ approve: (call) => (asked.push(call), true) });
      const out = await collect(agent, "Delete my downloads.");
      agent.close();
      return { ...out, asked, ran };
    });
    assert.equal(r.outcome.error, undefined, JSON.stringify(r.outcome));
    const approval = r.events.find((e) => e.type === "tool_approval");
    assert.equal(approval.name, "delete_files");
    assert.deepEqual(r.asked[0], { id: approval.id, name: "delete_files", arguments: approval.arguments });
    assert.ok(r.types.indexOf("tool_approval") < r.types.indexOf("tool_result"), r.types.join(","));
    assert.equal(r.ran.length, r.asked.length);
    assert.deepEqual(r.ran[0], approval.arguments);
  });

  test("declined: the tool never runs, the model reads that the user declined, and the run ends normally", async () => {
    const r = await browser.page.evaluate(async () => {
      const { agent, ran } = await makeAgent({ approve: () => false });
      const out = await collect(agent, "Delete my downloads.");
      const messages = agent.messages;
      agent.close();
      return { ...out, ran, tool: messages.find((m) => m.role === "tool") };
    });
    assert.equal(r.outcome.error, undefined, JSON.stringify(r.outcome));
    assert.deepEqual(r.ran, []);
    const declined = r.events.find((e) => e.type === "tool_error");
    assert.equal(declined.declined, true);
    assert.equal(declined.error, "the user declined this call");
    assert.equal(r.tool.content, "error: the user declined this call");
    assert.equal(r.types.at(-1), "final");
  });

  test("no approver: the call is declined, never run", async () => {
    const r = await browser.page.evaluate(async () => {
      const { agent, ran } = await makeAgent();
      const out = await collect(agent, "Delete my downloads.");
      agent.close();
      return { ...out, ran };
    });
    assert.deepEqual(r.ran, []);
    assert.match(r.events.find((e) => e.type === "tool_error").error, /no approver/);
  });

  test("an approver that throws fails the run with APPROVAL_FAILED, undone, and the agent stays usable", async () => {
    const r = await browser.page.evaluate(async () => {
      const { agent, ran } = await makeAgent({
        approve: () => {
          throw new Error("the dialog broke");
        },
      });
      const before = agent.messages.length;
      const failed = await collect(agent, "Delete my downloads.");
      const after = agent.messages.length;
      const again = await collect(agent, "Delete my downloads.", { approve: () => true });
      agent.close();
      return { failed, before, after, again, ran };
    });
    assert.equal(r.failed.outcome.error.code, "APPROVAL_FAILED");
    assert.match(r.failed.outcome.error.message, /the dialog broke/);
    assert.equal(r.after, r.before, "the failed run was undone");
    assert.equal(r.again.outcome.error, undefined);
    assert.ok(r.ran.length >= 1, "the approved run ran the tool");
  });

  test("aborted while waiting for approval: the run rejects with the reason and the tool never runs", async () => {
    const r = await browser.page.evaluate(async () => {
      const controller = new AbortController();
      const { agent, ran } = await makeAgent({
        approve: () => {
          setTimeout(() => controller.abort(new Error("the user closed the tab")), 50);
          return new Promise(() => {});
        },
      });
      const out = await collect(agent, "Delete my downloads.", { signal: controller.signal });
      const messages = agent.messages.length;
      agent.close();
      return { ...out, ran, messages };
    });
    assert.equal(r.outcome.error.message, "the user closed the tab");
    assert.deepEqual(r.ran, []);
    assert.ok(r.types.includes("tool_approval"));
    assert.equal(r.messages, 1, "only the system message is left");
  });

  test("needsApproval as a function decides per call, from the arguments", async () => {
    const r = await browser.page.evaluate(async () => {
      const seen = [];
      const asked = [];
      const { agent, ran } = await makeAgent({ needsApproval: (args) => (seen.push(args), false), approve: (c) => (asked.push(c), true) });
      const free = await collect(agent, "Delete my downloads.");
      agent.close();
      const second = await makeAgent({ needsApproval: async () => true, approve: (c) => (asked.push(c), true) });
      const gated = await collect(second.agent, "Delete my downloads.");
      second.agent.close();
      return { free: free.types, gated: gated.types, seen, asked: asked.length, ran: ran.length, ranGated: second.ran.length };
    });
    assert.ok(r.seen.length >= 1 && typeof r.seen[0].path === "string");
    assert.ok(!r.free.includes("tool_approval"));
    assert.equal(r.ran, r.seen.length);
    assert.ok(r.gated.includes("tool_approval"));
    assert.equal(r.asked, r.ranGated);
  });

  test("worker mode: the approval is asked on the page, and a declined call never runs", async () => {
    const r = await browser.page.evaluate(async () => {
      const asked = [];
      const { agent, ran } = await makeAgent({ worker: true, approve: (c) => (asked.push(c.name), false) });
      const out = await collect(agent, "Delete my downloads.");
      agent.close();
      return { ...out, asked, ran };
    });
    assert.equal(r.outcome.error, undefined, JSON.stringify(r.outcome));
    assert.ok(r.asked.length >= 1);
    assert.deepEqual(r.ran, []);
    assert.equal(r.events.find((e) => e.type === "tool_error").declined, true);
  });

  test("bad approval options are coded errors", async () => {
    const r = await browser.page.evaluate(async () => {
      const { agent } = await makeAgent();
      const out = {
        runApprove: (await collect(agent, "hi", { approve: "yes" })).outcome.error.code,
        needsApproval: await attempt(() => agent.tool({ name: "t", parameters: { type: "object" }, needsApproval: "always" }, () => 1)),
        unknownField: await attempt(() => agent.tool({ name: "t", parameters: { type: "object" }, needsAproval: true }, () => 1)),
      };
      agent.close();
      out.createAgent = await attempt(async () => {
        const { createAgent } = await import("/pkg/index.js");
        await createAgent({ model: { bundle: "/models/wisp-mini/manifest.json" }, load: { backend: "cpu" }, approve: 1 });
      });
      return out;
    });
    assert.equal(r.runApprove, "INVALID_REQUEST");
    assert.equal(r.needsApproval.code, "INVALID_TOOL");
    assert.equal(r.unknownField.code, "INVALID_TOOL");
    assert.match(r.unknownField.message, /unknown field 'needsAproval'/);
    assert.equal(r.createAgent.code, "INVALID_REQUEST");
  });
});

describe("WebMCP-shaped tools", () => {
  const browser = browserFor(helpers);

  test("{ name, description, inputSchema, execute, annotations } registers; readOnlyHint false asks first", async () => {
    const r = await browser.page.evaluate(async () => {
      const { agent } = await makeAgent();
      const ran = [];
      const asked = [];
      const tool = (name, annotations, extra = {}) => ({
        name,
        description: `The ${name} tool.`,
        inputSchema: { type: "object", properties: { text: { type: "string", maxLength: 10 } }, required: ["text"] },
        execute: (input) => (ran.push(name), { ok: input.text.length }),
        annotations,
        ...extra,
      });
      agent.tool(tool("erase_note", { readOnlyHint: false }));
      agent.tool(tool("read_note", { readOnlyHint: true }));
      agent.tool(tool("touch_note", { readOnlyHint: false }, { needsApproval: false }));
      const approve = (c) => (asked.push(c.name), true);
      for (const name of ["erase_note", "read_note", "touch_note"]) await collect(agent, "Do it.", { toolChoice: name, approve, maxSteps: 1 });
      agent.close();
      return { ran, asked };
    });
    assert.deepEqual(r.asked, ["erase_note"]);
    assert.deepEqual(r.ran, ["erase_note", "read_note", "touch_note"]);
  });

  test("useModelContext takes the context's tools and follows registerTool, unregister, provideContext; stop ends it", async () => {
    const r = await browser.page.evaluate(async () => {
      // A small polyfill of WebMCP's ModelContext: registerTool returns { unregister }.
      const tools = new Map();
      const context = {
        registerTool(tool) {
          tools.set(tool.name, tool);
          return { unregister: () => tools.delete(tool.name) };
        },
        unregisterTool(name) {
          tools.delete(name);
        },
        provideContext({ tools: list = [] }) {
          tools.clear();
          for (const t of list) tools.set(t.name, t);
        },
        clearContext() {
          tools.clear();
        },
        getTools() {
          return [...tools.values()];
        },
      };
      Object.defineProperty(document, "modelContext", { value: context, configurable: true });
      const ran = [];
      const tool = (name) => ({
        name,
        description: `The ${name} tool.`,
        inputSchema: { type: "object", properties: {} },
        execute: () => (ran.push(name), "done"),
      });
      context.registerTool(tool("before"));
      const { agent } = await makeAgent();
      const stop = agent.useModelContext();
      const registration = context.registerTool(tool("after"));
      context.registerTool(tool("dropped"));
      context.unregisterTool("dropped");
      const call = async (name) => {
        const r = await collect(agent, "Go.", { toolChoice: name, maxSteps: 1 });
        return r.outcome.error?.code ?? "ran";
      };
      const out = { before: await call("before"), after: await call("after"), dropped: await call("dropped") };
      registration.unregister();
      out.unregistered = await call("after");
      context.provideContext({ tools: [tool("provided")] });
      out.provided = await call("provided");
      out.beforeGone = await call("before");
      stop();
      context.registerTool(tool("late"));
      out.late = await call("late");
      agent.close();
      delete document.modelContext;
      return { out, ran };
    });
    assert.deepEqual(r.out, {
      before: "ran",
      after: "ran",
      dropped: "UNKNOWN_TOOL",
      unregistered: "UNKNOWN_TOOL",
      provided: "ran",
      beforeGone: "UNKNOWN_TOOL",
      late: "UNKNOWN_TOOL",
    });
    assert.deepEqual(r.ran, ["before", "after", "provided"]);
  });

  test("without a model context useModelContext is a coded error", async () => {
    const code = await browser.page.evaluate(async () => {
      const { agent } = await makeAgent();
      const got = await attempt(() => agent.useModelContext());
      agent.close();
      return got.code;
    });
    assert.equal(code, "INVALID_REQUEST");
  });
});
