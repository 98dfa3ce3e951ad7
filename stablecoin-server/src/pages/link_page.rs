//! The hosted page of a payment link, `/pay/l/{link_id}` (issue #50).
//!
//! `GET` shows who asks, for what and how much (or, when the payer chooses, an amount
//! field with the link's bounds) and one button; `POST` (the button) asks the checkout
//! engine for a new session of the link and answers `303 See Other` to that session's
//! own payment page, so each payer pays a session of their own and a reload of the
//! payment page never opens another. A refusal (deactivated, expired, all payments
//! taken, an amount out of bounds) is the page again with the reason in words and the
//! engine's status code; the stable code is in `data-code`.
//!
//! Why a form and not a session per `GET`: a link is shared in chats and mails, whose
//! previews fetch it; a `GET` that opened sessions would open one per preview. Like the
//! payment page it needs no JavaScript, and its Content-Security-Policy is the payment
//! page's with one change: the form may post to this origin ([`LINK_CSP`]).

use super::escape_html as e;
use super::pay::head;
use crate::error::ApiError;
use axum::Router;
use axum::extract::rejection::{FormRejection, PathRejection};
use axum::extract::{Form, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use stablecoin_checkout::links::{PaymentLinkView, is_link_id};
use stablecoin_checkout::{CheckoutEngine, CheckoutError};
use std::collections::HashMap;
use std::fmt::Write;

/// The link page's Content-Security-Policy: the payment page's ([`super::pay::CSP`]),
/// except that its one form may post to this origin.
pub const LINK_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
frame-ancestors 'none'";

/// `GET` and `POST /pay/l/{link_id}`, with the checkout engine as state.
pub fn link_routes<S>(engine: CheckoutEngine) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/pay/l/{link_id}", get(show).post(open))
        .with_state(engine)
}

fn page(code: StatusCode, body: String) -> Response {
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_SECURITY_POLICY, LINK_CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    (code, headers, body).into_response()
}

fn not_found() -> Response {
    page(StatusCode::NOT_FOUND, super::render_not_found_page())
}

/// The link, when `id` has a link id's shape and the engine knows it.
async fn lookup(
    engine: &CheckoutEngine,
    id: Result<Path<String>, PathRejection>,
) -> Option<(String, PaymentLinkView, String)> {
    let Path(id) = id.ok()?;
    if !is_link_id(&id) {
        return None;
    }
    let (view, business) = engine.public_payment_link(&id).await.ok()??;
    Some((id, view, business))
}

async fn show(
    State(engine): State<CheckoutEngine>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    match lookup(&engine, id).await {
        Some((_, view, business)) => {
            page(StatusCode::OK, render_link_page(&view, &business, None, ""))
        }
        None => not_found(),
    }
}

async fn open(
    State(engine): State<CheckoutEngine>,
    id: Result<Path<String>, PathRejection>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let Some((id, view, business)) = lookup(&engine, id).await else {
        return not_found();
    };
    let amount = form
        .ok()
        .and_then(|Form(f)| f.get("amount").cloned())
        .unwrap_or_default();
    let amount = amount.chars().take(64).collect::<String>();
    match engine.open_link_session(&id, Some(&amount)).await {
        Ok(session) => (
            StatusCode::SEE_OTHER,
            [
                (header::LOCATION, format!("/pay/{}", session.session_id)),
                (header::CACHE_CONTROL, "no-store".into()),
                (header::REFERRER_POLICY, "no-referrer".into()),
            ],
        )
            .into_response(),
        Err(err) => {
            let status = ApiError::from(err.clone()).status;
            // Re-read: the refusal may be news (the link just reached its limit).
            let view = engine
                .public_payment_link(&id)
                .await
                .ok()
                .flatten()
                .map_or(view, |(v, _)| v);
            page(
                status,
                render_link_page(&view, &business, Some(&err), &amount),
            )
        }
    }
}

/// The refusal in words for a payer (no internal detail).
fn refusal_words(err: &CheckoutError) -> String {
    match err {
        CheckoutError::PaymentLinkInactive => {
            "This payment link is no longer active. Ask the business for a new one.".into()
        }
        CheckoutError::PaymentLinkExpired => {
            "This payment link has expired. Ask the business for a new one.".into()
        }
        CheckoutError::PaymentLinkLimitReached { .. } => {
            "This payment link takes no more payments.".into()
        }
        CheckoutError::AmountOutOfRange { min, max } => {
            format!("Enter an amount between {min} and {max}.")
        }
        CheckoutError::MissingParameter { .. } => "Enter the amount to pay.".into(),
        CheckoutError::InvalidAmount { .. } => {
            "Enter the amount as a number with at most 6 decimal places.".into()
        }
        _ => "The payment could not be started. Try again in a moment.".into(),
    }
}

/// The page of link `v` of `business`; `err` is the last attempt's refusal, `amount`
/// what the payer typed (kept in the field).
pub fn render_link_page(
    v: &PaymentLinkView,
    business: &str,
    err: Option<&CheckoutError>,
    amount: &str,
) -> String {
    let title = match &v.amount {
        Some(a) => format!("Pay {a} {} \u{2014} {business}", v.currency),
        None => format!("Pay {business}"),
    };
    let mut o = head(&title, false);
    if v.mode == "test" {
        o.push_str(concat!(
            "<p class=\"test-banner\" role=\"note\"><strong>TEST MODE</strong> ",
            "\u{2014} a sandbox payment link: send no real funds.</p>\n"
        ));
    }
    let _ = writeln!(
        o,
        "<main id=\"pay-link\" class=\"card\" data-link=\"{}\" data-status=\"{}\">\n\
         <header>\n<p class=\"merchant\">{}</p>",
        e(&v.link_id),
        e(&v.status),
        e(business)
    );
    match &v.amount {
        Some(a) => {
            let _ = writeln!(
                o,
                "<h1 id=\"amount-heading\">Pay <span class=\"amount\">{}</span> {}</h1>",
                e(a),
                e(&v.currency)
            );
        }
        None => {
            let _ = writeln!(o, "<h1 id=\"amount-heading\">Pay {}</h1>", e(business));
        }
    }
    if !v.description.is_empty() {
        let _ = writeln!(
            o,
            "<dl class=\"meta\"><div><dt>For</dt><dd class=\"description\">{}</dd></div></dl>",
            e(&v.description)
        );
    }
    o.push_str("</header>\n");
    if let Some(err) = err {
        let _ = writeln!(
            o,
            "<p id=\"link-error\" class=\"status status-bad\" role=\"alert\" data-code=\"{}\">{}</p>",
            err.code(),
            e(&refusal_words(err))
        );
    }
    if v.status == "active" {
        let _ = writeln!(
            o,
            "<form id=\"open-session\" method=\"post\" action=\"/pay/l/{}\">",
            e(&v.link_id)
        );
        if v.amount.is_none() {
            let bounds = match (&v.min_amount, &v.max_amount) {
                (Some(lo), Some(hi)) => format!("Between {lo} and {hi} {}.", v.currency),
                (Some(lo), None) => format!("At least {lo} {}.", v.currency),
                (None, Some(hi)) => format!("At most {hi} {}.", v.currency),
                (None, None) => String::new(),
            };
            let _ = writeln!(
                o,
                "<p><label class=\"label\" for=\"amount\">Amount ({})</label>\
                 <input id=\"amount\" name=\"amount\" inputmode=\"decimal\" \
                 autocomplete=\"off\" required value=\"{}\" aria-describedby=\"amount-hint\">\
                 <span id=\"amount-hint\" class=\"note\">{}</span></p>",
                e(&v.currency),
                e(amount),
                e(&bounds)
            );
        }
        o.push_str(
            "<p><button type=\"submit\" class=\"copy\" id=\"continue\">Continue to payment</button></p>\n\
             </form>\n",
        );
    } else if err.is_none() {
        let words = match v.status.as_str() {
            "expired" => refusal_words(&CheckoutError::PaymentLinkExpired),
            "completed" => {
                refusal_words(&CheckoutError::PaymentLinkLimitReached { max_payments: 0 })
            }
            _ => refusal_words(&CheckoutError::PaymentLinkInactive),
        };
        let _ = writeln!(
            o,
            "<p id=\"link-closed\" class=\"status status-bad\">{}</p>",
            e(&words)
        );
    }
    o.push_str(
        "<footer><p>Each payer gets a payment page of their own.</p></footer>\n\
         </main>\n</body>\n</html>\n",
    );
    o
}
