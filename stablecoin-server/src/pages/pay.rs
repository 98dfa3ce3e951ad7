//! The hosted payment page of a checkout session, `GET /pay/{session_id}`.
//!
//! A complete page rendered on the server: it shows what to pay, where (one section per
//! accepted network, each with its deposit address as text and as a QR code), the
//! status in words, the time left and the payments seen, and it works without
//! JavaScript (a `<noscript>` refresh every 10 s keeps it live). `assets/pay.js`, when
//! it runs, polls `GET /pay/{session_id}/status` every 2 s and updates the page in
//! place, ticks the countdown, and enables the copy buttons.
//!
//! Every response carries a strict Content-Security-Policy ([`CSP`]): scripts and
//! styles only from this origin, no inline ones at all, so the page's CSS and JS are
//! served as `GET /pay/assets/pay.css` and `GET /pay/assets/pay.js`. Everything the
//! business or the payer wrote is escaped ([`escape_html`]).

use super::{PayDeposit, PayOption, PaySource, PayView, escape_html, is_session_id};
use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use qrcode::QrCode;
use qrcode::render::svg;
use std::fmt::Write;
use std::sync::Arc;

/// The Content-Security-Policy of every page and status response: nothing but
/// same-origin scripts, styles and fetches, images from this origin or `data:`, no
/// forms, no `<base>`, no framing.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
frame-ancestors 'none'";

/// The page's stylesheet, served as `GET /pay/assets/pay.css`.
pub const PAY_CSS: &str = include_str!("assets/pay.css");
/// The page's script, served as `GET /pay/assets/pay.js`.
pub const PAY_JS: &str = include_str!("assets/pay.js");

/// The payment page's routes, with `source` as their state: `GET /pay/{session_id}`
/// (the HTML page), `GET /pay/{session_id}/status` (the [`PayView`] as JSON),
/// `GET /pay/assets/pay.css` and `GET /pay/assets/pay.js`. An id that is not a session
/// id's shape (`cs_` and 1 to 64 letters or digits) never reaches the source, and
/// answers the same 404 as an unknown one.
pub fn pay_routes<S>(source: Arc<dyn PaySource>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/pay/assets/pay.css", get(css))
        .route("/pay/assets/pay.js", get(js))
        .route("/pay/{session_id}", get(page))
        .route("/pay/{session_id}/status", get(status))
        .with_state(source)
}

type Source = State<Arc<dyn PaySource>>;

/// The session's view, when `id` is a session id's shape, the source knows it, and the
/// view it answered is of that session (never another one's).
async fn lookup(
    source: &dyn PaySource,
    id: Result<Path<String>, PathRejection>,
) -> Option<PayView> {
    let Path(id) = id.ok()?;
    if !is_session_id(&id) {
        return None;
    }
    let view = source.pay_view(&id).await?;
    (view.session_id == id).then_some(view)
}

async fn page(State(source): Source, id: Result<Path<String>, PathRejection>) -> Response {
    match lookup(source.as_ref(), id).await {
        Some(view) => secured(
            StatusCode::OK,
            "text/html; charset=utf-8",
            render_pay_page(&view),
        ),
        None => secured(
            StatusCode::NOT_FOUND,
            "text/html; charset=utf-8",
            render_not_found_page(),
        ),
    }
}

async fn status(State(source): Source, id: Result<Path<String>, PathRejection>) -> Response {
    match lookup(source.as_ref(), id).await {
        Some(view) => {
            let body = serde_json::to_string(&view).unwrap_or_else(|_| "{}".into());
            secured(StatusCode::OK, "application/json", body)
        }
        None => {
            let body = serde_json::json!({"error": {
                "code": "NOT_FOUND",
                "message": "No such payment session."
            }});
            secured(StatusCode::NOT_FOUND, "application/json", body.to_string())
        }
    }
}

async fn css() -> Response {
    asset("text/css; charset=utf-8", PAY_CSS)
}

async fn js() -> Response {
    asset("text/javascript; charset=utf-8", PAY_JS)
}

/// A response with the page's security headers: the CSP, no sniffing, no referrer, no
/// framing, and never cached (the status changes; the page holds an address).
pub(super) fn secured(code: StatusCode, content_type: &'static str, body: String) -> Response {
    let headers = [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    (code, headers, body).into_response()
}

/// A static asset: the same for every session, cacheable for a day.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    let set = [
        (header::CONTENT_TYPE, content_type),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "public, max-age=86400"),
    ];
    for (name, value) in set {
        headers.insert::<HeaderName>(name, HeaderValue::from_static(value));
    }
    response
}

/// The page of an unknown or malformed session id: it says nothing about any session.
pub fn render_not_found_page() -> String {
    let mut out = head("Payment page not found", false);
    out.push_str(concat!(
        "<main id=\"not-found\" class=\"card\">\n",
        "<h1>Payment page not found</h1>\n",
        "<p>This payment link is not valid. Check the link you were given, ",
        "or ask the business for a new one.</p>\n",
        "</main>\n</body>\n</html>\n"
    ));
    out
}

/// The document's start, up to and including `<body>`: charset, viewport, title, the
/// stylesheet and script (same-origin, relative to `/pay/`), and, when `refresh`, a
/// `<noscript>` refresh every 10 s that keeps the status live without JavaScript.
pub(super) fn head(title: &str, refresh: bool) -> String {
    let mut out = String::with_capacity(8192);
    out.push_str(concat!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        "<meta name=\"referrer\" content=\"no-referrer\">\n",
        "<meta name=\"robots\" content=\"noindex, nofollow\">\n",
    ));
    if refresh {
        out.push_str("<noscript><meta http-equiv=\"refresh\" content=\"10\"></noscript>\n");
    }
    let _ = writeln!(out, "<title>{}</title>", escape_html(title));
    out.push_str(concat!(
        "<link rel=\"stylesheet\" href=\"/pay/assets/pay.css\">\n",
        "<script src=\"/pay/assets/pay.js\" defer></script>\n",
        "</head>\n<body>\n",
    ));
    out
}

/// True for the statuses after which nothing changes (no more polling or refresh).
fn is_final(view: &PayView) -> bool {
    matches!(view.status.as_str(), "paid" | "expired" | "failed")
        && matches!(
            view.phase.as_str(),
            "paid" | "overpaid" | "expired" | "failed"
        )
}

/// `"0.000000"`, `"0"`, `""`: nothing.
fn is_zero(amount: &str) -> bool {
    amount.bytes().all(|b| b == b'0' || b == b'.')
}

/// The colour class of a phase (the words always say it too): `wait`, `warn`, `ok`,
/// `bad`.
fn phase_kind(view: &PayView) -> &'static str {
    match view.phase.as_str() {
        "underpaid" => "warn",
        "paid" | "overpaid" => "ok",
        "expired" | "failed" => "bad",
        _ => match view.status.as_str() {
            "paid" => "ok",
            "expired" | "failed" => "bad",
            _ => "wait",
        },
    }
}

/// The confirmations shown while confirming: the fewest of the payments not yet
/// confirmed (the one the page waits for), or 0.
fn confirming_count(view: &PayView) -> u64 {
    view.deposits
        .iter()
        .filter(|d| d.status != "confirmed")
        .map(|d| d.confirmations)
        .min()
        .unwrap_or(0)
}

/// The phase in words (unescaped; `assets/pay.js` says the same).
pub fn phase_words(view: &PayView) -> String {
    let token = &view.currency;
    let phase = match view.phase.as_str() {
        "" => view.status.as_str(),
        p => p,
    };
    match phase {
        "awaiting_payment" | "pending" => "Awaiting payment".into(),
        "confirming" => {
            let n = confirming_count(view);
            let s = if n == 1 { "" } else { "s" };
            format!("Payment received, confirming ({n} confirmation{s})")
        }
        "underpaid" => format!("Underpaid: {} {token} still due", view.amount_due),
        "paid" => "Paid".into(),
        "overpaid" => format!("Paid \u{2014} overpaid by {} {token}", view.excess),
        "expired" if view.late => "Expired \u{2014} late payment received".into(),
        "expired" => "Expired".into(),
        "failed" => match view.failure_reason.as_deref() {
            Some(reason) if !reason.is_empty() => format!("Failed: {reason}"),
            _ => "Failed".into(),
        },
        other => other.replace('_', " "),
    }
}

/// A network's name for people.
pub fn network_name(network: &str) -> String {
    match network {
        "polygon" => "Polygon".into(),
        "ethereum" => "Ethereum".into(),
        "base" => "Base".into(),
        "arbitrum" => "Arbitrum".into(),
        "optimism" => "Optimism".into(),
        "tron" => "TRON".into(),
        "solana" => "Solana".into(),
        "simulated" => "Simulated network".into(),
        other => other.into(),
    }
}

/// Seconds as `m:ss`, or `h:mm:ss` from an hour.
pub fn format_remaining(secs: i64) -> String {
    let s = secs.max(0);
    let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// The address as an inline SVG QR code (dark modules on white, its quiet zone
/// included), labelled for screen readers; None when it does not fit a QR code.
fn qr_svg(address: &str, label: &str) -> Option<String> {
    let code = QrCode::new(address.as_bytes()).ok()?;
    let image = code
        .render::<svg::Color>()
        .min_dimensions(200, 200)
        .dark_color(svg::Color("#000000"))
        .light_color(svg::Color("#ffffff"))
        .build();
    // Drop the XML declaration; the element itself goes inline.
    let start = image.find("<svg")?;
    let attrs = format!(
        "<svg class=\"qr\" role=\"img\" aria-label=\"{}\" focusable=\"false\"",
        escape_html(label)
    );
    Some(image[start..].replacen("<svg", &attrs, 1))
}

/// The hosted payment page of `view`: complete, self-contained HTML5 that needs no
/// JavaScript (the script only makes it live). Shows nothing but this one view; every
/// text from the business or the payer is escaped.
pub fn render_pay_page(view: &PayView) -> String {
    let e = escape_html;
    let token = e(&view.currency);
    let final_state = is_final(view);
    let title = format!(
        "Pay {} {} \u{2014} {}",
        view.amount, view.currency, view.business_name
    );
    let mut o = head(&title, !final_state);
    if view.sandbox {
        o.push_str(concat!(
            "<p class=\"test-banner\" role=\"note\"><strong>TEST MODE</strong> ",
            "\u{2014} a sandbox session: send no real funds.</p>\n"
        ));
    }
    let _ = writeln!(
        o,
        "<main id=\"pay\" class=\"card\" data-session=\"{}\" data-status=\"{}\" \
         data-phase=\"{}\" data-expires-in=\"{}\" data-currency=\"{token}\"{}>",
        e(&view.session_id),
        e(&view.status),
        e(&view.phase),
        view.expires_in_secs.max(0),
        // The amount the wallet requests were written for: the script reloads the page
        // when what is due changes, so no QR asks for a stale amount.
        if view.options.iter().any(|o| o.wallet_uri.is_some()) {
            format!(" data-wallet-due=\"{}\"", e(&view.amount_due))
        } else {
            String::new()
        },
    );
    // Who asks, how much, for what.
    let _ = writeln!(
        o,
        "<header>\n<p class=\"merchant\">{}</p>\n<h1 id=\"amount-heading\">Pay \
         <span class=\"amount\" data-field=\"amount\">{}</span> {token}</h1>",
        e(&view.business_name),
        e(&view.amount)
    );
    if view.description.is_some() || view.reference.is_some() {
        o.push_str("<dl class=\"meta\">\n");
        if let Some(d) = &view.description {
            let _ = writeln!(
                o,
                "<div><dt>For</dt><dd class=\"description\">{}</dd></div>",
                e(d)
            );
        }
        if let Some(r) = &view.reference {
            let _ = writeln!(
                o,
                "<div><dt>Reference</dt><dd class=\"reference\">{}</dd></div>",
                e(r)
            );
        }
        o.push_str("</dl>\n");
    }
    o.push_str("</header>\n");
    render_status(&mut o, view);
    o.push_str(
        "<div id=\"live\" class=\"visually-hidden\" role=\"status\" aria-live=\"polite\"></div>\n",
    );
    render_options(&mut o, view);
    // Paying from a phone wallet of this service: its own page (a form, which this
    // page's CSP does not allow), for a live session with something due.
    if view.status == "pending" && !view.sandbox && !is_zero(&view.amount_due) {
        let _ = writeln!(
            o,
            "<p class=\"phone-pay\"><a id=\"phone-pay-link\" href=\"/pay/{}/phone\">\
             Have a wallet here? Pay with your phone number</a></p>",
            e(&view.session_id)
        );
    }
    render_deposits(&mut o, &view.deposits);
    super::pay_refunds::render_refunds(&mut o, &view.refunds);
    let _ = write!(
        o,
        "<footer><p>Payment session <code class=\"session\">{}</code>.{}</p></footer>\n\
         </main>\n</body>\n</html>\n",
        e(&view.session_id),
        if final_state {
            ""
        } else {
            " This page updates by itself."
        }
    );
    o
}

/// The status block: the phase in words, the countdown, and the amounts so far.
fn render_status(o: &mut String, view: &PayView) {
    let e = escape_html;
    let token = e(&view.currency);
    let pending = view.status == "pending";
    let _ = write!(
        o,
        "<section class=\"status-block\" aria-labelledby=\"status-heading\">\n\
         <h2 id=\"status-heading\" class=\"visually-hidden\">Payment status</h2>\n\
         <p id=\"status\" class=\"status status-{}\"><span class=\"status-label\">Status:</span> \
         <strong id=\"phase-text\">{}</strong></p>\n",
        phase_kind(view),
        e(&phase_words(view))
    );
    let expires_text = if view.expires_in_secs > 0 {
        format!("Expires in {}", format_remaining(view.expires_in_secs))
    } else {
        "Expiring now".into()
    };
    let _ = writeln!(
        o,
        "<p id=\"countdown-line\" class=\"countdown\"{}><time id=\"countdown\" \
         datetime=\"{}\">{expires_text}</time></p>",
        if pending { "" } else { " hidden" },
        e(&view.expires_at),
    );
    o.push_str("<dl class=\"amounts\">\n");
    let rows: [(&str, &str, &str, bool); 4] = [
        ("Received", "amount_received", &view.amount_received, false),
        ("Confirming", "amount_pending", &view.amount_pending, true),
        ("Still due", "amount_due", &view.amount_due, false),
        ("Overpaid by", "excess", &view.excess, true),
    ];
    for (label, field, value, hide_zero) in rows {
        let hidden = if hide_zero && is_zero(value) {
            " hidden"
        } else {
            ""
        };
        let hide_attr = if hide_zero { " data-hide-zero" } else { "" };
        let _ = writeln!(
            o,
            "<div class=\"row-{field}\" data-row=\"{field}\"{hide_attr}{hidden}><dt>{label}</dt>\
             <dd><span data-field=\"{field}\">{}</span> {token}</dd></div>",
            e(value)
        );
    }
    o.push_str("</dl>\n</section>\n");
}

/// True while the page asks for (more) money: pending, and no payment confirming (the
/// payer should wait for it rather than send again). `assets/pay.js` decides the same.
fn offers_payment(view: &PayView) -> bool {
    view.status == "pending" && view.phase != "confirming"
}

/// One section per way to pay; shown only while [`offers_payment`].
fn render_options(o: &mut String, view: &PayView) {
    let e = escape_html;
    let _ = writeln!(
        o,
        "<div id=\"options\"{}>",
        if offers_payment(view) { "" } else { " hidden" }
    );
    if view.options.len() > 1 {
        o.push_str(
            "<nav class=\"networks\" aria-label=\"Networks\"><p>Pay on one network:</p><ul>\n",
        );
        for (i, opt) in view.options.iter().enumerate() {
            let _ = writeln!(
                o,
                "<li><a href=\"#opt-{i}\">{} ({})</a></li>",
                e(&network_name(&opt.network)),
                e(&opt.token)
            );
        }
        o.push_str("</ul></nav>\n");
    }
    for (i, opt) in view.options.iter().enumerate() {
        render_option(o, view, i, opt);
    }
    if view.options.is_empty() {
        o.push_str("<p>No payment method is available for this session.</p>\n");
    }
    o.push_str("</div>\n");
}

fn render_option(o: &mut String, view: &PayView, i: usize, opt: &PayOption) {
    let e = escape_html;
    let network = network_name(&opt.network);
    let (net, tok, addr) = (e(&network), e(&opt.token), e(&opt.address));
    let _ = write!(
        o,
        "<section class=\"option\" id=\"opt-{i}\" aria-labelledby=\"opt-{i}-h\">\n\
         <h2 id=\"opt-{i}-h\">Pay with {tok} on {net}</h2>\n\
         <p class=\"send\"><span class=\"label\" id=\"opt-{i}-amount-label\">Amount to send</span>\
         <span class=\"send-amount\" aria-labelledby=\"opt-{i}-amount-label\">\
         <span data-field=\"amount_due\">{}</span> {tok}</span></p>\n\
         <p class=\"label\" id=\"addr-{i}-label\">Deposit address ({net})</p>\n\
         <code id=\"addr-{i}\" class=\"address\" aria-labelledby=\"addr-{i}-label\">{addr}</code>\n\
         <p class=\"copy-row\"><button type=\"button\" class=\"copy\" data-copy=\"addr-{i}\" \
         hidden>Copy address</button></p>\n",
        e(&view.amount_due)
    );
    // The QR holds the wallet request when the network has one (the wallet fills in
    // token, amount and chain), else the bare address (TRON: the amount is shown above).
    match &opt.wallet_uri {
        Some(uri) => {
            let label = format!("QR code of a {tok} payment request on {network}");
            if let Some(svg) = qr_svg(uri, &label) {
                let _ = writeln!(
                    o,
                    "<figure class=\"qr-figure\" data-qr=\"wallet\">{svg}\
                     <figcaption>Scan with your wallet: it fills in the token, the \
                     amount and the network.</figcaption></figure>"
                );
            }
            let _ = writeln!(
                o,
                "<p class=\"wallet-row\"><a class=\"wallet-link button\" id=\"wallet-{i}\" \
                 href=\"{}\" rel=\"noopener\">Open in wallet</a></p>",
                e(uri)
            );
        }
        None => {
            let label = format!("QR code of the {network} deposit address");
            if let Some(svg) = qr_svg(&opt.address, &label) {
                let _ = writeln!(
                    o,
                    "<figure class=\"qr-figure\" data-qr=\"address\">{svg}</figure>"
                );
            }
            if opt.network == "tron" {
                let _ = writeln!(
                    o,
                    "<p class=\"note amount-note\">The QR code holds the address only: \
                     enter <strong><span data-field=\"amount_due\">{}</span> {tok}</strong> \
                     in your wallet.</p>",
                    e(&view.amount_due)
                );
            }
        }
    }
    let _ = write!(
        o,
        "<p class=\"warning\">Send only {tok} on the {net} network to this address. \
         Other tokens or networks are lost.</p>\n</section>\n"
    );
}

/// The payments seen so far.
fn render_deposits(o: &mut String, deposits: &[PayDeposit]) {
    o.push_str(
        "<section class=\"deposits\" aria-labelledby=\"deposits-heading\">\n\
         <h2 id=\"deposits-heading\">Payments received</h2>\n",
    );
    let _ = writeln!(
        o,
        "<p id=\"no-deposits\"{}>No payment detected yet.</p>",
        if deposits.is_empty() { "" } else { " hidden" }
    );
    o.push_str("<ul id=\"deposits\">\n");
    for d in deposits {
        o.push_str("<li>");
        o.push_str(&escape_html(&deposit_words(d)));
        if let Some(tx) = &d.tx_hash {
            let _ = write!(
                o,
                " <span class=\"tx\">Transaction <code>{}</code></span>",
                escape_html(tx)
            );
        }
        o.push_str("</li>\n");
    }
    o.push_str("</ul>\n</section>\n");
}

/// One payment in words (unescaped; `assets/pay.js` says the same).
fn deposit_words(d: &PayDeposit) -> String {
    let n = d.confirmations;
    let s = if n == 1 { "" } else { "s" };
    let state = if d.status == "confirmed" {
        "confirmed"
    } else {
        "confirming"
    };
    format!(
        "{} {} on {} \u{2014} {state} ({n} confirmation{s})",
        d.amount,
        d.token,
        network_name(&d.network)
    )
}

#[cfg(test)]
#[path = "pay_tests.rs"]
mod tests;
