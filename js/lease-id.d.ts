// Lease-id conversions (edge-lease/lease-id): the forms etcd's tools and wire use.

/** A lease id (16 lowercase hex digits or a bigint) as the API's 16 hex digits; InvalidArgument otherwise. */
export function leaseId(id: string | bigint): string;
/** A lease id (1 to 16 lowercase hex digits, or a bigint) as etcd's signed int64. */
export function leaseBig(id: string | bigint, what?: string): bigint;
/** etcd's int64 (a number, bigint or decimal string) as 16 lowercase hex digits. */
export function leaseHex(v: number | bigint | string): string;
/** 16 hex digits as etcd's signed int64. */
export function leaseInt64(hex: string): bigint;
/** Go's `%x` of an int64 lease id: the suffix etcd's concurrency recipes put on their keys. */
export function leaseGoHex(id: bigint): string;
