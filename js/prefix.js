// etcd's prefix ranges, shared by the wrapper, the client and the server
// (no imports: the client's module graph stays free of wasm).

/**
 * etcd's GetPrefixRangeEnd: the end of the range of every key starting with
 * `key`, its last byte below 0xff incremented and what follows dropped;
 * `\0` (every key from `key` on) when all its bytes are 0xff.
 */
export function prefixEnd(key) {
  const end = Uint8Array.from(key);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Uint8Array.of(0);
}
