//! The OpenAPI document tells the truth (API-CONVENTIONS): its patterns describe the
//! parsers, its enumerations and bounds are what the server accepts, and every operation
//! documents the statuses the layers around the handlers answer. schemathesis checks the
//! same against a live server (scripts/schemathesis.sh); these tests pin each rule to
//! the code that enforces it.

use crate::common::*;
use proptest::prelude::*;
use reqwest::Method;
use serde_json::Value;
use stablecoin_core::domain::fx::{parse_fiat_amount, parse_quote_ref};
use stablecoin_core::domain::ids::QuoteId;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::validate_idempotency_key;
use stablecoin_server::api::schemas::*;
use stablecoin_webhooks::Family;
use stablecoin_webhooks::delivery::family_of;

/// A pattern's body, for generating strings (proptest reads no anchors).
fn unanchored(p: &str) -> &str {
    p.strip_prefix('^')
        .and_then(|p| p.strip_suffix('$'))
        .expect("anchored pattern")
}

fn re(p: &str) -> regex::Regex {
    regex::Regex::new(p).expect("pattern compiles")
}

/// The escrow's free-text rule (`clean_text`): trimmed, empty means absent, no control
/// character but the line feed.
fn escrow_text_ok(s: &str) -> bool {
    let t = s.trim();
    !t.is_empty() && !t.chars().any(|c| c.is_control() && c != '\n')
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    // Schema-valid => accepted, for every pattern: what schemathesis's
    // positive_data_acceptance checks, here exhaustively against the parser itself.

    #[test]
    fn a_documented_phone_parses_to_itself(s in unanchored(PHONE_PATTERN)) {
        let p = Phone::parse(&s).unwrap();
        prop_assert_eq!(p.as_str(), s.as_str());
    }

    #[test]
    fn a_documented_token_amount_parses(s in unanchored(TOKEN_AMOUNT_PATTERN)) {
        let m = Micros::parse_positive(&s).unwrap();
        prop_assert!(!m.is_zero() && m <= Micros::MAX_REQUEST);
    }

    #[test]
    fn a_documented_quote_id_parses(s in unanchored(QUOTE_REF_PATTERN)) {
        prop_assert!(parse_quote_ref(&s).is_ok(), "{}", s);
    }

    #[test]
    fn a_documented_fiat_string_parses(s in unanchored(FIAT_AMOUNT_PATTERN)) {
        prop_assert!(parse_fiat_amount(&s).is_ok(), "{}", s);
    }

    #[test]
    fn a_documented_idempotency_key_is_valid(s in unanchored(IDEMPOTENCY_KEY_PATTERN)) {
        prop_assert!(validate_idempotency_key(&s).is_ok());
        // HTTP strips spaces around a header value: a documented key survives intact.
        prop_assert_eq!(s.trim(), s.as_str());
    }

    #[test]
    fn documented_escrow_text_is_accepted(
        free in unanchored(FREE_TEXT_PATTERN),
        non_blank in unanchored(NON_BLANK_TEXT_PATTERN),
    ) {
        prop_assert!(free.trim().is_empty() || escrow_text_ok(&free), "{:?}", free);
        prop_assert!(escrow_text_ok(&non_blank), "{:?}", non_blank);
    }

    #[test]
    fn a_documented_fiat_reference_and_note_are_accepted(
        reference in unanchored(FIAT_REFERENCE_PATTERN),
        note in unanchored(FREE_TEXT_PATTERN),
    ) {
        use stablecoin_core::domain::topup::TopUpConfirmation;
        prop_assume!(reference.chars().count() <= 200 && note.chars().count() <= 1000);
        let c = TopUpConfirmation {
            fiat_reference: reference.clone(),
            note: Some(note.clone()),
        };
        prop_assert!(c.checked().is_ok(), "{:?} {:?}", reference, note);
    }

    // Accepted => documented (in its canonical form), where the input space is small
    // enough to draw from.

    #[test]
    fn every_phone_the_parser_accepts_is_documented_once_normalised(
        // Valid numbers in human format drawn on purpose beside random ones, which
        // rarely parse.
        s in prop_oneof!["[+0-9 ().-]{0,20}", "\\+[1-9]([0-9]|[ ().-][0-9]){7,14}"],
    ) {
        if let Ok(p) = Phone::parse(&s) {
            prop_assert!(re(PHONE_PATTERN).is_match(p.as_str()), "{}", p);
        }
    }

    #[test]
    fn every_amount_a_request_may_carry_is_documented(m in 1u64..=Micros::MAX_REQUEST.0) {
        let s = Micros::new(m).to_decimal_string();
        prop_assert!(re(TOKEN_AMOUNT_PATTERN).is_match(&s), "{}", s);
        let direct = format!("DIRECT_CRYPTO:USDT:{s}");
        prop_assert!(re(QUOTE_REF_PATTERN).is_match(&direct), "{}", direct);
    }

    #[test]
    fn every_fiat_string_the_parser_accepts_plainly_is_documented(
        whole in 0u64..1_000_000_000_000, cents in 0u32..100, places in 0usize..3,
    ) {
        let s = match places {
            0 => whole.to_string(),
            1 => format!("{whole}.{}", cents / 10),
            _ => format!("{whole}.{cents:02}"),
        };
        if parse_fiat_amount(&s).is_ok() {
            prop_assert!(re(FIAT_AMOUNT_PATTERN).is_match(&s), "{}", s);
        } else {
            prop_assert!(!re(FIAT_AMOUNT_PATTERN).is_match(&s), "{}", s);
        }
    }

    #[test]
    fn every_quote_id_the_engine_issues_is_documented(t in 0i64..(1 << 48), r in any::<[u8; 10]>()) {
        let id = QuoteId::generate(t, r);
        prop_assert!(re(QUOTE_REF_PATTERN).is_match(&id.0), "{}", id.0);
    }

    #[test]
    fn every_code_the_engine_sends_is_documented(r in any::<[u8; 8]>()) {
        let code = stablecoin_core::domain::consent::code_from_random(r);
        prop_assert!(re(OTP_CODE_PATTERN).is_match(&code));
    }

    #[test]
    fn event_names_of_each_family_are_documented_as_that_family(
        e in "(transfer|swap|user|escrow|payment|wallet)\\.[a-z_.]{1,20}",
    ) {
        let (wallet, payments) = event_patterns();
        prop_assert_eq!(re(&wallet).is_match(&e), family_of(&e) == Some(Family::Wallet), "{}", e);
        prop_assert_eq!(re(&payments).is_match(&e), family_of(&e) == Some(Family::Payments), "{}", e);
    }
}

/// The two event-name patterns of the endpoint body, read from the document's schema.
fn event_patterns() -> (String, String) {
    let schema = serde_json::to_value(
        <stablecoin_server::api::webhooks::CreateEndpointBody as utoipa::PartialSchema>::schema(),
    )
    .unwrap();
    let pattern = |i: usize| {
        schema["oneOf"][i]["properties"]["events"]["items"]["pattern"]
            .as_str()
            .unwrap()
            .to_string()
    };
    (pattern(0), pattern(1))
}

#[test]
fn patterns_refuse_what_the_parsers_refuse() {
    for bad in [
        "",
        "2250700000001",
        "+0225070000",
        "+1234567",
        "+1234567890123456",
    ] {
        assert!(!re(PHONE_PATTERN).is_match(bad), "{bad}");
        assert!(Phone::parse(bad).is_err(), "{bad}");
    }
    for bad in [
        "0",
        "0.0",
        "0.000000",
        "1.",
        ".5",
        "1.1234567",
        "-1",
        "1e6",
        "01x",
        "1000000000000",
    ] {
        assert!(!re(TOKEN_AMOUNT_PATTERN).is_match(bad), "{bad}");
        assert!(Micros::parse_positive(bad).is_err(), "{bad}");
    }
    for bad in ["0", "0.00", "0.001", "-5", "1000000000000.01", "abc"] {
        assert!(!re(FIAT_AMOUNT_PATTERN).is_match(bad), "{bad}");
        assert!(parse_fiat_amount(bad).is_err(), "{bad}");
    }
    for bad in [
        "fx_123",
        "DIRECT_CRYPTO:DAI:1",
        "DIRECT_CRYPTO:USDC:0",
        "DIRECT_CRYPTO:USDC: 1",
    ] {
        assert!(!re(QUOTE_REF_PATTERN).is_match(bad), "{bad}");
        assert!(parse_quote_ref(bad).is_err(), "{bad}");
    }
    for bad in ["", " k", "k ", "é", &"k".repeat(256)] {
        assert!(!re(IDEMPOTENCY_KEY_PATTERN).is_match(bad), "{bad}");
    }
    for bad in ["", "   ", "a\u{7}b", "\t"] {
        assert!(!re(NON_BLANK_TEXT_PATTERN).is_match(bad), "{bad:?}");
        assert!(!escrow_text_ok(bad), "{bad:?}");
    }
}

async fn document(s: &Server) -> Value {
    s.send(Method::GET, "/openapi.json", None, None, &[])
        .await
        .json()
}

/// A component or inline schema, `$ref`s followed.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")],
        None => schema,
    }
}

#[test]
fn the_fiat_reference_pattern_refuses_what_the_confirmation_refuses() {
    use stablecoin_core::domain::topup::TopUpConfirmation;
    let p = re(FIAT_REFERENCE_PATTERN);
    for bad in ["", "   ", "a\nb", "a\tb", "\u{7f}", "\u{85}x"] {
        assert!(!p.is_match(bad), "{bad:?}");
        let c = TopUpConfirmation {
            fiat_reference: bad.into(),
            note: None,
        };
        assert!(c.checked().is_err(), "{bad:?}");
    }
    for ok in ["BANK-1", " x ", "réf 2026/11"] {
        assert!(p.is_match(ok), "{ok:?}");
    }
}

#[tokio::test]
async fn every_operation_documents_the_layers_around_its_handler() {
    let s = start().await;
    let doc = document(&s).await;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let name = format!("{} {path}", method.to_uppercase());
            let responses = op["responses"].as_object().unwrap();
            for status in ["408", "500"] {
                assert!(responses.contains_key(status), "{name}: {status}");
            }
            // Staff routes (admin token) have no per-key rate limit.
            let authenticated = op["security"].is_array() && !path.starts_with("/admin/");
            if authenticated {
                let limited = &responses["429"];
                assert!(
                    limited["headers"]["Retry-After"]["schema"]["type"] == "integer",
                    "{name}: 429 with Retry-After"
                );
                assert!(
                    limited["description"]
                        .as_str()
                        .unwrap()
                        .contains("RATE_LIMITED")
                );
            }
            if op.get("requestBody").is_some() {
                for status in ["400", "413", "415"] {
                    assert!(responses.contains_key(status), "{name}: {status}");
                }
            }
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            let idem = params.iter().find(|p| p["name"] == "Idempotency-Key");
            if let Some(p) = idem {
                assert_eq!(p["schema"]["pattern"], IDEMPOTENCY_KEY_PATTERN, "{name}");
                assert!(
                    responses["409"]["description"]
                        .as_str()
                        .unwrap()
                        .contains("IDEMPOTENCY_KEY_IN_USE")
                );
                assert!(
                    responses["422"]["description"]
                        .as_str()
                        .unwrap()
                        .contains("IDEMPOTENCY_KEY_REUSED")
                );
            }
            // Every error response carries the error body.
            for (status, r) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    let schema = &r["content"]["application/json"]["schema"];
                    if schema.is_object() {
                        assert!(
                            schema["$ref"] == "#/components/schemas/ErrorBody"
                                || path == "/health/ready",
                            "{name} {status}"
                        );
                    }
                }
            }
        }
    }
}

/// Every list: its enumerated filter values are each accepted and anything else refused;
/// `limit` and `page` are accepted at their documented bounds and refused past them.
#[tokio::test]
async fn list_filters_and_bounds_are_what_the_server_accepts() {
    let s = start().await;
    let t = s.tenant("Acme", "0").await;
    // Staff lists take a staff account's secret (this server has no admin token).
    let staff = s.app.engine().create_staff("Truth").await.unwrap().secret;
    let bearer = format!("Bearer {staff}");
    // The held-approval list takes the tenant's approver key.
    let approver = s
        .app
        .engine()
        .issue_approver_key("truth", &t.id)
        .await
        .unwrap()
        .secret;
    let doc = document(&s).await;
    let mut lists = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(op) = item.get("get") else { continue };
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        if !params.iter().any(|p| p["name"] == "limit") || path.contains('{') {
            continue;
        }
        lists += 1;
        let admin = op["security"][0].get("admin_token").is_some();
        let key = if op["security"][0].get("business_key").is_some() {
            &t.business_live
        } else if op["security"][0].get("approver_key").is_some() {
            &approver
        } else {
            &t.live
        };
        let get = |url: String| {
            let (s, bearer) = (&s, &bearer);
            async move {
                if admin {
                    s.send(
                        reqwest::Method::GET,
                        &url,
                        None,
                        None,
                        &[("Authorization", bearer)],
                    )
                    .await
                } else {
                    s.get(key, &url).await
                }
            }
        };
        for p in &params {
            let name = p["name"].as_str().unwrap();
            let schema = resolve(&doc, &p["schema"]);
            let mut ok: Vec<String> = Vec::new();
            let mut bad: Vec<String> = Vec::new();
            if let Some(values) = schema["enum"].as_array() {
                ok.extend(values.iter().map(|v| v.as_str().unwrap().to_string()));
                bad.extend(["NOT_A_VALUE".into(), "%20".into()]);
            }
            if schema["type"] == "integer" {
                let min = schema["minimum"].as_u64().unwrap();
                let max = schema["maximum"].as_u64().unwrap();
                ok.extend([min.to_string(), max.to_string()]);
                bad.extend([(min - 1).to_string(), (max + 1).to_string(), "x".into()]);
            }
            for v in ok {
                let r = get(format!("{path}?{name}={v}")).await;
                r.expect(200);
            }
            for v in bad {
                let r = get(format!("{path}?{name}={v}")).await;
                assert_eq!(r.status, 400, "{path}?{name}={v}: {}", r.text());
            }
        }
    }
    assert_eq!(
        lists, 17,
        "transfers, swaps, top-ups, checkout, escrows, webhook endpoints/events/deliveries, staff escrows and audit, the events API of both key kinds, stray deposits, quarantined deposits, payment links, the address book, held approvals"
    );
}

/// The bodies' numeric forms and required query parameters, as the server reads them.
#[tokio::test]
async fn documented_values_reach_the_engine_and_others_do_not() {
    let s = start().await;
    let t = s.tenant("Acme", "0").await;
    let quote = |amount: &str| format!(r#"{{"fiat_amount":{amount},"local_currency":"XOF"}}"#);
    // fiat_amount: a JSON number, multiple of 0.01, in (0, 10^12]; or a plain string.
    for ok in [
        "0.57",
        "6000",
        "6000.5",
        "1000000000000",
        "\"0.01\"",
        "\"999999999999.99\"",
    ] {
        s.post(&t.live, "/api/v1/fx/quote", &quote(ok))
            .await
            .expect(200);
    }
    for bad in ["0", "0.571", "-1", "1000000000000.01", "\"0\"", "true"] {
        let r = s.post(&t.live, "/api/v1/fx/quote", &quote(bad)).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
    }
    // Every currency of the document is quoted (the demo rates cover them all).
    let doc = document(&s).await;
    for c in doc["components"]["schemas"]["CurrencyCode"]["enum"]
        .as_array()
        .unwrap()
    {
        let body = format!(r#"{{"fiat_amount":100,"local_currency":{c}}}"#);
        s.post(&t.live, "/api/v1/fx/quote", &body).await.expect(200);
    }
    // A code that is not 6 digits is refused as input, before the engine counts it.
    for bad in ["12345", "1234567", "12a456", ""] {
        let body = format!(r#"{{"phone_number":"+2250700000001","code":"{bad}"}}"#);
        let r = s.post(&t.live, "/v1/users/link/confirm", &body).await;
        r.expect_err(400, "INVALID_PARAMETER");
        assert_eq!(r.param().as_deref(), Some("code"));
    }
    let body = r#"{"phone_number":"+2250700000001","code":"123456"}"#;
    s.post(&t.live, "/v1/users/link/confirm", body)
        .await
        .expect_err(404, "NOT_FOUND");
    // phone_number is a required query parameter of the balance reads.
    for path in [
        "/v1/users/balance",
        "/v1/tron/users/balance",
        "/v1/solana/users/balance",
    ] {
        s.get(&t.live, path).await.expect_err(400, "INVALID_QUERY");
    }
}

/// Issue #48 item 11: `network` is described as the running configuration's EVM chains
/// (a chain left out is refused, so it is not listed), and the TRON and Solana sends,
/// which refuse `network`, do not describe it.
#[tokio::test]
async fn network_lists_the_enabled_chains_and_rail_sends_describe_only_what_they_accept() {
    let s = start().await;
    let t = s.tenant("Acme", "0").await;
    let a = "+2250700000001";
    s.provision(&t.live, a).await;
    let doc = document(&s).await;
    let schemas = &doc["components"]["schemas"];
    let polygon_only = serde_json::json!(["polygon", "evm-137", "137", null]);
    for body in ["FundBody", "WithdrawBody", "SendBody", "SwapBody"] {
        let p = &schemas[body]["properties"]["network"];
        assert_eq!(p["enum"], polygon_only, "{body}: {p}");
        assert!(p.get("pattern").is_none(), "{body}: {p}");
    }
    // The balance read's `network` parameter: `all` and the enabled chain, each accepted;
    // a chain this server does not run is refused.
    let param = doc["paths"]["/v1/users/balance"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "network")
        .unwrap()
        .clone();
    let values = param["schema"]["enum"].as_array().unwrap().clone();
    assert_eq!(
        values,
        vec![
            Value::from("all"),
            "polygon".into(),
            "evm-137".into(),
            "137".into()
        ]
    );
    for v in &values {
        let r = s
            .get(
                &t.live,
                &format!(
                    "/v1/users/balance?phone_number=%2B{}&network={}",
                    &a[1..],
                    v.as_str().unwrap()
                ),
            )
            .await;
        r.expect(200);
    }
    for off in ["base", "bsc", "8453"] {
        let r = s
            .get(
                &t.live,
                &format!(
                    "/v1/users/balance?phone_number=%2B{}&network={off}",
                    &a[1..]
                ),
            )
            .await;
        assert!((400..500).contains(&r.status), "{off}: {}", r.text());
    }
    // The TRON and Solana sends: the fields they accept, and no `network`.
    for (body, path) in [
        ("TronSendBody", "/v1/tron/transfers/send"),
        ("SolanaSendBody", "/v1/solana/transfers/send"),
    ] {
        let schema = resolve(
            &doc,
            &doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"],
        );
        assert_eq!(schema, &schemas[body], "{path}");
        let mut props: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        props.sort_unstable();
        assert_eq!(
            props,
            ["from_phone_number", "quote_id", "to_phone_number", "token"],
            "{path}"
        );
        assert_eq!(schema["additionalProperties"], false, "{path}");
        let r = s
            .post(
                &t.live,
                path,
                &serde_json::json!({"from_phone_number": a, "to_phone_number": "+2250700000002",
                    "token": "USDT", "quote_id": "DIRECT_CRYPTO:USDT:1", "network": "polygon"})
                .to_string(),
            )
            .await;
        r.expect_err(400, "UNKNOWN_FIELD");
    }

    // The checkout's networks: the rails watching deposits here, each accepted.
    let checkout = &schemas["CreateSessionRequest"]["properties"]["networks"]["items"];
    let listed = checkout["enum"].as_array().unwrap().clone();
    assert_eq!(
        listed,
        vec![Value::from("polygon"), "tron".into(), "solana".into()],
        "{checkout}"
    );
    for n in &listed {
        let r = s
            .post(
                &t.business_live,
                "/api/v1/checkout/sessions",
                &serde_json::json!({"amount": "5", "currency": "USDT", "networks": [n]})
                    .to_string(),
            )
            .await;
        r.expect(201);
    }
    assert_eq!(
        schemas["SimulatePaymentRequest"]["properties"]["network"]["enum"],
        serde_json::json!(["polygon", "tron", "solana", null])
    );

    // Two chains configured and TRON off: listed as configured, and only those.
    let mut c = test_config();
    c.rails.evm_chains = vec![137, 8453];
    c.rails.tron = false;
    let s2 = start_with(c).await;
    let doc = document(&s2).await;
    assert_eq!(
        doc["components"]["schemas"]["SendBody"]["properties"]["network"]["enum"],
        serde_json::json!([
            "polygon", "evm-137", "137", "base", "evm-8453", "8453", null
        ])
    );
    assert_eq!(
        doc["components"]["schemas"]["CreateSessionRequest"]["properties"]["networks"]["items"]["enum"],
        serde_json::json!(["polygon", "base", "solana"])
    );
}
