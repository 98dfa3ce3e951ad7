//! The retention job of a running server (`[retention]`), over real HTTP on loopback: an
//! idempotency key older than its window stops answering for its first request while a
//! recent one still does; the outbox rows fan-out has passed go while their events stay
//! listed; and `/metrics` counts what was purged.

use crate::common;

use reqwest::Method;
use serde_json::json;
use stablecoin_core::ports::{Batch, IdempotencyRecord};
use std::time::Duration;

const HOUR_MS: i64 = 3_600_000;

/// The server's store key of a client's `Idempotency-Key` (see `idempotency.rs`).
fn http_key(key: &str) -> String {
    format!("http\u{1f}{key}")
}

#[tokio::test]
async fn the_job_purges_idempotency_keys_past_their_window_and_keeps_recent_ones() {
    let mut config = common::test_config();
    config.run_workers = true;
    config.retention.interval_ms = 100;
    config.retention.idempotency_hours = 24;
    let s = common::start_with(config).await;
    let t = s.tenant("Acme", "0").await;
    let store = s.app.state().storage.store.clone();
    let now = s.app.engine().ports().clock.now();
    // Two keys recorded for another request than the one sent below: while a key is
    // kept, sending it with this request is 422 IDEMPOTENCY_KEY_REUSED.
    for (key, age_ms) in [("old-key", 25 * HOUR_MS), ("recent-key", HOUR_MS)] {
        let record = IdempotencyRecord {
            tenant: t.id.0.clone(),
            key: http_key(key),
            request_hash: "another request".into(),
            response: json!({ "status": 200, "body": "{}" }),
            created_at: now.plus_millis(-age_ms),
        };
        let batch = Batch {
            idempotency: Some(record),
            ..Default::default()
        };
        store.commit(batch).await.unwrap();
    }

    let mut purged = false;
    for _ in 0..100 {
        if store
            .idempotency(&t.id.0, &http_key("old-key"))
            .await
            .unwrap()
            .is_none()
        {
            purged = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(purged, "the job purged the 25-hour-old key within 5 s");

    let body = r#"{"phone_number":"+2250700000001"}"#;
    let r = s
        .post_idem(&t.live, "/v1/users/provision", body, "old-key")
        .await;
    assert!(
        r.status / 100 == 2,
        "a purged key runs its request: {}",
        r.text()
    );
    assert_eq!(r.header("idempotent-replayed").as_deref(), Some("false"));
    s.post_idem(&t.live, "/v1/users/provision", body, "recent-key")
        .await
        .expect_err(422, "IDEMPOTENCY_KEY_REUSED");

    let metrics = s.send(Method::GET, "/metrics", None, None, &[]).await;
    metrics.expect(200);
    let text = metrics.text();
    assert!(
        text.contains("stablecoin_retention_purged_total{what=\"idempotency\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("stablecoin_retention_errors_total 0"),
        "{text}"
    );
}

#[tokio::test]
async fn a_server_with_retention_off_keeps_every_record() {
    let mut config = common::test_config();
    config.run_workers = true;
    config.retention.enabled = false;
    config.retention.interval_ms = 100;
    config.retention.idempotency_hours = 24;
    let s = common::start_with(config).await;
    let t = s.tenant("Acme", "0").await;
    let store = s.app.state().storage.store.clone();
    let old = s
        .app
        .engine()
        .ports()
        .clock
        .now()
        .plus_millis(-100 * HOUR_MS);
    let record = IdempotencyRecord {
        tenant: t.id.0.clone(),
        key: http_key("old-key"),
        request_hash: "another request".into(),
        response: json!({ "status": 200, "body": "{}" }),
        created_at: old,
    };
    let batch = Batch {
        idempotency: Some(record),
        ..Default::default()
    };
    store.commit(batch).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let body = r#"{"phone_number":"+2250700000001"}"#;
    s.post_idem(&t.live, "/v1/users/provision", body, "old-key")
        .await
        .expect_err(422, "IDEMPOTENCY_KEY_REUSED");
    let metrics = s.send(Method::GET, "/metrics", None, None, &[]).await;
    assert!(metrics.text().contains("stablecoin_retention_runs_total 0"));
}

/// The outbox is a hand-off (issue 47): once fan-out has copied an event into its record,
/// the job purges the outbox row, and the event still reads back from the events API;
/// fan-out goes on with the events committed after the purge.
#[tokio::test]
async fn the_job_purges_outbox_events_fan_out_has_passed_and_the_events_api_still_lists_them() {
    use stablecoin_core::domain::events::DomainEvent;
    use stablecoin_core::domain::money::Micros;
    use stablecoin_core::domain::money::Token;
    use stablecoin_webhooks::delivery::outbox_event;
    let mut config = common::test_config();
    config.run_workers = true;
    config.retention.interval_ms = 100;
    let s = common::start_with(config).await;
    let t = s.tenant("Acme", "0").await;
    let store = s.app.state().storage.store.clone();
    let now = s.app.engine().ports().clock.now();
    let settled = |id: &str| DomainEvent::TransferSettled {
        transfer_id: id.to_string(),
        amount: Micros(1_000_000),
        token: Token::Usdc,
        tx_hash: format!("0x{id}"),
        updated_at: now,
    };
    // Two commits: SQLite keeps the newest outbox row (it numbers new events from it).
    for id in ["evt_purge_1", "evt_purge_2"] {
        let event = outbox_event(id, &t.id, now, &settled(id)).unwrap();
        let batch = Batch {
            outbox: vec![event],
            ..Default::default()
        };
        store.commit(batch).await.unwrap();
    }
    let mut gone = false;
    for _ in 0..100 {
        let left = store.outbox_after(0, 100).await.unwrap();
        if !left.iter().any(|(_, e)| e.id == "evt_purge_1") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        gone,
        "the job purged the fanned-out outbox event within 5 s"
    );
    let one = s.get(&t.live, "/v1/events/evt_purge_1").await;
    one.expect(200);
    assert_eq!(one.json()["type"], "transfer.settled");
    assert_eq!(one.json()["payload"]["transfer_id"], "evt_purge_1");

    // Fan-out goes on: an event committed after the purge gets its record too.
    let event = outbox_event("evt_purge_3", &t.id, now, &settled("evt_purge_3")).unwrap();
    let batch = Batch {
        outbox: vec![event],
        ..Default::default()
    };
    store.commit(batch).await.unwrap();
    let mut listed = false;
    for _ in 0..100 {
        if s.get(&t.live, "/v1/events/evt_purge_3").await.status == 200 {
            listed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(listed, "an event after the purge is fanned out");
    let text = s
        .send(Method::GET, "/metrics", None, None, &[])
        .await
        .text();
    assert!(
        !text.contains("stablecoin_retention_purged_total{what=\"outbox\"} 0"),
        "{text}"
    );
    assert!(
        text.contains("stablecoin_retention_purged_total{what=\"outbox\"}"),
        "{text}"
    );
}
