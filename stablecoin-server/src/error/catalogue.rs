//! The error catalogue: every stable code the API answers, with its HTTP status and
//! meaning, in one table (the OpenAPI description and the README are generated from
//! it; the tests in `super` check the mappings agree with it).

/// Every code the API answers, its status and meaning (documented in the OpenAPI
/// description and the README; a test checks the mapping above agrees).
pub const ERROR_CATALOGUE: &[(&str, u16, &str)] = &[
    // request decoding (server)
    ("MALFORMED_JSON", 400, "The body is not a JSON object."),
    (
        "MALFORMED_CALLBACK",
        400,
        "A provider's callback (an SMS delivery report, a payout result) is not in the provider's documented form.",
    ),
    (
        "CALLBACK_MISMATCH",
        409,
        "A payout provider's callback, at the payout's own URL, names another request, payout, amount, currency or payee than the payout's: refused, logged, nothing recorded.",
    ),
    // checkout
    (
        "UNSUPPORTED_NETWORK",
        400,
        "A checkout network that is not configured or carries none of the session's tokens.",
    ),
    (
        "SANDBOX_ONLY",
        403,
        "Only a test business key (test_sk_) can simulate a payment.",
    ),
    (
        "REFUND_EXCEEDS_REFUNDABLE",
        422,
        "A checkout refund above what the session can still refund in that token (what it received, less its refunds not returned); nothing is moved.",
    ),
    (
        "AMOUNT_OUT_OF_RANGE",
        400,
        "A payer's amount is outside the payment link's min_amount..max_amount.",
    ),
    (
        "PAYMENT_LINK_INACTIVE",
        410,
        "The payment link was deactivated: it opens no more sessions.",
    ),
    (
        "PAYMENT_LINK_EXPIRED",
        410,
        "The payment link is past its expires_at: it opens no more sessions.",
    ),
    (
        "PAYMENT_LINK_LIMIT_REACHED",
        409,
        "As many of the payment link's sessions as its max_payments are paid or still open.",
    ),
    (
        "PHONE_PAYMENT_UNAVAILABLE",
        403,
        "Paying from a phone wallet is not available for this session: a test session (paid by simulated deposits only), or no wallets run beside the checkout.",
    ),
    (
        "INTAKE_DISABLED",
        404,
        "The deposit intake is not configured ([checkout] intake_secret).",
    ),
    // escrow
    ("UNSUPPORTED_TOKEN", 400, "Escrow moves only TRON USDT."),
    (
        "MISSING_PARAMETER",
        400,
        "A required field is absent or empty (a dispute's reason, a resolution_note).",
    ),
    (
        "PAYOUT_IN_FLIGHT",
        409,
        "A payout of the escrow is claimed and not yet settled.",
    ),
    (
        "NOTHING_TO_RECOVER",
        409,
        "The escrow holds no recoverable balance of that kind.",
    ),
    (
        "SECOND_APPROVER_REQUIRED",
        409,
        "Two-person rule: the proposer of a staff decision above its cap (an escrow resolution or recovery, a top-up confirmation) cannot approve it; a different staff identity must (the admin token is one identity).",
    ),
    (
        "APPROVAL_MISMATCH",
        409,
        "Two-person rule: the approval does not repeat the pending proposal (a top-up's fiat_reference, a recovery's kind, token or amount); nothing changed.",
    ),
    (
        "RESOLUTION_MISMATCH",
        409,
        "Two-person rule: the pending proposal is the other resolution; approve it or let its proposer change it.",
    ),
    (
        "ESCROW_UNAVAILABLE",
        503,
        "TRON deposits are disabled: no new escrow is admitted.",
    ),
    (
        "INVALID_CONFIG",
        500,
        "The server's escrow configuration is invalid.",
    ),
    (
        "UNKNOWN_FIELD",
        400,
        "A request body carries a field the endpoint does not know.",
    ),
    ("MISSING_FIELD", 400, "A required field is absent."),
    ("INVALID_TYPE", 400, "A field has the wrong JSON type."),
    (
        "INVALID_QUERY",
        400,
        "The query string is malformed or carries an unknown parameter.",
    ),
    ("INVALID_PATH", 400, "A path parameter is malformed."),
    (
        "PAYLOAD_TOO_LARGE",
        413,
        "The body exceeds the server's limit.",
    ),
    (
        "UNSUPPORTED_MEDIA_TYPE",
        415,
        "The body is not application/json.",
    ),
    // core validation
    (
        "INVALID_AMOUNT",
        400,
        "A token amount is not a positive decimal with at most 6 places.",
    ),
    (
        "AMOUNT_TOO_SMALL",
        400,
        "A send is below the rail's minimum (the service sponsors its cost).",
    ),
    ("INVALID_PHONE", 400, "A phone number is not E.164."),
    ("UNKNOWN_TOKEN", 400, "The token is not USDC or USDT."),
    (
        "UNKNOWN_CURRENCY",
        400,
        "The fiat currency is not supported.",
    ),
    (
        "INVALID_QUOTE_ID",
        400,
        "quote_id is neither an fx_ id nor DIRECT_CRYPTO:{TOKEN}:{amount}.",
    ),
    (
        "INVALID_PARAMETER",
        400,
        "A parameter is out of range or malformed.",
    ),
    ("INVALID_PRICING", 400, "Tenant pricing is inconsistent."),
    (
        "INVALID_IDEMPOTENCY_KEY",
        400,
        "Idempotency-Key is not 1-255 printable ASCII characters.",
    ),
    // authentication / authority
    ("MISSING_API_KEY", 401, "No X-API-Key header."),
    (
        "MALFORMED_API_KEY",
        401,
        "The X-API-Key value does not have the shape of any key.",
    ),
    ("INVALID_API_KEY", 401, "The key is unknown."),
    ("API_KEY_REVOKED", 401, "The key has been revoked."),
    (
        "ADMIN_TOKEN_REQUIRED",
        401,
        "A staff route (/admin/v1/...) without the admin bearer token or a staff secret, or with a wrong one.",
    ),
    (
        "STAFF_ACCOUNT_DISABLED",
        401,
        "The staff account of this secret is disabled.",
    ),
    (
        "KEY_KIND_NOT_ALLOWED",
        403,
        "A business key (live_sk_/test_sk_) on a tenant endpoint, a tenant key on the checkout list, or an API key on a staff route.",
    ),
    (
        "NOT_A_MEMBER",
        403,
        "The calling tenant is not a member of the wallet.",
    ),
    (
        "SANDBOX_UNSUPPORTED",
        403,
        "A test key on a mutation that has no sandbox simulation.",
    ),
    (
        "KEY_OUT_OF_SCOPE",
        403,
        "A dashboard session asked for more than its key may give (a key of another mode, or revoking a key it did not issue); or a key outside its role: an approver key on any route but /v1/policy-approvals, or another key on those.",
    ),
    (
        "FEE_ABOVE_CEILING",
        403,
        "A tenant fee above the self-service ceiling ([consoles] max_tenant_fee_bps, max_tenant_fee_flat): the service staff set it.",
    ),
    (
        "INVALID_SIGNATURE",
        403,
        "A provider's callback, or a scanner's deposit report, is not signed with the configured credentials (a payout callback: its URL's per-payout token is wrong).",
    ),
    // not found
    (
        "NOT_FOUND",
        404,
        "No such resource for this tenant (another tenant's resource is also 404).",
    ),
    ("ROUTE_NOT_FOUND", 404, "No such endpoint."),
    (
        "ADMIN_DISABLED",
        404,
        "A staff route on a server without an admin token ([admin] token).",
    ),
    (
        "METHOD_NOT_ALLOWED",
        405,
        "The endpoint exists but not with this method.",
    ),
    // state
    (
        "QUOTE_EXPIRED",
        410,
        "The FX quote is older than 60 seconds, or the top-up quote's lifetime (24 hours by default) passed before staff confirmed it.",
    ),
    ("CODE_EXPIRED", 410, "The one-time code has expired."),
    (
        "QUOTE_ALREADY_USED",
        409,
        "The FX quote was already redeemed.",
    ),
    (
        "ALREADY_CONFIRMED",
        409,
        "The top-up was already confirmed and its treasury credited; a replay changes nothing.",
    ),
    (
        "FIAT_REFERENCE_USED",
        409,
        "The fiat reference already confirmed another top-up (one receipt funds one top-up).",
    ),
    (
        "CODE_ALREADY_USED",
        409,
        "The one-time code was already used.",
    ),
    (
        "ALREADY_A_MEMBER",
        409,
        "The tenant is already a member of the wallet.",
    ),
    (
        "PHONE_IN_USE",
        409,
        "The new phone number already has a wallet.",
    ),
    (
        "IDEMPOTENCY_KEY_IN_USE",
        409,
        "A request with this Idempotency-Key is still running.",
    ),
    (
        "INVALID_STATE",
        409,
        "The operation is not permitted from the resource's current state.",
    ),
    ("CONFLICT", 409, "A concurrent update won; retry."),
    (
        "QUOTE_TOKEN_MISMATCH",
        422,
        "The quote's token differs from the requested token.",
    ),
    ("CODE_INVALID", 422, "The one-time code is wrong."),
    (
        "INSUFFICIENT_FUNDS",
        422,
        "The treasury or wallet balance is too low.",
    ),
    (
        "SAME_WALLET",
        422,
        "Sender and recipient are the same wallet.",
    ),
    (
        "IDEMPOTENCY_KEY_REUSED",
        422,
        "The Idempotency-Key was used with another request.",
    ),
    (
        "METRICS_TOKEN_REQUIRED",
        401,
        "The server protects /metrics with a bearer token (metrics_token).",
    ),
    // limits
    (
        "REQUEST_TIMEOUT",
        408,
        "The request did not complete in time; replay it with the same Idempotency-Key.",
    ),
    (
        "TOO_MANY_ATTEMPTS",
        429,
        "Too many wrong one-time codes for this wallet: locked out until Retry-After.",
    ),
    (
        "RATE_LIMITED",
        429,
        "A limit is reached (one-time codes per wallet, phone or tenant); see Retry-After.",
    ),
    // dependencies and server
    (
        "NOT_IMPLEMENTED",
        501,
        "The endpoint exists but is not backed by this server yet.",
    ),
    (
        "RAIL_ERROR",
        502,
        "The blockchain rail answered with an error.",
    ),
    ("NOTIFIER_ERROR", 502, "The SMS gateway failed."),
    (
        "RAIL_NOT_READY",
        503,
        "The rail is not READY (spec 7): sponsored sends are unavailable.",
    ),
    (
        "WITHDRAWALS_UNAVAILABLE",
        503,
        "This deployment has no payout provider: withdrawals are turned off.",
    ),
    (
        "SCREENING_HIT",
        403,
        "Sanctions screening lists an address this payment would pay: refused before anything was held, and audited.",
    ),
    (
        "POLICY_DENIED",
        403,
        "A spending policy refuses the request; `rule_id` names the policy and its rule (`pol_...:max_per_transaction`, `:window_24h_amount`, `:cooling_off`, ...). Nothing was held; the decision is audited.",
    ),
    (
        "SPONSORSHIP_BUDGET_EXCEEDED",
        429,
        "The tenant's sponsorship budget on this rail (gas, TRON Energy or Bandwidth, Solana fees and rent, set by staff) is spent for the UTC day or month, or the next payment's estimated cost would pass it; `sponsorship_budget` names the rail, period, resource, cap and spent. Nothing was held; Retry-After says when the period starts over.",
    ),
    (
        "APPROVAL_REQUIRED",
        403,
        "The amount is above a spending policy's approval threshold (`rule_id`): the request waits as `approval_id` until a second approver (staff) approves it, which carries it out once. Nothing was held yet.",
    ),
    (
        "INSUFFICIENT_LIQUIDITY",
        422,
        "The swap venue cannot fill this swap now (its liquidity, or a pair it does not trade).",
    ),
    (
        "SWAPS_UNAVAILABLE",
        503,
        "No swap venue (DEX router or treasury venue) serves the wallet's chain.",
    ),
    (
        "SCREENING_UNAVAILABLE",
        503,
        "Sanctions screening could not answer and this deployment fails closed (production's default): nothing was held; retry later.",
    ),
    (
        "RATE_SOURCE_ERROR",
        503,
        "No FX rate is available right now (the rate feed is unreachable or failed).",
    ),
    (
        "RATE_STALE",
        503,
        "The rate feed's rate is older than its maximum age; nothing is quoted at it.",
    ),
    ("STORAGE_ERROR", 500, "Storage failed."),
    ("SIGNER_ERROR", 500, "Key custody failed."),
    ("INTERNAL", 500, "Unexpected server error."),
];

/// The catalogue as a Markdown table (for the OpenAPI description).
pub fn catalogue_markdown() -> String {
    let mut s = String::from("| code | status | meaning |\n|---|---|---|\n");
    for (code, status, meaning) in ERROR_CATALOGUE {
        s.push_str(&format!("| `{code}` | {status} | {meaning} |\n"));
    }
    s
}
