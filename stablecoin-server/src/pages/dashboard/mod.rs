//! The tenant dashboard, `/dashboard`: a fintech's own view of its treasury, wallets,
//! operations, escrows, checkout sessions, webhooks, API keys, pricing, and spending
//! policies with the address book.
//!
//! Why it is built this way:
//! - **The same engine calls as the API.** Every page reads and every form acts through
//!   the calls the `/v1` handlers make, with the [`AuthContext`] of the key the tenant
//!   signed in with, so a page can show or do exactly what that key could over the API:
//!   another tenant's escrow is "not found" here as there, and a sandbox (test) session
//!   is refused or simulated wherever the API refuses or simulates.
//! - **Sign-in with a tenant key.** The key is posted once, checked, and never stored
//!   or shown again; the stored session ([`super::session`]) names the key, so revoking
//!   it ends every session opened with it, on the next request, and signing out ends
//!   the session for good. Failed sign-ins are throttled and every attempt is audited
//!   ([`crate::sign_in`]).
//! - **No more than the key.** A session issues keys of its own mode only, recorded as
//!   issued by its key (revoking that key revokes them), and revokes only its own key
//!   and those; pricing is checked (EVM fee address, a self-service fee ceiling) and
//!   audited (`Engine::set_pricing_by`). Pages count against the key's API rate limits.
//! - **A test session shows the sandbox only**: no live balances, operations, escrows,
//!   deliveries or live keys.
//! - **Forms carry CSRF tokens.** A form posted without this session's token is refused
//!   with 403 and changes nothing ([`TenantPage::check`]).
//! - **Secrets are shown once.** An API key or webhook secret appears only in the
//!   response to the form that created it (never cached: `Cache-Control: no-store`),
//!   never on a page that can be reloaded.
//! - **Reads work without JavaScript**: everything is server-rendered; charts are SVG.

mod exports;
mod links;
mod policies;
mod reads;
mod refunds;
mod settings;
mod sponsorship;
mod statements;

use super::gate::{self, Console};
pub use super::gate::{error_notice, field, now_ms};
use super::html::{self, NavItem, Shell, e};
use crate::error::ApiError;
use crate::sign_in::Client;
use crate::state::AppState;
use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use stablecoin_core::CoreError;
use stablecoin_core::engine::{AuthContext, ConsoleSubject, KeyKind, KeyMode};
use std::collections::HashMap;

/// The dashboard's session cookie.
pub const SESSION_COOKIE: &str = "sc_dashboard";
/// The sign-in form's pre-session cookie (its CSRF token is bound to it).
pub const SIGN_IN_COOKIE: &str = "sc_dashboard_signin";

/// The dashboard's navigation, in order.
pub const NAV: &[NavItem] = &[
    NavItem {
        href: "/dashboard",
        label: "Overview",
    },
    NavItem {
        href: "/dashboard/wallets",
        label: "Wallets",
    },
    NavItem {
        href: "/dashboard/operations",
        label: "Operations",
    },
    NavItem {
        href: "/dashboard/escrows",
        label: "Escrows",
    },
    NavItem {
        href: "/dashboard/checkout",
        label: "Checkout",
    },
    NavItem {
        href: "/dashboard/payment-links",
        label: "Payment links",
    },
    NavItem {
        href: "/dashboard/statements",
        label: "Statements",
    },
    NavItem {
        href: "/dashboard/exports",
        label: "Exports",
    },
    NavItem {
        href: "/dashboard/webhooks",
        label: "Webhooks",
    },
    NavItem {
        href: "/dashboard/keys",
        label: "API keys",
    },
    NavItem {
        href: "/dashboard/pricing",
        label: "Pricing",
    },
    NavItem {
        href: "/dashboard/policies",
        label: "Policies",
    },
];

/// The dashboard's routes and the consoles' static assets.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console-assets/console.css", get(css))
        .route("/console-assets/console.js", get(js))
        .route("/dashboard/login", get(sign_in_page).post(sign_in))
        .route("/dashboard/logout", post(sign_out))
        .route("/dashboard", get(reads::overview))
        .route("/dashboard/wallets", get(reads::wallets))
        .route("/dashboard/operations", get(reads::operations))
        .route("/dashboard/operations/{id}", get(reads::operation))
        .route("/dashboard/escrows", get(reads::escrows))
        .route("/dashboard/escrows/{id}", get(reads::escrow))
        .route(
            "/dashboard/escrows/{id}/{action}",
            post(reads::escrow_action),
        )
        .route("/dashboard/checkout", get(reads::checkout))
        .route(
            "/dashboard/payment-links",
            get(links::page).post(links::create),
        )
        .route(
            "/dashboard/payment-links/{id}/deactivate",
            post(links::deactivate),
        )
        .route("/dashboard/statements", get(statements::page))
        .route("/dashboard/statements/download", get(statements::download))
        .route(
            "/dashboard/events/download",
            get(statements::events_download),
        )
        .route("/dashboard/exports", get(exports::page))
        .route("/dashboard/exports/download", get(exports::download))
        .route("/dashboard/checkout/{id}", get(reads::checkout_session))
        .route("/dashboard/checkout/{id}/refunds", post(refunds::issue))
        .route(
            "/dashboard/webhooks",
            get(settings::webhooks).post(settings::create_endpoint),
        )
        .route(
            "/dashboard/webhooks/{id}/{action}",
            post(settings::endpoint_action),
        )
        .route(
            "/dashboard/webhook-events/{id}/replay",
            post(settings::replay_event),
        )
        .route(
            "/dashboard/keys",
            get(settings::keys).post(settings::issue_key),
        )
        .route("/dashboard/keys/{id}/revoke", post(settings::revoke_key))
        .route("/dashboard/test-mode", post(settings::set_test_mode))
        .route(
            "/dashboard/pricing",
            get(settings::pricing).post(settings::set_pricing),
        )
        .route(
            "/dashboard/policies",
            get(policies::page).post(policies::create),
        )
        .route(
            "/dashboard/policies/{id}",
            get(policies::edit).post(policies::update),
        )
        .route("/dashboard/policies/{id}/delete", post(policies::delete))
        .route("/dashboard/address-book", post(policies::add_entry))
        .route(
            "/dashboard/address-book/{id}/remove",
            post(policies::remove_entry),
        )
}

async fn css() -> Response {
    html::asset("text/css; charset=utf-8", html::CONSOLE_CSS)
}

async fn js() -> Response {
    html::asset("text/javascript; charset=utf-8", html::CONSOLE_JS)
}

/// A signed-in tenant's request: who, with which key, and this session's CSRF token.
pub struct TenantPage {
    /// The server.
    pub app: AppState,
    /// The key the tenant signed in with, as the API would see it.
    pub auth: AuthContext,
    /// The tenant's display name.
    pub name: String,
    /// The mode the key was issued with (`auth.mode` is how it acts: test while the
    /// account is in test mode).
    pub key_mode: KeyMode,
    /// The account is in test mode (`Tenant::test_mode`): every key acts as a test key.
    pub account_test_mode: bool,
    /// This session's CSRF token, for the forms of the page.
    pub csrf: String,
    cookie: String,
    /// The stored session's id (sign-out ends it).
    pub session_id: String,
    /// The client, as configuration lets us know it.
    pub client: Client,
}

impl FromRequestParts<AppState> for TenantPage {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, Response> {
        let client = Client::of(app, parts);
        let (session, signed) = gate::open(app, &parts.headers, &client, &GATE).await?;
        let ConsoleSubject::Tenant {
            tenant,
            key_id,
            mode,
        } = session.subject
        else {
            return Err(gate::to_sign_in(&client, &GATE, false));
        };
        // The key is read on every request: a revoked key ends its sessions at once.
        match app.engine.api_key(&tenant, &key_id).await {
            Ok(k) if k.revoked_at.is_none() && k.kind == KeyKind::Tenant && k.mode == mode => {}
            Ok(_) | Err(CoreError::NotFound { .. }) => {
                return Err(gate::to_sign_in(&client, &GATE, true));
            }
            Err(err) => return Err(gate::error_page(&GATE, ApiError::from(err))),
        }
        // The key's API budget, shared with its API requests, and the session's own.
        if let Some(r) =
            gate::rate_limited(app, &GATE, &parts.method, &[&key_id.0, &session.id]).await
        {
            return Err(r);
        }
        let (name, account_test_mode) = match app.engine.tenant(&tenant).await {
            Ok(t) => (t.name, t.test_mode),
            Err(err) => return Err(gate::error_page(&GATE, ApiError::from(err))),
        };
        // Account test mode: the session acts as a test key's, as the API does.
        let key_mode = mode;
        let mode = if account_test_mode {
            KeyMode::Test
        } else {
            mode
        };
        Ok(TenantPage {
            csrf: app.sessions.csrf_token(&signed.cookie),
            cookie: signed.cookie,
            session_id: session.id,
            client,
            app: app.clone(),
            auth: AuthContext {
                tenant,
                key_id,
                kind: KeyKind::Tenant,
                mode,
                business: None,
            },
            name,
            key_mode,
            account_test_mode,
        })
    }
}

impl TenantPage {
    /// True for a test-mode (sandbox) session.
    pub fn sandbox(&self) -> bool {
        self.auth.mode == KeyMode::Test
    }

    /// A whole page of this session: `content` in the shell, with `current` marked in
    /// the navigation.
    pub fn render(&self, title: &str, current: &str, content: &str) -> Response {
        self.render_status(StatusCode::OK, title, current, content)
    }

    /// [`TenantPage::render`] with another status.
    pub fn render_status(
        &self,
        code: StatusCode,
        title: &str,
        current: &str,
        content: &str,
    ) -> Response {
        let mut body = String::new();
        if self.account_test_mode {
            body.push_str(&html::notice(
                "ok",
                "<p><strong>Account test mode.</strong> Your account is in test mode: every \
                 key acts as a test key, live keys included, so nothing live changes. A live \
                 key takes the account out of it on the <a href=\"/dashboard/keys\">API keys</a> \
                 page.</p>",
            ));
        } else if self.sandbox() {
            body.push_str(&html::notice(
                "ok",
                "<p><strong>Test mode.</strong> You signed in with a test key: you see the \
                 sandbox, and changes are simulated or refused exactly as the API does for \
                 test keys. Sign in with a live key for live data.</p>",
            ));
        }
        body.push_str(content);
        html::respond(
            code,
            html::page(
                &Shell {
                    console: "Dashboard",
                    title,
                    nav: NAV,
                    current,
                    who: Some(&self.name),
                    badge: Some(if self.sandbox() { "TEST MODE" } else { "LIVE" }),
                    sign_out: Some(("/dashboard/logout", &self.csrf)),
                },
                &body,
            ),
        )
    }

    /// The form's fields when it carries this session's CSRF token; otherwise `None`,
    /// and the caller answers [`csrf_refused`] without doing anything.
    pub fn check(
        &self,
        form: Result<Form<HashMap<String, String>>, FormRejection>,
    ) -> Option<HashMap<String, String>> {
        gate::checked_form(&self.app, &self.cookie, form)
    }

    /// In a test session, the page that stands for a page of live data (treasury,
    /// wallets, operations, escrows): the sandbox stores none of these, and a test key
    /// must not read the live ones. `None` in a live session.
    pub fn live_only(&self, title: &str, current: &str) -> Option<Response> {
        self.sandbox().then(|| {
            self.render(
                title,
                current,
                &html::notice(
                    "ok",
                    "<p>This page shows live data, which a test session does not see: the \
                     sandbox keeps none (simulated calls answer <code>\"simulated\": true</code> \
                     and store nothing). Sign in with a live key to see it.</p>",
                ),
            )
        })
    }

    /// An error as a page of this session (status and stable code of the API's error).
    pub fn error(&self, title: &str, current: &str, err: ApiError) -> Response {
        self.render_status(err.status, title, current, &error_notice(&err))
    }
}

/// The dashboard's gate (sign-in page, cookies).
pub const GATE: Console = Console {
    name: "Dashboard",
    home: "/dashboard",
    login: "/dashboard/login",
    session_cookie: SESSION_COOKIE,
    sign_in_cookie: SIGN_IN_COOKIE,
    field: "api_key",
    label: "Tenant API key",
    placeholder: "svc_sk_live_... or svc_sk_test_...",
    hint: "A live key shows live data; a test key shows the sandbox. The key is checked and never stored or shown again.",
};

/// The dashboard's 403 for a form without this session's CSRF token.
pub fn csrf_refused() -> Response {
    gate::csrf_refused(&GATE)
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
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let engine = app.engine.clone();
    gate::sign_in_with(
        &app,
        &headers,
        &client,
        &GATE,
        form,
        "signin.dashboard",
        |key| async move {
            match engine.authenticate(&key).await {
                Ok(a) if a.kind == KeyKind::Tenant => Ok((
                    ConsoleSubject::Tenant {
                        tenant: a.tenant,
                        key_id: a.key_id.clone(),
                        mode: a.mode,
                    },
                    stablecoin_core::engine::key_actor(&a.key_id),
                )),
                Ok(_) => Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "KEY_KIND_NOT_ALLOWED",
                    "the dashboard needs a tenant key (svc_sk_live_... or svc_sk_test_...); business keys only open the checkout API",
                )),
                Err(CoreError::InvalidApiKey | CoreError::ApiKeyRevoked) => Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "INVALID_API_KEY",
                    "this key is unknown or revoked",
                )),
                Err(err) => Err(ApiError::from(err)),
            }
        },
    )
    .await
}

async fn sign_out(
    page: TenantPage,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    if page.check(form).is_none() {
        return csrf_refused();
    }
    gate::signed_out(&page.app, &page.client, &GATE, &page.session_id).await
}

/// Explorer link of a transaction on `rail`, when the rail is a real public chain
/// (simulated chains have no explorer; their hashes are shown as text).
pub fn explorer_link(app: &AppState, rail: &str, tx_hash: &str) -> String {
    let simulated = app.simulated_rails().iter().any(|r| r.name() == rail);
    let base = match rail {
        "polygon" => Some("https://polygonscan.com/tx/"),
        "base" => Some("https://basescan.org/tx/"),
        "bsc" => Some("https://bscscan.com/tx/"),
        "tron" => Some("https://tronscan.org/#/transaction/"),
        "solana" => Some("https://explorer.solana.com/tx/"),
        _ => None,
    };
    let clean = tx_hash
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == 'x');
    match base {
        Some(b) if !simulated && clean => format!(
            "<a href=\"{b}{}\" rel=\"noreferrer noopener\" target=\"_blank\"><code>{}</code></a>",
            e(tx_hash),
            e(tx_hash)
        ),
        _ => format!(
            "<code>{}</code>{}",
            e(tx_hash),
            if simulated {
                " <span class=\"hint\">(simulated chain)</span>"
            } else {
                ""
            }
        ),
    }
}
