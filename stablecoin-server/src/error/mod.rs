//! The one place where errors become HTTP (ARCHITECTURE §7, API-CONVENTIONS "Errors").
//!
//! Every error body is `{"error": {"code": "...", "message": "...", "param": "..."}}`
//! (`param` only when one request field is at fault). [`status`] maps the [`ErrorClass`]
//! of every product error (core, escrow, checkout) to a status; the server's own codes
//! (authentication, request decoding, idempotency, routing) are built here too, and
//! [`ERROR_CATALOGUE`] lists every code the API can answer, for the OpenAPI document and
//! the README.

mod catalogue;
mod startup;
#[cfg(test)]
mod status_table;
mod webhook;
pub use catalogue::{ERROR_CATALOGUE, catalogue_markdown};
pub use startup::StartupError;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use stablecoin_core::CoreError;
use stablecoin_core::kernel::{ErrorClass, ProductError};
use utoipa::ToSchema;

/// An error response: status, stable code, human message and the field at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status the response carries.
    pub status: StatusCode,
    /// Stable SCREAMING_SNAKE_CASE code, listed in [`ERROR_CATALOGUE`].
    pub code: &'static str,
    /// Human-readable explanation; may change, clients must not parse it.
    pub message: String,
    /// The request field at fault, when exactly one is.
    pub param: Option<String>,
    /// Seconds for a `Retry-After` header (limits and lockouts).
    pub retry_after_secs: Option<i64>,
    /// POLICY_DENIED and APPROVAL_REQUIRED: the rule and the held request (boxed: most
    /// errors have none, and every `Result<_, ApiError>` carries the size).
    pub policy: Option<Box<PolicyRefs>>,
    /// SPONSORSHIP_BUDGET_EXCEEDED: the budget that refused (boxed, as `policy`).
    pub budget: Option<Box<BudgetDetail>>,
}

/// The spending-policy references of an error (issue #51).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRefs {
    /// The rule that refused or held the request, `<policy id>:<rule>`.
    pub rule_id: Option<String>,
    /// The pending request a second approver must agree to (APPROVAL_REQUIRED).
    pub approval_id: Option<String>,
}

/// The JSON error envelope.
#[derive(Clone, Debug, Serialize, serde::Deserialize, ToSchema)]
pub struct ErrorBody {
    /// The error itself.
    pub error: ErrorDetail,
}

/// One error. `code` is stable and SCREAMING_SNAKE_CASE (see the catalogue in the API
/// description); `message` is for humans and may change.
#[derive(Clone, Debug, Serialize, serde::Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code (SCREAMING_SNAKE_CASE); branch on this.
    #[schema(example = "INVALID_PHONE")]
    pub code: String,
    /// Human-readable explanation; may change between versions.
    #[schema(
        example = "invalid phone number \"0700\": phone number must be in E.164 format, starting with '+'"
    )]
    pub message: String,
    /// The request field at fault, when exactly one is.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    #[schema(example = "phone_number")]
    pub param: Option<String>,
    /// POLICY_DENIED and APPROVAL_REQUIRED: the spending-policy rule,
    /// `<policy id>:<rule>`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    #[schema(example = "pol_01hx:max_per_transaction")]
    pub rule_id: Option<String>,
    /// APPROVAL_REQUIRED: the pending request (`apr_...`) a second approver must agree to.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub approval_id: Option<String>,
    /// SPONSORSHIP_BUDGET_EXCEEDED: the budget that refused.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sponsorship_budget: Option<BudgetDetail>,
}

/// The sponsorship budget that refused a payment (issue #51 item 4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
pub struct BudgetDetail {
    /// The rail (`polygon`, `base`, `bsc`, `tron`, `solana`).
    #[schema(example = "polygon")]
    pub rail: String,
    /// `day` or `month`: the UTC calendar period whose cap is reached.
    #[schema(example = "day")]
    pub period: String,
    /// `native` (wei, sun or lamports), `energy` or `bandwidth` (TRON).
    #[schema(example = "native")]
    pub resource: String,
    /// The cap, a decimal integer in the resource's unit.
    #[schema(example = "5000000000000000")]
    pub cap: String,
    /// Consumed in the period so far, same unit.
    #[schema(example = "4900000000000000")]
    pub spent: String,
}

impl ApiError {
    /// An error with the given status, code and message, no `param` and no `Retry-After`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            param: None,
            retry_after_secs: None,
            policy: None,
            budget: None,
        }
    }

    /// Names the request field at fault (`param` in the body).
    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// A `400 Bad Request` with the given code.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// `501 NOT_IMPLEMENTED`: `what` is a feature this server does not provide yet.
    pub fn not_implemented(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_IMPLEMENTED,
            "NOT_IMPLEMENTED",
            format!("{what} is not implemented by this server yet"),
        )
    }

    /// `404 ROUTE_NOT_FOUND`: the router's fallback for an unknown path.
    pub fn route_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "ROUTE_NOT_FOUND",
            "no such endpoint; see /openapi.json",
        )
    }

    /// `405 METHOD_NOT_ALLOWED`: the path exists, but not with this method.
    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "METHOD_NOT_ALLOWED",
            "this endpoint does not accept this HTTP method; see /openapi.json",
        )
    }

    /// `500 INTERNAL`; `message` is sent to the client, so it must carry no internals.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", message)
    }

    /// The JSON envelope this error is answered with.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message.clone(),
                param: self.param.clone(),
                rule_id: self.policy.as_ref().and_then(|p| p.rule_id.clone()),
                approval_id: self.policy.as_ref().and_then(|p| p.approval_id.clone()),
                sponsorship_budget: self.budget.as_deref().cloned(),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // 501 (not wired) and 503 (rail not ready) are expected states, not faults.
        if matches!(self.status.as_u16(), 500 | 502) {
            tracing::warn!(code = self.code, message = %self.message, "request failed");
        }
        let status = self.status;
        let mut res = (status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after_secs {
            res.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(secs.max(1)),
            );
        }
        res.extensions_mut().insert(ErrorCode(self.code));
        res
    }
}

/// The code of an error response, for the request log and metrics.
#[derive(Clone, Copy, Debug)]
pub struct ErrorCode(pub &'static str);

/// The HTTP status of every class of product error: one table for wallets, escrow and
/// checkout, in place of one per product, so a new variant or a new product adds no
/// arm here (its class is chosen where it is declared). No catch-all: a new class must
/// be given its status here.
pub fn status(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::BadInput => StatusCode::BAD_REQUEST,
        ErrorClass::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorClass::Forbidden => StatusCode::FORBIDDEN,
        ErrorClass::NotFound => StatusCode::NOT_FOUND,
        ErrorClass::Conflict => StatusCode::CONFLICT,
        ErrorClass::Gone => StatusCode::GONE,
        ErrorClass::Unprocessable => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorClass::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorClass::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Upstream => StatusCode::BAD_GATEWAY,
        ErrorClass::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorClass::NotImplemented => StatusCode::NOT_IMPLEMENTED,
    }
}

/// Every product error (core, escrow, checkout) is answered the same way: the status of
/// its class, its code and param, a `Retry-After` for limits. An error whose text carries
/// internals is logged and answered with the product's plain words
/// ([`ProductError::public_message`]); every other text is scrubbed of URLs.
impl<E: ProductError> From<E> for ApiError {
    fn from(e: E) -> Self {
        let class = e.class();
        let code = e.code();
        let message = match e.public_message() {
            Some(words) => {
                if class == ErrorClass::Internal {
                    tracing::error!(code, error = %e, "internal error");
                } else {
                    tracing::warn!(code, error = %e, "dependency failed");
                }
                words.to_string()
            }
            None => stablecoin_core::domain::redact::urls(&e.to_string()),
        };
        ApiError {
            status: status(class),
            code,
            message,
            param: e.param().map(str::to_string),
            retry_after_secs: e
                .retry_after_ms()
                .map(stablecoin_core::error::retry_after_secs),
            policy: e.rule_id().map(|rule| {
                Box::new(PolicyRefs {
                    rule_id: Some(rule.to_string()),
                    approval_id: e.approval_id().map(str::to_string),
                })
            }),
            budget: e.sponsorship_budget().map(|b| {
                Box::new(BudgetDetail {
                    rail: b.rail,
                    period: b.period.into(),
                    resource: b.resource.into(),
                    cap: b.cap,
                    spent: b.spent,
                })
            }),
        }
    }
}

/// A core error whose `param` names another request field (e.g. `to_phone_number`).
pub fn at<E: Into<CoreError>>(field: &str) -> impl Fn(E) -> ApiError + '_ {
    move |e| {
        let mut a = ApiError::from(e.into());
        if a.param.is_some() {
            a.param = Some(field.to_string());
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stablecoin_escrow::EscrowError;

    fn every_variant() -> Vec<CoreError> {
        use CoreError::*;
        vec![
            InvalidAmount {
                input: "x".into(),
                reason: "r".into(),
            },
            InvalidPhone {
                input: "x".into(),
                reason: "r".into(),
            },
            UnknownToken { token: "x".into() },
            TokenNotCarried {
                rail: "tron".into(),
                token: "USDC".into(),
                carried: "USDT".into(),
            },
            UnknownCurrency {
                currency: "x".into(),
            },
            InvalidQuoteId {
                quote_id: "x".into(),
                reason: "r".into(),
            },
            InvalidParameter {
                field: "f",
                reason: "r".into(),
            },
            InvalidPricing { reason: "r".into() },
            InvalidIdempotencyKey { reason: "r".into() },
            InvalidApiKey,
            ApiKeyRevoked,
            NotAMember,
            SandboxUnsupported { what: "w".into() },
            KeyOutOfScope { reason: "r".into() },
            FeeAboveCeiling { reason: "r".into() },
            NotFound {
                kind: "k",
                id: "i".into(),
            },
            QuoteExpired {
                quote_id: "q".into(),
            },
            QuoteAlreadyUsed {
                quote_id: "q".into(),
            },
            AlreadyConfirmed {
                id: "tu".into(),
                fiat_reference: "r".into(),
            },
            FiatReferenceUsed {
                fiat_reference: "r".into(),
            },
            SecondApproverRequired {
                proposed_by: "admin-token".into(),
            },
            ApprovalMismatch {
                field: "fiat_reference",
            },
            QuoteTokenMismatch {
                quote_token: "a".into(),
                token: "b".into(),
            },
            CodeExpired,
            CodeInvalid { attempts_left: 1 },
            TooManyAttempts {
                retry_after_ms: 1_500,
            },
            RateLimited {
                what: "w".into(),
                retry_after_ms: 1,
            },
            CodeAlreadyUsed,
            AlreadyAMember,
            PhoneInUse { phone: "p".into() },
            InsufficientFunds {
                available: "1".into(),
                needed: "2".into(),
            },
            SameWallet,
            IdempotencyKeyReused,
            IdempotencyKeyInUse,
            InvalidTransition {
                machine: "m",
                from: "a".into(),
                event: "e".into(),
            },
            Conflict {
                what: "w".into(),
                record: None,
            },
            RailNotReady {
                rail: "r".into(),
                reason: "r".into(),
            },
            Rail("r".into()),
            Storage("s".into()),
            Signer("s".into()),
            RateSource("r".into()),
            RateStale("r".into()),
            Notifier("n".into()),
            NotImplemented { what: "w" },
            ScreeningHit {
                list: "l".into(),
                reference: "r".into(),
            },
            ScreeningUnavailable { reason: "r".into() },
            PolicyDenied {
                rule_id: "p:r".into(),
                reason: "r".into(),
            },
            ApprovalRequired {
                approval_id: "a".into(),
                rule_id: "p:r".into(),
            },
            SponsorshipBudgetExceeded {
                rail: "polygon".into(),
                period: "day",
                resource: "native",
                cap: "10".into(),
                spent: "10".into(),
                retry_after_ms: 1_000,
            },
        ]
    }

    #[test]
    fn every_core_error_has_a_documented_status() {
        for e in every_variant() {
            let api = ApiError::from(e.clone());
            let entry = ERROR_CATALOGUE
                .iter()
                .find(|(c, _, _)| *c == e.code())
                .unwrap_or_else(|| panic!("{} missing from the catalogue", e.code()));
            assert_eq!(api.status.as_u16(), entry.1, "{}", e.code());
            assert!(
                api.status != StatusCode::INTERNAL_SERVER_ERROR
                    || matches!(e, CoreError::Storage(_) | CoreError::Signer(_)),
                "{} must not be a 500",
                e.code()
            );
        }
    }

    #[test]
    fn internal_details_are_not_leaked() {
        let api = ApiError::from(CoreError::Storage("password=hunter2".into()));
        assert!(!api.message.contains("hunter2"));
    }

    #[test]
    fn no_url_or_dependency_detail_reaches_a_client() {
        let key = "https://polygon.example/v3/SECRETKEY";
        for e in [
            CoreError::Rail(format!("error sending request for url ({key})")),
            CoreError::Notifier(format!("POST {key}: 401")),
            CoreError::RateSource(format!("GET {key}: timeout")),
            CoreError::RateStale(format!("GET {key}: XOF_USDC is 900 s old")),
            CoreError::RailNotReady {
                rail: "polygon".into(),
                reason: format!("INBOUND_READY: rpc {key} unreachable"),
            },
        ] {
            let api = ApiError::from(e.clone());
            assert!(
                !api.message.contains("SECRETKEY"),
                "{}: {}",
                e.code(),
                api.message
            );
            assert!(!api.message.contains("polygon.example"), "{}", api.message);
        }
        let api = ApiError::from(EscrowError::Rail(format!("TRON api {key}")));
        assert!(!api.message.contains("SECRETKEY"), "{}", api.message);
    }

    #[test]
    fn catalogue_codes_are_unique() {
        let mut codes: Vec<_> = ERROR_CATALOGUE.iter().map(|e| e.0).collect();
        codes.sort();
        let n = codes.len();
        codes.dedup();
        assert_eq!(codes.len(), n);
    }
}
