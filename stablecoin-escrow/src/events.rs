//! Escrow webhook event names. Every event is one entry of the deal's permanent history
//! and one outbox event (`OutboxEvent.event_type` = the name, `payload` =
//! [`EscrowWebhookPayload`](crate::view::EscrowWebhookPayload)) written in the same
//! batch as the change, with the same `evt_` id.
//!
//! | event | when | `data` |
//! |---|---|---|
//! | `escrow.created` | a deal was admitted (state CREATED) | `amount`, `escrow_address`, `funding_expires_at` |
//! | `escrow.deposit_recorded` | a confirmed deposit to the deal address was recorded (any kind) | the deposit: `deposit_id`, `tx_hash`, `kind`, `amount`, `applied`, `recoverable`, ... |
//! | `escrow.funded` | confirmed deposits reached the amount (FUNDED) | `funded_amount`, `auto_release_at` |
//! | `escrow.payout_pending` | a release, refund, automatic release or staff resolution was accepted (`payout_pending=true`) | `payout_id`, `purpose`, `trigger`, `to`, `to_address`, `amount` |
//! | `escrow.payout_failed` | the claimed payout failed; nothing moved (`payout_pending=false`, state unchanged) | `payout_id`, `purpose`, `error_reason` |
//! | `escrow.released` | the payout to the seller was confirmed on chain (RELEASED) | `payout_id`, `tx_hash`, `amount`, `to_address` |
//! | `escrow.refunded` | the payout to the buyer was confirmed on chain (REFUNDED) | same |
//! | `escrow.disputed` | the tenant raised a dispute (DISPUTED) | |
//! | `escrow.expired` | the funding window closed unpaid (EXPIRED) | `partial_recoverable` |
//! | `escrow.cancelled` | the tenant cancelled the unfunded deal (CANCELLED) | `partial_recoverable` |
//! | `escrow.recovery_pending` | staff authorised a recovery to the buyer's linked wallet | `payout_id`, `kind`, `token`, `amount`, `to_address` |
//! | `escrow.recovered` | a recovery payout was confirmed on chain | `payout_id`, `tx_hash`, ... |
//! | `escrow.recovery_failed` | a recovery payout failed; the balance is recoverable again | `payout_id`, `error_reason` |
//!
//! A staff resolution appears as `escrow.payout_pending` with `trigger`
//! `RESOLVE_RELEASE`/`RESOLVE_REFUND` and the staff actor, then `escrow.released` or
//! `escrow.refunded` whose escrow carries the `resolution_note`.

/// The escrow webhook event types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EscrowEventType {
    /// `escrow.created`: a deal was admitted (state CREATED).
    Created,
    /// `escrow.deposit_recorded`: a confirmed deposit to the deal address was recorded,
    /// whatever its kind.
    DepositRecorded,
    /// `escrow.funded`: confirmed deposits reached the amount (FUNDED).
    Funded,
    /// `escrow.payout_pending`: a release, refund, automatic release or staff resolution
    /// was accepted and its payout claimed.
    PayoutPending,
    /// `escrow.payout_failed`: the claimed payout failed; nothing moved, the state is
    /// unchanged.
    PayoutFailed,
    /// `escrow.released`: the payout to the seller was confirmed on chain (RELEASED).
    Released,
    /// `escrow.refunded`: the payout to the buyer was confirmed on chain (REFUNDED).
    Refunded,
    /// `escrow.disputed`: the tenant raised a dispute (DISPUTED).
    Disputed,
    /// `escrow.expired`: the funding window closed unpaid (EXPIRED).
    Expired,
    /// `escrow.cancelled`: the tenant cancelled the unfunded deal (CANCELLED).
    Cancelled,
    /// `escrow.recovery_pending`: staff authorised a recovery to the buyer's linked wallet.
    RecoveryPending,
    /// `escrow.recovered`: a recovery payout was confirmed on chain.
    Recovered,
    /// `escrow.recovery_failed`: a recovery payout failed; the balance is recoverable
    /// again.
    RecoveryFailed,
}

impl EscrowEventType {
    /// Every event type, in lifecycle order.
    pub const ALL: [EscrowEventType; 13] = [
        EscrowEventType::Created,
        EscrowEventType::DepositRecorded,
        EscrowEventType::Funded,
        EscrowEventType::PayoutPending,
        EscrowEventType::PayoutFailed,
        EscrowEventType::Released,
        EscrowEventType::Refunded,
        EscrowEventType::Disputed,
        EscrowEventType::Expired,
        EscrowEventType::Cancelled,
        EscrowEventType::RecoveryPending,
        EscrowEventType::Recovered,
        EscrowEventType::RecoveryFailed,
    ];

    /// The wire name: `OutboxEvent.event_type` and the webhook's `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            EscrowEventType::Created => "escrow.created",
            EscrowEventType::DepositRecorded => "escrow.deposit_recorded",
            EscrowEventType::Funded => "escrow.funded",
            EscrowEventType::PayoutPending => "escrow.payout_pending",
            EscrowEventType::PayoutFailed => "escrow.payout_failed",
            EscrowEventType::Released => "escrow.released",
            EscrowEventType::Refunded => "escrow.refunded",
            EscrowEventType::Disputed => "escrow.disputed",
            EscrowEventType::Expired => "escrow.expired",
            EscrowEventType::Cancelled => "escrow.cancelled",
            EscrowEventType::RecoveryPending => "escrow.recovery_pending",
            EscrowEventType::Recovered => "escrow.recovered",
            EscrowEventType::RecoveryFailed => "escrow.recovery_failed",
        }
    }

    /// The event type with this wire name; `None` for any other string.
    pub fn parse(s: &str) -> Option<EscrowEventType> {
        EscrowEventType::ALL.into_iter().find(|e| e.as_str() == s)
    }
}
