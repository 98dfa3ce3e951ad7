//! Failed sign-ins per source address and per credential, in memory (see
//! [`crate::sign_in`]). Its own module because the server's state holds the throttle and
//! the sign-in extractors take the state: in `sign_in` they were one import cycle
//! (issue #45).

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

/// The client of a request, as far as configuration lets us know it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    /// Its address (`None` only when the request did not come through the listener,
    /// e.g. a test calling the router directly).
    pub ip: Option<IpAddr>,
    /// True when it reached us over TLS: cookies are `Secure` and `__Host-` prefixed.
    pub tls: bool,
}

impl Client {
    /// The address as the audit and the throttle name it.
    pub fn source(&self) -> String {
        self.ip
            .map_or_else(|| "unknown".into(), |ip| ip.to_string())
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    failures: u32,
    since_ms: i64,
    locked_until_ms: i64,
}

/// Entries kept before the stale ones are forgotten.
const MAX_ENTRIES: usize = 100_000;

/// Failed sign-ins per source address and per credential, in memory.
pub struct SignInThrottle {
    max_failures: u32,
    lockout_ms: i64,
    entries: Mutex<HashMap<String, Entry>>,
    /// When each (credential, source) last had a successful `/admin/v1` sign-in
    /// audited.
    audited: Mutex<HashMap<String, i64>>,
}

impl SignInThrottle {
    /// A throttle allowing `max_failures` failures per `lockout_s`, then locking out
    /// for `lockout_s`.
    pub fn new(max_failures: u32, lockout_s: u64) -> Self {
        SignInThrottle {
            max_failures: max_failures.max(1),
            lockout_ms: (lockout_s.max(1) as i64).saturating_mul(1000),
            entries: Mutex::new(HashMap::new()),
            audited: Mutex::new(HashMap::new()),
        }
    }

    /// True when a successful use of a credential from a source (`keys`, as
    /// [`SignInThrottle::keys`] makes them) is a new sign-in to audit: the first one in
    /// `sign_in_lockout_s`. `/admin/v1` has no session, so each request carries the
    /// credential; auditing every request would bury the log, auditing none would hide
    /// who signed in.
    pub fn new_sign_in(&self, keys: &[String; 2], now_ms: i64) -> bool {
        let mut map = self.audited.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_ENTRIES {
            let window = self.lockout_ms;
            map.retain(|_, at| now_ms - *at < window);
        }
        let k = format!("{}|{}", keys[0], keys[1]);
        match map.get(&k) {
            Some(at) if now_ms - *at < self.lockout_ms => false,
            _ => {
                map.insert(k, now_ms);
                true
            }
        }
    }

    /// The throttle's keys of an attempt: its source and its credential's hash.
    pub fn keys(client: &Client, credential: &str) -> [String; 2] {
        let h = Sha256::digest(credential.trim().as_bytes());
        let hex: String = h[..16].iter().map(|b| format!("{b:02x}")).collect();
        [format!("ip:{}", client.source()), format!("cred:{hex}")]
    }

    /// Seconds until an attempt under `keys` may be made, when one of them is locked.
    pub fn locked(&self, keys: &[String], now_ms: i64) -> Option<u64> {
        let map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        keys.iter()
            .filter_map(|k| map.get(k))
            .map(|e| e.locked_until_ms - now_ms)
            .filter(|left| *left > 0)
            .max()
            .map(|ms| (ms as u64).div_ceil(1000).max(1))
    }

    /// Counts one failed attempt under each of `keys`.
    pub fn failed(&self, keys: &[String], now_ms: i64) {
        let mut map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_ENTRIES {
            let window = self.lockout_ms;
            map.retain(|_, e| e.locked_until_ms > now_ms || now_ms - e.since_ms < window);
        }
        for k in keys {
            let e = map.entry(k.clone()).or_insert(Entry {
                failures: 0,
                since_ms: now_ms,
                locked_until_ms: 0,
            });
            if now_ms - e.since_ms >= self.lockout_ms {
                *e = Entry {
                    failures: 0,
                    since_ms: now_ms,
                    locked_until_ms: 0,
                };
            }
            e.failures += 1;
            if e.failures >= self.max_failures {
                e.locked_until_ms = now_ms + self.lockout_ms;
                e.failures = 0;
                e.since_ms = now_ms;
            }
        }
    }

    /// Forgets the failures of a credential that just signed in.
    pub fn succeeded(&self, credential_key: &str) {
        let mut map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(credential_key);
    }
}
