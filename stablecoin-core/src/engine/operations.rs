//! Money-moving operations: funding a wallet from the tenant treasury, P2P transfers,
//! and FX quotes. Each request commits the operation, its ledger holds and (for a
//! recipient never seen before) the new wallet in one batch, then returns 202-style:
//! the workers in `worker.rs` take it on chain.

use super::{Engine, accounts};
use crate::domain::consent::Wallet;
use crate::domain::fees::FeeSplit;
use crate::domain::fx::{Quote, QuoteView, make_quote};
use crate::domain::ids::{OperationId, QuoteId, TenantId, WalletId};
use crate::domain::money::{Currency, Micros, Token};
use crate::domain::phone::Phone;
use crate::domain::state::{OpKind, OpStatus, initial_status};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::ledger::{LedgerAccount, LedgerTransfer, Phase};
use crate::ports::rail::{LegRole, PaymentLeg, RailId, RailPayment};
use crate::ports::record::{Record, get_record};
use crate::ports::services::RateSide;
use crate::ports::signer::KeyPurpose;
use crate::ports::store::Batch;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

pub use super::operation_view::{OperationView, SendView};

/// One asynchronous operation (funding, transfer, swap, withdrawal).
///
/// Stored as JSON without its absent fields (`None`, `false`): an operation is written
/// four times on its way to SETTLED and read at every claim, and the nulls were ~10% of
/// each body (issue 47). A field missing from a stored body reads as absent, so bodies
/// written before and after decode alike.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    /// `fd_...`, `tr_...`, `sw_...` or `wd_...`; also the rail payment's id, so every
    /// submission of it is deduplicated by the rail.
    pub id: OperationId,
    /// Which state machine it follows (see [`transition`](crate::domain::state::transition)).
    pub kind: OpKind,
    /// The tenant that created it; only that tenant can read it.
    pub tenant: TenantId,
    /// Where it stands; changed only through the kind's state machine.
    pub status: OpStatus,
    /// Why it FAILED, or why a REFUNDED withdrawal's payout could not be delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// The rail that carries the payment.
    pub rail: RailId,
    /// The stablecoin moved.
    pub token: Token,
    /// What the sender is debited.
    pub amount: Micros,
    /// Transfers: how `amount` divides between recipient, service fee and tenant fee.
    pub fees: Option<FeeSplit>,
    /// The debited wallet (transfers, withdrawals); `None` for a funding (the treasury).
    pub from_wallet: Option<WalletId>,
    /// The credited wallet (fundings, transfers).
    pub to_wallet: Option<WalletId>,
    /// The sender's phone, when a wallet sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_phone: Option<Phone>,
    /// The recipient's phone, when a wallet receives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_phone: Option<Phone>,
    /// The `fx_...` quote a transfer consumed; `None` for a `DIRECT_CRYPTO` amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_id: Option<String>,
    /// The on-chain payment, fixed at creation so every submission is the same payment;
    /// its deadline (`valid_until`) is set, and stored, when it is first submitted.
    pub payment: RailPayment,
    /// Pending ledger transfers, posted on settlement and voided on failure.
    pub holds: Vec<LedgerTransfer>,
    /// The recipient wallet was created on the fly: tell them by SMS once paid.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notify_recipient: bool,
    /// The on-chain transaction, once the rail reports one; unique per rail (see
    /// [`Operation::tx_key`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    /// Block of the confirmation, once confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<u64>,
    /// When a worker first claimed it for submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_at: Option<Timestamp>,
    /// When a worker should next advance it (the claim queue's due time); `None` once
    /// terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_check_at: Option<Timestamp>,
    /// When it was accepted.
    pub created_at: Timestamp,
    /// Last change of any field.
    pub updated_at: Timestamp,
    /// When it reached SETTLED (or a withdrawal COMPLETED).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<Timestamp>,
    /// Withdrawals: the mobile-money leg.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payout: Option<PayoutLeg>,
    /// Set at confirmation: the payment opened the recipient's token account, rent paid
    /// by the service (Solana's `created_recipient_ata`, spec 1.5).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub created_recipient_account: bool,
    /// Transfers: the initiating tenant's customer id of the sending wallet, taken when
    /// the send is accepted, for the `wallet.transfer.*` webhooks (no wallet read at
    /// settlement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_customer: Option<String>,
    /// Swaps: the token bought, the venue and what came out (`token`/`amount` are what
    /// is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap: Option<super::swaps::SwapLeg>,
}

/// The fiat leg of a withdrawal (spec 3.2: CRYPTO_RECEIVED -> PAYOUT_SUBMITTING ->
/// COMPLETED, or REFUNDED when the payout cannot be delivered).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayoutLeg {
    /// ISO 4217 code of the payout (`"XOF"`).
    pub currency: String,
    /// Fiat amount, rounded down to the currency's minor unit.
    pub amount: Decimal,
    /// Local currency per token, at acceptance.
    pub rate: Decimal,
    /// The mobile-money number paid: the withdrawing wallet's phone.
    pub phone: Phone,
    /// When the payout was first sent to the provider (PAYOUT_SUBMITTING).
    pub submitted_at: Option<Timestamp>,
    /// Provider's evidence of delivery (COMPLETED requires it).
    pub reference: Option<String>,
    /// Why the payout failed, when it did (the crypto is then refunded).
    pub failure: Option<String>,
    /// The current on-chain refund attempt to the wallet, once started.
    pub refund: Option<RailPayment>,
    /// The refund's transaction, once it confirmed (the withdrawal is then REFUNDED).
    pub refund_tx_hash: Option<String>,
    /// Refund attempts made so far, each under its own payment id: a new one only once
    /// the previous one provably can no longer land (past its deadline, failed or never
    /// seen by the rail).
    #[serde(default)]
    pub refund_attempts: u32,
    /// Why the last refund attempt failed, while it is retried.
    #[serde(default)]
    pub refund_error: Option<String>,
    /// Refund failures so far (refused, unsent or reverted), for the retry backoff.
    #[serde(default)]
    pub refund_failures: u32,
    /// The identity of the provider the payout was submitted to
    /// ([`crate::ports::PayoutProvider::identity`]: kind and paying account), recorded
    /// before the first submit. The engine asks, re-submits and settles the payout only
    /// through a provider with this identity: after a switch of provider it waits for
    /// the one that took it, or for staff. `None` on a leg recorded before identities
    /// were: the configured provider is taken to hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// A named staff member's decision on a payout no provider answered for
    /// ([`crate::engine::Engine::resolve_payout`]), also in the staff audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<PayoutResolution>,
}

/// How staff resolved a payout held in flight ([`PayoutLeg::resolution`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayoutResolution {
    /// The staff account that decided (`stf_...`).
    pub staff_id: String,
    /// `completed` (the payee was paid: the reference is the evidence staff checked)
    /// or `refunded` (the provider holds no payment: the tokens go back).
    pub outcome: String,
    /// Why, in the staff member's words.
    pub reason: String,
    /// When.
    pub at: Timestamp,
}

impl Operation {
    /// The unique key that finds an operation by its transaction (hash lowercased), so
    /// the deposit scanner can tell the service's own payments from deposits.
    pub fn tx_key(rail: &RailId, tx_hash: &str) -> String {
        crate::ports::kinds::key(
            crate::ports::kinds::namespace::OPERATION_TX,
            format_args!("{}:{}", rail.name(), tx_hash.to_ascii_lowercase()),
        )
    }

    /// The API shape: amounts as decimal strings, RFC 3339 times, absent fields omitted.
    pub fn view(&self) -> OperationView {
        let broadcast = self.tx_hash.is_some();
        OperationView {
            id: self.id.0.clone(),
            object: self.kind.as_str().to_string(),
            status: self.status.as_str().to_string(),
            error_reason: self.error_reason.clone(),
            rail: self.rail.name(),
            token: self.token.as_str().to_string(),
            amount: self.amount.to_decimal_string(),
            recipient_amount: self.fees.map(|f| f.recipient.to_decimal_string()),
            service_fee: self.fees.map(|f| f.service_fee.to_decimal_string()),
            tenant_fee: self.fees.map(|f| f.tenant_fee.to_decimal_string()),
            tenant_fee_waived: self.fees.map(|f| f.tenant_fee_waived),
            from_phone_number: self.from_phone.as_ref().map(|p| p.to_string()),
            to_phone_number: self.to_phone.as_ref().map(|p| p.to_string()),
            quote_id: self.quote_id.clone(),
            tx_hash: if broadcast {
                self.tx_hash.clone()
            } else {
                None
            },
            created_at: self.created_at.to_rfc3339(),
            updated_at: self.updated_at.to_rfc3339(),
            settled_at: self.settled_at.map(|t| t.to_rfc3339()),
            payout_currency: self.payout.as_ref().map(|p| p.currency.clone()),
            payout_amount: self.payout.as_ref().map(|p| p.amount.to_string()),
            payout_reference: self.payout.as_ref().and_then(|p| p.reference.clone()),
            refund_tx_hash: self.payout.as_ref().and_then(|p| p.refund_tx_hash.clone()),
            // Known once confirmed, and only meaningful where recipients hold token
            // accounts.
            created_recipient_ata: (self.rail == RailId::Solana
                && self.kind == OpKind::Transfer
                && self.block.is_some())
            .then_some(self.created_recipient_account),
            // The swap webhooks' names for `id` and `error_reason` (spec 6.1).
            swap_id: self.swap.as_ref().map(|_| self.id.0.clone()),
            reason: self.swap.as_ref().and_then(|_| self.error_reason.clone()),
            token_in: self.swap.as_ref().map(|_| self.token.as_str().to_string()),
            token_out: self.swap.as_ref().map(|s| s.token_out.as_str().to_string()),
            amount_in: self.swap.as_ref().map(|_| self.amount.to_decimal_string()),
            quoted_amount_out: self
                .swap
                .as_ref()
                .map(|s| s.quoted_amount_out.to_decimal_string()),
            min_amount_out: self
                .swap
                .as_ref()
                .map(|s| s.min_amount_out.to_decimal_string()),
            amount_out: self
                .swap
                .as_ref()
                .and_then(|s| s.amount_out.map(|a| a.to_decimal_string())),
            venue: self.swap.as_ref().map(|s| s.venue.clone()),
        }
    }
}

/// The claim lane of operations due for their first submission.
pub const LANE_SUBMIT: u8 = 0;
/// The claim lane of operations already submitted (polls, reconciliation, payouts).
pub const LANE_ADVANCE: u8 = 1;

impl Record for Operation {
    const KIND: &'static str = crate::ports::kinds::kind::OPERATION;
    fn id(&self) -> String {
        self.id.0.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.status.as_str().to_string())
    }
    /// The op kind, so a list of one kind is an index range in the store.
    fn subkind(&self) -> Option<String> {
        Some(self.kind.as_str().to_string())
    }
    fn due_at(&self) -> Option<Timestamp> {
        if self.status.is_terminal() {
            None
        } else {
            self.next_check_at
        }
    }
    /// Its claim lane: due for its first submission ([`LANE_SUBMIT`]), or anything after
    /// it ([`LANE_ADVANCE`]: polls, reconciliation, payouts), so the worker claims the
    /// two apart and a queue of new submissions never starves confirmations.
    fn lane(&self) -> u8 {
        if matches!(self.status, OpStatus::Queued | OpStatus::Pending) {
            LANE_SUBMIT
        } else {
            LANE_ADVANCE
        }
    }
    /// Its transaction, so the deposit scanner can tell the service's own payments from
    /// deposits. Not on an EVM chain, except for a swap: there one bundle transaction
    /// carries the operations of many payments (multi-op `handleOps`), so a hash is not
    /// one operation's; and none is needed, since every leg of those payments comes from
    /// a wallet or the treasury, which the scanner skips by sender. A swap's tokens come
    /// from a DEX pool, so its (single-operation) bundle keeps the key.
    fn unique_keys(&self) -> Vec<String> {
        if matches!(self.rail, RailId::Evm(_)) && self.kind != OpKind::Swap {
            return Vec::new();
        }
        self.tx_hash
            .iter()
            .map(|h| Operation::tx_key(&self.rail, h))
            .collect()
    }
}

/// `POST /v1/users/fund`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FundRequest {
    /// The wallet to fund (it must exist).
    pub phone_number: Phone,
    /// A token the EVM rail carries.
    pub token: Token,
    /// What the wallet receives, taken from the tenant treasury.
    pub amount: Micros,
}

/// `POST /v1/transfers/send`. The amount comes from the quote: an `fx_` quote's
/// `expected_out`, or the amount written in a `DIRECT_CRYPTO:{token}:{amount}` id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendRequest {
    /// The sender's wallet; the calling tenant must be a member of it.
    pub from_phone_number: Phone,
    /// The recipient; a phone without a wallet gets one on the fly.
    pub to_phone_number: Phone,
    /// The token sent; must match the quote's.
    pub token: Token,
    /// An `fx_...` quote of this tenant, unused and unexpired, or
    /// `DIRECT_CRYPTO:{token}:{amount}`.
    pub quote_id: String,
}

pub(super) fn hold(
    id: String,
    debit: &LedgerAccount,
    credit: &LedgerAccount,
    amount: Micros,
) -> LedgerTransfer {
    LedgerTransfer {
        id,
        debit: debit.id.clone(),
        credit: credit.id.clone(),
        amount,
        phase: Phase::Pending,
    }
}

impl Engine {
    pub(crate) fn new_operation(
        &self,
        kind: OpKind,
        tenant: &TenantId,
        rail: RailId,
        token: Token,
        amount: Micros,
        payment: RailPayment,
    ) -> Operation {
        let now = self.now();
        Operation {
            id: OperationId(payment.id.clone()),
            kind,
            tenant: tenant.clone(),
            status: initial_status(kind),
            error_reason: None,
            rail,
            token,
            amount,
            fees: None,
            from_wallet: None,
            to_wallet: None,
            from_phone: None,
            to_phone: None,
            quote_id: None,
            payment,
            holds: vec![],
            notify_recipient: false,
            tx_hash: None,
            block: None,
            submitted_at: None,
            next_check_at: Some(now),
            created_at: now,
            updated_at: now,
            settled_at: None,
            payout: None,
            created_recipient_account: false,
            from_customer: None,
            swap: None,
        }
    }

    /// `POST /v1/users/fund`: moves value from the tenant treasury to a customer wallet.
    /// Money-in is open: the caller need not be a member. The treasury is held at once
    /// (INSUFFICIENT_FUNDS otherwise) and posted when the chain confirms; a failure
    /// voids the hold so the value returns to the tenant. UNKNOWN_TOKEN for a token the
    /// EVM rail does not carry; RAIL_NOT_READY unless it is READY (the funding is a
    /// sponsored send).
    pub async fn fund(
        &self,
        tenant: &TenantId,
        req: &FundRequest,
        idempotency_key: Option<&str>,
    ) -> CoreResult<OperationView> {
        self.fund_on(tenant, None, req, idempotency_key).await
    }

    /// [`Engine::fund`] on the EVM chain `network` names (the primary one for `None`):
    /// from the service treasury's address on that chain, to the wallet's there.
    pub async fn fund_on(
        &self,
        tenant: &TenantId,
        network: Option<RailId>,
        req: &FundRequest,
        idempotency_key: Option<&str>,
    ) -> CoreResult<OperationView> {
        let rail = self.check_fund(req, network)?.clone();
        let scope = self.scope_on("fund", rail.id());
        self.idempotent(tenant, idempotency_key, &scope, req, || async {
            self.require_ready(rail.id()).await?;
            // Sponsorship budget (issue #51 item 4), before anything is held.
            self.sponsor_gate(tenant, rail.id()).await?;
            let wallet = self.require_wallet(&req.phone_number).await?.record;
            let name = rail.id().name();
            let to = wallet
                .address(&name)
                .cloned()
                .ok_or_else(|| CoreError::NotFound {
                    kind: "wallet address",
                    id: name.clone(),
                })?;
            let from_address = self.service_address(&rail, KeyPurpose::Treasury).await?;
            let id = self.new_id(OpKind::Funding.id_prefix());
            let payment = RailPayment {
                id: id.clone(),
                from: KeyPurpose::Treasury,
                from_address,
                token: req.token,
                legs: vec![PaymentLeg {
                    to,
                    amount: req.amount,
                    role: LegRole::Recipient,
                }],
                valid_until: None,
            };
            let mut op = self.new_operation(
                OpKind::Funding,
                tenant,
                rail.id(),
                req.token,
                req.amount,
                payment,
            );
            let treasury = accounts::treasury(tenant, req.token);
            let dest = self.wallet_account(&wallet.id, rail.id(), req.token);
            op.holds = vec![hold(format!("{id}:fund"), &treasury, &dest, req.amount)];
            op.to_wallet = Some(wallet.id.clone());
            op.to_phone = Some(wallet.phone.clone());
            let batch = Batch {
                puts: vec![op.insert()?],
                accounts: vec![treasury, dest],
                ledger: op.holds.clone(),
                ..Default::default()
            };
            Ok((batch, op.view()))
        })
        .await
    }

    /// `POST /api/v1/fx/quote`: a locked rate for 60 seconds, usable once.
    pub async fn quote(
        &self,
        tenant: &TenantId,
        fiat_amount: Decimal,
        currency: Currency,
        token: Token,
    ) -> CoreResult<QuoteView> {
        let id = QuoteId(self.new_id(QuoteId::PREFIX));
        let q = self
            .price_quote(id, tenant, fiat_amount, currency, token)
            .await?;
        self.commit(Batch {
            puts: vec![q.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(q.view())
    }

    /// A quote `id` at the rate source's current rate (shared with the sandbox, so a
    /// simulated quote is priced exactly as a live one).
    pub(crate) async fn price_quote(
        &self,
        id: QuoteId,
        tenant: &TenantId,
        fiat_amount: Decimal,
        currency: Currency,
        token: Token,
    ) -> CoreResult<Quote> {
        let rate = self
            .ports()
            .rates
            .rate_for(currency, token, RateSide::CustomerBuysToken)
            .await?;
        make_quote(
            id,
            tenant.clone(),
            currency,
            token,
            fiat_amount,
            rate,
            self.now(),
        )
        .map_err(CoreError::from)
    }

    /// The wallet's recipient-side membership, for events.
    pub(crate) async fn wallet_members(&self, id: &WalletId) -> CoreResult<Option<Wallet>> {
        Ok(get_record::<Wallet>(&*self.ports().store, &id.0)
            .await?
            .map(|v| v.record))
    }
}

#[cfg(test)]
mod tests {
    use super::Operation;

    /// A settled transfer as stored before issue 47 (every absent field written as
    /// `null` or `false`), taken from a server's database.
    const OLD_BODY: &str = r#"{"id":"tr_01M8KG2A3XNPEPV440WHBB3CNJ","kind":"Transfer","tenant":"ten_01M8KG28JHDK0AF134KCGYS4SN","status":"SETTLED","error_reason":null,"rail":{"Evm":137},"token":"USDC","amount":10000,"fees":{"amount":10000,"recipient":9970,"service_fee":30,"tenant_fee":0,"tenant_fee_waived":false},"from_wallet":"wal_01M8KG28R1QRRHW64B5THYZ64C","to_wallet":"wal_01M8KG28RMEXHF8NTZ82M3RHE0","from_phone":"+2250700000001","to_phone":"+2250700000002","quote_id":null,"payment":{"id":"tr_01M8KG2A3XNPEPV440WHBB3CNJ","from":{"type":"wallet","id":"wal_01M8KG28R1QRRHW64B5THYZ64C"},"from_address":"0xa22317c465c742d3b93d599e356d1d416a949080","token":"USDC","legs":[{"to":"0xc4aeae2bbdbd183b363b52b7136bcd0393f91255","amount":9970,"role":"recipient"},{"to":"0x0e68a6dae4b8766b683e34134dfb634ea74076c6","amount":30,"role":"service_fee"}],"valid_until":1795951317240},"holds":[{"id":"tr_01M8KG2A3XNPEPV440WHBB3CNJ:recipient","debit":"wallet:wal_01M8KG28R1QRRHW64B5THYZ64C:USDC","credit":"wallet:wal_01M8KG28RMEXHF8NTZ82M3RHE0:USDC","amount":9970,"phase":"Pending"},{"id":"tr_01M8KG2A3XNPEPV440WHBB3CNJ:service_fee","debit":"wallet:wal_01M8KG28R1QRRHW64B5THYZ64C:USDC","credit":"fees:service:USDC","amount":30,"phase":"Pending"}],"notify_recipient":false,"tx_hash":"0x907a359b03dc98f37af626ea65b77978b71cbd5e216a038622249bac90b599ec","block":9,"submitted_at":1795950717240,"next_check_at":null,"created_at":1795950717053,"updated_at":1795950718346,"settled_at":1795950718346,"payout":null,"created_recipient_account":false,"from_customer":"wal_01M8KG28R1QRRHW64B5THYZ64C"}"#;

    #[test]
    fn absent_fields_are_not_stored_and_old_bodies_still_decode() {
        let op: Operation = serde_json::from_str(OLD_BODY).unwrap();
        let body = serde_json::to_string(&op).unwrap();
        for gone in [
            "error_reason",
            "quote_id",
            "next_check_at",
            "payout",
            "notify_recipient",
            "created_recipient_account",
        ] {
            assert!(!body.contains(gone), "{gone} is absent: {body}");
        }
        assert!(body.len() < OLD_BODY.len() - 120, "{} bytes", body.len());
        let back: Operation = serde_json::from_str(&body).unwrap();
        assert_eq!(back, op, "the compact body decodes to the same operation");

        // Present values are still written, and read back.
        let mut failed = op.clone();
        failed.error_reason = Some("no".into());
        failed.notify_recipient = true;
        failed.next_check_at = None;
        let body = serde_json::to_string(&failed).unwrap();
        assert!(
            body.contains(r#""error_reason":"no""#) && body.contains(r#""notify_recipient":true"#)
        );
        assert_eq!(serde_json::from_str::<Operation>(&body).unwrap(), failed);
    }
}
