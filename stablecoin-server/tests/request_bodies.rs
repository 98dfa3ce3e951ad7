//! Every request body refuses a field it does not know with `400 UNKNOWN_FIELD`
//! (API-CONVENTIONS "Requests and responses": a typo must never silently drop a
//! parameter), names it in `param`, and writes nothing. One test per body, each sending
//! an otherwise valid body plus one stray field; and a check that this list covers every
//! operation of the OpenAPI document that takes a body.

use crate::common::*;
use reqwest::Method;
use serde_json::Value;
use std::collections::BTreeSet;

const PHONE: &str = r#""phone_number":"+2250700000001""#;
const SEND: &str = r#""from_phone_number":"+2250700000001","to_phone_number":"+2250700000002","token":"USDT","quote_id":"DIRECT_CRYPTO:USDT:1""#;
const ESCROW_ID: &str = "esc_01JD0000000000000000000000";
const SESSION_ID: &str = "cs_01JD0000000000000000000000";

/// (operation as the document names it, concrete path, a valid body's fields).
const BODIES: &[(&str, &str, &str)] = &[
    (
        "POST /v1/account/test-mode",
        "/v1/account/test-mode",
        r#""enabled":false"#,
    ),
    ("POST /v1/users/provision", "/v1/users/provision", PHONE),
    (
        "POST /v1/users/fund",
        "/v1/users/fund",
        r#""phone_number":"+2250700000001","token":"USDC","amount":"1""#,
    ),
    (
        "POST /v1/users/withdraw",
        "/v1/users/withdraw",
        r#""phone_number":"+2250700000001","token":"USDC","amount":"1","payout_currency":"XOF""#,
    ),
    (
        "POST /v1/users/link/request",
        "/v1/users/link/request",
        PHONE,
    ),
    (
        "POST /api/v1/pay/{session_id}/phone-payment/code",
        "/api/v1/pay/{session_id}/phone-payment/code",
        r#""phone_number":"+2250700000001""#,
    ),
    (
        "POST /api/v1/pay/{session_id}/phone-payment/confirm",
        "/api/v1/pay/{session_id}/phone-payment/confirm",
        r#""phone_number":"+2250700000001","code":"123456""#,
    ),
    (
        "POST /v1/users/link/confirm",
        "/v1/users/link/confirm",
        r#""phone_number":"+2250700000001","code":"123456""#,
    ),
    (
        "POST /v1/users/phone-change/request",
        "/v1/users/phone-change/request",
        r#""phone_number":"+2250700000001","new_phone_number":"+2250700000099""#,
    ),
    (
        "POST /v1/users/phone-change/confirm",
        "/v1/users/phone-change/confirm",
        r#""phone_number":"+2250700000001","code":"123456""#,
    ),
    ("POST /v1/transfers/send", "/v1/transfers/send", SEND),
    (
        "POST /v1/swaps",
        "/v1/swaps",
        r#""phone_number":"+2250700000001","token_in":"USDC","token_out":"USDT","amount_in":"1""#,
    ),
    (
        "POST /v1/tron/transfers/send",
        "/v1/tron/transfers/send",
        SEND,
    ),
    (
        "POST /v1/tron/users/withdraw",
        "/v1/tron/users/withdraw",
        r#""phone_number":"+2250700000001","token":"USDT","amount":"1","payout_currency":"XOF""#,
    ),
    (
        "POST /v1/solana/transfers/send",
        "/v1/solana/transfers/send",
        SEND,
    ),
    (
        "POST /api/v1/fx/quote",
        "/api/v1/fx/quote",
        r#""fiat_amount":6000,"local_currency":"XOF","target_token":"USDC""#,
    ),
    (
        "POST /v1/tron/users/provision",
        "/v1/tron/users/provision",
        PHONE,
    ),
    (
        "POST /v1/solana/users/provision",
        "/v1/solana/users/provision",
        PHONE,
    ),
    (
        "POST /v1/escrows",
        "/v1/escrows",
        r#""buyer_phone_number":"+2250700000001","seller_phone_number":"+2250700000002","amount":"150","reference":"order-1""#,
    ),
    (
        "POST /v1/escrows/{id}/release",
        "/v1/escrows/{id}/release",
        r#""on_behalf_of":"BUYER""#,
    ),
    (
        "POST /v1/escrows/{id}/refund",
        "/v1/escrows/{id}/refund",
        r#""on_behalf_of":"SELLER""#,
    ),
    (
        "POST /v1/escrows/{id}/dispute",
        "/v1/escrows/{id}/dispute",
        r#""reason":"not delivered""#,
    ),
    (
        "POST /v1/escrows/{id}/cancel",
        "/v1/escrows/{id}/cancel",
        r#""reason":"changed my mind""#,
    ),
    (
        "POST /v1/webhook-endpoints",
        "/v1/webhook-endpoints",
        r#""url":"https://example.com/hook","events":["transfer.settled"]"#,
    ),
    (
        "POST /v1/webhook-events/replay-failed",
        "/v1/webhook-events/replay-failed",
        r#""from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z""#,
    ),
    (
        "POST /api/v1/checkout/sessions",
        "/api/v1/checkout/sessions",
        r#""amount":"1","currency":"USDC""#,
    ),
    (
        "POST /api/v1/checkout/sessions/{session_id}/simulate-payment",
        "/api/v1/checkout/sessions/{session_id}/simulate-payment",
        r#""confirmed":true"#,
    ),
    (
        "POST /api/v1/checkout/sessions/{session_id}/refunds",
        "/api/v1/checkout/sessions/{session_id}/refunds",
        r#""amount":"1","token":"USDC","reason":"r""#,
    ),
    ("POST /v1/businesses", "/v1/businesses", r#""name":"Shop""#),
    (
        "POST /v1/businesses/{id}/auto-refunds",
        "/v1/businesses/{id}/auto-refunds",
        r#""enabled":true"#,
    ),
    (
        "POST /api/v1/payment-links",
        "/api/v1/payment-links",
        r#""amount":"1","currency":"USDC""#,
    ),
    (
        "POST /v1/treasury/topups",
        "/v1/treasury/topups",
        r#""currency_code":"XOF","fiat_amount":6000,"token":"USDC""#,
    ),
    (
        "POST /admin/v1/topups/{id}/confirm",
        "/admin/v1/topups/{id}/confirm",
        r#""fiat_reference":"BANK-1","note":"n""#,
    ),
    (
        "POST /admin/v1/escrows/{id}/resolve",
        "/admin/v1/escrows/{id}/resolve",
        r#""resolution":"REFUND","resolution_note":"n""#,
    ),
    (
        "POST /admin/v1/escrows/{id}/recoveries",
        "/admin/v1/escrows/{id}/recoveries",
        r#""kind":"EXCESS","token":"USDT","note":"n""#,
    ),
    (
        "POST /admin/v1/withdrawals/{id}/payout/resolve",
        "/admin/v1/withdrawals/{id}/payout/resolve",
        r#""outcome":"refunded","reason":"n""#,
    ),
    (
        "POST /admin/v1/payouts/reconciliation",
        "/admin/v1/payouts/reconciliation",
        r#""provider":"mpesa","tenant":"ten_x","from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z","report":"Receipt No.,Completion Time,Transaction Status,Withdrawn""#,
    ),
    (
        "POST /v1/policies",
        "/v1/policies",
        r#""max_per_transaction":"10""#,
    ),
    (
        "POST /v1/policies/{id}",
        "/v1/policies/{id}",
        r#""max_per_transaction":"10""#,
    ),
    (
        "POST /v1/policies/evaluate",
        "/v1/policies/evaluate",
        r#""operation":"withdrawal","phone_number":"+2250700000001","token":"USDC","amount":"1""#,
    ),
    (
        "POST /v1/address-book",
        "/v1/address-book",
        r#""value":"+2250700000001","label":"Own""#,
    ),
    (
        "POST /admin/v1/stray-deposits/{id}/return",
        "/admin/v1/stray-deposits/{id}/return",
        r#""reason":"sender confirmed by e-mail""#,
    ),
    (
        "POST /admin/v1/quarantined-deposits/{id}/release",
        "/admin/v1/quarantined-deposits/{id}/release",
        r#""reason":"false positive""#,
    ),
    (
        "POST /admin/v1/quarantined-deposits/{id}/return",
        "/admin/v1/quarantined-deposits/{id}/return",
        r#""reason":"sender confirmed by e-mail""#,
    ),
    (
        "POST /admin/v1/tenants/{id}/sponsorship-budgets",
        "/admin/v1/tenants/{id}/sponsorship-budgets",
        r#""rail":"polygon","daily":{"native":"1000"}"#,
    ),
];

/// The staff routes' bearer token in these tests.
const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";
const TOPUP_ID: &str = "tu_01JD0000000000000000000000";

/// Sends the body of `operation` with one stray field and checks the refusal.
async fn refuses_a_stray_field(operation: &str) {
    let (_, path, fields) = BODIES
        .iter()
        .find(|(op, _, _)| *op == operation)
        .unwrap_or_else(|| panic!("{operation} is not in BODIES"));
    // Staff routes take the admin token (a server with one), not an API key.
    let admin = path.starts_with("/admin/");
    let s = if admin {
        let mut c = test_config();
        c.admin.token = Some(stablecoin_server::config::Secret::new(ADMIN_TOKEN));
        start_with(c).await
    } else {
        start().await
    };
    let t = s.tenant("Acme", "100").await;
    let path = path
        .replace("{id}", if admin { TOPUP_ID } else { ESCROW_ID })
        .replace("{session_id}", SESSION_ID);
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let post = |body: String| {
        let (s, path, key, bearer) = (&s, &path, &t, &bearer);
        async move {
            if admin {
                s.send(
                    Method::POST,
                    path,
                    None,
                    Some(&body),
                    &[("Authorization", bearer.as_str())],
                )
                .await
            } else if path.starts_with("/api/v1/checkout/")
                || path.starts_with("/api/v1/payment-links")
            {
                s.post(&key.business_test, path, &body).await
            } else {
                s.post(&key.live, path, &body).await
            }
        }
    };
    // Checkout session routes take a business key (the test one: it may simulate).
    // The valid body passes decoding (whatever the engine then says of it) ...
    let ok = post(format!("{{{fields}}}")).await;
    assert!(
        !(ok.status == 400 && ok.code() == "UNKNOWN_FIELD"),
        "{operation}: {}",
        ok.text()
    );
    // ... and the same body with a stray field does not.
    let commits = s.commits();
    for (stray, body) in [
        ("amout", format!(r#"{{{fields},"amout":"5"}}"#)),
        (
            "idempotency_key",
            format!(r#"{{"idempotency_key":"k",{fields}}}"#),
        ),
    ] {
        let r = post(body).await;
        r.expect_err(400, "UNKNOWN_FIELD");
        assert_eq!(r.param().as_deref(), Some(stray), "{operation}");
    }
    assert_eq!(
        s.commits(),
        commits,
        "{operation}: a refused body writes nothing"
    );
}

macro_rules! body_tests {
    ($($name:ident => $op:literal,)*) => {
        $(
            #[tokio::test]
            async fn $name() {
                refuses_a_stray_field($op).await;
            }
        )*
        /// The operations the tests above cover.
        const TESTED: &[&str] = &[$($op),*];
    };
}

body_tests! {
    account_test_mode_refuses_unknown_fields => "POST /v1/account/test-mode",
    provision_refuses_unknown_fields => "POST /v1/users/provision",
    fund_refuses_unknown_fields => "POST /v1/users/fund",
    withdraw_refuses_unknown_fields => "POST /v1/users/withdraw",
    link_request_refuses_unknown_fields => "POST /v1/users/link/request",
    link_confirm_refuses_unknown_fields => "POST /v1/users/link/confirm",
    phone_payment_code_refuses_unknown_fields => "POST /api/v1/pay/{session_id}/phone-payment/code",
    phone_payment_confirm_refuses_unknown_fields => "POST /api/v1/pay/{session_id}/phone-payment/confirm",
    phone_change_request_refuses_unknown_fields => "POST /v1/users/phone-change/request",
    phone_change_confirm_refuses_unknown_fields => "POST /v1/users/phone-change/confirm",
    send_refuses_unknown_fields => "POST /v1/transfers/send",
    swap_refuses_unknown_fields => "POST /v1/swaps",
    tron_send_refuses_unknown_fields => "POST /v1/tron/transfers/send",
    tron_withdraw_refuses_unknown_fields => "POST /v1/tron/users/withdraw",
    solana_send_refuses_unknown_fields => "POST /v1/solana/transfers/send",
    fx_quote_refuses_unknown_fields => "POST /api/v1/fx/quote",
    tron_provision_refuses_unknown_fields => "POST /v1/tron/users/provision",
    solana_provision_refuses_unknown_fields => "POST /v1/solana/users/provision",
    escrow_create_refuses_unknown_fields => "POST /v1/escrows",
    escrow_release_refuses_unknown_fields => "POST /v1/escrows/{id}/release",
    escrow_refund_refuses_unknown_fields => "POST /v1/escrows/{id}/refund",
    escrow_dispute_refuses_unknown_fields => "POST /v1/escrows/{id}/dispute",
    escrow_cancel_refuses_unknown_fields => "POST /v1/escrows/{id}/cancel",
    webhook_endpoint_create_refuses_unknown_fields => "POST /v1/webhook-endpoints",
    webhook_replay_failed_refuses_unknown_fields => "POST /v1/webhook-events/replay-failed",
    checkout_session_create_refuses_unknown_fields => "POST /api/v1/checkout/sessions",
    checkout_simulate_refuses_unknown_fields => "POST /api/v1/checkout/sessions/{session_id}/simulate-payment",
    checkout_refund_refuses_unknown_fields => "POST /api/v1/checkout/sessions/{session_id}/refunds",
    business_create_refuses_unknown_fields => "POST /v1/businesses",
    business_auto_refunds_refuses_unknown_fields => "POST /v1/businesses/{id}/auto-refunds",
    payment_link_create_refuses_unknown_fields => "POST /api/v1/payment-links",
    topup_create_refuses_unknown_fields => "POST /v1/treasury/topups",
    topup_confirm_refuses_unknown_fields => "POST /admin/v1/topups/{id}/confirm",
    staff_resolve_refuses_unknown_fields => "POST /admin/v1/escrows/{id}/resolve",
    staff_recovery_refuses_unknown_fields => "POST /admin/v1/escrows/{id}/recoveries",
    staff_payout_resolve_refuses_unknown_fields => "POST /admin/v1/withdrawals/{id}/payout/resolve",
    stray_return_refuses_unknown_fields => "POST /admin/v1/stray-deposits/{id}/return",
    policy_create_refuses_unknown_fields => "POST /v1/policies",
    policy_update_refuses_unknown_fields => "POST /v1/policies/{id}",
    policy_evaluate_refuses_unknown_fields => "POST /v1/policies/evaluate",
    address_book_add_refuses_unknown_fields => "POST /v1/address-book",
    quarantine_release_refuses_unknown_fields => "POST /admin/v1/quarantined-deposits/{id}/release",
    quarantine_return_refuses_unknown_fields => "POST /admin/v1/quarantined-deposits/{id}/return",
    payout_reconciliation_refuses_unknown_fields => "POST /admin/v1/payouts/reconciliation",
    sponsorship_budget_set_refuses_unknown_fields => "POST /admin/v1/tenants/{id}/sponsorship-budgets",
}

/// The deposit intake is a webhook receiver, not a request API: spec 6.2 makes it take
/// partial and extended events (a receiver never answers 400 to a field it does not
/// know), so its body is open by design.
const OPEN_BODIES: &[&str] = &["POST /v1/scanner/deposit-events"];

/// Every schema a request body may take is closed (`additionalProperties: false`),
/// following `$ref`s and `oneOf` branches.
fn closed(doc: &Value, schema: &Value) -> bool {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.trim_start_matches("#/components/schemas/");
        return closed(doc, &doc["components"]["schemas"][name]);
    }
    if let Some(branches) = schema["oneOf"].as_array() {
        return branches.iter().all(|b| closed(doc, b));
    }
    schema["additionalProperties"] == Value::Bool(false)
}

#[tokio::test]
async fn every_body_of_the_document_is_closed_and_tested() {
    let s = start().await;
    let doc: Value = s
        .send(Method::GET, "/openapi.json", None, None, &[])
        .await
        .json();
    let mut with_body = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Some(body) = op.get("requestBody") else {
                continue;
            };
            let name = format!("{} {path}", method.to_uppercase());
            if OPEN_BODIES.contains(&name.as_str()) {
                continue;
            }
            let schema = &body["content"]["application/json"]["schema"];
            assert!(closed(&doc, schema), "{name}: body schema is not closed");
            with_body.insert(name);
        }
    }
    let tested: BTreeSet<String> = TESTED.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        with_body, tested,
        "every operation with a body has its test"
    );
}
