// gRPC status codes, etcd's error messages (clients match on the exact
// strings), and the HTTP status the JSON gateway gives each code
// (grpc-gateway v1's HTTPStatusFromCode, which etcd 3.4's gateway uses).

export const Code = {
  OK: 0,
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
};

const HTTP = [200, 499, 500, 400, 504, 404, 409, 403, 429, 412, 409, 400, 501, 500, 503, 500, 401];

export function httpStatus(code) {
  return HTTP[code] ?? 500;
}

/** An error with a gRPC status code: what every service method throws. */
export class GrpcError extends Error {
  /** `options.cause`: the error behind it (as Error's). */
  constructor(code, message, options) {
    super(message, options);
    this.code = code;
  }
}

const e = (code, message) => () => new GrpcError(code, message);

// The ones this server answers with, spelled as etcd 3.4 spells them
// (etcdserver/api/v3rpc/rpctypes/error.go).
export const Etcd = {
  keyNotProvided: e(Code.InvalidArgument, "etcdserver: key is not provided"),
  keyNotFound: e(Code.InvalidArgument, "etcdserver: key not found"),
  valueProvided: e(Code.InvalidArgument, "etcdserver: value is provided"),
  leaseProvided: e(Code.InvalidArgument, "etcdserver: lease is provided"),
  requestTooLarge: e(Code.InvalidArgument, "etcdserver: request is too large"),
  leaseNotFound: e(Code.NotFound, "etcdserver: requested lease not found"),
  leaseExist: e(Code.FailedPrecondition, "etcdserver: lease already exists"),
  leaseTtlTooLarge: e(Code.OutOfRange, "etcdserver: too large lease TTL"),
  futureRev: e(Code.OutOfRange, "etcdserver: mvcc: required revision is a future revision"),
  compacted: e(Code.OutOfRange, "etcdserver: mvcc: required revision has been compacted"),
  noSpace: e(Code.ResourceExhausted, "etcdserver: mvcc: database space exceeded"),
  tooManyOps: e(Code.InvalidArgument, "etcdserver: too many operations in txn request"),
  duplicateKey: e(Code.InvalidArgument, "etcdserver: duplicate key given in txn request"),
  // etcd 3.5's answer; 3.4 panics on an unknown sort target (the process dies).
  invalidSortOption: e(Code.InvalidArgument, "etcdserver: invalid sort option"),
  authNotEnabled: e(Code.FailedPrecondition, "etcdserver: authentication is not enabled"),
  rootUserNotExist: e(Code.FailedPrecondition, "etcdserver: root user does not exist"),
  userNotFound: e(Code.FailedPrecondition, "etcdserver: user name not found"),
  roleNotFound: e(Code.FailedPrecondition, "etcdserver: role name not found"),
  rootRoleNotExist: e(Code.FailedPrecondition, "etcdserver: root user does not have root role"),
  userAlreadyExist: e(Code.FailedPrecondition, "etcdserver: user name already exists"),
  userEmpty: e(Code.InvalidArgument, "etcdserver: user name is empty"),
  roleAlreadyExist: e(Code.FailedPrecondition, "etcdserver: role name already exists"),
  roleEmpty: e(Code.InvalidArgument, "etcdserver: role name is empty"),
  authFailed: e(Code.InvalidArgument, "etcdserver: authentication failed, invalid user ID or password"),
  permissionDenied: e(Code.PermissionDenied, "etcdserver: permission denied"),
  roleNotGranted: e(Code.FailedPrecondition, "etcdserver: role is not granted to the user"),
  permissionNotGranted: e(Code.FailedPrecondition, "etcdserver: permission is not granted to the role"),
  invalidAuthToken: e(Code.Unauthenticated, "etcdserver: invalid auth token"),
  invalidAuthMgmt: e(Code.InvalidArgument, "etcdserver: invalid auth management"),
  authOldRevision: e(Code.InvalidArgument, "etcdserver: revision of auth store is old"),
  // Not in etcd's table of errors: the auth store's own, as Unknown.
  noPasswordUser: e(Code.Unknown, "auth: authentication failed, password was given for no password user"),
  memberNotFound: e(Code.NotFound, "etcdserver: member not found"),
};

// etcd's authMaintenanceServer (Snapshot, Defragment, HashKV) hands the
// auth store's errors on unmapped: Unknown, in the store's own words.
const RAW = {
  [Etcd.invalidAuthToken().message]: "auth: invalid auth token",
  [Etcd.userEmpty().message]: "auth: user name is empty",
  [Etcd.userNotFound().message]: "auth: user not found",
  [Etcd.permissionDenied().message]: "auth: permission denied",
};

/** An auth refusal (one of `Etcd`'s) as etcd's maintenance server gives it. */
export function unmapped(e) {
  return e instanceof GrpcError && RAW[e.message] ? new GrpcError(Code.Unknown, RAW[e.message]) : e;
}

/** For what needs engine features that are not there yet (see docs/server.md). */
export function unimplemented(what) {
  return new GrpcError(Code.Unimplemented, `edge-lease: ${what} is not implemented by this single-member server`);
}

/** etcd's message for a gRPC message over the 2 MiB receive limit. */
export function tooLargeMessage(size, max) {
  return new GrpcError(Code.ResourceExhausted, `grpc: received message larger than max (${size} vs. ${max})`);
}
