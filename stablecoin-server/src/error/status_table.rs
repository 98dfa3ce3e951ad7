//! Every variant of the three product errors answers the status, code, param and words it
//! answered before the three per-product status maps became one map of [`ErrorClass`]es
//! (issue #45): the expected columns are the old maps, written out.
//!
//! A variant added later must be added here too (the enums are `#[non_exhaustive]`, so
//! this crate cannot match them exhaustively); its class is chosen, without a catch-all,
//! in its own crate's `impl ProductError`.

use super::{ApiError, ErrorClass, status};
use axum::http::StatusCode;
use stablecoin_checkout::CheckoutError;
use stablecoin_core::CoreError;
use stablecoin_core::domain::money::Micros;
use stablecoin_escrow::EscrowError;

/// `(error, status before the change, code, param)`.
type Row = (ApiError, u16, &'static str, Option<&'static str>);

fn row(
    e: impl Into<ApiError>,
    status: u16,
    code: &'static str,
    param: Option<&'static str>,
) -> Row {
    (e.into(), status, code, param)
}

fn s(text: &str) -> String {
    text.to_string()
}

#[rustfmt::skip]
fn core_rows() -> Vec<Row> {
    use CoreError::*;
    vec![
        row(InvalidAmount { input: s("x"), reason: s("r") }, 400, "INVALID_AMOUNT", Some("amount")),
        row(AmountTooSmall { rail: s("tron"), minimum: Micros::new(1) }, 400, "AMOUNT_TOO_SMALL", Some("amount")),
        row(InvalidPhone { input: s("x"), reason: s("r") }, 400, "INVALID_PHONE", Some("phone_number")),
        row(UnknownToken { token: s("x") }, 400, "UNKNOWN_TOKEN", Some("token")),
        row(TokenNotCarried { rail: s("tron"), token: s("USDC"), carried: s("USDT") }, 400, "UNKNOWN_TOKEN", Some("token")),
        row(UnknownCurrency { currency: s("x") }, 400, "UNKNOWN_CURRENCY", Some("local_currency")),
        row(InvalidQuoteId { quote_id: s("x"), reason: s("r") }, 400, "INVALID_QUOTE_ID", Some("quote_id")),
        row(InvalidParameter { field: "f", reason: s("r") }, 400, "INVALID_PARAMETER", Some("f")),
        row(InvalidPricing { reason: s("r") }, 400, "INVALID_PRICING", None),
        row(InvalidIdempotencyKey { reason: s("r") }, 400, "INVALID_IDEMPOTENCY_KEY", None),
        row(InvalidApiKey, 401, "INVALID_API_KEY", None),
        row(ApiKeyRevoked, 401, "API_KEY_REVOKED", None),
        row(NotAMember, 403, "NOT_A_MEMBER", None),
        row(SandboxUnsupported { what: s("w") }, 403, "SANDBOX_UNSUPPORTED", None),
        row(KeyOutOfScope { reason: s("r") }, 403, "KEY_OUT_OF_SCOPE", None),
        row(FeeAboveCeiling { reason: s("r") }, 403, "FEE_ABOVE_CEILING", None),
        row(NotFound { kind: "k", id: s("i") }, 404, "NOT_FOUND", None),
        row(QuoteExpired { quote_id: s("q") }, 410, "QUOTE_EXPIRED", None),
        row(CodeExpired, 410, "CODE_EXPIRED", Some("code")),
        row(QuoteAlreadyUsed { quote_id: s("q") }, 409, "QUOTE_ALREADY_USED", None),
        row(AlreadyConfirmed { id: s("tu"), fiat_reference: s("r") }, 409, "ALREADY_CONFIRMED", None),
        row(FiatReferenceUsed { fiat_reference: s("r") }, 409, "FIAT_REFERENCE_USED", Some("fiat_reference")),
        row(SecondApproverRequired { proposed_by: s("admin-token") }, 409, "SECOND_APPROVER_REQUIRED", None),
        row(ApprovalMismatch { field: "fiat_reference" }, 409, "APPROVAL_MISMATCH", Some("fiat_reference")),
        row(CodeAlreadyUsed, 409, "CODE_ALREADY_USED", Some("code")),
        row(AlreadyAMember, 409, "ALREADY_A_MEMBER", None),
        row(PhoneInUse { phone: s("p") }, 409, "PHONE_IN_USE", None),
        row(IdempotencyKeyInUse, 409, "IDEMPOTENCY_KEY_IN_USE", None),
        row(InvalidTransition { machine: "m", from: s("a"), event: s("e") }, 409, "INVALID_STATE", None),
        row(Conflict { what: s("w"), record: None }, 409, "CONFLICT", None),
        row(QuoteTokenMismatch { quote_token: s("a"), token: s("b") }, 422, "QUOTE_TOKEN_MISMATCH", Some("quote_id")),
        row(CodeInvalid { attempts_left: 1 }, 422, "CODE_INVALID", Some("code")),
        row(InsufficientFunds { available: s("1"), needed: s("2") }, 422, "INSUFFICIENT_FUNDS", None),
        row(SameWallet, 422, "SAME_WALLET", None),
        row(InsufficientLiquidity { reason: s("r") }, 422, "INSUFFICIENT_LIQUIDITY", None),
        row(IdempotencyKeyReused, 422, "IDEMPOTENCY_KEY_REUSED", None),
        row(TooManyAttempts { retry_after_ms: 1_500 }, 429, "TOO_MANY_ATTEMPTS", Some("code")),
        row(RateLimited { what: s("w"), retry_after_ms: 1 }, 429, "RATE_LIMITED", None),
        row(RailNotReady { rail: s("r"), reason: s("r") }, 503, "RAIL_NOT_READY", None),
        row(RateSource(s("r")), 503, "RATE_SOURCE_ERROR", None),
        row(RateStale(s("r")), 503, "RATE_STALE", None),
        row(WithdrawalsUnavailable, 503, "WITHDRAWALS_UNAVAILABLE", None),
        row(SwapsUnavailable { rail: s("r") }, 503, "SWAPS_UNAVAILABLE", None),
        row(ScreeningHit { list: s("l"), reference: s("r") }, 403, "SCREENING_HIT", None),
        row(ScreeningUnavailable { reason: s("r") }, 503, "SCREENING_UNAVAILABLE", None),
        row(PolicyDenied { rule_id: s("p:r"), reason: s("r") }, 403, "POLICY_DENIED", None),
        row(ApprovalRequired { approval_id: s("a"), rule_id: s("p:r") }, 403, "APPROVAL_REQUIRED", None),
        row(SponsorshipBudgetExceeded { rail: s("polygon"), period: "day", resource: "native", cap: s("1"), spent: s("1"), retry_after_ms: 1_000 }, 429, "SPONSORSHIP_BUDGET_EXCEEDED", None),
        row(Rail(s("r")), 502, "RAIL_ERROR", None),
        row(Notifier(s("n")), 502, "NOTIFIER_ERROR", None),
        row(Storage(s("s")), 500, "STORAGE_ERROR", None),
        row(Signer(s("s")), 500, "SIGNER_ERROR", None),
        row(NotImplemented { what: "w" }, 501, "NOT_IMPLEMENTED", None),
    ]
}

#[rustfmt::skip]
fn escrow_rows() -> Vec<Row> {
    use EscrowError::*;
    let field = "buyer_phone_number";
    vec![
        row(InvalidAmount { input: s("x"), reason: s("r") }, 400, "INVALID_AMOUNT", Some("amount")),
        row(InvalidPhone { field, reason: s("r") }, 400, "INVALID_PHONE", Some(field)),
        row(UnknownToken { token: s("x") }, 400, "UNKNOWN_TOKEN", Some("token")),
        row(UnsupportedToken { token: s("USDC") }, 400, "UNSUPPORTED_TOKEN", Some("token")),
        row(InvalidParameter { field: "limit", reason: s("r") }, 400, "INVALID_PARAMETER", Some("limit")),
        row(MissingParameter { field: "reason", reason: s("r") }, 400, "MISSING_PARAMETER", Some("reason")),
        row(InvalidIdempotencyKey { reason: s("r") }, 400, "INVALID_IDEMPOTENCY_KEY", None),
        row(InvalidApiKey, 401, "INVALID_API_KEY", None),
        row(NotAMember { party: "buyer" }, 403, "NOT_A_MEMBER", None),
        row(SandboxUnsupported, 403, "SANDBOX_UNSUPPORTED", None),
        row(NotFound { kind: "escrow", id: s("e"), field: None }, 404, "NOT_FOUND", None),
        row(NotFound { kind: "wallet", id: s("p"), field: Some(field) }, 404, "NOT_FOUND", Some(field)),
        row(InvalidState { state: s("FUNDED"), action: s("fund") }, 409, "INVALID_STATE", None),
        row(PayoutInFlight { action: s("release") }, 409, "PAYOUT_IN_FLIGHT", None),
        row(NothingToRecover { kind: s("LATE USDT") }, 409, "NOTHING_TO_RECOVER", None),
        row(SecondApproverRequired { proposed_by: s("stf_1") }, 409, "SECOND_APPROVER_REQUIRED", None),
        row(ResolutionMismatch { proposed: s("RELEASE") }, 409, "RESOLUTION_MISMATCH", Some("resolution")),
        row(ApprovalMismatch { field: "amount" }, 409, "APPROVAL_MISMATCH", None),
        row(Conflict { what: s("w") }, 409, "CONFLICT", None),
        row(IdempotencyKeyInUse, 409, "IDEMPOTENCY_KEY_IN_USE", None),
        row(SameWallet, 422, "SAME_WALLET", None),
        row(IdempotencyKeyReused, 422, "IDEMPOTENCY_KEY_REUSED", None),
        row(EscrowUnavailable { reason: s("r") }, 503, "ESCROW_UNAVAILABLE", None),
        row(RailNotReady { rail: s("tron"), reason: s("r") }, 503, "RAIL_NOT_READY", None),
        row(ScreeningHit { list: s("l"), reference: s("r") }, 403, "SCREENING_HIT", None),
        row(PolicyDenied { rule_id: s("p:r"), reason: s("r") }, 403, "POLICY_DENIED", None),
        row(ScreeningUnavailable { reason: s("r") }, 503, "SCREENING_UNAVAILABLE", None),
        row(Rail(s("r")), 502, "RAIL_ERROR", None),
        row(Storage(s("s")), 500, "STORAGE_ERROR", None),
        row(InvalidConfig(s("c")), 500, "INVALID_CONFIG", None),
    ]
}

#[rustfmt::skip]
fn checkout_rows() -> Vec<Row> {
    use CheckoutError::*;
    vec![
        row(InvalidAmount { reason: s("r") }, 400, "INVALID_AMOUNT", Some("amount")),
        row(UnknownToken { token: s("x") }, 400, "UNKNOWN_TOKEN", Some("currency")),
        row(UnsupportedNetwork { network: s("x") }, 400, "UNSUPPORTED_NETWORK", Some("networks")),
        row(InvalidParameter { field: "page", reason: s("r") }, 400, "INVALID_PARAMETER", Some("page")),
        row(MissingParameter { field: "amount" }, 400, "MISSING_PARAMETER", Some("amount")),
        row(InvalidIdempotencyKey { reason: s("r") }, 400, "INVALID_IDEMPOTENCY_KEY", None),
        row(WrongKeyKind { expected: "business key" }, 403, "KEY_KIND_NOT_ALLOWED", None),
        row(SandboxOnly, 403, "SANDBOX_ONLY", None),
        row(NotFound { kind: "session", id: s("cs") }, 404, "NOT_FOUND", None),
        row(InvalidState { status: s("PAID") }, 409, "INVALID_STATE", None),
        row(Conflict { what: s("w") }, 409, "CONFLICT", None),
        row(IdempotencyKeyInUse, 409, "IDEMPOTENCY_KEY_IN_USE", None),
        row(IdempotencyKeyReused, 422, "IDEMPOTENCY_KEY_REUSED", None),
        row(RefundExceedsRefundable { refundable: s("0") }, 422, "REFUND_EXCEEDS_REFUNDABLE", Some("amount")),
        row(InsufficientFunds, 422, "INSUFFICIENT_FUNDS", None),
        row(ScreeningHit { list: s("l"), reference: s("r") }, 403, "SCREENING_HIT", None),
        row(PolicyDenied { rule_id: s("p:r"), reason: s("r") }, 403, "POLICY_DENIED", None),
        row(ScreeningUnavailable { reason: s("r") }, 503, "SCREENING_UNAVAILABLE", None),
        row(AmountOutOfRange { min: s("1"), max: s("2") }, 400, "AMOUNT_OUT_OF_RANGE", Some("amount")),
        row(PaymentLinkInactive, 410, "PAYMENT_LINK_INACTIVE", None),
        row(PaymentLinkExpired, 410, "PAYMENT_LINK_EXPIRED", None),
        row(PaymentLinkLimitReached { max_payments: 1 }, 409, "PAYMENT_LINK_LIMIT_REACHED", None),
        row(PhonePaymentUnavailable, 403, "PHONE_PAYMENT_UNAVAILABLE", None),
        row(Payer(stablecoin_core::CoreError::CodeExpired), 410, "CODE_EXPIRED", Some("code")),
        row(Rail(s("r")), 502, "RAIL_ERROR", None),
        row(Storage(s("s")), 500, "STORAGE_ERROR", None),
    ]
}

#[test]
fn every_product_error_keeps_its_status_code_and_param() {
    let rows = [core_rows(), escrow_rows(), checkout_rows()].concat();
    assert_eq!(
        rows.len(),
        53 + 30 + 26,
        "one row per variant (two for escrow NOT_FOUND)"
    );
    for (api, status, code, param) in rows {
        assert_eq!(api.code, code);
        assert_eq!(api.status.as_u16(), status, "{code}");
        assert_eq!(api.param.as_deref(), param, "{code}");
    }
}

/// The words of errors whose text carries internals, and the `Retry-After` of limits,
/// as the old per-product conversions wrote them.
#[test]
fn dependency_failures_keep_their_plain_words_and_limits_their_retry_after() {
    let retry_core = "internal error; the request may be retried with the same Idempotency-Key";
    let retry = "internal error; the request may be retried";
    let rail = "the blockchain rail failed; the request may be retried";
    let cases: Vec<(ApiError, &str)> = vec![
        (CoreError::Storage(s("pw")).into(), retry_core),
        (CoreError::Signer(s("pw")).into(), retry_core),
        (CoreError::Rail(s("pw")).into(), rail),
        (
            CoreError::Notifier(s("pw")).into(),
            "the SMS gateway failed; the request may be retried",
        ),
        (
            CoreError::RateSource(s("pw")).into(),
            "no FX rate is available right now; retry later",
        ),
        (
            CoreError::RateStale(s("pw")).into(),
            "the FX rate feed has not updated this rate recently enough; retry later",
        ),
        (EscrowError::Storage(s("pw")).into(), retry),
        (EscrowError::InvalidConfig(s("pw")).into(), retry),
        (EscrowError::Rail(s("pw")).into(), rail),
        (CheckoutError::Storage(s("pw")).into(), retry),
        (CheckoutError::Rail(s("pw")).into(), rail),
    ];
    for (api, words) in cases {
        assert_eq!(api.message, words, "{}", api.code);
    }
    let shown = ApiError::from(CoreError::NotFound {
        kind: "wallet",
        id: s("w_1"),
    });
    assert_eq!(shown.message, "wallet w_1 not found");
    let limited = ApiError::from(CoreError::TooManyAttempts {
        retry_after_ms: 1_500,
    });
    assert_eq!(limited.retry_after_secs, Some(2));
    let escrow = ApiError::from(EscrowError::Conflict { what: s("w") });
    assert_eq!(escrow.retry_after_secs, None);
}

#[test]
fn every_class_has_one_status() {
    use ErrorClass::*;
    let table = [
        (BadInput, StatusCode::BAD_REQUEST),
        (Unauthorized, StatusCode::UNAUTHORIZED),
        (Forbidden, StatusCode::FORBIDDEN),
        (NotFound, StatusCode::NOT_FOUND),
        (Conflict, StatusCode::CONFLICT),
        (Gone, StatusCode::GONE),
        (Unprocessable, StatusCode::UNPROCESSABLE_ENTITY),
        (RateLimited, StatusCode::TOO_MANY_REQUESTS),
        (Unavailable, StatusCode::SERVICE_UNAVAILABLE),
        (Upstream, StatusCode::BAD_GATEWAY),
        (Internal, StatusCode::INTERNAL_SERVER_ERROR),
        (NotImplemented, StatusCode::NOT_IMPLEMENTED),
    ];
    for (class, code) in table {
        assert_eq!(status(class), code, "{class:?}");
    }
}
