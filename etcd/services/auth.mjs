// etcdserverpb.Auth as etcd 3.4 answers with authentication disabled and no
// users or roles: there is nothing to authenticate against, and this server
// keeps no users, so adding one is Unimplemented.
import { Etcd, unimplemented } from "../errors.mjs";

export function authService({ header }) {
  const fail = (error) => () => {
    throw error();
  };
  const ok = () => ({ header: header() });
  return {
    Authenticate: fail(Etcd.authNotEnabled),
    AuthEnable: fail(Etcd.rootUserNotExist),
    AuthDisable: ok,
    UserList: ok,
    RoleList: ok,
    UserGet: fail(Etcd.userNotFound),
    UserDelete: fail(Etcd.userNotFound),
    UserChangePassword: fail(Etcd.userNotFound),
    UserGrantRole: fail(Etcd.userNotFound),
    UserRevokeRole: fail(Etcd.userNotFound),
    RoleGet: fail(Etcd.roleNotFound),
    RoleDelete: fail(Etcd.roleNotFound),
    RoleGrantPermission: fail(Etcd.roleNotFound),
    RoleRevokePermission: fail(Etcd.roleNotFound),
    UserAdd: fail(() => unimplemented("auth users")),
    RoleAdd: fail(() => unimplemented("auth roles")),
  };
}
