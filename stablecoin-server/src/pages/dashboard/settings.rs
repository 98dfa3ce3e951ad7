//! The dashboard's settings pages: webhook endpoints (secret shown once on create and
//! rotate, deliveries with their attempts, a success-rate chart, replay), API keys
//! (issue, shown once, and revoke) and the tenant's pricing. Each action is the call
//! the matching `/v1` handler or admin command makes, with the same sandbox rule
//! (`AuthContext::require_live`), and never more than the signed-in key may do: keys
//! of its own mode only, issued under it (`Engine::issue_api_key_by`) and revoked only
//! when they are its own or issued under it (`Engine::revoke_api_key_by`); pricing up to
//! the self-service ceiling, audited (`Engine::set_pricing_by`).

use super::{TenantPage, error_notice, field};
use crate::error::ApiError;
use crate::pages::html::{self, Series, e, facts, status, table};
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path};
use axum::http::StatusCode;
use axum::response::Response;
use stablecoin_core::domain::fees::TenantPricing;
use stablecoin_core::domain::ids::ApiKeyId;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::engine::{KeyKind, KeyMode};
use stablecoin_core::ports::ChainAddress;
use stablecoin_webhooks::Family;
use stablecoin_webhooks::delivery::{DeliveryState, NewEndpoint, WALLET_EVENT_TYPES};
use stablecoin_webhooks::payments::PAYMENTS_EVENT_TYPES;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

type FormResult = Result<Form<HashMap<String, String>>, FormRejection>;

/// How many of the newest deliveries the webhooks page lists and charts.
const DELIVERY_SAMPLE: usize = 200;
const DAY_MS: i64 = 86_400_000;

/// `GET /dashboard/webhooks`.
pub async fn webhooks(p: TenantPage) -> Response {
    webhooks_page(&p, String::new(), StatusCode::OK).await
}

async fn webhooks_page(p: &TenantPage, flash: String, code: StatusCode) -> Response {
    let hooks = &p.app.webhooks;
    let mut out = flash;
    match hooks.list_endpoints(&p.auth.tenant, 100, 0).await {
        Ok((endpoints, _)) => {
            let rows: Vec<Vec<String>> = endpoints
                .iter()
                .map(|ep| {
                    let id = e(&ep.id.0);
                    let toggle = if ep.enabled {
                        ("disable", "Disable", " class=\"danger\"")
                    } else {
                        ("enable", "Enable", "")
                    };
                    let mut actions = String::new();
                    for (action, label, class) in [
                        ("rotate", "Rotate secret", " class=\"secondary\""),
                        toggle,
                    ] {
                        let _ = write!(
                            actions,
                            "<form method=\"post\" action=\"/dashboard/webhooks/{id}/{action}\" class=\"inline\" data-confirm=\"{label}?\">{}<button type=\"submit\"{class}>{label}</button></form> ",
                            html::csrf_field(&p.csrf)
                        );
                    }
                    vec![
                        format!("<code>{id}</code>"),
                        e(&ep.url),
                        e(ep.family.as_str()),
                        if ep.events.is_empty() {
                            "all".into()
                        } else {
                            e(&ep.events.join(", "))
                        },
                        status(if ep.enabled { "ACTIVE" } else { "DISABLED" }),
                        actions,
                    ]
                })
                .collect();
            out.push_str(&table(
                "Endpoints",
                &["Id", "URL", "Family", "Events", "State", "Actions"],
                &rows,
            ));
        }
        Err(err) => out.push_str(&error_notice(&ApiError::webhook(err))),
    }
    let _ = write!(
        out,
        "<h2>Add an endpoint</h2><form method=\"post\" action=\"/dashboard/webhooks\" class=\"stack\">{}\
<label for=\"url\">URL (https, public host)</label><input id=\"url\" name=\"url\" type=\"url\" required maxlength=\"2048\">\
<label for=\"family\">Family</label><select id=\"family\" name=\"family\"><option value=\"wallet\">wallet (transfers, fundings, ...)</option>\
<option value=\"payments\">payments (checkout)</option></select>\
{}<label><input type=\"checkbox\" name=\"standard_webhooks\" value=\"true\"> Sign with Standard Webhooks headers</label>\
<button type=\"submit\">Add endpoint</button></form>",
        html::csrf_field(&p.csrf),
        event_choices()
    );
    if p.sandbox() {
        // Deliveries carry live events: a test session does not show them.
        out.push_str(&html::notice(
            "ok",
            "<p>Deliveries carry live events: sign in with a live key to see them.</p>",
        ));
        return p.render_status(code, "Webhooks", "/dashboard/webhooks", &out);
    }
    match hooks
        .list_deliveries(&p.auth.tenant, None, DELIVERY_SAMPLE, 0)
        .await
    {
        Ok(page) => {
            out.push_str("<h2>Delivery success</h2>");
            // The last 7 days, each one a column even when empty (as the overview).
            let today = super::now_ms(&p.app) / DAY_MS;
            let mut days: BTreeMap<i64, [u64; 3]> =
                (today - 6..=today).map(|d| (d, [0; 3])).collect();
            for d in &page.items {
                let slot = match d.state {
                    DeliveryState::Delivered => 0,
                    DeliveryState::Pending => 1,
                    DeliveryState::Dead => 2,
                };
                if let Some(day) = days.get_mut(&(d.created_at.millis() / DAY_MS)) {
                    day[slot] += 1;
                }
            }
            let columns: Vec<(String, Vec<u64>)> = days
                .iter()
                .map(|(day, v)| {
                    let label = stablecoin_core::domain::time::Timestamp::from_millis(day * DAY_MS)
                        .to_rfc3339();
                    (label[5..10].to_string(), v.to_vec())
                })
                .collect();
            let delivered: u64 = days.values().map(|v| v[0]).sum();
            let finished: u64 = days.values().map(|v| v[0] + v[2]).sum();
            if finished > 0 {
                let _ = write!(
                    out,
                    "<p>Last 7 days: {} of {} finished deliveries succeeded ({}.{}%).</p>",
                    delivered,
                    finished,
                    delivered * 100 / finished,
                    (delivered * 1000 / finished) % 10
                );
            }
            out.push_str(&html::bar_chart(
                "Deliveries, last 7 days",
                &[
                    Series {
                        name: "delivered",
                        fill: "#1f8a4c",
                    },
                    Series {
                        name: "retrying",
                        fill: "#c98a00",
                    },
                    Series {
                        name: "failed for good",
                        fill: "#b3261e",
                    },
                ],
                &columns,
            ));
            let rows: Vec<Vec<String>> = page
                .items
                .iter()
                .take(50)
                .map(|d| {
                    let last = d.attempts.last();
                    let replay = format!(
                        "<form method=\"post\" action=\"/dashboard/webhook-events/{}/replay\" class=\"inline\">{}<button type=\"submit\" class=\"secondary\">Replay</button></form>",
                        e(&d.event_id),
                        html::csrf_field(&p.csrf)
                    );
                    vec![
                        e(&d.created_at.to_rfc3339()),
                        e(&d.event_type),
                        format!("<code>{}</code>", e(&d.event_id)),
                        status(d.state.as_str()),
                        d.attempts.len().to_string(),
                        last.and_then(|a| a.status)
                            .map(|s| s.to_string())
                            .unwrap_or_else(|| e(last.and_then(|a| a.error.as_deref()).unwrap_or("—"))),
                        last.map(|a| format!("{} ms", a.latency_ms))
                            .unwrap_or_else(|| "—".into()),
                        replay,
                    ]
                })
                .collect();
            out.push_str(&table(
                "Recent deliveries",
                &[
                    "Created",
                    "Event",
                    "Event id",
                    "State",
                    "Attempts",
                    "Last status",
                    "Latency",
                    "",
                ],
                &rows,
            ));
        }
        Err(err) => out.push_str(&error_notice(&ApiError::webhook(err))),
    }
    p.render_status(code, "Webhooks", "/dashboard/webhooks", &out)
}

/// The event types to subscribe to, as checkboxes (`event:<type>`), by family; escrow
/// events are in the wallet family.
fn event_choices() -> String {
    let mut out = String::new();
    let escrow: Vec<&str> = stablecoin_escrow::EscrowEventType::ALL
        .iter()
        .map(|t| t.as_str())
        .collect();
    for (legend, events) in [
        ("Wallet family events", WALLET_EVENT_TYPES),
        ("Escrow events (wallet family)", &escrow[..]),
        ("Payments family events", PAYMENTS_EVENT_TYPES),
    ] {
        let _ = write!(out, "<fieldset><legend>{}</legend>", e(legend));
        for ev in events {
            let _ = write!(
                out,
                "<label><input type=\"checkbox\" name=\"event:{0}\" value=\"on\"> {0}</label><br>",
                e(ev)
            );
        }
        out.push_str("</fieldset>");
    }
    out
}

/// `POST /dashboard/webhooks`: registers an endpoint; its secret is shown in this
/// response only.
pub async fn create_endpoint(p: TenantPage, form: FormResult) -> Response {
    let f = match p.check(form) {
        Some(f) => f,
        None => return super::csrf_refused(),
    };
    if let Err(err) = p.auth.require_live("webhook endpoint registration") {
        return webhooks_page(&p, error_notice(&err.into()), StatusCode::FORBIDDEN).await;
    }
    let family = match field(&f, "family") {
        "" | "wallet" => Family::Wallet,
        "payments" => Family::Payments,
        _ => {
            let err =
                ApiError::bad_request("INVALID_PARAMETER", "family must be wallet or payments");
            return webhooks_page(&p, error_notice(&err), StatusCode::BAD_REQUEST).await;
        }
    };
    let new = NewEndpoint {
        family,
        url: field(&f, "url").to_string(),
        events: {
            let mut chosen: Vec<String> = f
                .keys()
                .filter_map(|k| k.strip_prefix("event:"))
                .map(String::from)
                .collect();
            chosen.sort();
            chosen
        },
        standard_webhooks: field(&f, "standard_webhooks") == "true",
    };
    match p.app.webhooks.register_endpoint(&p.auth.tenant, &new).await {
        Ok(ep) => {
            let flash = format!(
                "{}{}",
                html::notice(
                    "ok",
                    &format!("<p>Endpoint <code>{}</code> added.</p>", e(&ep.id.0))
                ),
                html::shown_once("Signing secret", &ep.secret)
            );
            webhooks_page(&p, flash, StatusCode::CREATED).await
        }
        Err(err) => {
            let err = ApiError::webhook(err);
            let code = err.status;
            webhooks_page(&p, error_notice(&err), code).await
        }
    }
}

/// `POST /dashboard/webhooks/{id}/{rotate|disable|enable}`.
pub async fn endpoint_action(
    p: TenantPage,
    Path((id, action)): Path<(String, String)>,
    form: FormResult,
) -> Response {
    if p.check(form).is_none() {
        return super::csrf_refused();
    }
    if let Err(err) = p.auth.require_live("webhook endpoint changes") {
        return webhooks_page(&p, error_notice(&err.into()), StatusCode::FORBIDDEN).await;
    }
    let hooks = &p.app.webhooks;
    let result = match action.as_str() {
        "rotate" => hooks.rotate_secret(&p.auth.tenant, &id).await.map(|ep| {
            format!(
                "{}{}",
                html::notice(
                    "ok",
                    &format!(
                        "<p>The secret of <code>{}</code> was replaced; the previous one no longer verifies.</p>",
                        e(&ep.id.0)
                    )
                ),
                html::shown_once("New signing secret", &ep.secret)
            )
        }),
        "disable" => hooks
            .disable(&p.auth.tenant, &id)
            .await
            .map(|ep| html::notice("ok", &format!("<p><code>{}</code> disabled.</p>", e(&ep.id.0)))),
        "enable" => hooks
            .enable(&p.auth.tenant, &id)
            .await
            .map(|ep| html::notice("ok", &format!("<p><code>{}</code> enabled.</p>", e(&ep.id.0)))),
        _ => {
            let err = ApiError::new(StatusCode::NOT_FOUND, "ROUTE_NOT_FOUND", "no such action");
            return webhooks_page(&p, error_notice(&err), StatusCode::NOT_FOUND).await;
        }
    };
    match result {
        Ok(flash) => webhooks_page(&p, flash, StatusCode::OK).await,
        Err(err) => {
            let err = ApiError::webhook(err);
            let code = err.status;
            webhooks_page(&p, error_notice(&err), code).await
        }
    }
}

/// `POST /dashboard/webhook-events/{id}/replay`: sends the event again to every
/// subscribed endpoint (`POST /v1/webhook-events/{id}/replay`).
pub async fn replay_event(p: TenantPage, Path(id): Path<String>, form: FormResult) -> Response {
    if p.check(form).is_none() {
        return super::csrf_refused();
    }
    if let Err(err) = p.auth.require_live("webhook replay") {
        return webhooks_page(&p, error_notice(&err.into()), StatusCode::FORBIDDEN).await;
    }
    match p.app.webhooks.replay_event(&p.auth.tenant, &id).await {
        Ok(created) => {
            let flash = html::notice(
                "ok",
                &format!(
                    "<p>Event <code>{}</code> queued again: {} new deliver{}.</p>",
                    e(&id),
                    created.len(),
                    if created.len() == 1 { "y" } else { "ies" }
                ),
            );
            webhooks_page(&p, flash, StatusCode::ACCEPTED).await
        }
        Err(err) => {
            let err = ApiError::webhook(err);
            let code = err.status;
            webhooks_page(&p, error_notice(&err), code).await
        }
    }
}

/// `GET /dashboard/keys`.
pub async fn keys(p: TenantPage) -> Response {
    keys_page(&p, String::new(), StatusCode::OK).await
}

async fn keys_page(p: &TenantPage, flash: String, code: StatusCode) -> Response {
    let mut out = flash;
    match p.app.engine.list_api_keys(&p.auth.tenant, 100, 0).await {
        Ok((keys, _)) => {
            // What this session may revoke: its own key and those issued under it.
            let mut scope = vec![p.auth.key_id.clone()];
            let mut i = 0;
            while i < scope.len() {
                for k in &keys {
                    if k.issued_by.as_ref() == Some(&scope[i]) && !scope.contains(&k.id) {
                        scope.push(k.id.clone());
                    }
                }
                i += 1;
            }
            // A session sees the keys of its own mode only (a test session: no live
            // key ids).
            let rows: Vec<Vec<String>> = keys
                .iter()
                .filter(|k| k.mode == p.key_mode)
                .map(|k| {
                    let this = k.id == p.auth.key_id;
                    let action = if k.revoked_at.is_some() {
                        String::new()
                    } else if !scope.contains(&k.id) {
                        "<span class=\"hint\">revoked by the service</span>".to_string()
                    } else {
                        format!(
                            "<form method=\"post\" action=\"/dashboard/keys/{}/revoke\" class=\"inline\" data-confirm=\"Revoke this key? Requests with it are refused from then on.\">{}<button type=\"submit\" class=\"danger\">Revoke</button></form>{}",
                            e(&k.id.0),
                            html::csrf_field(&p.csrf),
                            if this { " <span class=\"hint\">(this session's key: revoking it signs you out)</span>" } else { "" }
                        )
                    };
                    vec![
                        format!("<code>{}</code>", e(&k.id.0)),
                        format!("<code>{}</code>", e(&k.hint)),
                        e(match k.kind {
                            KeyKind::Tenant => "tenant",
                            KeyKind::Business => "business",
                        }),
                        e(match k.mode {
                            KeyMode::Live => "live",
                            KeyMode::Test => "test",
                        }),
                        status(if k.revoked_at.is_some() { "REVOKED" } else { "ACTIVE" }),
                        e(&k.created_at.to_rfc3339()),
                        action,
                    ]
                })
                .collect();
            out.push_str(&table(
                "API keys (only a hint of each secret is kept)",
                &["Id", "Key", "Kind", "Mode", "State", "Issued", ""],
                &rows,
            ));
        }
        Err(err) => out.push_str(&error_notice(&ApiError::from(err))),
    }
    let modes: &[(&str, &str)] = if p.sandbox() {
        &[("test", "test (sandbox)")]
    } else {
        &[("live", "live")]
    };
    let _ = write!(
        out,
        "<h2>Issue a tenant key</h2><form method=\"post\" action=\"/dashboard/keys\" class=\"stack\">{}{}\
<p class=\"hint\">The secret is shown once, then only its hash is kept. A key issued here has this session's mode, \
and revoking the key you signed in with revokes it too.</p>\
<button type=\"submit\">Issue key</button></form>",
        html::csrf_field(&p.csrf),
        html::select("mode", "Mode", modes, modes[0].0)
    );
    out.push_str(&test_mode_form(p));
    p.render_status(code, "API keys", "/dashboard/keys", &out)
}

/// The account test mode section of the keys page: its state, and the form that turns
/// it over (a live key's session only).
fn test_mode_form(p: &TenantPage) -> String {
    let (state, enabled, button) = if p.account_test_mode {
        (
            "on: every key acts as a test key",
            "false",
            "Leave test mode",
        )
    } else {
        (
            "off: live keys are live",
            "true",
            "Put the account in test mode",
        )
    };
    let mut out = format!(
        "<h2>Account test mode</h2><p>Account test mode is <strong>{}</strong>.</p>",
        e(state)
    );
    if p.key_mode == KeyMode::Live {
        let _ = write!(
            out,
            "<form method=\"post\" action=\"/dashboard/test-mode\" class=\"stack\">{}\
<input type=\"hidden\" name=\"enabled\" value=\"{enabled}\">\
<p class=\"hint\">In test mode your live keys are simulated or refused exactly as test keys are \
(the API's <code>POST /v1/account/test-mode</code>); operations already accepted finish.</p>\
<button type=\"submit\">{button}</button></form>",
            html::csrf_field(&p.csrf)
        );
    } else {
        out.push_str("<p class=\"hint\">Only a live key changes it.</p>");
    }
    out
}

/// `POST /dashboard/test-mode` (`enabled` = `true` / `false`): what
/// `POST /v1/account/test-mode` does (`Engine::set_test_mode_by`): a live key's session
/// only, audited as by `key:<key id>`.
pub async fn set_test_mode(p: TenantPage, form: FormResult) -> Response {
    let f = match p.check(form) {
        Some(f) => f,
        None => return super::csrf_refused(),
    };
    let attempt = async {
        let enabled = match field(&f, "enabled") {
            "true" => true,
            "false" => false,
            _ => {
                return Err(ApiError::bad_request(
                    "INVALID_PARAMETER",
                    "enabled must be true or false",
                )
                .with_param("enabled"));
            }
        };
        p.app.engine.set_test_mode_by(&p.auth, enabled).await?;
        Ok::<bool, ApiError>(enabled)
    };
    match attempt.await {
        Ok(enabled) => {
            // The page again, as the session now acts.
            let mut now = p;
            now.account_test_mode = enabled;
            now.auth.mode = if enabled { KeyMode::Test } else { now.key_mode };
            let notice = if enabled {
                "<p>The account is in test mode.</p>"
            } else {
                "<p>The account is live again.</p>"
            };
            keys_page(&now, html::notice("ok", notice), StatusCode::OK).await
        }
        Err(err) => {
            let code = err.status;
            keys_page(&p, error_notice(&err), code).await
        }
    }
}

/// `POST /dashboard/keys`: issues a tenant key of the session's own mode, recorded as
/// issued by the session's key (`Engine::issue_api_key_by`); the secret is in this
/// response only.
pub async fn issue_key(p: TenantPage, form: FormResult) -> Response {
    let f = match p.check(form) {
        Some(f) => f,
        None => return super::csrf_refused(),
    };
    let mode = match field(&f, "mode") {
        "test" => KeyMode::Test,
        "live" => KeyMode::Live,
        _ => {
            let err = ApiError::bad_request("INVALID_PARAMETER", "mode must be live or test");
            return keys_page(&p, error_notice(&err), StatusCode::BAD_REQUEST).await;
        }
    };
    match p.app.engine.issue_api_key_by(&p.auth, mode).await {
        Ok(issued) => {
            let flash = format!(
                "{}{}",
                html::notice(
                    "ok",
                    &format!("<p>Key <code>{}</code> issued.</p>", e(&issued.key.id.0))
                ),
                html::shown_once("API key", &issued.secret)
            );
            keys_page(&p, flash, StatusCode::CREATED).await
        }
        Err(err) => {
            let err = ApiError::from(err);
            let code = err.status;
            keys_page(&p, error_notice(&err), code).await
        }
    }
}

/// `POST /dashboard/keys/{id}/revoke`: the session's own key (which signs it out) or a
/// key issued under it; the keys issued under a revoked key go with it. Other keys are
/// KEY_OUT_OF_SCOPE: the service revokes them.
pub async fn revoke_key(p: TenantPage, Path(id): Path<String>, form: FormResult) -> Response {
    if p.check(form).is_none() {
        return super::csrf_refused();
    }
    let key_id = ApiKeyId(id);
    match p.app.engine.revoke_api_key_by(&p.auth, &key_id).await {
        Ok(k) if k.id == p.auth.key_id => html::redirect("/dashboard/login?ended=1", &[]),
        Ok(k) => {
            let flash = html::notice(
                "ok",
                &format!("<p>Key <code>{}</code> revoked.</p>", e(&k.id.0)),
            );
            keys_page(&p, flash, StatusCode::OK).await
        }
        Err(err) => {
            let err = ApiError::from(err);
            let code = err.status;
            keys_page(&p, error_notice(&err), code).await
        }
    }
}

/// `GET /dashboard/pricing`.
pub async fn pricing(p: TenantPage) -> Response {
    pricing_page(&p, String::new(), StatusCode::OK).await
}

fn micros_text(m: u64) -> String {
    Micros(m).to_decimal_string()
}

async fn pricing_page(p: &TenantPage, flash: String, code: StatusCode) -> Response {
    let t = match p.app.engine.tenant(&p.auth.tenant).await {
        Ok(t) => t,
        Err(err) => return p.error("Pricing", "/dashboard/pricing", err.into()),
    };
    let (mode, bps, cap, flat) = match t.pricing {
        TenantPricing::None => ("NONE", String::new(), String::new(), String::new()),
        TenantPricing::Percentage {
            fee_bps,
            fee_cap_micros,
        } => (
            "PERCENTAGE",
            fee_bps.to_string(),
            if fee_cap_micros == 0 {
                String::new()
            } else {
                micros_text(fee_cap_micros)
            },
            String::new(),
        ),
        TenantPricing::Flat { fee_flat_micros } => (
            "FLAT",
            String::new(),
            String::new(),
            micros_text(fee_flat_micros),
        ),
    };
    let address = t
        .fee_address
        .as_ref()
        .map(|a| a.0.clone())
        .unwrap_or_default();
    let mut out = flash;
    out.push_str(&facts(&[
        ("Your fee", e(mode)),
        ("Basis points", e(if bps.is_empty() { "—" } else { &bps })),
        (
            "Cap (tokens)",
            e(if cap.is_empty() { "none" } else { &cap }),
        ),
        (
            "Flat fee (tokens)",
            e(if flat.is_empty() { "—" } else { &flat }),
        ),
        (
            "Fee address",
            if address.is_empty() {
                "—".into()
            } else {
                format!("<code>{}</code>", e(&address))
            },
        ),
    ]));
    let _ = write!(
        out,
        "<h2>Change your fee</h2><form method=\"post\" action=\"/dashboard/pricing\" class=\"stack\">{}{}\
<label for=\"fee_bps\">Basis points (PERCENTAGE; at most {} here, the service sets more)</label><input id=\"fee_bps\" name=\"fee_bps\" inputmode=\"numeric\" value=\"{}\">\
<label for=\"fee_cap\">Cap in tokens (PERCENTAGE; empty: none)</label><input id=\"fee_cap\" name=\"fee_cap\" inputmode=\"decimal\" value=\"{}\">\
<label for=\"fee_flat\">Flat fee in tokens (FLAT; at most {} here)</label><input id=\"fee_flat\" name=\"fee_flat\" inputmode=\"decimal\" value=\"{}\">\
<label for=\"fee_address\">Fee address (EVM address you control; required unless NONE)</label><input id=\"fee_address\" name=\"fee_address\" spellcheck=\"false\" value=\"{}\">\
<p class=\"hint\">The next transfer's fees follow the new pricing. The service fee is separate.</p>\
<button type=\"submit\">Save pricing</button></form>",
        html::csrf_field(&p.csrf),
        html::select(
            "mode",
            "Fee",
            &[
                ("NONE", "NONE"),
                ("PERCENTAGE", "PERCENTAGE"),
                ("FLAT", "FLAT")
            ],
            mode
        ),
        p.app.config.consoles.max_tenant_fee_bps,
        e(&bps),
        e(&cap),
        e(p.app.config.consoles.max_tenant_fee_flat.trim()),
        e(&flat),
        e(&address)
    );
    p.render_status(code, "Pricing", "/dashboard/pricing", &out)
}

/// A decimal token amount in a form as micro-units (`None` when empty).
fn form_micros(f: &HashMap<String, String>, name: &'static str) -> Result<Option<u64>, ApiError> {
    match field(f, name) {
        "" => Ok(None),
        s => Micros::parse_decimal(s)
            .map(|m| Some(m.0))
            .map_err(|err| ApiError::from(stablecoin_core::CoreError::from(err)).with_param(name)),
    }
}

/// `POST /dashboard/pricing`: what `stablecoin-server pricing set` does, for the
/// signed-in tenant (`TenantPricing::from_parts`, `Engine::set_pricing_by`): live
/// sessions only (a sandbox never changes the tenant), an EVM fee address, at most
/// `consoles.max_tenant_fee_bps` / `max_tenant_fee_flat` (above: FEE_ABOVE_CEILING,
/// staff set it), audited as by `key:<key id>`.
pub async fn set_pricing(p: TenantPage, form: FormResult) -> Response {
    let f = match p.check(form) {
        Some(f) => f,
        None => return super::csrf_refused(),
    };
    let attempt = async {
        p.auth.require_live("pricing changes")?;
        let bps = match field(&f, "fee_bps") {
            "" => None,
            s => Some(s.parse::<u32>().map_err(|_| {
                ApiError::bad_request("INVALID_PRICING", "fee_bps must be a whole number")
                    .with_param("fee_bps")
            })?),
        };
        let mode = field(&f, "mode");
        let pricing = TenantPricing::from_parts(
            mode,
            bps,
            form_micros(&f, "fee_cap")?,
            form_micros(&f, "fee_flat")?,
        )
        .map_err(stablecoin_core::CoreError::from)?;
        let address = field(&f, "fee_address");
        let address =
            (!address.is_empty() && mode != "NONE").then(|| ChainAddress(address.to_string()));
        p.app
            .engine
            .set_pricing_by(
                &p.auth,
                pricing,
                address,
                p.app.config.consoles.fee_ceiling(),
            )
            .await?;
        Ok::<(), ApiError>(())
    };
    match attempt.await {
        Ok(()) => {
            pricing_page(
                &p,
                html::notice("ok", "<p>Pricing saved.</p>"),
                StatusCode::OK,
            )
            .await
        }
        Err(err) => {
            let code = err.status;
            pricing_page(&p, error_notice(&err), code).await
        }
    }
}
