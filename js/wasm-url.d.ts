// Types for edge-lease/edge_lease_bg.wasm as bundlers import a file: its URL
// (esbuild's `--loader:.wasm=file`, Vite's `?url`), for `init(url)`.
declare const url: string;
export default url;
