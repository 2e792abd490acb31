// Added to a page by tests/browser/hardening.test.mjs as an ordinary same-origin script, so that the page's
// Content-Security-Policy governs it (code the test runs through the DevTools protocol is exempt). It
// records whether eval, new Function, an inline event handler and an inline script could run.
window.cspProbe = (async () => {
  const out = { violated: [] };
  document.addEventListener("securitypolicyviolation", (e) => out.violated.push(e.effectiveDirective));
  try {
    out.eval = eval("1 + 1");
  } catch (e) {
    out.eval = e.name;
  }
  try {
    out.function = new Function("return 1")();
  } catch (e) {
    out.function = e.name;
  }
  const div = document.createElement("div");
  div.innerHTML = `<img src="${document.currentScript?.src ?? "x"}?img" onload="window.pwned = 1" onerror="window.pwned = 1">`;
  document.body.append(div);
  const script = document.createElement("script");
  script.textContent = "window.pwned2 = 1";
  document.body.append(script);
  await new Promise((resolve) => setTimeout(resolve, 300));
  div.remove();
  out.pwned = [window.pwned ?? null, window.pwned2 ?? null];
  return out;
})();
