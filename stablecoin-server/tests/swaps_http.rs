//! Swaps over HTTP on the simulated chain through the treasury venue (the default
//! `[swaps]`): create, read, list, the webhooks' fields equal to the read, idempotent
//! create, and refusals that write nothing.

use crate::common::webhook_receiver::{Received, recording_receiver};
use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::ports::RailId;
use stablecoin_rails::sim::Fault;

macro_rules! writes_nothing {
    ($s:expr, $e:expr) => {{
        let before = $s.commits();
        let r = $e;
        assert_eq!($s.commits(), before, "must write nothing: {}", r.text());
        r
    }};
}

const A: &str = "+2250700000001";

/// Spec 6.1 (rule 6): the read returns "the same status fields" as the swap webhooks.
/// The webhook `w` has exactly the spec's field set `spec_fields` (its table row), and
/// every one of them but `event` is in the read under the same name with the same value;
/// `id` and `error_reason` stay in the read as aliases of `swap_id` and `reason`.
fn assert_read_carries_webhook(w: &Value, read: &Value, spec_fields: &[&str]) {
    let got: Vec<&str> = w.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    let mut want: Vec<&str> = spec_fields.to_vec();
    let mut sorted = got.clone();
    sorted.sort_unstable();
    want.sort_unstable();
    assert_eq!(sorted, want, "the webhook's field set is the spec's: {w}");
    for (field, value) in w.as_object().unwrap() {
        if field == "event" {
            continue;
        }
        assert_eq!(
            read.get(field),
            Some(value),
            "{field}: webhook {w} read {read}"
        );
    }
    assert_eq!(read["id"], read["swap_id"], "alias: {read}");
    assert_eq!(
        read.get("error_reason"),
        read.get("reason"),
        "alias: {read}"
    );
}

/// The bodies `got` received, parsed, of one event name.
fn received(got: &Received, event: &str) -> Vec<Value> {
    got.lock()
        .unwrap()
        .iter()
        .map(|(_, b)| serde_json::from_slice::<Value>(b).unwrap())
        .filter(|e| e["event"] == event)
        .collect()
}

fn body(amount: &str) -> String {
    json!({"phone_number": A, "token_in": "USDC", "token_out": "USDT",
        "amount_in": amount, "max_slippage_bps": 50})
    .to_string()
}

/// A server whose tenant "Acme" has a receiver subscribed to the `swap.*` webhooks, and
/// wallet `A` provisioned and funded with 100 USDC.
async fn swap_world() -> (Server, Tenant, Received) {
    let mut c = test_config();
    c.webhooks_allow_loopback_http = true;
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "1000").await;
    let (url, got) = recording_receiver().await;
    s.post(
        &acme.live,
        "/v1/webhook-endpoints",
        &json!({"url": url, "events": ["swap.settled", "swap.failed"]}).to_string(),
    )
    .await
    .expect(201);
    s.provision(&acme.live, A).await;
    s.fund_settled(&acme.live, A, "100").await;
    (s, acme, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_settles_and_its_read_equals_its_webhook() {
    let (s, acme, got) = swap_world().await;

    let r = s
        .post_idem(&acme.live, "/v1/swaps", &body("40"), "swap-1")
        .await;
    r.expect(202);
    let v = r.json();
    let id = v["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("sw_"), "{v}");
    assert_eq!(v["status"], "QUEUED");
    assert_eq!(v["token_in"], "USDC");
    assert_eq!(v["token_out"], "USDT");
    assert_eq!(v["amount_in"], "40.000000");
    assert_eq!(v["quoted_amount_out"], "39.960000");
    assert_eq!(v["min_amount_out"], "39.760200");
    assert_eq!(
        r.header("location").as_deref(),
        Some(&*format!("/v1/swaps/{id}"))
    );
    // The same key and body: the same swap, nothing new written.
    let again = writes_nothing!(
        s,
        s.post_idem(&acme.live, "/v1/swaps", &body("40"), "swap-1")
            .await
    );
    assert_eq!(again.json()["id"], id.as_str());

    s.settle().await;
    s.app.state().webhooks.round().await.unwrap();
    let read = s.get(&acme.live, &format!("/v1/swaps/{id}")).await;
    read.expect(200);
    let read = read.json();
    assert_eq!(read["status"], "SETTLED", "{read}");
    assert_eq!(read["amount_out"], "39.960000");
    assert_eq!(read["venue"], "treasury");
    let bal = s
        .get(
            &acme.live,
            &format!("/v1/users/balance?phone_number=%2B{}", &A[1..]),
        )
        .await
        .json();
    assert_eq!(bal["balance_usdc"], "60.000000", "{bal}");
    assert_eq!(bal["balance_usdt"], "39.960000", "{bal}");

    let events: Vec<Value> = got
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| serde_json::from_slice(b).unwrap())
        .collect();
    let settled: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "swap.settled")
        .collect();
    assert_eq!(settled.len(), 1, "{events:?}");
    let w = settled[0];
    assert_read_carries_webhook(
        w,
        &read,
        &[
            "event",
            "swap_id",
            "status",
            "token_in",
            "token_out",
            "amount_in",
            "tx_hash",
            "updated_at",
        ],
    );
    assert!(read.get("reason").is_none(), "no reason on success: {read}");
    assert!(w.get("amount_out").is_none(), "spec 6.1: {w}");

    // Listed, and filtered by status.
    let list = s.get(&acme.live, "/v1/swaps?status=SETTLED").await.json();
    assert_eq!(list["total"], 1, "{list}");
    assert_eq!(list["swaps"][0]["id"], id.as_str());
    let none = s.get(&acme.live, "/v1/swaps?status=FAILED").await.json();
    assert_eq!(none["total"], 0);
    s.get(&acme.live, "/v1/swaps?status=COMPLETED")
        .await
        .expect(400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_write_nothing() {
    let s = start().await;
    let acme = s.tenant("Acme", "1000").await;
    let beta = s.tenant("Beta", "0").await;
    s.provision(&acme.live, A).await;
    s.fund_settled(&acme.live, A, "100").await;
    // Not a member.
    writes_nothing!(s, s.post(&beta.live, "/v1/swaps", &body("40")).await)
        .expect_err(403, "NOT_A_MEMBER");
    // More than the wallet holds.
    writes_nothing!(s, s.post(&acme.live, "/v1/swaps", &body("100.5")).await)
        .expect_err(422, "INSUFFICIENT_FUNDS");
    // The same token, too much slippage, a bad amount, an unknown field.
    let same =
        json!({"phone_number": A, "token_in": "USDC", "token_out": "USDC", "amount_in": "1"});
    let greedy = json!({"phone_number": A, "token_in": "USDC", "token_out": "USDT",
        "amount_in": "1", "max_slippage_bps": 5000});
    let bad = json!({"phone_number": A, "token_in": "USDC", "token_out": "USDT", "amount_in": "1.0000001"});
    let extra = json!({"phone_number": A, "token_in": "USDC", "token_out": "USDT", "amount_in": "1", "x": 1});
    for b in [same, greedy, bad, extra] {
        let r = writes_nothing!(s, s.post(&acme.live, "/v1/swaps", &b.to_string()).await);
        assert_eq!(r.status, 400, "{b}: {}", r.text());
    }
    // Sandbox keys are refused, not simulated.
    writes_nothing!(s, s.post(&acme.test, "/v1/swaps", &body("1")).await)
        .expect_err(403, "SANDBOX_UNSUPPORTED");
    // Another tenant cannot read a swap.
    let id = s.post(&acme.live, "/v1/swaps", &body("1")).await.json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    s.get(&beta.live, &format!("/v1/swaps/{id}"))
        .await
        .expect_err(404, "NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_venue_answers_503() {
    let mut c = test_config();
    c.swaps.venue = stablecoin_server::config::SwapVenueKind::Disabled;
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "1000").await;
    s.provision(&acme.live, A).await;
    s.fund_settled(&acme.live, A, "100").await;
    writes_nothing!(s, s.post(&acme.live, "/v1/swaps", &body("1")).await)
        .expect_err(503, "SWAPS_UNAVAILABLE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_beyond_the_treasury_float_is_refused_and_writes_nothing() {
    let mut c = test_config();
    c.swaps.float = Some("10".into());
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "1000").await;
    s.provision(&acme.live, A).await;
    s.fund_settled(&acme.live, A, "100").await;
    writes_nothing!(s, s.post(&acme.live, "/v1/swaps", &body("40")).await)
        .expect_err(422, "INSUFFICIENT_LIQUIDITY");
    s.post(&acme.live, "/v1/swaps", &body("5"))
        .await
        .expect(202);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_swap_reads_as_its_webhook_field_by_field() {
    let (s, acme, got) = swap_world().await;

    // The wallet's leg is accepted by the chain and reverts.
    let rail = RailId::Evm(s.app.config().primary_evm_chain().unwrap());
    s.app.sim_rail(rail).unwrap().inject(Fault::Revert);
    let r = s.post(&acme.live, "/v1/swaps", &body("40")).await;
    r.expect(202);
    let id = r.json()["id"].as_str().unwrap().to_string();
    // While in flight the read already names it as the webhooks do, and has no reason.
    let queued = s.get(&acme.live, &format!("/v1/swaps/{id}")).await.json();
    assert_eq!(queued["swap_id"], id.as_str(), "{queued}");
    assert!(queued.get("reason").is_none(), "{queued}");

    s.settle().await;
    s.app.state().webhooks.round().await.unwrap();
    let read = s.get(&acme.live, &format!("/v1/swaps/{id}")).await;
    read.expect(200);
    let read = read.json();
    assert_eq!(read["status"], "FAILED", "{read}");
    assert!(
        read["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{read}"
    );
    assert!(received(&got, "swap.settled").is_empty());
    let failed = received(&got, "swap.failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_read_carries_webhook(
        &failed[0],
        &read,
        &[
            "event",
            "swap_id",
            "status",
            "token_in",
            "token_out",
            "amount_in",
            "reason",
            "updated_at",
        ],
    );
    // Nothing moved: the hold is returned.
    let bal = s
        .get(
            &acme.live,
            &format!("/v1/users/balance?phone_number=%2B{}", &A[1..]),
        )
        .await
        .json();
    assert_eq!(bal["balance_usdc"], "100.000000", "{bal}");
    assert_eq!(bal["balance_usdt"], "0.000000", "{bal}");
}
