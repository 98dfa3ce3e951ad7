//! Inbound sanctions screening (issue #51): a deposit from a source the screen flags is
//! credited to a quarantine account, not to the wallet, session or deal it was sent to,
//! until staff release it (then its product credits it as any deposit) or return it.
//!
//! Why in the inbound router: every product's deposits pass through it
//! ([`super::inbound`]), so screening each transfer's sender there is one rule for
//! wallets, escrow and checkout, written once, before any product sees the money.
//!
//! The rules:
//! - **Who is screened.** The sender the rail reports ([`Inbound::from`]: EVM and TRON
//!   read it from the token's `Transfer` log, Solana from the debited token account's
//!   owner) of every transfer to an address a product owns and can quarantine for
//!   ([`super::inbound::InboundHandler::quarantine_owner`]). A product that names no
//!   owner (a test checkout session, a simulated escrow: their real deposits are strays
//!   anyway) is not screened here.
//! - **A hit** at the confirmation depth is recorded as a quarantined deposit (a
//!   [`StrayDeposit`] with [`StrayDeposit::quarantine`] set, listed apart under the
//!   subkind [`QUARANTINE_SUBKIND`]), its amount moved from `chain_in:<rail>:<TOKEN>` to
//!   `quarantine:<id>:<TOKEN>`, the staff audit entry `screening.quarantine` and the
//!   tenant's [`DEPOSIT_QUARANTINED_EVENT`] in the same commit. Below the depth the
//!   transfer is withheld from its product (no "detected" record or event for money
//!   that will not be credited), and screened again on the next page.
//! - **Unavailable.** A screen that cannot answer quarantines (cause `unavailable`)
//!   when the gate fails closed (production): nothing is credited unscreened, nothing
//!   stalls, and staff release what the screen clears later. With the gate open the
//!   transfer goes to its product, audited `screening.skipped` at the depth.
//! - **Release** (`Engine::release_quarantined_deposit`) is a staff decision under the
//!   two-person rule; it marks the record RELEASING, and the router's next pump hands
//!   the original transfer to its product (which credits it, idempotently, by its own
//!   dedupe) and then closes the quarantine account in one commit (RELEASED).
//! - **Return** is a stray return (`engine::stray_returns`): screened like any payment,
//!   so a return to a listed sender is refused; staff name the destination.
//! - Once a transfer is quarantined, the router never hands it to its product again
//!   except through a release: a page offered twice finds the record and withholds it.

use super::Kernel;
use super::inbound::InboundError;
use super::screening::{SCREENING_ACTOR, ScreeningFailMode};
use super::staff::StaffAuditEntry;
use super::stray::{SandboxOwner, StrayDeposit, StrayStatus, commit_recording, is_recorded};
use crate::domain::time::Timestamp;
use crate::ports::rail::Inbound;
use crate::ports::record::{Record, RecordError};
use crate::ports::screening::ScreeningVerdict;
use crate::ports::{Batch, ChainAddress, KeyPurpose, RailId};
use serde::{Deserialize, Serialize};

pub use crate::domain::events::DEPOSIT_QUARANTINED_EVENT;

/// The subkind quarantined deposits are listed under (strays have none).
pub const QUARANTINE_SUBKIND: &str = "quarantine";

/// Why a deposit was quarantined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuarantineCause {
    /// The screen lists the sender.
    Hit,
    /// The screen could not answer and the gate fails closed.
    Unavailable,
}

impl QuarantineCause {
    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            QuarantineCause::Hit => "hit",
            QuarantineCause::Unavailable => "unavailable",
        }
    }
}

/// Staff's release of a quarantined deposit, as proposed or decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantineRelease {
    /// Why, in staff's words.
    pub reason: String,
    /// Above the single-approval cap: who proposed it.
    pub proposed_by: Option<String>,
    /// Whose call decided it.
    pub approved_by: Option<String>,
    /// When its product credited it.
    pub released_at: Option<Timestamp>,
    /// The last failure handing it to its product (retried every pump).
    pub last_error: Option<String>,
}

/// What makes a stray record a quarantined deposit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quarantine {
    /// Hit or unavailable.
    pub cause: QuarantineCause,
    /// The screen's name (`ofac-list`, `chainalysis`, `memory`).
    pub screen: String,
    /// A hit's list (staff only: never in a tenant's event).
    pub list: Option<String>,
    /// A hit's entry on that list (staff only).
    pub reference: Option<String>,
    /// Why the screen could not answer.
    pub reason: Option<String>,
    /// The product the deposit was for (`wallet`, `escrow`, `checkout`): the one a
    /// release hands it to.
    pub product: String,
    /// The tenants told (a wallet's members; a deal's or session's tenant).
    pub tenants: Vec<String>,
    /// Its confirmations when recorded (handed on with it at release).
    pub confirmations: u64,
    /// Staff's release, once proposed or decided.
    pub release: Option<QuarantineRelease>,
}

/// Whose an address is, as its product tells the router (see
/// [`super::inbound::InboundHandler::quarantine_owner`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuarantineOwner {
    /// The tenants to tell.
    pub tenants: Vec<String>,
    /// The address's key: signs a return.
    pub purpose: KeyPurpose,
    /// What owns it: `wallet`, `escrow_deal`, `checkout_session`.
    pub origin: &'static str,
    /// The owner's id (`wal_...`, `esc_...`, `cs_...`).
    pub origin_id: String,
}

/// What the router does with one transfer after screening its sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InboundScreen {
    /// Hand it to its product.
    Deliver,
    /// Not to its product now (below the depth from a flagged sender, or quarantined
    /// before).
    Withheld,
    /// Recorded in quarantine by this call.
    Quarantined,
}

impl StrayDeposit {
    /// The transfer this record was made of, as its product would have seen it.
    pub fn inbound(&self) -> Inbound {
        Inbound {
            tx_hash: self.tx_hash.clone(),
            index: self.index,
            from: ChainAddress(self.from.clone()),
            to: ChainAddress(self.address.clone()),
            token: self.token,
            amount: self.amount,
            block: self.block,
            confirmations: self
                .quarantine
                .as_ref()
                .map_or(1, |q| q.confirmations.max(1)),
            confirmed: true,
        }
    }
}

/// `deposit.quarantined` to each tenant of the deposit ([`Quarantine::tenants`]), in its
/// current status ([`StrayDeposit::event`]).
fn told(kernel: &Kernel, s: &StrayDeposit) -> Vec<crate::ports::OutboxEvent> {
    s.quarantine
        .iter()
        .flat_map(|q| q.tenants.iter())
        .map(|t| s.event(t, kernel.new_id("evt")))
        .collect()
}

/// The commit that quarantines `inbound` (confirmed): the record, the ledger move from
/// `chain_in` to the quarantine account, the audit entry and each tenant's event.
fn quarantine_batch(
    kernel: &Kernel,
    rail: RailId,
    owner: &QuarantineOwner,
    product: &str,
    inbound: &Inbound,
    quarantine: Quarantine,
) -> Result<(StrayDeposit, Batch), String> {
    let name = rail.name();
    let now = kernel.now();
    // The record's owner fields, as a stray's: the first tenant is the record's.
    let record_owner = SandboxOwner {
        tenant: owner.tenants.first().cloned().unwrap_or_default(),
        purpose: owner.purpose.clone(),
        origin: owner.origin,
        origin_id: owner.origin_id.clone(),
    };
    let s = StrayDeposit::held(&name, inbound, &record_owner, now, Some(quarantine));
    let q = s.quarantine.as_ref();
    let note = format!(
        "{} {} {} from {name}:{} to {} {} ({product}); cause {}; screen {}{}",
        s.id,
        s.amount.to_decimal_string(),
        s.token,
        s.from,
        s.origin,
        s.origin_id,
        q.map_or("hit", |q| q.cause.as_str()),
        q.map_or("", |q| q.screen.as_str()),
        match q {
            Some(Quarantine {
                list: Some(l),
                reference: Some(r),
                ..
            }) => format!("; list {l}; entry {r}"),
            Some(Quarantine {
                reason: Some(r), ..
            }) => format!("; {}", crate::domain::redact::urls(r)),
            _ => String::new(),
        }
    );
    let note: String = note.chars().take(2000).collect();
    let target: String = format!("{name}:{}", s.from).chars().take(200).collect();
    let audit = StaffAuditEntry::new(
        SCREENING_ACTOR,
        "screening.quarantine",
        &target,
        Some(&note),
        now,
        kernel.random10(),
    )
    .map_err(|e| e.to_string())?;
    let mut batch = Batch {
        puts: vec![
            s.insert().map_err(|e| e.to_string())?,
            audit.insert().map_err(|e| e.to_string())?,
        ],
        outbox: told(kernel, &s),
        background: true,
        ..Default::default()
    };
    s.push_chain_leg(&mut batch, "in", true);
    Ok((s, batch))
}

/// Screens the sender of `inbound`, a transfer to an address of `product` whose owner
/// is `owner`, and quarantines it when flagged (see the module documentation). Without
/// a gate, or without an owner to quarantine for, it goes to its product.
pub async fn screen_inbound(
    kernel: &Kernel,
    rail: RailId,
    product: &str,
    owner: Option<QuarantineOwner>,
    inbound: &Inbound,
) -> Result<InboundScreen, InboundError> {
    let (Some(gate), Some(owner)) = (kernel.screening(), owner) else {
        return Ok(InboundScreen::Deliver);
    };
    if is_recorded(kernel, &StrayDeposit::id_of(&rail.name(), inbound)).await? {
        return Ok(InboundScreen::Withheld);
    }
    let verdict = gate.screen.screen(rail, &inbound.from).await;
    let base = |cause| Quarantine {
        cause,
        screen: gate.screen.name().to_string(),
        list: None,
        reference: None,
        reason: None,
        product: product.to_string(),
        tenants: owner.tenants.clone(),
        confirmations: inbound.confirmations,
        release: None,
    };
    let quarantine = match verdict {
        ScreeningVerdict::Clear => return Ok(InboundScreen::Deliver),
        ScreeningVerdict::Hit { list, reference } => Quarantine {
            list: Some(list),
            reference: Some(reference),
            ..base(QuarantineCause::Hit)
        },
        ScreeningVerdict::Unavailable { reason } => match gate.fail_mode {
            ScreeningFailMode::Closed => Quarantine {
                reason: Some(crate::domain::redact::urls(&reason)),
                ..base(QuarantineCause::Unavailable)
            },
            ScreeningFailMode::Open => {
                if inbound.confirmed {
                    skipped(kernel, rail, product, inbound, &reason).await?;
                }
                return Ok(InboundScreen::Deliver);
            }
        },
    };
    if !inbound.confirmed {
        return Ok(InboundScreen::Withheld);
    }
    let (_, batch) = quarantine_batch(kernel, rail, &owner, product, inbound, quarantine)
        .map_err(InboundError::Skip)?;
    Ok(if commit_recording(kernel, batch).await? {
        InboundScreen::Quarantined
    } else {
        // Recorded meanwhile by another pump.
        InboundScreen::Withheld
    })
}

/// Audits a confirmed deposit credited unscreened by an open gate (`screening.skipped`).
async fn skipped(
    kernel: &Kernel,
    rail: RailId,
    product: &str,
    inbound: &Inbound,
    reason: &str,
) -> Result<(), InboundError> {
    let name = rail.name();
    let note = format!(
        "deposit {name}:{}:{} to {} ({product}); {}",
        inbound.tx_hash,
        inbound.index,
        inbound.to.0,
        crate::domain::redact::urls(reason)
    );
    let note: String = note.chars().take(2000).collect();
    let target: String = format!("{name}:{}", inbound.from.0)
        .chars()
        .take(200)
        .collect();
    let entry = StaffAuditEntry::new(
        SCREENING_ACTOR,
        "screening.skipped",
        &target,
        Some(&note),
        kernel.now(),
        kernel.random10(),
    )
    .map_err(|e| InboundError::Skip(e.to_string()))?;
    let put = entry
        .insert()
        .map_err(|e| InboundError::Skip(e.to_string()))?;
    kernel
        .commit(Batch {
            puts: vec![put],
            background: true,
            ..Default::default()
        })
        .await
        .map(|_| ())
        .map_err(|e| InboundError::Retry(e.to_string()))
}

/// The commit that closes a released deposit once its product credited it: RELEASED,
/// the quarantine account back to `chain_in` (which the product's own credit debited),
/// and each tenant's event.
pub(crate) fn released_batch(
    kernel: &Kernel,
    mut s: StrayDeposit,
    version: u64,
) -> Result<Batch, RecordError> {
    let now = kernel.now();
    s.status = StrayStatus::Released;
    if let Some(r) = s.quarantine.as_mut().and_then(|q| q.release.as_mut()) {
        r.released_at = Some(now);
        r.last_error = None;
    }
    let mut batch = Batch {
        puts: vec![s.update(version)?],
        outbox: told(kernel, &s),
        background: true,
        ..Default::default()
    };
    s.push_chain_leg(&mut batch, "release", false);
    Ok(batch)
}
