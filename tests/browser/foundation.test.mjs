// The built package (pkg/) in headless Chromium with real WebGPU: graphs checked against onnxruntime's
// outputs, and every GPU failure surfacing as a coded rejection.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

const fixture = async (name) =>
  JSON.parse(await readFile(new URL(`../fixtures/${name}.json`, import.meta.url), "utf8"));

const maxAbsDiff = (a, b) => {
  assert.equal(a.length, b.length);
  return a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
};

// Runs a fixture graph in the page; resolves to { output } or { error: { name, code, message } }.
async function runGraph(page, name, fx) {
  return page.evaluate(
    async ([name, inputs]) => {
      const { GraphSession } = await import("/pkg/index.js");
      try {
        const session = await GraphSession.create(`/tests/fixtures/${name}.onnx`);
        const feeds = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, new Float32Array(v.data)]));
        const out = await session.run(feeds);
        session.close();
        return { output: Object.fromEntries(Object.entries(out).map(([k, v]) => [k, { dims: v.dims, data: [...v.data] }])) };
      } catch (e) {
        return { error: { name: e.name, code: e.code, message: e.message, isWispError: e instanceof Error } };
      }
    },
    [name, fx.inputs],
  );
}

describe("wisp-agent package on WebGPU", () => {
  let browser;
  before(async () => {
    browser = await openBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  test("reports the WebGPU adapter", async (t) => {
    const info = await browser.page.evaluate(async () => (await import("/pkg/index.js")).adapterInfo());
    t.diagnostic(`WebGPU adapter: ${info.vendor} / ${info.architecture} / ${info.description} (fallback: ${info.isFallbackAdapter})`);
    assert.ok(info.vendor || info.description, "the adapter names itself");
    assert.ok(info.maxStorageBufferBindingSize >= 128 * 1024 * 1024);
  });

  test("a MatMul graph matches onnxruntime", async () => {
    const fx = await fixture("matmul");
    const result = await runGraph(browser.page, "matmul", fx);
    assert.equal(result.error, undefined, JSON.stringify(result.error));
    assert.deepEqual(result.output.y.dims, fx.outputs.y.dims);
    assert.ok(maxAbsDiff(result.output.y.data, fx.outputs.y.data) <= 1e-4);
    assert.ok(result.output.y.data.some((v) => v !== 0));
  });

  test("a shader Chromium rejects (wonnx's Softmax) fails loudly instead of returning zeros", async (t) => {
    const fx = await fixture("matmul_softmax");
    const result = await runGraph(browser.page, "matmul_softmax", fx);
    assert.equal(result.output, undefined, `stock wonnx output leaked through: ${JSON.stringify(result.output)}`);
    assert.equal(result.error.name, "WispError");
    assert.equal(result.error.code, "GPU_SHADER_COMPILE");
    assert.match(result.error.message, /the GPU rejected a shader: .*line \d+/);
    t.diagnostic(result.error.message);
  });

  test("after a GPU failure the package still runs a correct graph", async () => {
    const fx = await fixture("matmul");
    const result = await runGraph(browser.page, "matmul", fx);
    assert.equal(result.error, undefined, JSON.stringify(result.error));
    assert.ok(maxAbsDiff(result.output.y.data, fx.outputs.y.data) <= 1e-4);
  });

  test("a lost device rejects with GPU_DEVICE_LOST", async () => {
    const fx = await fixture("matmul");
    const codes = await browser.page.evaluate(async (inputs) => {
      const { GraphSession } = await import("/pkg/index.js");
      const session = await GraphSession.create("/tests/fixtures/matmul.onnx");
      const feeds = { a: new Float32Array(inputs.a.data), b: new Float32Array(inputs.b.data) };
      await session.run(feeds);
      session.loseDevice();
      const codes = [];
      for (let i = 0; i < 2; i++) {
        try {
          await session.run(feeds);
          codes.push("resolved");
        } catch (e) {
          codes.push(e.code);
        }
      }
      session.close();
      return codes;
    }, fx.inputs);
    assert.deepEqual(codes, ["GPU_DEVICE_LOST", "GPU_DEVICE_LOST"]);
  });

  test("bad models and bad inputs are named, with codes", async () => {
    const fx = await fixture("matmul");
    const errors = await browser.page.evaluate(async (inputs) => {
      const { GraphSession } = await import("/pkg/index.js");
      const attempt = async (fn) => {
        try {
          await fn();
          return "resolved";
        } catch (e) {
          return { code: e.code, message: e.message };
        }
      };
      const session = await GraphSession.create("/tests/fixtures/matmul.onnx");
      const a = new Float32Array(inputs.a.data);
      const b = new Float32Array(inputs.b.data);
      const out = {
        garbage: await attempt(() => GraphSession.create(new TextEncoder().encode("GGUF not a graph at all"))),
        missingFile: await attempt(() => GraphSession.create("/tests/fixtures/nope.onnx")),
        shortInput: await attempt(() => session.run({ a: a.subarray(1), b })),
        unknownInput: await attempt(() => session.run({ a, b, c: [1] })),
        notNumbers: await attempt(() => session.run({ a: ["x"], b })),
        notAnObject: await attempt(() => session.run(null)),
      };
      out.stillRuns = (await session.run({ a, b })).y.data.length;
      session.close();
      out.closed = await attempt(() => session.run({ a, b }));
      return out;
    }, fx.inputs);
    assert.equal(errors.garbage.code, "INVALID_MODEL");
    assert.equal(errors.missingFile.code, "FETCH_FAILED");
    assert.match(errors.missingFile.message, /HTTP 404/);
    assert.deepEqual(errors.shortInput, {
      code: "INVALID_INPUT",
      message: "invalid input: input 'a' needs 128 values (shape [8, 16]), got 127",
    });
    assert.equal(errors.unknownInput.code, "INVALID_INPUT");
    assert.match(errors.unknownInput.message, /'c'/);
    assert.equal(errors.notNumbers.code, "INVALID_INPUT");
    assert.equal(errors.notAnObject.code, "INVALID_INPUT");
    assert.equal(errors.stillRuns, 96);
    assert.equal(errors.closed.code, "SESSION_CLOSED");
  });
});

describe("wisp-agent package without WebGPU", () => {
  let browser;
  before(async () => {
    browser = await openBrowser();
    // A browser with no WebGPU at all (older Safari, Firefox on Linux, blocklisted GPUs).
    await browser.page.addInitScript(() => {
      delete Navigator.prototype.gpu;
      delete WorkerNavigator.prototype.gpu;
    });
    await browser.page.reload();
  });
  after(async () => {
    await browser?.close();
  });

  test("rejects with WEBGPU_UNAVAILABLE and says why", async () => {
    const errors = await browser.page.evaluate(async () => {
      const { adapterInfo, GraphSession } = await import("/pkg/index.js");
      const codes = [];
      for (const fn of [() => adapterInfo(), () => GraphSession.create("/tests/fixtures/matmul.onnx")]) {
        try {
          await fn();
          codes.push("resolved");
        } catch (e) {
          codes.push({ code: e.code, message: e.message });
        }
      }
      return codes;
    });
    for (const e of errors) {
      assert.equal(e.code, "WEBGPU_UNAVAILABLE");
      assert.match(e.message, /navigator\.gpu is missing/);
    }
  });
});
