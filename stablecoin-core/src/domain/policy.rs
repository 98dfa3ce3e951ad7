//! Spending policies (issue #51): the rules a tenant sets on what its wallets may send
//! and withdraw, and the one pure function that decides a request against them.
//!
//! Why pure: the same decision must come out of the dry run (`POST
//! /v1/policies/evaluate`) and the real call, and a property test must be able to show
//! that no sequence of requests ever exceeds a limit. So [`evaluate`] reads nothing: the
//! engine gathers its inputs (the tenant's policies, each policy's window usage, what is
//! known of the destination) and passes them in; the same inputs always give the same
//! [`Decision`].
//!
//! Why windows are counted at admission: an operation in flight (its hold pending, its
//! sweep not yet confirmed) has already committed the wallet's money, so it must count
//! against the window at once. [`WindowUsage::record`] is called for the admitted
//! request and the engine commits the usage with the operation's holds, version-checked,
//! so two concurrent requests are each counted once and never both admitted past a
//! limit. A failed operation keeps its place in the window (fail-closed).
//!
//! Why hourly buckets: the usage of a 30-day window must stay small however busy a
//! wallet is. A bucket is counted while any part of its hour is inside the window, so
//! the count is never less than the exact rolling sum: an operation leaves a 24 h window
//! between 24 h and 25 h after it was admitted, never before.

use crate::domain::ids::{TenantId, WalletId};
use crate::domain::money::{Micros, Token};
use crate::domain::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One hour, the width of a usage bucket.
pub const BUCKET_MS: i64 = 3_600_000;

/// The most policies one tenant may have (each request is checked against them all).
pub const MAX_POLICIES_PER_TENANT: usize = 50;

/// The most entries of a policy's allow-list or deny-list.
pub const MAX_LIST_ENTRIES: usize = 200;

/// A rolling window a limit is counted over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum WindowSpan {
    /// The last 24 hours.
    #[serde(rename = "24h")]
    Day,
    /// The last 7 days.
    #[serde(rename = "7d")]
    Week,
    /// The last 30 days.
    #[serde(rename = "30d")]
    Month,
}

impl WindowSpan {
    /// Every span, shortest first.
    pub const ALL: [WindowSpan; 3] = [WindowSpan::Day, WindowSpan::Week, WindowSpan::Month];

    /// Its length in milliseconds.
    pub const fn millis(self) -> i64 {
        match self {
            WindowSpan::Day => 24 * BUCKET_MS,
            WindowSpan::Week => 7 * 24 * BUCKET_MS,
            WindowSpan::Month => 30 * 24 * BUCKET_MS,
        }
    }

    /// `24h`, `7d` or `30d` (the serde and rule-id form).
    pub const fn name(self) -> &'static str {
        match self {
            WindowSpan::Day => "24h",
            WindowSpan::Week => "7d",
            WindowSpan::Month => "30d",
        }
    }

    /// Parses [`WindowSpan::name`].
    pub fn parse(s: &str) -> Option<WindowSpan> {
        WindowSpan::ALL.into_iter().find(|w| w.name() == s)
    }
}

/// A limit on what a policy's scope may move in one window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowLimit {
    /// The window.
    pub window: WindowSpan,
    /// Most micro-units moved in the window, operations in flight included.
    pub max_amount: Option<Micros>,
    /// Most operations in the window, operations in flight included.
    pub max_count: Option<u32>,
}

/// A tenant's spending policy, stored as a record (kind `policy`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// `pol_...`; rule ids start with it.
    pub id: String,
    /// The tenant whose requests it governs.
    pub tenant: TenantId,
    /// Only this wallet's requests; `None`: every wallet of the tenant (the windows then
    /// count the whole tenant's operations).
    pub wallet: Option<WalletId>,
    /// Only requests on this rail (`polygon`, `tron`, `solana`, ...); `None`: every rail.
    pub rail: Option<String>,
    /// Only requests of this token; `None`: every token.
    pub token: Option<Token>,
    /// Largest amount of one request.
    pub max_per_transaction: Option<Micros>,
    /// Rolling-window limits on amount and count.
    pub windows: Vec<WindowLimit>,
    /// When not empty, only these destinations (destination keys) are allowed.
    pub allow_list: Vec<String>,
    /// Destinations (destination keys) never allowed.
    pub deny_list: Vec<String>,
    /// Only destinations in the address book, past their cooling-off.
    pub require_address_book: bool,
    /// A destination is allowed only this many hours after it was first seen (or once
    /// its address-book entry is usable); `None` or 0: no cooling-off.
    pub cooling_off_hours: Option<u32>,
    /// Above this amount a second approver must agree before the request is carried out.
    pub approval_threshold: Option<Micros>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was last changed.
    pub updated_at: Timestamp,
    /// When it was deleted: a deleted policy governs nothing and is kept for the audit.
    #[serde(default)]
    pub deleted_at: Option<Timestamp>,
}

/// The usage of one policy's windows: admitted micro-units and operations per hour.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowUsage {
    /// Hour index (`millis / BUCKET_MS`) to what was admitted in that hour.
    pub buckets: BTreeMap<i64, Bucket>,
}

/// What was admitted in one hour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    /// Micro-units admitted.
    pub amount: u64,
    /// Operations admitted.
    pub count: u32,
}

impl WindowUsage {
    /// What counts in `span` at `now`: every bucket any part of whose hour is in the
    /// window (never less than the exact rolling sum).
    pub fn in_window(&self, now: Timestamp, span: WindowSpan) -> Bucket {
        let start = now.millis().saturating_sub(span.millis());
        let first = start.div_euclid(BUCKET_MS);
        let mut out = Bucket::default();
        for (_, b) in self.buckets.range(first..) {
            out.amount = out.amount.saturating_add(b.amount);
            out.count = out.count.saturating_add(b.count);
        }
        out
    }

    /// Counts one admitted operation of `amount` at `now`, and forgets the hours no
    /// window can count any more.
    pub fn record(&mut self, now: Timestamp, amount: Micros) {
        let hour = now.millis().div_euclid(BUCKET_MS);
        let b = self.buckets.entry(hour).or_default();
        b.amount = b.amount.saturating_add(amount.0);
        b.count = b.count.saturating_add(1);
        let oldest = now
            .millis()
            .saturating_sub(WindowSpan::Month.millis())
            .div_euclid(BUCKET_MS);
        self.buckets.retain(|h, _| *h >= oldest);
    }
}

/// What the engine knows of a request's destination.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DestinationFacts {
    /// The destination key (`momo:+225...`, `chain:0xabc...`); `None` when the request
    /// pays an address not derived yet (a recipient without a wallet): it is in no list,
    /// no book, and was never seen.
    pub key: Option<String>,
    /// When its address-book entry becomes usable, if the tenant has one.
    pub book_usable_at: Option<Timestamp>,
    /// When the tenant's requests first named it, if ever.
    pub first_seen: Option<Timestamp>,
}

/// A request as the policies see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRequest {
    /// The requesting tenant.
    pub tenant: TenantId,
    /// The paying wallet.
    pub wallet: WalletId,
    /// The rail's name.
    pub rail: String,
    /// The token moved.
    pub token: Token,
    /// The amount moved.
    pub amount: Micros,
    /// The destination.
    pub destination: DestinationFacts,
    /// A second approver has already agreed to this very request.
    pub approved: bool,
}

/// What a request gets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Decision {
    /// Carried out now.
    Allow,
    /// Refused (`POLICY_DENIED`) by the rule named.
    Deny {
        /// `<policy id>:<rule>`.
        rule_id: String,
        /// Why, for the caller.
        reason: String,
    },
    /// Held until a second approver agrees (`APPROVAL_REQUIRED`).
    ApprovalRequired {
        /// `<policy id>:approval_threshold`.
        rule_id: String,
    },
}

impl Decision {
    /// `ALLOW`, `DENY` or `APPROVAL_REQUIRED`.
    pub fn name(&self) -> &'static str {
        match self {
            Decision::Allow => "ALLOW",
            Decision::Deny { .. } => "DENY",
            Decision::ApprovalRequired { .. } => "APPROVAL_REQUIRED",
        }
    }
}

/// The destination key of a mobile-money number.
pub fn momo_key(phone: &str) -> String {
    format!("momo:{}", phone.trim())
}

/// The destination key of a chain address: EVM hex lower-cased (one address, however
/// it is checksummed), every other form as written (base58 is case-sensitive).
pub fn chain_key(address: &str) -> String {
    let a = address.trim();
    let is_evm = a.len() == 42
        && (a.starts_with("0x") || a.starts_with("0X"))
        && a[2..].bytes().all(|b| b.is_ascii_hexdigit());
    if is_evm {
        format!("chain:{}", a.to_ascii_lowercase())
    } else {
        format!("chain:{a}")
    }
}

/// The destination key of a list entry as a tenant writes it: a number starting with
/// `+` is a mobile-money number, anything else a chain address.
pub fn destination_key(entry: &str) -> String {
    let e = entry.trim();
    if e.starts_with('+') {
        momo_key(e)
    } else {
        chain_key(e)
    }
}

impl Policy {
    /// True when the policy governs `req` (tenant, wallet, rail and token match).
    pub fn applies_to(&self, req: &PolicyRequest) -> bool {
        self.deleted_at.is_none()
            && self.tenant == req.tenant
            && self.wallet.as_ref().is_none_or(|w| *w == req.wallet)
            && self.rail.as_ref().is_none_or(|r| *r == req.rail)
            && self.token.is_none_or(|t| t == req.token)
    }

    fn rule(&self, name: &str) -> String {
        format!("{}:{name}", self.id)
    }

    /// The first rule of this policy that refuses `req`, given the policy's usage, in a
    /// fixed order: destinations (deny-list, allow-list, address book, cooling-off),
    /// then the amount, then each window (amount, then count).
    fn deny(&self, req: &PolicyRequest, usage: &WindowUsage, now: Timestamp) -> Option<Decision> {
        let deny = |rule: &str, reason: String| {
            Some(Decision::Deny {
                rule_id: self.rule(rule),
                reason,
            })
        };
        let d = &req.destination;
        let key = d.key.as_deref();
        if let Some(k) = key
            && self.deny_list.iter().any(|e| e == k)
        {
            return deny("deny_list", "the destination is on the deny-list".into());
        }
        if !self.allow_list.is_empty()
            && !key.is_some_and(|k| self.allow_list.iter().any(|e| e == k))
        {
            return deny(
                "allow_list",
                "the destination is not on the allow-list".into(),
            );
        }
        let book_usable = d.book_usable_at.is_some_and(|u| u <= now);
        if self.require_address_book && !book_usable {
            let reason = match d.book_usable_at {
                Some(u) => format!(
                    "the destination's address-book entry is usable from {}",
                    u.to_rfc3339()
                ),
                None => "the destination is not in the address book".into(),
            };
            return deny("address_book", reason);
        }
        if let Some(h) = self.cooling_off_hours.filter(|h| *h > 0) {
            let cool = i64::from(h) * BUCKET_MS;
            let seen_long_enough = d.first_seen.is_some_and(|f| f.plus_millis(cool) <= now);
            if !book_usable && !seen_long_enough {
                let from = d.first_seen.unwrap_or(now).plus_millis(cool);
                return deny(
                    "cooling_off",
                    format!(
                        "a new destination is usable {h} h after it is first seen: from {}",
                        from.to_rfc3339()
                    ),
                );
            }
        }
        if let Some(max) = self.max_per_transaction
            && req.amount > max
        {
            return deny(
                "max_per_transaction",
                format!("the amount is above {max} per transaction"),
            );
        }
        for w in &self.windows {
            let used = usage.in_window(now, w.window);
            if let Some(max) = w.max_amount
                && used.amount.saturating_add(req.amount.0) > max.0
            {
                return deny(
                    &format!("window_{}_amount", w.window.name()),
                    format!(
                        "{} already moved in the last {}, limit {max}",
                        Micros(used.amount),
                        w.window.name()
                    ),
                );
            }
            if let Some(max) = w.max_count
                && used.count.saturating_add(1) > max
            {
                return deny(
                    &format!("window_{}_count", w.window.name()),
                    format!(
                        "{} operations already in the last {}, limit {max}",
                        used.count,
                        w.window.name()
                    ),
                );
            }
        }
        None
    }
}

/// The decision on `req` at `now` under `policies`, each with its window usage (the
/// default, empty, for a policy never used). Policies that do not apply are ignored; of
/// those that do (in id order), the first refusal wins; then, unless `req.approved`,
/// the first approval threshold the amount is above. No applicable policy: `Allow`.
pub fn evaluate(
    policies: &[(Policy, WindowUsage)],
    req: &PolicyRequest,
    now: Timestamp,
) -> Decision {
    let mut applicable: Vec<&(Policy, WindowUsage)> =
        policies.iter().filter(|(p, _)| p.applies_to(req)).collect();
    applicable.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    for (p, usage) in &applicable {
        if let Some(d) = p.deny(req, usage, now) {
            return d;
        }
    }
    if !req.approved {
        for (p, _) in &applicable {
            if p.approval_threshold.is_some_and(|t| req.amount > t) {
                return Decision::ApprovalRequired {
                    rule_id: p.rule("approval_threshold"),
                };
            }
        }
    }
    Decision::Allow
}

/// The policies that count `req` in their windows (those that apply and have windows):
/// what the engine records an admitted request against.
pub fn counting<'a>(policies: &'a [(Policy, WindowUsage)], req: &PolicyRequest) -> Vec<&'a Policy> {
    policies
        .iter()
        .filter(|(p, _)| p.applies_to(req) && !p.windows.is_empty())
        .map(|(p, _)| p)
        .collect()
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
