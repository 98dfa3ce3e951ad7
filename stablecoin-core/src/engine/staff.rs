//! Service staff accounts and the staff audit log.
//!
//! Why accounts: one shared admin token cannot say WHO resolved a dispute or authorised
//! a recovery. A staff account has its own secret (`stf_sk_` + 32 characters, shown
//! once, stored only as a SHA-256 hash like an API key: 160 random bits need no slow
//! hash) and its own id (`stf_...`), which the escrow history and the audit log record.
//! Accounts are disabled, never deleted, so an old audit entry always names a real one.
//!
//! Why an audit log beside the deal histories: a deal's history says what happened to
//! that deal; staff oversight needs the other axis, everything one person did, across
//! tenants and features, newest first. Every staff decision that moves money writes its
//! entry IN THE SAME COMMIT as the decision (top-up confirmations and treasury credits
//! here in the core, escrow resolutions and recoveries in the escrow crate through
//! [`StaffAuditEntry::new`]): an entry written afterwards can be lost to a crash or an
//! error while the money moved. Creating and disabling accounts write their own.
//!
//! Why [`StaffIdentity`]: a decision that moves money must name a staff member whom
//! the host PROVED (a staff account's secret, or the host's admin token), never a name
//! someone typed. The two-person rule compares identities: the admin token is ONE
//! identity (`admin-token`), so it can never approve its own proposal.
//!
//! Staff records belong to no tenant: they are listed under the reserved list owner
//! [`STAFF_LIST_OWNER`], which no tenant id can equal (tenant ids are `ten_...`).

use super::Engine;
use crate::domain::consent::hex;
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::kinds::{key, kind, namespace};
use crate::ports::record::{Record, get_record, get_record_by_unique};
use crate::ports::store::{Batch, ListQuery};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// The reserved list owner of staff accounts and audit entries (not a tenant).
pub const STAFF_LIST_OWNER: &str = "_staff";

/// The prefix of a staff secret; what follows is 32 lowercase base32 characters.
pub const STAFF_SECRET_PREFIX: &str = "stf_sk_";

/// The prefix of a staff account id.
pub const STAFF_ID_PREFIX: &str = "stf";

/// The audit actor recorded for account changes made from the command line.
pub const STAFF_ACTOR_CLI: &str = "cli";

/// The identity of the host's shared admin token: one identity, however many people
/// hold the token, so it never counts as a second approver of its own proposal.
pub const STAFF_ADMIN_TOKEN: &str = "admin-token";

/// Longest staff name, audit action, target or note, in characters.
const MAX_NAME: usize = 100;
const MAX_ACTION: usize = 100;
const MAX_TARGET: usize = 200;
const MAX_NOTE: usize = 2000;

/// A member of service staff as stored: only a hash of the secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaffAccount {
    /// `stf_...`: recorded as the authority of every action the account takes.
    pub id: String,
    /// Display name, unique among accounts (case-insensitively), 1 to 100 characters.
    pub name: String,
    /// hex SHA-256 of the secret.
    pub hash: String,
    /// First characters of the secret, for humans (`stf_sk_ab12...`).
    pub hint: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was disabled; a disabled account never authenticates again.
    pub disabled_at: Option<Timestamp>,
}

impl StaffAccount {
    /// The unique key that finds an account by the hash of its secret.
    pub fn secret_key(hash: &str) -> String {
        key(namespace::STAFF_SECRET, hash)
    }

    /// The unique key that reserves a name (lower-cased): two accounts named alike
    /// would make "who did it" ambiguous in the audit log.
    pub fn name_key(name: &str) -> String {
        key(namespace::STAFF_NAME, name.to_lowercase())
    }

    /// True when `secret` has the shape of a staff secret (`stf_sk_` + 32 lowercase
    /// alphanumerics), so a host can tell it from its admin token or an API key.
    pub fn is_secret_shaped(secret: &str) -> bool {
        secret
            .strip_prefix(STAFF_SECRET_PREFIX)
            .is_some_and(|rest| {
                rest.len() == 32
                    && rest
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            })
    }

    /// Not disabled.
    pub fn is_active(&self) -> bool {
        self.disabled_at.is_none()
    }
}

impl Record for StaffAccount {
    const KIND: &'static str = kind::STAFF_ACCOUNT;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(STAFF_LIST_OWNER.into())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(
            if self.is_active() {
                "active"
            } else {
                "disabled"
            }
            .into(),
        )
    }
    fn unique_keys(&self) -> Vec<String> {
        vec![
            StaffAccount::secret_key(&self.hash),
            StaffAccount::name_key(&self.name),
        ]
    }
}

/// A staff member the host has authenticated: a staff account proven by its secret
/// ([`Engine::authenticate_staff`], then [`StaffAccount::identity`]) or the host's admin
/// token ([`StaffIdentity::admin_token`]). Staff decisions that move money take one, so
/// no caller can act as a staff member by naming it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaffIdentity {
    id: String,
    name: String,
}

impl StaffIdentity {
    /// The host's shared admin token, recorded as [`STAFF_ADMIN_TOKEN`]. Only a host that
    /// checked its token may build it.
    pub fn admin_token() -> StaffIdentity {
        StaffIdentity {
            id: STAFF_ADMIN_TOKEN.into(),
            name: "admin token".into(),
        }
    }

    /// Recorded as the actor: the account's `stf_...` id, or `admin-token`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// For humans: the account's name, or `admin token`.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl StaffAccount {
    /// The identity of this account, for a host that has just authenticated it.
    pub fn identity(&self) -> StaffIdentity {
        StaffIdentity {
            id: self.id.clone(),
            name: self.name.clone(),
        }
    }
}

/// A newly created account: the secret is shown once and never stored.
#[derive(Clone, PartialEq, Eq)]
pub struct IssuedStaff {
    /// The stored record.
    pub account: StaffAccount,
    /// The full secret to give the staff member; it cannot be recovered later.
    pub secret: String,
}

impl fmt::Debug for IssuedStaff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedStaff")
            .field("account", &self.account)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// One entry of the staff audit log: who did what, to what, when and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaffAuditEntry {
    /// `sta_...`.
    pub id: String,
    /// Who acted: a staff account id (`stf_...`), `admin-token` or `cli`.
    pub staff_id: String,
    /// What they did (`escrow.resolve`, `escrow.recovery`, `staff.create`, ...).
    pub action: String,
    /// What they did it to (`esc_...`, `stf_...`, ...).
    pub target: String,
    /// Why, in their words (a resolution note), when the action has one.
    pub note: Option<String>,
    /// When it was recorded.
    pub at: Timestamp,
}

impl StaffAuditEntry {
    /// The entry "`staff_id` did `action` to `target` at `at` because of `note`", with
    /// its `sta_` id drawn from `random`: for a crate that commits the entry in the batch
    /// of the decision it records (`stablecoin-escrow`). Every field is checked:
    /// INVALID_PARAMETER on `staff_id`, `action`, `target` (1 to 100, 100 and 200
    /// characters, no control characters) or `note` (at most 2000, line breaks allowed;
    /// blank means none).
    pub fn new(
        staff_id: &str,
        action: &str,
        target: &str,
        note: Option<&str>,
        at: Timestamp,
        random: [u8; 10],
    ) -> CoreResult<StaffAuditEntry> {
        let note = match note.map(str::trim).filter(|n| !n.is_empty()) {
            Some(n) => Some(clean("note", n, MAX_NOTE, true)?),
            None => None,
        };
        Ok(StaffAuditEntry {
            id: crate::domain::ids::make_id("sta", at.millis(), random),
            staff_id: clean("staff_id", staff_id, MAX_NAME, false)?,
            action: clean("action", action, MAX_ACTION, false)?,
            target: clean("target", target, MAX_TARGET, false)?,
            note,
            at,
        })
    }
}

impl Record for StaffAuditEntry {
    const KIND: &'static str = kind::STAFF_AUDIT;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(STAFF_LIST_OWNER.into())
    }
    fn created_at(&self) -> Timestamp {
        self.at
    }
}

/// Trims `v` and checks it is 1..=`max` characters without control characters
/// (a note may contain line breaks).
fn clean(field: &'static str, v: &str, max: usize, newlines: bool) -> CoreResult<String> {
    let s = v.trim();
    if s.is_empty() || s.chars().count() > max {
        return Err(CoreError::InvalidParameter {
            field,
            reason: format!("must be 1 to {max} characters"),
        });
    }
    if s.chars()
        .any(|c| c.is_control() && !(newlines && c == '\n'))
    {
        return Err(CoreError::InvalidParameter {
            field,
            reason: "must not contain control characters".into(),
        });
    }
    Ok(s.to_string())
}

fn sha256_hex(s: &str) -> String {
    hex(&Sha256::digest(s.as_bytes()))
}

impl Engine {
    /// Creates a staff account named `name` (trimmed, 1 to 100 characters, unique
    /// case-insensitively) with a fresh secret, and audits it (actor `cli`). Only the
    /// returned [`IssuedStaff`] holds the secret.
    pub async fn create_staff(&self, name: &str) -> CoreResult<IssuedStaff> {
        let name = clean("name", name, MAX_NAME, false)?;
        let mut raw = [0u8; 20];
        self.ports().entropy.fill(&mut raw);
        let body = super::tenants::base32_lower(&raw);
        let secret = format!("{STAFF_SECRET_PREFIX}{body}");
        let now = self.now();
        let account = StaffAccount {
            id: self.new_id(STAFF_ID_PREFIX),
            name,
            hash: sha256_hex(&secret),
            hint: format!("{STAFF_SECRET_PREFIX}{}...", &body[..4]),
            created_at: now,
            disabled_at: None,
        };
        let audit = self.audit_entry(
            STAFF_ACTOR_CLI,
            "staff.create",
            &account.id,
            Some(&account.name),
        )?;
        let batch = Batch {
            puts: vec![account.insert()?, audit.insert()?],
            ..Default::default()
        };
        self.commit(batch).await.map_err(|e| match e {
            CoreError::Conflict { what, .. }
                if what.starts_with(&format!("{}:", namespace::STAFF_NAME)) =>
            {
                CoreError::InvalidParameter {
                    field: "name",
                    reason: "a staff account with this name exists".into(),
                }
            }
            other => other,
        })?;
        Ok(IssuedStaff { account, secret })
    }

    /// The active account whose secret is `secret`. Unknown (or not shaped like a staff
    /// secret) is `InvalidApiKey`; disabled is `ApiKeyRevoked`. Never cached, so a
    /// disabled account is refused at once in every process.
    pub async fn authenticate_staff(&self, secret: &str) -> CoreResult<StaffAccount> {
        let secret = secret.trim();
        if !StaffAccount::is_secret_shaped(secret) {
            return Err(CoreError::InvalidApiKey);
        }
        let hash = sha256_hex(secret);
        let Some(v) = get_record_by_unique::<StaffAccount>(
            &*self.ports().store,
            &StaffAccount::secret_key(&hash),
        )
        .await?
        else {
            return Err(CoreError::InvalidApiKey);
        };
        if !v.record.is_active() {
            return Err(CoreError::ApiKeyRevoked);
        }
        Ok(v.record)
    }

    /// The account with id `id_or_name` (`stf_...`) or, failing that, that name
    /// (case-insensitive). `NOT_FOUND` when neither exists.
    pub async fn find_staff(&self, id_or_name: &str) -> CoreResult<StaffAccount> {
        let s = id_or_name.trim();
        if let Some(v) = get_record::<StaffAccount>(&*self.ports().store, s).await? {
            return Ok(v.record);
        }
        if !s.is_empty()
            && let Some(v) = get_record_by_unique::<StaffAccount>(
                &*self.ports().store,
                &StaffAccount::name_key(s),
            )
            .await?
        {
            return Ok(v.record);
        }
        Err(CoreError::NotFound {
            kind: "staff_account",
            id: s.chars().take(64).collect(),
        })
    }

    /// Disables an account for good (audited, actor `cli`); disabling twice is harmless
    /// and audited once.
    pub async fn disable_staff(&self, id: &str) -> CoreResult<StaffAccount> {
        let Some(v) = get_record::<StaffAccount>(&*self.ports().store, id.trim()).await? else {
            return Err(CoreError::NotFound {
                kind: "staff_account",
                id: id.chars().take(64).collect(),
            });
        };
        if !v.record.is_active() {
            return Ok(v.record);
        }
        let mut account = v.record;
        account.disabled_at = Some(self.now());
        let audit = self.audit_entry(STAFF_ACTOR_CLI, "staff.disable", &account.id, None)?;
        self.commit(Batch {
            puts: vec![account.update(v.version)?, audit.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(account)
    }

    /// Every staff account, active and disabled, newest first.
    pub async fn list_staff(&self) -> CoreResult<Vec<StaffAccount>> {
        let mut out = Vec::new();
        loop {
            let (rows, total) = self
                .ports()
                .store
                .list(&ListQuery {
                    kind: kind::STAFF_ACCOUNT.into(),
                    tenant: STAFF_LIST_OWNER.into(),
                    subkind: None,
                    status: None,
                    limit: 100,
                    offset: out.len(),
                })
                .await
                .map_err(super::store_err)?;
            let n = rows.len();
            for r in &rows {
                out.push(StaffAccount::from_stored(r)?);
            }
            if n == 0 || out.len() as u64 >= total {
                return Ok(out);
            }
        }
    }

    /// Appends an entry to the staff audit log on its own: `staff_id` (`stf_...`,
    /// `admin-token`, `cli`) did `action` to `target` because of `note`. For actions that
    /// change nothing else; a decision that moves money commits its entry with itself
    /// ([`StaffAuditEntry::new`]).
    pub async fn record_staff_action(
        &self,
        staff_id: &str,
        action: &str,
        target: &str,
        note: Option<&str>,
    ) -> CoreResult<StaffAuditEntry> {
        let entry = self.audit_entry(staff_id, action, target, note)?;
        self.commit(Batch {
            puts: vec![entry.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(entry)
    }

    /// A page of the audit log, newest first, and the total: `limit` 1 to 100, `page`
    /// from 1.
    pub async fn staff_audit(
        &self,
        limit: u32,
        page: u32,
    ) -> CoreResult<(Vec<StaffAuditEntry>, u64)> {
        if !(1..=100).contains(&limit) {
            return Err(CoreError::InvalidParameter {
                field: "limit",
                reason: "must be between 1 and 100".into(),
            });
        }
        if page == 0 {
            return Err(CoreError::InvalidParameter {
                field: "page",
                reason: "pages start at 1".into(),
            });
        }
        let (rows, total) = self
            .ports()
            .store
            .list(&ListQuery {
                kind: kind::STAFF_AUDIT.into(),
                tenant: STAFF_LIST_OWNER.into(),
                subkind: None,
                status: None,
                limit: limit as usize,
                offset: (page as usize - 1).saturating_mul(limit as usize),
            })
            .await
            .map_err(super::store_err)?;
        let entries = rows
            .iter()
            .map(StaffAuditEntry::from_stored)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((entries, total))
    }

    pub(crate) fn audit_entry(
        &self,
        staff_id: &str,
        action: &str,
        target: &str,
        note: Option<&str>,
    ) -> CoreResult<StaffAuditEntry> {
        StaffAuditEntry::new(staff_id, action, target, note, self.now(), self.random10())
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;

    use crate::engine::test_engine::engine;

    #[tokio::test]
    async fn staff_accounts_authenticate_until_disabled() {
        let (e, _) = engine();
        let issued = e.create_staff("  Ada Ops ").await.unwrap();
        assert!(StaffAccount::is_secret_shaped(&issued.secret));
        assert!(issued.account.id.starts_with("stf_"));
        assert_eq!(issued.account.name, "Ada Ops");
        assert!(!format!("{issued:?}").contains(&issued.secret));
        assert_ne!(issued.account.hash, issued.secret);
        let a = e.authenticate_staff(&issued.secret).await.unwrap();
        assert_eq!(a.id, issued.account.id);
        // Unknown and malformed secrets.
        let other = format!("{STAFF_SECRET_PREFIX}{}", "a".repeat(32));
        assert_eq!(
            e.authenticate_staff(&other).await,
            Err(CoreError::InvalidApiKey)
        );
        assert_eq!(
            e.authenticate_staff("admin").await,
            Err(CoreError::InvalidApiKey)
        );
        // Found by id and by name.
        assert_eq!(e.find_staff(&a.id).await.unwrap().id, a.id);
        assert_eq!(e.find_staff("ada ops").await.unwrap().id, a.id);
        assert_eq!(
            e.find_staff("nobody").await.unwrap_err().code(),
            "NOT_FOUND"
        );
        // Disabled: refused for good; disabling twice is harmless.
        let d = e.disable_staff(&a.id).await.unwrap();
        assert!(d.disabled_at.is_some());
        assert_eq!(
            e.authenticate_staff(&issued.secret).await,
            Err(CoreError::ApiKeyRevoked)
        );
        e.disable_staff(&a.id).await.unwrap();
        assert_eq!(
            e.disable_staff("stf_nope").await.unwrap_err().code(),
            "NOT_FOUND"
        );
    }

    #[tokio::test]
    async fn names_are_unique_and_validated() {
        let (e, _) = engine();
        e.create_staff("Bo").await.unwrap();
        let dup = e.create_staff("BO").await.unwrap_err();
        assert_eq!(
            (dup.code(), dup.param()),
            ("INVALID_PARAMETER", Some("name"))
        );
        for bad in ["", "   ", "a\tb", &"x".repeat(101)] {
            assert_eq!(
                e.create_staff(bad).await.unwrap_err().code(),
                "INVALID_PARAMETER"
            );
        }
        let list = e.list_staff().await.unwrap();
        assert_eq!(list.len(), 1);
    }

    #[tokio::test]
    async fn the_audit_log_lists_every_action_newest_first() {
        let (e, clock) = engine();
        let a = e.create_staff("Ada").await.unwrap().account;
        clock.advance_ms(1000);
        e.record_staff_action(&a.id, "escrow.resolve", "esc_1", Some("photos show damage"))
            .await
            .unwrap();
        clock.advance_ms(1000);
        e.disable_staff(&a.id).await.unwrap();
        let (entries, total) = e.staff_audit(20, 1).await.unwrap();
        assert_eq!(total, 3);
        let got: Vec<_> = entries
            .iter()
            .map(|x| (x.staff_id.as_str(), x.action.as_str(), x.target.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("cli", "staff.disable", a.id.as_str()),
                (a.id.as_str(), "escrow.resolve", "esc_1"),
                ("cli", "staff.create", a.id.as_str()),
            ]
        );
        assert_eq!(entries[1].note.as_deref(), Some("photos show damage"));
        let (page2, _) = e.staff_audit(2, 2).await.unwrap();
        assert_eq!(page2.len(), 1);
        assert_eq!(
            e.staff_audit(0, 1).await.unwrap_err().code(),
            "INVALID_PARAMETER"
        );
        assert_eq!(
            e.staff_audit(1, 0).await.unwrap_err().code(),
            "INVALID_PARAMETER"
        );
        let bad = e.record_staff_action("", "x", "y", None).await.unwrap_err();
        assert_eq!(bad.param(), Some("staff_id"));
    }
}
