//! The sign-in gate both web consoles share: the sign-in page with its pre-session
//! CSRF token, the session cookie it sets, signing out, the 403 of a form without its
//! token, and error pages. A [`Console`] names what differs (paths, cookies, the
//! credential asked for); what a credential is worth is each console's own check.

use super::html::{self, Shell, e};
use super::session::{
    PRE_SESSION_TTL_MS, SESSION_TTL_MS, SignedSession, cookie_name, cookie_value, set_cookie,
};
use crate::error::ApiError;
use crate::rate_limit::Class;
use crate::sign_in::{self, Client};
use crate::state::AppState;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use stablecoin_core::engine::{ConsoleSession, ConsoleSubject};
use std::collections::HashMap;

/// What one console's gate looks like.
pub struct Console {
    /// Shown in the header and titles (`Dashboard`, `Staff console`).
    pub name: &'static str,
    /// Where a signed-in user lands (`/dashboard`).
    pub home: &'static str,
    /// The sign-in page and form action (`/dashboard/login`).
    pub login: &'static str,
    /// The session cookie's name.
    pub session_cookie: &'static str,
    /// The sign-in form's pre-session cookie's name.
    pub sign_in_cookie: &'static str,
    /// The credential's form field name.
    pub field: &'static str,
    /// Its label.
    pub label: &'static str,
    /// Its placeholder.
    pub placeholder: &'static str,
    /// The hint under it.
    pub hint: &'static str,
}

/// Unix milliseconds now, on the engines' clock (sessions and sign-in forms expire
/// on it).
pub fn now_ms(app: &AppState) -> i64 {
    sign_in::now_ms(app)
}

/// The value of cookie `name` of a request.
pub fn request_cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| cookie_value(h, name))
}

/// A form field, trimmed; empty when absent.
pub fn field<'a>(f: &'a HashMap<String, String>, name: &str) -> &'a str {
    f.get(name).map(|s| s.trim()).unwrap_or("")
}

/// The API's error as a notice: its stable code and its message (which never carries
/// internal detail).
pub fn error_notice(err: &ApiError) -> String {
    html::notice(
        "error",
        &format!(
            "<p><strong>{}</strong>: {}</p>",
            e(err.code),
            e(&err.message)
        ),
    )
}

fn bare(console: &Console, title: &str, code: StatusCode, content: &str) -> Response {
    html::respond(
        code,
        html::page(
            &Shell {
                console: console.name,
                title,
                nav: &[],
                current: "",
                who: None,
                badge: None,
                sign_out: None,
            },
            content,
        ),
    )
}

/// The page of a form posted without a valid CSRF token: 403, nothing done.
pub fn csrf_refused(console: &Console) -> Response {
    bare(
        console,
        "Form refused",
        StatusCode::FORBIDDEN,
        &html::notice(
            "error",
            &format!(
                "<p><strong>CSRF_TOKEN_INVALID</strong>: this form did not come from a page \
                 of your session (or the session ended). Nothing was changed. \
                 <a href=\"{}\">Back</a>.</p>",
                console.home
            ),
        ),
    )
}

/// An error outside a session's pages (the status and code of the API's error).
pub fn error_page(console: &Console, err: ApiError) -> Response {
    bare(
        console,
        "Something went wrong",
        err.status,
        &error_notice(&err),
    )
}

/// A redirect to the sign-in page that clears the session cookie; `ended` says why on
/// the page (the credential was revoked or the session expired).
pub fn to_sign_in(client: &Client, console: &Console, ended: bool) -> Response {
    let clear = set_cookie(console.session_cookie, "", 0, client.tls);
    let to = if ended {
        format!("{}?ended=1", console.login)
    } else {
        console.login.to_string()
    };
    html::redirect(&to, &[clear])
}

/// The sign-in page (with `message` above the form), setting a fresh pre-session
/// cookie its CSRF token is bound to.
pub fn sign_in_page(
    app: &AppState,
    client: &Client,
    console: &Console,
    code: StatusCode,
    message: Option<String>,
) -> Response {
    let pre = app.sessions.issue_pre_session(now_ms(app));
    let csrf = app.sessions.csrf_token(&pre);
    let form = format!(
        "{}<form method=\"post\" action=\"{}\" class=\"stack\">{}\
<label for=\"{f}\">{}</label>\
<input id=\"{f}\" name=\"{f}\" type=\"password\" autocomplete=\"off\" required \
placeholder=\"{}\" spellcheck=\"false\">\
<p class=\"hint\">{}</p><button type=\"submit\">Sign in</button></form>",
        message.unwrap_or_default(),
        console.login,
        html::csrf_field(&csrf),
        e(console.label),
        e(console.placeholder),
        e(console.hint),
        f = console.field,
    );
    let mut r = bare(console, "Sign in", code, &form);
    let cookie = set_cookie(
        console.sign_in_cookie,
        &pre,
        PRE_SESSION_TTL_MS / 1000,
        client.tls,
    );
    if let Ok(v) = cookie.parse() {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    r
}

/// The sign-in page's query: `ended=1` after a session ended.
#[derive(serde::Deserialize)]
pub struct SignInQuery {
    /// Present after a redirect from a session that ended.
    pub ended: Option<String>,
}

/// The sign-in page's query as received (a malformed one reads as none).
pub type SignInQueryResult = Result<Query<SignInQuery>, QueryRejection>;

/// `GET <console>/login`: the sign-in page, saying why when a session just ended.
pub fn sign_in_page_for(
    app: &AppState,
    client: &Client,
    console: &Console,
    q: SignInQueryResult,
) -> Response {
    let ended = q.is_ok_and(|q| q.ended.is_some());
    sign_in_page(app, client, console, StatusCode::OK, sign_in_notice(ended))
}

/// A posted form's fields when it carries the CSRF token of the session whose cookie
/// is `cookie`; otherwise `None`, and the caller answers [`csrf_refused`] without doing
/// anything. A body that is not a form reads as a form without a token.
pub fn checked_form(
    app: &AppState,
    cookie: &str,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Option<HashMap<String, String>> {
    let fields = form.map(|Form(f)| f).unwrap_or_default();
    app.sessions
        .csrf_ok(cookie, field(&fields, "csrf"))
        .then_some(fields)
}

/// The sign-in page after an `ended=1` redirect says why.
pub fn sign_in_notice(ended: bool) -> Option<String> {
    ended.then(|| {
        html::notice(
            "ok",
            "<p>Your session ended: its credential was revoked, or it expired. Sign in again.</p>",
        )
    })
}

/// True when a sign-in form carries the token of the pre-session cookie it was shown
/// with (a sign-in form this server showed, posted from this origin).
pub fn sign_in_form_ok(
    app: &AppState,
    headers: &HeaderMap,
    client: &Client,
    console: &Console,
    fields: &HashMap<String, String>,
) -> bool {
    let pre =
        request_cookie(headers, &cookie_name(console.sign_in_cookie, client.tls)).unwrap_or("");
    app.sessions
        .pre_session_ok(pre, field(fields, "csrf"), now_ms(app))
}

/// The sign-in page again, 401, with the stable code of why the credential was refused.
pub fn refused(
    app: &AppState,
    client: &Client,
    console: &Console,
    code: &str,
    message: &str,
) -> Response {
    sign_in_page(
        app,
        client,
        console,
        StatusCode::UNAUTHORIZED,
        Some(html::notice(
            "error",
            &format!("<p><strong>{}</strong>: {}</p>", e(code), e(message)),
        )),
    )
}

/// An error page carrying the error's `Retry-After` (a throttled sign-in, a spent rate
/// limit).
pub fn error_page_retry(console: &Console, err: ApiError) -> Response {
    let retry = err.retry_after_secs;
    let mut r = error_page(console, err);
    if let Some(v) = retry.and_then(|s| HeaderValue::from_str(&s.to_string()).ok()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// A posted sign-in form, checked in order: its CSRF token (403), the throttle on the
/// source and the credential (429 with `Retry-After`, nothing checked), then the
/// credential by `check`, which answers the session's subject and the identity the
/// audit names. Every checked attempt is audited as `action` and counted by the
/// throttle ([`crate::sign_in`]); a refusal is the sign-in page again, 401, with the
/// refusal's stable code.
pub async fn sign_in_with<F, Fut>(
    app: &AppState,
    headers: &HeaderMap,
    client: &Client,
    console: &Console,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
    action: &str,
    check: F,
) -> Response
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<(ConsoleSubject, String), ApiError>>,
{
    let fields = form.map(|Form(f)| f).unwrap_or_default();
    if !sign_in_form_ok(app, headers, client, console, &fields) {
        return csrf_refused(console);
    }
    let credential = field(&fields, console.field).to_string();
    if let Err(err) = sign_in::before(app, client, &credential) {
        return error_page_retry(console, err);
    }
    match check(credential.clone()).await {
        Ok((subject, who)) => {
            sign_in::after(app, client, &credential, action, Some(&who), "ok").await;
            signed_in(app, client, console, subject).await
        }
        Err(err) if err.status.is_client_error() => {
            sign_in::after(app, client, &credential, action, None, err.code).await;
            refused(app, client, console, err.code, &err.message)
        }
        Err(err) => error_page(console, err),
    }
}

/// Opens a stored session for `subject`: the session cookie set, the pre-session cookie
/// cleared, and a redirect home.
pub async fn signed_in(
    app: &AppState,
    client: &Client,
    console: &Console,
    subject: ConsoleSubject,
) -> Response {
    let session = match app
        .engine
        .open_console_session(subject, SESSION_TTL_MS)
        .await
    {
        Ok(s) => s,
        Err(err) => return error_page(console, ApiError::from(err)),
    };
    let Some(cookie) = app.sessions.issue(&session.id, session.expires_at.millis()) else {
        return error_page(console, ApiError::internal("session"));
    };
    html::redirect(
        console.home,
        &[
            set_cookie(
                console.session_cookie,
                &cookie,
                SESSION_TTL_MS / 1000,
                client.tls,
            ),
            set_cookie(console.sign_in_cookie, "", 0, client.tls),
        ],
    )
}

/// The stored session a request's cookie names, while it is open: a missing or forged
/// cookie is a redirect to the sign-in page; an ended or expired session one that says
/// so. The caller still checks the session's credential.
pub async fn open(
    app: &AppState,
    headers: &HeaderMap,
    client: &Client,
    console: &Console,
) -> Result<(ConsoleSession, SignedSession), Response> {
    let Some(signed) = request_cookie(headers, &cookie_name(console.session_cookie, client.tls))
        .and_then(|c| app.sessions.verify(c, now_ms(app)))
    else {
        return Err(to_sign_in(client, console, false));
    };
    match app.engine.console_session(&signed.id).await {
        Ok(Some(s)) => Ok((s, signed)),
        Ok(None) => Err(to_sign_in(client, console, true)),
        Err(err) => Err(error_page(console, ApiError::from(err))),
    }
}

/// Counts a console request against the API's per-key rate limits: `buckets` are the
/// limiter's keys (the API key id a tenant signed in with, so the dashboard and the API
/// share one budget, and the session's own id). Over budget: `Some`, the 429 page with
/// `Retry-After` to answer instead.
pub async fn rate_limited(
    app: &AppState,
    console: &Console,
    method: &Method,
    buckets: &[&str],
) -> Option<Response> {
    let limiter = &app.rate_limiter;
    if !limiter.limits().enabled {
        return None;
    }
    let class = if method == Method::GET || method == Method::HEAD {
        Class::Read
    } else {
        Class::Write
    };
    for b in buckets {
        let d = limiter.check(b, class).await;
        if !d.allowed {
            let budget = limiter.limits().budget(class);
            let mut err = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMITED",
                format!(
                    "this key's {} budget of {} requests per {} s is spent; retry after {} s",
                    class.name(),
                    budget.quota,
                    budget.window_s,
                    d.retry_after_s
                ),
            );
            err.retry_after_secs = Some(d.retry_after_s as i64);
            return Some(error_page_retry(console, err));
        }
    }
    None
}

/// Signs out: the stored session ended (its cookie is worth nothing from now on, on
/// every server), the cookie cleared, back to the sign-in page.
pub async fn signed_out(
    app: &AppState,
    client: &Client,
    console: &Console,
    session_id: &str,
) -> Response {
    if let Err(err) = app.engine.end_console_session(session_id).await {
        return error_page(console, ApiError::from(err));
    }
    html::redirect(
        console.login,
        &[set_cookie(console.session_cookie, "", 0, client.tls)],
    )
}
