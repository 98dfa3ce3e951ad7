//! Every payments-family payload (spec 6.2) against a hand-written golden file: the flat
//! `payment.*` shape with its omission rules, the `event` + `data` envelope of the wallet
//! events, amounts as 6-decimal strings, `deposit_id` and `block_number` as integers,
//! `timestamp` as Unix seconds, and the `pending_<ts>_<address prefix>` placeholder hash.
//! Each payload also survives the outbox (what the delivery worker sends is the same
//! bytes) and parses back with the receiver kit.

use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_webhooks::PaymentsPayload;
use stablecoin_webhooks::delivery::render;
use stablecoin_webhooks::payments::{Deposit, Payment, WalletTransfer};
use stablecoin_webhooks::receiver::{PaymentsEvent, parse_payments};

const CREATED: Timestamp = Timestamp::from_secs(1_795_410_000); // 05:00:00Z
const DETECTED: Timestamp = Timestamp::from_secs(1_795_410_258); // 05:04:18Z
const NOW: Timestamp = Timestamp::from_secs(1_795_410_259);
const CONFIRMED: Timestamp = Timestamp::from_secs(1_795_410_300); // 05:05:00Z
const ADDRESS: &str = "0xe5379f28ac0404106d4cdb204a987f9429f2b566";
const HASH: &str = "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const CUSTOMER: &str = "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b";

fn golden(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/payments/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .trim_end()
        .to_string()
}

/// Same bytes directly, and after a round trip through the outbox and the worker's
/// renderer; and the receiver kit parses it to the expected variant.
fn check(name: &str, payload: PaymentsPayload) -> PaymentsEvent {
    let body = String::from_utf8(payload.to_body().unwrap()).unwrap();
    assert_eq!(body, golden(name), "{name}");
    assert_eq!(payload.event_type(), name);
    let outbox = payload.to_outbox("evt_1", "ten_1", NOW).unwrap();
    assert_eq!(outbox.event_type, name);
    assert_eq!(
        render(name, &outbox.payload).unwrap(),
        body,
        "{name} via outbox"
    );
    parse_payments(body.as_bytes()).unwrap()
}

fn payment() -> Payment {
    Payment {
        session_id: "cs_01M83CMTGWWC1YF2WCE6WEYC20".into(),
        reference: "ORDER-1042".into(),
        amount: Micros(150_000_000),
        currency: "USDC".into(),
        payment_method: "crypto".into(),
        network: Some("polygon".into()),
        tx_hash: Some(HASH.into()),
        created_at: CREATED,
        metadata: Some(
            serde_json::json!({"order_id": "1042"})
                .as_object()
                .unwrap()
                .clone(),
        ),
    }
}

#[test]
fn payment_events_are_flat_and_omit_what_does_not_apply() {
    let PaymentsEvent::Payment(p) = check("payment.confirmed", payment().confirmed(DETECTED, NOW))
    else {
        panic!("payment.confirmed parsed as something else")
    };
    assert_eq!(p.status.as_deref(), Some("paid"));
    assert_eq!(p.timestamp, Some(NOW.unix_secs()));

    // A failed session: no network, hash, metadata (empty) or paid_at.
    let failed = Payment {
        network: None,
        tx_hash: Some(String::new()),
        metadata: Some(serde_json::Map::new()),
        ..payment()
    };
    let body = String::from_utf8(failed.failed(NOW).to_body().unwrap()).unwrap();
    assert!(!body.contains("null"), "{body}");
    check("payment.failed", failed.failed(NOW));
}

#[test]
fn deposit_events_use_the_envelope_and_a_placeholder_hash_until_resolved() {
    let deposit = Deposit {
        customer_id: CUSTOMER.into(),
        deposit_id: 42,
        address: ADDRESS.into(),
        network: "polygon".into(),
        currency: "USDC".into(),
        amount: Micros(10_500_000),
        tx_hash: None,
        confirmations: 1,
        detected_at: DETECTED,
        detected_by: "scanner-polygon-1".into(),
    };
    assert_eq!(deposit.placeholder_hash(), "pending_1795410258_0xe5379f");
    let PaymentsEvent::DepositDetected(d) = check("wallet.deposit.detected", deposit.detected())
    else {
        panic!("detected")
    };
    assert_eq!((d.deposit_id, d.hash_pending), (Some(42), Some(true)));
    let PaymentsEvent::DepositConfirmed(d) = check(
        "wallet.deposit.confirmed",
        deposit.confirmed(12, true, CONFIRMED),
    ) else {
        panic!("confirmed")
    };
    assert_eq!(d.safe_to_credit, Some(true));
    assert_eq!(d.amount.as_deref(), Some("10.500000"));
    let PaymentsEvent::DepositHashResolved(d) =
        check("wallet.deposit.hash_resolved", deposit.hash_resolved(HASH))
    else {
        panic!("hash_resolved")
    };
    // Backfills the hash only: no amount, no currency.
    assert_eq!((d.amount, d.currency), (None, None));
    assert_eq!(d.tx_hash.as_deref(), Some(HASH));
}

#[test]
fn wallet_transfer_events_carry_string_amounts_and_an_integer_block() {
    let transfer = WalletTransfer {
        tx_hash: "0x5e1d3a2b7c9f0e4d6a8b1c3e5f7a9b0c2d4e6f8a1b3c5d7e9f0a2b4c6d8e0f1a".into(),
        customer_id: CUSTOMER.into(),
        network: "polygon".into(),
        currency: "USDT".into(),
        from_address: ADDRESS.into(),
        to_address: "0x8ba1f109551bd432803012645ac136ddd64dba72".into(),
        amount: Micros(25_000_000),
        gas_fee: Micros(0),
        block_number: Some(64_123_456),
    };
    let PaymentsEvent::WalletTransfer { event, data } = check(
        "wallet.transfer.confirmed",
        transfer.event("confirmed", Some(DETECTED)),
    ) else {
        panic!("wallet.transfer.confirmed")
    };
    assert_eq!(event, "wallet.transfer.confirmed");
    assert_eq!(data.block_number, Some(64_123_456));
}

#[test]
fn the_sending_side_refuses_what_is_not_a_payments_event() {
    for bad in [
        serde_json::json!({"event": "transfer.settled", "data": {"customer_id": "c"}}),
        serde_json::json!({"event": "wallet.deposit.detected"}),
        serde_json::json!({"data": {}}),
        serde_json::json!({"event": "wallet.deposit.detected", "data": {"deposit_id": 1}}),
    ] {
        assert!(PaymentsPayload::from_value(&bad).is_err(), "{bad}");
    }
}
