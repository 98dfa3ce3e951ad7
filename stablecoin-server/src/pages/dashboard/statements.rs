//! `/dashboard/statements`: a form that downloads a statement (treasury, a customer
//! wallet, a business's checkout funds) as CSV or JSON, through the same call
//! `GET /v1/statements` makes, with the session's key (so a wallet is members only, a
//! business must be the tenant's, and a test session sees no live ledger).

use super::TenantPage;
use crate::api::statements::{StatementParams, render, statement};
use crate::auth::Caller;
use crate::pages::html::{self, e};
use axum::extract::Query;
use axum::response::Response;
use std::collections::HashMap;

const TITLE: &str = "Statements";
const HERE: &str = "/dashboard/statements";

/// The form.
pub async fn page(p: TenantPage) -> Response {
    if let Some(r) = p.live_only(TITLE, HERE) {
        return r;
    }
    let accounts = [
        ("treasury", "Treasury"),
        ("wallet", "Customer wallet (phone number)"),
        ("checkout_funds", "Checkout funds (business)"),
    ];
    let tokens = [("USDC", "USDC"), ("USDT", "USDT")];
    let formats = [("csv", "CSV"), ("json", "JSON")];
    let input = |name: &str, label: &str, hint: &str| {
        format!(
            "<div><label for=\"{n}\">{l}</label><input id=\"{n}\" name=\"{n}\" placeholder=\"{h}\"></div>",
            n = e(name),
            l = e(label),
            h = e(hint)
        )
    };
    let body = format!(
        "<p>Opening balance, every posting with its operation and counterparty, closing \
balance: opening + entries = closing = the ledger's balance at the end, to the \
micro-unit. Periods are <code>[from, to)</code> and chain. Columns: \
docs/events-and-statements.md.</p>\
<form method=\"get\" action=\"/dashboard/statements/download\" class=\"filters\" id=\"statement-form\">\
<div>{}</div><div>{}</div>{}{}{}{}<div>{}</div>\
<button type=\"submit\" id=\"statement-download\">Download</button></form>",
        html::select("account", "Account", &accounts, "treasury"),
        html::select("token", "Token", &tokens, "USDC"),
        input("phone_number", "Phone number", "+2250700000001"),
        input("business", "Business", "biz_..."),
        input("from", "From (RFC 3339)", "2026-11-01T00:00:00Z"),
        input("to", "To (RFC 3339, exclusive)", "2026-12-01T00:00:00Z"),
        html::select("format", "Format", &formats, "csv"),
    );
    p.render(TITLE, HERE, &body)
}

/// The download: the API's answer (CSV as an attachment, or JSON).
pub async fn download(p: TenantPage, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(r) = p.live_only(TITLE, HERE) {
        return r;
    }
    let get = |k: &str| {
        q.get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let params = StatementParams {
        account: get("account"),
        token: get("token"),
        phone_number: get("phone_number"),
        business: get("business"),
        from: get("from"),
        to: get("to"),
        format: get("format"),
    };
    let caller = Caller(p.auth.clone());
    let answer = match statement(&p.app, &caller, &params).await {
        Ok(v) => render(v, params.format.as_deref()),
        Err(err) => Err(err),
    };
    match answer {
        Ok(r) => r,
        Err(err) => p.error(TITLE, HERE, err),
    }
}
