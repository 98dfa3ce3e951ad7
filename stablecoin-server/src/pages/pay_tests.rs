//! Unit tests of the payment page: its rendering, words and routes.

use super::*;
use crate::pages::PayDeposit;

pub(super) fn view() -> PayView {
    PayView {
        session_id: "cs_01HX3Y4Z5A6B7C8D9E0F1G2H3J".into(),
        business_name: "Acme Coffee".into(),
        reference: Some("order-1042".into()),
        description: Some("Two flat whites".into()),
        amount: "25.000000".into(),
        currency: "USDC".into(),
        status: "pending".into(),
        phase: "awaiting_payment".into(),
        amount_received: "0.000000".into(),
        amount_pending: "0.000000".into(),
        amount_due: "25.000000".into(),
        excess: "0.000000".into(),
        late: false,
        failure_reason: None,
        expires_at: "2030-01-01T00:15:00Z".into(),
        expires_in_secs: 899,
        options: vec![PayOption {
            network: "polygon".into(),
            token: "USDC".into(),
            address: "0x52908400098527886E0F7030069857D2E4169EE7".into(),
            wallet_uri: None,
        }],
        deposits: vec![],
        sandbox: false,
        refunds: Vec::new(),
    }
}

fn deposit(amount: &str, status: &str, confirmations: u64) -> PayDeposit {
    PayDeposit {
        network: "polygon".into(),
        token: "USDC".into(),
        amount: amount.into(),
        status: status.into(),
        confirmations,
        tx_hash: Some("0xabc123".into()),
    }
}

#[test]
fn the_page_shows_amount_token_network_address_qr_and_countdown() {
    let html = render_pay_page(&view());
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert!(
        html.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
    );
    assert!(html.contains("<noscript><meta http-equiv=\"refresh\" content=\"10\"></noscript>"));
    assert!(html.contains("<main id=\"pay\""));
    assert!(html.contains("<h1 id=\"amount-heading\">Pay <span class=\"amount\" data-field=\"amount\">25.000000</span> USDC</h1>"));
    assert!(html.contains("Acme Coffee"));
    assert!(html.contains("Pay with USDC on Polygon"));
    assert!(html.contains(">0x52908400098527886E0F7030069857D2E4169EE7</code>"));
    assert!(html.contains("<svg class=\"qr\" role=\"img\""));
    assert!(!html.contains("<?xml"));
    assert!(html.contains("Expires in 14:59"));
    assert!(html.contains("<strong id=\"phase-text\">Awaiting payment</strong>"));
    assert!(html.contains("<button type=\"button\" class=\"copy\" data-copy=\"addr-0\" hidden>"));
    assert!(html.contains("No payment detected yet."));
    assert!(!html.contains("TEST MODE"));
    assert!(
        render_pay_page(&PayView {
            sandbox: true,
            ..view()
        })
        .contains("TEST MODE")
    );
}

#[test]
fn the_page_has_no_inline_script_or_style() {
    let mut v = view();
    v.options.push(PayOption {
        network: "tron".into(),
        token: "USDT".into(),
        address: "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8".into(),
        wallet_uri: None,
    });
    let html = render_pay_page(&v);
    assert_eq!(html.matches("<script").count(), 1);
    assert!(html.contains("<script src=\"/pay/assets/pay.js\" defer></script>"));
    assert!(!html.contains("style="));
    assert!(!html.contains("<style"));
    // No inline event handler (` onclick=`), nothing fetched from elsewhere.
    for (at, _) in html.match_indices(" on") {
        let word: String = html[at + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        assert!(!html[at + 1 + word.len()..].starts_with('='), "{word}=");
    }
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    // One section per network, with anchors that work without JS.
    assert!(html.contains("<a href=\"#opt-0\">Polygon (USDC)</a>"));
    assert!(html.contains("<a href=\"#opt-1\">TRON (USDT)</a>"));
    assert!(html.contains("id=\"opt-1\""));
    assert_eq!(html.matches("<svg class=\"qr\"").count(), 2);
}

#[test]
fn everything_the_business_or_payer_wrote_is_escaped() {
    let mut v = view();
    v.description = Some("<script>alert(1)</script>".into());
    v.reference = Some("\"><img src=x onerror=alert(2)>".into());
    v.business_name = "Tom & Jerry's <b>".into();
    v.phase = "failed".into();
    v.status = "failed".into();
    v.failure_reason = Some("<i>boom</i>".into());
    let html = render_pay_page(&v);
    assert_eq!(html.matches("<script").count(), 1);
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<img"));
    assert!(html.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"));
    assert!(html.contains("Tom &amp; Jerry&#39;s &lt;b&gt;"));
    assert!(!html.contains("<b>") && !html.contains("<i>"));
    assert!(html.contains("Failed: &lt;i&gt;boom&lt;/i&gt;"));
}

#[test]
fn every_phase_has_its_words() {
    let v = view();
    let with = |phase: &str, status: &str| PayView {
        phase: phase.into(),
        status: status.into(),
        ..v.clone()
    };
    assert_eq!(phase_words(&v), "Awaiting payment");
    let mut c = with("confirming", "pending");
    c.deposits = vec![deposit("25.000000", "detected", 3)];
    assert_eq!(
        phase_words(&c),
        "Payment received, confirming (3 confirmations)"
    );
    c.deposits = vec![deposit("25.000000", "detected", 1)];
    assert_eq!(
        phase_words(&c),
        "Payment received, confirming (1 confirmation)"
    );
    let mut u = with("underpaid", "pending");
    u.amount_due = "5.000000".into();
    assert_eq!(phase_words(&u), "Underpaid: 5.000000 USDC still due");
    assert_eq!(phase_words(&with("paid", "paid")), "Paid");
    let mut o = with("overpaid", "paid");
    o.excess = "1.500000".into();
    assert_eq!(phase_words(&o), "Paid \u{2014} overpaid by 1.500000 USDC");
    assert_eq!(phase_words(&with("expired", "expired")), "Expired");
    let late = PayView {
        late: true,
        ..with("expired", "expired")
    };
    assert_eq!(phase_words(&late), "Expired \u{2014} late payment received");
    assert_eq!(phase_words(&with("failed", "failed")), "Failed");
    let f = PayView {
        failure_reason: Some("chain halted".into()),
        ..with("failed", "failed")
    };
    assert_eq!(phase_words(&f), "Failed: chain halted");
}

#[test]
fn a_final_page_neither_refreshes_nor_offers_addresses() {
    let mut v = view();
    v.status = "paid".into();
    v.phase = "overpaid".into();
    v.excess = "2.000000".into();
    v.amount_due = "0.000000".into();
    v.deposits = vec![deposit("27.000000", "confirmed", 12)];
    let html = render_pay_page(&v);
    assert!(!html.contains("http-equiv=\"refresh\""));
    assert!(html.contains("<div id=\"options\" hidden>"));
    assert!(html.contains("<p id=\"countdown-line\" class=\"countdown\" hidden>"));
    assert!(html.contains("class=\"status status-ok\""));
    assert!(html.contains("27.000000 USDC on Polygon \u{2014} confirmed (12 confirmations)"));
    assert!(html.contains("<p id=\"no-deposits\" hidden>"));
    assert!(html.contains("data-row=\"excess\" data-hide-zero><dt>"));
    let confirming = PayView {
        phase: "confirming".into(),
        ..view()
    };
    let html = render_pay_page(&confirming);
    assert!(
        html.contains("<div id=\"options\" hidden>"),
        "no address while confirming"
    );
    assert!(html.contains("http-equiv=\"refresh\""));
}

#[test]
fn remaining_time_reads_as_a_clock() {
    assert_eq!(format_remaining(0), "0:00");
    assert_eq!(format_remaining(-5), "0:00");
    assert_eq!(format_remaining(59), "0:59");
    assert_eq!(format_remaining(899), "14:59");
    assert_eq!(format_remaining(3661), "1:01:01");
}

#[test]
fn the_not_found_page_says_nothing_about_sessions() {
    let html = render_not_found_page();
    assert!(html.contains("<html lang=\"en\">") && html.contains("<main"));
    assert!(!html.contains("cs_"));
    assert!(!html.contains("refresh"));
}

struct One(PayView);

#[async_trait::async_trait]
impl PaySource for One {
    async fn pay_view(&self, session_id: &str) -> Option<PayView> {
        assert!(
            is_session_id(session_id),
            "only well-formed ids reach the source"
        );
        (session_id == self.0.session_id || session_id == "cs_liar").then(|| self.0.clone())
    }
}

#[tokio::test]
async fn routes_serve_the_page_status_and_assets_with_strict_headers() {
    let app: Router = pay_routes(Arc::new(One(view())));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();
    let get = |path: &str| client.get(format!("{base}{path}")).send();

    let page = get("/pay/cs_01HX3Y4Z5A6B7C8D9E0F1G2H3J").await.unwrap();
    assert_eq!(page.status(), 200);
    let h = page.headers().clone();
    assert_eq!(h["content-type"], "text/html; charset=utf-8");
    assert_eq!(h["content-security-policy"], CSP);
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "no-referrer");
    assert_eq!(h["cache-control"], "no-store");
    assert!(page.text().await.unwrap().contains("25.000000"));

    let status = get("/pay/cs_01HX3Y4Z5A6B7C8D9E0F1G2H3J/status")
        .await
        .unwrap();
    assert_eq!(status.status(), 200);
    assert_eq!(status.headers()["content-type"], "application/json");
    let got: PayView = status.json().await.unwrap();
    assert_eq!(got, view());

    // Unknown, malformed, and a source answering for another session: the same 404.
    let mut bodies = vec![];
    for id in [
        "cs_unknown",
        "cs_liar",
        "nope",
        "cs_%3Cscript%3E",
        "cs_a-b",
        "assets",
    ] {
        let r = get(&format!("/pay/{id}")).await.unwrap();
        assert_eq!(r.status(), 404, "{id}");
        assert_eq!(r.headers()["content-security-policy"], CSP);
        bodies.push(r.text().await.unwrap());
        let r = get(&format!("/pay/{id}/status")).await.unwrap();
        assert_eq!(r.status(), 404, "{id}");
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "NOT_FOUND");
    }
    assert!(bodies.iter().all(|b| *b == render_not_found_page()));

    let css = get("/pay/assets/pay.css").await.unwrap();
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");
    assert_eq!(css.text().await.unwrap(), PAY_CSS);
    let js = get("/pay/assets/pay.js").await.unwrap();
    assert_eq!(
        js.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(js.headers()["x-content-type-options"], "nosniff");
    assert_eq!(js.text().await.unwrap(), PAY_JS);
    server.abort();
}

#[test]
fn wallet_requests_fill_the_qr_and_the_open_in_wallet_link_and_tron_shows_the_amount() {
    let mut v = view();
    let eip681 = "ethereum:0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359@137/transfer?address=0x52908400098527886E0F7030069857D2E4169EE7&uint256=25000000";
    let solana = "solana:mvines9iiHiQTysrwkJjGf2gb9Ex9jXJX8ns3qwf2kN?amount=25&spl-token=EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v&reference=82ZJ7nbGpixjeDCmEhUcmwXYfvurzAgGdtSMuHnUgyny";
    v.options[0].wallet_uri = Some(eip681.into());
    v.options.push(PayOption {
        network: "solana".into(),
        token: "USDC".into(),
        address: "mvines9iiHiQTysrwkJjGf2gb9Ex9jXJX8ns3qwf2kN".into(),
        wallet_uri: Some(solana.into()),
    });
    v.options.push(PayOption {
        network: "tron".into(),
        token: "USDT".into(),
        address: "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8".into(),
        wallet_uri: None,
    });
    let html = render_pay_page(&v);
    // The links carry the requests, escaped as attribute values.
    assert!(html.contains(&format!(
        "<a class=\"wallet-link button\" id=\"wallet-0\" href=\"{}\"",
        escape_html(eip681)
    )));
    assert!(html.contains(&format!("id=\"wallet-1\" href=\"{}\"", escape_html(solana))));
    assert!(
        !html.contains("id=\"wallet-2\""),
        "TRON has no wallet request"
    );
    assert_eq!(html.matches("data-qr=\"wallet\"").count(), 2);
    assert_eq!(html.matches("data-qr=\"address\"").count(), 1);
    assert!(html.contains("The QR code holds the address only"));
    assert!(html.contains("data-wallet-due=\"25.000000\""));
    // Without any request the page is as before: bare addresses, nothing to reload for.
    let plain = render_pay_page(&view());
    assert!(!plain.contains("wallet-link") && !plain.contains("data-wallet-due"));
    assert_eq!(plain.matches("data-qr=\"address\"").count(), 1);
}
