//! Sessions of the web consoles (the tenant dashboard and the staff console): signed
//! cookies and the CSRF tokens bound to them.
//!
//! Why signed cookies and no session table: every server of a deployment derives the
//! same key (`CONSOLE_SESSION_KEY_LABEL`, from the master seed or the signing service),
//! so a session signed by one is honoured by the others, and nothing is written per
//! sign-in. What a stateless session cannot do by itself, end early, is done by what it
//! names: a tenant session names its API key, which is checked on every request, so
//! revoking the key ends every session opened with it; a staff session names its staff
//! account, checked the same way. Signing out clears the cookie in that browser.
//!
//! The cookie is `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's
//! page sends it), `Path=/` and `Secure` when the server runs in production mode or the
//! request came through a TLS proxy (`X-Forwarded-Proto: https`). It carries no secret:
//! only ids, the mode, the expiry and a random nonce, with an HMAC-SHA256 over them.
//!
//! Every form carries a CSRF token, `HMAC(key, "csrf:" + cookie)`: only a page rendered
//! for this session holds it (SameSite already keeps other sites' requests from carrying
//! the cookie; the token is the second lock). The sign-in form, before any session,
//! carries one bound to a short-lived pre-session cookie instead.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use stablecoin_core::domain::ids::{ApiKeyId, TenantId};
use stablecoin_core::engine::KeyMode;
use std::fmt;

/// How long a session lasts after sign-in, in milliseconds (8 hours: a working day).
pub const SESSION_TTL_MS: i64 = 8 * 3_600_000;
/// How long a sign-in form may be submitted after it was shown, in milliseconds.
pub const PRE_SESSION_TTL_MS: i64 = 30 * 60_000;

/// Who a session is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    /// A tenant, signed in with one of its tenant API keys (the dashboard).
    Tenant {
        /// The tenant every page of the session shows.
        tenant: TenantId,
        /// The key it signed in with: revoking it ends the session.
        key_id: ApiKeyId,
        /// The key's mode: live data and actions, or the sandbox's.
        mode: KeyMode,
    },
    /// A member of service staff (the staff console).
    Staff {
        /// The staff identity (`stf_...`, or `admin-token`).
        id: String,
    },
}

/// A verified session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// Who it is for.
    pub principal: Principal,
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

    /// A new session cookie value for `principal`, valid until `now_ms + SESSION_TTL_MS`.
    /// `None` when an id has characters a cookie cannot carry (never for the engine's ids).
    pub fn issue(&self, principal: &Principal, now_ms: i64) -> Option<String> {
        let exp = now_ms.saturating_add(SESSION_TTL_MS);
        let body = match principal {
            Principal::Tenant {
                tenant,
                key_id,
                mode,
            } => {
                if !plain(&tenant.0) || !plain(&key_id.0) {
                    return None;
                }
                let m = match mode {
                    KeyMode::Live => "live",
                    KeyMode::Test => "test",
                };
                format!("t.{}.{}.{m}.{exp}.{}", tenant.0, key_id.0, random_nonce())
            }
            Principal::Staff { id } => {
                if !plain(id) {
                    return None;
                }
                format!("s.{id}.{exp}.{}", random_nonce())
            }
        };
        let sig = self.mac("session", &body);
        Some(format!("{body}.{sig}"))
    }

    /// The session of a cookie value, when its signature is this deployment's and it has
    /// not expired. Anything else (tampered, truncated, expired, malformed) is `None`.
    pub fn verify(&self, cookie: &str, now_ms: i64) -> Option<Session> {
        if cookie.len() > 400 {
            return None;
        }
        let (body, sig) = cookie.rsplit_once('.')?;
        if !Self::same(&self.mac("session", body), sig) {
            return None;
        }
        let parts: Vec<&str> = body.split('.').collect();
        let (principal, exp) = match parts.as_slice() {
            ["t", tenant, key, mode, exp, _nonce] => (
                Principal::Tenant {
                    tenant: TenantId(tenant.to_string()),
                    key_id: ApiKeyId(key.to_string()),
                    mode: match *mode {
                        "live" => KeyMode::Live,
                        "test" => KeyMode::Test,
                        _ => return None,
                    },
                },
                exp,
            ),
            ["s", id, exp, _nonce] => (Principal::Staff { id: id.to_string() }, exp),
            _ => return None,
        };
        let expires_ms: i64 = exp.parse().ok()?;
        (now_ms < expires_ms).then(|| Session {
            principal,
            expires_ms,
            cookie: cookie.to_string(),
        })
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

/// A `Set-Cookie` value: HttpOnly, SameSite=Strict, Path=/, `Secure` when `secure`;
/// `max_age_s` 0 deletes the cookie.
pub fn set_cookie(name: &str, value: &str, max_age_s: i64, secure: bool) -> String {
    format!(
        "{name}={value}; Path=/; Max-Age={max_age_s}; HttpOnly; SameSite=Strict{}",
        if secure { "; Secure" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> SessionKeys {
        SessionKeys::new([7; 32])
    }

    fn tenant() -> Principal {
        Principal::Tenant {
            tenant: TenantId("ten_abc".into()),
            key_id: ApiKeyId("key_def".into()),
            mode: KeyMode::Test,
        }
    }

    #[test]
    fn a_session_verifies_until_it_expires_and_only_with_its_key() {
        let k = keys();
        let c = k.issue(&tenant(), 1_000).unwrap();
        let s = k.verify(&c, 1_001).unwrap();
        assert_eq!(s.principal, tenant());
        assert_eq!(s.expires_ms, 1_000 + SESSION_TTL_MS);
        assert!(k.verify(&c, 1_000 + SESSION_TTL_MS).is_none(), "expired");
        assert!(SessionKeys::new([8; 32]).verify(&c, 1_001).is_none());
        let staff = Principal::Staff {
            id: "stf_123".into(),
        };
        let c2 = k.issue(&staff, 5).unwrap();
        assert_eq!(k.verify(&c2, 6).unwrap().principal, staff);
    }

    #[test]
    fn tampered_or_malformed_cookies_are_refused() {
        let k = keys();
        let c = k.issue(&tenant(), 1_000).unwrap();
        // Another tenant, same signature.
        let forged = c.replacen("ten_abc", "ten_xyz", 1);
        assert!(k.verify(&forged, 1_001).is_none());
        // A live mode claimed by a test session.
        assert!(
            k.verify(&c.replacen(".test.", ".live.", 1), 1_001)
                .is_none()
        );
        for bad in [
            "",
            ".",
            "t.a.b.live.9.n",
            "x.y",
            &"a".repeat(500),
            &c[..c.len() - 1],
        ] {
            assert!(k.verify(bad, 1_001).is_none(), "{bad:?}");
        }
        // A pre-session cookie is not a session, and the reverse.
        let pre = k.issue_pre_session(1_000);
        assert!(k.verify(&pre, 1_001).is_none());
        let tok = k.csrf_token(&c);
        assert!(!k.pre_session_ok(&c, &tok, 1_001));
        // Ids a cookie cannot carry are not issued.
        let odd = Principal::Staff { id: "a.b".into() };
        assert!(k.issue(&odd, 1).is_none());
    }

    #[test]
    fn csrf_tokens_are_bound_to_their_session() {
        let k = keys();
        let a = k.issue(&tenant(), 1_000).unwrap();
        let b = k.issue(&tenant(), 1_000).unwrap();
        assert_ne!(a, b, "each sign-in has its own nonce");
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
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.ends_with("Secure"));
        assert!(!set_cookie("sc", "v", 0, false).contains("Secure"));
    }
}
