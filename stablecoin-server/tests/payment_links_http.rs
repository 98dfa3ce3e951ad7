//! Payment links over real HTTP on loopback (issue #50): a business key creates, lists
//! (cursor-paged), reads and deactivates links; payers open sessions of their own at
//! `/pay/l/{link_id}` (a form post answered `303` to the session's page); each session
//! carries the link's id; refusals (expired, deactivated, `max_payments` reached, a
//! payer's amount out of bounds) have stable codes and open nothing.

use crate::common::console::form_encode;
use crate::common::*;
use serde_json::{Value, json};

/// A client that does not follow redirects: the 303 and its `Location` are the answer.
fn payer() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A payer's click on the link page's button: `(status, Location or page body)`.
async fn open(s: &Server, link: &str, amount: Option<&str>) -> (u16, String) {
    let body = amount.map_or(String::new(), |a| form_encode(&[("amount", a)]));
    let r = payer()
        .post(format!("{}/pay/l/{link}", s.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    if status == 303 {
        let at = r.headers()["location"].to_str().unwrap().to_string();
        return (status, at);
    }
    (status, r.text().await.unwrap())
}

/// The session id a `303` pointed at.
fn session_of(location: &str) -> String {
    location
        .strip_prefix("/pay/")
        .unwrap_or_else(|| panic!("not a payment page: {location}"))
        .to_string()
}

async fn create(s: &Server, key: &str, body: Value) -> Value {
    let r = s
        .post(key, "/api/v1/payment-links", &body.to_string())
        .await;
    r.expect(201);
    let j = r.json();
    assert_eq!(
        r.header("location").as_deref(),
        Some(format!("/api/v1/payment-links/{}", j["link_id"].as_str().unwrap()).as_str())
    );
    j
}

async fn link(s: &Server, key: &str, id: &str) -> Value {
    let r = s.get(key, &format!("/api/v1/payment-links/{id}")).await;
    r.expect(200);
    r.json()
}

fn refused_with(page: &(u16, String), status: u16, code: &str) {
    assert_eq!(page.0, status, "{}", page.1);
    assert!(
        page.1.contains(&format!("data-code=\"{code}\"")),
        "{code}: {}",
        page.1
    );
}

#[tokio::test]
async fn a_payment_link_paid_by_two_payers_opens_two_sessions_and_counts_both() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let key = &acme.business_test;
    let l = create(
        &s,
        key,
        json!({"amount": "12.50", "currency": "USDC", "description": "Workshop ticket"}),
    )
    .await;
    let id = l["link_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("plink_"));
    assert_eq!(l["status"], "active");
    assert_eq!(l["amount"], "12.500000");
    assert_eq!(l["url"], format!("/pay/l/{id}"));
    assert_eq!(l["mode"], "test");

    // The page: what is asked, and one button; no session yet (a preview opens none).
    let page = s
        .send(
            reqwest::Method::GET,
            &format!("/pay/l/{id}"),
            None,
            None,
            &[],
        )
        .await;
    page.expect(200);
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("form-action 'self'") && csp.contains("script-src 'self'"));
    let html = page.text();
    assert!(html.contains("12.500000") && html.contains("Workshop ticket"));
    assert!(html.contains(&format!("action=\"/pay/l/{id}\"")));
    assert_eq!(link(&s, key, &id).await["sessions_count"], 0);

    let mut sessions = Vec::new();
    for _ in 0..2 {
        let (status, at) = open(&s, &id, None).await;
        assert_eq!(status, 303, "{at}");
        sessions.push(session_of(&at));
    }
    assert_ne!(
        sessions[0], sessions[1],
        "each payer has a session of their own"
    );
    for sid in &sessions {
        let read = s
            .get(key, &format!("/api/v1/checkout/sessions/{sid}"))
            .await
            .json();
        assert_eq!(read["payment_link_id"], id.as_str());
        assert_eq!(read["amount"], "12.500000");
        assert_eq!(read["description"], "Workshop ticket");
        assert_eq!(read["mode"], "test");
        assert!(!read["payment_options"].as_array().unwrap().is_empty());
        // Its own page.
        s.send(
            reqwest::Method::GET,
            &format!("/pay/{sid}"),
            None,
            None,
            &[],
        )
        .await
        .expect(200);
    }
    let mid = link(&s, key, &id).await;
    assert_eq!(mid["sessions_count"], 2);
    assert_eq!(mid["open_sessions_count"], 2);
    assert_eq!(mid["payments_count"], 0);

    for sid in &sessions {
        let paid = s
            .post(
                key,
                &format!("/api/v1/checkout/sessions/{sid}/simulate-payment"),
                "{}",
            )
            .await;
        paid.expect(200);
        assert_eq!(paid.json()["status"], "paid");
    }
    let after = link(&s, key, &id).await;
    assert_eq!(after["sessions_count"], 2);
    assert_eq!(after["payments_count"], 2);
    assert_eq!(after["open_sessions_count"], 0);
    assert_eq!(after["status"], "active", "no max_payments: still open");

    // A session the business created itself carries no link.
    let own = s
        .post(
            key,
            "/api/v1/checkout/sessions",
            &json!({"amount": "1", "currency": "USDC"}).to_string(),
        )
        .await;
    own.expect(201);
    assert!(own.json().get("payment_link_id").is_none());

    // Another mode (and so another business's key) does not see the link.
    s.get(&acme.business_live, &format!("/api/v1/payment-links/{id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    // A tenant key is not a business key.
    s.get(&acme.live, &format!("/api/v1/payment-links/{id}"))
        .await
        .expect(403);
}

#[tokio::test]
async fn refused_links_and_amounts_have_stable_codes_and_open_nothing() {
    let (s, clock) = start_shifted(test_config()).await;
    let acme = s.tenant("Acme", "0").await;
    let key = &acme.business_test;

    // max_payments reached: one paid session of one allowed.
    let once = create(
        &s,
        key,
        json!({"amount": "5", "currency": "USD", "max_payments": 1}),
    )
    .await;
    let once_id = once["link_id"].as_str().unwrap();
    let (st, at) = open(&s, once_id, None).await;
    assert_eq!(st, 303);
    let sid = session_of(&at);
    // While the first payer's session is open it holds the one place.
    refused_with(
        &open(&s, once_id, None).await,
        409,
        "PAYMENT_LINK_LIMIT_REACHED",
    );
    s.post(
        key,
        &format!("/api/v1/checkout/sessions/{sid}/simulate-payment"),
        "{}",
    )
    .await
    .expect(200);
    refused_with(
        &open(&s, once_id, None).await,
        409,
        "PAYMENT_LINK_LIMIT_REACHED",
    );
    let l = link(&s, key, once_id).await;
    assert_eq!(l["status"], "completed");
    assert_eq!(
        (l["sessions_count"].as_u64(), l["payments_count"].as_u64()),
        (Some(1), Some(1))
    );
    let page = s
        .send(
            reqwest::Method::GET,
            &format!("/pay/l/{once_id}"),
            None,
            None,
            &[],
        )
        .await;
    assert!(page.text().contains("takes no more payments") && !page.text().contains("<form"));

    // Deactivated: refused; a second deactivation answers the link unchanged.
    let d = create(&s, key, json!({"amount": "5", "currency": "USDC"})).await;
    let d_id = d["link_id"].as_str().unwrap();
    let r = s
        .post(key, &format!("/api/v1/payment-links/{d_id}/deactivate"), "")
        .await;
    r.expect(200);
    assert_eq!(r.json()["status"], "inactive");
    let again = s
        .post(key, &format!("/api/v1/payment-links/{d_id}/deactivate"), "")
        .await;
    again.expect(200);
    assert_eq!(again.json()["deactivated_at"], r.json()["deactivated_at"]);
    refused_with(&open(&s, d_id, None).await, 410, "PAYMENT_LINK_INACTIVE");
    assert_eq!(link(&s, key, d_id).await["sessions_count"], 0);

    // Expired: open before, refused after (the clock moves, nothing sleeps).
    let now = stablecoin_core::domain::time::Timestamp::from_millis(
        s.app.state().checkout.kernel().now().millis(),
    );
    let soon = now.plus_secs(3600).to_rfc3339();
    let x = create(
        &s,
        key,
        json!({"amount": "5", "currency": "USDC", "expires_at": soon}),
    )
    .await;
    let x_id = x["link_id"].as_str().unwrap();
    assert_eq!(x["status"], "active");
    clock.advance_ms(3_601_000);
    refused_with(&open(&s, x_id, None).await, 410, "PAYMENT_LINK_EXPIRED");
    assert_eq!(link(&s, key, x_id).await["status"], "expired");
    assert_eq!(link(&s, key, x_id).await["sessions_count"], 0);

    // Payer-chosen between bounds.
    let c = create(
        &s,
        key,
        json!({"min_amount": "5", "max_amount": "50", "currency": "USDT", "description": "Tip"}),
    )
    .await;
    let c_id = c["link_id"].as_str().unwrap();
    assert!(c.get("amount").is_none());
    assert_eq!(
        (c["min_amount"].as_str(), c["max_amount"].as_str()),
        (Some("5.000000"), Some("50.000000"))
    );
    let html = s
        .send(
            reqwest::Method::GET,
            &format!("/pay/l/{c_id}"),
            None,
            None,
            &[],
        )
        .await
        .text();
    assert!(
        html.contains("name=\"amount\"") && html.contains("Between 5.000000 and 50.000000 USDT")
    );
    for low_or_high in ["4.999999", "50.000001", "1000"] {
        let page = open(&s, c_id, Some(low_or_high)).await;
        refused_with(&page, 400, "AMOUNT_OUT_OF_RANGE");
        assert!(
            page.1.contains(&format!("value=\"{low_or_high}\"")),
            "kept in the field"
        );
    }
    refused_with(&open(&s, c_id, None).await, 400, "MISSING_PARAMETER");
    refused_with(&open(&s, c_id, Some("abc")).await, 400, "INVALID_AMOUNT");
    assert_eq!(
        link(&s, key, c_id).await["sessions_count"],
        0,
        "refusals opened nothing"
    );
    let (st, at) = open(&s, c_id, Some("20.25")).await;
    assert_eq!(st, 303);
    let read = s
        .get(
            key,
            &format!("/api/v1/checkout/sessions/{}", session_of(&at)),
        )
        .await
        .json();
    assert_eq!(read["amount"], "20.250000");
    assert_eq!(read["currency"], "USDT");
    assert_eq!(read["payment_link_id"], c_id);

    // Unknown links: the payer's 404 page, the API's NOT_FOUND.
    let (st, _) = open(&s, "plink_01JD0000000000000000000000", None).await;
    assert_eq!(st, 404);
    s.get(
        key,
        "/api/v1/payment-links/plink_01JD0000000000000000000000",
    )
    .await
    .expect_err(404, "NOT_FOUND");
}

#[tokio::test]
async fn creation_is_validated_idempotent_and_the_list_is_cursor_paged() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let key = &acme.business_live;
    let past = "2001-01-01T00:00:00Z";
    for (body, code, param) in [
        (
            json!({"amount": "5", "min_amount": "1", "currency": "USDC"}),
            "INVALID_PARAMETER",
            "amount",
        ),
        (
            json!({"min_amount": "9", "max_amount": "2", "currency": "USDC"}),
            "INVALID_PARAMETER",
            "min_amount",
        ),
        (
            json!({"amount": "0", "currency": "USDC"}),
            "INVALID_PARAMETER",
            "amount",
        ),
        (
            json!({"amount": "5", "currency": "EUR"}),
            "UNKNOWN_TOKEN",
            "currency",
        ),
        (
            json!({"amount": "5", "currency": "USDC", "expires_at": past}),
            "INVALID_PARAMETER",
            "expires_at",
        ),
        (
            json!({"amount": "5", "currency": "USDC", "expires_at": "soon"}),
            "INVALID_PARAMETER",
            "expires_at",
        ),
        (
            json!({"amount": "5", "currency": "USDC", "max_payments": 0}),
            "INVALID_PARAMETER",
            "max_payments",
        ),
        (
            json!({"amount": "5", "currency": "USDC", "description": "x".repeat(501)}),
            "INVALID_PARAMETER",
            "description",
        ),
    ] {
        let before = s.commits();
        let r = s
            .post(key, "/api/v1/payment-links", &body.to_string())
            .await;
        r.expect_err(400, code);
        assert_eq!(r.param().as_deref(), Some(param), "{body}");
        assert_eq!(s.commits(), before, "{body} wrote something");
    }
    // Idempotent create.
    let body = json!({"amount": "7", "currency": "USDC"}).to_string();
    let first = s
        .post_idem(key, "/api/v1/payment-links", &body, "pl-1")
        .await;
    first.expect(201);
    let again = s
        .post_idem(key, "/api/v1/payment-links", &body, "pl-1")
        .await;
    assert_eq!(again.json()["link_id"], first.json()["link_id"]);
    s.post_idem(
        key,
        "/api/v1/payment-links",
        &json!({"amount": "8", "currency": "USDC"}).to_string(),
        "pl-1",
    )
    .await
    .expect_err(422, "IDEMPOTENCY_KEY_REUSED");

    for i in 0..4 {
        create(
            &s,
            key,
            json!({"amount": format!("{}", i + 1), "currency": "USDC"}),
        )
        .await;
    }
    // Five links, pages of two: 2 + 2 + 1, newest first, none twice.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for expected in [2, 2, 1] {
        let path = match &cursor {
            None => "/api/v1/payment-links?limit=2".to_string(),
            Some(c) => format!("/api/v1/payment-links?limit=2&starting_after={c}"),
        };
        let page = s.get(key, &path).await;
        page.expect(200);
        let j = page.json();
        let links = j["payment_links"].as_array().unwrap();
        assert_eq!(links.len(), expected);
        seen.extend(
            links
                .iter()
                .map(|l| l["link_id"].as_str().unwrap().to_string()),
        );
        cursor = j["next_cursor"].as_str().map(String::from);
        // A link created mid-walk does not shift the pages being walked.
        if expected == 2 && seen.len() == 2 {
            create(&s, key, json!({"amount": "99", "currency": "USDC"})).await;
        }
    }
    assert!(cursor.is_none(), "the last page has no cursor");
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 5);
    assert_eq!(
        seen.last().unwrap(),
        first.json()["link_id"].as_str().unwrap(),
        "oldest last"
    );
    s.get(key, "/api/v1/payment-links?starting_after=zz")
        .await
        .expect_err(400, "INVALID_PARAMETER");
    s.get(key, "/api/v1/payment-links?limit=101")
        .await
        .expect_err(400, "INVALID_PARAMETER");
}

/// The link's button is public and each post opens a session: one client address gets
/// 20 in 10 minutes, then `429` with `Retry-After` and a page saying so, and opens
/// nothing more (`pages::public_limit`). Reading the page is not counted.
#[tokio::test]
async fn one_address_opens_at_most_twenty_sessions_in_ten_minutes() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let l = create(
        &s,
        &acme.business_test,
        json!({"amount": "5", "currency": "USD"}),
    )
    .await;
    let id = l["link_id"].as_str().unwrap();
    for i in 0..20 {
        let (st, _) = open(&s, id, None).await;
        assert_eq!(st, 303, "post {i}");
    }
    let r = payer()
        .post(format!("{}/pay/l/{id}", s.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(wait >= 1, "{wait}");
    let page = r.text().await.unwrap();
    assert!(page.contains("data-code=\"RATE_LIMITED\""), "{page}");
    assert_eq!(
        link(&s, &acme.business_test, id).await["sessions_count"],
        20,
        "the refused post opened nothing"
    );
    let page = payer()
        .get(format!("{}/pay/l/{id}", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200, "reading is not limited");
}
