//! The webhook events no other test captures, each received over real HTTP by a receiver
//! on another loopback port and compared with the spec's field list (spec 6.1, 6.2):
//! `transfer.received` (to every member tenant of the receiving wallet, for a P2P
//! transfer and for an outside deposit the scanner finds on the simulated chain; never
//! for an unaffiliated phone, which gets the "you received money" SMS at the fake SMS
//! gateway instead, in its country's words, and is then ADOPTED over HTTP),
//! `transfer.failed` (before and after broadcast), `user.linked`, `user.phone_changed`,
//! `payment.failed` and `wallet.deposit.hash_resolved`.

use crate::common::webhook_receiver::{Received, recording_receiver};
use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{ChainAddress, RailId};
use stablecoin_providers::testkit::FakeAfricasTalking;
use stablecoin_rails::sim::Fault;
use stablecoin_server::config::{Secret, SmsSettings};
use stablecoin_webhooks::Family;

const A: &str = "+2250700000501";
const B: &str = "+2250700000502";
const B2: &str = "+2250700000503";
/// Never provisioned: a phone no tenant serves, in Côte d'Ivoire (configured text).
const C: &str = "+2250700000504";
/// Never provisioned, in Senegal: the built-in default text of an XOF market (French).
const K: &str = "+221770000505";

/// The wallet-family events a receiver subscribes to here.
const WALLET_EVENTS: [&str; 5] = [
    "transfer.received",
    "transfer.settled",
    "transfer.failed",
    "user.linked",
    "user.phone_changed",
];

/// Registers a receiver for `events` of `family` with `key`'s tenant; its secret and
/// what it receives.
async fn subscribe(s: &Server, key: &str, family: &str, events: &[&str]) -> (String, Received) {
    let (url, got) = recording_receiver().await;
    let r = s
        .post(
            key,
            "/v1/webhook-endpoints",
            &json!({"family": family, "url": url, "events": events}).to_string(),
        )
        .await;
    r.expect(201);
    (r.json()["secret"].as_str().unwrap().to_string(), got)
}

/// The wallet-family bodies `got` received, each signature checked, of event `name`.
fn wallet_events(got: &Received, secret: &str, name: &str) -> Vec<Value> {
    got.lock()
        .unwrap()
        .iter()
        .map(|(headers, body)| {
            let sig = headers["x-svc-signature"].to_str().unwrap();
            assert_eq!(Family::Wallet.verify(secret, body, Some(sig)), Ok(()));
            assert_eq!(headers["user-agent"], "Svc-CaaS-Webhooks/1.0");
            serde_json::from_slice::<Value>(body).unwrap()
        })
        .filter(|v| v["event"] == name)
        .collect()
}

/// `v` has exactly the fields `want` (spec 6.1's table row, or 6.2's list).
#[track_caller]
fn assert_fields(v: &Value, want: &[&str]) {
    let mut got: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    let mut want = want.to_vec();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want, "field set of {v}");
}

/// An RFC 3339 UTC timestamp.
#[track_caller]
fn assert_utc(v: &Value) {
    let t = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    assert!(
        t.ends_with('Z') && Timestamp::parse_rfc3339(t).is_some(),
        "{t}"
    );
}

const RECEIVED_FIELDS: [&str; 7] = [
    "event",
    "transfer_id",
    "recipient_wallet",
    "amount_usdc",
    "token",
    "tx_hash",
    "settled_at",
];

/// Sends `amount` USDC from `from` to `to` with `key`; the accepted answer.
async fn send(s: &Server, key: &str, from: &str, to: &str, amount: &str) -> Value {
    let r = s
        .post(
            key,
            "/v1/transfers/send",
            &json!({"from_phone_number": from, "to_phone_number": to, "token": "USDC",
                "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")})
            .to_string(),
        )
        .await;
    r.expect(202);
    r.json()
}

/// Settles everything in flight on the simulated chain, then runs one webhook round.
async fn settle_and_deliver(s: &Server) {
    let chain = s.app.sim_rail(RailId::Evm(137)).unwrap();
    for _ in 0..6 {
        s.settle().await;
        chain.mine(1);
    }
    s.settle().await;
    s.app.state().webhooks.round().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wallet_events_reach_every_member_with_the_spec_fields_and_unaffiliated_phones_get_an_sms()
{
    let fake = FakeAfricasTalking::start("sandbox", "at-key")
        .await
        .unwrap();
    let mut c = test_config();
    c.webhooks_allow_loopback_http = true;
    c.sms = SmsSettings::AfricasTalking {
        base_url: fake.base_url().into(),
        username: "sandbox".into(),
        api_key: Secret::new("at-key"),
        from: None,
        timeout_ms: 2_000,
    };
    // Côte d'Ivoire configured; Senegal left to the built-in default table.
    c.notices.ussd_instructions.insert(
        "225".into(),
        "Composez le *133# pour voir votre solde.".into(),
    );
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "1000").await;
    let beta = s.tenant("Beta", "0").await;
    let gamma = s.tenant("Gamma", "0").await;
    let (acme_secret, acme_got) = subscribe(&s, &acme.live, "wallet", &WALLET_EVENTS).await;
    let (beta_secret, beta_got) = subscribe(&s, &beta.live, "wallet", &WALLET_EVENTS).await;
    let (gamma_secret, gamma_got) = subscribe(&s, &gamma.live, "wallet", &WALLET_EVENTS).await;

    s.provision(&acme.live, A).await;
    s.fund_settled(&acme.live, A, "100").await;
    let pb = s.provision(&beta.live, B).await;
    let addr_b = pb["address"].as_str().unwrap().to_string();

    // user.linked: Gamma joins B with the code the gateway carried; Beta (the existing
    // member) is told, Gamma and Acme are not.
    s.post(
        &gamma.live,
        "/v1/users/link/request",
        &json!({"phone_number": B}).to_string(),
    )
    .await
    .expect(200);
    let code = fake
        .last_code_to(B)
        .expect("the link code reached the gateway");
    s.post(
        &gamma.live,
        "/v1/users/link/confirm",
        &json!({"phone_number": B, "code": code}).to_string(),
    )
    .await
    .expect(200);
    s.app.state().webhooks.round().await.unwrap();
    let linked = wallet_events(&beta_got, &beta_secret, "user.linked");
    assert_eq!(linked.len(), 1, "{linked:?}");
    assert_fields(
        &linked[0],
        &["event", "wallet_address", "new_merchant_id", "linked_at"],
    );
    assert_eq!(linked[0]["wallet_address"], addr_b.as_str());
    assert_eq!(linked[0]["new_merchant_id"], gamma.id.0.as_str());
    assert_utc(&linked[0]["linked_at"]);
    assert!(wallet_events(&gamma_got, &gamma_secret, "user.linked").is_empty());
    assert!(wallet_events(&acme_got, &acme_secret, "user.linked").is_empty());

    // transfer.received for a P2P transfer: to both members of B, not to the sender.
    let sent = send(&s, &acme.live, A, B, "10").await;
    let tr = sent["id"].as_str().unwrap().to_string();
    settle_and_deliver(&s).await;
    let read = s
        .get(&acme.live, &format!("/v1/transfers/{tr}"))
        .await
        .json();
    assert_eq!(read["status"], "SETTLED", "{read}");
    for (secret, got) in [(&beta_secret, &beta_got), (&gamma_secret, &gamma_got)] {
        let rx = wallet_events(got, secret, "transfer.received");
        assert_eq!(rx.len(), 1, "{rx:?}");
        assert_fields(&rx[0], &RECEIVED_FIELDS);
        assert_eq!(rx[0]["transfer_id"], tr.as_str());
        assert_eq!(rx[0]["recipient_wallet"], addr_b.as_str());
        assert_eq!(rx[0]["amount_usdc"], sent["recipient_amount"]);
        assert_eq!(rx[0]["token"], "USDC");
        assert_eq!(rx[0]["tx_hash"], read["tx_hash"]);
        assert_utc(&rx[0]["settled_at"]);
    }
    assert!(wallet_events(&acme_got, &acme_secret, "transfer.received").is_empty());

    // transfer.received for an outside deposit the scanner finds: to both members.
    let chain = s.app.sim_rail(RailId::Evm(137)).unwrap();
    let tx = chain
        .mint(&ChainAddress(addr_b.clone()), Token::Usdc, m("7.5"))
        .unwrap();
    settle_and_deliver(&s).await;
    for (secret, got) in [(&beta_secret, &beta_got), (&gamma_secret, &gamma_got)] {
        let rx = wallet_events(got, secret, "transfer.received");
        let dep: Vec<&Value> = rx.iter().filter(|v| v["tx_hash"] == tx.as_str()).collect();
        assert_eq!(dep.len(), 1, "{rx:?}");
        assert_fields(dep[0], &RECEIVED_FIELDS);
        assert!(
            dep[0]["transfer_id"]
                .as_str()
                .unwrap()
                .starts_with("dep_polygon_"),
            "{}",
            dep[0]
        );
        assert_eq!(dep[0]["amount_usdc"], "7.500000");
        assert_eq!(dep[0]["recipient_wallet"], addr_b.as_str());
    }

    // An unaffiliated phone: no transfer.received to anyone; the SMS reaches the gateway
    // with the instructions of the recipient's country.
    let to_c = send(&s, &acme.live, A, C, "5").await;
    let to_k = send(&s, &acme.live, A, K, "4").await;
    settle_and_deliver(&s).await;
    for (secret, got) in [
        (&acme_secret, &acme_got),
        (&beta_secret, &beta_got),
        (&gamma_secret, &gamma_got),
    ] {
        let rx = wallet_events(got, secret, "transfer.received");
        assert!(
            rx.iter()
                .all(|v| v["transfer_id"] != to_c["id"] && v["transfer_id"] != to_k["id"]),
            "{rx:?}"
        );
        assert_eq!(rx.len(), if secret == &acme_secret { 0 } else { 2 });
    }
    let texts = |to: &str| -> Vec<String> {
        fake.sent()
            .into_iter()
            .filter(|m| m.to == to)
            .map(|m| m.text)
            .collect()
    };
    assert_eq!(
        texts(C),
        vec![format!(
            "You received {} USDC. Composez le *133# pour voir votre solde.",
            to_c["recipient_amount"].as_str().unwrap()
        )]
    );
    let k = texts(K);
    assert_eq!(k.len(), 1, "{k:?}");
    assert_eq!(
        k[0],
        format!(
            "You received {} USDC. {}",
            to_k["recipient_amount"].as_str().unwrap(),
            stablecoin_server::config::default_ussd_instructions()["221"]
        )
    );
    assert!(k[0].contains("Composez le *144#"), "{}", k[0]);

    // ADOPTED over HTTP: Beta provisions C; the money is there; the next transfer to C
    // is a transfer.received for Beta, and no second SMS.
    let adopted = s.provision(&beta.live, C).await;
    assert_eq!(adopted["outcome"], "ADOPTED", "{adopted}");
    let bal = s
        .get(
            &beta.live,
            &format!("/v1/users/balance?phone_number=%2B{}", &C[1..]),
        )
        .await;
    bal.expect(200);
    assert_eq!(bal.json()["balance_usdc"], to_c["recipient_amount"]);
    let again = send(&s, &acme.live, A, C, "2").await;
    settle_and_deliver(&s).await;
    let rx = wallet_events(&beta_got, &beta_secret, "transfer.received");
    assert!(rx.iter().any(|v| v["transfer_id"] == again["id"]), "{rx:?}");
    assert_eq!(texts(C).len(), 1, "a member's wallet gets no SMS");

    // user.phone_changed: Beta moves B to B2; every member is told, the address stays.
    s.post(
        &beta.live,
        "/v1/users/phone-change/request",
        &json!({"phone_number": B, "new_phone_number": B2}).to_string(),
    )
    .await
    .expect(200);
    let code = fake
        .last_code_to(B2)
        .expect("the code went to the new number");
    s.post(
        &beta.live,
        "/v1/users/phone-change/confirm",
        &json!({"phone_number": B, "code": code}).to_string(),
    )
    .await
    .expect(200);
    s.app.state().webhooks.round().await.unwrap();
    for (secret, got) in [(&beta_secret, &beta_got), (&gamma_secret, &gamma_got)] {
        let changed = wallet_events(got, secret, "user.phone_changed");
        assert_eq!(changed.len(), 1, "{changed:?}");
        assert_fields(
            &changed[0],
            &[
                "event",
                "wallet_address",
                "changed_by_merchant_id",
                "changed_at",
            ],
        );
        assert_eq!(changed[0]["wallet_address"], addr_b.as_str());
        assert_eq!(changed[0]["changed_by_merchant_id"], beta.id.0.as_str());
        assert_utc(&changed[0]["changed_at"]);
    }
    assert!(wallet_events(&acme_got, &acme_secret, "user.phone_changed").is_empty());

    // transfer.failed, to the initiating tenant only. Refused by the node (nothing
    // broadcast): the spec's fields exactly, amount, token and tx_hash absent.
    let rail = s.app.sim_rail(RailId::Evm(137)).unwrap();
    rail.inject(Fault::Reject);
    let refused = send(&s, &acme.live, A, B2, "3").await;
    settle_and_deliver(&s).await;
    // Reverted on chain (broadcast): the spec's fields and, known, amount, token, tx_hash.
    rail.inject(Fault::Revert);
    let reverted = send(&s, &acme.live, A, B2, "3").await;
    settle_and_deliver(&s).await;
    let failed = wallet_events(&acme_got, &acme_secret, "transfer.failed");
    assert_eq!(failed.len(), 2, "{failed:?}");
    let of = |id: &Value| failed.iter().find(|v| &v["transfer_id"] == id).unwrap();
    let pre = of(&refused["id"]);
    assert_fields(
        pre,
        &["event", "transfer_id", "status", "reason", "updated_at"],
    );
    let post = of(&reverted["id"]);
    assert_fields(
        post,
        &[
            "event",
            "transfer_id",
            "status",
            "reason",
            "updated_at",
            "amount_usdc",
            "token",
            "tx_hash",
        ],
    );
    for f in [pre, post] {
        assert_eq!(f["status"], "FAILED");
        assert!(f["reason"].as_str().is_some_and(|r| !r.is_empty()), "{f}");
        assert_utc(&f["updated_at"]);
        let read = s
            .get(
                &acme.live,
                &format!("/v1/transfers/{}", f["transfer_id"].as_str().unwrap()),
            )
            .await
            .json();
        assert_eq!(read["status"], "FAILED", "{read}");
    }
    assert_eq!(post["token"], "USDC");
    for (secret, got) in [(&beta_secret, &beta_got), (&gamma_secret, &gamma_got)] {
        assert!(wallet_events(got, secret, "transfer.failed").is_empty());
    }
}

/// The deposit intake's shared secret (at least 32 characters).
const INTAKE_SECRET: &str = "whsec_intake-0123456789abcdef-0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payment_failed_and_hash_resolved_reach_the_payments_receiver_with_the_spec_fields() {
    let mut c = test_config();
    c.webhooks_allow_loopback_http = true;
    c.checkout.intake_secret = Some(INTAKE_SECRET.into());
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "0").await;
    let (secret, got) = subscribe(
        &s,
        &acme.live,
        "payments",
        &["payment.failed", "wallet.deposit.hash_resolved"],
    )
    .await;
    let session = |reference: &str| {
        json!({"amount": "10", "currency": "USDC", "reference": reference,
            "networks": ["polygon"], "expires_in_secs": 600, "metadata": {"cart": "c-1"}})
        .to_string()
    };

    // payment.failed: a cancelled session.
    let r = s
        .post(
            &acme.business_live,
            "/api/v1/checkout/sessions",
            &session("order-1"),
        )
        .await;
    r.expect(201);
    let cancelled = r.json()["session_id"].as_str().unwrap().to_string();
    s.post(
        &acme.business_live,
        &format!("/api/v1/checkout/sessions/{cancelled}/cancel"),
        "{}",
    )
    .await
    .expect(200);

    // hash_resolved: a deposit reported with a pending hash, then its real hash.
    let r = s
        .post(
            &acme.business_live,
            "/api/v1/checkout/sessions",
            &session("order-2"),
        )
        .await;
    r.expect(201);
    let paid_into = r.json()["session_id"].as_str().unwrap().to_string();
    let address = r.json()["payment_options"][0]["address"]
        .as_str()
        .unwrap()
        .to_string();
    let intake = |body: Value| {
        let body = body.to_string();
        let sig = hex_hmac(INTAKE_SECRET, body.as_bytes());
        let s = &s;
        async move {
            let r = s
                .send(
                    reqwest::Method::POST,
                    "/v1/scanner/deposit-events",
                    None,
                    Some(&body),
                    &[("x-webhook-signature", sig.as_str())],
                )
                .await;
            r.expect(200);
            r.json()["message"].as_str().unwrap().to_string()
        }
    };
    let detected = json!({"event": "wallet.deposit.detected", "data": {
        "customer_id": "c-7", "deposit_id": 7701, "address": address, "network": "polygon",
        "currency": "USDC", "amount": "10.000000", "tx_hash": "pending_1_0xabc",
        "hash_pending": true, "confirmations": 0, "status": "detected"}});
    assert_eq!(intake(detected).await, "recorded_pending");
    let resolved = json!({"event": "wallet.deposit.hash_resolved", "data": {
        "customer_id": "c-7", "deposit_id": 7701, "tx_hash": "0xfeed"}});
    assert_eq!(intake(resolved).await, "hash_backfilled");

    s.app.state().webhooks.round().await.unwrap();
    let received: Vec<(String, Value)> = got
        .lock()
        .unwrap()
        .iter()
        .map(|(headers, body)| {
            let sig = headers["x-webhook-signature"].to_str().unwrap();
            Family::Payments.verify(&secret, body, Some(sig)).unwrap();
            assert!(headers.get("x-webhook-id").is_some());
            let name = headers["x-webhook-event"].to_str().unwrap().to_string();
            (name, serde_json::from_slice(body).unwrap())
        })
        .collect();
    let of = |name: &str| -> Vec<&Value> {
        received
            .iter()
            .filter(|(n, v)| n == name && v["event"] == name)
            .map(|(_, v)| v)
            .collect()
    };

    // Flat; nothing paid, so no network, tx_hash or paid_at; the session's metadata.
    let failed = of("payment.failed");
    assert_eq!(failed.len(), 1, "{received:?}");
    let f = failed[0];
    assert_fields(
        f,
        &[
            "event",
            "session_id",
            "reference",
            "amount",
            "currency",
            "status",
            "payment_method",
            "created_at",
            "metadata",
            "timestamp",
        ],
    );
    assert_eq!(f["session_id"], cancelled.as_str());
    assert_eq!(f["reference"], "order-1");
    assert_eq!(f["amount"], "10.000000");
    assert_eq!(f["currency"], "USDC");
    assert_eq!(f["status"], "failed");
    assert_eq!(f["metadata"], json!({"cart": "c-1"}));
    assert!(f["timestamp"].is_u64(), "{f}");

    // Envelope; the hash only: no amount, no currency.
    let hr = of("wallet.deposit.hash_resolved");
    assert_eq!(hr.len(), 1, "{received:?}");
    assert_fields(hr[0], &["event", "data"]);
    assert_fields(
        &hr[0]["data"],
        &["customer_id", "deposit_id", "tx_hash", "detected_at"],
    );
    // The business gave the session no customer id: the session's id stands for it.
    assert_eq!(hr[0]["data"]["customer_id"], paid_into.as_str());
    assert_eq!(hr[0]["data"]["deposit_id"], 7701);
    assert_eq!(hr[0]["data"]["tx_hash"], "0xfeed");
    assert_utc(&hr[0]["data"]["detected_at"]);
}
