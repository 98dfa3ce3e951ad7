//! Sandbox addresses and the stray deposits that reach them anyway (issue #48, item 3).
//!
//! Why: a test checkout session and a simulated escrow deal show a deposit address.
//! EVM and TRON have no test-network address form, so such an address is a real,
//! mainnet-valid address: a payer who copies it from a sandbox page can send real money
//! there. Two rules keep that money from stranding:
//!
//! - **A dedicated key branch.** Sandbox addresses derive from paths no live purpose
//!   uses (`checkout/test/<id>`, `escrow/sandbox/<id>`; [`KeyPurpose::path`]): a live
//!   address is never shown in sandbox and never moves. Live session ids are `cs_...`
//!   and live deal ids `esc_...`, so `checkout/<id>` and `escrow/<id>` of a live owner
//!   can never equal a sandbox path.
//! - **Owned by the scanner.** Every sandbox address is reserved with the one address
//!   key ([`super::inbound::address_key`]) on a record of its owner product: a test
//!   checkout session (the session record), a simulated escrow ([`SandboxAddress`]).
//!   The product's inbound handler records a confirmed transfer into one as a
//!   [`StrayDeposit`] ([`stray_batch`]), with its ledger liability (`chain_in` to
//!   `stray:<id>:<TOKEN>`) in the same commit, so the money is owed, visible to staff
//!   (`GET /admin/v1/stray-deposits`, the metric `stablecoin_stray_deposits`) and
//!   returnable, never credited to a sandbox balance.

use crate::domain::money::{Micros, Token};
use crate::domain::payments_events::integer_id;
use crate::domain::time::Timestamp;
use crate::ports::accounts;
use crate::ports::kinds::kind;
use crate::ports::ledger::LedgerAccount;
use crate::ports::rail::Inbound;
use crate::ports::record::{Record, RecordError};
use crate::ports::{Batch, LedgerTransfer, Phase};
use crate::ports::{KeyPurpose, RailId};
use serde::{Deserialize, Serialize};

/// The reserved list owner of stray deposits (staff records, not a tenant's).
pub use super::staff::STAFF_LIST_OWNER as STRAY_LIST_OWNER;

pub use crate::domain::events::STRAY_DEPOSIT_EVENT;

/// The prefix of a stray deposit id.
pub const STRAY_ID_PREFIX: &str = "sd_";

/// A sandbox address that is not a record of its product: a simulated escrow deal is
/// never stored, so its address is reserved here, for the escrow scanner to own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxAddress {
    /// The rail's name (`tron`).
    pub rail: String,
    /// The address as the rail writes it.
    pub address: String,
    /// Whose key it is: signs a return of what reaches it.
    pub purpose: KeyPurpose,
    /// The tenant whose test key made it.
    pub tenant: String,
    /// What showed it: `escrow_simulation`.
    pub origin: String,
    /// The simulated owner's id (`esc_...`).
    pub origin_id: String,
    /// When it was shown.
    pub created_at: Timestamp,
}

impl Record for SandboxAddress {
    const KIND: &'static str = kind::SANDBOX_ADDRESS;
    fn id(&self) -> String {
        format!(
            "{}:{}",
            self.rail,
            super::inbound::canonical_address(&self.rail, &self.address)
        )
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn unique_keys(&self) -> Vec<String> {
        vec![super::inbound::address_key(&self.rail, &self.address)]
    }
}

/// Where a stray deposit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StrayStatus {
    /// Recorded, owed to its sender, waiting for staff.
    Held,
    /// A return above the single-approval cap, proposed by one staff identity, waiting
    /// for a second.
    Proposed,
    /// A return decided: recorded before it is sent, retried under the next payment id
    /// until it lands.
    Returning,
    /// The return confirmed on chain; the liability is closed.
    Returned,
    /// A quarantined deposit (`kernel::quarantine`) staff released: the inbound router
    /// hands it to its product, which credits it as any deposit, then closes the
    /// quarantine account.
    Releasing,
    /// Released and credited by its product; the quarantine account is closed.
    Released,
}

impl StrayStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [StrayStatus; 6] = [
        StrayStatus::Held,
        StrayStatus::Proposed,
        StrayStatus::Returning,
        StrayStatus::Returned,
        StrayStatus::Releasing,
        StrayStatus::Released,
    ];

    /// The wire and index form.
    pub fn as_str(self) -> &'static str {
        match self {
            StrayStatus::Held => "held",
            StrayStatus::Proposed => "proposed",
            StrayStatus::Returning => "returning",
            StrayStatus::Returned => "returned",
            StrayStatus::Releasing => "releasing",
            StrayStatus::Released => "released",
        }
    }

    /// The status named `s`, if any.
    pub fn parse(s: &str) -> Option<StrayStatus> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// Where a return's current payment is (like a checkout sweep's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReturnStep {
    /// Waiting for its (next) attempt.
    Queued,
    /// Committed before the rail call: the outcome is asked, never assumed.
    Submitting,
    /// Sent; polled until it settles.
    Submitted,
}

/// A staff return of a stray deposit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrayReturn {
    /// Where the money goes (the sender unless staff named another address).
    pub to: String,
    /// Why, in staff's words.
    pub reason: String,
    /// Above the cap: who proposed it.
    pub proposed_by: Option<String>,
    /// Whose call decided it.
    pub approved_by: Option<String>,
    /// Where its payment is.
    pub step: ReturnStep,
    /// Attempts so far; the payment id is `<id>_ret_<attempt>`.
    pub attempt: u32,
    /// The current attempt's payment.
    pub payment: Option<crate::ports::RailPayment>,
    /// The return's transaction, once known.
    pub tx_hash: Option<String>,
    /// The last failure, for staff.
    pub last_error: Option<String>,
    /// When the next step is due.
    pub due_at: Option<Timestamp>,
    /// When it confirmed.
    pub returned_at: Option<Timestamp>,
}

/// A real deposit that reached a sandbox address: recorded once per transfer (id from
/// the rail, transaction and index), owed back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrayDeposit {
    /// `sd_<16 hex>`, the same for the same transfer.
    pub id: String,
    /// The tenant whose sandbox showed the address (told by webhook, never credited).
    pub tenant: String,
    /// The rail's name.
    pub rail: String,
    /// The sandbox address it reached.
    pub address: String,
    /// The address's key: the one that can move the money back.
    pub purpose: KeyPurpose,
    /// What showed the address: `checkout_test_session` or `escrow_simulation`.
    pub origin: String,
    /// The sandbox owner (`cs_...`, `esc_...`).
    pub origin_id: String,
    /// Which stablecoin.
    pub token: Token,
    /// Micro-units received.
    pub amount: Micros,
    /// The transaction that carried it.
    pub tx_hash: String,
    /// Its position in the transaction.
    pub index: u32,
    /// The sender: where a return goes by default.
    pub from: String,
    /// The including block.
    pub block: u64,
    /// Where it is.
    pub status: StrayStatus,
    /// When the scanner recorded it.
    pub detected_at: Timestamp,
    /// The staff return, once proposed or decided.
    pub returned: Option<StrayReturn>,
    /// Set when this is not a stray but a deposit the sanctions screen flagged, held in
    /// quarantine (`kernel::quarantine`): why, for whom, and staff's release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<super::quarantine::Quarantine>,
}

impl StrayDeposit {
    /// The id of the stray deposit `inbound` on `rail` would be.
    pub fn id_of(rail: &str, inbound: &Inbound) -> String {
        let index = inbound.index.to_string();
        format!(
            "{STRAY_ID_PREFIX}{:016x}",
            integer_id(&["stray", rail, &inbound.tx_hash, &index])
        )
    }

    /// The ledger account that owes it back: `stray:<id>:<TOKEN>`, or for a quarantined
    /// deposit the quarantine account `quarantine:<id>:<TOKEN>`.
    pub fn account(&self) -> LedgerAccount {
        if self.quarantine.is_some() {
            accounts::quarantine(&self.id, self.token)
        } else {
            accounts::stray(&self.id, self.token)
        }
    }

    /// The record of the confirmed transfer `inbound` on `rail` into an address of
    /// `owner`, held, recorded `now`: a stray deposit, or with `quarantine` a
    /// quarantined one (the two differ only in that, and share every rule after).
    pub(crate) fn held(
        rail: &str,
        inbound: &Inbound,
        owner: &SandboxOwner,
        now: Timestamp,
        quarantine: Option<super::quarantine::Quarantine>,
    ) -> Self {
        StrayDeposit {
            id: StrayDeposit::id_of(rail, inbound),
            tenant: owner.tenant.clone(),
            rail: rail.to_string(),
            address: inbound.to.0.clone(),
            purpose: owner.purpose.clone(),
            origin: owner.origin.into(),
            origin_id: owner.origin_id.clone(),
            token: inbound.token,
            amount: inbound.amount,
            tx_hash: inbound.tx_hash.clone(),
            index: inbound.index,
            from: inbound.from.0.clone(),
            block: inbound.block,
            status: StrayStatus::Held,
            detected_at: now,
            returned: None,
            quarantine,
        }
    }

    /// Adds to `batch` the move of its amount between `chain_in:<rail>:<TOKEN>` (where
    /// outside tokens come from) and its own account ([`StrayDeposit::account`]): into
    /// it when `inward` (recorded), out of it otherwise (released: its product's credit
    /// debits `chain_in`). The transfer's id is `<stray|quarantine>:<id>:<leg>`. A zero
    /// amount moves nothing.
    pub(crate) fn push_chain_leg(&self, batch: &mut Batch, leg: &str, inward: bool) {
        if self.amount.is_zero() {
            return;
        }
        let chain = accounts::chain_in(&self.rail, self.token);
        let own = self.account();
        let prefix = if self.quarantine.is_some() {
            "quarantine"
        } else {
            "stray"
        };
        let (debit, credit) = if inward { (chain, own) } else { (own, chain) };
        batch.ledger.push(LedgerTransfer {
            id: format!("{prefix}:{}:{leg}", self.id),
            debit: debit.id.clone(),
            credit: credit.id.clone(),
            amount: self.amount,
            phase: Phase::Single,
        });
        batch.accounts.extend([debit, credit]);
    }

    /// The event that tells `tenant` of it, a flat body with `event` first:
    /// `sandbox.stray_deposit` (`stray_deposit_id`) for a stray, `deposit.quarantined`
    /// (`quarantine_id`, and `cause`; never the list or its entry, which are
    /// compliance's) for a quarantined deposit.
    pub(crate) fn event(&self, tenant: &str, id: String) -> crate::ports::OutboxEvent {
        let (event, id_field) = match self.quarantine {
            Some(_) => (
                super::quarantine::DEPOSIT_QUARANTINED_EVENT,
                "quarantine_id",
            ),
            None => (STRAY_DEPOSIT_EVENT, "stray_deposit_id"),
        };
        let mut payload = serde_json::json!({
            "event": event,
            "status": self.status.as_str(),
            "origin": self.origin,
            "origin_id": self.origin_id,
            "network": self.rail,
            "address": self.address,
            "token": self.token.as_str(),
            "amount": self.amount.to_decimal_string(),
            "from": self.from,
            "tx_hash": self.tx_hash,
            "detected_at": self.detected_at.to_rfc3339(),
            "timestamp": self.detected_at.unix_secs(),
        });
        payload[id_field] = self.id.clone().into();
        if let Some(q) = &self.quarantine {
            payload["cause"] = q.cause.as_str().into();
        }
        crate::ports::OutboxEvent {
            id,
            tenant: tenant.to_string(),
            event_type: event.into(),
            occurred_at: self.detected_at,
            payload,
        }
    }
}

impl Record for StrayDeposit {
    const KIND: &'static str = kind::STRAY_DEPOSIT;
    fn id(&self) -> String {
        self.id.clone()
    }
    /// Listed for staff, across tenants.
    fn tenant(&self) -> Option<String> {
        Some(STRAY_LIST_OWNER.into())
    }
    fn created_at(&self) -> Timestamp {
        self.detected_at
    }
    fn status(&self) -> Option<String> {
        Some(self.status.as_str().into())
    }
    /// Quarantined deposits are listed apart (`quarantine`); strays have none.
    fn subkind(&self) -> Option<String> {
        self.quarantine
            .as_ref()
            .map(|_| super::quarantine::QUARANTINE_SUBKIND.to_string())
    }
}

/// The sandbox owner of an address, as its product knows it.
#[derive(Clone, Debug)]
pub struct SandboxOwner {
    /// The tenant.
    pub tenant: String,
    /// The address's key.
    pub purpose: KeyPurpose,
    /// `checkout_test_session` or `escrow_simulation`.
    pub origin: &'static str,
    /// `cs_...` / `esc_...`.
    pub origin_id: String,
}

/// The commit that records `inbound` (confirmed) as a stray deposit of `owner`: the
/// record (its id is the transfer's, so a second commit of it fails on the existing
/// record and records nothing twice), the tenant's `sandbox.stray_deposit` event, and
/// the liability `chain_in:<rail>:<TOKEN>` to
/// `stray:<id>:<TOKEN>` (the tokens arrived from outside; the service owes them back).
pub fn stray_batch(
    rail: RailId,
    owner: &SandboxOwner,
    inbound: &Inbound,
    now: Timestamp,
    event_id: String,
) -> Result<(StrayDeposit, Batch), RecordError> {
    let stray = StrayDeposit::held(&rail.name(), inbound, owner, now, None);
    let mut batch = Batch {
        puts: vec![stray.insert()?],
        outbox: vec![stray.event(&stray.tenant, event_id)],
        background: true,
        ..Default::default()
    };
    stray.push_chain_leg(&mut batch, "in", true);
    Ok((stray, batch))
}

/// Records `inbound` (confirmed) as a stray deposit of `owner` in one commit
/// ([`stray_batch`]): `Credited` once, `Ignored` for a transfer already recorded or one
/// below the confirmation depth (offered again). A store failure is worth a retry.
pub async fn record_stray(
    kernel: &super::Kernel,
    rail: RailId,
    owner: &SandboxOwner,
    inbound: &Inbound,
) -> Result<super::inbound::InboundOutcome, super::inbound::InboundError> {
    use super::inbound::{InboundError, InboundOutcome};
    if !inbound.confirmed {
        return Ok(InboundOutcome::Ignored);
    }
    if is_recorded(kernel, &StrayDeposit::id_of(&rail.name(), inbound)).await? {
        return Ok(InboundOutcome::Ignored);
    }
    let (_, batch) = stray_batch(rail, owner, inbound, kernel.now(), kernel.new_id("evt"))
        .map_err(|e| InboundError::Skip(e.to_string()))?;
    Ok(if commit_recording(kernel, batch).await? {
        InboundOutcome::Credited { completes: false }
    } else {
        InboundOutcome::Ignored
    })
}

/// Whether the stray or quarantined deposit `id` (a transfer's: [`StrayDeposit::id_of`])
/// is recorded. A store failure is worth a retry.
pub(crate) async fn is_recorded(
    kernel: &super::Kernel,
    id: &str,
) -> Result<bool, super::inbound::InboundError> {
    crate::ports::get_record::<StrayDeposit>(&*kernel.ports().store, id)
        .await
        .map(|v| v.is_some())
        .map_err(|e| super::inbound::InboundError::Retry(e.to_string()))
}

/// Commits `batch`, which records a new stray or quarantined deposit: `true` when this
/// commit recorded it, `false` when another pump did meanwhile (the record's id is the
/// transfer's, so the second commit fails on the first's record and writes nothing).
pub(crate) async fn commit_recording(
    kernel: &super::Kernel,
    batch: Batch,
) -> Result<bool, super::inbound::InboundError> {
    use crate::ports::StoreError;
    match kernel.commit(batch).await {
        Ok(_) => Ok(true),
        Err(StoreError::VersionConflict { .. } | StoreError::UniqueViolation { .. }) => Ok(false),
        Err(e) => Err(super::inbound::InboundError::Retry(e.to_string())),
    }
}
