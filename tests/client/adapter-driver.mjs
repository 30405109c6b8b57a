// Drives boxd with the real sync client's own code: the parallelsandbox-mcp
// adapter as installed from the npm registry into tests/client/node_modules
// (npm ci; pinned in package.json and package-lock.json). Nothing of the
// adapter is copied here: at run time this script reads the installed
// index.mjs, adds one export line naming what the module keeps private
// (COMPARE_SCRIPT, entryHash, gitFileList, splitNul, upload), and imports
// that copy with PSBX_ADAPTER_NO_CONNECT, the module's own switch for
// loading it without connecting anywhere.
//
// What stands in for the control plane is small and says what it does:
//   - POST /v1/boxes/{id}/sync?dest=D (the adapter's upload) is passed to
//     boxd's POST /v1/sync/upload?dest=D as it arrives (the body is never
//     held whole), and boxd's answer back the moment it comes; an error's
//     message goes where the adapter reads it ({"error": "MESSAGE (CODE)"},
//     as docs/api.md asks of the control plane);
//   - sandbox_exec (the adapter's compare, run in the box) is boxd's
//     POST /v1/exec with the same command line;
//   - /work in the adapter's command line is boxd's work dir.
//
//   node adapter-driver.mjs check
//   node adapter-driver.mjs pair '{"socket","workDir","src","dest","sync":bool}'
//   node adapter-driver.mjs sync '{"socket","src","dest"}'
//
// `pair` prints one JSON line: the adapter's manifest size, its compare's
// answer, boxd's native answer for the same manifest, and with "sync" the
// result of a sync through the native path (native diff, the adapter's
// upload) and both answers again afterwards. `sync` prints the result of
// that sync alone and how long it took (`ms`).
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync, lstatSync } from "node:fs";
import { createServer, request } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { fileURLToPath, pathToFileURL } from "node:url";

const PINNED = "0.2.4";
const here = dirname(fileURLToPath(import.meta.url));

function fail(message) {
  console.error(`adapter-driver: ${message}`);
  process.exit(2);
}

function locate() {
  const require = createRequire(join(here, "package.json"));
  let packageJson;
  try {
    packageJson = require.resolve("parallelsandbox-mcp/package.json");
  } catch {
    fail(`parallelsandbox-mcp is not installed in ${here}/node_modules (run npm ci there)`);
  }
  const meta = JSON.parse(readFileSync(packageJson, "utf8"));
  if (meta.version !== PINNED) fail(`parallelsandbox-mcp ${meta.version} is installed, the tests pin ${PINNED}`);
  return dirname(packageJson);
}

// boxd over its unix socket.
function boxd(socket, method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, method, path, headers: { ...headers, "Content-Length": body ? body.length : 0 } }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

// The control plane's sync endpoint, as far as the adapter's upload needs it.
function startControl(socket) {
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://control");
    if (req.method !== "POST" || !/^\/v1\/boxes\/[^/]+\/sync$/.test(url.pathname)) {
      req.resume();
      res.writeHead(404).end("{}");
      return;
    }
    const upstream = request({
      socketPath: socket, method: "POST",
      path: `/v1/sync/upload?dest=${encodeURIComponent(url.searchParams.get("dest"))}`,
      headers: { "Content-Type": req.headers["content-type"] || "application/gzip", "Transfer-Encoding": "chunked" },
    });
    upstream.on("response", (answer) => {
      const chunks = [];
      answer.on("data", (c) => chunks.push(c));
      answer.on("end", () => {
        let body = Buffer.concat(chunks);
        if (answer.statusCode >= 400) {
          const error = JSON.parse(body.toString()).error;
          body = Buffer.from(JSON.stringify({ error: `${error.message} (${error.code})` }));
        }
        res.writeHead(answer.statusCode, { "Content-Type": "application/json" }).end(body);
      });
    });
    // Once boxd has answered, what becomes of the rest of the body is boxd's to say.
    upstream.on("error", (err) => {
      if (!res.headersSent) res.writeHead(502).end(JSON.stringify({ error: String(err) }));
    });
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

async function loadAdapter(dir, apiUrl) {
  const source = readFileSync(join(dir, "index.mjs"), "utf8");
  for (const needed of ["const COMPARE_SCRIPT =", "function entryHash(", "function gitFileList(", "function splitNul(", "async function upload("])
    if (!source.includes(needed)) fail(`the installed index.mjs has no ${needed}: not the module these tests know`);
  process.env.PARALLELSANDBOX_API_KEY = "psbx_test";
  process.env.PARALLELSANDBOX_API_URL = apiUrl;
  process.env.PSBX_ADAPTER_NO_CONNECT = "1";
  const copy = join(dir, `.boxd-driver-${process.pid}.mjs`);
  writeFileSync(copy, `${source}\nexport { COMPARE_SCRIPT, entryHash, gitFileList, splitNul, upload };\n`);
  try {
    return await import(pathToFileURL(copy).href);
  } finally {
    unlinkSync(copy);
  }
}

// syncFrom's selection and manifest, line for line (index.mjs, git branch).
function manifestOf(adapter, src) {
  const fileList = adapter.gitFileList(src);
  if (!fileList) fail(`${src} is not a git working tree`);
  const srcPrefix = Buffer.from(src.endsWith("/") ? src : `${src}/`);
  const onDisk = (rel) => {
    try {
      lstatSync(Buffer.concat([srcPrefix, rel]));
      return true;
    } catch {
      return false;
    }
  };
  const paths = adapter.splitNul(fileList).filter(onDisk);
  const manifest = [];
  const always = [];
  for (const rel of paths) {
    const hash = adapter.entryHash(Buffer.concat([srcPrefix, rel]));
    if (hash) manifest.push(`${hash} ${rel.toString("hex")}`);
    else always.push(rel);
  }
  return { paths, manifest, always };
}

// compareOnBox, with sandbox_exec carried out by boxd's exec.
async function adapterCompare(adapter, socket, workDir, dest, manifest) {
  const nonce = randomBytes(6).toString("hex");
  const stage = mkdtempSync(join(tmpdir(), "psbx-sync-"));
  let sent;
  try {
    writeFileSync(join(stage, "manifest"), manifest.join("\n"));
    writeFileSync(join(stage, "compare.mjs"), adapter.COMPARE_SCRIPT);
    sent = await adapter.upload("box", `.psbx-sync/${nonce}`, stage, null);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  if (sent.error) throw new Error(`staging the compare: ${sent.error}`);
  const dir = `${workDir}/.psbx-sync/${nonce}`;
  const shellQuote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
  const cmd = `node ${dir}/compare.mjs ${dir}/manifest ${shellQuote(`${workDir}/${dest}`)} 400`;
  const res = await boxd(socket, "POST", "/v1/exec", Buffer.from(JSON.stringify({ cmd, timeoutSec: 300, note: "compare" })),
    { "Content-Type": "application/json" });
  const run = JSON.parse(res.body.toString());
  if (res.status !== 200 || run.exitCode !== 0) throw new Error(`compare failed: ${res.body.toString()}`);
  return JSON.parse(run.stdout.trim().split("\n").pop());
}

async function nativeCompare(socket, dest, manifest) {
  const res = await boxd(socket, "POST", `/v1/sync/diff?dest=${encodeURIComponent(dest)}&limit=400`, Buffer.from(manifest.join("\n")),
    { "Content-Type": "text/plain" });
  const answer = JSON.parse(res.body.toString());
  if (res.status !== 200) throw new Error(`native diff ${res.status}: ${res.body.toString()}`);
  return answer;
}

// syncFrom's git branch with the native diff in place of compareOnBox.
async function syncNative(adapter, socket, src, dest) {
  const { paths, manifest, always } = manifestOf(adapter, src);
  const verdict = await nativeCompare(socket, dest, manifest);
  const send = verdict.all ? paths : [...verdict.changed.map((hex) => Buffer.from(hex, "hex")), ...always];
  if (!send.length) return { ok: true, sentFiles: 0 };
  const sent = await adapter.upload("box", dest, src, Buffer.concat(send.flatMap((p) => [p, Buffer.from([0])])), "");
  return sent.error ? { ok: false, error: sent.error, sentFiles: send.length } : { ok: true, sentFiles: send.length, bytes: sent.bytes };
}

const [command, argument] = process.argv.slice(2);
const dir = locate();
if (command === "check") {
  console.log(JSON.stringify({ ok: true, version: PINNED, dir }));
  process.exit(0);
}
if (command !== "pair" && command !== "sync") fail("usage: adapter-driver.mjs check | pair JSON | sync JSON");
const { socket, workDir, src, dest, sync } = JSON.parse(argument);
const control = await startControl(socket);
try {
  const adapter = await loadAdapter(dir, `http://127.0.0.1:${control.address().port}`);
  if (command === "sync") {
    const started = Date.now();
    const result = await syncNative(adapter, socket, src, dest);
    console.log(JSON.stringify({ ...result, ms: Date.now() - started }));
  } else {
    const { manifest } = manifestOf(adapter, src);
    const out = { entries: manifest.length };
    out.adapter = await adapterCompare(adapter, socket, workDir, dest, manifest);
    out.native = await nativeCompare(socket, dest, manifest);
    if (sync) {
      out.sync = await syncNative(adapter, socket, src, dest);
      const after = manifestOf(adapter, src).manifest;
      out.adapterAfter = await adapterCompare(adapter, socket, workDir, dest, after);
      out.nativeAfter = await nativeCompare(socket, dest, after);
    }
    console.log(JSON.stringify(out));
  }
} finally {
  control.close();
}
