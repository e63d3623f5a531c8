// The Rust side of the layers: the core (crates/core) knows nothing of JS,
// the binding (crates/wasm) is the only crate with wasm-bindgen, no engine
// source file is over 400 lines, each lib.rs only declares and re-exports,
// and the core's modules import one another without a cycle.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const sources = (crate) =>
  readdirSync(join(repo, crate, "src"), { recursive: true })
    .filter((f) => f.endsWith(".rs"))
    .map((f) => join(crate, "src", f));
const read = (f) => readFileSync(join(repo, f), "utf8");

test("no engine source file is over 400 lines", () => {
  const long = [...sources("crates/core"), ...sources("crates/wasm")]
    .map((f) => [f, read(f).split("\n").length - 1])
    .filter(([, n]) => n > 400);
  assert.deepEqual(long, []);
});

test("each lib.rs only declares modules and re-exports them", () => {
  for (const crate of ["crates/core", "crates/wasm"]) {
    const other = read(`${crate}/src/lib.rs`)
      .split("\n")
      .filter((l) => !/^\s*($|\/\/|#!?\[cfg\(|(pub(\(crate\))? )?mod \w+;|pub use [\w:{}, \n]+;?|[\w:{}, ]+,?$|\};?$)/.test(l));
    assert.deepEqual(other, [], crate);
  }
});

test("wasm-bindgen is the binding's alone: the core has no JS dependency or code", () => {
  const manifests = readdirSync(join(repo, "crates")).map((c) => [c, read(`crates/${c}/Cargo.toml`)]);
  const withBindgen = manifests.filter(([, m]) => /^(wasm-bindgen|js-sys)\s*=/m.test(m)).map(([c]) => c);
  assert.deepEqual(withBindgen, ["wasm"]);
  const jsInCore = sources("crates/core").filter((f) => /wasm_bindgen|js_sys/.test(read(f)));
  assert.deepEqual(jsInCore, []);
});

// A core file's module path: crates/core/src/kv/mod.rs -> ["kv"], lessor/keys.rs -> ["lessor", "keys"].
function modulePath(file) {
  const parts = relative(join(repo, "crates/core/src"), join(repo, file)).replace(/\.rs$/, "").split("/");
  if (parts.at(-1) === "mod" || parts.at(-1) === "lib") parts.pop();
  return parts;
}

test("the core's modules import one another without a cycle", () => {
  const files = sources("crates/core").filter((f) => !f.endsWith("/tests.rs"));
  const byPath = new Map(files.map((f) => [modulePath(f).join("::"), f]));
  // The module file a path names: its longest prefix that is a module.
  const fileOf = (segments) => {
    for (let n = segments.length; n > 0; n--) {
      const f = byPath.get(segments.slice(0, n).join("::"));
      if (f) return f;
    }
    return null;
  };
  const edges = new Map();
  for (const f of files) {
    // Code only: no comments, no inline test module (always last in a file).
    const code = read(f)
      .split(/^#\[cfg\(test\)\]\s*\n\s*mod tests \{/m)[0]
      .replace(/\/\/.*$/gm, "");
    const here = modulePath(f);
    const parentOf = f.endsWith("/mod.rs") ? here.slice(0, -1) : here.slice(0, -1);
    const to = new Set();
    // `use crate::a::b::{c, d::e}` and inline `crate::a::b`; `super::` from this module's parent.
    for (const m of code.matchAll(/\b(crate|super)((?:::\w+)+)(::\{([^}]*)\})?/g)) {
      const base = m[1] === "crate" ? [] : parentOf;
      const path = [...base, ...m[2].split("::").filter(Boolean)];
      const lists = m[4] ? m[4].split(",").map((s) => s.trim().split("::")[0]).filter((s) => /^\w+$/.test(s) && s !== "self") : [];
      for (const target of lists.length ? lists.map((s) => [...path, s]) : [path]) {
        const g = fileOf(target);
        if (g && g !== f) to.add(g);
      }
    }
    edges.set(f, to);
  }
  assert.ok([...edges.values()].some((s) => s.size > 0), "found the imports");
  const state = new Map();
  const cycles = [];
  const visit = (f, path) => {
    if (state.get(f) === "done") return;
    if (state.get(f) === "open") return void cycles.push([...path.slice(path.indexOf(f)), f].join(" -> "));
    state.set(f, "open");
    for (const g of edges.get(f)) visit(g, [...path, f]);
    state.set(f, "done");
  };
  for (const f of files) visit(f, []);
  assert.deepEqual(cycles, []);
  // The parts never import the front: the lessor composes them.
  const front = "crates/core/src/lessor.rs";
  const parts = files.filter((f) => !f.startsWith("crates/core/src/lessor") && f !== "crates/core/src/lib.rs");
  assert.deepEqual(parts.filter((f) => edges.get(f).has(front)), []);
  assert.ok(existsSync(join(repo, front)));
});
