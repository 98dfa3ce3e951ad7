//! The HTML both web consoles are built from: the page shell (skip link, header,
//! navigation, mode badge), tables, forms with their CSRF field, notices, and
//! server-rendered SVG charts.
//!
//! Why everything is rendered on the server: every read works without JavaScript, and
//! the Content-Security-Policy ([`CONSOLE_CSP`]) forbids inline scripts and inline
//! styles altogether. Charts are SVG elements with presentation attributes (which the
//! policy allows) and a text table beside them for screen readers. Every value that
//! came from a tenant, a payer or a chain is escaped with [`escape_html`].

use super::escape_html;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::fmt::Write;

/// The consoles' Content-Security-Policy: scripts, styles and form posts to this
/// origin only, images from here or `data:`, no framing, no `<base>`.
pub const CONSOLE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
frame-ancestors 'none'";

/// The consoles' stylesheet, served as `GET /console-assets/console.css`.
pub const CONSOLE_CSS: &str = include_str!("assets/console.css");
/// The consoles' script, served as `GET /console-assets/console.js`: confirmations
/// before destructive actions and copy buttons; nothing needs it.
pub const CONSOLE_JS: &str = include_str!("assets/console.js");

/// Short for [`escape_html`].
pub fn e(s: &str) -> String {
    escape_html(s)
}

/// An HTML response with the consoles' security headers, never cached (pages hold
/// tenant data, and a secret is shown once).
pub fn respond(code: StatusCode, body: String) -> Response {
    let mut r = (code, body).into_response();
    let h = r.headers_mut();
    for (k, v) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_SECURITY_POLICY, CONSOLE_CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    r
}

/// A static asset with a long cache life (its content changes only with the binary).
pub fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// A 303 redirect to `to` (Post/Redirect/Get), with extra headers (cookies).
pub fn redirect(to: &str, cookies: &[String]) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(to) {
        h.insert(header::LOCATION, v);
    }
    for c in cookies {
        if let Ok(v) = HeaderValue::from_str(c) {
            h.append(header::SET_COOKIE, v);
        }
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// One entry of a console's navigation.
pub struct NavItem {
    /// The link.
    pub href: &'static str,
    /// Its text.
    pub label: &'static str,
}

/// What the shell of a page shows around its content.
pub struct Shell<'a> {
    /// The console's name (`Dashboard`, `Staff console`).
    pub console: &'a str,
    /// The page's title.
    pub title: &'a str,
    /// The navigation, empty on a sign-in page.
    pub nav: &'a [NavItem],
    /// Which entry is the current page's.
    pub current: &'a str,
    /// Who is signed in (a tenant's name, a staff id), if anyone.
    pub who: Option<&'a str>,
    /// The badge beside it: `LIVE`, `TEST MODE`, `STAFF`.
    pub badge: Option<&'a str>,
    /// The sign-out form's action and CSRF token, when signed in.
    pub sign_out: Option<(&'a str, &'a str)>,
}

/// A whole page: `content` (already HTML) inside the shell.
pub fn page(shell: &Shell<'_>, content: &str) -> String {
    let mut out = String::with_capacity(content.len() + 2048);
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"referrer\" content=\"no-referrer\">\
<title>{} · {}</title>\
<link rel=\"stylesheet\" href=\"/console-assets/console.css\">\
<script src=\"/console-assets/console.js\" defer></script></head><body>\
<a class=\"skip\" href=\"#main\">Skip to content</a><header class=\"top\"><span class=\"brand\">{}</span>",
        e(shell.title),
        e(shell.console),
        e(shell.console)
    );
    if let Some(badge) = shell.badge {
        let class = if badge == "LIVE" { "live" } else { "test" };
        let _ = write!(out, "<span class=\"badge {class}\">{}</span>", e(badge));
    }
    if let Some(who) = shell.who {
        let _ = write!(out, "<span class=\"who\">{}</span>", e(who));
    }
    if let Some((action, csrf)) = shell.sign_out {
        let _ = write!(
            out,
            "<form method=\"post\" action=\"{}\" class=\"signout\">{}<button type=\"submit\">Sign out</button></form>",
            e(action),
            csrf_field(csrf)
        );
    }
    out.push_str("</header>");
    if !shell.nav.is_empty() {
        out.push_str("<nav aria-label=\"Main\"><ul>");
        for item in shell.nav {
            let current = if item.href == shell.current {
                " aria-current=\"page\""
            } else {
                ""
            };
            let _ = write!(
                out,
                "<li><a href=\"{}\"{current}>{}</a></li>",
                item.href, item.label
            );
        }
        out.push_str("</ul></nav>");
    }
    let _ = write!(
        out,
        "<main id=\"main\"><h1>{}</h1>{content}</main></body></html>",
        e(shell.title)
    );
    out
}

/// The hidden CSRF field every form carries.
pub fn csrf_field(token: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        e(token)
    )
}

/// A notice: `kind` is `ok`, `error` or `secret` (a value shown once).
pub fn notice(kind: &str, html: &str) -> String {
    let role = if kind == "error" { "alert" } else { "status" };
    format!("<div class=\"notice {kind}\" role=\"{role}\">{html}</div>")
}

/// A value shown once (an API key, a webhook secret), with a copy button and the
/// warning that it cannot be shown again.
pub fn shown_once(label: &str, value: &str) -> String {
    notice(
        "secret",
        &format!(
            "<p><strong>{}</strong> — copy it now: it is shown only this once and cannot be \
             recovered.</p><p><code class=\"secret\" id=\"secret\">{}</code> \
             <button type=\"button\" class=\"copy\" data-copy=\"secret\">Copy</button></p>",
            e(label),
            e(value)
        ),
    )
}

/// A table: `head` are the column titles, each row's cells are already HTML.
pub fn table(caption: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<div class=\"scroll\"><table>");
    let _ = write!(out, "<caption>{}</caption><thead><tr>", e(caption));
    for h in head {
        let _ = write!(out, "<th scope=\"col\">{}</th>", e(h));
    }
    out.push_str("</tr></thead><tbody>");
    if rows.is_empty() {
        let _ = write!(
            out,
            "<tr><td colspan=\"{}\" class=\"empty\">Nothing yet.</td></tr>",
            head.len().max(1)
        );
    }
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

/// A definition list of label / value (value already HTML).
pub fn facts(items: &[(&str, String)]) -> String {
    let mut out = String::from("<dl class=\"facts\">");
    for (k, v) in items {
        let _ = write!(out, "<dt>{}</dt><dd>{v}</dd>", e(k));
    }
    out.push_str("</dl>");
    out
}

/// A link, escaped.
pub fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", e(href), e(text))
}

/// A status word as a badge (`SETTLED`, `FAILED`, ...), colour-coded and readable as
/// text.
pub fn status(s: &str) -> String {
    let class = match s.to_ascii_uppercase().as_str() {
        "SETTLED" | "COMPLETED" | "RELEASED" | "PAID" | "DELIVERED" | "ACTIVE" | "CONFIRMED" => {
            "good"
        }
        "FAILED" | "REFUNDED" | "EXPIRED" | "CANCELLED" | "DISPUTED" | "REVOKED" | "DEAD"
        | "DISABLED" => "bad",
        _ => "neutral",
    };
    format!("<span class=\"st {class}\">{}</span>", e(s))
}

/// A `<select>` with a label; `options` are (value, text); `selected` is the chosen value.
pub fn select(name: &str, label: &str, options: &[(&str, &str)], selected: &str) -> String {
    let mut out = format!(
        "<label for=\"{name}\">{}</label><select id=\"{name}\" name=\"{name}\">",
        e(label)
    );
    for (v, t) in options {
        let sel = if *v == selected { " selected" } else { "" };
        let _ = write!(out, "<option value=\"{}\"{sel}>{}</option>", e(v), e(t));
    }
    out.push_str("</select>");
    out
}

/// One series of a bar chart: its name and colour class.
pub struct Series<'a> {
    /// Shown in the legend and the text table.
    pub name: &'a str,
    /// The SVG fill.
    pub fill: &'a str,
}

/// A stacked bar chart as inline SVG, with a legend and the same numbers as a table
/// (for screen readers and for reading exact values). `columns` are (label, one value
/// per series).
pub fn bar_chart(title: &str, series: &[Series<'_>], columns: &[(String, Vec<u64>)]) -> String {
    const W: u64 = 600;
    const H: u64 = 160;
    let max = columns
        .iter()
        .map(|(_, v)| v.iter().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let n = columns.len().max(1) as u64;
    let slot = W / n;
    let bar = (slot * 7 / 10).max(2);
    let mut svg = format!(
        "<figure class=\"chart\"><svg viewBox=\"0 0 {W} {}\" role=\"img\" aria-label=\"{}\" \
         width=\"100%\">",
        H + 20,
        e(title)
    );
    for (i, (label, values)) in columns.iter().enumerate() {
        let x = i as u64 * slot + (slot - bar) / 2;
        let mut y = H;
        for (value, s) in values.iter().zip(series) {
            let h = value * H / max;
            if h == 0 {
                continue;
            }
            y -= h;
            let _ = write!(
                svg,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{bar}\" height=\"{h}\" fill=\"{}\"><title>{}: {} {value}</title></rect>",
                s.fill,
                e(label),
                e(s.name)
            );
        }
        if columns.len() <= 14 {
            let _ = write!(
                svg,
                "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#334\">{}</text>",
                x + bar / 2,
                H + 14,
                e(label)
            );
        }
    }
    svg.push_str("</svg><figcaption>");
    for s in series {
        let _ = write!(
            svg,
            "<span class=\"key\"><svg width=\"12\" height=\"12\" aria-hidden=\"true\"><rect width=\"12\" height=\"12\" fill=\"{}\"/></svg> {}</span> ",
            s.fill,
            e(s.name)
        );
    }
    svg.push_str("</figcaption></figure>");
    let mut head: Vec<&str> = vec![""];
    head.extend(series.iter().map(|s| s.name));
    let rows: Vec<Vec<String>> = columns
        .iter()
        .map(|(label, values)| {
            let mut row = vec![e(label)];
            row.extend(values.iter().map(|v| v.to_string()));
            row
        })
        .collect();
    format!(
        "{svg}<details><summary>{} as a table</summary>{}</details>",
        e(title),
        table(title, &head, &rows)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_escapes_what_it_is_given_and_marks_the_current_page() {
        let nav = [
            NavItem {
                href: "/dashboard",
                label: "Overview",
            },
            NavItem {
                href: "/dashboard/keys",
                label: "API keys",
            },
        ];
        let html = page(
            &Shell {
                console: "Dashboard",
                title: "<script>x</script>",
                nav: &nav,
                current: "/dashboard/keys",
                who: Some("Acme \"<b>\""),
                badge: Some("TEST MODE"),
                sign_out: Some(("/dashboard/logout", "tok")),
            },
            "<p>ok</p>",
        );
        assert!(!html.contains("<script>x"));
        assert!(html.contains("&lt;script&gt;x"));
        assert!(html.contains("Acme &quot;&lt;b&gt;&quot;"));
        assert!(html.contains("href=\"/dashboard/keys\" aria-current=\"page\""));
        assert!(html.contains("name=\"csrf\" value=\"tok\""));
        assert!(html.contains("<html lang=\"en\">"));
    }

    #[test]
    fn charts_scale_to_the_tallest_column_and_keep_a_text_table() {
        let s = [
            Series {
                name: "ok",
                fill: "#2a7",
            },
            Series {
                name: "failed",
                fill: "#c33",
            },
        ];
        let html = bar_chart(
            "Deliveries",
            &s,
            &[("Mon".into(), vec![3, 1]), ("Tue".into(), vec![0, 0])],
        );
        // The tallest column (4) fills the height: 3/4 and 1/4 of 160.
        assert!(html.contains("height=\"120\""), "{html}");
        assert!(html.contains("height=\"40\""), "{html}");
        assert!(html.contains("<td>Mon</td><td>3</td><td>1</td>"));
        assert!(bar_chart("Empty", &s, &[]).contains("Nothing yet."));
    }
}
