//! The payer's refund claim page, `GET /pay/refunds/{refund_id}` (issue #50): a hosted
//! page like the payment page, for a refund its business created without an address.
//!
//! It shows who refunds what and why, and, while the refund awaits its claim, a form
//! where the payer picks one of the session's networks and enters an address of their
//! own (`POST /pay/refunds/{refund_id}`), once. Every rule (the address's form, the
//! network, "once", the link's expiry) is the checkout engine's; a refused claim shows
//! the engine's words on the page again with a 4xx status. After the claim the page
//! shows where the refund goes and its progress (submitted, completed, failed or
//! expired), and works without JavaScript.
//!
//! The refund id (`rf_` and 80 random bits) is the capability: whoever holds the link
//! may claim, as with a payment page. The page has no script; its Content-Security-
//! Policy is the payment page's with `form-action 'self'` for its one form.

use super::escape_html;
use super::pay::network_name;
use axum::Router;
use axum::extract::rejection::{FormRejection, PathRejection};
use axum::extract::{Form, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use stablecoin_checkout::{CheckoutEngine, CheckoutError, RefundClaimView};
use std::collections::HashMap;
use std::fmt::Write;

/// The claim page's Content-Security-Policy: the payment page's, but its one form may
/// post to this origin.
pub const CLAIM_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; \
base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `GET` and `POST /pay/refunds/{refund_id}`, with the checkout engine as state.
pub fn refund_claim_routes<S>(checkout: CheckoutEngine) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/pay/refunds/{refund_id}", get(page).post(claim))
        .with_state(checkout)
}

async fn page(
    State(checkout): State<CheckoutEngine>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let Ok(Path(id)) = id else {
        return not_found();
    };
    match checkout.public_refund(&id).await {
        Ok(Some(view)) => html(StatusCode::OK, render_claim_page(&view, None)),
        Ok(None) => not_found(),
        Err(_) => html(
            StatusCode::SERVICE_UNAVAILABLE,
            message_page("Please try again", "The refund cannot be shown right now."),
        ),
    }
}

async fn claim(
    State(checkout): State<CheckoutEngine>,
    id: Result<Path<String>, PathRejection>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let Ok(Path(id)) = id else {
        return not_found();
    };
    let fields = form.map(|Form(f)| f).unwrap_or_default();
    let network = fields.get("network").map(String::as_str).unwrap_or("");
    let address = fields.get("address").map(String::as_str).unwrap_or("");
    match checkout.claim_refund(&id, network, address).await {
        Ok(_) => Redirect::to(&format!("/pay/refunds/{id}")).into_response(),
        Err(CheckoutError::NotFound { .. }) => not_found(),
        Err(e) => {
            let status = match &e {
                CheckoutError::InvalidState { .. } | CheckoutError::Conflict { .. } => {
                    StatusCode::CONFLICT
                }
                CheckoutError::Storage(_) | CheckoutError::Rail(_) => {
                    StatusCode::SERVICE_UNAVAILABLE
                }
                _ => StatusCode::BAD_REQUEST,
            };
            let words = match &e {
                CheckoutError::InvalidParameter { reason, .. } => {
                    format!("That address cannot receive this refund: {reason}.")
                }
                CheckoutError::UnsupportedNetwork { .. } => {
                    "Choose one of the networks listed.".to_string()
                }
                CheckoutError::InvalidState { status } if status == "expired" => {
                    "This refund link has expired.".to_string()
                }
                CheckoutError::InvalidState { .. } => {
                    "This refund has already been claimed.".to_string()
                }
                _ => "The refund could not be claimed right now; please try again.".to_string(),
            };
            match checkout.public_refund(&id).await {
                Ok(Some(view)) => html(status, render_claim_page(&view, Some(&words))),
                _ => not_found(),
            }
        }
    }
}

fn html(code: StatusCode, body: String) -> Response {
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_SECURITY_POLICY, CLAIM_CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    (code, headers, body).into_response()
}

fn not_found() -> Response {
    html(
        StatusCode::NOT_FOUND,
        message_page(
            "Refund not found",
            "This refund link is not valid. Check the link you were given, or ask the business for a new one.",
        ),
    )
}

fn head(title: &str) -> String {
    let mut out = String::with_capacity(4096);
    out.push_str(concat!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        "<meta name=\"referrer\" content=\"no-referrer\">\n",
        "<meta name=\"robots\" content=\"noindex, nofollow\">\n",
    ));
    let _ = writeln!(out, "<title>{}</title>", escape_html(title));
    out.push_str("<link rel=\"stylesheet\" href=\"/pay/assets/pay.css\">\n</head>\n<body>\n");
    out
}

fn message_page(title: &str, text: &str) -> String {
    let mut out = head(title);
    let _ = write!(
        out,
        "<main id=\"not-found\" class=\"card\">\n<h1>{}</h1>\n<p>{}</p>\n</main>\n</body>\n</html>\n",
        escape_html(title),
        escape_html(text)
    );
    out
}

/// The status in words and its style.
fn status_words(v: &RefundClaimView) -> (&'static str, String) {
    match v.status.as_str() {
        "awaiting_claim" => (
            "status-wait",
            "Enter an address of your own to receive this refund.".into(),
        ),
        "pending" | "submitted" => (
            "status-wait",
            "Refund on its way: it is being sent to your address.".into(),
        ),
        "completed" => ("status-ok", "Refunded: sent to your address.".into()),
        "expired" => (
            "status-bad",
            "This refund link expired before it was claimed. Contact the business.".into(),
        ),
        _ => (
            "status-bad",
            format!(
                "The refund could not be sent{}. Contact the business.",
                v.failure_reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ),
        ),
    }
}

/// The whole claim page of `v`, with `error` (a refused claim) above the form.
pub fn render_claim_page(v: &RefundClaimView, error: Option<&str>) -> String {
    let mut o = head(&format!("Refund from {}", v.business_name));
    if v.sandbox {
        o.push_str(
            "<div class=\"test-banner\" role=\"note\"><strong>TEST MODE</strong> \
             Nothing is sent on a real chain.</div>\n",
        );
    }
    let _ = write!(
        o,
        "<main id=\"refund\" class=\"card\">\n<p class=\"merchant\">{}</p>\n\
         <h1>Refund of <span class=\"amount\" id=\"refund-amount\">{} {}</span></h1>\n",
        escape_html(&v.business_name),
        escape_html(&v.amount),
        escape_html(&v.token),
    );
    o.push_str("<dl class=\"meta\">\n");
    let mut row = |label: &str, value: &str, id: &str| {
        let _ = writeln!(
            o,
            "<div><dt>{}</dt><dd id=\"{id}\">{}</dd></div>",
            escape_html(label),
            escape_html(value)
        );
    };
    if let Some(r) = &v.reference {
        row("Order", r, "refund-reference");
    }
    if let Some(r) = &v.reason {
        row("Reason", r, "refund-reason");
    }
    if let Some(n) = &v.network {
        row("Network", &network_name(n), "refund-network");
    }
    if let Some(a) = &v.address {
        row("To", a, "refund-address");
    }
    if let Some(t) = &v.tx_hash {
        row("Transaction", t, "refund-tx");
    }
    if v.status == "awaiting_claim"
        && let Some(e) = &v.expires_at
    {
        row("Claim before", e, "refund-expires");
    }
    o.push_str("</dl>\n");
    let (class, words) = status_words(v);
    let _ = writeln!(
        o,
        "<div class=\"status-block\"><p id=\"refund-status\" class=\"status {class}\" \
         data-status=\"{}\">{}</p></div>",
        escape_html(&v.status),
        escape_html(&words)
    );
    if let Some(e) = error {
        let _ = writeln!(
            o,
            "<p id=\"claim-error\" class=\"warning\" role=\"alert\">{}</p>",
            escape_html(e)
        );
    }
    if v.status == "awaiting_claim" && !v.networks.is_empty() {
        let _ = write!(
            o,
            "<form id=\"claim\" method=\"post\" action=\"/pay/refunds/{}\">\n\
             <label class=\"label\" for=\"network\">Network</label>\n\
             <select id=\"network\" name=\"network\">\n",
            escape_html(&v.refund_id)
        );
        for n in &v.networks {
            let _ = writeln!(
                o,
                "<option value=\"{}\">{} ({})</option>",
                escape_html(n),
                escape_html(&network_name(n)),
                escape_html(&v.token)
            );
        }
        o.push_str(concat!(
            "</select>\n",
            "<label class=\"label\" for=\"address\">Your address on that network</label>\n",
            "<input id=\"address\" name=\"address\" class=\"address\" autocomplete=\"off\" ",
            "spellcheck=\"false\" required maxlength=\"128\">\n",
            "<p class=\"warning\">Use an address you control on the network you chose. ",
            "The refund can be claimed once; a refund sent to a wrong address cannot be ",
            "recovered.</p>\n",
            "<button type=\"submit\" class=\"copy\" id=\"claim-submit\">Claim refund</button>\n",
            "</form>\n",
        ));
    }
    o.push_str("</main>\n</body>\n</html>\n");
    o
}
