//! The tenant side of the two-person rule (issue #51): an approver key, issued by staff,
//! that lists the tenant's held requests and approves them.
//!
//! Why these guarantees hold:
//! - **Never the requester.** An approver key is refused by `Engine::authenticate`
//!   (KEY_OUT_OF_SCOPE), the one door of every tenant route and of the dashboard, so it
//!   cannot make a send, a withdrawal or any other request, and a request held for
//!   approval was always made by another key. Only [`Engine::authenticate_approver`]
//!   accepts it, for the approval routes alone.
//! - **Not mintable by a tenant key.** Staff issue it ([`Engine::issue_approver_key`],
//!   audited `approver_key.issue`): a single leaked tenant key cannot produce both
//!   halves of an approval. It is revoked like any key.
//! - **Live only.** It approves live money: a test-mode key (or an account in test
//!   mode) is refused, as a test key's request is never held.
//! - **Once, audited.** Approving runs the exact held request through every other check
//!   again, and marks the approval APPROVED in the operation's own commit,
//!   version-checked, with its audit entry (`policy.approve`, actor `key:<key id>`):
//!   of two approvals at once, one carries it out and the other is INVALID_STATE.

use super::Engine;
use super::policy_gate::PolicyApproval;
use super::tenants::key_actor;
use crate::domain::ids::TenantId;
use crate::error::{CoreError, CoreResult};
use crate::kernel::auth::{ApiKey, AuthContext, IssuedKey, KeyKind, KeyMode, KeyRole, sha256_hex};
use crate::ports::record::{Record, get_record_by_unique};
use crate::ports::store::Batch;

impl Engine {
    /// Staff issue `tenant` a live approver key (`svc_sk_live_...`, role approver),
    /// audited `approver_key.issue` as by `actor`. Only the returned [`IssuedKey`] holds
    /// the secret.
    pub async fn issue_approver_key(
        &self,
        actor: &str,
        tenant: &TenantId,
    ) -> CoreResult<IssuedKey> {
        self.tenant(tenant).await?;
        let mut issued = self.new_api_key(tenant, KeyKind::Tenant, KeyMode::Live, None);
        issued.key.role = KeyRole::Approver;
        let audit = self.audit_entry(
            actor,
            "approver_key.issue",
            &issued.key.id.0,
            Some(&format!("tenant {}", tenant.0)),
        )?;
        self.commit(Batch {
            puts: vec![issued.key.insert()?, audit.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(issued)
    }

    /// Establishes the caller of an approval route from a presented key: an approver
    /// key, live, not revoked, its tenant not in account test mode. Any other key is
    /// KEY_OUT_OF_SCOPE (a tenant key does not approve: that would let one key make and
    /// approve a request). Read from the store every time (approvals are rare; a
    /// revocation takes effect at once everywhere).
    pub async fn authenticate_approver(&self, secret: &str) -> CoreResult<AuthContext> {
        let Some((kind, mode)) = KeyKind::classify(secret) else {
            return Err(CoreError::InvalidApiKey);
        };
        let hash = sha256_hex(secret);
        let Some(v) =
            get_record_by_unique::<ApiKey>(&*self.ports().store, &ApiKey::hash_key(&hash)).await?
        else {
            return Err(CoreError::InvalidApiKey);
        };
        let key = v.record;
        if key.revoked_at.is_some() {
            return Err(CoreError::ApiKeyRevoked);
        }
        if key.role != KeyRole::Approver || kind != KeyKind::Tenant {
            return Err(CoreError::KeyOutOfScope {
                reason: "this route needs an approver key (issued by the service's staff); a tenant key does not approve held requests".into(),
            });
        }
        if mode != KeyMode::Live || self.tenant(&key.tenant).await?.test_mode {
            return Err(CoreError::sandbox_unsupported(
                "an approval (the account is in test mode)",
            ));
        }
        Ok(AuthContext {
            tenant: key.tenant,
            key_id: key.id,
            kind,
            mode,
            business: None,
        })
    }

    /// `GET /v1/policy-approvals`: a page of `tenant`'s held requests of `status`
    /// (`PENDING` or `APPROVED`), newest first, and their total.
    pub async fn list_policy_approvals(
        &self,
        tenant: &TenantId,
        status: &str,
        limit: usize,
        offset: usize,
    ) -> CoreResult<(Vec<PolicyApproval>, u64)> {
        self.list_tenant_records(tenant, status, limit, offset)
            .await
    }

    /// `POST /v1/policy-approvals/{id}/approve`: the tenant's approver key `by` (from
    /// [`Engine::authenticate_approver`]) approves one of its tenant's held requests
    /// (another tenant's is NOT_FOUND). It is carried out as a staff approval is
    /// ([`Engine::approve_policy_request`]), audited as by `key:<key id>`.
    pub async fn approve_policy_request_by_key(
        &self,
        by: &AuthContext,
        id: &str,
    ) -> CoreResult<PolicyApproval> {
        let v = self.policy_approval(Some(&by.tenant), id).await?;
        self.carry_out_approval(v, key_actor(&by.key_id)).await
    }
}
