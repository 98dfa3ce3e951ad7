//! The request constraints of the OpenAPI document, written once, next to the parsers they
//! describe.
//!
//! Why a module of its own: `/openapi.json` must say exactly what the handlers and the
//! engine accept (API-CONVENTIONS "The OpenAPI document tells the truth"), and schemathesis
//! checks it against a live server. The request types keep `String` fields (so a bad
//! value gets its own error code and `param`, e.g. `INVALID_PHONE` on `to_phone_number`)
//! and point at the named schemas here with `#[schema(value_type = ...)]`; enumerations are
//! built from the engine's own lists (`Token::ALL`, `CURRENCIES`, the reachable states), so
//! they cannot drift. The tests in `tests/openapi_truth.rs` check every pattern against
//! the parser it describes.
//!
//! Patterns are written in the subset that ECMA-262, Python `re` and Rust `regex` read
//! alike (no look-around, no backreferences).

use serde_json::{Value, json};
use stablecoin_core::domain::money::{CURRENCIES, Token};
use stablecoin_core::domain::state::{OpKind, reachable_states};
use stablecoin_escrow::EscrowState;
use stablecoin_webhooks::DeliveryState;
use std::borrow::Cow;
use utoipa::openapi::schema::{AnyOfBuilder, Object, OneOfBuilder, Schema};
use utoipa::openapi::{RefOr, Type};

/// E.164 (`Phone::parse`): `+`, then 8 to 15 digits, the first not zero. The parser also
/// tolerates human formatting (spaces, dashes, dots, parentheses) and normalises it away;
/// the document states the canonical form only.
pub const PHONE_PATTERN: &str = r"^\+[1-9][0-9]{7,14}$";

/// The unanchored body of [`TOKEN_AMOUNT_PATTERN`], shared with [`QUOTE_REF_PATTERN`].
macro_rules! token_amount_core {
    () => {
        r"([1-9][0-9]{0,11}(\.[0-9]{1,6})?|0\.([1-9][0-9]{0,5}|0[1-9][0-9]{0,4}|00[1-9][0-9]{0,3}|000[1-9][0-9]{0,2}|0000[1-9][0-9]?|00000[1-9]))"
    };
}

/// A positive token amount with at most 6 decimal places and at most 12 whole digits
/// (`Micros::parse_positive`: up to `Micros::MAX_REQUEST`).
pub const TOKEN_AMOUNT_PATTERN: &str = concat!("^", token_amount_core!(), "$");

/// `quote_id` (`parse_quote_ref`): an FX quote id (`fx_` + 26 Crockford base32
/// characters) or `DIRECT_CRYPTO:{USDC|USDT}:{amount}`.
pub const QUOTE_REF_PATTERN: &str = concat!(
    r"^(fx_[0-9A-HJKMNP-TV-Z]{26}|DIRECT_CRYPTO:(USDC|USDT):",
    token_amount_core!(),
    ")$"
);

/// A fiat amount given as a string (`parse_fiat_amount`): positive, at most 2 decimal
/// places, below 10^12. (The parser also reads exponent forms and trailing zeros, which a
/// JSON number may need; the document states the plain form.)
pub const FIAT_AMOUNT_PATTERN: &str =
    r"^([1-9][0-9]{0,11}(\.[0-9]{1,2})?|0\.([1-9][0-9]?|0[1-9]))$";

/// The largest fiat amount a quote takes (`parse_fiat_amount`).
pub const MAX_FIAT_AMOUNT: u64 = 1_000_000_000_000;

/// A one-time code as the engine sends it: `CODE_DIGITS` (6) digits.
pub const OTP_CODE_PATTERN: &str = r"^[0-9]{6}$";

/// `Idempotency-Key`: 1 to 255 printable ASCII characters (`validate_idempotency_key`),
/// without leading or trailing spaces, which HTTP strips from a header value.
pub const IDEMPOTENCY_KEY_PATTERN: &str = r"^[!-~]([ -~]{0,253}[!-~])?$";

/// A webhook URL: absolute `https`, printable ASCII (so its 2048-byte limit is 2048
/// characters).
pub const WEBHOOK_URL_PATTERN: &str = r"^https://[!-~]+$";
/// The webhook URL limit (`check_url`).
pub const WEBHOOK_URL_MAX: usize = 2048;
/// Event types one endpoint may subscribe to at most.
pub const WEBHOOK_EVENTS_MAX: usize = 64;

/// Wallet-family event names: the fixed list, and `escrow.` followed by anything.
fn wallet_event_pattern() -> String {
    let names: Vec<String> = stablecoin_webhooks::delivery::WALLET_EVENT_TYPES
        .iter()
        .map(|n| n.replace('.', r"\."))
        .collect();
    format!(r"^({}|escrow\..+)$", names.join("|"))
}

/// Payments-family event names: the fixed list, and `wallet.transfer.<lowercase word>`.
fn payments_event_pattern() -> String {
    let names: Vec<String> = stablecoin_webhooks::payments::PAYMENTS_EVENT_TYPES
        .iter()
        .map(|n| n.replace('.', r"\."))
        .collect();
    format!(r"^({}|wallet\.transfer\.[a-z_]+)$", names.join("|"))
}

/// Free text of escrow requests (`clean_text`): no control character but the line feed.
pub const FREE_TEXT_PATTERN: &str = r"^[^\u0000-\u0009\u000B-\u001F\u007F-\u009F]*$";
/// Free text that must not be blank once trimmed (a dispute's reason, a reference).
pub const NON_BLANK_TEXT_PATTERN: &str = r"^[^\u0000-\u0009\u000B-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u0009\u000B-\u001F\u007F-\u009F]*$";
/// A top-up's fiat reference (`TopUpConfirmation::checked`): one line (no control
/// character at all), not blank once trimmed.
pub const FIAT_REFERENCE_PATTERN: &str = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$";
/// An escrow reference's length limit (characters).
pub const ESCROW_REFERENCE_MAX: usize = 200;
/// A dispute reason's (or any action reason's) length limit (characters).
pub const ESCROW_TEXT_MAX: usize = 1000;

/// `limit` of every list (API-CONVENTIONS "Lists").
pub const LIST_LIMIT_MAX: u32 = 100;
/// Default `limit`.
pub const LIST_LIMIT_DEFAULT: u32 = 20;
/// `page` of every list: from 1 to this.
pub const LIST_PAGE_MAX: u32 = 1_000_000;

/// A schema from its JSON form (the builders are verbose for nested shapes; the tests
/// read every component back, so a typo here fails them, not a client).
pub(crate) fn from_json(v: Value) -> RefOr<Schema> {
    serde_json::from_value::<Schema>(v)
        .map(RefOr::T)
        .unwrap_or_else(|_| RefOr::T(Schema::Object(Object::with_type(Type::Object))))
}

/// The regular expression of "a whole number from 1 to `max`" without leading zeros (the
/// escrow amount, whose limit is configured).
pub fn whole_number_up_to(max: u64) -> String {
    let digits = max.to_string();
    let n = digits.len();
    let d: Vec<u8> = digits.bytes().map(|b| b - b'0').collect();
    let mut alts = Vec::new();
    if n > 1 {
        // Every number with fewer digits.
        alts.push(if n == 2 {
            "[1-9]".to_string()
        } else {
            format!("[1-9][0-9]{{0,{}}}", n - 2)
        });
    }
    // Numbers of n digits: equal to `max` up to position i, then smaller there.
    for i in 0..n {
        let low = if i == 0 { 1 } else { 0 };
        if d[i] > low {
            let class = if d[i] - 1 == low {
                format!("{low}")
            } else {
                format!("[{low}-{}]", d[i] - 1)
            };
            let rest = n - i - 1;
            let tail = match rest {
                0 => String::new(),
                1 => "[0-9]".into(),
                r => format!("[0-9]{{{r}}}"),
            };
            alts.push(format!("{}{class}{tail}", &digits[..i]));
        }
    }
    if max > 0 {
        alts.push(digits.clone());
    }
    format!("^({})$", alts.join("|"))
}

/// A named schema computed at run time.
macro_rules! named_schema {
    ($(#[$m:meta])* $name:ident => $body:expr) => {
        $(#[$m])*
        pub struct $name;
        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                from_json($body)
            }
        }
        impl utoipa::ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    };
}

fn token_enum(tokens: &[Token], what: &str) -> Value {
    let names: Vec<&str> = tokens.iter().map(|t| t.as_str()).collect();
    json!({"type": "string", "enum": names, "description": what, "example": names.first()})
}

/// The token schema of a rail (its carried tokens), for [`super::document`] to refresh
/// from the running server's rails.
pub(crate) fn rail_token_schema(tokens: &[Token], rail: &str) -> RefOr<Schema> {
    from_json(token_enum(
        tokens,
        &format!("A token the {rail} rail carries (others are UNKNOWN_TOKEN)."),
    ))
}

named_schema!(
    /// An E.164 phone number.
    PhoneNumber => json!({
        "type": "string",
        "pattern": PHONE_PATTERN,
        "description": "E.164 phone number: `+` and 8 to 15 digits, the first not zero. Spaces, dashes, dots and parentheses after the `+` are also accepted and removed.",
        "example": "+2250700000001"
    })
);

named_schema!(
    /// A positive token amount.
    TokenAmount => json!({
        "type": "string",
        "pattern": TOKEN_AMOUNT_PATTERN,
        "description": "Positive token amount as a decimal string: at most 6 decimal places, below 10^12 (responses carry exactly 6 places).",
        "example": "25.00"
    })
);

named_schema!(
    /// Any token the API knows.
    TokenName => token_enum(&Token::ALL, "USDC or USDT.")
);

named_schema!(
    /// A token of the EVM rail.
    EvmToken => token_enum(&Token::ALL, "A token the EVM rail carries (others are UNKNOWN_TOKEN).")
);

named_schema!(
    /// A token of the TRON rail.
    TronToken => token_enum(&[Token::Usdt], "A token the TRON rail carries: USDT.")
);

named_schema!(
    /// A token of the Solana rail.
    SolanaToken => token_enum(&Token::ALL, "A token the Solana rail carries (others are UNKNOWN_TOKEN).")
);

named_schema!(
    /// A fiat currency the FX desk quotes.
    CurrencyCode => json!({
        "type": "string",
        "enum": CURRENCIES.iter().map(|c| c.code).collect::<Vec<_>>(),
        "description": "ISO 4217 code of a supported fiat currency.",
        "example": "XOF"
    })
);

named_schema!(
    /// `quote_id` of a send.
    QuoteRef => json!({
        "type": "string",
        "pattern": QUOTE_REF_PATTERN,
        "description": "An FX quote id from `POST /api/v1/fx/quote` (`fx_` and 26 Crockford base32 characters; single use, 60 s) or `DIRECT_CRYPTO:{USDC|USDT}:{amount}`. Its token must be the request's `token` (else 422 QUOTE_TOKEN_MISMATCH).",
        "example": "DIRECT_CRYPTO:USDC:25"
    })
);

named_schema!(
    /// A one-time code.
    OneTimeCode => json!({
        "type": "string",
        "pattern": OTP_CODE_PATTERN,
        "description": "The 6-digit one-time code the customer received by SMS.",
        "example": "123456"
    })
);

named_schema!(
    /// `limit` of a list.
    ListLimit => json!({
        "type": "integer", "minimum": 1, "maximum": LIST_LIMIT_MAX,
        "default": LIST_LIMIT_DEFAULT, "description": "Items per page."
    })
);

named_schema!(
    /// `page` of a list.
    ListPage => json!({
        "type": "integer", "minimum": 1, "maximum": LIST_PAGE_MAX,
        "default": 1, "description": "1-based page number."
    })
);

named_schema!(
    /// A transfer status, as the transfer list filters it.
    TransferStatus => json!({
        "type": "string",
        "enum": reachable_states(OpKind::Transfer).iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "description": "A transfer status."
    })
);

named_schema!(
    /// A swap status, as the swap list filters it.
    SwapStatusName => json!({
        "type": "string",
        "enum": reachable_states(OpKind::Swap).iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "description": "A swap status."
    })
);

named_schema!(
    /// A top-up status.
    TopUpStatusName => json!({
        "type": "string",
        "enum": stablecoin_core::domain::topup::TopUpStatus::ALL.map(|s| s.as_str()),
        "description": "A top-up status."
    })
);

named_schema!(
    /// A payment-session status.
    SessionStatus => json!({
        "type": "string",
        "enum": stablecoin_checkout::SessionStatus::ALL.map(|s| s.as_str()),
        "description": "A payment-session status."
    })
);

named_schema!(
    /// An escrow state.
    EscrowStateName => json!({
        "type": "string",
        "enum": EscrowState::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "description": "An escrow state."
    })
);

named_schema!(
    /// A stray deposit status.
    StrayStatusName => json!({
        "type": "string",
        "enum": stablecoin_core::kernel::stray::StrayStatus::ALL.map(|s| s.as_str()),
        "description": "A stray deposit status."
    })
);

fn delivery_states() -> Vec<&'static str> {
    [
        DeliveryState::Pending,
        DeliveryState::Delivered,
        DeliveryState::Dead,
    ]
    .iter()
    .map(|s| s.as_str())
    .collect()
}

named_schema!(
    /// A webhook delivery state.
    DeliveryStateName => json!({
        "type": "string",
        "enum": delivery_states(),
        "description": "A webhook delivery state."
    })
);

named_schema!(
    /// An RFC 3339 timestamp.
    Rfc3339 => json!({
        "type": "string",
        "format": "date-time",
        "description": "RFC 3339 timestamp.",
        "example": "2026-11-22T10:00:00Z"
    })
);

fn endpoint_variant(family: Value, events: String, family_required: bool) -> Value {
    let mut required = vec!["url", "events"];
    if family_required {
        required.push("family");
    }
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "family": family,
            "url": {
                "type": "string",
                "pattern": WEBHOOK_URL_PATTERN,
                "maxLength": WEBHOOK_URL_MAX,
                "description": "Absolute `https://` URL whose host resolves to public addresses only (a loopback `http://` URL only where the server allows it).",
                "example": "https://example.com/webhooks"
            },
            "events": {
                "type": "array",
                "minItems": 1,
                "maxItems": WEBHOOK_EVENTS_MAX,
                "items": {"type": "string", "pattern": events},
                "description": "Event types of the endpoint's family (duplicates are ignored)."
            }
        }
    })
}

impl utoipa::PartialSchema for super::webhooks::CreateEndpointBody {
    /// Two shapes, one per family: the event names must be of the endpoint's family.
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .description(Some("Register an endpoint. `family` `wallet` (the default: spec 6.1, `X-Svc-Signature`) subscribes to wallet-service events (`transfer.received`, `transfer.settled`, `transfer.failed`, `swap.settled`, `swap.failed`, `user.linked`, `user.phone_changed`, `treasury.topup.credited`, `escrow.*`); `payments` (spec 6.2, `X-Webhook-Signature`, `whsec_` secret) to `payment.confirmed`, `payment.failed`, `wallet.deposit.detected`, `wallet.deposit.confirmed`, `wallet.deposit.hash_resolved` and `wallet.transfer.<status>`. Unknown fields are refused (`UNKNOWN_FIELD`)."))
            .item(from_json(endpoint_variant(
                json!({"type": ["string", "null"], "enum": ["wallet", null]}),
                wallet_event_pattern(),
                false,
            )))
            .item(from_json(endpoint_variant(
                json!({"type": "string", "enum": ["payments"]}),
                payments_event_pattern(),
                true,
            )))
            .into()
    }
}

impl utoipa::ToSchema for super::webhooks::CreateEndpointBody {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("CreateEndpointBody")
    }
}

impl utoipa::PartialSchema for super::topups::ConfirmTopUpBody {
    fn schema() -> RefOr<Schema> {
        use stablecoin_core::domain::topup::{FIAT_REFERENCE_MAX, NOTE_MAX};
        from_json(json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["fiat_reference"],
            "description": "`POST /admin/v1/topups/{id}/confirm`. Unknown fields are refused (`UNKNOWN_FIELD`).",
            "properties": {
                "fiat_reference": {
                    "type": "string",
                    "pattern": FIAT_REFERENCE_PATTERN,
                    "minLength": 1,
                    "maxLength": FIAT_REFERENCE_MAX,
                    "description": "The fiat receipt's reference (bank or mobile-money transaction id): one line, not blank. One reference confirms one top-up (else 409 FIAT_REFERENCE_USED).",
                    "example": "BANK-2026-0001"
                },
                "note": {
                    "type": ["string", "null"],
                    "pattern": FREE_TEXT_PATTERN,
                    "maxLength": NOTE_MAX,
                    "description": "A note for the audit trail."
                }
            }
        }))
    }
}

impl utoipa::ToSchema for super::topups::ConfirmTopUpBody {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ConfirmTopUpBody")
    }
}

impl utoipa::PartialSchema for super::types::FiatAmount {
    fn schema() -> RefOr<Schema> {
        AnyOfBuilder::new()
            .description(Some("Amount in local fiat, positive, at most 2 decimal places, at most 10^12: a JSON number (spec 2.3) or a decimal string."))
            .item(from_json(json!({
                "type": "number", "exclusiveMinimum": 0, "maximum": MAX_FIAT_AMOUNT, "multipleOf": 0.01
            })))
            .item(from_json(json!({"type": "string", "pattern": FIAT_AMOUNT_PATTERN})))
            .examples([json!(6000)])
            .into()
    }
}

impl utoipa::ToSchema for super::types::FiatAmount {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("FiatAmount")
    }
}

/// The send body of a parallel rail: the EVM send body with that rail's tokens.
fn rail_send_body(token: &str, rail: &str) -> RefOr<Schema> {
    let mut v = serde_json::to_value(<super::types::SendBody as utoipa::PartialSchema>::schema())
        .unwrap_or(Value::Null);
    v["properties"]["token"] = json!({"$ref": format!("#/components/schemas/{token}")});
    // The route names the chain: `network` is refused there (UNKNOWN_FIELD), so it is
    // not described.
    if let Some(props) = v["properties"].as_object_mut() {
        props.remove("network");
    }
    if let Some(required) = v["required"].as_array_mut() {
        required.retain(|r| r != "network");
    }
    v["description"] = json!(format!(
        "`POST /v1/{rail}/transfers/send`. Unknown fields are refused (`UNKNOWN_FIELD`)."
    ));
    from_json(v)
}

/// A send body of a parallel rail, named for the document.
macro_rules! rail_send_body {
    ($(#[$m:meta])* $name:ident, $token:literal, $rail:literal) => {
        $(#[$m])*
        pub struct $name;
        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                rail_send_body($token, $rail)
            }
        }
        // Its references (the phone, the quote, the rail's token) are in `components`.
        impl utoipa::ToSchema for $name {}
    };
}

rail_send_body!(
    /// `POST /v1/tron/transfers/send`.
    TronSendBody, "TronToken", "tron"
);
rail_send_body!(
    /// `POST /v1/solana/transfers/send`.
    SolanaSendBody, "SolanaToken", "solana"
);

/// Every named schema of this module, for the document's components: parameters refer
/// to them too, and utoipa collects components from bodies and responses only.
pub(crate) fn components() -> Vec<(String, RefOr<Schema>)> {
    fn one<T: utoipa::ToSchema>() -> (String, RefOr<Schema>) {
        (T::name().into_owned(), T::schema())
    }
    vec![
        one::<PhoneNumber>(),
        one::<TokenAmount>(),
        one::<TokenName>(),
        one::<EvmToken>(),
        one::<TronToken>(),
        one::<SolanaToken>(),
        one::<CurrencyCode>(),
        one::<QuoteRef>(),
        one::<OneTimeCode>(),
        one::<ListLimit>(),
        one::<ListPage>(),
        one::<TransferStatus>(),
        one::<SwapStatusName>(),
        one::<TopUpStatusName>(),
        one::<SessionStatus>(),
        one::<EscrowStateName>(),
        one::<StrayStatusName>(),
        one::<DeliveryStateName>(),
        one::<Rfc3339>(),
    ]
}

/// The escrow request schemas, with the bounds of the running escrow engine.
pub(crate) fn escrow_request_schemas(
    c: &stablecoin_escrow::EscrowConfig,
) -> Vec<(&'static str, RefOr<Schema>)> {
    let phone = json!({"$ref": "#/components/schemas/PhoneNumber"});
    let on_behalf_of = json!({
        "type": ["string", "null"],
        "enum": ["BUYER", "SELLER", null],
        "description": "The partner's assertion that it acts for that user; recorded as evidence, never verified."
    });
    let action = |reason: Value, required: &[&str], what: &str| {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": required,
            "description": what,
            "properties": {"on_behalf_of": on_behalf_of, "reason": reason}
        })
    };
    let max_tokens = c.max_amount.get() / 1_000_000;
    vec![
        (
            "CreateEscrowRequest",
            from_json(json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["buyer_phone_number", "seller_phone_number", "amount", "reference"],
                "description": "`POST /v1/escrows`. Buyer and seller are different wallets, both provisioned and linked to the caller. Unknown fields are refused (`UNKNOWN_FIELD`).",
                "properties": {
                    "buyer_phone_number": phone,
                    "seller_phone_number": phone,
                    "amount": {
                        "type": "string",
                        "pattern": whole_number_up_to(max_tokens),
                        "description": format!("Whole tokens, 1 to {max_tokens} (`\"150\"`); responses carry base units (`\"150000000\"`)."),
                        "example": "150"
                    },
                    "token": {"type": ["string", "null"], "enum": ["USDT", null], "description": "USDT, the default and the only token escrow moves."},
                    "reference": {
                        "type": "string", "minLength": 1, "maxLength": ESCROW_REFERENCE_MAX,
                        "pattern": NON_BLANK_TEXT_PATTERN,
                        "description": "The partner's reference: not blank, no control characters but line feeds.",
                        "example": "order-1042"
                    },
                    "funding_window_secs": {
                        "type": ["integer", "null"],
                        "minimum": c.min_funding_window_secs, "maximum": c.max_funding_window_secs,
                        "description": format!("Funding window in seconds; {} when absent.", c.default_funding_window_secs)
                    },
                    "auto_release_after_secs": {
                        "type": ["integer", "null"],
                        "minimum": c.min_auto_release_after_secs, "maximum": c.max_auto_release_after_secs,
                        "description": "Inspection window in seconds, from confirmed funding; absent: the escrow never releases by itself."
                    }
                }
            })),
        ),
        (
            "EscrowActionRequest",
            from_json(action(
                json!({
                    "type": ["string", "null"], "maxLength": ESCROW_TEXT_MAX,
                    "pattern": FREE_TEXT_PATTERN,
                    "description": "Optional; recorded in the permanent history."
                }),
                &[],
                "Release, refund or cancel. Unknown fields are refused (`UNKNOWN_FIELD`).",
            )),
        ),
        (
            "DisputeEscrowRequest",
            from_json(action(
                json!({
                    "type": "string", "minLength": 1, "maxLength": ESCROW_TEXT_MAX,
                    "pattern": NON_BLANK_TEXT_PATTERN,
                    "description": "Why the deal is disputed; recorded in the permanent history."
                }),
                &["reason"],
                "Dispute: `reason` is required. Unknown fields are refused (`UNKNOWN_FIELD`).",
            )),
        ),
    ]
}

/// `POST /v1/escrows/{id}/dispute` (its schema is `escrow_request_schemas`'s; the body
/// decodes as `EscrowActionRequest`, the engine requiring the reason).
pub struct DisputeEscrowRequest;
impl utoipa::PartialSchema for DisputeEscrowRequest {
    fn schema() -> RefOr<Schema> {
        escrow_request_schemas(&stablecoin_escrow::EscrowConfig::default())
            .into_iter()
            .find(|(n, _)| *n == "DisputeEscrowRequest")
            .map(|(_, s)| s)
            .unwrap_or_else(|| from_json(json!({"type": "object"})))
    }
}
impl utoipa::ToSchema for DisputeEscrowRequest {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_number_up_to_matches_exactly_one_to_max() {
        for max in [
            1u64, 7, 9, 10, 19, 20, 99, 100, 101, 250, 1000, 1_000_000, 1_234_567,
        ] {
            let re = regex::Regex::new(&whole_number_up_to(max)).unwrap();
            for n in 0..=(max + 20).min(3_000) {
                assert_eq!(
                    re.is_match(&n.to_string()),
                    n >= 1 && n <= max,
                    "{max}: {n}"
                );
            }
            assert!(re.is_match(&max.to_string()));
            assert!(!re.is_match(&(max + 1).to_string()));
            assert!(!re.is_match(&format!("0{max}")));
        }
    }
}
