//! Automatic refunds (issue #50): a business that opted in has the excess and late part
//! of each confirmed deposit refunded to the address that paid it, when the rail tells
//! who paid (the chain scanners of EVM, TRON and Solana do; the deposit intake and a
//! test key's simulated payment do not).
//!
//! Off by default, and the business's explicit choice, because the paying address is
//! not always the payer's: an exchange's hot wallet sends for many customers, and money
//! sent back there may never reach the payer (the exchange credits deposits to its own
//! addresses, per customer). A business whose payers pay from their own wallets can opt
//! in; one whose payers use exchanges should refund by claim link.
//!
//! The refund is made once the deposit is credited (at its confirmation depth, in the
//! commit after the credit), under the idempotency key `auto-refund:<deposit_id>`, so a
//! transfer offered again is never refunded twice; it is an ordinary refund from then
//! on (`refund.*` events, retries, failure returning the money).

use super::{CheckoutEngine, Scope};
use crate::error::{CheckoutError, CheckoutResult};
use crate::model::{Business, DEFAULT_BUSINESS, Mode, SessionDeposit};
use crate::refund_views::{CreateRefundRequest, RefundView};
use crate::views::BusinessView;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::ports::{Batch, Record, Versioned, get_record};

impl CheckoutEngine {
    /// Turns automatic refunds of `business` (a business of `tenant`) on or off.
    pub async fn set_auto_refunds(
        &self,
        tenant: &TenantId,
        business: &str,
        enabled: bool,
    ) -> CheckoutResult<BusinessView> {
        let Some(Versioned {
            record: mut b,
            version,
        }) = get_record::<Business>(&*self.kernel.ports().store, business)
            .await?
            .filter(|b| &b.record.tenant == tenant)
        else {
            return Err(CheckoutError::NotFound {
                kind: "business",
                id: business.chars().take(64).collect(),
            });
        };
        if b.auto_refunds != enabled {
            b.auto_refunds = enabled;
            self.commit(Batch {
                puts: vec![b.update(version)?],
                ..Default::default()
            })
            .await?;
        }
        Ok(BusinessView::of(&b))
    }

    /// After deposit `deposit_id` of a live session was credited: refunds its excess or
    /// late part to `sender` when the session's business opted in; `None` when nothing
    /// is refunded (not opted in, nothing beyond the amount, no sender, a sender that
    /// is one of the service's own addresses, or that part already refunded by hand).
    pub(crate) async fn auto_refund_deposit(
        &self,
        deposit_id: u64,
        sender: &str,
    ) -> CheckoutResult<Option<RefundView>> {
        let store = &*self.kernel.ports().store;
        let Some(dep) =
            get_record::<SessionDeposit>(store, &SessionDeposit::record_id(deposit_id)).await?
        else {
            return Ok(None);
        };
        let dep = dep.record;
        let beyond = Micros::new(dep.amount.get().saturating_sub(dep.applied.get()));
        let no_sender = sender.trim_start_matches("0x").bytes().all(|b| b == b'0');
        if beyond.is_zero() || no_sender {
            return Ok(None);
        }
        let Some(session) = self.load(&dep.session).await? else {
            return Ok(None);
        };
        let s = session.record;
        if s.mode != Mode::Live || s.business == DEFAULT_BUSINESS {
            return Ok(None);
        }
        let opted_in = get_record::<Business>(store, &s.business)
            .await?
            .is_some_and(|b| b.record.auto_refunds);
        if !opted_in {
            return Ok(None);
        }
        let scope = Scope {
            tenant: s.tenant.clone(),
            business: s.business.clone(),
            mode: s.mode,
        };
        // What is still owed back of this token (a refund made by hand may have taken
        // part of it): never more.
        let left = {
            let deposits = self.deposits_of(&s).await?;
            super::refunds::refundable_by_token(&s, &deposits)
                .get(&dep.token)
                .map(|a| a.owed_back)
                .unwrap_or_default()
        };
        let amount = beyond.min(left);
        if amount.is_zero() {
            return Ok(None);
        }
        let req = CreateRefundRequest {
            amount: Some(amount.to_decimal_string()),
            token: Some(dep.token.to_string()),
            network: Some(dep.network.clone()),
            address: Some(sender.to_string()),
            reason: Some(
                if dep.late {
                    "automatic refund of a late payment"
                } else {
                    "automatic refund of an overpayment"
                }
                .into(),
            ),
        };
        let key = format!("auto-refund:{deposit_id}");
        match self.refund_for(&scope, &s.id, &req, Some(&key)).await {
            Ok(v) => Ok(Some(v)),
            // A sender the service owns, or of a form the network does not send to:
            // nothing to refund automatically; the business may refund by hand.
            Err(CheckoutError::InvalidParameter {
                field: "address", ..
            }) => Ok(None),
            // A spending policy refuses it (audited by the wallet engine): not refunded
            // automatically, and not asked again every round; the business may refund
            // by hand.
            Err(CheckoutError::PolicyDenied { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
