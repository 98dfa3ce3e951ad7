//! Several hosts in one URL, and following the writable one after a failover (issue #46
//! item 4).
//!
//! sqlx takes one host per URL; libpq's multi-host form is parsed here:
//! `postgres://user@h1:p1,h2:p2/db?target_session_attrs=read-write`. Each host becomes
//! the same URL with that one host (credentials, database and the other parameters
//! kept). With `read-write` (or `primary`) a host is taken only if a fresh session there
//! says `transaction_read_only = off`, as libpq checks it: a standby, and a standby
//! pg_auto_failover is promoting but has not yet opened for writes, are passed over. With
//! `any` (libpq's default) the first host that answers is taken.
//!
//! At connect the hosts are tried in order until one qualifies (again and again until
//! the store's `acquire_timeout`: a store started during a failover waits for it). Then
//! [`follow`] keeps a probe session on the chosen host and asks it every
//! [`PROBE_EVERY`] whether it is still writable. When it is not (the session broke: the
//! primary died or was shut down, SQLSTATE class 08 or 57P01; or the host turned
//! read-only: demoted), the hosts are tried again until one qualifies, the pool is
//! pointed at it (`Pool::set_connect_options`) and its idle sessions are closed, so every
//! later commit runs on the new primary. A session the pool hands out is pinged first
//! (sqlx's `test_before_acquire`), so a session to a dead primary is never used.
//!
//! What happens to the commits in flight at the failover: they fail with
//! `StoreError::Backend` and the store does not run them again (only deadlocks,
//! serialization failures and unique-key races are retried; a commit whose COMMIT's
//! outcome is unknown is never re-run blindly). The caller re-runs it under its own
//! idempotency: an API request is retried by the client with its `Idempotency-Key`, whose
//! record is written in the same transaction as the request's effects (so the retry either
//! finds the committed answer or runs the request once); a worker's step is guarded by
//! the record's version and claim lease, so a step that did commit is not applied twice
//! (its re-run finds the new version). Synchronous replication (see
//! `scripts/failover-cluster.sh`) is what makes "committed" mean "on the standby too".

use super::PgConfig;
use crate::error::Error;
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// How often [`follow`] checks that the pool's host is still the writable one.
pub(super) const PROBE_EVERY: Duration = Duration::from_millis(250);
/// How long one host gets to answer (connect and check) before the next is tried.
const HOST_TIMEOUT: Duration = Duration::from_secs(2);

/// What a session must be to be chosen (libpq's `target_session_attrs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SessionAttrs {
    /// The first host that answers.
    Any,
    /// A host whose sessions can write (`transaction_read_only = off`).
    ReadWrite,
}

/// A URL's hosts, each as a one-host URL for sqlx.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Hosts {
    /// One URL per host, in the given order.
    pub urls: Vec<String>,
    pub attrs: SessionAttrs,
}

/// Splits a libpq URL with one or several hosts. A one-host URL without
/// `target_session_attrs` comes back unchanged (as the one URL), so it reaches sqlx
/// exactly as before. Errors never show a password.
pub(super) fn parse(url: &str) -> Result<Hosts, Error> {
    let bad = |why: &str| Error::Config {
        reason: format!("bad postgres URL {}: {why}", crate::redact_url(url)),
    };
    let Some(scheme_end) = url.find("://") else {
        // Not shown: without a scheme, where the password is cannot be told.
        return Err(Error::Config {
            reason: "bad postgres URL (not shown): expected postgres://".into(),
        });
    };
    let after = &url[scheme_end + 3..];
    let authority_end = after.find(['/', '?']).unwrap_or(after.len());
    let (authority, rest) = after.split_at(authority_end);
    let (userinfo, hostlist) = match authority.rfind('@') {
        Some(at) => (&authority[..=at], &authority[at + 1..]),
        None => ("", authority),
    };
    // The query: target_session_attrs is ours, the rest is passed on.
    let (path, query) = match rest.find('?') {
        Some(q) => (&rest[..q], Some(&rest[q + 1..])),
        None => (rest, None),
    };
    let mut attrs = None;
    let mut kept = Vec::new();
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        match pair.split_once('=') {
            Some(("target_session_attrs", value)) => {
                attrs = Some(match value {
                    "read-write" | "primary" => SessionAttrs::ReadWrite,
                    "any" => SessionAttrs::Any,
                    other => {
                        return Err(bad(&format!(
                            "target_session_attrs={other} is not supported (read-write, primary or any)"
                        )));
                    }
                });
            }
            _ if pair.is_empty() => {}
            _ => kept.push(pair),
        }
    }
    let hosts: Vec<&str> = hostlist.split(',').collect();
    if hosts.len() == 1 && attrs.is_none() {
        return Ok(Hosts {
            urls: vec![url.to_string()],
            attrs: SessionAttrs::Any,
        });
    }
    if hosts.iter().any(|h| h.is_empty()) {
        return Err(bad("an empty host in the host list"));
    }
    let query = if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    };
    let scheme = &url[..scheme_end + 3];
    Ok(Hosts {
        urls: hosts
            .iter()
            .map(|host| format!("{scheme}{userinfo}{host}{path}{query}"))
            .collect(),
        attrs: attrs.unwrap_or(SessionAttrs::Any),
    })
}

/// True when `conn`'s sessions qualify under `attrs`.
async fn qualifies(conn: &mut PgConnection, attrs: SessionAttrs) -> Result<bool, sqlx::Error> {
    if attrs == SessionAttrs::Any {
        sqlx::query("SELECT 1").execute(&mut *conn).await?;
        return Ok(true);
    }
    let read_only: String = sqlx::query_scalar("SHOW transaction_read_only")
        .fetch_one(&mut *conn)
        .await?;
    Ok(read_only == "off")
}

/// Connects to `options` and checks it, within `HOST_TIMEOUT`; the open session if the
/// host qualifies.
async fn try_host(options: &PgConnectOptions, attrs: SessionAttrs) -> Option<PgConnection> {
    let attempt = async {
        let mut conn = PgConnection::connect_with(options).await.ok()?;
        match qualifies(&mut conn, attrs).await {
            Ok(true) => Some(conn),
            _ => {
                let _ = conn.close().await;
                None
            }
        }
    };
    tokio::time::timeout(HOST_TIMEOUT, attempt).await.ok()?
}

/// The first of `candidates` (in order) that qualifies, with a session to it; `None` when
/// none does now.
pub(super) async fn choose(
    candidates: &[PgConnectOptions],
    attrs: SessionAttrs,
) -> Option<(usize, PgConnection)> {
    for (i, options) in candidates.iter().enumerate() {
        if let Some(conn) = try_host(options, attrs).await {
            return Some((i, conn));
        }
    }
    None
}

/// [`choose`] again every [`PROBE_EVERY`] until one qualifies or `wait` has passed; the
/// error names the hosts (redacted) when none did.
pub(super) async fn choose_within(
    url: &str,
    candidates: &[PgConnectOptions],
    attrs: SessionAttrs,
    wait: Duration,
) -> Result<(usize, PgConnection), Error> {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(found) = choose(candidates, attrs).await {
            return Ok(found);
        }
        if Instant::now() >= deadline {
            let wanted = match attrs {
                SessionAttrs::Any => "answered",
                SessionAttrs::ReadWrite => "accepted writes",
            };
            return Err(Error::Database(format!(
                "no host of {} {wanted} within {} s",
                crate::redact_url(url),
                wait.as_secs()
            )));
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

/// One-host connect options of every host of `config`'s URL.
pub(super) fn candidates(config: &PgConfig, hosts: &Hosts) -> Result<Vec<PgConnectOptions>, Error> {
    hosts
        .urls
        .iter()
        .map(|u| {
            PgConnectOptions::from_str(u).map_err(|e| Error::Config {
                reason: format!("bad postgres URL {}: {e}", crate::redact_url(&config.url)),
            })
        })
        .collect()
}

/// Keeps `pool` on the writable host of `config`'s hosts (see the module docs): a task
/// that ends when the pool is closed. Nothing to do for a one-host URL.
pub(super) fn follow(pool: &PgPool, config: &PgConfig) {
    let Ok(Some((candidates, attrs))) = config.host_candidates() else {
        return;
    };
    let pool = pool.clone();
    tokio::spawn(async move {
        let mut probe: Option<PgConnection> = None;
        loop {
            tokio::time::sleep(PROBE_EVERY).await;
            if pool.is_closed() {
                return;
            }
            if let Some(conn) = probe.as_mut() {
                let check = tokio::time::timeout(HOST_TIMEOUT, qualifies(conn, attrs)).await;
                if matches!(check, Ok(Ok(true))) {
                    continue;
                }
                probe = None;
            }
            let current = pool.connect_options();
            // The pool's host first: a broken probe session alone is no failover.
            let order: Vec<usize> = {
                let first = candidates.iter().position(|c| same_host(c, &current));
                first
                    .into_iter()
                    .chain((0..candidates.len()).filter(|i| Some(*i) != first))
                    .collect()
            };
            let ordered: Vec<PgConnectOptions> =
                order.iter().map(|i| candidates[*i].clone()).collect();
            let Some((i, conn)) = choose(&ordered, attrs).await else {
                continue;
            };
            probe = Some(conn);
            let chosen = &ordered[i];
            if !same_host(chosen, &current) {
                pool.set_connect_options(chosen.clone());
                // Idle sessions to the old host would pass the ping if it still runs
                // (demoted to a standby): close them.
                for _ in 0..pool.num_idle() {
                    match pool.try_acquire() {
                        Some(conn) => {
                            let _ = conn.close().await;
                        }
                        None => break,
                    }
                }
            }
        }
    });
}

fn same_host(a: &PgConnectOptions, b: &PgConnectOptions) -> bool {
    a.get_host() == b.get_host() && a.get_port() == b.get_port()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_host_url_is_passed_on_unchanged() {
        for url in [
            "postgres://u:pw@127.0.0.1:5432/db",
            "postgres://u@h/db?sslmode=disable&options=-c%20search_path%3Dx",
            "postgresql://h",
        ] {
            let hosts = parse(url).unwrap();
            assert_eq!(hosts.urls, vec![url.to_string()]);
            assert_eq!(hosts.attrs, SessionAttrs::Any);
        }
    }

    #[test]
    fn a_host_list_becomes_one_url_per_host() {
        let hosts = parse(
            "postgres://u:pw@127.0.0.1:5001,127.0.0.1:5002,[::1]:5003/db?sslmode=disable&target_session_attrs=read-write&application_name=x",
        )
        .unwrap();
        assert_eq!(hosts.attrs, SessionAttrs::ReadWrite);
        assert_eq!(
            hosts.urls,
            vec![
                "postgres://u:pw@127.0.0.1:5001/db?sslmode=disable&application_name=x",
                "postgres://u:pw@127.0.0.1:5002/db?sslmode=disable&application_name=x",
                "postgres://u:pw@[::1]:5003/db?sslmode=disable&application_name=x",
            ]
        );
        let hosts = parse("postgres://a,b").unwrap();
        assert_eq!(hosts.urls, vec!["postgres://a", "postgres://b"]);
        assert_eq!(hosts.attrs, SessionAttrs::Any);
        let one = parse("postgres://u@h:1/db?target_session_attrs=primary").unwrap();
        assert_eq!(one.urls, vec!["postgres://u@h:1/db"]);
        assert_eq!(one.attrs, SessionAttrs::ReadWrite);
        assert_eq!(
            parse("postgres://h1,h2/db?target_session_attrs=any")
                .unwrap()
                .attrs,
            SessionAttrs::Any
        );
    }

    #[test]
    fn bad_host_lists_are_refused_without_the_password() {
        for url in [
            "postgres://u:secretpw@h1,,h2/db",
            "postgres://u:secretpw@h1,h2/db?target_session_attrs=standby",
            "u:secretpw@h1,h2/db",
        ] {
            let err = parse(url).unwrap_err().to_string();
            assert!(!err.contains("secretpw"), "{err}");
            assert!(err.contains("bad postgres URL"), "{err}");
        }
    }

    #[test]
    fn every_host_url_is_valid_for_sqlx() {
        let config = PgConfig::new(
            "postgres://u:pw@127.0.0.1:5001,localhost:5002/db?target_session_attrs=read-write",
        );
        let (candidates, attrs) = config.host_candidates().unwrap().unwrap();
        assert_eq!(attrs, SessionAttrs::ReadWrite);
        let hosts: Vec<(String, u16)> = candidates
            .iter()
            .map(|c| (c.get_host().to_string(), c.get_port()))
            .collect();
        assert_eq!(
            hosts,
            vec![("127.0.0.1".into(), 5001), ("localhost".into(), 5002)]
        );
        assert!(
            PgConfig::new("postgres://u@h/db")
                .host_candidates()
                .unwrap()
                .is_none()
        );
    }

    /// Host choice against real servers: a closed port is passed over, the first that
    /// answers and can write is taken. Needs `STABLECOIN_TEST_PG_URL` (one writable
    /// server); the read-only case is `default_transaction_read_only` on a session of it.
    #[tokio::test]
    async fn the_first_writable_host_is_chosen() {
        let Ok(url) = std::env::var("STABLECOIN_TEST_PG_URL") else {
            if std::env::var_os("STABLECOIN_REQUIRE_PG").is_some() {
                panic!("STABLECOIN_TEST_PG_URL is not set but STABLECOIN_REQUIRE_PG is");
            }
            eprintln!(
                "SKIPPED the_first_writable_host_is_chosen: STABLECOIN_TEST_PG_URL is not set"
            );
            return;
        };
        let live = PgConnectOptions::from_str(&url).unwrap();
        let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dead = live.clone().host("127.0.0.1").port(closed_port);
        let read_only = live
            .clone()
            .options([("default_transaction_read_only", "on")]);
        let (i, _) = choose(
            &[dead.clone(), read_only.clone(), live.clone()],
            SessionAttrs::ReadWrite,
        )
        .await
        .unwrap();
        assert_eq!(i, 2, "the dead and the read-only host are passed over");
        let (i, _) = choose(&[dead.clone(), read_only.clone()], SessionAttrs::Any)
            .await
            .unwrap();
        assert_eq!(i, 1, "with `any`, the first that answers");
        assert!(
            choose(&[dead, read_only], SessionAttrs::ReadWrite)
                .await
                .is_none()
        );
    }
}
