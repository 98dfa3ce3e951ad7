//! Request and response shapes of the HTTP API (spec section 2 where it names them,
//! API-CONVENTIONS elsewhere), documented in the OpenAPI description.
//!
//! Responses mirror the engine's views field for field; the conversions destructure the
//! views without `..`, so a field added in the core fails to compile here until the API
//! (and its documentation) decides what to do with it.

use super::schemas::*;
use serde::{Deserialize, Deserializer, Serialize};
use stablecoin_core::domain::fx::QuoteView;
use stablecoin_core::engine::{BalanceView, ChallengeView, OperationView, ProvisionView};
use utoipa::{IntoParams, ToSchema};

fn is_false(b: &bool) -> bool {
    !*b
}

// ---- requests ------------------------------------------------------------------------

/// A body naming one wallet by phone. Unknown fields are refused (`UNKNOWN_FIELD`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PhoneBody {
    /// The customer's phone; it names the wallet.
    #[schema(value_type = PhoneNumber)]
    pub phone_number: String,
}

/// `POST /v1/users/provision`. Unknown fields are refused (`UNKNOWN_FIELD`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvisionBody {
    /// The customer's phone; it names the wallet.
    #[schema(value_type = PhoneNumber)]
    pub phone_number: String,
    /// Your own id of this customer (1 to 128 characters): the `customer_id` of the
    /// payments webhooks about this wallet (`wallet.deposit.*`, `wallet.transfer.*`).
    /// Attached when you are a member (not on LINK_REQUIRED); a new one replaces yours.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]{1,128}$"
    )]
    pub customer_id: Option<String>,
}

/// `POST /v1/users/fund`. Unknown fields are refused (`UNKNOWN_FIELD`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FundBody {
    /// The wallet credited.
    #[schema(value_type = PhoneNumber)]
    pub phone_number: String,
    /// `target_token` is accepted as the same field.
    #[serde(alias = "target_token")]
    #[schema(value_type = EvmToken)]
    pub token: String,
    /// Tokens paid from the tenant's treasury to the wallet.
    #[schema(value_type = TokenAmount)]
    pub amount: String,
    /// The EVM chain: `polygon`, `base`, `bsc`, `evm-<chain id>` or the chain id; it must
    /// be enabled here. Absent: the primary chain.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "bsc", pattern = r"^(polygon|base|bsc|(evm-)?[1-9][0-9]{0,18})$")]
    pub network: Option<String>,
}

/// `POST /v1/users/withdraw`. Unknown fields are refused (`UNKNOWN_FIELD`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WithdrawBody {
    /// The wallet debited; the payout goes to this number's mobile-money account.
    #[schema(value_type = PhoneNumber)]
    pub phone_number: String,
    /// `target_token` is accepted as the same field.
    #[serde(alias = "target_token")]
    #[schema(value_type = EvmToken)]
    pub token: String,
    /// Tokens taken from the wallet and converted for the payout.
    #[schema(value_type = TokenAmount)]
    pub amount: String,
    /// Fiat currency of the mobile-money payout (spec 2.6).
    #[schema(value_type = CurrencyCode)]
    pub payout_currency: String,
    /// The EVM chain: `polygon`, `base`, `bsc`, `evm-<chain id>` or the chain id; it must
    /// be enabled here. Absent: the primary chain.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "bsc", pattern = r"^(polygon|base|bsc|(evm-)?[1-9][0-9]{0,18})$")]
    pub network: Option<String>,
}

/// `POST /v1/transfers/send` (and the TRON / Solana sends). Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendBody {
    /// The sending wallet; it is debited the quote's amount, fees included.
    #[schema(value_type = PhoneNumber)]
    pub from_phone_number: String,
    /// Another wallet than the sender's (else 422 SAME_WALLET).
    #[schema(value_type = PhoneNumber)]
    pub to_phone_number: String,
    /// `target_token` is accepted as the same field.
    #[serde(alias = "target_token")]
    #[schema(value_type = EvmToken)]
    pub token: String,
    /// The amount sent comes from the quote.
    #[schema(value_type = QuoteRef)]
    pub quote_id: String,
    /// `/v1/transfers/send` only (the TRON and Solana routes refuse it): the EVM chain,
    /// `polygon`, `base`, `bsc`, `evm-<chain id>` or the chain id, enabled here. Absent:
    /// the primary chain.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "bsc", pattern = r"^(polygon|base|bsc|(evm-)?[1-9][0-9]{0,18})$")]
    pub network: Option<String>,
}

/// `POST /v1/swaps`. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SwapBody {
    /// The trading wallet; the caller must be a member of it.
    #[schema(value_type = PhoneNumber)]
    pub phone_number: String,
    /// The token given (`USDC` or `USDT`).
    #[schema(value_type = EvmToken)]
    pub token_in: String,
    /// The token received; not `token_in`.
    #[schema(value_type = EvmToken)]
    pub token_out: String,
    /// What is given, exactly: a decimal string of at most 6 places, above zero.
    #[schema(value_type = TokenAmount)]
    pub amount_in: String,
    /// The most the outcome may fall below the quote, in basis points (0-1000, default
    /// 50). A venue trades nothing for less.
    #[schema(minimum = 0, maximum = 1000)]
    pub max_slippage_bps: Option<u32>,
    /// The EVM chain: `polygon`, `base`, `bsc`, `evm-<chain id>` or the chain id; it must
    /// be enabled here. Absent: the primary chain.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "bsc", pattern = r"^(polygon|base|bsc|(evm-)?[1-9][0-9]{0,18})$")]
    pub network: Option<String>,
}

/// `POST /v1/users/link/confirm` and `/v1/users/phone-change/confirm`. Unknown fields
/// are refused (`UNKNOWN_FIELD`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmBody {
    /// The number the request named (for a phone change, the wallet's current number).
    #[schema(value_type = PhoneNumber)]
    pub phone_number: String,
    /// The code the customer received; wrong codes count towards a lockout.
    #[schema(value_type = OneTimeCode)]
    pub code: String,
}

/// `POST /v1/users/phone-change/request`. Unknown fields are refused (`UNKNOWN_FIELD`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PhoneChangeBody {
    /// The wallet's current number.
    #[schema(value_type = PhoneNumber)]
    pub phone_number: String,
    /// The number to move the wallet to; the code is sent there.
    #[schema(value_type = PhoneNumber)]
    pub new_phone_number: String,
}

/// A fiat amount given as a JSON number or a decimal string.
#[derive(Debug)]
pub struct FiatAmount(pub String);

impl<'de> Deserialize<'de> for FiatAmount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = FiatAmount;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number or a decimal string")
            }
            fn visit_u64<E>(self, v: u64) -> Result<FiatAmount, E> {
                Ok(FiatAmount(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<FiatAmount, E> {
                Ok(FiatAmount(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<FiatAmount, E> {
                Ok(FiatAmount(if v.is_finite() {
                    v.to_string()
                } else {
                    "NaN".into()
                }))
            }
            fn visit_str<E>(self, v: &str) -> Result<FiatAmount, E> {
                Ok(FiatAmount(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// `POST /api/v1/fx/quote` (spec 2.3). Unknown fields are refused (`UNKNOWN_FIELD`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuoteBody {
    /// Amount of local fiat to convert, in the currency's major unit.
    pub fiat_amount: FiatAmount,
    /// Fiat currency code (XOF, XAF, NGN, GHS, KES, ...).
    #[schema(value_type = CurrencyCode)]
    pub local_currency: String,
    /// Target stablecoin; `USDC` when absent.
    #[serde(default)]
    #[schema(value_type = Option<TokenName>)]
    pub target_token: Option<String>,
}

/// `GET /v1/users/balance` (and the TRON / Solana balance reads).
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct BalanceQuery {
    /// E.164 phone number of the wallet (required).
    #[param(value_type = PhoneNumber, required = true)]
    pub phone_number: Option<String>,
}

/// `GET /v1/users/balance`: the wallet and the EVM chain read.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EvmBalanceQuery {
    /// E.164 phone number of the wallet (required).
    #[param(value_type = PhoneNumber, required = true)]
    pub phone_number: Option<String>,
    /// The EVM chain read (`polygon`, `base`, `bsc`, `evm-<chain id>` or the chain id),
    /// or `all`: every enabled chain, summed, with each chain in `chains`. Absent: the
    /// primary chain.
    #[param(value_type = Option<String>, required = false, example = "all", pattern = r"^(all|polygon|base|bsc|(evm-)?[1-9][0-9]{0,18})$")]
    pub network: Option<String>,
}

/// `GET /v1/transfers`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TransferListQuery {
    /// Only transfers in this status.
    #[param(value_type = TransferStatus, required = false)]
    pub status: Option<String>,
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

/// `GET /v1/swaps`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SwapListQuery {
    /// Only swaps in this status.
    #[param(value_type = SwapStatusName, required = false)]
    pub status: Option<String>,
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

/// `GET /api/v1/checkout/list`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CheckoutListQuery {
    /// Only sessions in this status.
    #[param(value_type = SessionStatus, required = false)]
    pub status: Option<String>,
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

// ---- responses -----------------------------------------------------------------------

/// A wallet provisioning (or link / phone-change confirmation) result.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ProvisionResponse {
    /// Wallet id (`wal_...`).
    #[schema(example = "wal_01JD0000000000000000000000")]
    pub wallet_id: String,
    /// The wallet's phone, E.164 as stored (normalised).
    #[schema(example = "+2250700000001")]
    pub phone_number: String,
    /// The wallet's address on the rail.
    pub address: String,
    /// Rail name (`polygon`, `base`, `bsc`).
    #[schema(example = "polygon")]
    pub rail: String,
    /// PROVISIONED, ADOPTED, ALREADY_EXISTS or LINK_REQUIRED (provision); LINKED (link
    /// confirm); PHONE_CHANGED (phone-change confirm).
    #[schema(example = "PROVISIONED")]
    pub outcome: String,
    /// True on a sandbox (test-key) simulation: nothing was stored, the id cannot be read.
    #[serde(default, skip_serializing_if = "is_false")]
    pub simulated: bool,
}

impl From<ProvisionView> for ProvisionResponse {
    fn from(v: ProvisionView) -> Self {
        let ProvisionView {
            wallet_id,
            phone_number,
            address,
            rail,
            outcome,
        } = v;
        ProvisionResponse {
            wallet_id,
            phone_number,
            address,
            rail,
            outcome,
            simulated: false,
        }
    }
}

/// A one-time code was sent (link or phone-change request).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ChallengeResponse {
    /// Id of the pending code (`otp_...`); confirming takes the phone and the code.
    #[schema(example = "otp_01JD0000000000000000000000")]
    pub challenge_id: String,
    /// The masked number the code went to.
    #[schema(example = "+225******0001")]
    pub sent_to: String,
    /// RFC 3339 UTC; the code is refused from then on.
    pub expires_at: String,
    /// True on a sandbox (test-key) simulation: no SMS was sent, nothing was stored.
    #[serde(default, skip_serializing_if = "is_false")]
    pub simulated: bool,
}

impl From<ChallengeView> for ChallengeResponse {
    fn from(v: ChallengeView) -> Self {
        let ChallengeView {
            challenge_id,
            sent_to,
            expires_at,
        } = v;
        ChallengeResponse {
            challenge_id,
            sent_to,
            expires_at,
            simulated: false,
        }
    }
}

/// A live on-chain balance read (spec 2.6).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BalanceResponse {
    /// The wallet's phone, E.164.
    pub phone_number: String,
    /// The wallet's address on `rail`.
    pub address: String,
    /// The rail read (`polygon`, `base`, `bsc`).
    pub rail: String,
    /// USDC held on chain, 6 decimal places; zero where the rail has no USDC.
    #[schema(example = "100.000000")]
    pub balance_usdc: String,
    /// USDT held on chain, 6 decimal places; zero where the rail has no USDT.
    #[schema(example = "0.000000")]
    pub balance_usdt: String,
    /// `network=all`: each enabled EVM chain's balances (`rail` is then `all`, `address`
    /// the primary chain's, and the balances their sum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(no_recursion)]
    pub chains: Option<Vec<BalanceResponse>>,
}

/// `GET /v1/tron/users/balance`: the live USDT balance of the wallet's TRON address.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TronBalanceResponse {
    /// The wallet's phone, E.164.
    pub phone_number: String,
    /// The wallet's TRON address (base58 `T...`).
    #[schema(example = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8")]
    pub address: String,
    /// Always `tron`.
    #[schema(example = "tron")]
    pub rail: String,
    /// USDT held on chain, 6 decimal places.
    #[schema(example = "25.000000")]
    pub balance_usdt: String,
}

impl From<BalanceView> for BalanceResponse {
    fn from(v: BalanceView) -> Self {
        let BalanceView {
            phone_number,
            address,
            rail,
            balance_usdc,
            balance_usdt,
        } = v;
        BalanceResponse {
            phone_number,
            address,
            rail,
            balance_usdc,
            balance_usdt,
            chains: None,
        }
    }
}

/// An asynchronous operation (funding, transfer, swap, withdrawal). Absent fields are
/// omitted, never null.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OperationResponse {
    /// `fd_`, `tr_`, `sw_` or `wd_` id.
    #[schema(example = "tr_01JD0000000000000000000000")]
    pub id: String,
    /// funding, transfer, swap or withdrawal.
    #[schema(example = "transfer")]
    pub object: String,
    /// QUEUED, SUBMITTING, SUBMITTED, SUBMISSION_UNKNOWN, SETTLED, FAILED (withdrawals:
    /// PENDING ... CRYPTO_RECEIVED, PAYOUT_SUBMITTING, PAYOUT_UNKNOWN, COMPLETED, REFUNDED).
    #[schema(example = "QUEUED")]
    pub status: String,
    /// Why the operation FAILED (swaps: also as `reason`, the webhook's name).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error_reason: Option<String>,
    /// The rail it moves on (`polygon`, `base`, `bsc`, `tron`, `solana`).
    #[schema(example = "polygon")]
    pub rail: String,
    /// `USDC` or `USDT`.
    #[schema(example = "USDC")]
    pub token: String,
    /// What the sender is debited, 6 decimal places.
    #[schema(example = "25.000000")]
    pub amount: String,
    /// Transfers: what the recipient receives after fees, 6 decimal places.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recipient_amount: Option<String>,
    /// Transfers: the service's fee, 6 decimal places.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub service_fee: Option<String>,
    /// Transfers: the tenant's fee, 6 decimal places.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tenant_fee: Option<String>,
    /// Transfers: true when the tenant's fee was waived (it did not fit the amount).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tenant_fee_waived: Option<bool>,
    /// The sender's phone (E.164), when a wallet sends.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub from_phone_number: Option<String>,
    /// The recipient's phone (E.164), when a wallet receives.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub to_phone_number: Option<String>,
    /// Transfers: the quote consumed (`fx_...` or `DIRECT_CRYPTO:...`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub quote_id: Option<String>,
    /// The on-chain transaction, once broadcast.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tx_hash: Option<String>,
    /// RFC 3339, when it was accepted.
    pub created_at: String,
    /// RFC 3339, its last change.
    pub updated_at: String,
    /// RFC 3339, when it settled (or a withdrawal completed).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub settled_at: Option<String>,
    /// Withdrawals: the fiat currency paid out (`XOF`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub payout_currency: Option<String>,
    /// Withdrawals: the fiat amount paid out, in that currency's major unit.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub payout_amount: Option<String>,
    /// Provider evidence that the payout reached the recipient (COMPLETED).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub payout_reference: Option<String>,
    /// Withdrawals: the transaction returning the tokens to the wallet, once REFUNDED.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub refund_tx_hash: Option<String>,
    /// Solana transfers, once confirmed: `true` when the service paid the rent of the
    /// recipient's new token account (a recipient that never held the mint, spec 1.5).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub created_recipient_ata: Option<bool>,
    /// Swaps: the swap's id under the name the `swap.*` webhooks give it; always equal to
    /// `id`, which stays as its alias (spec 6.1: the read returns the webhooks' status
    /// fields).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    #[schema(example = "sw_01JD0000000000000000000000")]
    pub swap_id: Option<String>,
    /// Swaps, once FAILED: why, under the `swap.failed` webhook's name; always equal to
    /// `error_reason`, which stays as its alias.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// Swaps: the token given (as `token`, named as in the swap webhooks).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token_in: Option<String>,
    /// Swaps: the token received.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token_out: Option<String>,
    /// Swaps: what is given, exactly (as `amount`, named as in the swap webhooks).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub amount_in: Option<String>,
    /// Swaps: what the venue quoted for `amount_in` when the swap was accepted.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub quoted_amount_out: Option<String>,
    /// Swaps: the least `token_out` accepted (the quote less the slippage allowed).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub min_amount_out: Option<String>,
    /// Swaps: what the wallet received, read from the chain once SETTLED (the
    /// `swap.settled` webhook does not carry it, spec 6.1).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub amount_out: Option<String>,
    /// Swaps: the venue that executed it (`uniswap_v2`, `treasury`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub venue: Option<String>,
    /// True on a sandbox (test-key) simulation: nothing was stored, the id cannot be read.
    #[serde(default, skip_serializing_if = "is_false")]
    pub simulated: bool,
}

impl From<OperationView> for OperationResponse {
    fn from(v: OperationView) -> Self {
        let OperationView {
            id,
            object,
            status,
            error_reason,
            rail,
            token,
            amount,
            recipient_amount,
            service_fee,
            tenant_fee,
            tenant_fee_waived,
            from_phone_number,
            to_phone_number,
            quote_id,
            tx_hash,
            created_at,
            updated_at,
            settled_at,
            payout_currency,
            payout_amount,
            payout_reference,
            refund_tx_hash,
            created_recipient_ata,
            swap_id,
            reason,
            token_in,
            token_out,
            amount_in,
            quoted_amount_out,
            min_amount_out,
            amount_out,
            venue,
        } = v;
        OperationResponse {
            id,
            object,
            status,
            error_reason,
            rail,
            token,
            amount,
            recipient_amount,
            service_fee,
            tenant_fee,
            tenant_fee_waived,
            from_phone_number,
            to_phone_number,
            quote_id,
            tx_hash,
            created_at,
            updated_at,
            settled_at,
            payout_currency,
            payout_amount,
            payout_reference,
            refund_tx_hash,
            created_recipient_ata,
            swap_id,
            reason,
            token_in,
            token_out,
            amount_in,
            quoted_amount_out,
            min_amount_out,
            amount_out,
            venue,
            simulated: false,
        }
    }
}

/// An FX quote (spec 2.3): every field a string.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct QuoteResponse {
    /// `<LOCAL_CURRENCY>_<TOKEN>`.
    #[schema(example = "XOF_USDC")]
    pub currency_pair: String,
    /// Tokens the fiat buys, `fiat_amount / rate` rounded down to 6 decimal places.
    #[schema(example = "10.000000")]
    pub expected_out: String,
    /// RFC 3339 UTC, 60 seconds after creation; a send with the quote then answers 410.
    pub expires_at: String,
    /// The requested fiat amount, exactly 2 decimal places.
    #[schema(example = "6000.00")]
    pub fiat_amount: String,
    /// Pass it to a send as `quote_id`; redeemable once.
    #[schema(example = "fx_01JD0000000000000000000000")]
    pub quote_id: String,
    /// Local currency per token, without trailing zeros.
    #[schema(example = "600")]
    pub rate: String,
    /// `USDC` or `USDT`.
    #[schema(example = "USDC")]
    pub target_token: String,
    /// True on a sandbox (test-key) simulation: the quote lives in memory for its 60 s
    /// and only a sandbox send redeems it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub simulated: bool,
}

impl From<QuoteView> for QuoteResponse {
    fn from(v: QuoteView) -> Self {
        let QuoteView {
            currency_pair,
            expected_out,
            expires_at,
            fiat_amount,
            quote_id,
            rate,
            target_token,
        } = v;
        QuoteResponse {
            currency_pair,
            expected_out,
            expires_at,
            fiat_amount,
            quote_id,
            rate,
            target_token,
            simulated: false,
        }
    }
}

/// A page of transfers, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TransferList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// Matching transfers across all pages.
    pub total: u64,
    /// This page's transfers, newest first.
    pub transfers: Vec<OperationResponse>,
}

/// `GET /v1/swaps`: one page.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SwapList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// Matching swaps across all pages.
    pub total: u64,
    /// This page's swaps, newest first.
    pub swaps: Vec<OperationResponse>,
}

/// Readiness of one rail.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RailReadiness {
    /// READY, INBOUND_READY, DEGRADED or DISABLED.
    #[schema(example = "READY")]
    pub status: String,
    /// Why it is not READY (empty when it is), for operators.
    pub reasons: Vec<String>,
    /// True for a simulated chain (development mode): its balances and transactions are
    /// made up, whatever its status says.
    pub simulated: bool,
    /// Each node URL of a real chain (`rpc_url`, then `fallback_rpc_urls` /
    /// `fallback_api_urls`), in that order: whether the rail can use it now. The rail
    /// moves past a URL that times out, refuses, answers 5xx/429 or garbles its answer,
    /// so one URL down leaves the status READY; this list says which. Empty for a
    /// simulated chain.
    #[serde(default)]
    pub rpc_endpoints: Vec<RpcEndpointStatus>,
}

/// One node URL of a rail (`GET /health/ready`, `rails.<rail>.rpc_endpoints`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RpcEndpointStatus {
    /// The URL's host and port only: never its credentials, path or query (providers put
    /// API keys there).
    #[schema(example = "polygon-mainnet.example:443")]
    pub endpoint: String,
    /// False from the URL's last failed request until one through it succeeds again.
    pub healthy: bool,
    /// Failed requests in a row (0 when healthy).
    pub consecutive_failures: u32,
    /// The last failure: `timed out`, `connection failed`, `HTTP <status>`,
    /// `malformed answer` or `transport error`.
    #[schema(example = "timed out")]
    pub last_error: Option<String>,
}

/// `GET /health/ready`: per-rail readiness (spec 1.4, 1.5). Each rail field is READY,
/// INBOUND_READY (reads and receipts work; sponsored sends answer 503), DEGRADED or
/// DISABLED (not configured).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReadinessResponse {
    /// `ok` when storage answers (the server can serve), else `unavailable` (HTTP 503).
    #[schema(example = "ok")]
    pub status: String,
    /// `development` (simulated parts allowed, and labelled) or `production`.
    #[schema(example = "production")]
    pub mode: String,
    /// READY or DEGRADED.
    #[schema(example = "READY")]
    pub storage: String,
    /// Polygon (chain 137).
    #[schema(example = "READY")]
    pub polygon: String,
    /// Base (chain 8453).
    #[schema(example = "DISABLED")]
    pub base: String,
    /// BNB Smart Chain (chain 56).
    #[schema(example = "DISABLED")]
    pub bsc: String,
    /// TRON.
    #[schema(example = "READY")]
    pub tron: String,
    /// Solana.
    #[schema(example = "READY")]
    pub solana: String,
    /// The background workers of this process: OK, STALLED (no round finished for five
    /// minutes: readiness is then 503) or DISABLED (`run_workers = false`).
    #[schema(example = "OK")]
    pub workers: String,
    /// Every configured rail by name, with the reasons behind its status. Only for a
    /// caller with `Authorization: Bearer <metrics_token>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rails: Option<std::collections::BTreeMap<String, RailReadiness>>,
    /// The last comparison of the ledger with the chains (a drift does not make
    /// readiness fail; the staff report `GET /admin/v1/reconciliation` has the accounts).
    /// Only for a caller with `Authorization: Bearer <metrics_token>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciliation: Option<super::reconciliation::ReconciliationSummary>,
    /// This node's role among the nodes sharing the database. Only for a caller with
    /// `Authorization: Bearer <metrics_token>` (the id names the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeRole>,
}

/// A node's id and the singleton jobs it runs (`GET /health/ready`, `node`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct NodeRole {
    /// This node's id (`engine.worker_id`; default `<hostname>-<pid>-<random>`).
    #[schema(example = "api-1-4711-9f2c01ab")]
    pub id: String,
    /// The singleton jobs (`inbound`, `reconciliation`, `retention`) whose lease this
    /// node holds now, so it runs them; every other node runs none of these. Empty on a
    /// node without workers (`run_workers = false`) or while another node holds them.
    #[schema(example = json!(["inbound", "reconciliation", "retention"]))]
    pub singletons: Vec<String>,
}

/// `GET /health/live`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LiveResponse {
    /// Always `ok`: the process answers.
    #[schema(example = "ok")]
    pub status: String,
}
