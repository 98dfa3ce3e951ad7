//! Top-ups (spec 1 item 3, 2.6): money in. A tenant asks for a top-up quote (fiat amount,
//! currency, token) at a locked rate; service staff confirm it once the fiat has arrived,
//! and the confirmation credits the tenant's treasury exactly once.
//!
//! The rate and the token amount come from the FX quote math ([`crate::domain::fx`]):
//! a top-up is priced by [`crate::domain::fx::make_quote`] and keeps its `expected_out`
//! (rounded down to the micro-unit). Only the lifetime differs: a bank transfer takes
//! hours, not 60 seconds, so a top-up quote lives [`TOPUP_TTL_MS`] by default
//! (`EngineConfig::topup_ttl_ms`).
//!
//! States: `AWAITING_FUNDS -> CREDITED` on a staff confirmation before `expires_at`;
//! `AWAITING_FUNDS -> EXPIRED` when time passes first. EXPIRED is never stored: it is
//! derived from the clock ([`TopUp::status_at`]), so no worker is needed to expire a
//! quote and a stored record never disagrees with the time.
//!
//! Two-person rule: one staff credential must not be able to mint any amount. A top-up
//! whose `token_amount` is above the single-approval cap
//! (`EngineConfig::topup_single_approval_max`, [`SINGLE_APPROVAL_MAX`] by default) is
//! only PROPOSED by the first confirmation (`AWAITING_FUNDS -> AWAITING_SECOND_APPROVAL`,
//! claiming the fiat reference and naming the proposer); a confirmation by a different
//! staff identity with the same fiat reference credits it. The proposer confirming again
//! with the same reference is SECOND_APPROVER_REQUIRED; with another reference it
//! replaces the proposal (a typo is fixed by its author, never by the approver).
//! Another approver's different reference is APPROVAL_MISMATCH. A proposal does not
//! expire: its first approver recorded that the fiat arrived in time.

use crate::domain::RuleError;
use crate::domain::fx::Quote;
use crate::domain::ids::TenantId;
use crate::domain::money::{Micros, Token};
use crate::domain::time::Timestamp;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// The id prefix of a top-up (`tu_...`).
pub const TOPUP_ID_PREFIX: &str = "tu";

/// The default lifetime of a top-up quote: 24 hours, time for a bank or mobile-money
/// transfer to arrive and be matched by staff.
pub const TOPUP_TTL_MS: i64 = 24 * 3_600_000;

/// The longest fiat reference staff may record (characters).
pub const FIAT_REFERENCE_MAX: usize = 200;
/// The longest staff note (characters).
pub const NOTE_MAX: usize = 1000;
/// The default single-approval cap: 10,000 tokens (micro-units). A credit above it needs
/// two different staff identities.
pub const SINGLE_APPROVAL_MAX: Micros = Micros(10_000_000_000);

/// Where a top-up is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TopUpStatus {
    /// Quoted; the fiat has not been confirmed yet.
    AwaitingFunds,
    /// Above the single-approval cap: one staff member confirmed the fiat (the
    /// proposal); a second, different one must approve before anything is credited.
    AwaitingSecondApproval,
    /// Staff confirmed the fiat; the treasury was credited (terminal).
    Credited,
    /// The quote's lifetime passed before a confirmation (terminal; derived, never
    /// stored).
    Expired,
}

impl TopUpStatus {
    /// Every status.
    pub const ALL: [TopUpStatus; 4] = [
        TopUpStatus::AwaitingFunds,
        TopUpStatus::AwaitingSecondApproval,
        TopUpStatus::Credited,
        TopUpStatus::Expired,
    ];

    /// The wire name (`AWAITING_FUNDS`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TopUpStatus::AwaitingFunds => "AWAITING_FUNDS",
            TopUpStatus::AwaitingSecondApproval => "AWAITING_SECOND_APPROVAL",
            TopUpStatus::Credited => "CREDITED",
            TopUpStatus::Expired => "EXPIRED",
        }
    }

    /// The status named `s`, if any.
    pub fn parse(s: &str) -> Option<TopUpStatus> {
        TopUpStatus::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// What can happen to a top-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TopUpEvent {
    /// Staff confirmed that the fiat arrived and the credit is approved (one staff
    /// member under the cap, the second above it).
    Confirm,
    /// The first staff confirmation of a top-up above the single-approval cap.
    Propose,
    /// The quote's `expires_at` passed.
    Expire,
}

impl TopUpEvent {
    /// Every event.
    pub const ALL: [TopUpEvent; 3] = [TopUpEvent::Confirm, TopUpEvent::Propose, TopUpEvent::Expire];
}

/// Why a transition is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopUpRefusal {
    /// A confirmation of a top-up that was already credited (a replay).
    AlreadyCredited,
    /// A confirmation of an expired quote.
    Expired,
    /// Anything else (time cannot expire a credited or an expired top-up).
    Invalid,
}

/// The one transition function of the top-up state machine.
pub fn transition(from: TopUpStatus, event: TopUpEvent) -> Result<TopUpStatus, TopUpRefusal> {
    use TopUpEvent::*;
    use TopUpStatus::*;
    match (from, event) {
        (AwaitingFunds | AwaitingSecondApproval, Confirm) => Ok(Credited),
        (AwaitingFunds | AwaitingSecondApproval, Propose) => Ok(AwaitingSecondApproval),
        (AwaitingFunds, Expire) => Ok(Expired),
        (Credited, Confirm | Propose) => Err(TopUpRefusal::AlreadyCredited),
        (Expired, Confirm | Propose) => Err(TopUpRefusal::Expired),
        // A proposal does not expire (its approver saw the fiat arrive in time).
        (AwaitingSecondApproval | Credited | Expired, Expire) => Err(TopUpRefusal::Invalid),
    }
}

/// A top-up quote and, once confirmed, its credit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopUp {
    /// `tu_...`.
    pub id: String,
    /// The tenant whose treasury it credits; only it may read the top-up.
    pub tenant: TenantId,
    /// ISO 4217 code of the fiat paid (`XOF`, `NGN`, ...).
    pub currency_code: String,
    /// The fiat to pay, exactly 2 decimal places.
    pub fiat_amount: Decimal,
    /// The token credited.
    pub token: Token,
    /// Local currency per token, locked at creation.
    pub rate: Decimal,
    /// Tokens credited: `fiat_amount / rate` rounded down to the micro-unit.
    pub token_amount: Micros,
    /// Stored status: AWAITING_FUNDS, AWAITING_SECOND_APPROVAL or CREDITED (EXPIRED is
    /// derived, see [`TopUp::status_at`]).
    pub status: TopUpStatus,
    /// When it was quoted.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// A confirmation at or after this instant is refused.
    pub expires_at: Timestamp,
    /// When staff confirmed it.
    #[serde(default)]
    pub confirmed_at: Option<Timestamp>,
    /// Whose confirmation credited it: a staff account (`stf_...`) or `admin-token`.
    #[serde(default)]
    pub confirmed_by: Option<String>,
    /// Above the single-approval cap: who proposed the credit (the first approver).
    #[serde(default)]
    pub proposed_by: Option<String>,
    /// When the credit was proposed.
    #[serde(default)]
    pub proposed_at: Option<Timestamp>,
    /// The fiat receipt's reference (bank or mobile-money transaction id), claimed from
    /// the first confirmation on.
    #[serde(default)]
    pub fiat_reference: Option<String>,
    /// The note of the first confirmation, if any (an approver's note is in the staff
    /// audit log).
    #[serde(default)]
    pub note: Option<String>,
}

/// The confirmation staff give (who gives it is an authenticated
/// `StaffIdentity`, passed beside it: never free text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopUpConfirmation {
    /// The fiat receipt's reference; 1 to 200 characters, no control characters.
    pub fiat_reference: String,
    /// Optional free text, up to 1000 characters.
    pub note: Option<String>,
}

/// What a staff confirmation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfirmOutcome {
    /// The treasury is to be credited (CREDITED).
    Credited,
    /// Above the cap: a proposal, recorded or replaced (AWAITING_SECOND_APPROVAL).
    Proposed,
}

fn clean(field: &'static str, s: &str, max: usize, required: bool) -> Result<String, RuleError> {
    let t = s.trim();
    if required && t.is_empty() {
        return Err(RuleError::InvalidParameter {
            field,
            reason: "must not be empty".into(),
        });
    }
    if s.chars().count() > max {
        return Err(RuleError::InvalidParameter {
            field,
            reason: format!("must be at most {max} characters"),
        });
    }
    if s.chars().any(|c| c.is_control() && c != '\n') {
        return Err(RuleError::InvalidParameter {
            field,
            reason: "must not contain control characters".into(),
        });
    }
    Ok(t.to_string())
}

impl TopUpConfirmation {
    /// The confirmation with its fields checked, then trimmed: INVALID_PARAMETER on
    /// `fiat_reference` or `note`. The checks read the fields as given (a
    /// control character is refused even where trimming would remove it), as the
    /// OpenAPI patterns state them; a reference has no line feed either.
    pub fn checked(self) -> Result<TopUpConfirmation, RuleError> {
        if self.fiat_reference.contains('\n') {
            return Err(RuleError::InvalidParameter {
                field: "fiat_reference",
                reason: "must be one line".into(),
            });
        }
        let fiat_reference = clean(
            "fiat_reference",
            &self.fiat_reference,
            FIAT_REFERENCE_MAX,
            true,
        )?;
        let note = match self.note {
            Some(n) => Some(clean("note", &n, NOTE_MAX, false)?).filter(|n| !n.is_empty()),
            None => None,
        };
        Ok(TopUpConfirmation {
            fiat_reference,
            note,
        })
    }
}

impl TopUp {
    /// A top-up `id` priced as the FX quote `q` (same rate, same rounding), living
    /// `ttl_ms` from the quote's creation.
    pub fn from_quote(id: String, q: Quote, ttl_ms: i64) -> TopUp {
        TopUp {
            id,
            tenant: q.tenant,
            currency_code: q.local_currency,
            fiat_amount: q.fiat_amount,
            token: q.target_token,
            rate: q.rate,
            token_amount: q.expected_out,
            status: TopUpStatus::AwaitingFunds,
            created_at: q.created_at,
            updated_at: q.created_at,
            expires_at: q.created_at.plus_millis(ttl_ms),
            confirmed_at: None,
            confirmed_by: None,
            proposed_by: None,
            proposed_at: None,
            fiat_reference: None,
            note: None,
        }
    }

    /// The status at `now`: an unconfirmed top-up is EXPIRED from `expires_at` on.
    pub fn status_at(&self, now: Timestamp) -> TopUpStatus {
        if self.status == TopUpStatus::AwaitingFunds && now >= self.expires_at {
            // AWAITING_FUNDS always accepts Expire.
            transition(self.status, TopUpEvent::Expire).unwrap_or(TopUpStatus::Expired)
        } else {
            self.status
        }
    }

    /// Records the confirmation `c` by the staff identity `staff` at `now`, under the
    /// single-approval cap `cap` (see the module). ALREADY_CONFIRMED for a top-up
    /// already credited (whatever the reference: a replay changes nothing),
    /// QUOTE_EXPIRED once `expires_at` has passed without a confirmation,
    /// SECOND_APPROVER_REQUIRED when the proposer approves their own proposal,
    /// APPROVAL_MISMATCH when another approver's reference differs from the proposal's.
    /// "Already confirmed" comes first: staff retrying a confirmation must learn that
    /// the credit happened. A refusal changes nothing.
    pub fn confirm(
        &mut self,
        c: &TopUpConfirmation,
        staff: &str,
        cap: Micros,
        now: Timestamp,
    ) -> Result<ConfirmOutcome, RuleError> {
        let from = self.status_at(now);
        let event = match (from, self.proposed_by.as_deref()) {
            (TopUpStatus::AwaitingSecondApproval, Some(p)) if p == staff => {
                if self.fiat_reference.as_deref() == Some(c.fiat_reference.as_str()) {
                    return Err(RuleError::SecondApproverRequired {
                        proposed_by: p.to_string(),
                    });
                }
                // The proposer corrects their own proposal.
                TopUpEvent::Propose
            }
            (TopUpStatus::AwaitingSecondApproval, _) => {
                if self.fiat_reference.as_deref() != Some(c.fiat_reference.as_str()) {
                    return Err(RuleError::ApprovalMismatch {
                        field: "fiat_reference",
                    });
                }
                TopUpEvent::Confirm
            }
            _ if self.token_amount > cap => TopUpEvent::Propose,
            _ => TopUpEvent::Confirm,
        };
        match transition(from, event) {
            Ok(next) => {
                self.status = next;
                self.updated_at = now;
                self.fiat_reference = Some(c.fiat_reference.clone());
                if event == TopUpEvent::Propose {
                    self.proposed_by = Some(staff.to_string());
                    self.proposed_at = Some(now);
                    self.note = c.note.clone();
                    return Ok(ConfirmOutcome::Proposed);
                }
                if from == TopUpStatus::AwaitingFunds {
                    self.note = c.note.clone();
                }
                self.confirmed_at = Some(now);
                self.confirmed_by = Some(staff.to_string());
                Ok(ConfirmOutcome::Credited)
            }
            Err(TopUpRefusal::AlreadyCredited) => Err(RuleError::AlreadyConfirmed {
                id: self.id.clone(),
                fiat_reference: self.fiat_reference.clone().unwrap_or_default(),
            }),
            Err(TopUpRefusal::Expired) => Err(RuleError::QuoteExpired {
                quote_id: self.id.clone(),
            }),
            Err(TopUpRefusal::Invalid) => Err(RuleError::InvalidTransition {
                machine: "topup",
                from: from.as_str().into(),
                event: format!("{event:?}"),
            }),
        }
    }

    /// `<CURRENCY>_<TOKEN>`, as on an FX quote.
    pub fn currency_pair(&self) -> String {
        format!("{}_{}", self.currency_code, self.token)
    }

    /// The tenant's view at `now` (no staff identity or note).
    pub fn view(&self, now: Timestamp) -> TopUpView {
        let mut fiat = self.fiat_amount;
        fiat.rescale(2);
        TopUpView {
            id: self.id.clone(),
            status: self.status_at(now).as_str().to_string(),
            currency_code: self.currency_code.clone(),
            fiat_amount: fiat.to_string(),
            token: self.token.to_string(),
            rate: self.rate.normalize().to_string(),
            token_amount: self.token_amount.to_decimal_string(),
            currency_pair: self.currency_pair(),
            expires_at: self.expires_at.to_rfc3339(),
            created_at: self.created_at.to_rfc3339(),
            updated_at: self.updated_at.to_rfc3339(),
            confirmed_at: self.confirmed_at.map(|t| t.to_rfc3339()),
            fiat_reference: self.fiat_reference.clone(),
            tenant_id: None,
            confirmed_by: None,
            proposed_by: None,
            proposed_at: None,
            note: None,
        }
    }

    /// The staff's view at `now`: the tenant's plus who proposed and confirmed it, and
    /// the note.
    pub fn staff_view(&self, now: Timestamp) -> TopUpView {
        TopUpView {
            tenant_id: Some(self.tenant.to_string()),
            confirmed_by: self.confirmed_by.clone(),
            proposed_by: self.proposed_by.clone(),
            proposed_at: self.proposed_at.map(|t| t.to_rfc3339()),
            note: self.note.clone(),
            ..self.view(now)
        }
    }
}

/// A top-up as the API shows it; every amount a decimal string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopUpView {
    /// `tu_...`.
    pub id: String,
    /// AWAITING_FUNDS, AWAITING_SECOND_APPROVAL, CREDITED or EXPIRED.
    pub status: String,
    /// ISO 4217 code of the fiat.
    pub currency_code: String,
    /// Exactly two decimals.
    pub fiat_amount: String,
    /// `USDC` or `USDT`.
    pub token: String,
    /// Local currency per token, normalized.
    pub rate: String,
    /// Tokens credited on confirmation, 6 decimals.
    pub token_amount: String,
    /// `<CURRENCY>_<TOKEN>`.
    pub currency_pair: String,
    /// RFC 3339 UTC.
    pub expires_at: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    pub updated_at: String,
    /// RFC 3339 UTC, once credited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<String>,
    /// The fiat receipt's reference, once credited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fiat_reference: Option<String>,
    /// Staff views only: the tenant whose treasury it credits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// Staff views only: whose confirmation credited it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_by: Option<String>,
    /// Staff views only: who proposed it (above the single-approval cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_by: Option<String>,
    /// Staff views only: when it was proposed (RFC 3339 UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_at: Option<String>,
    /// Staff views only: the confirmation's note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    // The store impls live in engine/records.rs; these tests check what they claim.
    use crate::domain::fx::make_quote;
    use crate::domain::ids::QuoteId;
    use crate::domain::money::Currency;
    use crate::ports::record::Record;

    #[test]
    fn every_state_and_event_pair_has_one_answer() {
        use TopUpEvent::*;
        use TopUpStatus::*;
        for from in TopUpStatus::ALL {
            for event in TopUpEvent::ALL {
                let expected = match (from, event) {
                    (AwaitingFunds, Confirm) => Ok(Credited),
                    (AwaitingFunds, Propose) => Ok(AwaitingSecondApproval),
                    (AwaitingFunds, Expire) => Ok(Expired),
                    (AwaitingSecondApproval, Confirm) => Ok(Credited),
                    (AwaitingSecondApproval, Propose) => Ok(AwaitingSecondApproval),
                    (AwaitingSecondApproval, Expire) => Err(TopUpRefusal::Invalid),
                    (Credited, Confirm) => Err(TopUpRefusal::AlreadyCredited),
                    (Credited, Propose) => Err(TopUpRefusal::AlreadyCredited),
                    (Expired, Confirm) => Err(TopUpRefusal::Expired),
                    (Expired, Propose) => Err(TopUpRefusal::Expired),
                    (Credited, Expire) => Err(TopUpRefusal::Invalid),
                    (Expired, Expire) => Err(TopUpRefusal::Invalid),
                };
                assert_eq!(transition(from, event), expected, "{from:?} on {event:?}");
            }
        }
        for s in TopUpStatus::ALL {
            assert_eq!(TopUpStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(TopUpStatus::parse("expired"), None);
    }

    fn topup() -> TopUp {
        let q = make_quote(
            QuoteId("fx_x".into()),
            TenantId("ten_a".into()),
            Currency::parse("XOF").unwrap(),
            Token::Usdc,
            "1000".parse().unwrap(),
            "600".parse().unwrap(),
            Timestamp::from_millis(1_000),
        )
        .unwrap();
        TopUp::from_quote("tu_1".into(), q, 10_000)
    }

    fn conf(r: &str) -> TopUpConfirmation {
        TopUpConfirmation {
            fiat_reference: r.into(),
            note: None,
        }
    }

    const CAP: Micros = SINGLE_APPROVAL_MAX;

    #[test]
    fn a_topup_is_priced_like_an_fx_quote_and_expires_by_time() {
        let t = topup();
        assert_eq!(t.token_amount, Micros(1_666_666), "rounded down as fx does");
        assert_eq!(t.expires_at, Timestamp::from_millis(11_000));
        assert_eq!(
            t.status_at(Timestamp::from_millis(10_999)),
            TopUpStatus::AwaitingFunds
        );
        assert_eq!(
            t.status_at(Timestamp::from_millis(11_000)),
            TopUpStatus::Expired
        );
        assert_eq!(t.view(Timestamp::from_millis(11_000)).status, "EXPIRED");
        assert_eq!(t.view(Timestamp::from_millis(0)).fiat_amount, "1000.00");
    }

    #[test]
    fn confirm_credits_once_and_never_after_expiry() {
        let mut t = topup();
        let now = Timestamp::from_millis(5_000);
        t.confirm(&conf("BANK-1"), "alice", CAP, now).unwrap();
        assert_eq!(t.status, TopUpStatus::Credited);
        assert_eq!(t.confirmed_by.as_deref(), Some("alice"));
        let before = t.clone();
        let e = t.confirm(&conf("BANK-2"), "bob", CAP, now).unwrap_err();
        assert_eq!(e.code(), "ALREADY_CONFIRMED");
        assert_eq!(t, before, "a refused confirmation changes nothing");
        // Credited stays credited after expires_at, and a replay says so.
        let late = Timestamp::from_millis(50_000);
        assert_eq!(t.status_at(late), TopUpStatus::Credited);
        assert_eq!(
            t.confirm(&conf("BANK-1"), "alice", CAP, late)
                .unwrap_err()
                .code(),
            "ALREADY_CONFIRMED"
        );
        let mut e = topup();
        assert_eq!(
            e.confirm(
                &conf("BANK-3"),
                "alice",
                CAP,
                Timestamp::from_millis(11_000)
            )
            .unwrap_err()
            .code(),
            "QUOTE_EXPIRED"
        );
        assert_eq!(e.status, TopUpStatus::AwaitingFunds);
    }

    #[test]
    fn confirmation_fields_are_checked() {
        let ok = conf("  BANK-1 ").checked().unwrap();
        assert_eq!(ok.fiat_reference, "BANK-1");
        for bad in ["", "   ", "a\nb", "a\u{0}b", "x\n", "\u{85}x"] {
            assert!(conf(bad).checked().is_err(), "{bad:?}");
        }
        assert!(conf(&"x".repeat(201)).checked().is_err());
        let mut c = conf("R");
        c.note = Some("  ".into());
        assert_eq!(c.checked().unwrap().note, None);
    }

    #[test]
    fn the_staff_view_alone_names_the_staff() {
        let mut t = topup();
        let c = TopUpConfirmation {
            note: Some("wire matched".into()),
            ..conf("BANK-1")
        };
        t.confirm(&c, "alice", CAP, Timestamp::from_millis(2_000))
            .unwrap();
        let v = t.view(Timestamp::from_millis(2_000));
        assert_eq!(v.confirmed_by, None);
        assert_eq!(v.tenant_id, None);
        assert_eq!(v.note, None);
        assert_eq!(v.fiat_reference.as_deref(), Some("BANK-1"));
        let s = t.staff_view(Timestamp::from_millis(2_000));
        assert_eq!(s.confirmed_by.as_deref(), Some("alice"));
        assert_eq!(s.note.as_deref(), Some("wire matched"));
        assert_eq!(s.tenant_id.as_deref(), Some("ten_a"));
        assert_eq!(t.unique_keys(), vec!["topup_ref:BANK-1".to_string()]);
    }

    #[test]
    fn above_the_cap_two_different_identities_are_needed() {
        let cap = Micros(1_000_000); // 1 token; the top-up is 1.666666
        let mut t = topup();
        let now = Timestamp::from_millis(2_000);
        let c = TopUpConfirmation {
            note: Some("wire seen".into()),
            ..conf("BANK-1")
        };
        assert_eq!(
            t.confirm(&c, "admin-token", cap, now).unwrap(),
            ConfirmOutcome::Proposed
        );
        assert_eq!(t.status, TopUpStatus::AwaitingSecondApproval);
        assert_eq!(t.proposed_by.as_deref(), Some("admin-token"));
        assert_eq!(t.confirmed_by, None);
        // The same identity again, with the same reference: refused, nothing changes.
        let before = t.clone();
        let e = t
            .confirm(&conf("BANK-1"), "admin-token", cap, now)
            .unwrap_err();
        assert_eq!(e.code(), "SECOND_APPROVER_REQUIRED");
        assert_eq!(t, before);
        // Another approver with another reference: refused, nothing changes.
        let e = t.confirm(&conf("BANK-9"), "stf_b", cap, now).unwrap_err();
        assert_eq!(
            (e.code(), e.param()),
            ("APPROVAL_MISMATCH", Some("fiat_reference"))
        );
        assert_eq!(t, before);
        // A proposal outlives the quote's expiry.
        let late = Timestamp::from_millis(50_000);
        assert_eq!(t.status_at(late), TopUpStatus::AwaitingSecondApproval);
        // The proposer may correct the reference (still a proposal).
        assert_eq!(
            t.confirm(&conf("BANK-2"), "admin-token", cap, now).unwrap(),
            ConfirmOutcome::Proposed
        );
        assert_eq!(t.fiat_reference.as_deref(), Some("BANK-2"));
        // A different identity with the same reference credits it.
        assert_eq!(
            t.confirm(&conf("BANK-2"), "stf_b", cap, late).unwrap(),
            ConfirmOutcome::Credited
        );
        assert_eq!(t.status, TopUpStatus::Credited);
        assert_eq!(t.confirmed_by.as_deref(), Some("stf_b"));
        assert_eq!(t.proposed_by.as_deref(), Some("admin-token"));
        assert_eq!(
            t.confirm(&conf("BANK-2"), "stf_c", cap, late)
                .unwrap_err()
                .code(),
            "ALREADY_CONFIRMED"
        );
        // At the cap exactly, one approval is enough.
        let mut t = topup();
        assert_eq!(
            t.confirm(&conf("BANK-3"), "stf_a", t.token_amount, now)
                .unwrap(),
            ConfirmOutcome::Credited
        );
    }
}
