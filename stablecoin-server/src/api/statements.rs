//! `GET /v1/statements` (issue #52 item 2): the statement of the tenant's treasury in a
//! token, of one of its customer wallets (members only), or of a business's checkout
//! funds, over `[from, to)`: opening balance, every posting with its operation and
//! counterparty, closing balance, as JSON or CSV (`format`). The arithmetic and the
//! access rules are the engines' (`Engine::treasury_statement`, `wallet_statement`,
//! `Checkout::funds_account`); this maps HTTP to them and renders the answer. The
//! columns are documented in docs/events-and-statements.md.

use super::schemas::Rfc3339;
use super::{phone, token};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiQuery;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::statement::{Statement, StatementEntry};
use stablecoin_core::domain::time::Timestamp;
use utoipa::{IntoParams, ToSchema};

/// Which account, token, period and format.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StatementParams {
    /// `treasury` (the tenant's), `wallet` (a customer wallet: `phone_number`), or
    /// `checkout_funds` (a business's: `business`).
    #[param(inline, value_type = StatementAccount)]
    pub account: Option<String>,
    /// `USDC` or `USDT`.
    #[param(inline, value_type = TokenName)]
    pub token: Option<String>,
    /// The wallet's phone number (E.164), with `account=wallet`.
    #[param(max_length = 16)]
    pub phone_number: Option<String>,
    /// The business (`biz_...`, or `biz_default`), with `account=checkout_funds`.
    #[param(max_length = 64)]
    pub business: Option<String>,
    /// Start of the period (RFC 3339, inclusive); absent: the account's first posting.
    #[param(value_type = Rfc3339, required = false)]
    pub from: Option<String>,
    /// End of the period (RFC 3339, exclusive); absent: now.
    #[param(value_type = Rfc3339, required = false)]
    pub to: Option<String>,
    /// `json` (the default) or `csv`.
    #[param(inline, value_type = StatementFormat, required = false)]
    pub format: Option<String>,
}

/// Which account a statement is of.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatementAccount {
    /// The tenant's treasury.
    Treasury,
    /// A customer wallet (members only).
    Wallet,
    /// A business's checkout funds.
    CheckoutFunds,
}

/// A stablecoin.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub enum TokenName {
    /// USD Coin.
    #[serde(rename = "USDC")]
    Usdc,
    /// Tether USD.
    #[serde(rename = "USDT")]
    Usdt,
}

/// A statement's rendering.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatementFormat {
    /// One JSON object.
    Json,
    /// CSV with a header row (`text/csv`).
    Csv,
}

/// One posting.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatementEntryView {
    /// When it was posted (RFC 3339).
    #[schema(nullable = true)]
    pub at: Option<String>,
    /// The operation it belongs to (`tr_...`, `fd_...`, `tu_...`, `cs_...`), or the
    /// ledger transfer when it names none.
    pub operation: String,
    /// `transfer`, `funding`, `swap`, `withdrawal`, `topup`, `deposit`,
    /// `treasury_credit`, `checkout`, `escrow` or `other`.
    pub operation_type: String,
    /// The ledger transfer (unique: the reconciliation key).
    pub ledger_transfer: String,
    /// `credit` (in) or `debit` (out).
    pub direction: String,
    /// Signed decimal string, 6 places: positive in, negative out.
    pub amount: String,
    /// The balance after this posting (decimal string, 6 places).
    pub balance_after: String,
    /// The other side: `wallet:<id>`, `treasury`, `service_fees`, `tenant_fees`,
    /// `chain:<network>`, `fiat`, `swap_venue:<venue>`, `checkout_session:<cs_...>`,
    /// `checkout_refundable:<biz_...>`, `escrow` or `external`.
    pub counterparty: String,
}

/// A statement: `opening_balance` plus every entry's `amount` is `closing_balance`,
/// the ledger's balance at `to`.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatementView {
    /// Always `statement`.
    pub object: String,
    /// `treasury`, `wallet` or `checkout_funds`.
    pub account: String,
    /// `USDC` or `USDT`.
    pub token: String,
    /// The wallet's phone number (`account=wallet`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone_number: Option<String>,
    /// The business (`account=checkout_funds`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub business: Option<String>,
    /// Start of the period as asked (`null`: the first posting).
    #[schema(nullable = true)]
    pub from: Option<String>,
    /// End of the period as asked, exclusive (`null`: `generated_at`).
    #[schema(nullable = true)]
    pub to: Option<String>,
    /// When the statement was read.
    pub generated_at: String,
    /// Balance at `from` (decimal string, 6 places).
    pub opening_balance: String,
    /// Balance at `to`.
    pub closing_balance: String,
    /// How many entries.
    pub entry_count: usize,
    /// The postings, oldest first.
    pub entries: Vec<StatementEntryView>,
}

/// A signed micro-unit amount as a 6-place decimal string.
fn signed(x: i128) -> String {
    let abs = Micros(u64::try_from(x.unsigned_abs()).unwrap_or(u64::MAX));
    if x < 0 {
        format!("-{}", abs.to_decimal_string())
    } else {
        abs.to_decimal_string()
    }
}

fn entry_view(e: &StatementEntry) -> StatementEntryView {
    let amount = i128::from(e.amount.0);
    StatementEntryView {
        at: e.at.map(Timestamp::to_rfc3339),
        operation: e.operation.clone(),
        operation_type: e.operation_type.into(),
        ledger_transfer: e.ledger_transfer.clone(),
        direction: e.direction.as_str().into(),
        amount: signed(match e.direction {
            stablecoin_core::domain::statement::Direction::Credit => amount,
            stablecoin_core::domain::statement::Direction::Debit => -amount,
        }),
        balance_after: signed(e.balance_after),
        counterparty: e.counterparty.clone(),
    }
}

fn instant(field: &'static str, s: Option<&str>) -> Result<Option<Timestamp>, ApiError> {
    s.map(|s| {
        Timestamp::parse_rfc3339(s.trim()).ok_or_else(|| {
            ApiError::bad_request(
                "INVALID_PARAMETER",
                format!("{field} must be an RFC 3339 timestamp"),
            )
            .with_param(field)
        })
    })
    .transpose()
}

fn required<'a>(v: Option<&'a str>, name: &str, why: &str) -> Result<&'a str, ApiError> {
    v.ok_or_else(|| {
        ApiError::bad_request("INVALID_PARAMETER", format!("{name} is required {why}"))
            .with_param(name)
    })
}

/// The CSV header: the columns every row has (docs/events-and-statements.md).
pub const CSV_HEADER: &str =
    "row_type,at,operation,operation_type,ledger_transfer,direction,amount,balance,counterparty";

/// One CSV field: quoted when it holds a comma, quote or line break; a text field that
/// a spreadsheet would read as a formula (`=`, `+`, `-`, `@` first) gets a leading `'`.
fn field(s: &str, text: bool) -> String {
    let s = if text && s.starts_with(['=', '+', '-', '@']) {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

/// The statement as CSV: an `opening` row, one `entry` row per posting, a `closing` row.
pub fn to_csv(v: &StatementView) -> String {
    let mut out = String::with_capacity(128 + v.entries.len() * 160);
    out.push_str(CSV_HEADER);
    out.push_str("\r\n");
    let at_open = v.from.clone().unwrap_or_default();
    out.push_str(&format!(
        "opening,{},,,,,,{},\r\n",
        field(&at_open, false),
        v.opening_balance
    ));
    for e in &v.entries {
        out.push_str(&format!(
            "entry,{},{},{},{},{},{},{},{}\r\n",
            field(e.at.as_deref().unwrap_or(""), false),
            field(&e.operation, true),
            e.operation_type,
            field(&e.ledger_transfer, true),
            e.direction,
            e.amount,
            e.balance_after,
            field(&e.counterparty, true),
        ));
    }
    let at_close = v.to.clone().unwrap_or_else(|| v.generated_at.clone());
    out.push_str(&format!(
        "closing,{},,,,,,{},\r\n",
        field(&at_close, false),
        v.closing_balance
    ));
    out
}

/// Builds the statement the parameters ask for, for `caller`'s tenant.
pub async fn statement(
    app: &AppState,
    caller: &Caller,
    q: &StatementParams,
) -> Result<StatementView, ApiError> {
    // The documented bounds hold whether or not the account uses the parameter.
    for (name, value, max) in [
        ("phone_number", &q.phone_number, 16),
        ("business", &q.business, 64),
    ] {
        if value.as_ref().is_some_and(|v| v.chars().count() > max) {
            return Err(ApiError::bad_request(
                "INVALID_PARAMETER",
                format!("{name} is at most {max} characters"),
            )
            .with_param(name));
        }
    }
    let account = required(
        q.account.as_deref(),
        "account",
        "(treasury, wallet or checkout_funds)",
    )?;
    let tok: Token = token(
        "token",
        required(q.token.as_deref(), "token", "(USDC or USDT)")?,
    )?;
    let from = instant("from", q.from.as_deref())?;
    let to = instant("to", q.to.as_deref())?;
    let tenant = caller.tenant();
    let (s, phone_number, business): (Statement, _, _) = match account {
        "treasury" => (
            app.engine.treasury_statement(tenant, tok, from, to).await?,
            None,
            None,
        ),
        "wallet" => {
            let p = phone(
                "phone_number",
                required(
                    q.phone_number.as_deref(),
                    "phone_number",
                    "with account=wallet",
                )?,
            )?;
            let s = app
                .engine
                .wallet_statement(tenant, &p, tok, from, to)
                .await?;
            (s, Some(p.to_string()), None)
        }
        "checkout_funds" => {
            let b = required(
                q.business.as_deref(),
                "business",
                "with account=checkout_funds",
            )?;
            let acct = app.checkout.funds_account(tenant, b, tok).await?;
            let s = app.engine.account_statement(&acct, from, to).await?;
            (s, None, Some(b.to_string()))
        }
        _ => {
            return Err(ApiError::bad_request(
                "INVALID_PARAMETER",
                "account must be treasury, wallet or checkout_funds",
            )
            .with_param("account"));
        }
    };
    let entries: Vec<StatementEntryView> = s.entries.iter().map(entry_view).collect();
    Ok(StatementView {
        object: "statement".into(),
        account: account.into(),
        token: tok.to_string(),
        phone_number,
        business,
        from: s.from.map(Timestamp::to_rfc3339),
        to: s.to.map(Timestamp::to_rfc3339),
        generated_at: app.engine.ports().clock.now().to_rfc3339(),
        opening_balance: signed(s.opening),
        closing_balance: signed(s.closing),
        entry_count: entries.len(),
        entries,
    })
}

/// Renders a statement as the format asks (`json` or `csv`).
pub fn render(v: StatementView, format: Option<&str>) -> Result<Response, ApiError> {
    match format.unwrap_or("json") {
        "json" => Ok(Json(v).into_response()),
        "csv" => {
            let name = format!(
                "attachment; filename=\"statement-{}-{}.csv\"",
                v.account, v.token
            );
            Ok((
                StatusCode::OK,
                [
                    (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
                    (header::CONTENT_DISPOSITION, name),
                ],
                to_csv(&v),
            )
                .into_response())
        }
        _ => Err(
            ApiError::bad_request("INVALID_PARAMETER", "format must be json or csv")
                .with_param("format"),
        ),
    }
}

/// A statement of the treasury, a customer wallet or a business's checkout funds.
///
/// `opening_balance` + the entries' `amount`s = `closing_balance` = the ledger's posted
/// balance at `to`, to the micro-unit. Periods are `[from, to)` and chain.
#[utoipa::path(get, path = "/v1/statements", tag = "statements",
    params(StatementParams),
    responses(
        (status = 200, description = "The statement (JSON; with format=csv, text/csv with the columns of docs/events-and-statements.md)",
            content((StatementView = "application/json"), (String = "text/csv"))),
        (status = 400, description = "INVALID_PARAMETER (account, token, phone_number, business, from, to, format) or INVALID_QUERY", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "NOT_A_MEMBER of the wallet, or not a tenant key", body = ErrorBody),
        (status = 404, description = "No such wallet or business for this tenant", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_statement(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<StatementParams>,
) -> Result<Response, ApiError> {
    if let Some(f) = q.format.as_deref()
        && f != "json"
        && f != "csv"
    {
        return render_err_format();
    }
    let v = statement(&app, &caller, &q).await?;
    render(v, q.format.as_deref())
}

fn render_err_format() -> Result<Response, ApiError> {
    Err(
        ApiError::bad_request("INVALID_PARAMETER", "format must be json or csv")
            .with_param("format"),
    )
}
