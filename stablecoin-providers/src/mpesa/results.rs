//! Daraja's result bodies (the B2C result and the transaction-status result, both
//! POSTed to a `ResultURL`) and [`MpesaResults`], the store they are recorded in.

use crate::ProviderError;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;

/// One result Daraja POSTed to a `ResultURL`: the B2C payment's result or a
/// transaction-status query's.
#[derive(Clone, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// What a recorded result was matched to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// The result of the payout with this id's B2C request: a hint only. The host
    /// makes the engine ask ([`crate::mpesa::MpesaB2c`]'s status) and nothing more.
    Payment {
        /// Our payout id.
        payout_id: String,
    },
    /// The result of a status query the adapter issued for this payout id: recorded
    /// as the payout's status, which the next status call returns.
    StatusQuery {
        /// Our payout id.
        payout_id: String,
    },
    /// Not a request of ours (unknown `ConversationID` and `OriginatorConversationID`,
    /// or a forgery): ignored.
    Unmatched,
}

impl Recorded {
    /// The payout the result concerns, if it is one of ours.
    pub fn payout_id(&self) -> Option<&str> {
        match self {
            Recorded::Payment { payout_id } | Recorded::StatusQuery { payout_id } => {
                Some(payout_id)
            }
            Recorded::Unmatched => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Payment,
    Query,
}

#[derive(Debug, Default)]
struct Inner {
    /// Daraja's `ConversationID`s from our acknowledgements: to the payout id and
    /// whether the request was the payment or a status query.
    conversations: HashMap<String, (String, Kind)>,
    /// Payout ids submitted through this store's adapter.
    submitted: HashSet<String>,
    /// The latest status-query outcome per payout id.
    outcomes: HashMap<String, QueryOutcome>,
    /// The latest B2C result per payout id (hints, kept for inspection).
    hints: HashMap<String, MpesaResult>,
    /// Results that arrived before the acknowledgement naming their `ConversationID`
    /// was read (Daraja can be that quick), newest last, at most [`ORPHANS`].
    orphans: VecDeque<MpesaResult>,
}

/// How many unmatched results are kept for an acknowledgement still in flight.
const ORPHANS: usize = 256;

impl Inner {
    /// Files `r` under the request its `ConversationID` names, if known.
    fn file(&mut self, r: &MpesaResult, not_found: &[String]) -> Option<Recorded> {
        match self.conversations.get(&r.conversation_id).cloned() {
            Some((id, Kind::Query)) => {
                self.outcomes.insert(id.clone(), classify(r, not_found));
                Some(Recorded::StatusQuery { payout_id: id })
            }
            Some((id, Kind::Payment)) => {
                self.hints.insert(id.clone(), r.clone());
                Some(Recorded::Payment { payout_id: id })
            }
            None => None,
        }
    }

    /// Files the orphans `conversation_id` now names.
    fn adopt(&mut self, conversation_id: &str, not_found: &[String]) {
        let (mine, rest): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut self.orphans)
            .into_iter()
            .partition(|r| r.conversation_id == conversation_id);
        self.orphans = rest;
        for r in mine {
            let _ = self.file(&r, not_found);
        }
    }
}

/// The results Daraja POSTed back, shared by [`crate::mpesa::MpesaB2c`] and the host's
/// `ResultURL` route (which hands every body to [`MpesaResults::record`]).
///
/// A result is matched by its `ConversationID` to a request of ours: Daraja returns
/// that id in the synchronous acknowledgement of each request, over TLS, so a forger
/// who never saw it cannot match one. Only the results of the adapter's own status
/// queries become a payout's status; a B2C result is kept as a hint. In memory: after
/// a restart the adapter simply queries again.
#[derive(Debug, Default)]
pub struct MpesaResults {
    inner: Mutex<Inner>,
    not_found: Vec<String>,
}

impl MpesaResults {
    /// An empty store that reads [`DEFAULT_NOT_FOUND_CODES`] as "unknown id".
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that reads these status-query result codes as "M-Pesa holds
    /// no transaction under this id" (instead of [`DEFAULT_NOT_FOUND_CODES`]).
    pub fn with_not_found_codes(codes: Vec<String>) -> Self {
        MpesaResults {
            inner: Mutex::default(),
            not_found: codes,
        }
    }

    /// Records a body POSTed to the `ResultURL` and says which request of ours it
    /// answers; `BadCallback` when it is not Daraja's result shape. Answer Daraja 200
    /// for any parsed body, even [`Recorded::Unmatched`].
    pub fn record(&self, body: &[u8]) -> Result<Recorded, ProviderError> {
        let r = parse(body)?;
        let Ok(mut g) = self.inner.lock() else {
            return Ok(Recorded::Unmatched);
        };
        if let Some(recorded) = g.file(&r, &self.not_found) {
            return Ok(recorded);
        }
        // The payment's acknowledgement was lost (or is still in flight): its result
        // names our payout id. A hint, as every B2C result is.
        let hinted = g
            .submitted
            .contains(&r.originator_conversation_id)
            .then(|| r.originator_conversation_id.clone());
        if let Some(id) = &hinted {
            g.hints.insert(id.clone(), r.clone());
        }
        if g.orphans.len() >= ORPHANS {
            g.orphans.pop_front();
        }
        g.orphans.push_back(r);
        Ok(match hinted {
            Some(payout_id) => Recorded::Payment { payout_id },
            None => Recorded::Unmatched,
        })
    }

    /// The latest B2C result recorded for `payout_id` (a hint, never its status).
    pub fn hint(&self, payout_id: &str) -> Option<MpesaResult> {
        self.inner.lock().ok()?.hints.get(payout_id).cloned()
    }

    pub(crate) fn submitted(&self, payout_id: &str, conversation_id: Option<&str>) {
        if let Ok(mut g) = self.inner.lock() {
            g.submitted.insert(payout_id.to_string());
            // A NotFound seen before this submit is out of date.
            if g.outcomes.get(payout_id) == Some(&QueryOutcome::NotFound) {
                g.outcomes.remove(payout_id);
            }
            if let Some(c) = conversation_id.filter(|c| !c.is_empty()) {
                g.conversations
                    .insert(c.to_string(), (payout_id.to_string(), Kind::Payment));
                g.adopt(c, &self.not_found);
            }
        }
    }

    pub(crate) fn query_sent(&self, payout_id: &str, conversation_id: &str) {
        if let Ok(mut g) = self.inner.lock() {
            // An outcome that is not final is out of date: wait for this query's.
            if !matches!(
                g.outcomes.get(payout_id),
                Some(QueryOutcome::Completed(_) | QueryOutcome::Failed(_))
            ) {
                g.outcomes.remove(payout_id);
            }
            g.conversations.insert(
                conversation_id.to_string(),
                (payout_id.to_string(), Kind::Query),
            );
            g.adopt(conversation_id, &self.not_found);
        }
    }

    pub(crate) fn outcome(&self, payout_id: &str) -> Option<QueryOutcome> {
        self.inner.lock().ok()?.outcomes.get(payout_id).cloned()
    }

    /// Takes a `NotFound` or `QueryFailed` outcome (each answers one status call: the
    /// next one waits for a newer query's result); final and pending ones stay.
    pub(crate) fn take_transient(&self, payout_id: &str) -> Option<QueryOutcome> {
        let mut g = self.inner.lock().ok()?;
        match g.outcomes.get(payout_id) {
            Some(QueryOutcome::NotFound | QueryOutcome::QueryFailed(_)) => {
                g.outcomes.remove(payout_id)
            }
            other => other.cloned(),
        }
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
