//! `/dashboard/statements`: a form that downloads a statement (treasury, a customer
//! wallet, a business's checkout funds) as CSV or JSON, through the same call
//! `GET /v1/statements` makes, with the session's key (so a wallet is members only, a
//! business must be the tenant's, and a test session sees no live ledger); and a form
//! that downloads the tenant's events (the `/v1/events` list) as JSON lines.

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
    let types = [
        ("*", "every type"),
        ("transfer.*", "transfer.*"),
        ("swap.*", "swap.*"),
        ("user.*", "user.*"),
        ("treasury.*", "treasury.*"),
        ("escrow.*", "escrow.*"),
    ];
    let events = format!(
        "<h2>Events</h2><p>Every wallet-family event of the last 30 days (the \
<code>/v1/events</code> list: payloads as the webhooks delivered them), newest first, \
as JSON lines; up to 10,000 per download.</p>\
<form method=\"get\" action=\"/dashboard/events/download\" class=\"filters\" id=\"events-form\">\
<div>{}</div>{}{}<button type=\"submit\" id=\"events-download\">Download events</button></form>",
        html::select("type", "Type", &types, "*"),
        input("from", "From (RFC 3339)", "2026-11-01T00:00:00Z")
            .replace("id=\"from\"", "id=\"events_from\"")
            .replace("for=\"from\"", "for=\"events_from\""),
        input("to", "To (RFC 3339, exclusive)", "2026-12-01T00:00:00Z")
            .replace("id=\"to\"", "id=\"events_to\"")
            .replace("for=\"to\"", "for=\"events_to\""),
    );
    p.render(TITLE, HERE, &(body + &events))
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

/// Most events one download holds; a longer range says so (`X-Events-Truncated`) and is
/// narrowed with `from` / `to` (or read with the API's cursor).
pub const EVENTS_DOWNLOAD_MAX: usize = 10_000;

/// `/dashboard/events/download`: the tenant's wallet-family events (the `/v1/events`
/// list: same filters, same objects, payloads as delivered), newest first, as JSON lines
/// (`application/x-ndjson`), up to [`EVENTS_DOWNLOAD_MAX`].
pub async fn events_download(p: TenantPage, Query(q): Query<HashMap<String, String>>) -> Response {
    use crate::api::events::write_event;
    use axum::http::{HeaderValue, header};
    use axum::response::IntoResponse;
    use stablecoin_core::domain::time::Timestamp;
    use stablecoin_webhooks::Family;
    use stablecoin_webhooks::delivery::{EventQuery, TypeFilter};
    const EVENTS: &str = "Events";
    if let Some(r) = p.live_only(EVENTS, HERE) {
        return r;
    }
    let get = |k: &str| q.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let instant = |k: &'static str| -> Result<Option<Timestamp>, crate::error::ApiError> {
        get(k)
            .map(|s| {
                Timestamp::parse_rfc3339(s).ok_or_else(|| {
                    crate::error::ApiError::bad_request(
                        "INVALID_PARAMETER",
                        format!("{k} must be an RFC 3339 timestamp"),
                    )
                    .with_param(k)
                })
            })
            .transpose()
    };
    let query = (|| {
        Ok::<_, crate::error::ApiError>(EventQuery {
            family: Family::Wallet,
            types: TypeFilter::parse(Family::Wallet, get("type"))
                .map_err(crate::error::ApiError::webhook)?,
            from: instant("from")?,
            to: instant("to")?,
            after: None,
            limit: 100,
        })
    })();
    let mut query = match query {
        Ok(q) => q,
        Err(err) => return p.error(EVENTS, HERE, err),
    };
    let mut out = String::new();
    let mut count = 0;
    let truncated = loop {
        let page = match p.app.webhooks.events_page(&p.auth.tenant, &query).await {
            Ok(page) => page,
            Err(err) => return p.error(EVENTS, HERE, crate::error::ApiError::webhook(err)),
        };
        for ev in &page.events {
            if count == EVENTS_DOWNLOAD_MAX {
                break;
            }
            if let Err(err) = write_event(&mut out, ev) {
                return p.error(EVENTS, HERE, err);
            }
            out.push('\n');
            count += 1;
        }
        match page.next {
            Some(_) if count == EVENTS_DOWNLOAD_MAX => break true,
            Some(next) => query.after = Some(next),
            None => break false,
        }
    };
    let mut res = (
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"events.jsonl\"",
            ),
        ],
        out,
    )
        .into_response();
    if truncated {
        res.headers_mut()
            .insert("x-events-truncated", HeaderValue::from_static("true"));
    }
    res
}
