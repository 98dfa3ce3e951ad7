//! The events API (issue #52 item 1) over real HTTP on loopback: the list agrees with
//! what webhook receivers got, event for event and byte for byte (both families, each
//! through its own key kind); a cursor walks 10,000 events without a duplicate or a gap
//! while new events arrive; another tenant's event is 404; the retention job keeps 30
//! days by default.

use crate::common::webhook_receiver::{Received, recording_receiver};
use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::record::Record;
use stablecoin_core::ports::{Batch, ChainAddress, RailId};
use stablecoin_webhooks::Family;
use stablecoin_webhooks::WebhookEvent;
use stablecoin_webhooks::delivery::{ESCROW_EVENT_TYPES, WALLET_EVENT_TYPES, event_types};
use std::collections::HashSet;

/// Every event listed by walking `path` (a list URL without a cursor) page by page;
/// `between` runs before each page after the first (new events arriving mid-walk).
async fn walk(
    s: &Server,
    key: &str,
    path: &str,
    mut between: impl AsyncFnMut(usize),
) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        if page > 0 {
            between(page).await;
        }
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = match &cursor {
            Some(c) => format!("{path}{sep}starting_after={c}"),
            None => path.to_string(),
        };
        let r = s.get(key, &url).await;
        r.expect(200);
        let body = r.json();
        let events = body["events"].as_array().unwrap().clone();
        assert!(events.len() <= body["limit"].as_u64().unwrap() as usize);
        out.extend(events);
        match body["next_cursor"].as_str() {
            Some(c) => {
                assert_eq!(body["has_more"], true);
                cursor = Some(c.to_string());
            }
            None => {
                assert_eq!(body["has_more"], false);
                return out;
            }
        }
    }
    unreachable!()
}

/// Asserts the events of `list_text` (one list response) are exactly the bodies
/// `got` received: as many, and each received body appears once, verbatim, as an
/// event's payload.
fn assert_same_bytes(list_text: &str, got: &Received) {
    let list: Value = serde_json::from_str(list_text).unwrap();
    let events = list["events"].as_array().unwrap();
    let received = got.lock().unwrap().clone();
    assert!(!received.is_empty());
    assert_eq!(events.len(), received.len(), "event for event: {list_text}");
    for (_, body) in &received {
        let body = std::str::from_utf8(body).unwrap();
        let needle = format!("\"payload\":{body}}}");
        assert_eq!(
            list_text.matches(&needle).count(),
            1,
            "the delivered bytes appear once, verbatim: {body}\nin {list_text}"
        );
    }
    let mut at: Vec<&str> = events
        .iter()
        .map(|e| e["created_at"].as_str().unwrap())
        .collect();
    let listed = at.clone();
    at.sort_by(|a, b| b.cmp(a));
    assert_eq!(listed, at, "newest first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_events_list_is_what_the_receivers_got_byte_for_byte() {
    let mut c = test_config();
    c.webhooks_allow_loopback_http = true;
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "1000").await;
    let beta = s.tenant("Beta", "1000").await;
    let (wallet_url, wallet_got) = recording_receiver().await;
    let (pay_url, pay_got) = recording_receiver().await;
    let wallet_types: Vec<&str> = WALLET_EVENT_TYPES
        .iter()
        .chain(ESCROW_EVENT_TYPES)
        .copied()
        .collect();
    s.post(
        &acme.live,
        "/v1/webhook-endpoints",
        &json!({"url": wallet_url, "events": wallet_types}).to_string(),
    )
    .await
    .expect(201);
    s.post(
        &acme.live,
        "/v1/webhook-endpoints",
        &json!({"family": "payments", "url": pay_url,
            "events": event_types(Family::Payments)})
        .to_string(),
    )
    .await
    .expect(201);

    // Wallet events: users, a funding, two transfers; Beta's own alongside.
    let (a, b) = ("+2250700000001", "+2250700000002");
    let (c, d) = ("+2250700000003", "+2250700000004");
    for (t, x, y) in [(&acme, a, b), (&beta, c, d)] {
        s.provision(&t.live, x).await;
        s.provision(&t.live, y).await;
        s.fund_settled(&t.live, x, "100").await;
    }
    s.send_usdc(&acme.live, a, b, "25").await;
    s.settle().await;
    s.send_usdc(&acme.live, b, a, "5").await;
    s.send_usdc(&beta.live, c, d, "1").await;
    s.settle().await;

    // Payments events: a checkout session paid on chain.
    let created = s
        .post(
            &acme.business_live,
            "/api/v1/checkout/sessions",
            &json!({"amount": "25", "currency": "USDC", "reference": "order-1",
                "networks": ["polygon"], "expires_in_secs": 600})
            .to_string(),
        )
        .await;
    created.expect(201);
    let address = ChainAddress(
        created.json()["payment_options"][0]["address"]
            .as_str()
            .unwrap()
            .into(),
    );
    let chain = s.app.sim_rail(RailId::Evm(137)).unwrap();
    chain.mint(&address, Token::Usdc, m("25")).unwrap();
    for _ in 0..6 {
        chain.mine(1);
        s.app.state().checkout.tick().await;
    }
    for _ in 0..4 {
        s.app.state().webhooks.round().await.unwrap();
    }
    assert!(
        wallet_got.lock().unwrap().len() >= 4,
        "wallet events delivered"
    );
    assert!(
        pay_got.lock().unwrap().len() >= 3,
        "payments events delivered"
    );

    // Tenant keys: the wallet family, exactly what the wallet receiver got.
    let list = s.get(&acme.live, "/v1/events?limit=100").await;
    list.expect(200);
    assert_same_bytes(&list.text(), &wallet_got);
    // Business keys: the payments family, exactly what the payments receiver got.
    let list = s.get(&acme.business_live, "/api/v1/events?limit=100").await;
    list.expect(200);
    assert_same_bytes(&list.text(), &pay_got);

    // The dashboard's download: the same events, one per line, as listed.
    let all = s.get(&acme.live, "/v1/events?limit=100").await.text();
    let mut dash = crate::common::console::Console::sign_in(&s.base, &acme.live).await;
    let download = dash.get("/dashboard/events/download").await;
    assert_eq!(download.status, 200);
    let lines: Vec<&str> = download.body.lines().collect();
    assert_eq!(
        lines.len(),
        serde_json::from_str::<Value>(&all).unwrap()["events"]
            .as_array()
            .unwrap()
            .len()
    );
    for line in &lines {
        assert!(
            all.contains(line),
            "a downloaded line is the listed event: {line}"
        );
    }
    let filtered = dash.get("/dashboard/events/download?type=transfer.*").await;
    assert!(filtered.body.lines().count() > 0);
    let none = dash.get("/dashboard/events/download?type=swap.*").await;
    assert_eq!(
        (none.status.as_u16(), none.body.as_str()),
        (200, ""),
        "no swap here"
    );
    assert!(
        filtered
            .body
            .lines()
            .all(|l| l.contains("\"type\":\"transfer."))
    );

    // One event reads back with the same bytes; a prefix filter keeps its types only.
    let list = s
        .get(&acme.live, "/v1/events?type=transfer.*&limit=100")
        .await;
    let events = list.json()["events"].as_array().unwrap().clone();
    assert!(!events.is_empty());
    assert!(
        events
            .iter()
            .all(|e| e["type"].as_str().unwrap().starts_with("transfer."))
    );
    let id = events[0]["id"].as_str().unwrap();
    let one = s.get(&acme.live, &format!("/v1/events/{id}")).await;
    one.expect(200);
    let payload_start = one.text().find("\"payload\":").unwrap() + "\"payload\":".len();
    let raw = &one.text()[payload_start..one.text().len() - 1];
    assert!(
        list.text().contains(&format!("\"payload\":{raw}}}")),
        "one event reads as listed"
    );
    assert_eq!(one.json()["object"], "event");

    // Isolation: another tenant's event, or the other family's, is 404.
    let beta_events = s.get(&beta.live, "/v1/events?limit=100").await.json();
    let beta_id = beta_events["events"][0]["id"].as_str().unwrap().to_string();
    s.get(&acme.live, &format!("/v1/events/{beta_id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    s.get(&acme.business_live, &format!("/api/v1/events/{id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    let acme_ids: HashSet<String> = walk(&s, &acme.live, "/v1/events", async |_| {})
        .await
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert!(!acme_ids.contains(&beta_id));
    // Key kinds: a business key does not open /v1/events, nor a tenant key the other.
    s.get(&acme.business_live, "/v1/events")
        .await
        .expect_err(403, "KEY_KIND_NOT_ALLOWED");
    s.get(&acme.live, "/api/v1/events")
        .await
        .expect_err(403, "KEY_KIND_NOT_ALLOWED");

    // Bad input is a 400 naming the parameter.
    for (query, param) in [
        ("type=payment.confirmed", "type"),
        ("type=nope.*", "type"),
        ("from=yesterday", "from"),
        ("from=2030-01-01T00:00:00Z&to=2029-01-01T00:00:00Z", "to"),
        ("starting_after=not-a-cursor", "starting_after"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
    ] {
        let r = s.get(&acme.live, &format!("/v1/events?{query}")).await;
        r.expect_err(400, "INVALID_PARAMETER");
        assert_eq!(r.param().as_deref(), Some(param), "{query}: {}", r.text());
    }
    s.get(&acme.live, "/v1/events?page=2")
        .await
        .expect_err(400, "INVALID_QUERY");
}

/// An escrow-family event record as fan-out writes it (escrow payloads are delivered
/// as they are stored, so any object renders).
fn event(tenant: &TenantId, id: String, event_type: &str, at: Timestamp) -> WebhookEvent {
    WebhookEvent {
        payload: json!({"event_id": id, "event": event_type, "at": at.0}),
        id,
        tenant: tenant.clone(),
        event_type: event_type.into(),
        occurred_at: at,
        deliveries: Vec::new(),
        replays: 0,
    }
}

async fn put_events(s: &Server, events: Vec<WebhookEvent>) {
    let store = s.app.engine().ports().store.clone();
    for chunk in events.chunks(1_000) {
        let puts = chunk.iter().map(|e| e.insert().unwrap()).collect();
        store
            .commit(Batch {
                puts,
                ..Default::default()
            })
            .await
            .unwrap();
    }
}

/// 10,000 events are written as the fan-out writes them, straight through the store
/// (one commit per 1,000: seconds instead of driving 10,000 engine operations), two
/// per millisecond so ties on time are broken by id, in four types; then a client walks
/// them in pages of 100 over HTTP while three new events arrive before every page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_walks_10000_events_without_duplicates_or_gaps_while_events_arrive() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let beta = s.tenant("Beta", "0").await;
    let now = Timestamp::from_millis(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    );
    // On a whole second: the API's timestamps have second precision.
    let base = Timestamp::from_secs(now.unix_secs() - 3_600);
    let types = [
        "escrow.created",
        "escrow.funded",
        "escrow.released",
        "escrow.refunded",
    ];
    let mut expected = Vec::new();
    let mut batch = Vec::new();
    for i in 0..10_000i64 {
        let e = event(
            &acme.id,
            format!("evt_walk_{i:05}"),
            types[(i % 4) as usize],
            base.plus_millis(i / 2),
        );
        expected.push((e.occurred_at, e.id.clone(), e.event_type.clone()));
        batch.push(e);
        // Another tenant's, interleaved in time: never listed for Acme.
        if i % 10 == 0 {
            batch.push(event(
                &beta.id,
                format!("evt_beta_{i:05}"),
                "escrow.created",
                base.plus_millis(i / 2),
            ));
        }
    }
    put_events(&s, batch).await;
    expected.sort_by(|a, b| (b.0, &b.1).cmp(&(a.0, &a.1)));

    let arrived = std::cell::Cell::new(0);
    let seen = walk(&s, &acme.live, "/v1/events?limit=100", async |page| {
        let fresh = (0..3)
            .map(|k| {
                event(
                    &acme.id,
                    format!("evt_new_{page:03}_{k}"),
                    "escrow.created",
                    now.plus_millis(page as i64),
                )
            })
            .collect();
        put_events(&s, fresh).await;
        arrived.set(arrived.get() + 3);
    })
    .await;
    assert!(arrived.get() >= 297, "events arrived during the walk");
    let ids: Vec<&str> = seen.iter().map(|e| e["id"].as_str().unwrap()).collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "no duplicates");
    let want: Vec<&str> = expected.iter().map(|(_, id, _)| id.as_str()).collect();
    assert_eq!(ids, want, "every event once, newest first, none missing");

    // A type and a time range: exactly the matching subset, walked the same way.
    let (from, to) = (base.plus_millis(1_000), base.plus_millis(3_000));
    let path = format!(
        "/v1/events?type=escrow.funded&from={}&to={}&limit=37",
        from.to_rfc3339(),
        to.to_rfc3339()
    );
    let got: Vec<String> = walk(&s, &acme.live, &path, async |_| {})
        .await
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    let want: Vec<String> = expected
        .iter()
        .filter(|(at, _, t)| t == "escrow.funded" && *at >= from && *at < to)
        .map(|(_, id, _)| id.clone())
        .collect();
    assert_eq!(got.len(), 1_000);
    assert_eq!(got, want);
    let prefix: usize = walk(&s, &acme.live, "/v1/events?type=escrow.re*", async |_| {})
        .await
        .len();
    assert_eq!(
        prefix, 5_000,
        "released and refunded (the types escrow.re* has here)"
    );

    // Isolation: Beta's events are Beta's alone.
    s.get(&acme.live, "/v1/events/evt_beta_00000")
        .await
        .expect_err(404, "NOT_FOUND");
    s.get(&beta.live, "/v1/events/evt_beta_00000")
        .await
        .expect(200);
}

/// Event records older than the retention window (30 days by default) go in the
/// retention job's run; younger ones stay listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retention_job_keeps_events_for_30_days_by_default() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    assert_eq!(s.app.state().config.retention.webhook_events_hours, 720);
    let now = s.app.engine().ports().clock.now();
    let day = 24 * 3_600_000;
    put_events(
        &s,
        vec![
            event(
                &acme.id,
                "evt_old".into(),
                "escrow.created",
                now.plus_millis(-31 * day),
            ),
            event(
                &acme.id,
                "evt_young".into(),
                "escrow.created",
                now.plus_millis(-29 * day),
            ),
        ],
    )
    .await;
    stablecoin_server::retention::purge_once(s.app.state())
        .await
        .unwrap();
    let ids: Vec<String> = walk(&s, &acme.live, "/v1/events", async |_| {})
        .await
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["evt_young"]);
    s.get(&acme.live, "/v1/events/evt_old")
        .await
        .expect_err(404, "NOT_FOUND");
}
