//! Staff treasury credits (the CLI's `treasury credit`): a staff member credits a
//! tenant's treasury by hand after its fiat arrived outside a top-up quote.
//!
//! Why a record and not just the ledger transfer: the two-person rule needs somewhere to
//! keep the proposal between two people's commands, and a credit must name who made it.
//! The rule is the top-ups' ([`crate::domain::topup`]): up to
//! `EngineConfig::topup_single_approval_max` one staff identity credits; above it the
//! first call is a proposal and a different identity repeating it exactly (token and
//! amount, for the same tenant and reference) credits. Each call commits its staff audit
//! entry (`treasury.credit.proposed`, `treasury.credit`) with itself.
//!
//! The record's id is `<tenant>:<reference>`, so one fiat reference credits a tenant
//! once; the ledger transfer keeps the id `credit:<tenant>:<reference>` of
//! [`Engine::credit_treasury`], so a reference credited either way is never credited
//! again the other way.

use super::{Engine, StaffIdentity, accounts, store_err};
use crate::domain::ids::TenantId;
use crate::domain::money::{Micros, Token};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::kinds::kind;
use crate::ports::ledger::{LedgerError, LedgerTransfer, Phase};
use crate::ports::record::{Record, get_record};
use crate::ports::store::{Batch, StoreError};
use serde::{Deserialize, Serialize};

/// A staff treasury credit as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreasuryCredit {
    /// `<tenant>:<reference>`.
    pub id: String,
    /// The credited tenant.
    pub tenant: TenantId,
    /// The token credited.
    pub token: Token,
    /// The amount credited.
    pub amount: Micros,
    /// The fiat receipt's reference (1 to 200 characters).
    pub reference: String,
    /// `PROPOSED` (awaiting a second staff identity) or `CREDITED`.
    pub status: String,
    /// Above the cap: who proposed it.
    pub proposed_by: Option<String>,
    /// Whose call credited it.
    pub credited_by: Option<String>,
    /// When it was first asked for.
    pub created_at: Timestamp,
    /// When it was credited.
    pub credited_at: Option<Timestamp>,
}

impl Record for TreasuryCredit {
    const KIND: &'static str = kind::TREASURY_CREDIT;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.to_string())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.status.clone())
    }
}

/// What [`Engine::credit_treasury_as_staff`] did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaffCreditView {
    /// The credited tenant (`ten_...`).
    pub tenant_id: String,
    /// `USDC` or `USDT`.
    pub token: String,
    /// The amount, 6 decimals.
    pub amount: String,
    /// The fiat receipt's reference.
    pub reference: String,
    /// `CREDITED`, or `AWAITING_SECOND_APPROVAL` above the single-approval cap.
    pub status: String,
    /// Who proposed it, above the cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposed_by: Option<String>,
    /// Whose call credited it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credited_by: Option<String>,
    /// The treasury's available balance after the call, 6 decimals.
    pub treasury_balance: String,
}

const PROPOSED: &str = "PROPOSED";
const CREDITED: &str = "CREDITED";

impl Engine {
    /// `staff` credits `amount` of `token` to `tenant`'s treasury for the fiat receipt
    /// `reference` (the CLI's `treasury credit`): under the module's two-person rule,
    /// audited in the same commit. A repeat of a credit already made (same token and
    /// amount) changes nothing and answers it again; another token or amount for the
    /// same reference is INVALID_PARAMETER (`reference`). SECOND_APPROVER_REQUIRED: the
    /// proposer approving; APPROVAL_MISMATCH: a second approver's token or amount
    /// differs from the proposal's. Refusals write nothing.
    pub async fn credit_treasury_as_staff(
        &self,
        staff: &StaffIdentity,
        tenant: &TenantId,
        token: Token,
        amount: Micros,
        reference: &str,
    ) -> CoreResult<StaffCreditView> {
        if amount.is_zero() {
            return Err(CoreError::InvalidAmount {
                input: "0".into(),
                reason: "amount must be greater than zero".into(),
            });
        }
        let reference = reference.trim();
        if reference.is_empty()
            || reference.chars().count() > 200
            || reference.chars().any(char::is_control)
        {
            return Err(CoreError::InvalidParameter {
                field: "reference",
                reason: "must be 1 to 200 characters without control characters".into(),
            });
        }
        self.tenant(tenant).await?;
        let id = format!("{tenant}:{reference}");
        let now = self.now();
        let stored = get_record::<TreasuryCredit>(&*self.ports().store, &id).await?;
        let reused = || CoreError::InvalidParameter {
            field: "reference",
            reason: "this reference was already credited with another amount or token".into(),
        };
        let (mut credit, version) = match stored {
            Some(v) if v.record.status == CREDITED => {
                if v.record.token != token || v.record.amount != amount {
                    return Err(reused());
                }
                return self.credit_view(&v.record).await;
            }
            Some(v) => {
                let p = v.record.proposed_by.clone().unwrap_or_default();
                if v.record.token != token {
                    return Err(CoreError::ApprovalMismatch { field: "token" });
                }
                if v.record.amount != amount {
                    return Err(CoreError::ApprovalMismatch { field: "amount" });
                }
                if p == staff.id() {
                    return Err(CoreError::SecondApproverRequired { proposed_by: p });
                }
                (v.record, Some(v.version))
            }
            None => (
                TreasuryCredit {
                    id: id.clone(),
                    tenant: tenant.clone(),
                    token,
                    amount,
                    reference: reference.to_string(),
                    status: PROPOSED.into(),
                    proposed_by: None,
                    credited_by: None,
                    created_at: now,
                    credited_at: None,
                },
                None,
            ),
        };
        let note = format!("{} {token}: {reference}", amount.to_decimal_string());
        let target = format!("treasury:{tenant}:{token}");
        let mut batch = Batch::default();
        if version.is_none() && amount > self.config.topup_single_approval_max {
            credit.proposed_by = Some(staff.id().to_string());
            let audit =
                self.audit_entry(staff.id(), "treasury.credit.proposed", &target, Some(&note))?;
            batch.puts.extend([credit.insert()?, audit.insert()?]);
        } else {
            credit.status = CREDITED.into();
            credit.credited_by = Some(staff.id().to_string());
            credit.credited_at = Some(now);
            let audit = self.audit_entry(staff.id(), "treasury.credit", &target, Some(&note))?;
            let from = accounts::fiat_in(token);
            let to = accounts::treasury(tenant, token);
            batch.puts.push(match version {
                Some(v) => credit.update(v)?,
                None => credit.insert()?,
            });
            batch.puts.push(audit.insert()?);
            batch.accounts = vec![from.clone(), to.clone()];
            batch.ledger = vec![LedgerTransfer {
                id: format!("credit:{tenant}:{reference}"),
                debit: from.id,
                credit: to.id,
                amount,
                phase: Phase::Single,
            }];
        }
        self.commit_raw(batch).await.map_err(|e| match e {
            StoreError::Ledger(LedgerError::TransferExists { .. }) => reused(),
            other => store_err(other),
        })?;
        self.credit_view(&credit).await
    }

    async fn credit_view(&self, c: &TreasuryCredit) -> CoreResult<StaffCreditView> {
        let balance = self.treasury_balance(&c.tenant, c.token).await?;
        Ok(StaffCreditView {
            tenant_id: c.tenant.to_string(),
            token: c.token.to_string(),
            amount: c.amount.to_decimal_string(),
            reference: c.reference.clone(),
            status: if c.status == CREDITED {
                CREDITED
            } else {
                "AWAITING_SECOND_APPROVAL"
            }
            .into(),
            proposed_by: c.proposed_by.clone(),
            credited_by: c.credited_by.clone(),
            treasury_balance: balance.to_decimal_string(),
        })
    }
}
