//! Pins how `CoreError` wraps the inner layers' own errors: every domain rule refusal
//! (`RuleError`) and every record error (`RecordError`) becomes the `CoreError` the rule
//! or the port returned before it had its own type, so the wire (code, message, field,
//! status) does not change.

use super::CoreError;

/// Every rule refusal with the `CoreError` it must become: each pair is the same
/// variant with the same fields (so the same code, text, field and status).
fn rule_refusals() -> Vec<(crate::domain::RuleError, CoreError)> {
    use crate::domain::RuleError as R;
    use crate::domain::money::Micros;
    let s = |t: &str| t.to_string();
    vec![
        (
            R::InvalidAmount {
                input: s("0"),
                reason: s("zero"),
            },
            CoreError::InvalidAmount {
                input: s("0"),
                reason: s("zero"),
            },
        ),
        (
            R::AmountTooSmall {
                rail: s("tron"),
                minimum: Micros(1_000_000),
            },
            CoreError::AmountTooSmall {
                rail: s("tron"),
                minimum: Micros(1_000_000),
            },
        ),
        (
            R::InvalidQuoteId {
                quote_id: s("fx_1"),
                reason: s("short"),
            },
            CoreError::InvalidQuoteId {
                quote_id: s("fx_1"),
                reason: s("short"),
            },
        ),
        (
            R::InvalidParameter {
                field: "note",
                reason: s("too long"),
            },
            CoreError::InvalidParameter {
                field: "note",
                reason: s("too long"),
            },
        ),
        (
            R::InvalidPricing {
                reason: s("fee_bps 2000"),
            },
            CoreError::InvalidPricing {
                reason: s("fee_bps 2000"),
            },
        ),
        (R::NotAMember, CoreError::NotAMember),
        (
            R::QuoteExpired {
                quote_id: s("tu_1"),
            },
            CoreError::QuoteExpired {
                quote_id: s("tu_1"),
            },
        ),
        (
            R::AlreadyConfirmed {
                id: s("tu_1"),
                fiat_reference: s("r1"),
            },
            CoreError::AlreadyConfirmed {
                id: s("tu_1"),
                fiat_reference: s("r1"),
            },
        ),
        (
            R::SecondApproverRequired {
                proposed_by: s("stf_1"),
            },
            CoreError::SecondApproverRequired {
                proposed_by: s("stf_1"),
            },
        ),
        (
            R::ApprovalMismatch {
                field: "fiat_reference",
            },
            CoreError::ApprovalMismatch {
                field: "fiat_reference",
            },
        ),
        (
            R::QuoteAlreadyUsed {
                quote_id: s("fx_1"),
            },
            CoreError::QuoteAlreadyUsed {
                quote_id: s("fx_1"),
            },
        ),
        (
            R::QuoteTokenMismatch {
                quote_token: s("USDC"),
                token: s("USDT"),
            },
            CoreError::QuoteTokenMismatch {
                quote_token: s("USDC"),
                token: s("USDT"),
            },
        ),
        (R::CodeExpired, CoreError::CodeExpired),
        (
            R::CodeInvalid { attempts_left: 2 },
            CoreError::CodeInvalid { attempts_left: 2 },
        ),
        (
            R::TooManyAttempts {
                retry_after_ms: 1_001,
            },
            CoreError::TooManyAttempts {
                retry_after_ms: 1_001,
            },
        ),
        (R::CodeAlreadyUsed, CoreError::CodeAlreadyUsed),
        (
            R::InvalidTransition {
                machine: "topup",
                from: s("EXPIRED"),
                event: s("Confirm"),
            },
            CoreError::InvalidTransition {
                machine: "topup",
                from: s("EXPIRED"),
                event: s("Confirm"),
            },
        ),
        (
            R::RateLimited {
                what: s("codes"),
                retry_after_ms: 1,
            },
            CoreError::RateLimited {
                what: s("codes"),
                retry_after_ms: 1,
            },
        ),
    ]
}

#[test]
fn each_rule_refusal_is_the_core_error_of_the_same_name() {
    let pairs = rule_refusals();
    assert_eq!(pairs.len(), 18, "one pair per RuleError variant");
    for (rule, core) in pairs {
        let text = rule.to_string();
        let (code, param, retry) = (rule.code(), rule.param(), rule.retry_after_ms());
        let got = CoreError::from(rule);
        assert_eq!(got, core);
        assert_eq!(got.code(), code, "{got:?}");
        assert_eq!(got.to_string(), text, "{got:?}");
        assert_eq!(got.param(), param, "{got:?}");
        assert_eq!(got.retry_after_ms(), retry, "{got:?}");
    }
}

#[test]
fn rule_refusals_keep_their_codes_and_texts() {
    use crate::domain::RuleError as R;
    let codes: Vec<&str> = rule_refusals().iter().map(|(r, _)| r.code()).collect();
    assert_eq!(
        codes,
        [
            "INVALID_AMOUNT",
            "AMOUNT_TOO_SMALL",
            "INVALID_QUOTE_ID",
            "INVALID_PARAMETER",
            "INVALID_PRICING",
            "NOT_A_MEMBER",
            "QUOTE_EXPIRED",
            "ALREADY_CONFIRMED",
            "SECOND_APPROVER_REQUIRED",
            "APPROVAL_MISMATCH",
            "QUOTE_ALREADY_USED",
            "QUOTE_TOKEN_MISMATCH",
            "CODE_EXPIRED",
            "CODE_INVALID",
            "TOO_MANY_ATTEMPTS",
            "CODE_ALREADY_USED",
            "INVALID_STATE",
            "RATE_LIMITED",
        ]
    );
    let core = |r: R| CoreError::from(r).to_string();
    assert_eq!(
        core(R::TooManyAttempts {
            retry_after_ms: 1_001
        }),
        "too many wrong codes: try again in 2 s"
    );
    assert_eq!(
        core(R::AmountTooSmall {
            rail: "tron".into(),
            minimum: crate::domain::money::Micros(1_500_000)
        }),
        "amount is below the minimum of 1.500000 for a send on tron"
    );
    assert_eq!(
        core(R::NotAMember),
        "the calling tenant is not a member of this wallet"
    );
}

#[test]
fn a_record_error_is_a_storage_error_with_the_same_text() {
    use crate::ports::record::RecordError;
    use crate::ports::store::StoreError;
    let cases = [
        (
            RecordError::Encode {
                kind: "wallet",
                reason: "key must be a string".into(),
            },
            "encode wallet: key must be a string",
        ),
        (
            RecordError::Decode {
                kind: "wallet",
                id: "w1".into(),
                reason: "EOF while parsing".into(),
            },
            "decode wallet w1: EOF while parsing",
        ),
        (
            RecordError::Store(StoreError::Backend("disk full".into())),
            "store backend: disk full",
        ),
        (
            // A read is never a race: even a version conflict stays STORAGE_ERROR here.
            RecordError::Store(StoreError::VersionConflict {
                kind: "wallet".into(),
                id: "w1".into(),
            }),
            "version conflict on wallet w1",
        ),
    ];
    for (record, text) in cases {
        assert_eq!(record.to_string(), text);
        let core = CoreError::from(record);
        assert_eq!(core, CoreError::Storage(text.into()));
        assert_eq!(core.code(), "STORAGE_ERROR");
        assert_eq!(core.to_string(), format!("storage error: {text}"));
    }
}
