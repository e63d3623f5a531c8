//! The etcd-client crate with auth and with TLS against the server at
//! argv[2], one line per step (as `main.rs`, with lease ids and member ids
//! named or left out):
//!
//! - `auth <url> [<ca> <cert> <key>]`: root sets up users and roles with
//!   the crate's Auth calls and turns auth on; a limited user
//!   (`ConnectOptions::with_user`) makes allowed and refused kv, txn,
//!   lease, watch, lock and election calls; a wrong password and an
//!   unknown user; auth off. With the files, each client over TLS with
//!   that client certificate.
//! - `tls <url> <ca> <cert> <key> <other cert> <other key>`: kv, txn,
//!   lease and watch over https with the CA and a client certificate
//!   (`TlsOptions`); then a client without a certificate and one with
//!   another CA's, refused.
//!
//! Every wait is bounded.

use std::time::Duration;

use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, Error, EventType, GetOptions,
    Identity, LeaseTimeToLiveOptions, LockOptions, Permission, PutOptions, ResignOptions,
    TlsOptions, Txn, TxnOp, WatchOptions, WatchStream,
};
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

/// An error as code and message (what clients match on); a transport
/// error as its kind only (its text is the TLS stack's, not the server's).
fn error(e: &Error) -> String {
    match e {
        Error::GRpcStatus(s) => format!("error {:?} {:?}", s.code(), s.message()),
        Error::TransportError(_) => "error transport".into(),
        other => format!("error {other}"),
    }
}

/// A refused connection: the server closed it before any answer (no gRPC
/// status of the server's), or an error that says otherwise.
fn refusal(e: &Error) -> String {
    match e {
        Error::TransportError(_) => "refused before any answer".into(),
        Error::GRpcStatus(s)
            if ["Unknown", "Cancelled", "Unavailable"]
                .contains(&format!("{:?}", s.code()).as_str())
                && !s.message().starts_with("etcdserver:") =>
        {
            "refused before any answer".into()
        }
        other => error(other),
    }
}

/// A call's outcome: `ok` and what `f` says of its answer, or its error.
fn out<T>(r: Result<T, Error>, f: impl FnOnce(T) -> String) -> String {
    match r {
        Ok(v) => format!("ok {}", f(v)),
        Err(e) => error(&e),
    }
}

fn line(name: &str, v: String) {
    println!("{name}\t{v}");
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The values of a get.
fn values(r: etcd_client::GetResponse) -> String {
    let all: Vec<String> = r
        .kvs()
        .iter()
        .map(|kv| format!("{}={}", text(kv.key()), text(kv.value())))
        .collect();
    format!("{all:?}")
}

/// A put's revision.
fn rev(r: etcd_client::PutResponse) -> String {
    format!("rev {}", r.header().map_or(0, |h| h.revision()))
}

/// A lock or election key with the lease's hex id (the recipe's suffix) cut.
fn recipe_key(k: &[u8]) -> String {
    let s = text(k);
    match s.rsplit_once('/') {
        Some((head, _)) => format!("{head}/<lease>"),
        None => s,
    }
}

/// The next watch response, as its flags, reason and events.
async fn next(w: &mut WatchStream) -> String {
    match timeout(WAIT, w.message()).await {
        Err(_) => "timed out".into(),
        Ok(Err(e)) => error(&e),
        Ok(Ok(None)) => "ended".into(),
        Ok(Ok(Some(r))) => {
            let events: Vec<String> = r
                .events()
                .iter()
                .map(|e| {
                    let kind = match e.event_type() {
                        EventType::Put => "PUT",
                        EventType::Delete => "DELETE",
                    };
                    let kv = e
                        .kv()
                        .map(|kv| format!("{}={}", text(kv.key()), text(kv.value())));
                    format!("{kind} {}", kv.unwrap_or_default())
                })
                .collect();
            format!(
                "created {} canceled {} reason {:?} events {events:?}",
                r.created(),
                r.canceled(),
                r.cancel_reason()
            )
        }
    }
}

async fn connect(url: &str, options: ConnectOptions) -> Result<Client, Error> {
    let options = options.with_connect_timeout(WAIT).with_timeout(WAIT);
    Client::connect([url], Some(options)).await
}

/// `base`: plain, or TLS with a client certificate.
async fn auth(url: &str, base: ConnectOptions) -> Result<(), Error> {
    // Users and roles (auth still off). `app`: readwrite app/, read ro/,
    // write wo/, readwrite the lock and election names under app/.
    let mut admin = connect(url, base.clone()).await?;
    line(
        "add root",
        out(admin.user_add("root", "rootpw", None).await, |_| {
            String::new()
        }),
    );
    line(
        "root gets role root",
        out(admin.user_grant_role("root", "root").await, |_| {
            String::new()
        }),
    );
    line(
        "add role app",
        out(admin.role_add("app").await, |_| String::new()),
    );
    line(
        "add role app again",
        out(admin.role_add("app").await, |_| String::new()),
    );
    for perm in [
        Permission::read_write("app/").with_prefix(),
        Permission::read("ro/").with_prefix(),
        Permission::write("wo/").with_prefix(),
    ] {
        line(
            "grant",
            out(admin.role_grant_permission("app", perm).await, |_| {
                String::new()
            }),
        );
    }
    line(
        "app's permissions",
        out(admin.role_get("app").await, |r| {
            let perms: Vec<String> = r
                .permissions()
                .iter()
                .map(|p| format!("{} {} {}", p.get_type(), text(p.key()), text(p.range_end())))
                .collect();
            format!("{perms:?}")
        }),
    );
    line(
        "add u",
        out(admin.user_add("u", "upw", None).await, |_| String::new()),
    );
    line(
        "u gets role app",
        out(admin.user_grant_role("u", "app").await, |_| String::new()),
    );
    line(
        "u gets a missing role",
        out(admin.user_grant_role("u", "nope").await, |_| String::new()),
    );
    line(
        "u's roles",
        out(admin.user_get("u").await, |r| format!("{:?}", r.roles())),
    );
    line(
        "users",
        out(admin.user_list().await, |r| format!("{:?}", r.users())),
    );
    admin.put("ro/1", "r", None).await?;
    admin.put("secret", "s", None).await?;
    line(
        "auth enable",
        out(admin.auth_enable().await, |_| String::new()),
    );

    // Who may call at all.
    line("no token", out(admin.get("app/1", None).await, values));
    line(
        "wrong password",
        out(
            connect(url, base.clone().with_user("u", "nope")).await,
            |_| String::new(),
        ),
    );
    line(
        "unknown user",
        out(
            connect(url, base.clone().with_user("ghost", "x")).await,
            |_| String::new(),
        ),
    );
    let mut root = connect(url, base.clone().with_user("root", "rootpw")).await?;
    let mut u = connect(url, base.clone().with_user("u", "upw")).await?;
    line(
        "root puts secret",
        out(root.put("secret", "s2", None).await, rev),
    );

    // KV as u.
    line("put app/1", out(u.put("app/1", "one", None).await, rev));
    line(
        "put app/1 with prev",
        out(
            u.put("app/1", "uno", Some(PutOptions::new().with_prev_key()))
                .await,
            |r| format!("prev {:?}", r.prev_key().map(|kv| text(kv.value()))),
        ),
    );
    line("get app/1", out(u.get("app/1", None).await, values));
    line(
        "get app/ prefix",
        out(
            u.get("app/", Some(GetOptions::new().with_prefix())).await,
            values,
        ),
    );
    line("get ro/1", out(u.get("ro/1", None).await, values));
    line("put ro/1", out(u.put("ro/1", "x", None).await, rev));
    line("put wo/1", out(u.put("wo/1", "w", None).await, rev));
    line("get wo/1", out(u.get("wo/1", None).await, values));
    line(
        "put wo/1 with prev",
        out(
            u.put("wo/1", "w2", Some(PutOptions::new().with_prev_key()))
                .await,
            rev,
        ),
    );
    line("get secret", out(u.get("secret", None).await, values));
    line("put secret", out(u.put("secret", "mine", None).await, rev));
    line(
        "delete secret",
        out(u.delete("secret", None).await, |r| {
            format!("deleted {}", r.deleted())
        }),
    );
    line(
        "get everything",
        out(
            u.get("", Some(GetOptions::new().with_all_keys())).await,
            values,
        ),
    );
    line(
        "user list as u",
        out(u.user_list().await, |r| format!("{:?}", r.users())),
    );
    line(
        "auth disable as u",
        out(u.auth_disable().await, |_| String::new()),
    );

    // Txn as u.
    let txn = |k: &str| {
        Txn::new()
            .when([Compare::value(k, CompareOp::Equal, "uno")])
            .and_then([TxnOp::put("app/2", "two", None)])
            .or_else([TxnOp::get("app/1", None)])
    };
    line(
        "txn in app/",
        out(u.txn(txn("app/1")).await, |r| {
            format!("succeeded {}", r.succeeded())
        }),
    );
    line(
        "txn comparing secret",
        out(u.txn(txn("secret")).await, |r| {
            format!("succeeded {}", r.succeeded())
        }),
    );
    let put_secret = Txn::new()
        .and_then([TxnOp::get("app/1", None)])
        .or_else([TxnOp::put("secret", "x", None)]);
    line(
        "txn putting secret in else",
        out(u.txn(put_secret).await, |r| {
            format!("succeeded {}", r.succeeded())
        }),
    );

    // Leases as u (LeaseGrant needs no right).
    let lease = u.lease_grant(60, None).await?.id();
    line(
        "put app/l on the lease",
        out(
            u.put("app/l", "v", Some(PutOptions::new().with_lease(lease)))
                .await,
            rev,
        ),
    );
    line(
        "put secret on the lease",
        out(
            u.put("secret", "v", Some(PutOptions::new().with_lease(lease)))
                .await,
            rev,
        ),
    );
    line(
        "time to live",
        out(
            u.lease_time_to_live(lease, Some(LeaseTimeToLiveOptions::new().with_keys()))
                .await,
            |r| {
                let keys: Vec<String> = r.keys().iter().map(|k| text(k)).collect();
                format!("granted {} keys {keys:?}", r.granted_ttl())
            },
        ),
    );
    let theirs = root.lease_grant(60, None).await?.id();
    root.put(
        "secret",
        "leased",
        Some(PutOptions::new().with_lease(theirs)),
    )
    .await?;
    line(
        "revoke root's lease",
        out(u.lease_revoke(theirs).await, |_| String::new()),
    );
    // etcd 3.4.23 lists its keys to u; edge-lease needs read on each
    // (CVE-2023-32082's fix): the driver asserts each side's answer.
    line(
        "beyond 3.4.23: time to live of root's lease",
        out(
            u.lease_time_to_live(theirs, Some(LeaseTimeToLiveOptions::new().with_keys()))
                .await,
            |r| {
                let keys: Vec<String> = r.keys().iter().map(|k| text(k)).collect();
                format!("keys {keys:?}")
            },
        ),
    );
    line(
        "revoke",
        out(u.lease_revoke(lease).await, |_| String::new()),
    );
    line(
        "app/l after revoke",
        out(u.get("app/l", None).await, values),
    );
    root.lease_revoke(theirs).await?;

    // Watch as u: its own prefix sees root's put; secret's create is
    // created and canceled at once with etcd's reason.
    let mut w = u
        .watch("app/", Some(WatchOptions::new().with_prefix()))
        .await?;
    line("watch app/", next(&mut w).await);
    root.put("app/w", "hi", None).await?;
    line("event on app/", next(&mut w).await);
    w.watch("secret", None).await?;
    line("watch secret", next(&mut w).await);
    w.watch("", Some(WatchOptions::new().with_all_keys()))
        .await?;
    line("watch everything", next(&mut w).await);

    // Lock and election (v3lock, v3election: the server's recipes).
    let held = u.lease_grant(60, None).await?.id();
    let locked = u
        .lock("app/lock", Some(LockOptions::new().with_lease(held)))
        .await;
    let key = locked
        .as_ref()
        .map(|r| r.key().to_vec())
        .unwrap_or_default();
    line("lock app/lock", out(locked, |r| recipe_key(r.key())));
    line("unlock", out(u.unlock(key).await, |_| String::new()));
    line(
        "lock secret-lock",
        out(
            u.lock("secret-lock", Some(LockOptions::new().with_lease(held)))
                .await,
            |r| recipe_key(r.key()),
        ),
    );
    let won = u.campaign("app/vote", "v1", held).await;
    let leader = won.as_ref().ok().and_then(|r| r.leader().cloned());
    line(
        "campaign app/vote",
        out(won, |r| {
            r.leader().map(|l| recipe_key(l.key())).unwrap_or_default()
        }),
    );
    line(
        "leader of app/vote",
        out(u.leader("app/vote").await, |r| {
            r.kv().map(|kv| text(kv.value())).unwrap_or_default()
        }),
    );
    line(
        "resign",
        out(
            u.resign(Some(
                ResignOptions::new().with_leader(leader.unwrap_or_default()),
            ))
            .await,
            |_| String::new(),
        ),
    );
    line(
        "campaign elsewhere",
        out(u.campaign("vote", "x", held).await, |_| String::new()),
    );
    line(
        "leader elsewhere",
        out(u.leader("vote").await, |_| String::new()),
    );
    u.lease_revoke(held).await?;

    // Auth off: u's token is refused from then on.
    line(
        "auth disable as root",
        out(root.auth_disable().await, |_| String::new()),
    );
    line(
        "u after auth disable",
        out(u.get("app/1", None).await, values),
    );
    line(
        "no token after auth disable",
        out(admin.get("app/1", None).await, values),
    );
    Ok(())
}

fn read(f: &str) -> Vec<u8> {
    std::fs::read(f).unwrap_or_else(|e| panic!("{f}: {e}"))
}

/// TLS trusting `ca`, with the client certificate `cert` and its `key`.
fn with_cert(ca: &str, cert: &str, key: &str) -> TlsOptions {
    let identity = Identity::from_pem(read(cert), read(key));
    TlsOptions::new()
        .ca_certificate(Certificate::from_pem(read(ca)))
        .identity(identity)
}

async fn tls(
    url: &str,
    [ca_file, cert, key, other_cert, other_key]: [&str; 5],
) -> Result<(), Error> {
    let ca = Certificate::from_pem(read(ca_file));
    let with_cert = with_cert(ca_file, cert, key);
    let mut c = connect(url, ConnectOptions::new().with_tls(with_cert)).await?;
    line("put", out(c.put("t/a", "1", None).await, rev));
    line(
        "put with prev",
        out(
            c.put("t/a", "2", Some(PutOptions::new().with_prev_key()))
                .await,
            |r| format!("prev {:?}", r.prev_key().map(|kv| text(kv.value()))),
        ),
    );
    line(
        "get t/",
        out(
            c.get("t/", Some(GetOptions::new().with_prefix())).await,
            values,
        ),
    );
    let txn = Txn::new()
        .when([Compare::value("t/a", CompareOp::Equal, "2")])
        .and_then([TxnOp::put("t/b", "3", None)]);
    line(
        "txn",
        out(c.txn(txn).await, |r| format!("succeeded {}", r.succeeded())),
    );
    let lease = c.lease_grant(30, None).await?;
    line("lease grant", format!("ttl {}", lease.ttl()));
    line(
        "put on the lease",
        out(
            c.put("t/l", "v", Some(PutOptions::new().with_lease(lease.id())))
                .await,
            rev,
        ),
    );
    let (mut keeper, mut replies) = c.lease_keep_alive(lease.id()).await?;
    keeper.keep_alive().await?;
    let reply = timeout(WAIT, replies.message())
        .await
        .map_err(|_| Error::WatchError("no keepalive answer".into()))?;
    line(
        "keepalive",
        out(reply, |r| {
            r.map(|r| format!("ttl {}", r.ttl())).unwrap_or_default()
        }),
    );
    line(
        "time to live",
        out(
            c.lease_time_to_live(lease.id(), Some(LeaseTimeToLiveOptions::new().with_keys()))
                .await,
            |r| {
                let keys: Vec<String> = r.keys().iter().map(|k| text(k)).collect();
                format!("granted {} keys {keys:?}", r.granted_ttl())
            },
        ),
    );
    let mut w = c
        .watch(
            "t/",
            Some(WatchOptions::new().with_prefix().with_start_revision(1)),
        )
        .await?;
    line("watch from 1", next(&mut w).await);
    line("watch history", next(&mut w).await);
    c.lease_revoke(lease.id()).await?;
    line("event of the revoke", next(&mut w).await);
    line(
        "get t/ after revoke",
        out(
            c.get("t/", Some(GetOptions::new().with_prefix())).await,
            values,
        ),
    );

    // No client certificate, or one of another CA: refused before any
    // answer. (Whether hyper reports the server's close as a transport
    // error or a canceled call is a race in the client, on both servers.)
    let others = [
        (
            "no client certificate",
            TlsOptions::new().ca_certificate(ca.clone()),
        ),
        (
            "a certificate of another CA",
            TlsOptions::new()
                .ca_certificate(ca)
                .identity(Identity::from_pem(read(other_cert), read(other_key))),
        ),
    ];
    for (name, options) in others {
        let r = match connect(url, ConnectOptions::new().with_tls(options)).await {
            Ok(mut c) => c.get("t/a", None).await.map(values),
            Err(e) => Err(e),
        };
        line(name, r.map_or_else(|e| refusal(&e), |v| format!("ok {v}")));
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["auth", url] => auth(url, ConnectOptions::new()).await,
        ["auth", url, ca, cert, key] => {
            auth(url, ConnectOptions::new().with_tls(with_cert(ca, cert, key))).await
        }
        ["tls", url, ca, cert, key, other_cert, other_key] => {
            tls(url, [ca, cert, key, other_cert, other_key]).await
        }
        _ => panic!(
            "usage: etcd-client-secure-check auth <url> [<ca> <cert> <key>] | tls <url> <ca> <cert> <key> <other CA's cert> <its key>"
        ),
    }
}
