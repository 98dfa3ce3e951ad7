//! Daraja's result bodies (the B2C result and the transaction-status result, both
//! POSTed to a payout's own `ResultURL`) and [`MpesaResults`], the store they are
//! recorded in: a record per payout in the database, so every node reads what any
//! node received, bounded by retention.

use crate::ProviderError;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use stablecoin_core::CoreError;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::kinds::kind;
use stablecoin_core::ports::record::{Record, RecordError, get_record};
use stablecoin_core::ports::store::{Batch, Store};
use stablecoin_core::ports::{Clock, SystemClock};
use std::sync::Arc;

/// One result Daraja POSTed to a `ResultURL`: the B2C payment's result or a
/// transaction-status query's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MpesaResult {
    /// `ResultType` (0 for a completed request), as Daraja wrote it.
    pub result_type: Option<String>,
    /// `ResultCode`: `"0"` is success. Daraja writes it as a number or, for some
    /// errors (`SFC_IC0003`), a string; both are kept as text.
    pub result_code: String,
    /// `ResultDesc`, Daraja's words for the code.
    pub result_desc: String,
    /// `OriginatorConversationID`: of a B2C result, our payout id; of a status query's
    /// result, the query's own id.
    pub originator_conversation_id: String,
    /// `ConversationID`: Daraja's id of the request this result answers, the one its
    /// synchronous acknowledgement returned.
    pub conversation_id: String,
    /// `TransactionID`, when given (placeholder ids such as `MAS0000000` included).
    pub transaction_id: Option<String>,
    /// `ResultParameters.ResultParameter` as key and value text, in order (numbers
    /// kept as written, never through a float).
    pub parameters: Vec<(String, String)>,
}

impl MpesaResult {
    /// Whether `ResultCode` is 0.
    pub fn is_success(&self) -> bool {
        self.result_code == "0"
    }

    /// The value of the result parameter `key`, if present.
    pub fn parameter(&self, key: &str) -> Option<&str> {
        self.parameters
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The M-Pesa receipt: `TransactionReceipt` (a B2C result), `ReceiptNo` (a status
    /// query's), or else `TransactionID` unless it is a placeholder of zeros.
    pub fn receipt(&self) -> Option<&str> {
        self.parameter("TransactionReceipt")
            .or_else(|| self.parameter("ReceiptNo"))
            .filter(|s| !s.is_empty())
            .or_else(|| {
                self.transaction_id
                    .as_deref()
                    .filter(|t| !t.is_empty() && !t.ends_with("0000000"))
            })
    }
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "Result", borrow)]
    result: Body<'a>,
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(rename = "ResultType", borrow, default)]
    result_type: Option<&'a RawValue>,
    #[serde(rename = "ResultCode", borrow)]
    result_code: &'a RawValue,
    #[serde(rename = "ResultDesc", default)]
    result_desc: String,
    #[serde(rename = "OriginatorConversationID", default)]
    originator_conversation_id: String,
    #[serde(rename = "ConversationID", default)]
    conversation_id: String,
    #[serde(rename = "TransactionID", default)]
    transaction_id: Option<String>,
    #[serde(rename = "ResultParameters", borrow, default)]
    result_parameters: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    /// One `{Key, Value}` object or a list of them (Daraja writes both).
    #[serde(rename = "ResultParameter", borrow)]
    result_parameter: &'a RawValue,
}

#[derive(Deserialize)]
struct Param<'a> {
    #[serde(rename = "Key")]
    key: String,
    #[serde(rename = "Value", borrow, default)]
    value: Option<&'a RawValue>,
}

/// A JSON scalar's text: a string unquoted, a number as written.
fn scalar(raw: &RawValue) -> String {
    let text = raw.get().trim();
    if text.starts_with('"') {
        serde_json::from_str::<String>(text).unwrap_or_default()
    } else if text == "null" {
        String::new()
    } else {
        text.to_string()
    }
}

fn bad(what: &str) -> ProviderError {
    ProviderError::BadCallback(format!("M-Pesa result: {what}"))
}

/// Parses `{"Result":{...}}`; `BadCallback` without a `ResultCode` or a
/// `ConversationID` or `OriginatorConversationID`.
pub(crate) fn parse(body: &[u8]) -> Result<MpesaResult, ProviderError> {
    let env: Envelope<'_> =
        serde_json::from_slice(body).map_err(|_| bad("not a {\"Result\":{...}} body"))?;
    let r = env.result;
    let result_code = scalar(r.result_code);
    if result_code.is_empty() {
        return Err(bad("no ResultCode"));
    }
    if r.conversation_id.is_empty() && r.originator_conversation_id.is_empty() {
        return Err(bad("no ConversationID or OriginatorConversationID"));
    }
    let mut parameters = Vec::new();
    if let Some(p) = r.result_parameters {
        let text = p.result_parameter.get().trim_start();
        let list: Vec<Param<'_>> = if text.starts_with('[') {
            serde_json::from_str(text).map_err(|_| bad("unreadable ResultParameter"))?
        } else {
            vec![serde_json::from_str(text).map_err(|_| bad("unreadable ResultParameter"))?]
        };
        parameters = list
            .into_iter()
            .map(|p| (p.key, p.value.map(scalar).unwrap_or_default()))
            .collect();
    }
    Ok(MpesaResult {
        result_type: r.result_type.map(scalar),
        result_code,
        result_desc: r.result_desc,
        originator_conversation_id: r.originator_conversation_id,
        conversation_id: r.conversation_id,
        transaction_id: r.transaction_id,
        parameters,
    })
}

/// What a status query's result says of a payout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum QueryOutcome {
    /// `TransactionStatus` "Completed": paid, with this receipt.
    Completed(String),
    /// A final failure (`TransactionStatus` Failed, Cancelled, Declined, Expired,
    /// Reversed), with the reason.
    Failed(String),
    /// Found and not final.
    Pending,
    /// The query's result code says the id is unknown to M-Pesa.
    NotFound,
    /// The query itself failed (another non-zero code): says nothing of the payout.
    QueryFailed(String),
}

impl QueryOutcome {
    fn is_final(&self) -> bool {
        matches!(self, QueryOutcome::Completed(_) | QueryOutcome::Failed(_))
    }
}

/// What the payout a result arrived for must show: the withdrawal's own amount and
/// payee, which the host reads from its payout leg.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// Whole shillings paid.
    pub amount: Decimal,
    /// `PartyB`: the payee's number without `+` (`2547...`).
    pub party_b: String,
}

/// What a recorded result was matched to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// The result of the payout's B2C request: a hint only. The host makes the engine
    /// ask ([`crate::mpesa::MpesaB2c`]'s status) and nothing more.
    Payment {
        /// Our payout id.
        payout_id: String,
    },
    /// The result of a status query the adapter issued for this payout: recorded as
    /// the payout's status (moving it only forward: a final answer is never replaced).
    StatusQuery {
        /// Our payout id.
        payout_id: String,
    },
    /// A status query's result that arrived before its acknowledgement was recorded
    /// (Daraja can be that quick): kept with the payout, filed when it is.
    Early {
        /// Our payout id.
        payout_id: String,
    },
    /// Refused: it names another request, another payout, amount or payee than this
    /// payout's. The host logs it and answers an error; nothing is recorded.
    Mismatch {
        /// What did not match, for the log.
        reason: String,
    },
}

/// The results of one payout, as stored (kind [`kind::PAYOUT_RESULT`], id the payout
/// id).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct PayoutResults {
    payout_id: String,
    /// The last change: retention purges a record this old.
    updated_at: Timestamp,
    /// Daraja's `ConversationID` of the B2C request, from its acknowledgement.
    #[serde(default)]
    payment_conversation: Option<String>,
    /// `ConversationID`s of our status queries, newest last, at most [`QUERIES`].
    #[serde(default)]
    queries: Vec<String>,
    /// The newest status-query outcome (a final one is never replaced).
    #[serde(default)]
    outcome: Option<QueryOutcome>,
    /// The B2C result (a hint, kept for inspection).
    #[serde(default)]
    hint: Option<MpesaResult>,
    /// Status-query results that arrived before their acknowledgement was recorded,
    /// at most [`EARLY`].
    #[serde(default)]
    early: Vec<MpesaResult>,
}

impl Record for PayoutResults {
    const KIND: &'static str = kind::PAYOUT_RESULT;
    fn id(&self) -> String {
        self.payout_id.clone()
    }
    fn created_at(&self) -> Timestamp {
        self.updated_at
    }
}

/// Status queries remembered per payout.
const QUERIES: usize = 8;
/// Early results kept per payout.
const EARLY: usize = 4;

/// Whether `r` is shaped as a transaction-status result (it reports a
/// `TransactionStatus`, or it is a failed query: its own `OriginatorConversationID` is
/// not the payout's).
fn is_query_result(r: &MpesaResult, payout_id: &str) -> bool {
    r.parameter("TransactionStatus").is_some() || r.originator_conversation_id != payout_id
}

fn amount_is(text: Option<&str>, want: Decimal) -> bool {
    text.and_then(|t| t.trim().parse::<Decimal>().ok())
        .is_some_and(|a| a.normalize() == want.normalize())
}

/// Why a status query's result cannot be this payout's, if it cannot.
fn query_mismatch(r: &MpesaResult, payout_id: &str, e: &Expected) -> Option<String> {
    if let Some(id) = r.parameter("OriginatorConversationID")
        && !id.is_empty()
        && id != payout_id
    {
        return Some(format!("status result of another payout ({id})"));
    }
    let completed = r
        .parameter("TransactionStatus")
        .is_some_and(|s| s.eq_ignore_ascii_case("completed"));
    if completed && r.is_success() {
        if !amount_is(r.parameter("Amount"), e.amount) {
            return Some("status result: Amount is not the payout's".into());
        }
        if let Some(p) = r.parameter("CreditPartyName")
            && !p.trim_start().starts_with(&e.party_b)
        {
            return Some("status result: CreditPartyName is not the payee".into());
        }
    }
    None
}

/// Why a B2C result cannot be this payout's, if it cannot.
fn payment_mismatch(
    r: &MpesaResult,
    rec: &PayoutResults,
    payout_id: &str,
    e: &Expected,
) -> Option<String> {
    if r.originator_conversation_id != payout_id {
        return Some("B2C result of another OriginatorConversationID".into());
    }
    if let Some(c) = &rec.payment_conversation
        && *c != r.conversation_id
    {
        return Some("B2C result of another ConversationID".into());
    }
    if r.is_success() {
        if !amount_is(r.parameter("TransactionAmount"), e.amount) {
            return Some("B2C result: TransactionAmount is not the payout's".into());
        }
        if let Some(p) = r.parameter("ReceiverPartyPublicName")
            && !p.trim_start().starts_with(&e.party_b)
        {
            return Some("B2C result: ReceiverPartyPublicName is not the payee".into());
        }
    }
    None
}

impl PayoutResults {
    /// Files a status query's result `r`, answering the query `conversation`: final
    /// outcomes are kept; a transient one counts only from the newest query.
    fn file_query(&mut self, r: &MpesaResult, not_found: &[String]) {
        if self.outcome.as_ref().is_some_and(QueryOutcome::is_final) {
            return;
        }
        let outcome = classify(r, not_found);
        let newest = self.queries.last() == Some(&r.conversation_id);
        if outcome.is_final() || newest {
            self.outcome = Some(outcome);
        }
    }

    /// Files the early results the query `conversation` names.
    fn adopt(&mut self, conversation: &str, not_found: &[String]) {
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.early)
            .into_iter()
            .partition(|r| r.conversation_id == conversation);
        self.early = rest;
        for r in mine {
            self.file_query(&r, not_found);
        }
    }
}

/// The results Daraja POSTed back, kept in the database (any [`Store`]: SQLite,
/// PostgreSQL, memory) and shared by [`crate::mpesa::MpesaB2c`] and the host's
/// `ResultURL` route (which hands each body to [`MpesaResults::record`] once it has
/// verified the payout's callback token and read the payout's amount and payee).
///
/// A result is taken only for the payout its URL names, and only when it answers one
/// of our requests for it (the `ConversationID` Daraja acknowledged, or for a B2C
/// result the payout id) and shows that payout's amount and payee; anything else is
/// [`Recorded::Mismatch`]. Only the results of the adapter's own status queries become
/// a payout's status, and only forward: a final answer is never replaced, a late or
/// duplicated one changes nothing. Retention purges a payout's record
/// ([`kind::PAYOUT_RESULT`]) after its window; the adapter then simply queries again.
pub struct MpesaResults {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    not_found: Vec<String>,
}

impl std::fmt::Debug for MpesaResults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpesaResults")
            .field("not_found", &self.not_found)
            .finish_non_exhaustive()
    }
}

fn storage(e: impl std::fmt::Display) -> ProviderError {
    ProviderError::Storage(e.to_string())
}

/// A record read or write that failed, with the text it had when the record port
/// returned `CoreError` (`storage error: decode ...`).
fn record_storage(e: RecordError) -> ProviderError {
    storage(CoreError::from(e))
}

impl MpesaResults {
    /// A store over `store` that reads [`DEFAULT_NOT_FOUND_CODES`] as "unknown id".
    pub fn new(store: Arc<dyn Store>) -> Self {
        MpesaResults {
            store,
            clock: Arc::new(SystemClock),
            not_found: Vec::new(),
        }
    }

    /// Reads these status-query result codes as "M-Pesa holds no transaction under
    /// this id" (instead of [`DEFAULT_NOT_FOUND_CODES`]).
    pub fn with_not_found_codes(mut self, codes: Vec<String>) -> Self {
        self.not_found = codes;
        self
    }

    /// Dates the records on `clock` (retention reads the date).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    async fn read(&self, payout_id: &str) -> Result<Option<PayoutResults>, ProviderError> {
        Ok(get_record::<PayoutResults>(&*self.store, payout_id)
            .await
            .map_err(record_storage)?
            .map(|v| v.record))
    }

    /// Applies `f` to the payout's record (created if absent) and writes it when `f`
    /// says so, retrying a concurrent change by another node.
    async fn change<T>(
        &self,
        payout_id: &str,
        f: impl Fn(&mut PayoutResults) -> (T, bool),
    ) -> Result<T, ProviderError> {
        let mut last = String::new();
        for _ in 0..5 {
            let found = get_record::<PayoutResults>(&*self.store, payout_id)
                .await
                .map_err(record_storage)?;
            let (mut rec, version) = match found {
                Some(v) => (v.record, Some(v.version)),
                None => (
                    PayoutResults {
                        payout_id: payout_id.to_string(),
                        ..Default::default()
                    },
                    None,
                ),
            };
            let (out, write) = f(&mut rec);
            if !write {
                return Ok(out);
            }
            rec.updated_at = self.clock.now();
            let put = match version {
                Some(v) => rec.update(v),
                None => rec.insert(),
            }
            .map_err(record_storage)?;
            match self
                .store
                .commit(Batch {
                    puts: vec![put],
                    ..Default::default()
                })
                .await
            {
                Ok(_) => return Ok(out),
                Err(e) => last = e.to_string(),
            }
        }
        Err(storage(last))
    }

    /// Records a body POSTed to the `ResultURL` of payout `payout_id` (the host has
    /// verified the URL's token) and says what it answered; `BadCallback` when it is
    /// not Daraja's result shape. A [`Recorded::Mismatch`] changes nothing.
    pub async fn record(
        &self,
        payout_id: &str,
        expected: &Expected,
        body: &[u8],
    ) -> Result<Recorded, ProviderError> {
        let r = parse(body)?;
        let nf = self.not_found.clone();
        self.change(payout_id, |rec| {
            let id = payout_id.to_string();
            if rec.queries.contains(&r.conversation_id) {
                if let Some(reason) = query_mismatch(&r, payout_id, expected) {
                    return (Recorded::Mismatch { reason }, false);
                }
                rec.file_query(&r, &nf);
                return (Recorded::StatusQuery { payout_id: id }, true);
            }
            if !is_query_result(&r, payout_id) {
                if let Some(reason) = payment_mismatch(&r, rec, payout_id, expected) {
                    return (Recorded::Mismatch { reason }, false);
                }
                let same = rec.hint.as_ref() == Some(&r);
                rec.hint = Some(r.clone());
                return (Recorded::Payment { payout_id: id }, !same);
            }
            // A status result whose query's acknowledgement is not recorded yet.
            if let Some(reason) = query_mismatch(&r, payout_id, expected) {
                return (Recorded::Mismatch { reason }, false);
            }
            if r.parameter("OriginatorConversationID") != Some(payout_id) {
                return (
                    Recorded::Mismatch {
                        reason: "a result answering none of this payout's requests".into(),
                    },
                    false,
                );
            }
            if rec.early.contains(&r) {
                return (Recorded::Early { payout_id: id }, false);
            }
            if rec.early.len() >= EARLY {
                rec.early.remove(0);
            }
            rec.early.push(r.clone());
            (Recorded::Early { payout_id: id }, true)
        })
        .await
    }

    /// The latest B2C result recorded for `payout_id` (a hint, never its status).
    pub async fn hint(&self, payout_id: &str) -> Option<MpesaResult> {
        self.read(payout_id).await.ok().flatten()?.hint
    }

    pub(crate) async fn submitted(
        &self,
        payout_id: &str,
        conversation_id: Option<&str>,
    ) -> Result<(), ProviderError> {
        self.change(payout_id, |rec| {
            let mut write = false;
            // A NotFound seen before this submit is out of date.
            if rec.outcome == Some(QueryOutcome::NotFound) {
                rec.outcome = None;
                write = true;
            }
            if let Some(c) = conversation_id.filter(|c| !c.is_empty())
                && rec.payment_conversation.as_deref() != Some(c)
            {
                rec.payment_conversation = Some(c.to_string());
                write = true;
            }
            ((), write)
        })
        .await
    }

    pub(crate) async fn query_sent(
        &self,
        payout_id: &str,
        conversation_id: &str,
    ) -> Result<(), ProviderError> {
        let nf = self.not_found.clone();
        self.change(payout_id, |rec| {
            // An outcome that is not final is out of date: wait for this query's.
            if !rec.outcome.as_ref().is_some_and(QueryOutcome::is_final) {
                rec.outcome = None;
            }
            if !rec.queries.iter().any(|q| q == conversation_id) {
                if rec.queries.len() >= QUERIES {
                    rec.queries.remove(0);
                }
                rec.queries.push(conversation_id.to_string());
            }
            rec.adopt(conversation_id, &nf);
            ((), true)
        })
        .await
    }

    pub(crate) async fn outcome(&self, payout_id: &str) -> Option<QueryOutcome> {
        self.read(payout_id).await.ok().flatten()?.outcome
    }

    /// Takes a `NotFound` or `QueryFailed` outcome (each answers one status call: the
    /// next one waits for a newer query's result); final and pending ones stay.
    pub(crate) async fn take_transient(&self, payout_id: &str) -> Option<QueryOutcome> {
        self.change(payout_id, |rec| match &rec.outcome {
            Some(QueryOutcome::NotFound | QueryOutcome::QueryFailed(_)) => {
                (rec.outcome.take(), true)
            }
            other => (other.clone(), false),
        })
        .await
        .ok()
        .flatten()
    }
}

/// Result codes of a status query meaning M-Pesa holds no transaction under the
/// queried `OriginatorConversationID`. Unverified against Daraja (its documentation
/// lists no such code); [`MpesaResults::with_not_found_codes`] overrides it.
pub const DEFAULT_NOT_FOUND_CODES: &[&str] = &["R000002"];

/// What a status query's result says, with `not_found` the codes meaning "unknown id"
/// (empty: [`DEFAULT_NOT_FOUND_CODES`]).
pub(crate) fn classify(r: &MpesaResult, not_found: &[String]) -> QueryOutcome {
    if !r.is_success() {
        let unknown = if not_found.is_empty() {
            DEFAULT_NOT_FOUND_CODES.contains(&r.result_code.as_str())
        } else {
            not_found.contains(&r.result_code)
        };
        return if unknown {
            QueryOutcome::NotFound
        } else {
            QueryOutcome::QueryFailed(format!("{} {}", r.result_code, r.result_desc))
        };
    }
    let status = r.parameter("TransactionStatus").unwrap_or("");
    match status.to_ascii_lowercase().as_str() {
        "completed" => match r.receipt() {
            Some(receipt) => QueryOutcome::Completed(receipt.to_string()),
            // Paid without a receipt cannot be evidenced: ask again.
            None => QueryOutcome::Pending,
        },
        "failed" | "cancelled" | "canceled" | "declined" | "expired" | "reversed" => {
            let why = r
                .parameter("ReasonType")
                .or_else(|| r.parameter("TransactionReason"))
                .filter(|s| !s.is_empty())
                .unwrap_or(status);
            QueryOutcome::Failed(format!("M-Pesa: {status}: {why}"))
        }
        _ => QueryOutcome::Pending,
    }
}
