//! The dashboard's reading pages (overview, wallets, operations, escrows, checkout) and
//! the escrow actions a tenant may take. Each calls what the matching `/v1` handler
//! calls, with the session's [`AuthContext`](stablecoin_core::engine::AuthContext).

use super::{TenantPage, error_notice, explorer_link, field};
use crate::api::escrow::engine as escrow_engine;
use crate::error::ApiError;
use crate::pages::html::{self, Series, e, facts, link, status, table};
use crate::pages::shared::{escrow_history, tokens};
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Path, Query};
use axum::http::StatusCode;
use axum::response::Response;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::state::{OpKind, OpStatus, reachable_states};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{AuthContext, Engine, KeyKind};
use stablecoin_escrow::{EscrowActionRequest, ListEscrowsQuery};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

pub(super) type Q = Query<HashMap<String, String>>;
/// A page's query: a malformed one reads as empty (every filter then has its default).
pub(super) type MaybeQ = Result<Q, QueryRejection>;

/// How many of each kind's newest operations the overview's chart counts.
const OVERVIEW_SAMPLE: usize = 500;
/// The days the overview's chart shows.
const OVERVIEW_DAYS: i64 = 7;
const DAY_MS: i64 = 86_400_000;

pub(super) fn q<'a>(query: &'a Option<Q>, name: &str) -> &'a str {
    query
        .as_ref()
        .and_then(|Query(m)| m.get(name))
        .map(|s| s.trim())
        .unwrap_or("")
}

fn page_number(query: &Option<Q>) -> u32 {
    q(query, "page")
        .parse::<u32>()
        .ok()
        .filter(|p| (1..=100_000).contains(p))
        .unwrap_or(1)
}

fn pager(base: &str, page: u32, shown: usize, limit: usize, total: u64) -> String {
    let mut out = String::from("<nav class=\"pager\" aria-label=\"Pages\">");
    let sep = if base.contains('?') { '&' } else { '?' };
    if page > 1 {
        let _ = write!(
            out,
            "<a href=\"{}{sep}page={}\">Newer</a>",
            e(base),
            page - 1
        );
    }
    let _ = write!(out, "<span>Page {page} · {total} in all</span>");
    if shown == limit && (page as u64) * (limit as u64) < total {
        let _ = write!(
            out,
            "<a href=\"{}{sep}page={}\">Older</a>",
            e(base),
            page + 1
        );
    }
    out.push_str("</nav>");
    out
}

/// Which bucket of the overview's chart a status falls in.
fn bucket(s: OpStatus) -> usize {
    match s {
        OpStatus::Settled | OpStatus::Completed => 1,
        OpStatus::Failed | OpStatus::Refunded => 2,
        _ => 0,
    }
}

/// `GET /dashboard`: treasury balances per token, and the operations of the last days
/// by state.
pub async fn overview(p: TenantPage) -> Response {
    if let Some(r) = p.live_only("Overview", "/dashboard") {
        return r;
    }
    let engine = &p.app.engine;
    let mut out = String::from("<h2>Treasury</h2><div class=\"cards\">");
    for token in [Token::Usdc, Token::Usdt] {
        match engine.treasury_balance(&p.auth.tenant, token).await {
            Ok(b) => {
                let _ = write!(
                    out,
                    "<div class=\"card\"><div class=\"l\">Treasury {}</div><div class=\"v\">{}</div></div>",
                    token.as_str(),
                    b.to_decimal_string()
                );
            }
            Err(err) => out.push_str(&error_notice(&ApiError::from(err))),
        }
    }
    out.push_str("</div><p class=\"hint\">The treasury is one ledger account per token; it funds wallets on every rail.</p>");
    // Operations by day and state (the newest operations of each kind).
    let now = super::now_ms(&p.app);
    let first_day = now / DAY_MS - (OVERVIEW_DAYS - 1);
    let mut days: BTreeMap<i64, [u64; 3]> = (0..OVERVIEW_DAYS)
        .map(|i| (first_day + i, [0; 3]))
        .collect();
    let mut totals: BTreeMap<(&'static str, &'static str), u64> = BTreeMap::new();
    for kind in OpKind::ALL {
        match engine
            .list_operations(&p.auth.tenant, kind, None, OVERVIEW_SAMPLE, 0)
            .await
        {
            Ok((ops, _)) => {
                for op in ops {
                    *totals
                        .entry((kind.as_str(), op.status.as_str()))
                        .or_default() += 1;
                    if let Some(d) = days.get_mut(&(op.created_at.millis() / DAY_MS)) {
                        d[bucket(op.status)] += 1;
                    }
                }
            }
            Err(err) => out.push_str(&error_notice(&ApiError::from(err))),
        }
    }
    out.push_str("<h2>Operations, last 7 days</h2>");
    let columns: Vec<(String, Vec<u64>)> = days
        .iter()
        .map(|(day, v)| {
            let label = Timestamp::from_millis(day * DAY_MS).to_rfc3339();
            (label[5..10].to_string(), v.to_vec())
        })
        .collect();
    out.push_str(&html::bar_chart(
        "Operations by day and state",
        &[
            Series {
                name: "in flight",
                fill: "#5b7bd5",
            },
            Series {
                name: "settled or completed",
                fill: "#1f8a4c",
            },
            Series {
                name: "failed or refunded",
                fill: "#b3261e",
            },
        ],
        &columns,
    ));
    let rows: Vec<Vec<String>> = totals
        .iter()
        .map(|((k, s), n)| vec![e(k), status(s), n.to_string()])
        .collect();
    out.push_str(&table(
        "Recent operations by kind and state",
        &["Kind", "State", "Count"],
        &rows,
    ));
    out.push_str(&super::sponsorship::budget_section(&p).await);
    p.render("Overview", "/dashboard", &out)
}

/// `GET /dashboard/wallets?phone_number=`: a wallet by phone, the tenant's membership
/// and its balance on each EVM chain (what `GET /v1/users/balance?network=all` reads;
/// only a member may read it).
pub async fn wallets(p: TenantPage, query: MaybeQ) -> Response {
    if let Some(r) = p.live_only("Wallets", "/dashboard/wallets") {
        return r;
    }
    let query = query.ok();
    let phone = q(&query, "phone_number");
    let mut out = format!(
        "<form method=\"get\" action=\"/dashboard/wallets\" class=\"filters\" role=\"search\">\
<div><label for=\"phone_number\">Phone number</label>\
<input id=\"phone_number\" name=\"phone_number\" type=\"tel\" value=\"{}\" placeholder=\"+254712345678\"></div>\
<button type=\"submit\">Search</button></form>",
        e(phone)
    );
    if phone.is_empty() {
        out.push_str("<p class=\"hint\">Wallets are keyed by phone number: search for one your customers use.</p>");
        return p.render("Wallets", "/dashboard/wallets", &out);
    }
    let phone = match Phone::parse(phone) {
        Ok(ph) => ph,
        Err(err) => {
            out.push_str(&error_notice(&ApiError::from(
                stablecoin_core::CoreError::from(err),
            )));
            return p.render_status(
                StatusCode::BAD_REQUEST,
                "Wallets",
                "/dashboard/wallets",
                &out,
            );
        }
    };
    match p.app.engine.evm_balances(&p.auth.tenant, &phone).await {
        Ok(chains) => {
            out.push_str(&facts(&[
                ("Phone number", e(&phone.to_string())),
                ("Membership", status("ACTIVE")),
            ]));
            let rows: Vec<Vec<String>> = chains
                .iter()
                .map(|c| {
                    vec![
                        e(&c.rail),
                        format!("<code>{}</code>", e(&c.address)),
                        e(&c.balance_usdc),
                        e(&c.balance_usdt),
                    ]
                })
                .collect();
            out.push_str(&table(
                "Balances per rail",
                &["Rail", "Address", "USDC", "USDT"],
                &rows,
            ));
            p.render("Wallets", "/dashboard/wallets", &out)
        }
        Err(err) => {
            let err = ApiError::from(err);
            out.push_str(&error_notice(&err));
            p.render_status(err.status, "Wallets", "/dashboard/wallets", &out)
        }
    }
}

fn kind_of(s: &str) -> Option<OpKind> {
    OpKind::ALL.into_iter().find(|k| k.as_str() == s)
}

/// `GET /dashboard/operations?kind=&state=`: the tenant's operations of one kind,
/// optionally in one state, newest first (`Engine::list_operations`, as the API lists).
pub async fn operations(p: TenantPage, query: MaybeQ) -> Response {
    if let Some(r) = p.live_only("Operations", "/dashboard/operations") {
        return r;
    }
    let query = query.ok();
    let kind = kind_of(q(&query, "kind")).unwrap_or(OpKind::Transfer);
    let state_name = q(&query, "state");
    let kinds: Vec<(&str, &str)> = OpKind::ALL
        .iter()
        .map(|k| (k.as_str(), k.as_str()))
        .collect();
    let mut states: Vec<(&str, &str)> = vec![("", "any")];
    states.extend(
        reachable_states(kind)
            .iter()
            .map(|s| (s.as_str(), s.as_str())),
    );
    let mut out = format!(
        "<form method=\"get\" action=\"/dashboard/operations\" class=\"filters\"><div>{}</div><div>{}</div>\
<button type=\"submit\">Filter</button></form>",
        html::select("kind", "Kind", &kinds, kind.as_str()),
        html::select("state", "State", &states, state_name)
    );
    let status_filter = if state_name.is_empty() {
        None
    } else {
        match Engine::operation_status(kind, state_name) {
            Ok(s) => Some(s),
            Err(err) => {
                out.push_str(&error_notice(&ApiError::from(err)));
                return p.render_status(
                    StatusCode::BAD_REQUEST,
                    "Operations",
                    "/dashboard/operations",
                    &out,
                );
            }
        }
    };
    let page = page_number(&query);
    let limit = 25usize;
    match p
        .app
        .engine
        .list_operations(
            &p.auth.tenant,
            kind,
            status_filter,
            limit,
            (page as usize - 1) * limit,
        )
        .await
    {
        Ok((ops, total)) => {
            let rows: Vec<Vec<String>> = ops
                .iter()
                .map(|op| {
                    let v = op.view();
                    vec![
                        link(&format!("/dashboard/operations/{}", v.id), &v.id),
                        status(&v.status),
                        format!("{} {}", e(&v.amount), e(&v.token)),
                        e(&v.rail),
                        e(v.from_phone_number.as_deref().unwrap_or("—")),
                        e(v.to_phone_number.as_deref().unwrap_or("—")),
                        e(&v.created_at),
                    ]
                })
                .collect();
            out.push_str(&table(
                "Operations",
                &["Id", "State", "Amount", "Rail", "From", "To", "Created"],
                &rows,
            ));
            let base = format!(
                "/dashboard/operations?kind={}&state={}",
                kind.as_str(),
                state_name
            );
            out.push_str(&pager(&base, page, ops.len(), limit, total));
            p.render("Operations", "/dashboard/operations", &out)
        }
        Err(err) => p.error("Operations", "/dashboard/operations", err.into()),
    }
}

/// `GET /dashboard/operations/{id}`: one operation, its amounts and fees, its
/// timeline, and its transaction on the chain's explorer.
pub async fn operation(p: TenantPage, Path(id): Path<String>) -> Response {
    if let Some(r) = p.live_only("Operation", "/dashboard/operations") {
        return r;
    }
    let op = match p.app.engine.operation(&p.auth.tenant, &id).await {
        Ok(op) => op,
        Err(err) => return p.error("Operation", "/dashboard/operations", err.into()),
    };
    let v = op.view();
    let opt = |s: &Option<String>| e(s.as_deref().unwrap_or("—"));
    let mut items = vec![
        ("Id", format!("<code>{}</code>", e(&v.id))),
        ("Kind", e(&v.object)),
        ("State", status(&v.status)),
        ("Amount", format!("{} {}", e(&v.amount), e(&v.token))),
        ("Rail", e(&v.rail)),
        ("From", opt(&v.from_phone_number)),
        ("To", opt(&v.to_phone_number)),
        ("Recipient gets", opt(&v.recipient_amount)),
        ("Service fee", opt(&v.service_fee)),
        ("Tenant fee", opt(&v.tenant_fee)),
    ];
    if let Some(r) = &v.error_reason {
        items.push(("Why", e(r)));
    }
    items.push((
        "Transaction",
        v.tx_hash
            .as_deref()
            .map(|h| explorer_link(&p.app, &v.rail, h))
            .unwrap_or_else(|| "—".into()),
    ));
    if let Some(h) = &v.refund_tx_hash {
        items.push(("Refund transaction", explorer_link(&p.app, &v.rail, h)));
    }
    let mut out = facts(&items);
    let mut timeline = vec![vec!["Created".to_string(), e(&v.created_at)]];
    if let Some(s) = op.submitted_at {
        timeline.push(vec!["Submitted to the chain".into(), e(&s.to_rfc3339())]);
    }
    if let Some(s) = &v.settled_at {
        timeline.push(vec![format!("Reached {}", status(&v.status)), e(s)]);
    }
    timeline.push(vec![
        format!("Last change (now {})", status(&v.status)),
        e(&v.updated_at),
    ]);
    out.push_str("<h2>State history</h2>");
    out.push_str(&table("Timeline", &["Step", "When"], &timeline));
    p.render(&v.id, "/dashboard/operations", &out)
}

/// `GET /dashboard/escrows?state=`: the tenant's escrows (`EscrowEngine::list`).
pub async fn escrows(p: TenantPage, query: MaybeQ) -> Response {
    if let Some(r) = p.live_only("Escrows", "/dashboard/escrows") {
        return r;
    }
    let query = query.ok();
    let state = q(&query, "state");
    let states = [
        ("", "any"),
        ("CREATED", "CREATED"),
        ("FUNDED", "FUNDED"),
        ("DISPUTED", "DISPUTED"),
        ("RELEASED", "RELEASED"),
        ("REFUNDED", "REFUNDED"),
        ("EXPIRED", "EXPIRED"),
        ("CANCELLED", "CANCELLED"),
    ];
    let mut out = format!(
        "<form method=\"get\" action=\"/dashboard/escrows\" class=\"filters\"><div>{}</div>\
<button type=\"submit\">Filter</button></form>",
        html::select("state", "State", &states, state)
    );
    let engine = match escrow_engine(&p.app) {
        Ok(en) => en,
        Err(err) => return p.error("Escrows", "/dashboard/escrows", err),
    };
    let page = page_number(&query);
    let list = engine
        .list(
            &p.auth,
            &ListEscrowsQuery {
                state: (!state.is_empty()).then(|| state.to_string()),
                limit: Some(25),
                page: Some(page),
            },
        )
        .await;
    match list {
        Ok(l) => {
            let rows: Vec<Vec<String>> = l
                .escrows
                .iter()
                .map(|d| {
                    vec![
                        link(&format!("/dashboard/escrows/{}", d.id), &d.id),
                        status(&d.state),
                        format!("{} {}", tokens(&d.amount), e(&d.token)),
                        e(&d.reference),
                        e(&d.buyer_phone_number),
                        e(&d.seller_phone_number),
                        e(&d.created_at),
                    ]
                })
                .collect();
            out.push_str(&table(
                "Escrows",
                &[
                    "Id",
                    "State",
                    "Amount",
                    "Reference",
                    "Buyer",
                    "Seller",
                    "Created",
                ],
                &rows,
            ));
            out.push_str(&pager(
                &format!("/dashboard/escrows?state={state}"),
                page,
                l.escrows.len(),
                25,
                l.total,
            ));
            p.render("Escrows", "/dashboard/escrows", &out)
        }
        Err(err) => p.error("Escrows", "/dashboard/escrows", err.into()),
    }
}

/// `GET /dashboard/escrows/{id}`: one escrow, its whole history (staff resolutions with
/// their `resolution_note`), and the actions its state allows a tenant.
pub async fn escrow(p: TenantPage, Path(id): Path<String>) -> Response {
    escrow_page(&p, &id, None).await
}

async fn escrow_page(p: &TenantPage, id: &str, flash: Option<String>) -> Response {
    if let Some(r) = p.live_only("Escrow", "/dashboard/escrows") {
        return r;
    }
    let engine = match escrow_engine(&p.app) {
        Ok(en) => en,
        Err(err) => return p.error("Escrow", "/dashboard/escrows", err),
    };
    let d = match engine.get(&p.auth, id).await {
        Ok(d) => d,
        Err(err) => return p.error("Escrow", "/dashboard/escrows", err.into()),
    };
    let mut out = flash.unwrap_or_default();
    let opt = |s: &Option<String>| e(s.as_deref().unwrap_or("—"));
    out.push_str(&facts(&[
        ("Id", format!("<code>{}</code>", e(&d.id))),
        ("State", status(&d.state)),
        ("Amount", format!("{} {}", tokens(&d.amount), e(&d.token))),
        ("Funded", tokens(&d.funded_amount)),
        ("Reference", e(&d.reference)),
        ("Buyer", e(&d.buyer_phone_number)),
        ("Seller", e(&d.seller_phone_number)),
        (
            "Escrow address",
            format!("<code>{}</code>", e(&d.escrow_address)),
        ),
        (
            "Payout pending",
            if d.payout_pending {
                "yes".into()
            } else {
                "no".into()
            },
        ),
        (
            "Payout transaction",
            d.payout_tx_hash
                .as_deref()
                .map(|h| explorer_link(&p.app, &d.network, h))
                .unwrap_or_else(|| "—".into()),
        ),
        ("Dispute reason", opt(&d.dispute_reason)),
        ("Resolution note", opt(&d.resolution_note)),
        ("Created", e(&d.created_at)),
    ]));
    let actions: &[(&str, &str)] = match d.state.as_str() {
        "CREATED" => &[("cancel", "Cancel")],
        "FUNDED" if !d.payout_pending => &[
            ("release", "Release to the seller"),
            ("refund", "Refund the buyer"),
            ("dispute", "Open a dispute"),
        ],
        _ => &[],
    };
    if !actions.is_empty() {
        out.push_str("<h2>Actions</h2>");
        for (action, label) in actions {
            let class = if *action == "release" {
                ""
            } else {
                " class=\"danger\""
            };
            let _ = write!(
                out,
                "<form method=\"post\" action=\"/dashboard/escrows/{}/{action}\" class=\"stack\" data-confirm=\"{}?\">{}\
<label for=\"reason-{action}\">Reason (optional)</label><input id=\"reason-{action}\" name=\"reason\" maxlength=\"500\">\
<button type=\"submit\"{class}>{}</button></form>",
                e(&d.id),
                e(label),
                html::csrf_field(&p.csrf),
                e(label)
            );
        }
    }
    match engine.events(&p.auth, id, Some(100), Some(1)).await {
        Ok(h) => out.push_str(&escrow_history("History, newest first", &h.events)),
        Err(err) => out.push_str(&error_notice(&err.into())),
    }
    p.render(&format!("Escrow {}", d.id), "/dashboard/escrows", &out)
}

/// `POST /dashboard/escrows/{id}/{release|refund|dispute|cancel}`: the tenant's escrow
/// actions, as `POST /v1/escrows/{id}/...` runs them.
pub async fn escrow_action(
    p: TenantPage,
    Path((id, action)): Path<(String, String)>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let fields = match p.check(form) {
        Some(f) => f,
        None => return super::csrf_refused(),
    };
    let engine = match escrow_engine(&p.app) {
        Ok(en) => en,
        Err(err) => return p.error("Escrow", "/dashboard/escrows", err),
    };
    let reason = field(&fields, "reason");
    let body = EscrowActionRequest {
        on_behalf_of: None,
        reason: (!reason.is_empty()).then(|| reason.to_string()),
    };
    let result = match action.as_str() {
        "release" => engine.release(&p.auth, &id, &body).await,
        "refund" => engine.refund(&p.auth, &id, &body).await,
        "dispute" => engine.dispute(&p.auth, &id, &body).await,
        "cancel" => engine.cancel(&p.auth, &id, &body).await,
        _ => {
            return p.error(
                "Escrow",
                "/dashboard/escrows",
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    "ROUTE_NOT_FOUND",
                    "no such escrow action",
                ),
            );
        }
    };
    match result {
        Ok(_) => crate::pages::html::redirect(&format!("/dashboard/escrows/{id}"), &[]),
        Err(err) => {
            let err: ApiError = err.into();
            let flash = error_notice(&err);
            let mut r = escrow_page(&p, &id, Some(flash)).await;
            *r.status_mut() = err.status;
            r
        }
    }
}

/// The [`AuthContext`] of `business`'s key in the session's mode: the checkout engine
/// scopes sessions by business and mode, as a business key does. Only a business of
/// the session's tenant is ever named (the caller checks it is in the tenant's list).
pub(super) fn business_auth(p: &TenantPage, business: &str) -> AuthContext {
    AuthContext {
        tenant: p.auth.tenant.clone(),
        key_id: p.auth.key_id.clone(),
        kind: KeyKind::Business,
        mode: p.auth.mode,
        business: Some(business.to_string()),
    }
}

/// The tenant's businesses and the one the query names (or the first), as
/// `(id, name)`; `None` when the tenant has none.
pub(super) async fn chosen_business(
    p: &TenantPage,
    query: &Option<Q>,
) -> Result<(Vec<(String, String)>, Option<String>), ApiError> {
    let list = p.app.checkout.list_businesses(&p.auth.tenant).await?;
    let all: Vec<(String, String)> = list.into_iter().map(|b| (b.id, b.name)).collect();
    let wanted = q(query, "business");
    let chosen = all
        .iter()
        .find(|(id, _)| id == wanted)
        .or(all.first())
        .map(|(id, _)| id.clone());
    Ok((all, chosen))
}

/// `GET /dashboard/checkout?business=&status=`: a business's payment sessions in the
/// session's mode (what `GET /api/v1/checkout/list` lists for that business's key).
pub async fn checkout(p: TenantPage, query: MaybeQ) -> Response {
    let query = query.ok();
    let (all, chosen) = match chosen_business(&p, &query).await {
        Ok(x) => x,
        Err(err) => return p.error("Checkout", "/dashboard/checkout", err),
    };
    let Some(business) = chosen else {
        return p.render(
            "Checkout",
            "/dashboard/checkout",
            "<p>No checkout business yet: create one with <code>POST /v1/businesses</code>.</p>",
        );
    };
    let status_name = q(&query, "status");
    let opts: Vec<(&str, &str)> = all.iter().map(|(i, n)| (i.as_str(), n.as_str())).collect();
    let statuses = [
        ("", "any"),
        ("pending", "pending"),
        ("paid", "paid"),
        ("expired", "expired"),
        ("failed", "failed"),
    ];
    let mut out = format!(
        "<form method=\"get\" action=\"/dashboard/checkout\" class=\"filters\"><div>{}</div><div>{}</div>\
<button type=\"submit\">Filter</button></form>",
        html::select("business", "Business", &opts, &business),
        html::select("status", "Status", &statuses, status_name)
    );
    let page = page_number(&query);
    let list = p
        .app
        .checkout
        .list_sessions(
            &business_auth(&p, &business),
            (!status_name.is_empty()).then_some(status_name),
            Some(25),
            Some(page),
        )
        .await;
    match list {
        Ok(l) => {
            let rows: Vec<Vec<String>> = l
                .payments
                .iter()
                .map(|s| {
                    vec![
                        link(
                            &format!("/dashboard/checkout/{}?business={business}", s.session_id),
                            &s.session_id,
                        ),
                        status(&s.status),
                        format!("{} {}", e(&s.amount.to_string()), e(&s.currency)),
                        e(&s.reference),
                        e(&s.network),
                        e(s.paid_at.as_deref().unwrap_or("—")),
                    ]
                })
                .collect();
            out.push_str(&table(
                "Payment sessions",
                &[
                    "Session",
                    "Status",
                    "Amount",
                    "Reference",
                    "Network",
                    "Paid",
                ],
                &rows,
            ));
            out.push_str(&pager(
                &format!("/dashboard/checkout?business={business}&status={status_name}"),
                page,
                l.payments.len(),
                25,
                l.total,
            ));
            p.render("Checkout", "/dashboard/checkout", &out)
        }
        Err(err) => p.error("Checkout", "/dashboard/checkout", err.into()),
    }
}

/// `GET /dashboard/checkout/{id}?business=`: one payment session with its deposits.
pub async fn checkout_session(p: TenantPage, Path(id): Path<String>, query: MaybeQ) -> Response {
    let query = query.ok();
    let business = match chosen_business(&p, &query).await {
        Ok((_, Some(b))) => b,
        Ok((_, None)) => {
            return p.error(
                "Payment session",
                "/dashboard/checkout",
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    "NOT_FOUND",
                    "no such payment session",
                ),
            );
        }
        Err(err) => return p.error("Payment session", "/dashboard/checkout", err),
    };
    let s = match p
        .app
        .checkout
        .get_session(&business_auth(&p, &business), &id)
        .await
    {
        Ok(s) => s,
        Err(err) => return p.error("Payment session", "/dashboard/checkout", err.into()),
    };
    let mut out = facts(&[
        ("Session", format!("<code>{}</code>", e(&s.session_id))),
        ("Status", status(&s.status)),
        ("Amount", format!("{} {}", e(&s.amount), e(&s.currency))),
        ("Received", e(&s.amount_received)),
        ("Pending", e(&s.amount_pending)),
        ("Due", e(&s.amount_due)),
        ("Excess", e(&s.excess_amount)),
        ("Refundable", e(&s.refundable_amount)),
        ("Reference", e(&s.reference)),
        ("Expires", e(&s.expires_at)),
        ("Payment page", link(&s.payment_url, &s.payment_url)),
    ]);
    let rows: Vec<Vec<String>> = s
        .deposits
        .iter()
        .map(|d| {
            vec![
                e(&d.network),
                format!("{} {}", e(&d.amount), e(&d.token)),
                status(&d.status),
                d.confirmations.to_string(),
                explorer_link(&p.app, &d.network, &d.tx_hash),
                e(&d.detected_at),
            ]
        })
        .collect();
    out.push_str("<h2>Deposits</h2>");
    out.push_str(&table(
        "Deposits",
        &[
            "Network",
            "Amount",
            "Status",
            "Confirmations",
            "Transaction",
            "Detected",
        ],
        &rows,
    ));
    let auth = business_auth(&p, &business);
    out.push_str(&super::refunds::section(&p, &auth, &business, &s.session_id).await);
    p.render(
        &format!("Payment {}", s.session_id),
        "/dashboard/checkout",
        &out,
    )
}
