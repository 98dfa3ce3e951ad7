//! The sign-in gate both web consoles share: the sign-in page with its pre-session
//! CSRF token, the session cookie it sets, signing out, the 403 of a form without its
//! token, and error pages. A [`Console`] names what differs (paths, cookies, the
//! credential asked for); what a credential is worth is each console's own check.

use super::html::{self, Shell, e};
use super::session::{PRE_SESSION_TTL_MS, Principal, SESSION_TTL_MS, cookie_value, set_cookie};
use crate::app::AppState;
use crate::config::Mode;
use crate::error::ApiError;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
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

/// Unix milliseconds now (sessions are checked against the wall clock).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// True when cookies must be `Secure`: production mode (which runs behind TLS) or a
/// request that reached the proxy over TLS.
pub fn secure_cookies(app: &AppState, headers: &HeaderMap) -> bool {
    app.config.mode == Mode::Production
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("https"))
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
pub fn to_sign_in(app: &AppState, headers: &HeaderMap, console: &Console, ended: bool) -> Response {
    let clear = set_cookie(console.session_cookie, "", 0, secure_cookies(app, headers));
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
    headers: &HeaderMap,
    console: &Console,
    code: StatusCode,
    message: Option<String>,
) -> Response {
    let pre = app.sessions.issue_pre_session(now_ms());
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
        secure_cookies(app, headers),
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
    headers: &HeaderMap,
    console: &Console,
    q: SignInQueryResult,
) -> Response {
    let ended = q.is_ok_and(|q| q.ended.is_some());
    sign_in_page(app, headers, console, StatusCode::OK, sign_in_notice(ended))
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
    console: &Console,
    fields: &HashMap<String, String>,
) -> bool {
    let pre = request_cookie(headers, console.sign_in_cookie).unwrap_or("");
    app.sessions
        .pre_session_ok(pre, field(fields, "csrf"), now_ms())
}

/// The sign-in page again, 401, with the stable code of why the credential was refused.
pub fn refused(
    app: &AppState,
    headers: &HeaderMap,
    console: &Console,
    code: &str,
    message: &str,
) -> Response {
    sign_in_page(
        app,
        headers,
        console,
        StatusCode::UNAUTHORIZED,
        Some(html::notice(
            "error",
            &format!("<p><strong>{}</strong>: {}</p>", e(code), e(message)),
        )),
    )
}

/// Opens a session for `principal`: the session cookie set, the pre-session cookie
/// cleared, and a redirect home.
pub fn signed_in(
    app: &AppState,
    headers: &HeaderMap,
    console: &Console,
    principal: &Principal,
) -> Response {
    let Some(cookie) = app.sessions.issue(principal, now_ms()) else {
        return error_page(console, ApiError::internal("session"));
    };
    let secure = secure_cookies(app, headers);
    html::redirect(
        console.home,
        &[
            set_cookie(
                console.session_cookie,
                &cookie,
                SESSION_TTL_MS / 1000,
                secure,
            ),
            set_cookie(console.sign_in_cookie, "", 0, secure),
        ],
    )
}

/// Signs out: the session cookie cleared, back to the sign-in page.
pub fn signed_out(app: &AppState, headers: &HeaderMap, console: &Console) -> Response {
    let secure = secure_cookies(app, headers);
    html::redirect(
        console.login,
        &[set_cookie(console.session_cookie, "", 0, secure)],
    )
}
