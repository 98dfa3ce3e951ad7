//! The durable SMS outbox: every message the engine sends is first a record committed in
//! the same batch as the change that causes it (a challenge, a settlement), then sent by
//! a worker step, so a crash delays an SMS and never loses one.
//!
//! Each record is also the message's delivery record: `QUEUED` until a gateway accepts
//! it (retried with exponential backoff, given up after [`SmsPolicy::max_attempts`] or
//! on a permanent refusal), `ACCEPTED` with the gateway's message id, then `DELIVERED`
//! or `FAILED` as the gateway's delivery reports say ([`Engine::record_sms_report`]).
//!
//! The text of a code message holds the one-time code in plaintext. It is erased from
//! the record in the commit that records the gateway's acceptance (or the end of the
//! message: given up, or cancelled because its challenge was used, replaced or expired),
//! so it sits at rest only while the message is queued. It is never logged: the
//! record's and the message's `Debug` redact it, and errors never carry it.

use super::Engine;
use crate::domain::consent::Challenge;
use crate::domain::ids::ChallengeId;
use crate::domain::money::{Micros, Token};
use crate::domain::phone::Phone;
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::kinds;
use crate::ports::record::{Record, Versioned, get_record, get_record_by_unique};
use crate::ports::services::{SmsDelivery, SmsKind, SmsMessage};
use crate::ports::store::{Batch, Put};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the outbox sends: retries, and the text of the "you received money" message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmsPolicy {
    /// The wait after a message's first failed attempt; each further failure doubles
    /// it, up to `retry_max_ms`.
    pub retry_first_ms: i64,
    /// The longest wait between two attempts.
    pub retry_max_ms: i64,
    /// Attempts before a message is given up (`GAVE_UP`, text erased).
    pub max_attempts: u32,
    /// The USSD access instructions of the "you received money" message per country,
    /// by E.164 country calling code without `+` (`"225"`: Côte d'Ivoire). The longest
    /// code that prefixes the recipient's number wins.
    pub ussd_instructions: BTreeMap<String, String>,
    /// The instructions for a number no entry of `ussd_instructions` matches.
    pub ussd_instructions_default: String,
}

impl Default for SmsPolicy {
    fn default() -> Self {
        SmsPolicy {
            retry_first_ms: 5_000,
            retry_max_ms: 600_000,
            max_attempts: 10,
            ussd_instructions: BTreeMap::new(),
            ussd_instructions_default: "Dial *144# to open your wallet and see your balance."
                .into(),
        }
    }
}

impl SmsPolicy {
    /// The instructions for `phone`'s country (see `ussd_instructions`).
    pub fn ussd_for(&self, phone: &Phone) -> &str {
        let digits = phone.as_str().trim_start_matches('+');
        self.ussd_instructions
            .iter()
            .filter(|(cc, _)| !cc.is_empty() && digits.starts_with(cc.as_str()))
            .max_by_key(|(cc, _)| cc.len())
            .map(|(_, text)| text.as_str())
            .unwrap_or(&self.ussd_instructions_default)
    }

    /// The wait after the `attempts`-th failed attempt (1-based): doubling from
    /// `retry_first_ms`, capped at `retry_max_ms`.
    pub fn backoff_ms(&self, attempts: u32) -> i64 {
        let shift = attempts.saturating_sub(1).min(32);
        self.retry_first_ms
            .max(0)
            .saturating_mul(1i64 << shift)
            .min(self.retry_max_ms.max(0))
    }
}

/// Where an SMS of the outbox stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SmsStatus {
    /// Not accepted by a gateway yet: a worker sends it when due.
    Queued,
    /// Accepted by the gateway (its message id recorded); delivery not reported yet.
    Accepted,
    /// The gateway reported it delivered to the handset.
    Delivered,
    /// The gateway reported that it could not deliver it.
    Failed,
    /// Never accepted: refused for good, or `max_attempts` failed attempts.
    GaveUp,
    /// Not sent because its code can no longer be used (confirmed, replaced by a newer
    /// request, or expired).
    Cancelled,
}

impl SmsStatus {
    /// The stored name (`QUEUED`, ...), also the record's listed status.
    pub fn as_str(self) -> &'static str {
        match self {
            SmsStatus::Queued => "QUEUED",
            SmsStatus::Accepted => "ACCEPTED",
            SmsStatus::Delivered => "DELIVERED",
            SmsStatus::Failed => "FAILED",
            SmsStatus::GaveUp => "GAVE_UP",
            SmsStatus::Cancelled => "CANCELLED",
        }
    }
}

/// One SMS of the outbox and its delivery record (kind [`kinds::kind::SMS`]).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmsRecord {
    /// `sms_...`.
    pub id: String,
    /// Why it is sent.
    pub kind: SmsKind,
    /// The recipient.
    pub to: Phone,
    /// The tenant whose request caused it (code messages); `None` for a notice no
    /// tenant serves.
    pub tenant: Option<String>,
    /// The challenge whose code it carries: the message is cancelled, not sent, once
    /// the challenge can no longer be used.
    pub challenge: Option<String>,
    /// The text; `None` from the gateway's acceptance (or the message's end) on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    /// Where it stands.
    pub status: SmsStatus,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When a worker should next try (while `QUEUED`).
    pub next_attempt_at: Option<Timestamp>,
    /// The gateway's message id, from its acceptance on.
    pub gateway_message_id: Option<String>,
    /// The gateway's own words of its last delivery report (`Success`, `delivered`, ...).
    pub gateway_status: Option<String>,
    /// Whether the last delivery report was authenticated (Twilio's signature); an
    /// unsigned report (Africa's Talking) is recorded as a hint only.
    pub report_verified: bool,
    /// Why the gateway could not deliver it (a `FAILED` report).
    pub failure_reason: Option<String>,
    /// When it was queued.
    pub created_at: Timestamp,
    /// When the gateway accepted it.
    pub accepted_at: Option<Timestamp>,
    /// When it was last changed.
    pub updated_at: Timestamp,
}

impl std::fmt::Debug for SmsRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmsRecord")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("to", &self.to.masked())
            .field("text", &self.text.as_ref().map(|_| "<redacted>"))
            .field("status", &self.status)
            .field("attempts", &self.attempts)
            .field("gateway_message_id", &self.gateway_message_id)
            .finish_non_exhaustive()
    }
}

impl SmsRecord {
    /// Whether the text is still stored (only while the message is queued).
    pub fn has_text(&self) -> bool {
        self.text.is_some()
    }

    /// The unique key of a gateway message id.
    pub fn gateway_key(message_id: &str) -> String {
        kinds::key(kinds::namespace::SMS_GATEWAY_ID, message_id)
    }

    fn end(&mut self, status: SmsStatus, now: Timestamp) {
        self.status = status;
        self.text = None;
        self.next_attempt_at = None;
        self.updated_at = now;
    }
}

impl Record for SmsRecord {
    const KIND: &'static str = kinds::kind::SMS;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        self.tenant.clone()
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.status.as_str().to_string())
    }
    fn due_at(&self) -> Option<Timestamp> {
        (self.status == SmsStatus::Queued)
            .then_some(self.next_attempt_at)
            .flatten()
    }
    fn unique_keys(&self) -> Vec<String> {
        self.gateway_message_id
            .iter()
            .map(|id| Self::gateway_key(id))
            .collect()
    }
}

/// How one attempt to send ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// The gateway accepted it.
    Accepted,
    /// It failed and will be tried again.
    Retrying,
    /// It ended without being accepted (given up or cancelled).
    Ended(SmsStatus),
}

impl Engine {
    /// A new queued message and the put that inserts it, due at `due_at`.
    pub(crate) fn queue_sms(
        &self,
        to: &Phone,
        message: SmsMessage,
        tenant: Option<String>,
        challenge: Option<&ChallengeId>,
        due_at: Timestamp,
    ) -> CoreResult<(SmsRecord, Put)> {
        let now = self.now();
        let rec = SmsRecord {
            id: self.new_id("sms"),
            kind: message.kind,
            to: to.clone(),
            tenant,
            challenge: challenge.map(|c| c.0.clone()),
            text: Some(message.text),
            status: SmsStatus::Queued,
            attempts: 0,
            last_error: None,
            next_attempt_at: Some(due_at),
            gateway_message_id: None,
            gateway_status: None,
            report_verified: false,
            failure_reason: None,
            created_at: now,
            accepted_at: None,
            updated_at: now,
        };
        let put = rec.insert()?;
        Ok((rec, put))
    }

    /// The "you received money" message to a recipient no tenant serves, with the USSD
    /// instructions of the recipient's country.
    pub(crate) fn money_received_sms(&self, to: &Phone, amount: Micros, token: Token) -> String {
        format!(
            "You received {} {}. {}",
            amount.to_decimal_string(),
            token,
            self.config.sms.ussd_for(to)
        )
    }

    /// One attempt at a queued message held by this caller (just committed with a
    /// hold, or claimed): sends it, then commits the outcome.
    pub(crate) async fn deliver_sms(
        &self,
        v: Versioned<SmsRecord>,
        background: bool,
    ) -> CoreResult<Attempt> {
        let Versioned {
            record: mut rec,
            version,
        } = v;
        if rec.status != SmsStatus::Queued {
            return Ok(Attempt::Ended(rec.status));
        }
        let now = self.now();
        let commit = |rec: &SmsRecord| -> CoreResult<Batch> {
            Ok(Batch {
                puts: vec![rec.update(version)?],
                background,
                ..Default::default()
            })
        };
        if !self.sms_still_wanted(&rec, now).await? {
            rec.end(SmsStatus::Cancelled, now);
            self.commit(commit(&rec)?).await?;
            return Ok(Attempt::Ended(SmsStatus::Cancelled));
        }
        let Some(text) = rec.text.clone() else {
            rec.end(SmsStatus::GaveUp, now);
            self.commit(commit(&rec)?).await?;
            return Ok(Attempt::Ended(SmsStatus::GaveUp));
        };
        let message = SmsMessage {
            kind: rec.kind,
            text,
        };
        let sent = self.ports().notifier.send_sms(&rec.to, &message).await;
        let now = self.now();
        let outcome = match sent {
            Ok(accepted) => {
                rec.status = SmsStatus::Accepted;
                rec.text = None;
                rec.next_attempt_at = None;
                rec.gateway_message_id = Some(accepted.message_id);
                rec.accepted_at = Some(now);
                rec.updated_at = now;
                Attempt::Accepted
            }
            Err(e) => {
                rec.attempts += 1;
                rec.last_error = Some(e.reason.chars().take(500).collect());
                if !e.retryable || rec.attempts >= self.config.sms.max_attempts {
                    rec.end(SmsStatus::GaveUp, now);
                    Attempt::Ended(SmsStatus::GaveUp)
                } else {
                    rec.next_attempt_at =
                        Some(now.plus_millis(self.config.sms.backoff_ms(rec.attempts)));
                    rec.updated_at = now;
                    Attempt::Retrying
                }
            }
        };
        self.commit(commit(&rec)?).await?;
        Ok(outcome)
    }

    /// False when the message carries the code of a challenge that can no longer be
    /// confirmed: sending it would only put a dead code on a phone.
    async fn sms_still_wanted(&self, rec: &SmsRecord, now: Timestamp) -> CoreResult<bool> {
        let Some(id) = &rec.challenge else {
            return Ok(true);
        };
        Ok(
            match get_record::<Challenge>(&*self.ports().store, id).await? {
                Some(c) => {
                    let c = c.record;
                    c.consumed_at.is_none() && !c.superseded && now < c.expires_at
                }
                None => false,
            },
        )
    }

    /// The worker step of the outbox: sends the queued messages that are due. Returns
    /// how many a gateway accepted; failures go to `errors` (never with a text).
    pub(crate) async fn send_due_sms(&self, errors: &mut Vec<String>) -> (usize, bool) {
        let claimed = match self
            .ports()
            .store
            .claim_due(
                SmsRecord::KIND,
                0,
                &self.config.worker_id,
                self.now(),
                self.config.claim_lease_ms,
                self.config.batch_limit,
            )
            .await
        {
            Ok(c) => c,
            Err(e) => {
                errors.push(format!("sms: {e}"));
                return (0, false);
            }
        };
        let more = self.config.batch_limit > 0 && claimed.len() >= self.config.batch_limit;
        let mut recs = Vec::with_capacity(claimed.len());
        for r in claimed {
            match SmsRecord::from_stored(&r) {
                Ok(rec) => recs.push(Versioned {
                    record: rec,
                    version: r.version,
                }),
                Err(e) => errors.push(format!("{}: {}", r.id, CoreError::from(e))),
            }
        }
        let done = futures_util::future::join_all(recs.into_iter().map(|v| async move {
            let id = v.record.id.clone();
            (id, self.deliver_sms(v, true).await)
        }))
        .await;
        let mut accepted = 0;
        for (id, r) in done {
            match r {
                Ok(Attempt::Accepted) => accepted += 1,
                Ok(Attempt::Retrying) => errors.push(format!("{id}: SMS not accepted, retrying")),
                Ok(Attempt::Ended(_)) => {}
                Err(e) => errors.push(format!("{id}: {e}")),
            }
        }
        (accepted, more)
    }

    /// Records a gateway's delivery report of the message it accepted under
    /// `message_id`. `verified` says whether the report was authenticated (a valid
    /// signature); an unverified one is kept as a hint, flagged as such.
    ///
    /// A final status (`DELIVERED`, `FAILED`) is never changed by a later report, so a
    /// report that arrives twice, late or out of order changes nothing. An unknown id is
    /// `NOT_FOUND` (nothing is created from a report).
    pub async fn record_sms_report(
        &self,
        message_id: &str,
        delivery: SmsDelivery,
        gateway_status: &str,
        verified: bool,
    ) -> CoreResult<SmsRecord> {
        let not_found = || CoreError::NotFound {
            kind: "sms",
            id: message_id.chars().take(64).collect(),
        };
        for _ in 0..8 {
            let Some(v) = get_record_by_unique::<SmsRecord>(
                &*self.ports().store,
                &SmsRecord::gateway_key(message_id),
            )
            .await?
            else {
                return Err(not_found());
            };
            let mut rec = v.record;
            if matches!(rec.status, SmsStatus::Delivered | SmsStatus::Failed) {
                return Ok(rec);
            }
            let now = self.now();
            rec.gateway_status = Some(gateway_status.chars().take(64).collect());
            rec.report_verified = verified;
            rec.updated_at = now;
            match delivery.clone() {
                SmsDelivery::Delivered => rec.status = SmsStatus::Delivered,
                SmsDelivery::Failed { reason } => {
                    rec.status = SmsStatus::Failed;
                    rec.failure_reason = Some(reason.chars().take(200).collect());
                }
                SmsDelivery::InProgress => {}
            }
            let batch = Batch {
                puts: vec![rec.update(v.version)?],
                background: true,
                ..Default::default()
            };
            match self.commit(batch).await {
                Ok(_) => return Ok(rec),
                Err(CoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(CoreError::Conflict {
            what: format!("sms {message_id}"),
            record: Some("sms".into()),
        })
    }

    /// The outbox record `id` (its delivery record).
    pub async fn sms_record(&self, id: &str) -> CoreResult<SmsRecord> {
        get_record::<SmsRecord>(&*self.ports().store, id)
            .await?
            .map(|v| v.record)
            .ok_or_else(|| CoreError::NotFound {
                kind: "sms",
                id: id.chars().take(64).collect(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = SmsPolicy {
            retry_first_ms: 1_000,
            retry_max_ms: 5_000,
            ..Default::default()
        };
        let waits: Vec<i64> = (1..=5).map(|n| p.backoff_ms(n)).collect();
        assert_eq!(waits, vec![1_000, 2_000, 4_000, 5_000, 5_000]);
        assert_eq!(p.backoff_ms(u32::MAX), 5_000);
    }

    #[test]
    fn ussd_instructions_follow_the_longest_country_code() {
        let mut p = SmsPolicy::default();
        p.ussd_instructions.insert("225".into(), "CI: *133#".into());
        p.ussd_instructions
            .insert("2250".into(), "CI mobile: *144#".into());
        p.ussd_instructions.insert("254".into(), "KE: *384#".into());
        let ph = |s: &str| Phone::parse(s).unwrap();
        assert_eq!(p.ussd_for(&ph("+2250700000001")), "CI mobile: *144#");
        assert_eq!(p.ussd_for(&ph("+2251700000001")), "CI: *133#");
        assert_eq!(p.ussd_for(&ph("+254700000001")), "KE: *384#");
        assert_eq!(p.ussd_for(&ph("+14155550100")), p.ussd_instructions_default);
    }
}
