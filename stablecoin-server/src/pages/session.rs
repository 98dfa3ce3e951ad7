//! Sessions of the web consoles (the tenant dashboard and the staff console): the
//! session cookie and the CSRF tokens bound to it.
//!
//! Why a stored session behind a signed cookie: the session itself is a record of the
//! engine (`ConsoleSession`, in the deployment's store), so signing out, revoking the
//! key, disabling the staff account or rotating the admin token ends it at once on
//! every server (the host checks the record and its credential on every request). The
//! cookie only names the record: `<session id>.<expiry>.<HMAC>`, signed with a key every
//! server derives alike (`CONSOLE_SESSION_KEY_LABEL`), so a forged or truncated cookie
//! is refused before the store is asked.
//!
//! The cookie is `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's
//! page sends it) and `Path=/`. When the server is reached over TLS, as configuration
//! says (`consoles.public_url` with `https`, production mode, or `X-Forwarded-Proto`
//! from a configured trusted proxy; never a client's header alone), it is also `Secure`
//! and named with the `__Host-` prefix, which browsers accept only from a secure origin,
//! without `Domain` and on `Path=/`. Plain-HTTP development servers use the bare name
//! without `Secure` (browsers refuse `__Host-` cookies over plain HTTP).
//!
//! Every form carries a CSRF token, `HMAC(key, "csrf:" + cookie)`: only a page rendered
//! for this session holds it (SameSite already keeps other sites' requests from carrying
//! the cookie; the token is the second lock). The sign-in form, before any session,
//! carries one bound to a short-lived pre-session cookie instead.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;

/// How long a session lasts after sign-in, in milliseconds (8 hours: a working day).
pub const SESSION_TTL_MS: i64 = 8 * 3_600_000;
/// How long a sign-in form may be submitted after it was shown, in milliseconds (10
/// minutes: time to paste a credential, not to keep a form open for a replay).
pub const PRE_SESSION_TTL_MS: i64 = 10 * 60_000;

/// A session cookie whose signature checked out and that has not expired: it names a
/// stored session, which the caller still reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedSession {
    /// The stored session's id (`css_...`).
    pub id: String,
    /// When it ends, Unix milliseconds.
    pub expires_ms: i64,
    /// The whole cookie value, which the CSRF token is bound to.
    pub cookie: String,
}

/// The key sessions and CSRF tokens are signed with.
#[derive(Clone)]
pub struct SessionKeys {
    key: [u8; 32],
}

impl fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionKeys(<redacted>)")
    }
}

/// True for the characters ids may have inside a cookie (no separator, nothing a
/// cookie forbids).
fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn random_nonce() -> String {
    let mut b = [0u8; 16];
    // The OS random source does not fail on a supported platform; a zero nonce would
    // still be signed, only not unique.
    let _ = getrandom::fill(&mut b);
    hex(&b)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl SessionKeys {
    /// Keys over `key` (32 bytes derived for this purpose only).
    pub fn new(key: [u8; 32]) -> Self {
        SessionKeys { key }
    }

    fn mac(&self, purpose: &str, data: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        mac.update(purpose.as_bytes());
        mac.update(b":");
        mac.update(data.as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    fn same(a: &str, b: &str) -> bool {
        use subtle::ConstantTimeEq;
        a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
    }

    /// The cookie value naming the stored session `id`, which ends at `expires_ms`.
    /// `None` when the id has characters a cookie cannot carry (never the engine's ids).
    pub fn issue(&self, id: &str, expires_ms: i64) -> Option<String> {
        if !plain(id) {
            return None;
        }
        let body = format!("{id}.{expires_ms}");
        let sig = self.mac("session", &body);
        Some(format!("{body}.{sig}"))
    }

    /// The session a cookie value names, when its signature is this deployment's and it
    /// has not expired. Anything else (tampered, truncated, expired, malformed) is `None`.
    pub fn verify(&self, cookie: &str, now_ms: i64) -> Option<SignedSession> {
        if cookie.len() > 400 {
            return None;
        }
        let (body, sig) = cookie.rsplit_once('.')?;
        if !Self::same(&self.mac("session", body), sig) {
            return None;
        }
        let (id, exp) = body.split_once('.')?;
        if !plain(id) {
            return None;
        }
        let expires_ms: i64 = exp.parse().ok()?;
        (now_ms < expires_ms).then(|| SignedSession {
            id: id.to_string(),
            expires_ms,
            cookie: cookie.to_string(),
        })
    }

    /// A keyed fingerprint of a credential (the admin token): stored with a session so a
    /// changed credential is noticed, without storing the credential.
    pub fn fingerprint(&self, credential: &str) -> String {
        self.mac("credential", credential)
    }

    /// The CSRF token of the session whose cookie is `cookie`.
    pub fn csrf_token(&self, cookie: &str) -> String {
        self.mac("csrf", cookie)
    }

    /// True when `token` is the CSRF token of the session `cookie` (constant time).
    pub fn csrf_ok(&self, cookie: &str, token: &str) -> bool {
        Self::same(&self.csrf_token(cookie), token)
    }

    /// A new pre-session cookie value (for a sign-in form), valid for
    /// [`PRE_SESSION_TTL_MS`].
    pub fn issue_pre_session(&self, now_ms: i64) -> String {
        let body = format!(
            "p.{}.{}",
            now_ms.saturating_add(PRE_SESSION_TTL_MS),
            random_nonce()
        );
        let sig = self.mac("pre-session", &body);
        format!("{body}.{sig}")
    }

    /// True when `cookie` is a pre-session cookie of this deployment, not expired, and
    /// `token` is its CSRF token: a sign-in form this server showed, submitted from a
    /// page of this origin.
    pub fn pre_session_ok(&self, cookie: &str, token: &str, now_ms: i64) -> bool {
        let Some((body, sig)) = cookie.rsplit_once('.') else {
            return false;
        };
        if !Self::same(&self.mac("pre-session", body), sig) {
            return false;
        }
        let fresh = match body.split('.').collect::<Vec<_>>().as_slice() {
            ["p", exp, _] => exp.parse::<i64>().is_ok_and(|e| now_ms < e),
            _ => false,
        };
        fresh && self.csrf_ok(cookie, token)
    }
}

/// The value of cookie `name` in a `Cookie` request header, if present.
pub fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

/// The name a cookie called `base` has: `__Host-<base>` when `secure` (a browser then
/// accepts it only over TLS, from this host, on `Path=/`), `base` on plain HTTP.
pub fn cookie_name(base: &str, secure: bool) -> String {
    if secure {
        format!("__Host-{base}")
    } else {
        base.to_string()
    }
}

/// A `Set-Cookie` value for the cookie called `base` (named by [`cookie_name`]):
/// HttpOnly, SameSite=Strict, Path=/, no Domain, `Secure` when `secure`; `max_age_s` 0
/// deletes the cookie.
pub fn set_cookie(base: &str, value: &str, max_age_s: i64, secure: bool) -> String {
    format!(
        "{}={value}; Path=/; Max-Age={max_age_s}; HttpOnly; SameSite=Strict{}",
        cookie_name(base, secure),
        if secure { "; Secure" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> SessionKeys {
        SessionKeys::new([7; 32])
    }

    #[test]
    fn a_session_cookie_verifies_until_it_expires_and_only_with_its_key() {
        let k = keys();
        let c = k.issue("css_abc", 5_000).unwrap();
        let s = k.verify(&c, 1_001).unwrap();
        assert_eq!((s.id.as_str(), s.expires_ms), ("css_abc", 5_000));
        assert!(k.verify(&c, 5_000).is_none(), "expired");
        assert!(SessionKeys::new([8; 32]).verify(&c, 1_001).is_none());
    }

    #[test]
    fn tampered_or_malformed_cookies_are_refused() {
        let k = keys();
        let c = k.issue("css_abc", 5_000).unwrap();
        assert!(k.verify(&c.replacen("css_abc", "css_abd", 1), 1).is_none());
        assert!(k.verify(&c.replacen("5000", "9000", 1), 1).is_none());
        for bad in ["", ".", "x.y", &"a".repeat(500), &c[..c.len() - 1]] {
            assert!(k.verify(bad, 1).is_none(), "{bad:?}");
        }
        // A pre-session cookie is not a session, and the reverse.
        let pre = k.issue_pre_session(1_000);
        assert!(k.verify(&pre, 1_001).is_none());
        let tok = k.csrf_token(&c);
        assert!(!k.pre_session_ok(&c, &tok, 1_001));
        assert!(k.issue("a.b", 1).is_none(), "ids a cookie cannot carry");
        assert_ne!(k.fingerprint("a"), k.fingerprint("b"));
    }

    #[test]
    fn csrf_tokens_are_bound_to_their_session() {
        let k = keys();
        let a = k.issue("css_a", 1_000).unwrap();
        let b = k.issue("css_b", 1_000).unwrap();
        let ta = k.csrf_token(&a);
        assert!(k.csrf_ok(&a, &ta));
        assert!(!k.csrf_ok(&b, &ta));
        assert!(!k.csrf_ok(&a, ""));
        assert!(!k.csrf_ok(&a, &ta[..10]));
        let pre = k.issue_pre_session(0);
        let tp = k.csrf_token(&pre);
        assert!(k.pre_session_ok(&pre, &tp, 1));
        assert!(!k.pre_session_ok(&pre, &tp, PRE_SESSION_TTL_MS));
        assert!(!k.pre_session_ok(&pre, &ta, 1));
    }

    #[test]
    fn cookies_are_read_and_written_with_their_attributes() {
        assert_eq!(cookie_value("a=1; sc=xyz; b=2", "sc"), Some("xyz"));
        assert_eq!(cookie_value("a=1", "sc"), None);
        assert_eq!(cookie_value("scx=1", "sc"), None);
        let c = set_cookie("sc", "v", 60, true);
        assert!(c.starts_with("__Host-sc=v; Path=/;"), "{c}");
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.ends_with("Secure"));
        assert!(!c.contains("Domain"));
        let plain = set_cookie("sc", "v", 0, false);
        assert!(plain.starts_with("sc=v;") && !plain.contains("Secure"));
    }
}
