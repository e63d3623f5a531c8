// The demo page (www/ at /) and the edge package's files (the installed
// edge-lease, at /edge-lease/), so the page loads edge-lease exactly as a
// site that ships it would. Node only.
import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { dirname, extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

// Where the edge package is installed (beside this one, or this repository's js/).
const EDGE_PACKAGE = dirname(fileURLToPath(import.meta.resolve("edge-lease/package.json")));

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

/** (pathname) => Response for GET: the file, or etcd's 404 text. */
export function createStatic(root) {
  // URL prefix -> directory. Nothing else of the repository is reachable.
  const mounts = [
    ["/edge-lease/", EDGE_PACKAGE],
    ["/", join(root, "www")],
  ];

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
      if (parts.some((p) => p === "" || p.startsWith(".") || p.includes("\\") || p.includes("\0"))) return null;
      const file = resolve(dir, ...parts);
      return file.startsWith(dir + sep) ? file : null;
    }
    return null;
  }

  return async function serveFile(pathname) {
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
      return new Response("404 page not found\n", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
    }
    const headers = {
      "content-type": type,
      // A development server: always serve what is on disk (fresh wasm after a rebuild).
      "cache-control": "no-store",
    };
    if (extname(file) === ".html") headers["content-security-policy"] = csp(body.toString("utf8"));
    return new Response(body, { status: 200, headers });
  };
}
