//! Exports (issue #52 item 3): a tenant's operations, withdrawals with their payout
//! references and escrow deals (`/v1/exports/...`, tenant keys), and a business's
//! checkout sessions and payments (`/api/v1/exports/...`, business keys), as CSV or
//! JSON lines over a period, newest first.
//!
//! Streamed: the handler checks the parameters, then a task walks the store in keyset
//! pages (`Store::list_before`, [`Walk`]) and writes each page into the response body
//! as it goes, through a channel of two chunks. Memory is a page per store range plus
//! two chunks, whatever the period holds (100,000 operations or 10); a client that
//! reads slowly slows the walk, one that hangs up stops it. A store error after the
//! first bytes aborts the body (the client sees a broken transfer, never a short file
//! that looks complete). Columns: [`super::export_rows`] and docs/exports.md.

use super::export_rows::{
    ESCROW_COLUMNS, Format, OPERATION_COLUMNS, PAYMENT_COLUMNS, SESSION_COLUMNS,
    WITHDRAWAL_COLUMNS, Walk, csv_header, csv_row, json_line,
};
use super::schemas::Rfc3339;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiQuery;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use stablecoin_checkout::{
    DEFAULT_BUSINESS, DepositView, Mode, Session, SessionDeposit, SessionView,
};
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::state::OpKind;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{Engine, KeyMode, Operation};
use stablecoin_core::ports::Record;
use stablecoin_core::ports::store::{ListQuery, StoredRecord};
use stablecoin_escrow::EscrowView;
use utoipa::{IntoParams, ToSchema};

/// Bytes gathered before a chunk is handed to the connection.
const CHUNK: usize = 64 * 1024;

/// Deposits read per session for the payments export (a session holds a handful; the
/// checkout reads at most this many too).
const DEPOSITS_PER_SESSION: usize = 200;

/// Format, filters and period of an operations export.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OperationExportParams {
    /// `csv` or `jsonl`.
    #[param(inline, value_type = ExportFormat, required = true)]
    pub format: Option<String>,
    /// Only operations of this kind; absent: every kind, merged newest first.
    #[param(inline, value_type = ExportOperationKind, required = false)]
    pub kind: Option<String>,
    /// Only operations in this state (`SETTLED`, `FAILED`, `COMPLETED`, ...): a state
    /// the kind (or, without `kind`, no kind) reaches is `400`.
    #[param(max_length = 32)]
    pub state: Option<String>,
    /// Only records created at or after this instant (RFC 3339).
    #[param(value_type = Rfc3339, required = false)]
    pub from: Option<String>,
    /// Only records created strictly before this instant (RFC 3339).
    #[param(value_type = Rfc3339, required = false)]
    pub to: Option<String>,
}

/// Format, state and period of a withdrawals export.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WithdrawalExportParams {
    /// `csv` or `jsonl`.
    #[param(inline, value_type = ExportFormat, required = true)]
    pub format: Option<String>,
    /// Only withdrawals in this state (`PENDING`, `COMPLETED`, `REFUNDED`, ...).
    #[param(max_length = 32)]
    pub state: Option<String>,
    /// Only withdrawals created at or after this instant (RFC 3339).
    #[param(value_type = Rfc3339, required = false)]
    pub from: Option<String>,
    /// Only withdrawals created strictly before this instant (RFC 3339).
    #[param(value_type = Rfc3339, required = false)]
    pub to: Option<String>,
}

/// Format and period of an escrow, session or payment export.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportParams {
    /// `csv` or `jsonl`.
    #[param(inline, value_type = ExportFormat, required = true)]
    pub format: Option<String>,
    /// Only records created at or after this instant (RFC 3339; payments: their
    /// session's creation).
    #[param(value_type = Rfc3339, required = false)]
    pub from: Option<String>,
    /// Only records created strictly before this instant (RFC 3339).
    #[param(value_type = Rfc3339, required = false)]
    pub to: Option<String>,
}

/// How an export is written.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    /// RFC 4180 CSV with a header row (`text/csv`).
    Csv,
    /// One JSON object per line (`application/x-ndjson`).
    Jsonl,
}

/// An operation kind.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExportOperationKind {
    /// Treasury to a customer wallet.
    Funding,
    /// Wallet to wallet.
    Transfer,
    /// Token exchange.
    Swap,
    /// Off-ramp to mobile money.
    Withdrawal,
}

/// What an export walks and how a record becomes rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Operations,
    Withdrawals,
    Sessions,
    Payments,
    Escrows,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Operations => "operations",
            Source::Withdrawals => "withdrawals",
            Source::Sessions => "checkout_sessions",
            Source::Payments => "payments",
            Source::Escrows => "escrows",
        }
    }

    fn columns(self) -> &'static [&'static str] {
        match self {
            Source::Operations => OPERATION_COLUMNS,
            Source::Withdrawals => WITHDRAWAL_COLUMNS,
            Source::Sessions => SESSION_COLUMNS,
            Source::Payments => PAYMENT_COLUMNS,
            Source::Escrows => ESCROW_COLUMNS,
        }
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

/// The format (required) and the period `[from, to)`.
fn common(
    format: Option<&str>,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<(Format, Option<Timestamp>, Option<Timestamp>), ApiError> {
    let format = format.and_then(Format::parse).ok_or_else(|| {
        ApiError::bad_request("INVALID_PARAMETER", "format must be csv or jsonl")
            .with_param("format")
    })?;
    let from = instant("from", from)?;
    let to = instant("to", to)?;
    if let (Some(f), Some(t)) = (from, to)
        && t <= f
    {
        return Err(
            ApiError::bad_request("INVALID_PARAMETER", "to must be after from").with_param("to"),
        );
    }
    Ok((format, from, to))
}

fn kind_named(s: &str) -> Result<OpKind, ApiError> {
    OpKind::ALL
        .into_iter()
        .find(|k| k.as_str() == s)
        .ok_or_else(|| {
            ApiError::bad_request(
                "INVALID_PARAMETER",
                "kind must be funding, transfer, swap or withdrawal",
            )
            .with_param("kind")
        })
}

/// The store ranges of the operations of `kinds` (one per kind: an operation's subkind
/// is its kind), in `state` when given. A state none of the kinds reach is `400` on
/// `state`; without `kind`, the kinds that never reach the state are left out.
fn operation_ranges(
    tenant: &str,
    kinds: &[OpKind],
    state: Option<&str>,
) -> Result<Vec<ListQuery>, ApiError> {
    let mut out = Vec::new();
    let mut refused = None;
    for &k in kinds {
        let status = match state {
            None => None,
            Some(s) => match Engine::operation_status(k, s.trim()) {
                Ok(st) => Some(st.as_str().to_string()),
                Err(e) => {
                    refused = Some(e);
                    continue;
                }
            },
        };
        out.push(ListQuery {
            kind: Operation::KIND.into(),
            tenant: tenant.into(),
            subkind: Some(k.as_str().into()),
            status,
            limit: 0,
            offset: 0,
        });
    }
    match (out.is_empty(), refused) {
        (true, Some(e)) => Err(ApiError::from(e).with_param("state")),
        _ => Ok(out),
    }
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn internal<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> ApiError + '_ {
    move |e| {
        tracing::warn!(error = %e, "export of {what}: a record could not be read");
        ApiError::internal("internal error")
    }
}

/// A withdrawal and its payout leg as one row (the columns of `WITHDRAWAL_COLUMNS`).
fn withdrawal_row(op: &Operation) -> Map<String, Value> {
    let v = op.view();
    let mut m = Map::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            m.insert(k.into(), Value::String(v));
        }
    };
    put("id", Some(v.id));
    put("status", Some(v.status));
    put("error_reason", v.error_reason);
    put("rail", Some(v.rail));
    put("token", Some(v.token));
    put("amount", Some(v.amount));
    put("from_phone_number", v.from_phone_number);
    put("tx_hash", v.tx_hash);
    if let Some(p) = &op.payout {
        put("payout_phone_number", Some(p.phone.to_string()));
        put("payout_currency", Some(p.currency.clone()));
        put("payout_amount", Some(p.amount.to_string()));
        put("payout_rate", Some(p.rate.to_string()));
        put("payout_provider", p.provider.clone());
        put(
            "payout_submitted_at",
            p.submitted_at.map(Timestamp::to_rfc3339),
        );
        put("payout_reference", p.reference.clone());
        put("payout_failure", p.failure.clone());
        put(
            "payout_resolution",
            p.resolution.as_ref().map(|r| r.outcome.clone()),
        );
        put("refund_tx_hash", p.refund_tx_hash.clone());
    }
    put("created_at", Some(v.created_at));
    put("updated_at", Some(v.updated_at));
    put("settled_at", v.settled_at);
    m
}

/// The rows of one walked record (a payments export writes one per deposit of the
/// session; every other export one per record).
async fn rows_of(
    app: &AppState,
    source: Source,
    rec: &StoredRecord,
) -> Result<Vec<Map<String, Value>>, ApiError> {
    Ok(match source {
        Source::Operations => {
            let op = Operation::from_stored(rec).map_err(internal("operations"))?;
            vec![object(
                serde_json::to_value(op.view()).map_err(internal("operations"))?,
            )]
        }
        Source::Withdrawals => {
            let op = Operation::from_stored(rec).map_err(internal("withdrawals"))?;
            vec![withdrawal_row(&op)]
        }
        Source::Sessions => {
            let s = Session::from_stored(rec).map_err(internal("sessions"))?;
            let mut m = object(
                serde_json::to_value(SessionView::of(&s, &[])).map_err(internal("sessions"))?,
            );
            m.remove("deposits");
            m.remove("payment_url");
            vec![m]
        }
        Source::Payments => {
            let s = Session::from_stored(rec).map_err(internal("payments"))?;
            let (deps, _) = app
                .engine
                .ports()
                .store
                .list(&ListQuery {
                    kind: SessionDeposit::KIND.into(),
                    tenant: rec.tenant.clone().unwrap_or_default(),
                    subkind: Some(s.id.clone()),
                    status: None,
                    limit: DEPOSITS_PER_SESSION,
                    offset: 0,
                })
                .await
                .map_err(internal("payments"))?;
            let mut out = Vec::with_capacity(deps.len());
            for d in deps.iter().rev() {
                let d = SessionDeposit::from_stored(d).map_err(internal("payments"))?;
                let mut m = object(
                    serde_json::to_value(DepositView::of(&d)).map_err(internal("payments"))?,
                );
                m.insert("session_id".into(), Value::String(s.id.clone()));
                m.insert("business_id".into(), Value::String(s.business.clone()));
                m.insert("mode".into(), Value::String(s.mode.as_str().into()));
                m.insert(
                    "session_status".into(),
                    Value::String(s.status.as_str().into()),
                );
                m.insert("reference".into(), Value::String(s.reference.clone()));
                out.push(m);
            }
            out
        }
        Source::Escrows => {
            let d =
                stablecoin_escrow::model::Deal::from_stored(rec).map_err(internal("escrows"))?;
            vec![object(
                serde_json::to_value(EscrowView::from_deal(&d)).map_err(internal("escrows"))?,
            )]
        }
    })
}

/// Streams `walk` as `format`, `source`'s rows, into a response body.
fn stream(app: AppState, source: Source, mut walk: Walk, format: Format) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    tokio::spawn(async move {
        let columns = source.columns();
        let mut buf = String::with_capacity(CHUNK + 8 * 1024);
        if format == Format::Csv {
            csv_header(&mut buf, columns);
        }
        loop {
            let rec = match walk.next().await {
                Ok(Some(rec)) => rec,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, export = source.name(), "export aborted: store read failed");
                    let _ = tx.send(Err(std::io::Error::other("export aborted"))).await;
                    return;
                }
            };
            match rows_of(&app, source, &rec).await {
                Ok(rows) => {
                    for row in &rows {
                        match format {
                            Format::Csv => csv_row(&mut buf, columns, row),
                            Format::Jsonl => json_line(&mut buf, row),
                        }
                    }
                }
                Err(_) => {
                    let _ = tx.send(Err(std::io::Error::other("export aborted"))).await;
                    return;
                }
            }
            if buf.len() >= CHUNK {
                let chunk = Bytes::from(std::mem::replace(
                    &mut buf,
                    String::with_capacity(CHUNK + 8 * 1024),
                ));
                if tx.send(Ok(chunk)).await.is_err() {
                    return; // the client hung up
                }
            }
        }
        if !buf.is_empty() {
            let _ = tx.send(Ok(Bytes::from(buf))).await;
        }
    });
    Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

fn respond(app: AppState, source: Source, walk: Walk, format: Format) -> Response {
    let disposition = format!(
        "attachment; filename=\"{}.{}\"",
        source.name(),
        format.extension()
    );
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, format.content_type().to_string()),
            (header::CONTENT_DISPOSITION, disposition),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
        stream(app, source, walk, format),
    )
        .into_response()
}

/// Builds an operations export for `caller` (the API route and the dashboard).
pub(crate) fn operations_export(
    app: &AppState,
    caller: &Caller,
    q: &OperationExportParams,
) -> Result<Response, ApiError> {
    let (format, from, to) = common(q.format.as_deref(), q.from.as_deref(), q.to.as_deref())?;
    let kinds = match q.kind.as_deref() {
        Some(k) => vec![kind_named(k.trim())?],
        None => OpKind::ALL.to_vec(),
    };
    let ranges = operation_ranges(&caller.tenant().0, &kinds, q.state.as_deref())?;
    let walk = Walk::new(app.engine.ports().store.clone(), ranges, from, to);
    Ok(respond(app.clone(), Source::Operations, walk, format))
}

/// Builds a withdrawals export for `caller`.
pub(crate) fn withdrawals_export(
    app: &AppState,
    caller: &Caller,
    q: &WithdrawalExportParams,
) -> Result<Response, ApiError> {
    let (format, from, to) = common(q.format.as_deref(), q.from.as_deref(), q.to.as_deref())?;
    let ranges = operation_ranges(
        &caller.tenant().0,
        &[OpKind::Withdrawal],
        q.state.as_deref(),
    )?;
    let walk = Walk::new(app.engine.ports().store.clone(), ranges, from, to);
    Ok(respond(app.clone(), Source::Withdrawals, walk, format))
}

/// Builds an escrow deals export for `caller`.
pub(crate) fn escrows_export(
    app: &AppState,
    caller: &Caller,
    q: &ExportParams,
) -> Result<Response, ApiError> {
    let (format, from, to) = common(q.format.as_deref(), q.from.as_deref(), q.to.as_deref())?;
    let range = ListQuery {
        kind: stablecoin_escrow::model::Deal::KIND.into(),
        tenant: caller.tenant().0.clone(),
        subkind: None,
        status: None,
        limit: 0,
        offset: 0,
    };
    let walk = Walk::new(app.engine.ports().store.clone(), vec![range], from, to);
    Ok(respond(app.clone(), Source::Escrows, walk, format))
}

/// Builds a checkout export, sessions or (`payments`) their deposits, of `business`'s
/// sessions in `mode` for `tenant` (the API: the business key's; the dashboard: a
/// business the signed-in tenant names, live). The store range is the tenant's, so a
/// business of another tenant lists nothing.
pub(crate) fn checkout_export(
    app: &AppState,
    tenant: &TenantId,
    business: &str,
    mode: Mode,
    q: &ExportParams,
    payments: bool,
) -> Result<Response, ApiError> {
    let (format, from, to) = common(q.format.as_deref(), q.from.as_deref(), q.to.as_deref())?;
    let range = ListQuery {
        kind: Session::KIND.into(),
        tenant: tenant.0.clone(),
        subkind: Some(Session::scope(business, mode)),
        status: None,
        limit: 0,
        offset: 0,
    };
    let walk = Walk::new(app.engine.ports().store.clone(), vec![range], from, to);
    let source = if payments {
        Source::Payments
    } else {
        Source::Sessions
    };
    Ok(respond(app.clone(), source, walk, format))
}

/// The business key's business and mode.
fn key_scope(caller: &Caller) -> (String, Mode) {
    let auth = &caller.0;
    let business = auth
        .business
        .clone()
        .unwrap_or_else(|| DEFAULT_BUSINESS.into());
    let mode = match auth.mode {
        KeyMode::Live => Mode::Live,
        KeyMode::Test => Mode::Test,
    };
    (business, mode)
}

/// Export the tenant's operations (CSV or JSON lines), streamed, newest first.
///
/// CSV columns: id, object, status, error_reason, rail, token, amount,
/// recipient_amount, service_fee, tenant_fee, tenant_fee_waived, from_phone_number,
/// to_phone_number, quote_id, tx_hash, created_at, updated_at, settled_at,
/// payout_currency, payout_amount, payout_reference, refund_tx_hash, token_out,
/// quoted_amount_out, min_amount_out, amount_out, venue (docs/exports.md). A JSON line
/// is the operation as its read shows it.
#[utoipa::path(get, path = "/v1/exports/operations", tag = "exports",
    params(OperationExportParams),
    responses(
        (status = 200, description = "The export, streamed: text/csv (a header row, then one row per operation; a cell starting with = + - @ that is not a negative number gets a leading apostrophe) or application/x-ndjson (one operation object per line)",
            content((String = "text/csv"), (String = "application/x-ndjson"))),
        (status = 400, description = "INVALID_PARAMETER (format, kind, state, from, to) or INVALID_QUERY", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a tenant key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn export_operations(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<OperationExportParams>,
) -> Result<Response, ApiError> {
    operations_export(&app, &caller, &q)
}

/// Export the tenant's withdrawals with their payout legs (provider, reference), streamed.
///
/// CSV columns: id, status, error_reason, rail, token, amount, from_phone_number,
/// tx_hash, payout_phone_number, payout_currency, payout_amount, payout_rate,
/// payout_provider, payout_submitted_at, payout_reference, payout_failure,
/// payout_resolution, refund_tx_hash, created_at, updated_at, settled_at.
#[utoipa::path(get, path = "/v1/exports/withdrawals", tag = "exports",
    params(WithdrawalExportParams),
    responses(
        (status = 200, description = "The export, streamed: text/csv or application/x-ndjson, one withdrawal per row or line (columns: docs/exports.md)",
            content((String = "text/csv"), (String = "application/x-ndjson"))),
        (status = 400, description = "INVALID_PARAMETER (format, state, from, to) or INVALID_QUERY", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a tenant key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn export_withdrawals(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<WithdrawalExportParams>,
) -> Result<Response, ApiError> {
    withdrawals_export(&app, &caller, &q)
}

/// Export the tenant's escrow deals, streamed, newest first.
///
/// CSV columns: the fields of `GET /v1/escrows/{id}` (id, object, state, amount, token,
/// rail, network, chain_id, reference, escrow_address, buyer_phone_number,
/// seller_phone_number, buyer_address, seller_address, funding_expires_at,
/// funded_amount, funded_at, auto_release_after_secs, auto_release_at, payout_pending,
/// payout_tx_hash, payout_failure_reason, released_at, refunded_at, disputed_at,
/// dispute_reason, resolution_note, cancelled_at, expired_at, recoverable, created_at,
/// updated_at).
#[utoipa::path(get, path = "/v1/exports/escrows", tag = "exports",
    params(ExportParams),
    responses(
        (status = 200, description = "The export, streamed: text/csv or application/x-ndjson, one deal per row or line (columns: docs/exports.md)",
            content((String = "text/csv"), (String = "application/x-ndjson"))),
        (status = 400, description = "INVALID_PARAMETER (format, from, to) or INVALID_QUERY", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a tenant key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn export_escrows(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ExportParams>,
) -> Result<Response, ApiError> {
    escrows_export(&app, &caller, &q)
}

/// Export the business's checkout sessions of the key's mode, streamed, newest first.
///
/// CSV columns: id, session_id, business_id, mode, status, amount, currency,
/// payment_method, reference, description, customer_name, customer_email, customer_id,
/// amount_received, amount_pending, amount_due, excess_amount, late, late_amount,
/// refundable_amount, failure_reason, network, tx_hash, expires_at, created_at,
/// updated_at, paid_at, payment_options, metadata.
#[utoipa::path(get, path = "/api/v1/exports/checkout_sessions", tag = "exports",
    params(ExportParams),
    responses(
        (status = 200, description = "The export, streamed: text/csv or application/x-ndjson, one session per row or line (columns: docs/exports.md)",
            content((String = "text/csv"), (String = "application/x-ndjson"))),
        (status = 400, description = "INVALID_PARAMETER (format, from, to) or INVALID_QUERY", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn export_checkout_sessions(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ExportParams>,
) -> Result<Response, ApiError> {
    let (business, mode) = key_scope(&caller);
    checkout_export(&app, caller.tenant(), &business, mode, &q, false)
}

/// Export the payments (deposits) into the business's checkout sessions, streamed.
///
/// One row per deposit, sessions newest first. CSV columns: session_id, business_id,
/// mode, session_status, reference, deposit_id, network, address, token, amount,
/// applied, excess, late, status, tx_hash, hash_pending, confirmations, detected_at,
/// confirmed_at.
#[utoipa::path(get, path = "/api/v1/exports/payments", tag = "exports",
    params(ExportParams),
    responses(
        (status = 200, description = "The export, streamed: text/csv or application/x-ndjson, one deposit per row or line (columns: docs/exports.md)",
            content((String = "text/csv"), (String = "application/x-ndjson"))),
        (status = 400, description = "INVALID_PARAMETER (format, from, to) or INVALID_QUERY", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn export_payments(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ExportParams>,
) -> Result<Response, ApiError> {
    let (business, mode) = key_scope(&caller);
    checkout_export(&app, caller.tenant(), &business, mode, &q, true)
}
