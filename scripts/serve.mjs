// The demo's web server and the lease server, with no dependencies: www/ at
// /, the package's own browser files (js/, pkg/) at /edge-lease/, so the page
// loads edge-lease exactly as a site that ships it would, and a JSON lease API
// at /v1/ (scripts/lease-api.mjs) backed by one Lessor kept in a FileStore.
// Usage: node scripts/serve.mjs [--port N] [--host H] [--data-dir DIR | --no-persist]
//   (env PORT, HOST, DATA_DIR). --port 0 picks a free port; the URL line
//   printed first says which. The data directory defaults to data/leases in
//   the repository; --no-persist or an empty --data-dir keeps leases in memory.

import { createServer } from "node:http";
import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Lessor } from "../js/node.mjs";
import { FileStore } from "../js/stores/file.mjs";
import { createLeaseApi } from "./lease-api.mjs";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));

const { values: args } = parseArgs({
  options: {
    port: { type: "string" },
    host: { type: "string" },
    "data-dir": { type: "string" },
    "no-persist": { type: "boolean" },
  },
});
const port = Number(args.port ?? process.env.PORT ?? 8080);
// Loopback unless asked: the demo is for the person at this machine.
const host = args.host ?? process.env.HOST ?? "127.0.0.1";
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`serve: bad port ${args.port ?? process.env.PORT}`);
  process.exit(2);
}
const dataDir = args["no-persist"] ? "" : args["data-dir"] ?? process.env.DATA_DIR ?? join(root, "data", "leases");

// URL prefix -> directory. Nothing else of the repository is reachable.
const mounts = [
  ["/edge-lease/js/", join(root, "js")],
  ["/edge-lease/pkg/", join(root, "pkg")],
  ["/", join(root, "www")],
];

const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ts": "text/plain; charset=utf-8",
};

// The page may load only its own files; inline scripts (the import map) are
// allowed by hash, and wasm compilation needs 'wasm-unsafe-eval'.
function csp(html) {
  const hashes = [];
  for (const m of html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)) {
    if (m[1].trim() === "") continue;
    hashes.push(`'sha256-${createHash("sha256").update(m[1]).digest("base64")}'`);
  }
  return [
    "default-src 'self'",
    `script-src 'self' 'wasm-unsafe-eval' ${hashes.join(" ")}`.trim(),
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

// The file a URL path names, or null. Paths are decoded once, and any
// segment that is empty, "." , ".." or a dotfile is refused, so nothing
// outside the mounts (or hidden inside them) is served.
function locate(pathname) {
  let path;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (path === "/") path = "/index.html";
  for (const [prefix, dir] of mounts) {
    if (!path.startsWith(prefix)) continue;
    const parts = path.slice(prefix.length).split("/");
    if (parts.some((p) => p === "" || p.startsWith(".") || p.includes("\\") || p.includes("\0"))) {
      return null;
    }
    const file = resolve(dir, ...parts);
    return file.startsWith(dir + sep) ? file : null;
  }
  return null;
}

async function serveFile(req, res, pathname) {
  const send = (status, headers, body) => {
    res.writeHead(status, { "X-Content-Type-Options": "nosniff", ...headers });
    res.end(req.method === "HEAD" ? undefined : body);
  };
  if (req.method !== "GET" && req.method !== "HEAD") {
    send(405, { Allow: "GET, HEAD", "Content-Type": "text/plain" }, "method not allowed\n");
    return;
  }
  const file = locate(pathname);
  const type = file && types[extname(file)];
  let body = null;
  if (type) {
    try {
      if ((await stat(file)).isFile()) body = await readFile(file);
    } catch {
      body = null;
    }
  }
  if (body === null) {
    send(404, { "Content-Type": "text/plain" }, "not found\n");
    return;
  }
  const headers = {
    "Content-Type": type,
    "Content-Length": body.length,
    // A development server: always serve what is on disk (fresh wasm after a rebuild).
    "Cache-Control": "no-store",
  };
  if (extname(file) === ".html") headers["Content-Security-Policy"] = csp(body.toString("utf8"));
  send(200, headers, body);
}

// Set once the server listens (below); no request is handled before that.
let store = null;
let lessor = null;
let api = null;

const server = createServer((req, res) => {
  const { pathname } = new URL(req.url, "http://localhost");
  if (pathname.startsWith("/v1/")) api(req, res, pathname);
  else serveFile(req, res, pathname);
});

server.listen(port, host, () => {
  // The store is opened only once the port is ours, so a second `npm start`
  // that finds the port taken fails before touching the running server's
  // data directory (a FileStore is for one process at a time).
  try {
    store = dataDir === "" ? null : FileStore.open(resolve(dataDir));
    lessor = new Lessor({ storage: store ?? undefined, restore: store?.entries() });
  } catch (e) {
    console.error(`serve: cannot open the lease store in ${resolve(dataDir)}: ${e.message}`);
    process.exit(1);
  }
  // An expiry that failed to reach the store (autoTick's timer reports it
  // as an event): the lease stays until the next tick succeeds.
  lessor.addEventListener("error", (e) => console.error(`lease server: expiry failed: ${e.error?.message}`));
  api = createLeaseApi({ lessor, store });
  const a = server.address();
  const h = a.family === "IPv6" ? `[${a.address}]` : a.address;
  console.log(`edge-lease demo: http://${h}:${a.port}/`);
  console.log(`lease API: http://${h}:${a.port}/v1/ (${store ? `data in ${resolve(dataDir)}` : "in memory"})`);
});

// Every acknowledged write is already fsync'd: closing only releases the
// timer and the journal, and stops later requests from half-running.
function shutdown(signal) {
  server.close();
  lessor?.close();
  store?.close();
  console.log(`lease server: stopped (${signal})`);
  process.exit(0);
}
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
