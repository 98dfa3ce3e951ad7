//! Server-rendered pages for people who are not API clients.
//!
//! [`pay`] is the payer-facing hosted payment page of a checkout session: one HTML page
//! per session that works without JavaScript (the JS in `assets/pay.js` only adds live
//! updates, a ticking countdown and a copy button), its JSON status for the page's own
//! polling, and the page's stylesheet and script as same-origin static files, so the
//! Content-Security-Policy can forbid every inline script and style.
//!
//! [`dashboard`] is the tenant dashboard (`/dashboard`) and [`console`] the staff
//! console (`/console`), each over the same engine calls as its API, with the sessions
//! of [`session`], the sign-in gate of [`gate`] and the HTML of [`html`].
//!
//! The payment pages know nothing about the engine: they read one [`PayView`] through a
//! [`PaySource`], which the checkout gateway implements. The view is the whole of what
//! a page shows, and the page shows nothing else.

pub mod console;
pub mod dashboard;
pub mod gate;
pub mod html;
pub mod link_page;
pub mod pay;
pub mod pay_refunds;
pub mod phone_pay;
pub mod public_limit;
pub mod refund_claim;
pub mod session;
pub mod shared;
pub mod source;

pub use pay::{pay_routes, render_not_found_page, render_pay_page};

use serde::{Deserialize, Serialize};

/// The public view of one checkout session: everything its payment page shows, and
/// nothing more (it is also the page's JSON status, `GET /pay/{session_id}/status`).
///
/// Amounts are decimal strings with 6 places (`"25.000000"`), as the engine's micros
/// print; the page shows them as given.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PayView {
    /// The session's id, `cs_...`.
    pub session_id: String,
    /// The business (tenant) that asks for the payment, as it named itself.
    pub business_name: String,
    /// The business's own reference for the payment (an order number), if any.
    pub reference: Option<String>,
    /// What the payment is for, as the business wrote it, if anything.
    pub description: Option<String>,
    /// The amount asked, 6 places: `"25.000000"`.
    pub amount: String,
    /// The token asked: `"USDC"` or `"USDT"`.
    pub currency: String,
    /// The session's status: `"pending"`, `"paid"`, `"expired"` or `"failed"`.
    pub status: String,
    /// The finer display state: `"awaiting_payment"`, `"confirming"`, `"underpaid"`,
    /// `"paid"`, `"overpaid"`, `"expired"` or `"failed"`.
    pub phase: String,
    /// The confirmed total received, 6 places.
    pub amount_received: String,
    /// Detected but not yet confirmed, 6 places.
    pub amount_pending: String,
    /// Still to pay, 6 places (`"0.000000"` once covered).
    pub amount_due: String,
    /// Paid beyond the amount asked, 6 places.
    pub excess: String,
    /// True when something arrived after the session expired.
    pub late: bool,
    /// Why the session failed, when it did.
    pub failure_reason: Option<String>,
    /// When the session expires, RFC 3339 UTC.
    pub expires_at: String,
    /// Seconds left until `expires_at` (0 once past), computed by the source when it
    /// builds the view, that is when the page or its status is served.
    pub expires_in_secs: i64,
    /// One way to pay per accepted network: where to send which token.
    pub options: Vec<PayOption>,
    /// The payments seen so far, detected or confirmed.
    pub deposits: Vec<PayDeposit>,
    /// A test-mode session: the page shows a "TEST MODE" banner.
    pub sandbox: bool,
    /// The session's refunds, newest first (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refunds: Vec<PayRefund>,
}

/// One refund of a session, as its payer sees it on the payment page.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PayRefund {
    /// 6 places.
    pub amount: String,
    /// `"USDC"` or `"USDT"`.
    pub token: String,
    /// `awaiting_claim`, `pending`, `submitted`, `completed`, `failed` or `expired`.
    pub status: String,
    /// The claim page, while the refund awaits the payer's address.
    pub claim_url: Option<String>,
    /// The refund's transaction, once sent.
    pub tx_hash: Option<String>,
}

/// One way to pay a session: a token on a network, to a deposit address of its own.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PayOption {
    /// The network: `"polygon"`, `"tron"`, `"solana"`, `"simulated"`, ...
    pub network: String,
    /// The token to send there: `"USDC"` or `"USDT"`.
    pub token: String,
    /// The session's fresh deposit address on that network.
    pub address: String,
    /// The request a wallet reads to pay this option's amount due (EIP-681 on an EVM
    /// chain, Solana Pay on Solana), for the QR code and the "open in wallet" link;
    /// absent on TRON (no URI standard wallets agree on: the QR holds the address and
    /// the amount is shown) and on simulated networks (no contract to call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wallet_uri: Option<String>,
}

/// One payment seen towards a session.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PayDeposit {
    /// The network it arrived on.
    pub network: String,
    /// The token it is in.
    pub token: String,
    /// Its amount, 6 places.
    pub amount: String,
    /// `"detected"` (seen, not yet final) or `"confirmed"`.
    pub status: String,
    /// How many confirmations it has so far.
    pub confirmations: u64,
    /// The transaction's hash, when known.
    pub tx_hash: Option<String>,
}

/// Where a payment page reads its sessions; the checkout gateway implements it.
#[async_trait::async_trait]
pub trait PaySource: Send + Sync {
    /// The public view of one session, or None when there is no such session.
    async fn pay_view(&self, session_id: &str) -> Option<PayView>;
}

/// `s` made safe as HTML text and as a double- or single-quoted attribute value: `&`,
/// `<`, `>`, `"` and `'` become character references.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// True when `id` has the shape of a session id: `cs_` and 1 to 64 ASCII letters or
/// digits (the engine's ids are `cs_` and 26 Crockford base-32 characters). Checked
/// before the source is asked, so nothing else reaches it or a page.
pub fn is_session_id(id: &str) -> bool {
    id.strip_prefix("cs_").is_some_and(|rest| {
        (1..=64).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_html_neutralises_hostile_input() {
        assert_eq!(
            escape_html("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(
            escape_html(r#"" onmouseover="x" '&'"#),
            "&quot; onmouseover=&quot;x&quot; &#39;&amp;&#39;"
        );
        assert_eq!(escape_html("&amp;"), "&amp;amp;");
        assert_eq!(escape_html("Café & Co — 25 €"), "Café &amp; Co — 25 €");
        assert_eq!(escape_html(""), "");
        for hostile in ["<img src=x onerror=alert(1)>", "\"><svg onload=1>", "'--!>"] {
            let e = escape_html(hostile);
            assert!(!e.contains(['<', '>', '"', '\'']), "{e}");
        }
    }

    #[test]
    fn session_ids_are_checked_by_shape() {
        assert!(is_session_id("cs_01HX3Y4Z5A6B7C8D9E0F1G2H3J"));
        assert!(is_session_id("cs_abc123"));
        assert!(is_session_id(&format!("cs_{}", "a".repeat(64))));
        for bad in [
            "",
            "cs_",
            "cs",
            "pi_abc",
            "CS_abc",
            "cs_abc-def",
            "cs_abc_def",
            "cs_ab%3C",
            "cs_<script>",
            "cs_é",
            &format!("cs_{}", "a".repeat(65)),
        ] {
            assert!(!is_session_id(bad), "{bad:?}");
        }
    }
}
