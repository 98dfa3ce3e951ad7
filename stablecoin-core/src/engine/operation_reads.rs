//! Reading operations: one by id (of a kind, of a tenant) and filtered lists, each a
//! single store call on an index (no scans).

use super::Engine;
use super::operations::Operation;
use crate::domain::ids::TenantId;
use crate::domain::state::{OpKind, OpStatus, reachable_states};
use crate::error::{CoreError, CoreResult};
use crate::ports::record::{Record, get_record};
use crate::ports::store::ListQuery;

/// The statuses operations of `kind` can be listed by.
fn invalid_status_filter(kind: OpKind) -> CoreError {
    let names: Vec<&str> = reachable_states(kind).iter().map(|s| s.as_str()).collect();
    CoreError::InvalidParameter {
        field: "status",
        reason: format!("must be one of {}", names.join(", ")),
    }
}

impl Engine {
    /// The operation `id` of this tenant and of `kind` (`GET /v1/transfers/{id}`,
    /// `/v1/fundings/{id}`, ...). Anything else is NOT_FOUND naming the kind: another
    /// tenant's operation, one of another kind, an id without the kind's prefix (a
    /// sandbox simulation's `tr_sim_...` among them, which was never stored), an id over
    /// 64 characters (never looked up).
    pub async fn operation_of_kind(
        &self,
        tenant: &TenantId,
        id: &str,
        kind: OpKind,
    ) -> CoreResult<Operation> {
        let not_found = || CoreError::NotFound {
            kind: kind.as_str(),
            id: id.chars().take(64).collect(),
        };
        let well_formed = id.len() <= 64
            && id
                .strip_prefix(kind.id_prefix())
                .is_some_and(|rest| rest.starts_with('_'));
        if !well_formed {
            return Err(not_found());
        }
        match self.operation(tenant, id).await {
            Ok(op) if op.kind == kind => Ok(op),
            Ok(_) | Err(CoreError::NotFound { .. }) => Err(not_found()),
            Err(e) => Err(e),
        }
    }

    /// An operation of this tenant (another tenant's is NOT_FOUND).
    pub async fn operation(&self, tenant: &TenantId, id: &str) -> CoreResult<Operation> {
        match get_record::<Operation>(&*self.ports().store, id).await? {
            Some(v) if &v.record.tenant == tenant => Ok(v.record),
            _ => Err(CoreError::NotFound {
                kind: "operation",
                id: id.to_string(),
            }),
        }
    }

    /// A tenant's operations of one kind, newest first (creation time, then id), only
    /// those in `status` if given, and the total of the matches.
    ///
    /// One store query: the store indexes operations by kind (their record's subkind)
    /// and status, so a page costs the same on a tenant with millions of operations as
    /// on a new one, and the total is exact. A status operations of `kind` never reach
    /// is `INVALID_PARAMETER` on `status` (see [`Engine::operation_status`]).
    pub async fn list_operations(
        &self,
        tenant: &TenantId,
        kind: OpKind,
        status: Option<OpStatus>,
        limit: usize,
        offset: usize,
    ) -> CoreResult<(Vec<Operation>, u64)> {
        if let Some(status) = status
            && !reachable_states(kind).contains(&status)
        {
            return Err(invalid_status_filter(kind));
        }
        let (recs, total) = self
            .ports()
            .store
            .list(&ListQuery {
                kind: Operation::KIND.into(),
                tenant: tenant.0.clone(),
                subkind: Some(kind.as_str().to_string()),
                status: status.map(|s| s.as_str().to_string()),
                limit,
                offset,
            })
            .await
            .map_err(super::store_err)?;
        let ops = recs
            .iter()
            .map(Operation::from_stored)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((ops, total))
    }

    /// The status filter named `name` (`"SETTLED"`) for operations of `kind`: a name
    /// that is not a status those operations reach is `INVALID_PARAMETER` on `status`,
    /// naming the ones they do (for a list request's `status` parameter).
    pub fn operation_status(kind: OpKind, name: &str) -> CoreResult<OpStatus> {
        match OpStatus::parse(name) {
            Some(status) if reachable_states(kind).contains(&status) => Ok(status),
            _ => Err(invalid_status_filter(kind)),
        }
    }
}
