//! `/dashboard/policies` (issue #51): the tenant's spending policies and address book,
//! listed, created, edited and deleted from the dashboard.
//!
//! Why it calls what the API calls: a form is decoded into the API's own body
//! ([`PolicyBody`]) and checked by the API's own decoder (`input_of`), then handed to the
//! same engine call (`Engine::create_policy`, `update_policy`, `delete_policy`,
//! `add_address_book_entry`, `remove_address_book_entry`). So a page can set exactly the
//! rules `POST /v1/policies` can, with the same refusals and the same audit entries, and
//! a rule set here governs the next API request. Changes need a live session, as the API
//! refuses them to a test key (SANDBOX_UNSUPPORTED); reads work in both.
//!
//! A refused form is shown again with what was typed and the API's code and message, at
//! the API's status: bad input is a 4xx with words, never a 500.

use super::{TenantPage, error_notice, field};
use crate::api::policies::{PolicyBody, WindowBody, input_of};
use crate::error::ApiError;
use crate::pages::html::{self, e, table};
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path};
use axum::http::StatusCode;
use axum::response::Response;
use stablecoin_core::domain::policy::{Policy, WindowSpan};
use std::collections::HashMap;
use std::fmt::Write;

const TITLE: &str = "Policies";
const HERE: &str = "/dashboard/policies";
/// The most address-book entries the page lists (newest first).
const BOOK_PAGE: usize = 100;

type FormResult = Result<Form<HashMap<String, String>>, FormRejection>;
type Values = HashMap<String, String>;

/// `GET /dashboard/policies`.
pub async fn page(p: TenantPage) -> Response {
    list_page(&p, String::new(), &Values::new(), StatusCode::OK).await
}

/// A destination key as the tenant wrote it (without `momo:` / `chain:`).
fn shown(key: &str) -> String {
    key.split_once(':').map_or(key, |(_, v)| v).to_string()
}

/// One policy's rules in words, for the list.
fn summary(pol: &Policy, phone: Option<&str>) -> (String, String, String, String) {
    let scope = format!(
        "{} · {} · {}",
        e(match (&pol.wallet, phone) {
            (Some(_), Some(ph)) => ph,
            (Some(w), None) => &w.0,
            (None, _) => "every wallet",
        }),
        e(pol.rail.as_deref().unwrap_or("every rail")),
        e(&pol
            .token
            .map_or_else(|| "every token".to_string(), |t| t.to_string())),
    );
    let mut limits = Vec::new();
    if let Some(m) = pol.max_per_transaction {
        limits.push(format!("at most {} per transaction", m.to_decimal_string()));
    }
    for w in &pol.windows {
        if let Some(m) = w.max_amount {
            limits.push(format!("{} per {}", m.to_decimal_string(), w.window.name()));
        }
        if let Some(c) = w.max_count {
            limits.push(format!("{c} operations per {}", w.window.name()));
        }
    }
    let mut dest = Vec::new();
    if !pol.allow_list.is_empty() {
        let list: Vec<String> = pol.allow_list.iter().map(|k| shown(k)).collect();
        dest.push(format!("only {}", list.join(", ")));
    }
    if !pol.deny_list.is_empty() {
        let list: Vec<String> = pol.deny_list.iter().map(|k| shown(k)).collect();
        dest.push(format!("never {}", list.join(", ")));
    }
    if pol.require_address_book {
        dest.push("address book only".into());
    }
    if let Some(h) = pol.cooling_off_hours {
        dest.push(format!("new destinations wait {h} h"));
    }
    let approval = pol
        .approval_threshold
        .map_or_else(|| "—".to_string(), |m| m.to_decimal_string());
    let words = |v: Vec<String>| {
        if v.is_empty() {
            "—".to_string()
        } else {
            e(&v.join("; "))
        }
    };
    (scope, words(limits), words(dest), e(&approval))
}

/// The phone of a policy's wallet (the form scopes by phone), when it can be read.
async fn phone_of(p: &TenantPage, pol: &Policy) -> Option<String> {
    match &pol.wallet {
        Some(w) => p
            .app
            .engine
            .wallet(w)
            .await
            .ok()
            .map(|w| w.phone.as_str().to_string()),
        None => None,
    }
}

/// A policy's rules as the form's values (to edit it).
fn values_of(pol: &Policy, phone: Option<String>) -> Values {
    let mut v = Values::new();
    let mut put = |k: &str, s: String| {
        v.insert(k.to_string(), s);
    };
    put("phone_number", phone.unwrap_or_default());
    put("rail", pol.rail.clone().unwrap_or_default());
    put(
        "token",
        pol.token.map(|t| t.to_string()).unwrap_or_default(),
    );
    put(
        "max_per_transaction",
        pol.max_per_transaction
            .map(|m| m.to_decimal_string())
            .unwrap_or_default(),
    );
    for w in &pol.windows {
        let n = w.window.name();
        put(
            &format!("window_{n}_amount"),
            w.max_amount
                .map(|m| m.to_decimal_string())
                .unwrap_or_default(),
        );
        put(
            &format!("window_{n}_count"),
            w.max_count.map(|c| c.to_string()).unwrap_or_default(),
        );
    }
    let list = |l: &[String]| l.iter().map(|k| shown(k)).collect::<Vec<_>>().join("\n");
    put("allow_list", list(&pol.allow_list));
    put("deny_list", list(&pol.deny_list));
    if pol.require_address_book {
        put("require_address_book", "true".into());
    }
    put(
        "cooling_off_hours",
        pol.cooling_off_hours
            .map(|h| h.to_string())
            .unwrap_or_default(),
    );
    put(
        "approval_threshold",
        pol.approval_threshold
            .map(|m| m.to_decimal_string())
            .unwrap_or_default(),
    );
    v
}

fn optional(f: &Values, name: &str) -> Option<String> {
    Some(field(f, name).to_string()).filter(|s| !s.is_empty())
}

/// The entries of a list field: one per line, or separated by commas.
fn entries(f: &Values, name: &str) -> Vec<String> {
    field(f, name)
        .split(['\n', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The form as the API's body: what `POST /v1/policies` would receive.
fn body_of(f: &Values) -> Result<PolicyBody, ApiError> {
    let whole = |name: &'static str, param: &'static str, what: &str| {
        optional(f, name)
            .map(|s| {
                s.parse::<u32>().map_err(|_| {
                    ApiError::bad_request(
                        "INVALID_PARAMETER",
                        format!("{what} must be a whole number"),
                    )
                    .with_param(param)
                })
            })
            .transpose()
    };
    let mut windows = Vec::new();
    for (span, amount, count) in [
        (WindowSpan::Day, "window_24h_amount", "window_24h_count"),
        (WindowSpan::Week, "window_7d_amount", "window_7d_count"),
        (WindowSpan::Month, "window_30d_amount", "window_30d_count"),
    ] {
        let max_count = whole(count, "windows", "a window's operation count")?;
        let max_amount = optional(f, amount);
        if max_amount.is_some() || max_count.is_some() {
            windows.push(WindowBody {
                window: span.name().into(),
                max_amount,
                max_count,
            });
        }
    }
    Ok(PolicyBody {
        phone_number: optional(f, "phone_number"),
        rail: optional(f, "rail"),
        token: optional(f, "token"),
        max_per_transaction: optional(f, "max_per_transaction"),
        windows,
        allow_list: entries(f, "allow_list"),
        deny_list: entries(f, "deny_list"),
        require_address_book: matches!(field(f, "require_address_book"), "true" | "on"),
        cooling_off_hours: whole(
            "cooling_off_hours",
            "cooling_off_hours",
            "cooling_off_hours",
        )?,
        approval_threshold: optional(f, "approval_threshold"),
    })
}

/// The policy form: `action` posts it; `v` fills it (empty for a new policy).
fn policy_form(p: &TenantPage, action: &str, v: &Values, button: &str) -> String {
    let val = |k: &str| e(v.get(k).map(String::as_str).unwrap_or("").trim());
    let mut rails: Vec<(String, String)> = vec![(String::new(), "every rail".into())];
    for r in p.app.engine.rails() {
        let n = r.id().name();
        if !rails.iter().any(|(v, _)| *v == n) {
            rails.push((n.clone(), n));
        }
    }
    let rail_opts: Vec<(&str, &str)> = rails
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let mut out = format!(
        "<form method=\"post\" action=\"{}\" class=\"stack\" id=\"policy-form\">{}\
<label for=\"phone_number\">Only this wallet (its phone number; empty: every wallet, counted together)</label>\
<input id=\"phone_number\" name=\"phone_number\" placeholder=\"+2250700000001\" value=\"{}\">\
{}{}\
<label for=\"max_per_transaction\">Most per transaction (tokens; empty: no cap)</label>\
<input id=\"max_per_transaction\" name=\"max_per_transaction\" inputmode=\"decimal\" value=\"{}\">",
        e(action),
        html::csrf_field(&p.csrf),
        val("phone_number"),
        html::select("rail", "Only this rail", &rail_opts, &val("rail")),
        html::select(
            "token",
            "Only this token",
            &[("", "every token"), ("USDC", "USDC"), ("USDT", "USDT")],
            &val("token")
        ),
        val("max_per_transaction"),
    );
    for span in WindowSpan::ALL {
        let n = span.name();
        let _ = write!(
            out,
            "<label for=\"window_{n}_amount\">Most moved in {n} (tokens, operations in flight included)</label>\
<input id=\"window_{n}_amount\" name=\"window_{n}_amount\" inputmode=\"decimal\" value=\"{}\">\
<label for=\"window_{n}_count\">Most operations in {n}</label>\
<input id=\"window_{n}_count\" name=\"window_{n}_count\" inputmode=\"numeric\" value=\"{}\">",
            val(&format!("window_{n}_amount")),
            val(&format!("window_{n}_count")),
        );
    }
    let checked = if matches!(val("require_address_book").as_str(), "true" | "on") {
        " checked"
    } else {
        ""
    };
    let _ = write!(
        out,
        "<label for=\"allow_list\">Allow only these destinations (chain addresses or +numbers, one a line; empty: any)</label>\
<textarea id=\"allow_list\" name=\"allow_list\" rows=\"3\" spellcheck=\"false\">{}</textarea>\
<label for=\"deny_list\">Never these destinations (one a line)</label>\
<textarea id=\"deny_list\" name=\"deny_list\" rows=\"3\" spellcheck=\"false\">{}</textarea>\
<label><input type=\"checkbox\" id=\"require_address_book\" name=\"require_address_book\" value=\"true\"{checked}> \
Only destinations in the address book, past their cooling-off</label>\
<label for=\"cooling_off_hours\">Cooling-off of a new destination (hours, 0 to 720; empty: none)</label>\
<input id=\"cooling_off_hours\" name=\"cooling_off_hours\" inputmode=\"numeric\" value=\"{}\">\
<label for=\"approval_threshold\">Above this amount a second approver must agree (tokens; empty: never)</label>\
<input id=\"approval_threshold\" name=\"approval_threshold\" inputmode=\"decimal\" value=\"{}\">\
<p class=\"hint\">A policy governs every send and withdrawal of its scope from the next request on, \
before anything is held; a refusal names its rule (<code>POLICY_DENIED</code>).</p>\
<button type=\"submit\">{}</button></form>",
        val("allow_list"),
        val("deny_list"),
        val("cooling_off_hours"),
        val("approval_threshold"),
        e(button),
    );
    out
}

/// The list of policies, the create form (filled with `form` after a refusal) and the
/// address book.
async fn list_page(p: &TenantPage, flash: String, form: &Values, code: StatusCode) -> Response {
    let mut out = flash;
    match p.app.engine.active_policies(&p.auth.tenant).await {
        Ok(policies) => {
            let mut rows = Vec::new();
            for pol in &policies {
                let phone = phone_of(p, pol).await;
                let (scope, limits, dest, approval) = summary(pol, phone.as_deref());
                let id = e(&pol.id);
                rows.push(vec![
                    format!("<a href=\"{HERE}/{id}\"><code>{id}</code></a>"),
                    scope,
                    limits,
                    dest,
                    approval,
                    format!(
                        "<a href=\"{HERE}/{id}\">Edit</a> \
                         <form method=\"post\" action=\"{HERE}/{id}/delete\" class=\"inline\" \
                         data-confirm=\"Delete this policy? It stops governing at once.\">{}\
                         <button type=\"submit\" class=\"danger\">Delete</button></form>",
                        html::csrf_field(&p.csrf)
                    ),
                ]);
            }
            out.push_str(&table(
                "Spending policies",
                &[
                    "Policy",
                    "Scope",
                    "Limits",
                    "Destinations",
                    "Approval above",
                    "",
                ],
                &rows,
            ));
        }
        Err(err) => out.push_str(&error_notice(&err.into())),
    }
    out.push_str("<h2>Create a policy</h2>");
    out.push_str(&policy_form(p, HERE, form, "Create policy"));
    out.push_str(&book_section(p).await);
    p.render_status(code, TITLE, HERE, &out)
}

/// The address book: its live entries with a remove button, and the add form.
async fn book_section(p: &TenantPage) -> String {
    let mut out = String::from("<h2 id=\"address-book\">Address book</h2>");
    match p
        .app
        .engine
        .list_address_book(&p.auth.tenant, BOOK_PAGE, 0)
        .await
    {
        Ok((entries, total)) => {
            let now = super::now_ms(&p.app);
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|a| {
                    let usable = if a.usable_at.millis() <= now {
                        html::status("ACTIVE")
                    } else {
                        format!("cooling off until {}", e(&a.usable_at.to_rfc3339()))
                    };
                    vec![
                        format!("<code>{}</code>", e(&a.id)),
                        e(&a.label),
                        format!("<code>{}</code>", e(&a.value)),
                        e(&a.kind),
                        usable,
                        format!(
                            "<form method=\"post\" action=\"/dashboard/address-book/{}/remove\" \
                             class=\"inline\" data-confirm=\"Remove this entry?\">{}\
                             <button type=\"submit\" class=\"danger\">Remove</button></form>",
                            e(&a.id),
                            html::csrf_field(&p.csrf)
                        ),
                    ]
                })
                .collect();
            let caption = if total as usize > entries.len() {
                format!("Address book (newest {} of {total})", entries.len())
            } else {
                "Address book".to_string()
            };
            out.push_str(&table(
                &caption,
                &["Entry", "Label", "Destination", "Kind", "Usable", ""],
                &rows,
            ));
        }
        Err(err) => out.push_str(&error_notice(&err.into())),
    }
    let _ = write!(
        out,
        "<form method=\"post\" action=\"/dashboard/address-book\" class=\"stack\" id=\"book-form\">{}\
<label for=\"book_value\">Chain address or mobile-money number (+E.164)</label>\
<input id=\"book_value\" name=\"value\" required maxlength=\"128\" spellcheck=\"false\">\
<label for=\"book_label\">Label</label><input id=\"book_label\" name=\"label\" required maxlength=\"100\">\
<p class=\"hint\">A new entry is usable by policies after the address book's cooling-off.</p>\
<button type=\"submit\">Add to the address book</button></form>",
        html::csrf_field(&p.csrf)
    );
    out
}

/// `POST /dashboard/policies`: creates a policy, as `POST /v1/policies` does.
pub async fn create(p: TenantPage, form: FormResult) -> Response {
    let Some(f) = p.check(form) else {
        return super::csrf_refused();
    };
    let attempt = async {
        p.auth.require_live("a policy change")?;
        let input = input_of(&body_of(&f)?)?;
        Ok::<_, ApiError>(p.app.engine.create_policy(&p.auth.tenant, &input).await?)
    };
    match attempt.await {
        Ok(pol) => {
            let flash = html::notice(
                "ok",
                &format!(
                    "<p>Policy <code id=\"created-policy\">{}</code> created: it governs the next request.</p>",
                    e(&pol.id)
                ),
            );
            list_page(&p, flash, &Values::new(), StatusCode::CREATED).await
        }
        Err(err) => {
            let code = err.status;
            list_page(&p, error_notice(&err), &f, code).await
        }
    }
}

/// The edit page of policy `id`, filled with `v` (the policy's rules, or what was typed).
fn edit_page(p: &TenantPage, id: &str, flash: String, v: &Values, code: StatusCode) -> Response {
    let mut out = flash;
    let _ = write!(
        out,
        "<p><a href=\"{HERE}\">All policies</a></p><h2>Edit policy <code>{}</code></h2>\
         <p class=\"hint\">Saving replaces its rules; what its windows counted so far is kept.</p>",
        e(id)
    );
    out.push_str(&policy_form(p, &format!("{HERE}/{id}"), v, "Save policy"));
    p.render_status(code, TITLE, HERE, &out)
}

/// `GET /dashboard/policies/{id}`.
pub async fn edit(p: TenantPage, Path(id): Path<String>) -> Response {
    match p.app.engine.policy(&p.auth.tenant, &id).await {
        Ok(v) => {
            let phone = phone_of(&p, &v.record).await;
            let values = values_of(&v.record, phone);
            edit_page(&p, &v.record.id, String::new(), &values, StatusCode::OK)
        }
        Err(err) => p.error(TITLE, HERE, err.into()),
    }
}

/// `POST /dashboard/policies/{id}`: replaces its rules, as `POST /v1/policies/{id}`.
pub async fn update(p: TenantPage, Path(id): Path<String>, form: FormResult) -> Response {
    let Some(f) = p.check(form) else {
        return super::csrf_refused();
    };
    let attempt = async {
        p.auth.require_live("a policy change")?;
        let input = input_of(&body_of(&f)?)?;
        Ok::<_, ApiError>(
            p.app
                .engine
                .update_policy(&p.auth.tenant, &id, &input)
                .await?,
        )
    };
    match attempt.await {
        Ok(pol) => {
            let flash = html::notice(
                "ok",
                &format!("<p>Policy <code>{}</code> saved.</p>", e(&pol.id)),
            );
            let phone = phone_of(&p, &pol).await;
            edit_page(&p, &pol.id, flash, &values_of(&pol, phone), StatusCode::OK)
        }
        Err(err) if err.status == StatusCode::NOT_FOUND => p.error(TITLE, HERE, err),
        Err(err) => {
            let code = err.status;
            edit_page(&p, &id, error_notice(&err), &f, code)
        }
    }
}

/// `POST /dashboard/policies/{id}/delete`, as `DELETE /v1/policies/{id}`.
pub async fn delete(p: TenantPage, Path(id): Path<String>, form: FormResult) -> Response {
    if p.check(form).is_none() {
        return super::csrf_refused();
    }
    let attempt = async {
        p.auth.require_live("a policy change")?;
        Ok::<_, ApiError>(p.app.engine.delete_policy(&p.auth.tenant, &id).await?)
    };
    let (flash, code) = match attempt.await {
        Ok(pol) => (
            html::notice(
                "ok",
                &format!("<p>Policy <code>{}</code> deleted.</p>", e(&pol.id)),
            ),
            StatusCode::OK,
        ),
        Err(err) => (error_notice(&err), err.status),
    };
    list_page(&p, flash, &Values::new(), code).await
}

/// `POST /dashboard/address-book`, as `POST /v1/address-book`.
pub async fn add_entry(p: TenantPage, form: FormResult) -> Response {
    let Some(f) = p.check(form) else {
        return super::csrf_refused();
    };
    let attempt = async {
        p.auth.require_live("an address-book change")?;
        Ok::<_, ApiError>(
            p.app
                .engine
                .add_address_book_entry(&p.auth.tenant, field(&f, "value"), field(&f, "label"))
                .await?,
        )
    };
    let (flash, code) = match attempt.await {
        Ok(a) => (
            html::notice(
                "ok",
                &format!(
                    "<p><code>{}</code> added to the address book: usable from {}.</p>",
                    e(&a.value),
                    e(&a.usable_at.to_rfc3339())
                ),
            ),
            StatusCode::CREATED,
        ),
        Err(err) => (error_notice(&err), err.status),
    };
    list_page(&p, flash, &Values::new(), code).await
}

/// `POST /dashboard/address-book/{id}/remove`, as `DELETE /v1/address-book/{id}`.
pub async fn remove_entry(p: TenantPage, Path(id): Path<String>, form: FormResult) -> Response {
    if p.check(form).is_none() {
        return super::csrf_refused();
    }
    let attempt = async {
        p.auth.require_live("an address-book change")?;
        Ok::<_, ApiError>(
            p.app
                .engine
                .remove_address_book_entry(&p.auth.tenant, &id)
                .await?,
        )
    };
    let (flash, code) = match attempt.await {
        Ok(a) => (
            html::notice(
                "ok",
                &format!(
                    "<p><code>{}</code> removed from the address book.</p>",
                    e(&a.value)
                ),
            ),
            StatusCode::OK,
        ),
        Err(err) => (error_notice(&err), err.status),
    };
    list_page(&p, flash, &Values::new(), code).await
}
