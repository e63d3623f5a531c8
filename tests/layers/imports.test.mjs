// The folders are the layers, and data flows one way: the edge package
// (js/: the binding, the wrapper, the stores, the client) <- the etcd API
// (etcd/) <- the hosts (server/, worker/), which with www/ make the
// edge-lease-etcd package. Every import of every module is checked against
// that flow, and the module graph for cycles. The etcd package reaches the
// edge package only through its published exports (edge-lease/...): etcd/
// only for the two forms etcd's wire shares with the client (lease ids,
// base64), which load no wasm, and bcryptjs (plain JS: the auth store's
// password hashes), and for the engine only the members
// etcd/engine.d.ts declares; the hosts for the engine and their stores.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const LAYERS = ["js", "etcd", "server", "worker", "www"];

function modules(dir) {
  return readdirSync(join(repo, dir), { recursive: true })
    .map((f) => join(dir, f))
    .filter((f) => /\.(mjs|js)$/.test(f) && !f.includes("node_modules"));
}

// What a module imports: static imports and re-exports, and dynamic
// import() of a string literal. Comment lines are skipped.
export function importsOf(file) {
  const code = readFileSync(join(repo, file), "utf8")
    .split("\n")
    .filter((l) => !/^\s*(\/\/|\*|\/\*)/.test(l))
    .join("\n");
  const found = [];
  for (const m of code.matchAll(/(?:^|[\s;])(?:import|export)\b[^'"`;]*?\bfrom\s*["']([^"']+)["']|(?:^|[\s;])import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm)) {
    found.push(m[1] ?? m[2] ?? m[3]);
  }
  return found;
}

const layerOf = (path) => path.split("/")[0];
// A bare specifier of the edge package resolved as Node resolves it (the
// workspace links node_modules/edge-lease to js/), so walks go on inside it.
const linked = join(repo, "node_modules/edge-lease");
const edgeDir = realpathSync(linked);
function inEdge(spec) {
  if (!/^edge-lease(\/|$)/.test(spec)) return null;
  const path = fileURLToPath(import.meta.resolve(spec));
  return relative(repo, path.startsWith(linked) ? join(edgeDir, relative(linked, path)) : path);
}
const all = LAYERS.flatMap(modules);
const edges = new Map(
  all.map((f) => [
    f,
    importsOf(f).map((spec) => (spec.startsWith(".") ? { spec, to: relative(repo, resolve(repo, dirname(f), spec)) } : { spec, to: null, through: inEdge(spec) })),
  ]),
);

// layer -> the layers its modules may import (itself included), and the
// packages (bare specifiers) it may import.
const ALLOWED = {
  js: { layers: ["js"], bare: [/^node:/] },
  etcd: { layers: ["etcd"], bare: [/^edge-lease\/(lease-id|base64)$/, /^bcryptjs$/] },
  server: { layers: ["server", "etcd", "dist"], bare: [/^node:/, /^protobufjs$/, /^yaml$/, /^ws$/, /^edge-lease\/(engine|stores\/file)$/] },
  worker: { layers: ["worker", "etcd", "dist"], bare: [/^edge-lease\/(engine|stores\/durable-object)$/] },
  www: { layers: ["www"], bare: [/^edge-lease(\/|$)/] },
};
// Node-only tools beside the protos: the gRPC transport's loader and the
// generator of proto/schema.mjs. Nothing the worker loads imports them.
const NODE_ONLY = new Set(["etcd/proto/load.mjs", "etcd/proto/gen.mjs"]);

test("every import runs with the flow: js <- etcd <- server, worker; nothing imports a host", () => {
  const wrong = [];
  for (const [from, list] of edges) {
    const rule = ALLOWED[layerOf(from)];
    for (const { spec, to } of list) {
      if (to === null) {
        const ok = rule.bare.some((re) => re.test(spec)) || (NODE_ONLY.has(from) && /^(node:|protobufjs$)/.test(spec));
        if (!ok) wrong.push(`${from} imports ${spec}`);
      } else if (!rule.layers.includes(layerOf(to)) && !rule.layers.includes(to)) {
        wrong.push(`${from} imports ${to}`);
      }
    }
  }
  assert.deepEqual(wrong, []);
});

test("the worker never loads a Node-only module", () => {
  const seen = new Set();
  const visit = (f) => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const { spec, to, through } of edges.get(f) ?? []) {
      assert.ok(!spec.startsWith("node:"), `${f} imports ${spec}, on the worker's path`);
      const next = to ?? through;
      if (next && edges.has(next)) visit(next);
    }
  };
  visit("worker/index.mjs");
  assert.ok(seen.has("etcd/gateway.mjs"), "the walk reached the etcd API");
  assert.ok(seen.has("js/stores/durable-object.mjs"), "the walk went on into the edge package");
  for (const f of NODE_ONLY) assert.ok(!seen.has(f), `${f} is on the worker's path`);
});

test("edge-lease/client as browsers and Workers resolve it never loads a Node-only module; Node's entry adds node-tls.mjs", () => {
  const manifest = JSON.parse(readFileSync(join(repo, "js/package.json"), "utf8"));
  const conditions = manifest.exports["./client"];
  // (The first condition a runtime knows wins: the web ones come before node.)
  const order = Object.keys(conditions);
  for (const c of ["workerd", "worker", "browser", "default"]) assert.equal(conditions[c], "./client/index.mjs", c);
  for (const c of ["workerd", "worker", "browser"]) assert.ok(order.indexOf(c) < order.indexOf("node"), `${c} before node`);
  for (const c of ["node", "deno", "bun"]) assert.equal(conditions[c], "./client/node.mjs", c);
  const reach = (from) => {
    const seen = new Set();
    const visit = (f) => {
      if (seen.has(f)) return;
      seen.add(f);
      for (const { spec, to } of edges.get(f) ?? []) {
        if (spec.startsWith("node:")) seen.add(spec);
        if (to) visit(to);
      }
    };
    visit(from);
    return seen;
  };
  const web = reach("js/client/index.mjs");
  assert.ok(web.has("js/client/gateway.mjs"), "the walk reached the gateway backend");
  assert.deepEqual([...web].filter((f) => f.startsWith("node:") || f === "js/client/node-tls.mjs"), []);
  const node = reach("js/client/node.mjs");
  assert.ok(node.has("js/client/node-tls.mjs") && node.has("node:https"));
});

test("no import cycle among the modules", () => {
  const state = new Map();
  const cycles = [];
  const visit = (f, path) => {
    if (state.get(f) === "done") return;
    if (state.get(f) === "open") {
      cycles.push([...path.slice(path.indexOf(f)), f].join(" -> "));
      return;
    }
    state.set(f, "open");
    for (const { to } of edges.get(f) ?? []) if (to && edges.has(to)) visit(to, [...path, f]);
    state.set(f, "done");
  };
  for (const f of edges.keys()) visit(f, []);
  assert.deepEqual(cycles, []);
});

test("etcd/ uses only the engine members etcd/engine.d.ts declares", () => {
  const declared = new Set([...readFileSync(join(repo, "etcd/engine.d.ts"), "utf8").matchAll(/\|\s*"(\w+)"/g)].map((m) => m[1]));
  const used = new Set();
  for (const f of [...modules("etcd"), ...modules("worker")]) {
    for (const m of readFileSync(join(repo, f), "utf8").matchAll(/\blessor\??\.(\w+)/g)) used.add(m[1]);
  }
  assert.ok(used.size > 10, "found the services' calls");
  assert.deepEqual([...used].filter((m) => !declared.has(m)).sort(), []);
});
