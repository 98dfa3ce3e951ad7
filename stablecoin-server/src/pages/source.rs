//! The checkout gateway as the payment page's [`PaySource`]: one engine read, mapped to
//! the page's view. No rule lives here: statuses, amounts and deposits are the engine's;
//! this only words them for a payer.

use super::{PayDeposit, PayOption, PaySource, PayView};
use stablecoin_checkout::model::DepositState;
use stablecoin_checkout::wallet_links::WalletNetwork;
use stablecoin_checkout::{CheckoutEngine, Mode, Session, SessionDeposit, SessionStatus};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use std::collections::BTreeMap;

/// The checkout engine, read for payers.
pub struct CheckoutPages(pub CheckoutEngine);

/// The page's display phase of a session (see [`PayView::phase`]).
pub fn phase_of(s: &Session) -> &'static str {
    let applied = s.applied_total();
    match s.status {
        SessionStatus::Paid if !s.excess.is_zero() => "overpaid",
        SessionStatus::Paid => "paid",
        SessionStatus::Expired => "expired",
        SessionStatus::Failed => "failed",
        SessionStatus::Pending if !s.pending.is_zero() => "confirming",
        SessionStatus::Pending if !applied.is_zero() => "underpaid",
        SessionStatus::Pending => "awaiting_payment",
    }
}

/// The page's view of a session and its deposits at `now`.
pub fn view_of(
    s: &Session,
    deposits: &[SessionDeposit],
    business: String,
    now: Timestamp,
    wallets: &BTreeMap<String, WalletNetwork>,
) -> PayView {
    let due = Micros::new(s.amount.get().saturating_sub(s.applied_total().get()));
    let nonempty = |v: &str| (!v.is_empty()).then(|| v.to_string());
    PayView {
        session_id: s.id.clone(),
        business_name: business,
        reference: nonempty(&s.reference),
        description: nonempty(&s.description),
        amount: s.amount.to_decimal_string(),
        currency: s.currency.clone(),
        status: s.status.as_str().into(),
        phase: phase_of(s).into(),
        amount_received: s.applied_total().to_decimal_string(),
        amount_pending: s.pending.to_decimal_string(),
        amount_due: due.to_decimal_string(),
        excess: s.excess.to_decimal_string(),
        late: !s.late.is_zero(),
        failure_reason: s.failure_reason.clone(),
        expires_at: s.expires_at.to_rfc3339(),
        expires_in_secs: ((s.expires_at.millis() - now.millis()) / 1000).max(0),
        options: s
            .options
            .iter()
            .map(|o| PayOption {
                network: o.network.clone(),
                token: o.token.as_str().into(),
                address: o.address.clone(),
                // Only while something is due: a request for nothing would be refused.
                wallet_uri: (!due.is_zero())
                    .then(|| wallets.get(&o.network))
                    .flatten()
                    .and_then(|w| w.request_uri(o.token, &o.address, due, &s.id)),
            })
            .collect(),
        deposits: deposits
            .iter()
            .map(|d| PayDeposit {
                network: d.network.clone(),
                token: d.token.as_str().into(),
                amount: d.amount.to_decimal_string(),
                status: if d.state == DepositState::Credited {
                    "confirmed"
                } else {
                    "detected"
                }
                .into(),
                confirmations: d.confirmations,
                tx_hash: d.tx_hash.clone(),
            })
            .collect(),
        sandbox: s.mode == Mode::Test,
        refunds: Vec::new(),
    }
}

#[async_trait::async_trait]
impl PaySource for CheckoutPages {
    async fn pay_view(&self, session_id: &str) -> Option<PayView> {
        let (s, deposits, business) = self.0.public_session(session_id).await.ok()??;
        let now = self.0.kernel().now();
        let mut view = view_of(
            &s,
            &deposits,
            business,
            now,
            &self.0.config().wallet_networks,
        );
        view.refunds = super::pay_refunds::refunds_of(&self.0, &s).await;
        Some(view)
    }
}
