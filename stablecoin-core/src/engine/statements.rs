//! Statements (issue #52 item 2): the tenant's treasury per token, or one of its customer
//! wallets (members only), over a period. The arithmetic is the domain's
//! ([`crate::domain::statement`]); this reads the ledger once and checks who may see
//! what. Other products state their own accounts through [`Engine::account_statement`]
//! after their own access check (the checkout's business funds).

use super::Engine;
use crate::domain::ids::TenantId;
use crate::domain::money::Token;
use crate::domain::phone::Phone;
use crate::domain::statement::{self, Statement, StatementRefusal};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::kernel::accounts;
use crate::ports::ledger::{AccountEntries, Balance, LedgerError};

impl Engine {
    /// The tenant's treasury in `token` over `[from, to)`.
    pub async fn treasury_statement(
        &self,
        tenant: &TenantId,
        token: Token,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> CoreResult<Statement> {
        self.account_statement(&accounts::treasury(tenant, token).id, from, to)
            .await
    }

    /// A customer wallet's `token` balance on the primary chain over `[from, to)`,
    /// for a tenant that is a member of the wallet (`NOT_A_MEMBER` otherwise, as every
    /// wallet read).
    pub async fn wallet_statement(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        token: Token,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> CoreResult<Statement> {
        let w = self.require_wallet(phone).await?.record;
        w.require_member(tenant)?;
        let rail = self.evm_rail()?.id();
        let account = self.wallet_account(&w.id, rail, token);
        self.account_statement(&account.id, from, to).await
    }

    /// The statement of one ledger account over `[from, to)`. Callers check access
    /// first: this names an account, not a caller.
    pub async fn account_statement(
        &self,
        account: &str,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> CoreResult<Statement> {
        let read = match self.ports().ledger.entries_since(account, from).await {
            Ok(read) => read,
            // No posting ever: an empty account, stated as such.
            Err(LedgerError::UnknownAccount { .. }) => AccountEntries {
                balance: Balance::default(),
                entries: Vec::new(),
                timed: true,
            },
            Err(e) => return Err(CoreError::Storage(e.to_string())),
        };
        statement::build(account, &read, from, to).map_err(|r| match r {
            StatementRefusal::EmptyPeriod => CoreError::InvalidParameter {
                field: "to",
                reason: "the period must end after it starts".into(),
            },
            StatementRefusal::PeriodNeedsLedgerTimes => CoreError::InvalidParameter {
                field: "from",
                reason: "this deployment's ledger does not record posting times yet: only \
                         the whole history (no from, no to) can be stated"
                    .into(),
            },
            StatementRefusal::TooManyEntries => CoreError::InvalidParameter {
                field: "from",
                reason: format!(
                    "more than {} postings in the period: ask for shorter periods (they chain)",
                    statement::MAX_STATEMENT_ENTRIES
                ),
            },
            StatementRefusal::Unbalanced => {
                CoreError::Storage(format!("statement of {account} does not balance"))
            }
        })
    }
}
