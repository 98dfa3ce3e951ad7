//! Sessions of the web consoles (the tenant dashboard and the staff console), stored.
//!
//! Why stored and not only a signed cookie: a signed cookie cannot be taken back. A
//! stored session is ended by writing to it, and every server of a deployment reads the
//! same store (memory, SQLite or PostgreSQL), so signing out on one node ends the
//! session on all of them at once, and a cookie copied before sign-out is worth nothing
//! after it.
//!
//! A session also keeps the credential it was opened with, which the host checks on
//! every request: the API key (revoking it ends the session), the staff account
//! (disabling it ends the session) or a fingerprint of the admin token (a server started
//! with another token no longer matches, so rotating the token ends its sessions).

use super::Engine;
use crate::domain::ids::{ApiKeyId, TenantId};
use crate::domain::time::Timestamp;
use crate::engine::KeyMode;
use crate::error::CoreResult;
use crate::ports::kinds::kind;
use crate::ports::record::{Record, get_record};
use crate::ports::store::Batch;
use serde::{Deserialize, Serialize};

/// The id prefix of console sessions (`css_...`).
pub const CONSOLE_SESSION_PREFIX: &str = "css";

/// The longest a console session lasts (a host asking more gets this).
pub const MAX_CONSOLE_SESSION_TTL_MS: i64 = 24 * 3_600_000;

/// How long a session's record is kept after it was opened (the retention purge):
/// a week, well past [`MAX_CONSOLE_SESSION_TTL_MS`], so only dead sessions are deleted
/// and recent ones stay inspectable.
pub const CONSOLE_SESSION_RETENTION_MS: i64 = 7 * 24 * 3_600_000;

/// The credential a console session was opened with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConsoleSubject {
    /// A tenant's dashboard session, opened with one of its tenant API keys.
    Tenant {
        /// The tenant every page shows.
        tenant: TenantId,
        /// The key signed in with: revoking it ends the session.
        key_id: ApiKeyId,
        /// The key's mode: a test session sees and does only the sandbox's.
        mode: KeyMode,
    },
    /// A staff console session opened with a staff account's secret.
    Staff {
        /// The account (`stf_...`): disabling it ends the session.
        staff_id: String,
    },
    /// A staff console session opened with the shared admin token.
    AdminToken {
        /// A keyed fingerprint of the token (never the token): a server with another
        /// token computes another fingerprint, and the session ends.
        fingerprint: String,
    },
}

/// One console session as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleSession {
    /// `css_...`, named by the (signed) session cookie.
    pub id: String,
    /// Who it is for and with what credential.
    pub subject: ConsoleSubject,
    /// When it was opened.
    pub created_at: Timestamp,
    /// When it ends by itself.
    pub expires_at: Timestamp,
    /// When it was ended (signed out); an ended session never comes back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
}

impl ConsoleSession {
    /// True while it may be used: not ended and not expired at `now`.
    pub fn is_live(&self, now: Timestamp) -> bool {
        self.ended_at.is_none() && now < self.expires_at
    }
}

impl Record for ConsoleSession {
    const KIND: &'static str = kind::CONSOLE_SESSION;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        match &self.subject {
            ConsoleSubject::Tenant { tenant, .. } => Some(tenant.0.clone()),
            _ => Some(crate::kernel::staff::STAFF_LIST_OWNER.into()),
        }
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(
            if self.ended_at.is_some() {
                "ended"
            } else {
                "open"
            }
            .into(),
        )
    }
}

impl Engine {
    /// Opens a console session for `subject`, valid for `ttl_ms` from now (at most
    /// [`MAX_CONSOLE_SESSION_TTL_MS`]).
    pub async fn open_console_session(
        &self,
        subject: ConsoleSubject,
        ttl_ms: i64,
    ) -> CoreResult<ConsoleSession> {
        let now = self.now();
        let session = ConsoleSession {
            id: self.new_id(CONSOLE_SESSION_PREFIX),
            subject,
            created_at: now,
            expires_at: Timestamp::from_millis(
                now.millis()
                    .saturating_add(ttl_ms.clamp(0, MAX_CONSOLE_SESSION_TTL_MS)),
            ),
            ended_at: None,
        };
        self.commit(Batch {
            puts: vec![session.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(session)
    }

    /// The session `id` while it is live (not ended, not expired); `None` otherwise,
    /// and for an unknown id. Read from the store on every call: no cache, so an end
    /// written by any server is seen by the next request everywhere.
    pub async fn console_session(&self, id: &str) -> CoreResult<Option<ConsoleSession>> {
        if !id.starts_with("css_") || id.len() > 64 {
            return Ok(None);
        }
        let now = self.now();
        Ok(get_record::<ConsoleSession>(&*self.ports().store, id)
            .await?
            .map(|v| v.record)
            .filter(|s| s.is_live(now)))
    }

    /// Ends the session `id` (sign-out); ending an ended or unknown session is harmless.
    pub async fn end_console_session(&self, id: &str) -> CoreResult<()> {
        let Some(v) = get_record::<ConsoleSession>(&*self.ports().store, id).await? else {
            return Ok(());
        };
        if v.record.ended_at.is_some() {
            return Ok(());
        }
        let mut s = v.record;
        s.ended_at = Some(self.now());
        self.commit(Batch {
            puts: vec![s.update(v.version)?],
            ..Default::default()
        })
        .await?;
        Ok(())
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;
    use crate::engine::Retention;

    use crate::engine::test_engine::engine;

    fn staff() -> ConsoleSubject {
        ConsoleSubject::Staff {
            staff_id: "stf_1".into(),
        }
    }

    #[tokio::test]
    async fn a_session_lives_until_ended_or_expired_and_is_purged_later() {
        let (e, clock) = engine();
        let a = e.open_console_session(staff(), 60_000).await.unwrap();
        let b = e.open_console_session(staff(), 60_000).await.unwrap();
        assert_ne!(a.id, b.id);
        assert_eq!(e.console_session(&a.id).await.unwrap(), Some(a.clone()));
        e.end_console_session(&a.id).await.unwrap();
        e.end_console_session(&a.id).await.unwrap();
        assert_eq!(e.console_session(&a.id).await.unwrap(), None, "ended");
        assert!(e.console_session(&b.id).await.unwrap().is_some());
        clock.advance_ms(60_000);
        assert_eq!(e.console_session(&b.id).await.unwrap(), None, "expired");
        assert_eq!(e.console_session("nope").await.unwrap(), None);
        // A host asking for a year gets the longest a session lasts.
        let c = e.open_console_session(staff(), i64::MAX).await.unwrap();
        assert_eq!(
            c.expires_at.millis() - c.created_at.millis(),
            MAX_CONSOLE_SESSION_TTL_MS
        );
        clock.advance_ms(CONSOLE_SESSION_RETENTION_MS + 1);
        let report = e.purge_expired(&Retention::default()).await.unwrap();
        assert_eq!(report.console_sessions, 3);
    }
}
