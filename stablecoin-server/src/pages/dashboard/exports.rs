//! `/dashboard/exports` (issue #52 item 3): a download form for each export
//! (operations, withdrawals, escrow deals, checkout sessions, payments), answered by the
//! same streamed exports as `/v1/exports/...` and `/api/v1/exports/...`, with the
//! session's tenant (the checkout ones for a business of the tenant, live mode: the
//! dashboard's live session). Columns: docs/exports.md.

use super::TenantPage;
use crate::api::exports::{
    ExportParams, OperationExportParams, WithdrawalExportParams, checkout_export, escrows_export,
    operations_export, withdrawals_export,
};
use crate::auth::Caller;
use crate::pages::html::{self, e};
use axum::extract::Query;
use axum::response::Response;
use stablecoin_checkout::{DEFAULT_BUSINESS, Mode};
use std::collections::HashMap;

const TITLE: &str = "Exports";
const HERE: &str = "/dashboard/exports";

fn input(form: &str, name: &str, label: &str, hint: &str) -> String {
    format!(
        "<div><label for=\"{f}-{n}\">{l}</label><input id=\"{f}-{n}\" name=\"{n}\" placeholder=\"{h}\"></div>",
        f = e(form),
        n = e(name),
        l = e(label),
        h = e(hint)
    )
}

fn select(form: &str, name: &str, label: &str, options: &[(&str, &str)], default: &str) -> String {
    html::select(name, label, options, default)
        .replace(&format!("id=\"{name}\""), &format!("id=\"{form}-{name}\""))
        .replace(
            &format!("for=\"{name}\""),
            &format!("for=\"{form}-{name}\""),
        )
}

/// One download form: `export` names what it downloads; `fields` are its filters.
fn form(export: &str, title: &str, what: &str, fields: &str) -> String {
    let formats = [("csv", "CSV"), ("jsonl", "JSON lines")];
    format!(
        "<h2>{t}</h2><p>{w}</p>\
<form method=\"get\" action=\"/dashboard/exports/download\" class=\"filters\" id=\"{x}-form\">\
<input type=\"hidden\" name=\"export\" value=\"{x}\">{fields}{from}{to}<div>{fmt}</div>\
<button type=\"submit\" id=\"{x}-download\">Download</button></form>",
        t = e(title),
        w = e(what),
        x = e(export),
        from = input(export, "from", "From (RFC 3339)", "2026-11-01T00:00:00Z"),
        to = input(
            export,
            "to",
            "To (RFC 3339, exclusive)",
            "2026-12-01T00:00:00Z"
        ),
        fmt = select(export, "format", "Format", &formats, "csv"),
    )
}

/// The forms.
pub async fn page(p: TenantPage) -> Response {
    if let Some(r) = p.live_only(TITLE, HERE) {
        return r;
    }
    let kinds = [
        ("", "every kind"),
        ("funding", "funding"),
        ("transfer", "transfer"),
        ("swap", "swap"),
        ("withdrawal", "withdrawal"),
    ];
    let intro = "<p>Everything of a kind over a period, newest first, as CSV (a \
spreadsheet runs no cell: one starting with = + - @ gets a leading ') or JSON lines. \
Downloads stream, whatever their size. Columns: docs/exports.md.</p>";
    let body = [
        intro.to_string(),
        form(
            "operations",
            "Operations",
            "Fundings, transfers, swaps and withdrawals, as their reads show them.",
            &format!(
                "<div>{}</div>{}",
                select("operations", "kind", "Kind", &kinds, ""),
                input("operations", "state", "State", "SETTLED"),
            ),
        ),
        form(
            "withdrawals",
            "Withdrawals",
            "Each withdrawal with its payout: provider, reference, amount, failure.",
            &input("withdrawals", "state", "State", "COMPLETED"),
        ),
        form("escrows", "Escrow deals", "Every escrow deal.", ""),
        form(
            "checkout_sessions",
            "Checkout sessions",
            "A business's live payment sessions.",
            &input(
                "checkout_sessions",
                "business",
                "Business",
                DEFAULT_BUSINESS,
            ),
        ),
        form(
            "payments",
            "Payments",
            "Every deposit into a business's live payment sessions.",
            &input("payments", "business", "Business", DEFAULT_BUSINESS),
        ),
    ]
    .concat();
    p.render(TITLE, HERE, &body)
}

/// The download: the export the form names, streamed.
pub async fn download(p: TenantPage, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(r) = p.live_only(TITLE, HERE) {
        return r;
    }
    let get = |k: &str| {
        q.get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let caller = Caller(p.auth.clone());
    let common = ExportParams {
        format: get("format"),
        from: get("from"),
        to: get("to"),
    };
    let answer = match get("export").as_deref() {
        Some("operations") => operations_export(
            &p.app,
            &caller,
            &OperationExportParams {
                format: common.format,
                kind: get("kind"),
                state: get("state"),
                from: common.from,
                to: common.to,
            },
        ),
        Some("withdrawals") => withdrawals_export(
            &p.app,
            &caller,
            &WithdrawalExportParams {
                format: common.format,
                state: get("state"),
                from: common.from,
                to: common.to,
            },
        ),
        Some("escrows") => escrows_export(&p.app, &caller, &common),
        Some(which @ ("checkout_sessions" | "payments")) => {
            let business = get("business").unwrap_or_else(|| DEFAULT_BUSINESS.into());
            checkout_export(
                &p.app,
                &p.auth.tenant,
                &business,
                Mode::Live,
                &common,
                which == "payments",
            )
        }
        _ => Err(crate::error::ApiError::bad_request(
            "INVALID_PARAMETER",
            "export must be operations, withdrawals, escrows, checkout_sessions or payments",
        )
        .with_param("export")),
    };
    match answer {
        Ok(r) => r,
        Err(err) => p.error(TITLE, HERE, err),
    }
}
