// edge-lease/base64: standard base64 as etcd's JSON gateway speaks it (Go's StdEncoding).

/** `bytes` as standard base64 with padding. */
export function encodeBase64(bytes: Uint8Array): string;
/** Base64 text as bytes, as Go's StdEncoding reads it; bad input throws `badAt(offset)`. */
export function decodeBase64(text: string, badAt: (offset: number) => unknown): Uint8Array;
