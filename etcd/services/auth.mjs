// etcdserverpb.Auth over the namespace's auth store (etcd/auth/): users,
// roles, turning auth on and off, and Authenticate's tokens. Who may call
// what is etcd/methods.mjs's (root for the changes, and for UserGet and
// RoleGet the user itself or a holder of the role), applied before these
// run; what each answers and refuses is the store's.
import { PERM_TYPES } from "../auth/store.mjs";

export function authService({ lessor, header, auth }) {
  const { store } = auth;
  // A change's answer: an empty response with the header after it.
  const done = (fn) => async (req) => {
    await fn(req);
    return { header: header() };
  };
  const permOut = (p) => {
    const out = { permType: PERM_TYPES[p.type] ?? p.type, key: p.key };
    if (p.rangeEnd.length) out.range_end = p.rangeEnd;
    return out;
  };
  return {
    async Authenticate(req, call) {
      // (The token's index: the revision, as etcd's is its applied index.)
      const token = await store.authenticate(req.name ?? "", req.password ?? "", () => auth.identify(call?.token), () => lessor.revision);
      return { header: header(), token };
    },
    AuthEnable: done(() => store.enable()),
    AuthDisable: done(() => store.disable()),
    UserAdd: done((req) => store.userAdd(req)),
    UserDelete: done((req) => store.userDelete(req)),
    UserChangePassword: done((req) => store.userChangePassword(req)),
    UserGrantRole: done((req) => store.userGrantRole(req)),
    UserRevokeRole: done((req) => store.userRevokeRole(req)),
    RoleAdd: done((req) => store.roleAdd(req)),
    RoleDelete: done((req) => store.roleDelete(req)),
    RoleGrantPermission: done((req) => store.roleGrantPermission(req)),
    RoleRevokePermission: done((req) => store.roleRevokePermission(req)),
    UserGet: (req) => ({ header: header(), roles: store.userGet(req) }),
    UserList: () => ({ header: header(), users: store.userList() }),
    RoleGet: (req) => ({ header: header(), perm: store.roleGet(req).map(permOut) }),
    RoleList: () => ({ header: header(), roles: store.roleList() }),
  };
}
