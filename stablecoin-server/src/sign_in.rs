//! What every sign-in shares (the dashboard's, the staff console's, and each staff
//! credential presented to `/admin/v1`): who the client is, whether it reached us over
//! TLS, a throttle on failed attempts, and the audit of each attempt.
//!
//! - **The client's address** is the connection's peer. Only when the peer is one of
//!   `consoles.trusted_proxies` is `X-Forwarded-For` believed (its right-most address
//!   that is not itself a trusted proxy); anyone else's header is ignored, so a client
//!   cannot choose the address it is throttled under.
//! - **TLS** is what configuration says: production mode, `consoles.public_url` with
//!   `https`, or `X-Forwarded-Proto: https` from a trusted proxy. Never a client's header
//!   alone.
//! - **The throttle** counts failed attempts per source address and per credential
//!   (a SHA-256 of what was presented, never the credential). `sign_in_max_failures`
//!   failures within `sign_in_lockout_s` lock that address or credential out for
//!   `sign_in_lockout_s`: every attempt answers 429 `RATE_LIMITED` with `Retry-After`,
//!   and the credential is not even checked. The counters are in memory, per server
//!   process: with N processes behind a balancer an attacker gets at most N times the
//!   budget (the same documented trade-off as the API's rate limits); a restart forgets
//!   them.
//! - **The audit**: every sign-in attempt that is checked, successful or not, is one
//!   entry in the staff audit log (`signin.dashboard`, `signin.console`,
//!   `signin.admin_api`): who (the key id `key:...`, the staff id, `admin-token`, or
//!   `unknown`), from which address, and the outcome. Attempts refused by the throttle
//!   are not written (the throttle is what bounds the log's growth under attack).
//!   `/admin/v1` has no session: each request carries the credential, so a failure is
//!   audited each time, and a success when it is the first of that credential from
//!   that source within `sign_in_lockout_s` (per process, like the throttle).

use crate::config::Mode;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap, StatusCode};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

pub use crate::sign_in_throttle::Client;

impl Client {
    /// Reads the client of a request from its peer and headers.
    pub fn of(app: &AppState, parts: &Parts) -> Client {
        Client::of_head(app, &parts.extensions, &parts.headers)
    }

    /// [`Client::of`] over a request's extensions and headers.
    pub fn of_head(app: &AppState, extensions: &Extensions, headers: &HeaderMap) -> Client {
        let peer = extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip());
        let proxies = app.config.consoles.proxies();
        let trusted = |ip: IpAddr| proxies.iter().any(|n| n.contains(ip));
        let via_proxy = peer.is_some_and(trusted);
        let header = |name: &str| {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect::<Vec<_>>()
                .join(",")
        };
        let ip = if via_proxy {
            let forwarded = header("x-forwarded-for");
            forwarded
                .split(',')
                .rev()
                .filter_map(|s| s.trim().parse::<IpAddr>().ok())
                .find(|ip| !trusted(*ip))
                .or(peer)
        } else {
            peer
        };
        let proto_https = via_proxy
            && header("x-forwarded-proto")
                .rsplit(',')
                .next()
                .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"));
        let tls = app.config.mode == Mode::Production
            || app.config.consoles.public_https()
            || proto_https;
        Client { ip, tls }
    }
}

impl FromRequestParts<AppState> for Client {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, Infallible> {
        Ok(Client::of(app, parts))
    }
}

pub use crate::sign_in_throttle::SignInThrottle;

/// 429 `RATE_LIMITED` with `Retry-After` for a locked-out sign-in.
pub fn throttled(retry_after_s: u64) -> ApiError {
    let mut e = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "RATE_LIMITED",
        format!("too many failed sign-ins: try again in {retry_after_s} s"),
    );
    e.retry_after_secs = Some(retry_after_s as i64);
    e
}

/// The time the throttle counts in: the engines' clock, Unix milliseconds.
pub fn now_ms(app: &AppState) -> i64 {
    app.engine.ports().clock.now().millis()
}

/// Checks the throttle before a credential is checked: `Err` (429) when the source or
/// the credential is locked out.
pub fn before(app: &AppState, client: &Client, credential: &str) -> Result<(), ApiError> {
    let keys = SignInThrottle::keys(client, credential);
    match app.sign_in_throttle.locked(&keys, now_ms(app)) {
        Some(s) => Err(throttled(s)),
        None => Ok(()),
    }
}

/// Records the outcome of a checked sign-in: the throttle counts a failure (or forgets
/// the credential's failures on success), and the attempt is audited. `who` is the
/// identity that signed in, or `None` for a failure; `outcome` is `ok` or the stable
/// code of the refusal.
pub async fn after(
    app: &AppState,
    client: &Client,
    credential: &str,
    action: &str,
    who: Option<&str>,
    outcome: &str,
) {
    let keys = SignInThrottle::keys(client, credential);
    match who {
        Some(_) => app.sign_in_throttle.succeeded(&keys[1]),
        None => app.sign_in_throttle.failed(&keys, now_ms(app)),
    }
    let note = format!("{outcome} from {}", client.source());
    if let Err(e) = app
        .engine
        .record_staff_action(
            who.unwrap_or("unknown"),
            action,
            &client.source(),
            Some(&note),
        )
        .await
    {
        tracing::warn!(error = %e, action, "sign-in audit not recorded");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> Client {
        Client {
            ip: Some("10.0.0.1".parse().unwrap()),
            tls: false,
        }
    }

    #[test]
    fn failures_lock_out_the_source_and_the_credential_for_a_while() {
        let t = SignInThrottle::new(3, 60);
        let keys = SignInThrottle::keys(&client(), "guess");
        for _ in 0..2 {
            t.failed(&keys, 0);
            assert_eq!(t.locked(&keys, 0), None);
        }
        t.failed(&keys, 1_000);
        assert_eq!(t.locked(&keys, 1_000), Some(60));
        // Another credential from the same source is locked too, and the same
        // credential from another source.
        let other = SignInThrottle::keys(&client(), "other");
        assert!(t.locked(&other, 2_000).is_some());
        let elsewhere = SignInThrottle::keys(
            &Client {
                ip: Some("10.0.0.2".parse().unwrap()),
                tls: false,
            },
            "guess",
        );
        assert!(t.locked(&elsewhere, 2_000).is_some());
        assert_eq!(t.locked(&keys, 61_000), None, "the lockout ends");
        // Failures far apart never add up to a lockout.
        let t = SignInThrottle::new(2, 10);
        t.failed(&keys, 0);
        t.failed(&keys, 20_000);
        assert_eq!(t.locked(&keys, 20_000), None);
    }
}
