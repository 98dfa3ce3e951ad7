//! Refunds on the dashboard's payment session page (issue #50): what the session can
//! still refund per token, its refunds with their state, and a form that issues one
//! (`POST /dashboard/checkout/{id}/refunds`) with the same engine call as
//! `POST /api/v1/checkout/sessions/{id}/refunds` for the business's key.

use super::{TenantPage, error_notice, field};
use crate::error::ApiError;
use crate::pages::html::{self, e, link, status, table};
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path};
use axum::http::StatusCode;
use axum::response::Response;
use stablecoin_checkout::CreateRefundRequest;
use stablecoin_core::engine::AuthContext;
use std::collections::HashMap;

/// The refunds section of session `id` of the business `auth` acts for: the
/// refundable amounts, the refunds, and the form.
pub async fn section(p: &TenantPage, auth: &AuthContext, business: &str, id: &str) -> String {
    let list = match p.app.checkout.list_refunds(auth, id).await {
        Ok(l) => l,
        Err(err) => return error_notice(&err.into()),
    };
    let mut out = String::from("<h2>Refunds</h2>");
    if list.refundable.is_empty() {
        out.push_str("<p id=\"refundable\">Nothing left to refund.</p>");
    } else {
        let rows: Vec<Vec<String>> = list
            .refundable
            .iter()
            .map(|r| {
                vec![
                    e(&r.token),
                    e(&r.amount),
                    e(&r.from_refundable),
                    e(&r.from_settled),
                ]
            })
            .collect();
        out.push_str(&table(
            "Refundable",
            &["Token", "Refundable", "Excess, late, unpaid", "Settled"],
            &rows,
        ));
    }
    let rows: Vec<Vec<String>> = list
        .refunds
        .iter()
        .map(|r| {
            vec![
                format!("<code>{}</code>", e(&r.refund_id)),
                format!("{} {}", e(&r.amount), e(&r.token)),
                status(&r.status),
                match (&r.address, &r.claim_url) {
                    (Some(a), _) => format!("<code>{}</code>", e(a)),
                    (None, Some(u)) => link(u, "claim link"),
                    _ => String::new(),
                },
                e(r.failure_reason.as_deref().unwrap_or("")),
                e(r.tx_hash.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    out.push_str(&table(
        "Refunds",
        &["Refund", "Amount", "Status", "To", "Failure", "Transaction"],
        &rows,
    ));
    if !list.refundable.is_empty() {
        let _ = std::fmt::Write::write_fmt(
            &mut out,
            format_args!(
                "<form method=\"post\" action=\"/dashboard/checkout/{}/refunds\" id=\"refund-form\">{}\
<input type=\"hidden\" name=\"business\" value=\"{}\">\
<div><label for=\"refund-amount\">Amount (empty: all refundable)</label><input id=\"refund-amount\" name=\"amount\"></div>\
<div><label for=\"refund-token\">Token (empty: the one refundable)</label><input id=\"refund-token\" name=\"token\"></div>\
<div><label for=\"refund-network\">Network</label><input id=\"refund-network\" name=\"network\"></div>\
<div><label for=\"refund-address\">Address (empty: a claim link for the payer)</label><input id=\"refund-address\" name=\"address\"></div>\
<div><label for=\"refund-reason\">Reason</label><input id=\"refund-reason\" name=\"reason\"></div>\
<button type=\"submit\">Refund</button></form>",
                e(id),
                html::csrf_field(&p.csrf),
                e(business)
            ),
        );
    }
    out
}

/// `POST /dashboard/checkout/{id}/refunds`: issues a refund as the business's key would,
/// then shows the session again (with the engine's error and its status when refused).
pub async fn issue(
    p: TenantPage,
    Path(id): Path<String>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let fields = match p.check(form) {
        Some(f) => f,
        None => return super::csrf_refused(),
    };
    let business = field(&fields, "business").to_string();
    let known = match p.app.checkout.list_businesses(&p.auth.tenant).await {
        Ok(list) => list.iter().any(|b| b.id == business),
        Err(err) => return p.error("Refund", "/dashboard/checkout", err.into()),
    };
    if !known {
        return p.error(
            "Refund",
            "/dashboard/checkout",
            ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such business"),
        );
    }
    let opt = |name: &str| {
        let v = field(&fields, name).trim();
        (!v.is_empty()).then(|| v.to_string())
    };
    let req = CreateRefundRequest {
        amount: opt("amount"),
        token: opt("token"),
        network: opt("network"),
        address: opt("address"),
        reason: opt("reason"),
    };
    let auth = super::reads::business_auth(&p, &business);
    let back = format!("/dashboard/checkout/{id}?business={business}");
    match p.app.checkout.create_refund(&auth, &id, &req, None).await {
        Ok(_) => html::redirect(&back, &[]),
        Err(err) => {
            let err: ApiError = err.into();
            let mut body = error_notice(&err);
            body.push_str(&format!("<p>{}</p>", link(&back, "Back to the session")));
            p.render_status(err.status, "Refund", "/dashboard/checkout", &body)
        }
    }
}
