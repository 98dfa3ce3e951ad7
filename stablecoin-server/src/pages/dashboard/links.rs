//! `/dashboard/payment-links` (issue #50): a business's payment links in the session's
//! mode: the list (cursor-paged, as `GET /api/v1/payment-links`), a form that creates
//! one and a button that deactivates one, each through the engine call of the matching
//! API route with that business's [`AuthContext`](stablecoin_core::engine::AuthContext)
//! (as the checkout page reads sessions).

use super::reads::{MaybeQ, Q, business_auth, chosen_business, q};
use super::{TenantPage, error_notice, field};
use crate::error::ApiError;
use crate::pages::html::{self, e, link, status, table};
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path};
use axum::http::StatusCode;
use axum::response::Response;
use stablecoin_checkout::links::CreatePaymentLinkRequest;
use std::collections::HashMap;
use std::fmt::Write;

const TITLE: &str = "Payment links";
const HERE: &str = "/dashboard/payment-links";

/// `GET /dashboard/payment-links?business=&starting_after=`.
pub async fn page(p: TenantPage, query: MaybeQ) -> Response {
    links_page(&p, &query.ok(), String::new(), StatusCode::OK).await
}

async fn links_page(
    p: &TenantPage,
    query: &Option<Q>,
    flash: String,
    code: StatusCode,
) -> Response {
    let (all, chosen) = match chosen_business(p, query).await {
        Ok(x) => x,
        Err(err) => return p.error(TITLE, HERE, err),
    };
    let Some(business) = chosen else {
        return p.render(
            TITLE,
            HERE,
            "<p>No checkout business yet: create one with <code>POST /v1/businesses</code>.</p>",
        );
    };
    let opts: Vec<(&str, &str)> = all.iter().map(|(i, n)| (i.as_str(), n.as_str())).collect();
    let mut out = flash;
    let _ = write!(
        out,
        "<form method=\"get\" action=\"{HERE}\" class=\"filters\"><div>{}</div>\
         <button type=\"submit\">Show</button></form>",
        html::select("business", "Business", &opts, &business)
    );
    let after = q(query, "starting_after");
    let auth = business_auth(p, &business);
    match p
        .app
        .checkout
        .list_payment_links(&auth, Some(25), (!after.is_empty()).then_some(after))
        .await
    {
        Ok(list) => {
            let rows: Vec<Vec<String>> = list
                .payment_links
                .iter()
                .map(|l| {
                    let amount = match (&l.amount, &l.min_amount, &l.max_amount) {
                        (Some(a), _, _) => format!("{} {}", e(a), e(&l.currency)),
                        (None, lo, hi) => format!(
                            "payer chooses {}–{} {}",
                            e(lo.as_deref().unwrap_or("0.000001")),
                            e(hi.as_deref().unwrap_or("…")),
                            e(&l.currency)
                        ),
                    };
                    let action = if l.status == "inactive" {
                        String::new()
                    } else {
                        format!(
                            "<form method=\"post\" action=\"{HERE}/{}/deactivate?business={}\" \
                             class=\"inline\" data-confirm=\"Deactivate this link?\">{}\
                             <button type=\"submit\" class=\"danger\">Deactivate</button></form>",
                            e(&l.link_id),
                            e(&business),
                            html::csrf_field(&p.csrf)
                        )
                    };
                    vec![
                        format!("<code>{}</code>", e(&l.link_id)),
                        status(&l.status),
                        amount,
                        e(&l.description),
                        format!(
                            "{} paid · {} open · {} opened{}",
                            l.payments_count,
                            l.open_sessions_count,
                            l.sessions_count,
                            l.max_payments
                                .map(|m| format!(" (max {m})"))
                                .unwrap_or_default()
                        ),
                        e(l.expires_at.as_deref().unwrap_or("—")),
                        link(&l.url, &l.url),
                        action,
                    ]
                })
                .collect();
            out.push_str(&table(
                TITLE,
                &[
                    "Link", "Status", "Amount", "For", "Payments", "Expires", "Page", "",
                ],
                &rows,
            ));
            if let Some(next) = &list.next_cursor {
                let _ = write!(
                    out,
                    "<nav class=\"pager\" aria-label=\"Pages\"><a href=\"{HERE}?business={}&amp;starting_after={}\">Older</a></nav>",
                    e(&business),
                    e(next)
                );
            }
        }
        Err(err) => out.push_str(&error_notice(&err.into())),
    }
    let _ = write!(
        out,
        "<h2>Create a payment link</h2>\
         <form method=\"post\" action=\"{HERE}?business={}\" class=\"stack\">{}\
         <label for=\"amount\">Fixed amount (leave empty to let the payer choose)</label>\
         <input id=\"amount\" name=\"amount\" inputmode=\"decimal\">\
         <label for=\"min_amount\">Payer's minimum (payer-chosen only)</label>\
         <input id=\"min_amount\" name=\"min_amount\" inputmode=\"decimal\">\
         <label for=\"max_amount\">Payer's maximum (payer-chosen only)</label>\
         <input id=\"max_amount\" name=\"max_amount\" inputmode=\"decimal\">\
         {}\
         <label for=\"description\">Description (shown to payers)</label>\
         <input id=\"description\" name=\"description\" maxlength=\"500\">\
         <label for=\"expires_at\">Expires at (RFC 3339, optional)</label>\
         <input id=\"expires_at\" name=\"expires_at\" placeholder=\"2030-01-31T23:59:59Z\">\
         <label for=\"max_payments\">Maximum payments (optional)</label>\
         <input id=\"max_payments\" name=\"max_payments\" inputmode=\"numeric\">\
         <button type=\"submit\">Create link</button></form>",
        e(&business),
        html::csrf_field(&p.csrf),
        html::select(
            "currency",
            "Currency",
            &[
                ("USD", "USD (USDC or USDT)"),
                ("USDC", "USDC"),
                ("USDT", "USDT")
            ],
            "USD"
        )
    );
    p.render_status(code, TITLE, HERE, &out)
}

type FormResult = Result<Form<HashMap<String, String>>, FormRejection>;

fn optional(f: &HashMap<String, String>, name: &str) -> Option<String> {
    Some(field(f, name).to_string()).filter(|v| !v.is_empty())
}

/// `POST /dashboard/payment-links?business=`: creates a link, as
/// `POST /api/v1/payment-links` does.
pub async fn create(p: TenantPage, query: MaybeQ, form: FormResult) -> Response {
    let query = query.ok();
    let Some(f) = p.check(form) else {
        return super::csrf_refused();
    };
    let business = match chosen_business(&p, &query).await {
        Ok((_, Some(b))) => b,
        Ok((_, None)) => return links_page(&p, &query, String::new(), StatusCode::OK).await,
        Err(err) => return p.error(TITLE, HERE, err),
    };
    let max_payments = match optional(&f, "max_payments").map(|v| v.parse::<u32>()) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => {
            let err = ApiError::bad_request("INVALID_PARAMETER", "max_payments must be a number")
                .with_param("max_payments");
            return links_page(&p, &query, error_notice(&err), err.status).await;
        }
    };
    let req = CreatePaymentLinkRequest {
        amount: optional(&f, "amount"),
        min_amount: optional(&f, "min_amount"),
        max_amount: optional(&f, "max_amount"),
        currency: field(&f, "currency").to_string(),
        description: optional(&f, "description"),
        expires_at: optional(&f, "expires_at"),
        max_payments,
    };
    match p
        .app
        .checkout
        .create_payment_link(&business_auth(&p, &business), &req, None)
        .await
    {
        Ok(l) => {
            let flash = html::notice(
                "ok",
                &format!(
                    "<p>Payment link <code>{}</code> created: share {}.</p>",
                    e(&l.link_id),
                    link(&l.url, &l.url)
                ),
            );
            links_page(&p, &query, flash, StatusCode::CREATED).await
        }
        Err(err) => {
            let err: ApiError = err.into();
            links_page(&p, &query, error_notice(&err), err.status).await
        }
    }
}

/// `POST /dashboard/payment-links/{id}/deactivate?business=`.
pub async fn deactivate(
    p: TenantPage,
    Path(id): Path<String>,
    query: MaybeQ,
    form: FormResult,
) -> Response {
    let query = query.ok();
    let Some(_) = p.check(form) else {
        return super::csrf_refused();
    };
    let business = match chosen_business(&p, &query).await {
        Ok((_, Some(b))) => b,
        Ok((_, None)) => return links_page(&p, &query, String::new(), StatusCode::OK).await,
        Err(err) => return p.error(TITLE, HERE, err),
    };
    match p
        .app
        .checkout
        .deactivate_payment_link(&business_auth(&p, &business), &id)
        .await
    {
        Ok(l) => {
            let flash = html::notice(
                "ok",
                &format!(
                    "<p>Payment link <code>{}</code> deactivated.</p>",
                    e(&l.link_id)
                ),
            );
            links_page(&p, &query, flash, StatusCode::OK).await
        }
        Err(err) => {
            let err: ApiError = err.into();
            links_page(&p, &query, error_notice(&err), err.status).await
        }
    }
}
