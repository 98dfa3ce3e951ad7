//! "Pay from your wallet here" (issue #50 item 4): the payment page's phone payment, on
//! its own page `/pay/{session_id}/phone` so the payment page keeps its
//! `form-action 'none'`.
//!
//! Two forms, no script: the payer's phone number (`POST /pay/{session_id}/phone`, a
//! code is sent), then the code (`POST /pay/{session_id}/phone/confirm`); a right code
//! pays the session and redirects to its payment page, which then shows it paid. A
//! refusal shows the engine's answer in words with its 4xx status. The same two engine
//! calls as the JSON routes (`crate::api::phone_payments`), behind the same per-address
//! limit; every rule is the engine's. The page never says whether a phone holds a
//! wallet: "if this number holds a wallet here, a code is on its way".

use super::escape_html;
use super::pay::network_name;
use super::refund_claim::CLAIM_CSP;
use crate::error::ApiError;
use crate::sign_in_throttle::Client;
use crate::state::AppState;
use axum::Router;
use axum::extract::rejection::{FormRejection, PathRejection};
use axum::extract::{Form, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use stablecoin_checkout::CheckoutError;
use stablecoin_core::domain::money::Micros;
use std::collections::HashMap;
use std::fmt::Write;

/// `GET`/`POST /pay/{session_id}/phone` and `POST /pay/{session_id}/phone/confirm`.
pub fn phone_pay_routes() -> Router<AppState> {
    Router::new()
        .route("/pay/{session_id}/phone", get(page).post(request))
        .route("/pay/{session_id}/phone/confirm", post(confirm))
}

/// What the page shows above its form.
struct Head {
    business: String,
    due: String,
    currency: String,
    network: Option<String>,
}

/// The session's heading, when it is one a payer can open.
async fn head_of(app: &AppState, id: &str) -> Option<Head> {
    if !super::is_session_id(id) {
        return None;
    }
    let (s, _, business) = app.checkout.public_session(id).await.ok()??;
    let due = Micros::new(s.amount.get().saturating_sub(s.applied_total().get()));
    Some(Head {
        business,
        due: due.to_decimal_string(),
        currency: s.currency.clone(),
        network: s.options.first().map(|o| o.network.clone()),
    })
}

async fn page(State(app): State<AppState>, id: Result<Path<String>, PathRejection>) -> Response {
    let Ok(Path(id)) = id else {
        return not_found();
    };
    match head_of(&app, &id).await {
        Some(h) => html(StatusCode::OK, render(&id, &h, Step::Phone, None)),
        None => not_found(),
    }
}

fn fields(form: Result<Form<HashMap<String, String>>, FormRejection>) -> HashMap<String, String> {
    form.map(|Form(f)| f).unwrap_or_default()
}

async fn request(
    State(app): State<AppState>,
    client: Client,
    id: Result<Path<String>, PathRejection>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let Ok(Path(id)) = id else {
        return not_found();
    };
    let Some(h) = head_of(&app, &id).await else {
        return not_found();
    };
    let f = fields(form);
    let phone = f.get("phone_number").cloned().unwrap_or_default();
    if let Err(e) = crate::api::phone_payments::per_ip(&app, &client).await {
        return refused(&id, &h, Step::Phone, e);
    }
    match app.checkout.request_phone_payment(&id, &phone).await {
        Ok(v) => html(
            StatusCode::OK,
            render(
                &id,
                &h,
                Step::Code {
                    phone: phone.trim().to_string(),
                    sent_to: v.sent_to,
                },
                None,
            ),
        ),
        Err(e) => refused(&id, &h, Step::Phone, checkout_error(e)),
    }
}

async fn confirm(
    State(app): State<AppState>,
    client: Client,
    id: Result<Path<String>, PathRejection>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let Ok(Path(id)) = id else {
        return not_found();
    };
    let Some(h) = head_of(&app, &id).await else {
        return not_found();
    };
    let f = fields(form);
    let phone = f.get("phone_number").cloned().unwrap_or_default();
    let code = f.get("code").cloned().unwrap_or_default();
    let step = Step::Code {
        phone: phone.trim().to_string(),
        sent_to: String::new(),
    };
    if let Err(e) = crate::api::phone_payments::per_ip(&app, &client).await {
        return refused(&id, &h, step, e);
    }
    match app.checkout.confirm_phone_payment(&id, &phone, &code).await {
        Ok(_) => Redirect::to(&format!("/pay/{id}")).into_response(),
        Err(e) => refused(&id, &h, step, checkout_error(e)),
    }
}

fn checkout_error(e: CheckoutError) -> ApiError {
    ApiError::from(e)
}

/// The page again with the refusal in words, under the refusal's status.
fn refused(id: &str, h: &Head, step: Step, e: ApiError) -> Response {
    let words = match e.code {
        "INVALID_PHONE" => {
            "Enter your phone number in international format, e.g. +2250700000001.".to_string()
        }
        "CODE_INVALID" => "That code is not right. Check the SMS and try again.".to_string(),
        "CODE_EXPIRED" => "That code has expired. Ask for a new one.".to_string(),
        "CODE_ALREADY_USED" => "That code was already used.".to_string(),
        "TOO_MANY_ATTEMPTS" | "RATE_LIMITED" => match e.retry_after_secs {
            Some(s) => format!(
                "Too many attempts. Try again in {} minutes.",
                ((s + 59) / 60).max(1)
            ),
            None => "Too many attempts. Try again later.".to_string(),
        },
        "INSUFFICIENT_FUNDS" => format!(
            "Your wallet holds too little {} on this payment's networks.",
            h.currency
        ),
        "INVALID_STATE" => "This payment can no longer be paid.".to_string(),
        "PHONE_PAYMENT_UNAVAILABLE" => {
            "Paying from a wallet here is not available for this payment.".to_string()
        }
        "MISSING_PARAMETER" => "Enter the code from the SMS.".to_string(),
        _ => "The payment could not be made right now; please try again.".to_string(),
    };
    let mut r = html(e.status, render(id, h, step, Some(&words)));
    if let Some(s) = e.retry_after_secs
        && let Ok(v) = header::HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
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
    html(StatusCode::NOT_FOUND, super::pay::render_not_found_page())
}

/// Which form the page shows.
enum Step {
    /// The phone number.
    Phone,
    /// The code sent to `phone` (masked as `sent_to`, empty after a refused code).
    Code { phone: String, sent_to: String },
}

fn render(id: &str, h: &Head, step: Step, error: Option<&str>) -> String {
    let e = escape_html;
    let mut o = String::with_capacity(4096);
    o.push_str(concat!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        "<meta name=\"referrer\" content=\"no-referrer\">\n",
        "<meta name=\"robots\" content=\"noindex, nofollow\">\n",
    ));
    let _ = writeln!(
        o,
        "<title>Pay {} {} from your wallet \u{2014} {}</title>",
        e(&h.due),
        e(&h.currency),
        e(&h.business)
    );
    o.push_str("<link rel=\"stylesheet\" href=\"/pay/assets/pay.css\">\n</head>\n<body>\n");
    let _ = write!(
        o,
        "<main id=\"phone-pay\" class=\"card\">\n<p class=\"merchant\">{}</p>\n\
         <h1>Pay <span class=\"amount\" id=\"phone-pay-amount\">{}</span> {} from your wallet</h1>\n\
         <p>If you hold a wallet of this service, pay from it with your phone number: \
         we send you a code by SMS. No network fee.</p>\n",
        e(&h.business),
        e(&h.due),
        e(&h.currency),
    );
    if let Some(n) = &h.network {
        let _ = writeln!(
            o,
            "<p class=\"visually-hidden\">Network: {}</p>",
            e(&network_name(n))
        );
    }
    if let Some(err) = error {
        let _ = writeln!(
            o,
            "<p id=\"phone-pay-error\" class=\"warning\" role=\"alert\">{}</p>",
            e(err)
        );
    }
    match step {
        Step::Phone => {
            let _ = write!(
                o,
                "<form id=\"phone-form\" method=\"post\" action=\"/pay/{}/phone\">\n\
                 <label class=\"label\" for=\"phone_number\">Phone number</label>\n\
                 <input id=\"phone_number\" name=\"phone_number\" type=\"tel\" \
                 autocomplete=\"tel\" placeholder=\"+2250700000001\" required>\n\
                 <button id=\"send-code\" type=\"submit\">Send me a code</button>\n</form>\n",
                e(id)
            );
        }
        Step::Code { phone, sent_to } => {
            if !sent_to.is_empty() {
                let _ = writeln!(
                    o,
                    "<p id=\"code-sent\" class=\"status status-wait\">If {} holds a wallet \
                     here, a code is on its way by SMS. It works for 10 minutes.</p>",
                    e(&sent_to)
                );
            }
            let _ = write!(
                o,
                "<form id=\"code-form\" method=\"post\" action=\"/pay/{}/phone/confirm\">\n\
                 <input type=\"hidden\" name=\"phone_number\" value=\"{}\">\n\
                 <label class=\"label\" for=\"code\">Code from the SMS</label>\n\
                 <input id=\"code\" name=\"code\" inputmode=\"numeric\" \
                 autocomplete=\"one-time-code\" pattern=\"[0-9]{{6}}\" maxlength=\"6\" required>\n\
                 <button id=\"pay-with-code\" type=\"submit\">Pay {} {}</button>\n</form>\n\
                 <p><a id=\"another-number\" href=\"/pay/{}/phone\">Use another number or ask for a new code</a></p>\n",
                e(id),
                e(&phone),
                e(&h.due),
                e(&h.currency),
                e(id),
            );
        }
    }
    let _ = write!(
        o,
        "<p><a id=\"back-to-pay\" href=\"/pay/{}\">Back to the payment page</a></p>\n\
         </main>\n</body>\n</html>\n",
        e(id)
    );
    o
}
