//! The module's allocator: talc in place of Rust's default dlmalloc, as
//! fast on the benchmarks in less code (benches/ANALYSIS.md has the A/B).
//! The module is single-threaded, so the allocator takes no lock; it grows
//! linear memory as it needs.

#[global_allocator]
static ALLOC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
