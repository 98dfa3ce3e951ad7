//! Spending policies and the address book (issue #51): their records and the tenant's
//! use cases over them (create, list, change, delete). The decision is the domain's
//! ([`crate::domain::policy::evaluate`]); gathering its inputs and applying it to sends
//! and withdrawals is `policy_gate.rs`.
//!
//! Why records in the one record store: a policy, an address-book entry, a policy's
//! window usage and a pending approval are each one small document read by id or by a
//! unique key, and the usage must commit in the same batch as an operation's holds
//! (version-checked) so that concurrent requests are each counted once.

use super::Engine;
use crate::domain::ids::{TenantId, WalletId};
use crate::domain::money::{Micros, Token};
use crate::domain::phone::Phone;
use crate::domain::policy::{
    self, MAX_LIST_ENTRIES, MAX_POLICIES_PER_TENANT, Policy, WindowLimit, WindowUsage,
};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::kernel::auth::Tenant;
use crate::ports::kinds::{key, kind, namespace};
use crate::ports::record::{Record, get_record, get_record_by_unique};
use crate::ports::store::{Batch, ListQuery};
use serde::{Deserialize, Serialize};

/// The audit actor of policy decisions and of tenants' changes to policies and the
/// address book: the service applying the tenant's rules, not a person.
pub const POLICY_ACTOR: &str = "policy";

/// Longest address-book label, in characters.
const MAX_LABEL: usize = 100;
/// The most address-book entries one tenant may have.
pub const MAX_ADDRESS_BOOK_ENTRIES: usize = 1_000;
/// Longest cooling-off a policy may set: 30 days.
const MAX_COOLING_OFF_HOURS: u32 = 720;

impl Record for Policy {
    const KIND: &'static str = kind::POLICY;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(
            if self.deleted_at.is_none() {
                "active"
            } else {
                "deleted"
            }
            .into(),
        )
    }
}

/// One policy's window usage as stored (id: the policy's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyUsage {
    /// The policy's id.
    pub id: String,
    /// The policy's tenant.
    pub tenant: TenantId,
    /// When the first operation was counted.
    pub created_at: Timestamp,
    /// What was admitted, per hour.
    pub usage: WindowUsage,
}

impl Record for PolicyUsage {
    const KIND: &'static str = kind::POLICY_USAGE;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

/// When a tenant's requests first named a destination (the policies' cooling-off
/// counts from it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DestinationSeen {
    /// `<tenant>:<destination key>` ([`DestinationSeen::id_of`]).
    pub id: String,
    /// The tenant.
    pub tenant: TenantId,
    /// The destination key (`momo:+225...`, `chain:0x...`).
    pub destination: String,
    /// When it was first named.
    pub first_seen: Timestamp,
}

impl DestinationSeen {
    /// The record id of `destination` for `tenant`: found without an index.
    pub fn id_of(tenant: &TenantId, destination: &str) -> String {
        format!("{}:{destination}", tenant.0)
    }
}

impl Record for DestinationSeen {
    const KIND: &'static str = kind::DESTINATION_SEEN;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.first_seen
    }
}

/// A tenant's address-book entry: a destination it pays, with a label, usable once its
/// cooling-off ends (`EngineConfig::address_book_cooling_off_ms` after it was added).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressBookEntry {
    /// `adb_...`.
    pub id: String,
    /// The tenant.
    pub tenant: TenantId,
    /// `chain_address` or `mobile_money`.
    pub kind: String,
    /// The address or the E.164 number, as given (trimmed).
    pub value: String,
    /// The destination key the policies compare ([`policy::destination_key`]).
    pub destination: String,
    /// The tenant's label.
    pub label: String,
    /// When it was added.
    pub created_at: Timestamp,
    /// From when a policy counts it as a known destination.
    pub usable_at: Timestamp,
    /// When it was removed (then it counts for nothing, and may be added again).
    pub removed_at: Option<Timestamp>,
}

impl AddressBookEntry {
    /// The unique key of `destination` in `tenant`'s book: one live entry each.
    pub fn destination_key(tenant: &TenantId, destination: &str) -> String {
        key(
            namespace::ADDRESS_BOOK,
            format_args!("{}:{destination}", tenant.0),
        )
    }
}

impl Record for AddressBookEntry {
    const KIND: &'static str = kind::ADDRESS_BOOK_ENTRY;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(
            if self.removed_at.is_none() {
                "active"
            } else {
                "removed"
            }
            .into(),
        )
    }
    fn unique_keys(&self) -> Vec<String> {
        if self.removed_at.is_none() {
            vec![AddressBookEntry::destination_key(
                &self.tenant,
                &self.destination,
            )]
        } else {
            Vec::new()
        }
    }
}

/// A policy as a tenant writes it (create and replace).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyInput {
    /// Only this wallet (by its phone; the caller must be a member); `None`: every
    /// wallet of the tenant.
    pub phone_number: Option<Phone>,
    /// Only this rail (a configured rail's name); `None`: every rail.
    pub rail: Option<String>,
    /// Only this token; `None`: every token.
    pub token: Option<Token>,
    /// See [`Policy::max_per_transaction`].
    pub max_per_transaction: Option<Micros>,
    /// See [`Policy::windows`]; one limit per window at most.
    pub windows: Vec<WindowLimit>,
    /// Chain addresses and `+` numbers; not empty: only these.
    pub allow_list: Vec<String>,
    /// Chain addresses and `+` numbers never paid.
    pub deny_list: Vec<String>,
    /// See [`Policy::require_address_book`].
    pub require_address_book: bool,
    /// See [`Policy::cooling_off_hours`] (at most 720).
    pub cooling_off_hours: Option<u32>,
    /// See [`Policy::approval_threshold`].
    pub approval_threshold: Option<Micros>,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> CoreError {
    CoreError::InvalidParameter {
        field,
        reason: reason.into(),
    }
}

/// The destination keys of a list, each checked: a `+` number must be E.164, an address
/// 1 to 128 visible characters.
fn list_keys(field: &'static str, entries: &[String]) -> CoreResult<Vec<String>> {
    if entries.len() > MAX_LIST_ENTRIES {
        return Err(invalid(
            field,
            format!("at most {MAX_LIST_ENTRIES} entries"),
        ));
    }
    let mut out = Vec::new();
    for e in entries {
        let (_, k) = destination(field, e)?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}

/// (`chain_address` or `mobile_money`, destination key) of one destination as written.
fn destination(field: &'static str, value: &str) -> CoreResult<(&'static str, String)> {
    let v = value.trim();
    if v.starts_with('+') {
        let phone = Phone::parse(v).map_err(|e| invalid(field, e.to_string()))?;
        return Ok(("mobile_money", policy::momo_key(phone.as_str())));
    }
    if v.is_empty()
        || v.chars().count() > 128
        || v.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(invalid(
            field,
            "a destination is a chain address (1 to 128 characters, no spaces) or an E.164 number starting with +",
        ));
    }
    Ok(("chain_address", policy::chain_key(v)))
}

impl Engine {
    /// The policy the input describes, checked: a configured rail, one limit per
    /// window each with a bound, positive amounts, at most 720 h of cooling-off, valid
    /// list entries. The wallet must be the tenant's.
    async fn policy_from(
        &self,
        tenant: &TenantId,
        input: &PolicyInput,
        id: String,
        created_at: Timestamp,
    ) -> CoreResult<Policy> {
        let wallet: Option<WalletId> = match &input.phone_number {
            Some(p) => {
                let w = self.require_wallet(p).await?.record;
                w.require_member(tenant)?;
                Some(w.id)
            }
            None => None,
        };
        if let Some(r) = &input.rail
            && !self.kernel.rail_map().iter().any(|(id, _)| id.name() == *r)
        {
            return Err(invalid("rail", "not a rail this deployment runs"));
        }
        for (field, v) in [
            ("max_per_transaction", input.max_per_transaction),
            ("approval_threshold", input.approval_threshold),
        ] {
            if v.is_some_and(|m| m.is_zero()) {
                return Err(invalid(field, "must be greater than zero"));
            }
        }
        let mut spans = Vec::new();
        for w in &input.windows {
            if spans.contains(&w.window) {
                return Err(invalid("windows", "one limit per window"));
            }
            spans.push(w.window);
            if w.max_amount.is_none() && w.max_count.is_none() {
                return Err(invalid(
                    "windows",
                    "each window needs max_amount or max_count",
                ));
            }
            if w.max_amount.is_some_and(|m| m.is_zero()) {
                return Err(invalid("windows", "max_amount must be greater than zero"));
            }
        }
        if input
            .cooling_off_hours
            .is_some_and(|h| h > MAX_COOLING_OFF_HOURS)
        {
            return Err(invalid(
                "cooling_off_hours",
                format!("at most {MAX_COOLING_OFF_HOURS}"),
            ));
        }
        Ok(Policy {
            id,
            tenant: tenant.clone(),
            wallet,
            rail: input.rail.clone(),
            token: input.token,
            max_per_transaction: input.max_per_transaction,
            windows: input.windows.clone(),
            allow_list: list_keys("allow_list", &input.allow_list)?,
            deny_list: list_keys("deny_list", &input.deny_list)?,
            require_address_book: input.require_address_book,
            cooling_off_hours: input.cooling_off_hours.filter(|h| *h > 0),
            approval_threshold: input.approval_threshold,
            created_at,
            updated_at: self.now(),
            deleted_at: None,
        })
    }

    /// `POST /v1/policies`: a new policy of `tenant` (at most 50 live), audited
    /// `policy.create`. It governs the next request.
    pub async fn create_policy(
        &self,
        tenant: &TenantId,
        input: &PolicyInput,
    ) -> CoreResult<Policy> {
        if self.active_policies(tenant).await?.len() >= MAX_POLICIES_PER_TENANT {
            return Err(invalid(
                "policy",
                format!("a tenant has at most {MAX_POLICIES_PER_TENANT} policies"),
            ));
        }
        let p = self
            .policy_from(tenant, input, self.new_id("pol"), self.now())
            .await?;
        // The tenant's first policy also marks the tenant (version-checked, in the same
        // commit): from then on its requests read their policies (`policy_gate.rs`). A
        // concurrent change to the tenant record (another first policy, staff changing
        // its pricing) is read again and the commit retried, not answered CONFLICT.
        let store = &*self.ports().store;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let audit = self.audit_entry(POLICY_ACTOR, "policy.create", &p.id, Some(&tenant.0))?;
            let mut puts = vec![p.insert()?, audit.insert()?];
            let Some(t) = get_record::<Tenant>(store, &tenant.0).await? else {
                return Err(CoreError::NotFound {
                    kind: "tenant",
                    id: tenant.0.chars().take(64).collect(),
                });
            };
            if t.record.spending_policies != Some(true) {
                let mut rec = t.record;
                rec.spending_policies = Some(true);
                rec.updated_at = self.now();
                puts.push(rec.update(t.version)?);
            }
            let committed = self
                .commit(Batch {
                    puts,
                    ..Default::default()
                })
                .await;
            match committed {
                Ok(_) => break,
                Err(e) if attempt < 3 && e.lost_race_on(kind::TENANT) => continue,
                Err(e) => return Err(e),
            }
        }
        self.kernel.forget_tenant(tenant);
        Ok(p)
    }

    /// The live policies of `tenant`, oldest id first.
    pub async fn active_policies(&self, tenant: &TenantId) -> CoreResult<Vec<Policy>> {
        let (mut out, _) = self
            .list_tenant_records::<Policy>(tenant, "active", MAX_POLICIES_PER_TENANT, 0)
            .await?;
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    /// One live policy of `tenant`; NOT_FOUND otherwise (another tenant's too).
    pub async fn policy(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> CoreResult<crate::ports::record::Versioned<Policy>> {
        match get_record::<Policy>(&*self.ports().store, id).await? {
            Some(v) if v.record.tenant == *tenant && v.record.deleted_at.is_none() => Ok(v),
            _ => Err(CoreError::NotFound {
                kind: "policy",
                id: id.chars().take(64).collect(),
            }),
        }
    }

    /// `POST /v1/policies/{id}`: replaces the policy's rules (its window usage is kept),
    /// audited `policy.update`.
    pub async fn update_policy(
        &self,
        tenant: &TenantId,
        id: &str,
        input: &PolicyInput,
    ) -> CoreResult<Policy> {
        let v = self.policy(tenant, id).await?;
        let p = self
            .policy_from(tenant, input, v.record.id.clone(), v.record.created_at)
            .await?;
        let audit = self.audit_entry(POLICY_ACTOR, "policy.update", &p.id, Some(&tenant.0))?;
        self.commit(Batch {
            puts: vec![p.update(v.version)?, audit.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(p)
    }

    /// `DELETE /v1/policies/{id}`: the policy stops governing (kept, marked deleted),
    /// audited `policy.delete`.
    pub async fn delete_policy(&self, tenant: &TenantId, id: &str) -> CoreResult<Policy> {
        let v = self.policy(tenant, id).await?;
        let mut p = v.record;
        p.deleted_at = Some(self.now());
        p.updated_at = self.now();
        let audit = self.audit_entry(POLICY_ACTOR, "policy.delete", &p.id, Some(&tenant.0))?;
        self.commit(Batch {
            puts: vec![p.update(v.version)?, audit.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(p)
    }

    /// `POST /v1/address-book`: adds a chain address or an E.164 mobile-money number
    /// with a label; it is usable by policies `address_book_cooling_off_ms` later. One
    /// live entry per destination (INVALID_PARAMETER `value` for a second). Audited
    /// `address_book.add`.
    pub async fn add_address_book_entry(
        &self,
        tenant: &TenantId,
        value: &str,
        label: &str,
    ) -> CoreResult<AddressBookEntry> {
        let (kind, dest) = destination("value", value)?;
        let label = crate::kernel::staff::clean("label", label, MAX_LABEL, false)?;
        let (_, total) = self
            .ports()
            .store
            .list(&ListQuery {
                kind: kind::ADDRESS_BOOK_ENTRY.into(),
                tenant: tenant.0.clone(),
                subkind: None,
                status: Some("active".into()),
                limit: 1,
                offset: 0,
            })
            .await
            .map_err(super::store_err)?;
        if total as usize >= MAX_ADDRESS_BOOK_ENTRIES {
            return Err(invalid(
                "value",
                format!("an address book holds at most {MAX_ADDRESS_BOOK_ENTRIES} entries"),
            ));
        }
        let now = self.now();
        let entry = AddressBookEntry {
            id: self.new_id("adb"),
            tenant: tenant.clone(),
            kind: kind.into(),
            value: value.trim().to_string(),
            destination: dest,
            label,
            created_at: now,
            usable_at: now.plus_millis(self.config.address_book_cooling_off_ms),
            removed_at: None,
        };
        let audit = self.audit_entry(
            POLICY_ACTOR,
            "address_book.add",
            &entry.id,
            Some(&format!("tenant {}; {}", tenant.0, entry.destination)),
        )?;
        self.commit(Batch {
            puts: vec![entry.insert()?, audit.insert()?],
            ..Default::default()
        })
        .await
        .map_err(|e| match e {
            CoreError::Conflict { .. } => {
                invalid("value", "this destination is in the address book")
            }
            other => other,
        })?;
        Ok(entry)
    }

    /// `GET /v1/address-book`: a page of the tenant's live entries, newest first, and
    /// their total.
    pub async fn list_address_book(
        &self,
        tenant: &TenantId,
        limit: usize,
        offset: usize,
    ) -> CoreResult<(Vec<AddressBookEntry>, u64)> {
        self.list_tenant_records(tenant, "active", limit, offset)
            .await
    }

    /// `DELETE /v1/address-book/{id}`: removes a live entry (audited
    /// `address_book.remove`); the destination may be added again, with a new
    /// cooling-off.
    pub async fn remove_address_book_entry(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> CoreResult<AddressBookEntry> {
        let v = match get_record::<AddressBookEntry>(&*self.ports().store, id).await? {
            // Removing a removed entry answers it as it is (DELETE is idempotent: a
            // retried or replayed removal is not an error), and audits nothing new.
            Some(v) if v.record.tenant == *tenant && v.record.removed_at.is_some() => {
                return Ok(v.record);
            }
            Some(v) if v.record.tenant == *tenant => v,
            _ => {
                return Err(CoreError::NotFound {
                    kind: "address_book_entry",
                    id: id.chars().take(64).collect(),
                });
            }
        };
        let mut e = v.record;
        e.removed_at = Some(self.now());
        let audit =
            self.audit_entry(POLICY_ACTOR, "address_book.remove", &e.id, Some(&tenant.0))?;
        self.commit(Batch {
            puts: vec![e.update(v.version)?, audit.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(e)
    }

    /// The tenant's live address-book entry for a destination key, if any.
    pub(crate) async fn address_book_entry(
        &self,
        tenant: &TenantId,
        destination: &str,
    ) -> CoreResult<Option<AddressBookEntry>> {
        Ok(get_record_by_unique::<AddressBookEntry>(
            &*self.ports().store,
            &AddressBookEntry::destination_key(tenant, destination),
        )
        .await?
        .map(|v| v.record))
    }
}
