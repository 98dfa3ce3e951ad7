//! `stablecoin-escrow`: the embedded escrow (spec 1.6, 2.1, 2.2, 3.1, 4.1) over
//! dedicated, service-custodied TRON USDT addresses, one per deal.
//!
//! It is not a TRON smart contract: each deal gets a fresh address derived from its own
//! key (`KeyPurpose::EscrowDeal(<deal id>)`), the buyer pays that address, and the
//! service pays out from it, with the key it custodies, to the seller's or the buyer's
//! *linked* customer wallet, never to an address given in a request.
//!
//! # Using it
//!
//! - [`EscrowEngine::new`] takes the core [`Ports`](stablecoin_core::engine::Ports), the
//!   TRON [`Rail`](stablecoin_core::ports::Rail) and an [`EscrowConfig`].
//! - Tenant API (authenticated by `AuthContext`, a tenant key): [`EscrowEngine::create`]
//!   (a sandbox key gets [`EscrowEngine::simulate_create`]), [`get`](EscrowEngine::get),
//!   [`list`](EscrowEngine::list), [`events`](EscrowEngine::events),
//!   [`release`](EscrowEngine::release), [`refund`](EscrowEngine::refund),
//!   [`dispute`](EscrowEngine::dispute), [`cancel`](EscrowEngine::cancel).
//! - Staff API, [`EscrowEngine::admin`] -> [`EscrowAdmin`] (with a [`StaffActor`], no
//!   tenant key): [`resolve`](EscrowAdmin::resolve) a DISPUTED deal,
//!   [`authorize_recovery`](EscrowAdmin::authorize_recovery) of partial / excess / late /
//!   unsupported-token deposits, [`get`](EscrowAdmin::get), [`events`](EscrowAdmin::events),
//!   [`payouts`](EscrowAdmin::payouts), [`accounting`](EscrowAdmin::accounting).
//! - Workers: [`EscrowEngine::tick`] (deposit scan, expiry, automatic release, payouts),
//!   [`settle_all`](EscrowEngine::settle_all) in tests, [`run_workers`](EscrowEngine::run_workers)
//!   in a host.
//!
//! # Lifecycle
//!
//! The state machine is [`state::transition`]; every (state, action) pair is tested.
//! [`decide`] adds who may ask for what (tenant, staff, worker) and what a permitted
//! action does; it too is tested over every (state, action, requester).
//!
//! | from | trigger | to | also |
//! |---|---|---|---|
//! | (none) | `create` (tenant; TRON deposits enabled and TRON readiness READY) | CREATED | fresh `escrow_address`; `funding_expires_at` = now + window (default 24 h) |
//! | CREATED | confirmed deposits reach the amount | FUNDED | `funded_at`; `auto_release_at` = `funded_at` + the deal's inspection window, if it has one |
//! | CREATED | confirmed deposit below the amount | CREATED | counted (`funded_amount`); deposits add up |
//! | CREATED | worker at `funding_expires_at` | EXPIRED | counted deposits become recoverable (PARTIAL) |
//! | CREATED | `cancel` (tenant) | CANCELLED | counted deposits become recoverable (PARTIAL) |
//! | FUNDED | `release` (tenant) / worker at `auto_release_at` | FUNDED, `payout_pending=true` | 202; payout of the amount to the seller's linked wallet |
//! | FUNDED | `refund` (tenant) | FUNDED, `payout_pending=true` | payout of the amount to the buyer's linked wallet |
//! | FUNDED | `dispute` (tenant, `reason` required) | DISPUTED | `disputed_at`, `dispute_reason` |
//! | DISPUTED | staff `resolve` RELEASE / REFUND (`resolution_note` required) | DISPUTED, `payout_pending=true` | payout to the seller / buyer |
//! | any, `payout_pending` | payout confirmed on chain | RELEASED / REFUNDED | `payout_tx_hash`, `released_at` / `refunded_at`; `resolution_note` for a staff resolution |
//! | any, `payout_pending` | payout failed (reverted, rejected, never reached the network) | FUNDED / DISPUTED, `payout_pending=false` | `payout_failure_reason`; the ledger hold is voided; a new release / refund / resolution may follow |
//! | any, `payout_pending` | any tenant or staff action | unchanged | `PAYOUT_IN_FLIGHT` (409): repeat release, dispute after release, ... |
//! | any other | any action not listed | unchanged | `INVALID_STATE` (409) |
//!
//! Rules the spec leaves open, as decided here:
//!
//! - **Funding.** A deposit counts only once confirmed at the rail's depth (TRON: 19
//!   blocks) and recorded by the scanner. Deposits recorded while the deal is CREATED and
//!   before `funding_expires_at` add up in the order recorded; the one that reaches the
//!   amount funds the deal and anything it carries beyond is EXCESS. A deposit recorded at
//!   or after `funding_expires_at` is LATE even if the expiry worker has not run yet; the
//!   scan runs before the expiry in every round, and the two decisions are serialised by
//!   the deal's version, so exactly one of them wins.
//! - **Recoverables.** Every deposit that does not end up in the amount is a recoverable
//!   balance, kept per kind on the deal and in its own ledger account: PARTIAL (counted
//!   deposits of a deal that expired or was cancelled), EXCESS (beyond the amount, or any
//!   deposit to a FUNDED / DISPUTED deal), LATE (after the window or to a closed deal),
//!   UNSUPPORTED_TOKEN (another token). Staff authorise each kind's recovery separately;
//!   it always goes to the buyer's linked wallet. Partial deposits of a CREATED deal are
//!   not recoverable until the deal closes (they may still fund it).
//! - **Cancel** is allowed only while CREATED (a funded deal is refunded instead).
//! - **Dispute** only from FUNDED with no payout claimed; a disputed deal leaves DISPUTED
//!   only through a staff resolution (the tenant cannot release or refund it).
//! - **Automatic release** is off unless the deal sets `auto_release_after_secs`; the
//!   window starts at confirmed funding. It is claimed once: if its payout fails the deal
//!   stays FUNDED (with `payout_failure_reason`) and waits for a release, refund or
//!   dispute; it is not retried by itself.
//! - **Payouts** are never sent twice: the rail payment id is `<deal id>:payout:<n>`
//!   (`<deal id>:recovery:<n>` for recoveries), fixed when the payout is claimed; an
//!   unknown outcome is resolved by asking the rail about that id. `NotFound` becomes a
//!   failure only after `unknown_grace_ms` (longer than the TRON transaction expiry).
//!   Only a definite failure frees the deal for attempt `n + 1`.
//! - **Readiness.** A release, refund, staff resolution or recovery is a sponsored send:
//!   it is refused with `RAIL_NOT_READY` (nothing stored) unless TRON readiness is READY,
//!   like every sponsored send (spec 7). A payout already claimed waits (QUEUED) while
//!   the rail cannot send and goes out once it can; an automatic release due while the
//!   rail cannot send waits too, without using up its one attempt.
//! - **`on_behalf_of`** (`BUYER` / `SELLER`) is recorded next to the key that acted
//!   (`api_key:key_...`) and never changes who may act: the tenant key is the authority.
//!
//! # Money
//!
//! Amounts are integer micro-units ([`Micros`](stablecoin_core::domain::money::Micros));
//! requests take whole tokens, views show base units (10^-6 USDT). Every movement is on
//! the double-entry ledger (accounts in [`model::accounts`]): a deposit moves
//! `chain_in:tron:USDT -> escrow:<deal>:held|<kind>:USDT`, a payout holds
//! `escrow:<deal>:held|<kind>:USDT -> escrow:<deal>:paid_out:USDT` and posts on
//! confirmation (voids on failure). For every deal and token, at all times,
//! `deposited == held + partial + excess + late + unsupported + paid_out`
//! ([`EscrowAdmin::accounting`]); and once nothing is in flight on chain, the deal
//! address's chain balance equals `held + partial + excess + late + unsupported`.
//!
//! # Events
//!
//! Every change writes one permanent history entry and one outbox event with the same
//! stable `evt_` id, in the same batch as the change: see [`events`] for the names and
//! [`view::EscrowWebhookPayload`] for the payload.
//!
//! # Sandbox
//!
//! With a test key, `create` returns a simulated view (`simulated: true`) with a fresh id
//! that is never stored: it cannot be fetched, funded or acted on, and no event is
//! written. Actions with a test key are `SANDBOX_UNSUPPORTED`; reads pass through.
//!
//! # Errors
//!
//! One enum, [`EscrowError`], with stable codes (table in [`error`]).

pub mod admin;
pub mod engine;
pub mod error;
pub mod events;
pub mod model;
pub mod state;
pub mod view;
mod worker;

pub use admin::{EscrowAdmin, StaffActor};
pub use engine::{Decision, Effect, EscrowEngine, Requester, decide, parse_on_behalf_of};
pub use error::{EscrowError, EscrowResult};
pub use events::EscrowEventType;
pub use model::{EscrowConfig, Party, TRON_MAINNET_CHAIN_ID};
pub use state::{
    Action, DepositKind, EscrowState, PayoutPurpose, Phase, RecoveryKind, TransitionError,
    classify_deposit, transition,
};
pub use view::{
    CreateEscrowRequest, DealAccounting, EscrowActionRequest, EscrowEventList, EscrowEventView,
    EscrowList, EscrowView, EscrowWebhookPayload, ListEscrowsQuery, PayoutView, RecoveryRequest,
    ResolveRequest, TokenAccounting,
};
pub use worker::EscrowTickReport;
