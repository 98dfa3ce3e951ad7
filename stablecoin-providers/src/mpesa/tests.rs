use super::results::{QueryOutcome, classify};
use super::*;

const B2C_OK: &str = r#"{"Result":{"ResultType":0,"ResultCode":0,
  "ResultDesc":"The service request is processed successfully.",
  "OriginatorConversationID":"wd_1","ConversationID":"AG_20240101_0000aaaa",
  "TransactionID":"NLJ41HAY6Q",
  "ResultParameters":{"ResultParameter":[
    {"Key":"TransactionAmount","Value":10.50},
    {"Key":"TransactionReceipt","Value":"NLJ41HAY6Q"},
    {"Key":"ReceiverPartyPublicName","Value":"254708374149 - John Doe"},
    {"Key":"TransactionCompletedDateTime","Value":"19.12.2019 11:45:50"}]},
  "ReferenceData":{"ReferenceItem":{"Key":"QueueTimeoutURL","Value":"https://x/t"}}}}"#;

#[test]
fn a_b2c_result_parses_without_floats() {
    let r = MpesaB2c::parse_result(B2C_OK.as_bytes()).unwrap();
    assert!(r.is_success());
    assert_eq!(r.result_type.as_deref(), Some("0"));
    assert_eq!(r.originator_conversation_id, "wd_1");
    assert_eq!(r.conversation_id, "AG_20240101_0000aaaa");
    assert_eq!(
        r.parameter("TransactionAmount"),
        Some("10.50"),
        "as written"
    );
    assert_eq!(r.receipt(), Some("NLJ41HAY6Q"));
    assert_eq!(
        r.parameter("ReceiverPartyPublicName"),
        Some("254708374149 - John Doe")
    );
}

#[test]
fn a_failure_and_a_string_code_and_a_single_parameter_parse() {
    let fail = br#"{"Result":{"ResultType":0,"ResultCode":2001,
      "ResultDesc":"The initiator information is invalid.",
      "OriginatorConversationID":"wd_2","ConversationID":"AG_2",
      "TransactionID":"MAS0000000"}}"#;
    let r = MpesaB2c::parse_result(fail).unwrap();
    assert!(!r.is_success());
    assert_eq!(r.result_code, "2001");
    assert_eq!(
        r.receipt(),
        None,
        "a placeholder TransactionID is no receipt"
    );
    let s = br#"{"Result":{"ResultCode":"SFC_IC0003","ResultDesc":"Receiver party is invalid",
      "ConversationID":"AG_3","ResultParameters":{"ResultParameter":{"Key":"A","Value":"b"}}}}"#;
    let r = MpesaB2c::parse_result(s).unwrap();
    assert_eq!(r.result_code, "SFC_IC0003");
    assert_eq!(r.parameters, vec![("A".to_string(), "b".to_string())]);
}

#[test]
fn malformed_results_are_refused() {
    for body in [
        &b""[..],
        b"{}",
        br#"{"Result":{"ResultDesc":"x","ConversationID":"AG"}}"#,
        br#"{"Result":{"ResultCode":0}}"#,
        br#"{"Result":{"ResultCode":0,"ConversationID":"AG","ResultParameters":{"ResultParameter":7}}}"#,
    ] {
        assert_eq!(
            MpesaB2c::parse_result(body).unwrap_err().code(),
            "BAD_CALLBACK",
            "{}",
            String::from_utf8_lossy(body)
        );
    }
}

fn query_result(code: &str, status: &str, receipt: &str) -> MpesaResult {
    let body = format!(
        r#"{{"Result":{{"ResultType":0,"ResultCode":"{code}","ResultDesc":"d",
        "OriginatorConversationID":"q1","ConversationID":"AG_q",
        "TransactionID":"{receipt}","ResultParameters":{{"ResultParameter":[
        {{"Key":"ReceiptNo","Value":"{receipt}"}},
        {{"Key":"TransactionStatus","Value":"{status}"}},
        {{"Key":"ReasonType","Value":"Receiver not registered"}},
        {{"Key":"Amount","Value":100}}]}}}}}}"#
    );
    MpesaB2c::parse_result(body.as_bytes()).unwrap()
}

#[test]
fn a_status_query_result_classifies() {
    assert_eq!(
        classify(&query_result("0", "Completed", "NLJ1"), &[]),
        QueryOutcome::Completed("NLJ1".into())
    );
    assert!(matches!(
        classify(&query_result("0", "Failed", ""), &[]),
        QueryOutcome::Failed(r) if r.contains("Receiver not registered")
    ));
    assert_eq!(
        classify(&query_result("0", "Pending", ""), &[]),
        QueryOutcome::Pending
    );
    assert_eq!(
        classify(&query_result("R000002", "", ""), &[]),
        QueryOutcome::NotFound
    );
    // A failed query says nothing of the payout: never a payout failure.
    assert!(matches!(
        classify(&query_result("2001", "", ""), &[]),
        QueryOutcome::QueryFailed(_)
    ));
    assert_eq!(
        classify(&query_result("X9", "", ""), &["X9".to_string()]),
        QueryOutcome::NotFound
    );
}

fn store() -> Arc<MpesaResults> {
    Arc::new(MpesaResults::new(Arc::new(
        stablecoin_core::memory::MemoryStore::new(),
    )))
}

fn expected() -> Expected {
    Expected {
        amount: rust_decimal::Decimal::new(1050, 2),
        party_b: "254708374149".into(),
    }
}

#[tokio::test]
async fn only_results_of_our_requests_are_filed() {
    let store = store();
    let e = expected();
    // A B2C result naming the payout: a hint, never an outcome.
    assert_eq!(
        store.record("wd_1", &e, B2C_OK.as_bytes()).await.unwrap(),
        Recorded::Payment {
            payout_id: "wd_1".into()
        }
    );
    assert!(store.hint("wd_1").await.is_some());
    assert_eq!(store.outcome("wd_1").await, None);
    // At another payout's URL it is refused.
    assert!(matches!(
        store.record("wd_9", &e, B2C_OK.as_bytes()).await.unwrap(),
        Recorded::Mismatch { .. }
    ));
    // Once the acknowledgement named its ConversationID, another one is refused.
    store
        .submitted("wd_1", Some("AG_20240101_0000aaaa"))
        .await
        .unwrap();
    let other = B2C_OK.replace("AG_20240101_0000aaaa", "AG_other");
    assert!(matches!(
        store.record("wd_1", &e, other.as_bytes()).await.unwrap(),
        Recorded::Mismatch { .. }
    ));
    // Another amount or payee: refused.
    let more = B2C_OK.replace("10.50", "1050");
    assert!(matches!(
        store.record("wd_1", &e, more.as_bytes()).await.unwrap(),
        Recorded::Mismatch { .. }
    ));
    // A status query's result arriving before its acknowledgement was recorded is kept
    // and filed when it is.
    let early = r#"{"Result":{"ResultCode":0,"OriginatorConversationID":"q","ConversationID":"AG_q2","ResultParameters":
      {"ResultParameter":[{"Key":"ReceiptNo","Value":"R1"},{"Key":"TransactionStatus","Value":"Completed"},
      {"Key":"OriginatorConversationID","Value":"wd_1"},{"Key":"Amount","Value":10.5},
      {"Key":"CreditPartyName","Value":"254708374149 - J"}]}}}"#;
    assert_eq!(
        store.record("wd_1", &e, early.as_bytes()).await.unwrap(),
        Recorded::Early {
            payout_id: "wd_1".into()
        }
    );
    store.query_sent("wd_1", "AG_q2").await.unwrap();
    assert_eq!(
        store.outcome("wd_1").await,
        Some(QueryOutcome::Completed("R1".into()))
    );
    // A later result of the same query saying otherwise changes nothing (forward only).
    let late = early.replace("Completed", "Failed");
    assert_eq!(
        store.record("wd_1", &e, late.as_bytes()).await.unwrap(),
        Recorded::StatusQuery {
            payout_id: "wd_1".into()
        }
    );
    assert_eq!(
        store.outcome("wd_1").await,
        Some(QueryOutcome::Completed("R1".into()))
    );
}

#[test]
fn secrets_are_not_in_debug_and_config_is_checked() {
    let c = MpesaConfig {
        consumer_key: "ck".into(),
        consumer_secret: "cs_secret_value".into(),
        initiator_name: "testapi".into(),
        security_credential: "ENCRYPTED_credential_value".into(),
        shortcode: "600000".into(),
        result_url: "https://host/mpesa/result".into(),
        queue_timeout_url: "https://host/mpesa/timeout".into(),
        callback_secret: "callback-secret-0123456789abcdef-0123".into(),
        ..MpesaConfig::default()
    };
    let a = MpesaB2c::new(c.clone(), store()).unwrap();
    let shown = format!("{c:?} {a:?}");
    assert!(!shown.contains("cs_secret_value") && !shown.contains("ENCRYPTED_credential"));
    assert!(!shown.contains("callback-secret"));
    let no_cred = MpesaConfig {
        security_credential: " ".into(),
        ..c.clone()
    };
    assert_eq!(
        MpesaB2c::new(no_cred, store()).unwrap_err().code(),
        "PROVIDER_CONFIG"
    );
    let bad_url = MpesaConfig {
        result_url: "ftp://x".into(),
        ..c
    };
    assert!(MpesaB2c::new(bad_url, store()).is_err());
}
