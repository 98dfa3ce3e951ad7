//! Service staff accounts, identities and the staff audit log: the types. They are the
//! kernel's because more than one product records staff decisions (the wallet engine's
//! treasury credits, escrow's resolutions and recoveries); the wallet engine keeps the
//! account use cases (`engine/staff.rs`).
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
//! in the wallet engine, escrow resolutions and recoveries in the escrow crate through
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

use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::kinds::{key, kind, namespace};
use crate::ports::record::Record;
use serde::{Deserialize, Serialize};
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
pub(crate) const MAX_NAME: usize = 100;
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
/// ([`Engine::authenticate_staff`](crate::engine::Engine::authenticate_staff), then [`StaffAccount::identity`]) or the host's admin
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
pub(crate) fn clean(
    field: &'static str,
    v: &str,
    max: usize,
    newlines: bool,
) -> CoreResult<String> {
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
