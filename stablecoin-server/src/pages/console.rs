//! The staff console, `/console`: service staff resolve disputed escrows of every
//! tenant (with a `resolution_note`), authorise recoveries of partial, excess, late and
//! unsupported-token deposits, read a deal's whole history, and read the audit log.
//!
//! Staff sign in with their account's secret (`stf_sk_...`, created by
//! `stablecoin-server staff create`) or the shared admin token, checked by the same
//! [`authenticate_staff`] as the `/admin/v1` routes, throttled and audited the same way
//! ([`crate::sign_in`]). The stored session names the staff account, or a keyed
//! fingerprint of the admin token; both are checked on every request, so disabling the
//! account, or rotating (or removing) the admin token, ends its sessions at once, and
//! signing out ends the session for good. Actions run the same calls as the staff API
//! (`api::staff::resolve_as`, `recover_as`), so they are audited the same way and follow the
//! same two-person rule.

use super::gate::{self, Console, error_notice, field};
use super::html::{self, NavItem, Shell, e, facts, link, status, table};
use super::shared::{escrow_history, tokens};
use crate::api::escrow::engine as escrow_engine;
use crate::api::staff::{recover_as, resolve_as};
use crate::auth::{ADMIN_TOKEN_STAFF, Staff, authenticate_staff};
use crate::error::ApiError;
use crate::sign_in::Client;
use crate::state::AppState;
use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::engine::ConsoleSubject;
use stablecoin_escrow::{RecoveryOutcome, RecoveryRequest, ResolveRequest};
use std::collections::HashMap;
use std::fmt::Write;

type FormResult = Result<Form<HashMap<String, String>>, FormRejection>;

/// The staff console's gate.
pub const GATE: Console = Console {
    name: "Staff console",
    home: "/console",
    login: "/console/login",
    session_cookie: "sc_console",
    sign_in_cookie: "sc_console_signin",
    field: "staff_secret",
    label: "Staff secret or admin token",
    placeholder: "stf_sk_...",
    hint: "Your staff account's secret (stablecoin-server staff create) or the server's admin token. It is checked and never stored.",
};

const NAV: &[NavItem] = &[
    NavItem {
        href: "/console",
        label: "Needs staff",
    },
    NavItem {
        href: "/console/audit",
        label: "Audit log",
    },
];

/// The staff console's routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console/login", get(sign_in_page).post(sign_in))
        .route("/console/logout", post(sign_out))
        .route("/console", get(queue))
        .route("/console/audit", get(audit_log))
        .route("/console/escrows/{id}", get(deal))
        .route("/console/escrows/{id}/resolve", post(resolve))
        .route("/console/escrows/{id}/recoveries", post(recover))
}

/// A signed-in staff member's request.
pub struct StaffPage {
    app: AppState,
    staff: Staff,
    csrf: String,
    cookie: String,
    session_id: String,
    client: Client,
}

impl FromRequestParts<AppState> for StaffPage {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, Response> {
        let client = Client::of(app, parts);
        let (session, signed) = gate::open(app, &parts.headers, &client, &GATE).await?;
        let ended = || gate::to_sign_in(&client, &GATE, true);
        // The credential is checked on every request: a disabled account, or an admin
        // token that is no longer the server's (rotated or removed), ends its sessions
        // at once.
        let staff = match &session.subject {
            ConsoleSubject::AdminToken { fingerprint } => {
                let current = app
                    .config
                    .admin
                    .token
                    .as_ref()
                    .map(|t| app.sessions.fingerprint(t.expose().trim()));
                if current.as_deref() != Some(fingerprint.as_str()) {
                    return Err(ended());
                }
                Staff::admin_token()
            }
            ConsoleSubject::Staff { staff_id } => match app.engine.find_staff(staff_id).await {
                Ok(a) if a.is_active() && &a.id == staff_id => Staff::account(&a),
                _ => return Err(ended()),
            },
            ConsoleSubject::Tenant { .. } => return Err(gate::to_sign_in(&client, &GATE, false)),
        };
        let bucket = format!("staff:{}", staff.id);
        if let Some(r) =
            gate::rate_limited(app, &GATE, &parts.method, &[&bucket, &session.id]).await
        {
            return Err(r);
        }
        Ok(StaffPage {
            csrf: app.sessions.csrf_token(&signed.cookie),
            cookie: signed.cookie,
            session_id: session.id,
            client,
            app: app.clone(),
            staff,
        })
    }
}

impl StaffPage {
    fn render(&self, code: StatusCode, title: &str, current: &str, content: &str) -> Response {
        let who = format!("{} ({})", self.staff.name, self.staff.id);
        html::respond(
            code,
            html::page(
                &Shell {
                    console: GATE.name,
                    title,
                    nav: NAV,
                    current,
                    who: Some(&who),
                    badge: Some("STAFF"),
                    sign_out: Some(("/console/logout", &self.csrf)),
                },
                content,
            ),
        )
    }

    fn check(&self, form: FormResult) -> Option<HashMap<String, String>> {
        gate::checked_form(&self.app, &self.cookie, form)
    }
}

async fn sign_in_page(
    State(app): State<AppState>,
    client: Client,
    q: gate::SignInQueryResult,
) -> Response {
    gate::sign_in_page_for(&app, &client, &GATE, q)
}

async fn sign_in(
    State(app): State<AppState>,
    client: Client,
    headers: HeaderMap,
    form: FormResult,
) -> Response {
    let state = app.clone();
    gate::sign_in_with(
        &app,
        &headers,
        &client,
        &GATE,
        form,
        "signin.console",
        |secret| async move {
            if secret.trim().is_empty() {
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "ADMIN_TOKEN_REQUIRED",
                    "enter a staff secret or the admin token",
                ));
            }
            let staff = authenticate_staff(&state, &secret).await?;
            let subject = if staff.id == ADMIN_TOKEN_STAFF {
                ConsoleSubject::AdminToken {
                    fingerprint: state.sessions.fingerprint(secret.trim()),
                }
            } else {
                ConsoleSubject::Staff {
                    staff_id: staff.id.clone(),
                }
            };
            Ok((subject, staff.id))
        },
    )
    .await
}

async fn sign_out(page: StaffPage, form: FormResult) -> Response {
    if page.check(form).is_none() {
        return gate::csrf_refused(&GATE);
    }
    gate::signed_out(&page.app, &page.client, &GATE, &page.session_id).await
}

fn page_of(q: &Result<Query<HashMap<String, String>>, QueryRejection>) -> u32 {
    q.as_ref()
        .ok()
        .and_then(|Query(m)| m.get("page"))
        .and_then(|p| p.parse().ok())
        .filter(|p| (1..=100_000).contains(p))
        .unwrap_or(1)
}

/// `GET /console`: every deal that needs staff, of every tenant, newest first.
async fn queue(
    p: StaffPage,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    let admin = match escrow_engine(&p.app) {
        Ok(en) => en.admin(),
        Err(err) => return p.render(err.status, "Needs staff", "/console", &error_notice(&err)),
    };
    let actor = match p.staff.actor() {
        Ok(a) => a,
        Err(err) => return p.render(err.status, "Needs staff", "/console", &error_notice(&err)),
    };
    let page = page_of(&q);
    let strays = stray_notice(&p.app).await + &quarantine_notice(&p.app).await;
    match admin.attention(&actor, Some(25), Some(page)).await {
        Ok(list) => {
            let rows: Vec<Vec<String>> = list
                .escrows
                .iter()
                .map(|v| {
                    let d = &v.escrow;
                    let why = if d.state == "DISPUTED" {
                        "dispute".to_string()
                    } else {
                        "recoverable deposit".to_string()
                    };
                    vec![
                        link(&format!("/console/escrows/{}", d.id), &d.id),
                        format!("<code>{}</code>", e(&v.tenant_id)),
                        status(&d.state),
                        e(&why),
                        format!("{} {}", tokens(&d.amount), e(&d.token)),
                        if v.pending_resolution.is_some() {
                            "awaiting a second approval".into()
                        } else {
                            String::new()
                        },
                        e(&d.updated_at),
                    ]
                })
                .collect();
            let mut out = strays;
            out += &table(
                "Deals that need staff (disputes and recoverable deposits), every tenant",
                &["Escrow", "Tenant", "State", "Why", "Amount", "", "Updated"],
                &rows,
            );
            let _ = write!(out, "<p class=\"hint\">{} in all.</p>", list.total);
            if (page as u64) * 25 < list.total {
                let _ = write!(
                    out,
                    "<p><a href=\"/console?page={}\">Older</a></p>",
                    page + 1
                );
            }
            p.render(StatusCode::OK, "Needs staff", "/console", &out)
        }
        Err(err) => {
            let err = ApiError::from(err);
            p.render(err.status, "Needs staff", "/console", &error_notice(&err))
        }
    }
}

/// The line that tells staff real money sits at sandbox addresses (issue #48): stray
/// deposits held or awaiting a second approval, returned through
/// `POST /admin/v1/stray-deposits/{id}/return`. Empty when there are none (or the count
/// cannot be read: the metric reports them too).
async fn stray_notice(app: &AppState) -> String {
    use stablecoin_core::kernel::stray::StrayStatus;
    let mut waiting = 0;
    for status in [StrayStatus::Held, StrayStatus::Proposed] {
        waiting += app.engine.count_stray_deposits(status).await.unwrap_or(0);
    }
    if waiting == 0 {
        return String::new();
    }
    format!(
        "<p class=\"notice\">{waiting} stray deposit(s): real money sent to sandbox addresses, \
         owed back. List them with <code>GET /admin/v1/stray-deposits?status=held</code> and \
         return each with <code>POST /admin/v1/stray-deposits/{{id}}/return</code>.</p>"
    )
}

/// The line that tells staff deposits from flagged senders wait in quarantine (issue
/// #51): held, or a release or return awaiting a second approval, decided through
/// `POST /admin/v1/quarantined-deposits/{id}/release` or `.../return`. Empty when there
/// are none (or the count cannot be read).
async fn quarantine_notice(app: &AppState) -> String {
    let mut waiting = 0;
    for status in ["held", "proposed"] {
        waiting += app
            .engine
            .quarantined_deposits(Some(status), 1, 1)
            .await
            .map_or(0, |(_, total)| total);
    }
    if waiting == 0 {
        return String::new();
    }
    format!(
        "<p class=\"notice\">{waiting} quarantined deposit(s): deposits from senders the \
         sanctions screen flagged, credited to nobody yet. List them with \
         <code>GET /admin/v1/quarantined-deposits?status=held</code>; release each with \
         <code>POST /admin/v1/quarantined-deposits/{{id}}/release</code> or return it with \
         <code>POST /admin/v1/quarantined-deposits/{{id}}/return</code>.</p>"
    )
}

/// `GET /console/escrows/{id}`.
async fn deal(p: StaffPage, Path(id): Path<String>) -> Response {
    deal_page(&p, &id, String::new(), StatusCode::OK).await
}

async fn deal_page(p: &StaffPage, id: &str, flash: String, code: StatusCode) -> Response {
    let title = format!("Escrow {id}");
    let (admin, actor) = match (escrow_engine(&p.app), p.staff.actor()) {
        (Ok(en), Ok(a)) => (en.admin(), a),
        (Err(err), _) | (_, Err(err)) => {
            return p.render(err.status, &title, "/console", &error_notice(&err));
        }
    };
    let v = match admin.get_staff_view(&actor, id).await {
        Ok(v) => v,
        Err(err) => {
            let err = ApiError::from(err);
            return p.render(
                err.status,
                &title,
                "/console",
                &format!("{flash}{}", error_notice(&err)),
            );
        }
    };
    let d = &v.escrow;
    let opt = |s: &Option<String>| e(s.as_deref().unwrap_or("—"));
    let mut out = flash;
    out.push_str(&facts(&[
        ("Escrow", format!("<code>{}</code>", e(&d.id))),
        ("Tenant", format!("<code>{}</code>", e(&v.tenant_id))),
        ("State", status(&d.state)),
        ("Amount", format!("{} {}", tokens(&d.amount), e(&d.token))),
        ("Funded", tokens(&d.funded_amount)),
        ("Reference", e(&d.reference)),
        (
            "Buyer",
            format!(
                "{} <code>{}</code>",
                e(&d.buyer_phone_number),
                e(&d.buyer_address)
            ),
        ),
        (
            "Seller",
            format!(
                "{} <code>{}</code>",
                e(&d.seller_phone_number),
                e(&d.seller_address)
            ),
        ),
        ("Dispute reason", opt(&d.dispute_reason)),
        (
            "Payout pending",
            if d.payout_pending {
                "yes".into()
            } else {
                "no".into()
            },
        ),
        ("Payout failure", opt(&d.payout_failure_reason)),
        ("Resolution note", opt(&d.resolution_note)),
    ]));
    if let Some(pr) = &v.pending_resolution {
        out.push_str(&html::notice(
            "ok",
            &format!(
                "<p><strong>Awaiting a second approval:</strong> {} proposed by <code>{}</code> at {}: “{}”. \
                 Another staff member resolves the same way to carry it out.</p>",
                e(&pr.resolution),
                e(&pr.proposed_by),
                e(&pr.proposed_at),
                e(&pr.note)
            ),
        ));
    }
    if d.state == "DISPUTED" && !d.payout_pending {
        let _ = write!(
            out,
            "<h2>Resolve the dispute</h2><form method=\"post\" action=\"/console/escrows/{}/resolve\" class=\"stack\" \
data-confirm=\"Resolve this dispute? The payout is final once it settles.\">{}{}\
<label for=\"resolution_note\">Resolution note (required; the tenant sees it)</label>\
<textarea id=\"resolution_note\" name=\"resolution_note\" rows=\"3\" maxlength=\"2000\" required></textarea>\
<button type=\"submit\">Resolve</button></form>",
            e(&d.id),
            html::csrf_field(&p.csrf),
            html::select(
                "resolution",
                "Resolution",
                &[
                    ("RELEASE", "RELEASE to the seller"),
                    ("REFUND", "REFUND the buyer")
                ],
                v.pending_resolution
                    .as_ref()
                    .map_or("RELEASE", |pr| pr.resolution.as_str()),
            )
        );
    }
    if !d.recoverable.is_empty() {
        out.push_str("<h2>Recoverable balances</h2>");
        for r in &d.recoverable {
            let slug = format!("{}-{}", r.kind, r.token).to_ascii_lowercase();
            let _ = write!(
                out,
                "<form method=\"post\" action=\"/console/escrows/{}/recoveries\" class=\"stack\" \
data-confirm=\"Return this balance to the buyer's linked wallet?\">{}\
<input type=\"hidden\" name=\"kind\" value=\"{}\"><input type=\"hidden\" name=\"token\" value=\"{}\">\
<p><strong>{} {} {}</strong> (to the buyer's linked wallet)</p>\
<label for=\"note-{slug}\">Note (required)</label><input id=\"note-{slug}\" name=\"note\" maxlength=\"2000\" required>\
<button type=\"submit\">Return to the buyer</button></form>",
                e(&d.id),
                html::csrf_field(&p.csrf),
                e(&r.kind),
                e(&r.token),
                tokens(&r.amount),
                e(&r.token),
                e(&r.kind),
            );
        }
    }
    if let Ok(acc) = admin.accounting(&actor, id).await {
        let rows: Vec<Vec<String>> = acc
            .tokens
            .iter()
            .map(|t| {
                let m = |v: u64| Micros(v).to_decimal_string();
                vec![
                    e(t.token.map_or("—", |t| t.as_str())),
                    m(t.deposited),
                    m(t.held),
                    m(t.partial
                        .saturating_add(t.excess)
                        .saturating_add(t.late)
                        .saturating_add(t.unsupported)),
                    m(t.paid_out),
                    m(t.in_flight),
                ]
            })
            .collect();
        out.push_str("<h2>Custody</h2>");
        out.push_str(&table(
            "Custody per token",
            &[
                "Token",
                "Deposited",
                "Held",
                "Recoverable",
                "Paid out",
                "In flight",
            ],
            &rows,
        ));
    }
    if let Ok(payouts) = admin.payouts(&actor, id).await {
        let rows: Vec<Vec<String>> = payouts
            .iter()
            .map(|po| {
                vec![
                    format!("<code>{}</code>", e(&po.id)),
                    e(&po.purpose),
                    status(&po.status),
                    format!("{} {}", tokens(&po.amount), e(&po.token)),
                    e(&po.to),
                    e(&po.authority),
                    e(po.tx_hash.as_deref().unwrap_or("—")),
                ]
            })
            .collect();
        out.push_str("<h2>Payouts</h2>");
        out.push_str(&table(
            "Payouts and recoveries",
            &[
                "Payout",
                "Purpose",
                "Status",
                "Amount",
                "To",
                "By",
                "Transaction",
            ],
            &rows,
        ));
    }
    match admin.events(&actor, id, Some(100), Some(1)).await {
        Ok(h) => out.push_str(&escrow_history(
            "The deal's whole history, newest first",
            &h.events,
        )),
        Err(err) => out.push_str(&error_notice(&err.into())),
    }
    p.render(code, &title, "/console", &out)
}

/// `POST /console/escrows/{id}/resolve`: what `POST /admin/v1/escrows/{id}/resolve`
/// runs, audited the same way.
async fn resolve(p: StaffPage, Path(id): Path<String>, form: FormResult) -> Response {
    let Some(f) = p.check(form) else {
        return gate::csrf_refused(&GATE);
    };
    let body = ResolveRequest {
        resolution: field(&f, "resolution").to_string(),
        resolution_note: field(&f, "resolution_note").to_string(),
    };
    match resolve_as(&p.app, &p.staff, &id, &body).await {
        Ok(out) if out.awaiting_approval => {
            let flash = html::notice(
                "ok",
                "<p>Proposal recorded: this amount needs a second staff member to resolve the same way.</p>",
            );
            deal_page(&p, &id, flash, StatusCode::ACCEPTED).await
        }
        Ok(_) => {
            let flash = html::notice(
                "ok",
                "<p>Resolved: the payout is claimed and settles on chain; the deal leaves DISPUTED once it confirms.</p>",
            );
            deal_page(&p, &id, flash, StatusCode::OK).await
        }
        Err(err) => {
            let code = err.status;
            deal_page(&p, &id, error_notice(&err), code).await
        }
    }
}

/// `POST /console/escrows/{id}/recoveries`: what `POST /admin/v1/escrows/{id}/recoveries`
/// runs, audited the same way.
async fn recover(p: StaffPage, Path(id): Path<String>, form: FormResult) -> Response {
    let Some(f) = p.check(form) else {
        return gate::csrf_refused(&GATE);
    };
    let token = field(&f, "token");
    let body = RecoveryRequest {
        kind: field(&f, "kind").to_string(),
        token: (!token.is_empty()).then(|| token.to_string()),
        note: field(&f, "note").to_string(),
    };
    match recover_as(&p.app, &p.staff, &id, &body).await {
        Ok(RecoveryOutcome::Proposed(_)) => {
            let flash = html::notice(
                "ok",
                "<p>Proposal recorded: this amount needs a second staff member to recover the same way.</p>",
            );
            deal_page(&p, &id, flash, StatusCode::OK).await
        }
        Ok(RecoveryOutcome::Claimed(po)) => {
            let flash = html::notice(
                "ok",
                &format!(
                    "<p>Recovery <code>{}</code> of {} {} claimed: it settles on chain.</p>",
                    e(&po.id),
                    tokens(&po.amount),
                    e(&po.token)
                ),
            );
            deal_page(&p, &id, flash, StatusCode::ACCEPTED).await
        }
        Err(err) => {
            let code = err.status;
            deal_page(&p, &id, error_notice(&err), code).await
        }
    }
}

/// `GET /console/audit`: who did what, to what, when and why, newest first.
async fn audit_log(
    p: StaffPage,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    let page = page_of(&q);
    match p.app.engine.staff_audit(50, page).await {
        Ok((entries, total)) => {
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|a| {
                    vec![
                        e(&a.at.to_rfc3339()),
                        format!("<code>{}</code>", e(&a.staff_id)),
                        e(&a.action),
                        format!("<code>{}</code>", e(&a.target)),
                        e(a.note.as_deref().unwrap_or("")),
                    ]
                })
                .collect();
            let mut out = table(
                "Staff actions, newest first",
                &["When", "Who", "Action", "Target", "Why"],
                &rows,
            );
            let _ = write!(out, "<p class=\"hint\">{total} in all.</p>");
            if (page as u64) * 50 < total {
                let _ = write!(
                    out,
                    "<p><a href=\"/console/audit?page={}\">Older</a></p>",
                    page + 1
                );
            }
            p.render(StatusCode::OK, "Audit log", "/console/audit", &out)
        }
        Err(err) => {
            let err = ApiError::from(err);
            p.render(
                err.status,
                "Audit log",
                "/console/audit",
                &error_notice(&err),
            )
        }
    }
}
