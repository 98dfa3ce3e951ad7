//! The refunds of a session on its payment page (issue #50): the payer sees each refund
//! with its state, the claim link while it awaits their address, and its transaction
//! once sent. Read through the checkout engine; no rule lives here.

use super::{PayRefund, escape_html};
use stablecoin_checkout::{CheckoutEngine, Refund, RefundView, Session};
use std::fmt::Write;

/// The payer's view of `s`'s refunds (none when they cannot be read: the page still
/// shows the payment).
pub async fn refunds_of(checkout: &CheckoutEngine, s: &Session) -> Vec<PayRefund> {
    checkout
        .refunds_of(s)
        .await
        .unwrap_or_default()
        .iter()
        .map(pay_refund)
        .collect()
}

fn pay_refund(r: &Refund) -> PayRefund {
    let v = RefundView::of(r);
    PayRefund {
        claim_url: v.claim_url.filter(|_| v.status == "awaiting_claim"),
        amount: v.amount,
        token: v.token,
        status: v.status,
        tx_hash: v.tx_hash,
    }
}

/// The words of a refund's status for the payer.
fn words(status: &str) -> &'static str {
    match status {
        "awaiting_claim" => "waiting for your address",
        "pending" | "submitted" => "on its way",
        "completed" => "refunded",
        "expired" => "claim link expired",
        _ => "could not be sent",
    }
}

/// The "Refunds" section (nothing when there are none).
pub fn render_refunds(o: &mut String, refunds: &[PayRefund]) {
    if refunds.is_empty() {
        return;
    }
    let e = escape_html;
    o.push_str("<section class=\"deposits\" id=\"refunds\">\n<h2>Refunds</h2>\n<ul>\n");
    for r in refunds {
        let _ = write!(
            o,
            "<li class=\"refund\" data-status=\"{}\"><strong>{} {}</strong>: {}",
            e(&r.status),
            e(&r.amount),
            e(&r.token),
            words(&r.status)
        );
        if let Some(u) = &r.claim_url {
            let _ = write!(o, " \u{2014} <a href=\"{}\">claim your refund</a>", e(u));
        }
        if let Some(t) = &r.tx_hash {
            let _ = write!(o, " \u{2014} <code>{}</code>", e(t));
        }
        o.push_str("</li>\n");
    }
    o.push_str("</ul>\n</section>\n");
}
