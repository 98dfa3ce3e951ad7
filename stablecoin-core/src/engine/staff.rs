//! Service staff accounts and the staff audit log: the wallet engine's use cases
//! (create, disable, authenticate, list, audit) over the kernel's staff types
//! (`kernel/staff.rs`, where the why of accounts, identities and the audit log is told).

use super::Engine;
use crate::error::{CoreError, CoreResult};
use crate::kernel::auth::sha256_hex;
use crate::kernel::staff::{
    IssuedStaff, MAX_NAME, STAFF_ACTOR_CLI, STAFF_ID_PREFIX, STAFF_LIST_OWNER, STAFF_SECRET_PREFIX,
    StaffAccount, StaffAuditEntry, clean,
};
use crate::ports::kinds::{kind, namespace};
use crate::ports::record::{Record, get_record, get_record_by_unique};
use crate::ports::store::{Batch, ListQuery};

impl Engine {
    /// Creates a staff account named `name` (trimmed, 1 to 100 characters, unique
    /// case-insensitively) with a fresh secret, and audits it (actor `cli`). Only the
    /// returned [`IssuedStaff`] holds the secret.
    pub async fn create_staff(&self, name: &str) -> CoreResult<IssuedStaff> {
        let name = clean("name", name, MAX_NAME, false)?;
        let mut raw = [0u8; 20];
        self.ports().entropy.fill(&mut raw);
        let body = crate::kernel::auth::base32_lower(&raw);
        let secret = format!("{STAFF_SECRET_PREFIX}{body}");
        let now = self.now();
        let account = StaffAccount {
            id: self.new_id(STAFF_ID_PREFIX),
            name,
            hash: sha256_hex(&secret),
            hint: format!("{STAFF_SECRET_PREFIX}{}...", &body[..4]),
            created_at: now,
            disabled_at: None,
        };
        let audit = self.audit_entry(
            STAFF_ACTOR_CLI,
            "staff.create",
            &account.id,
            Some(&account.name),
        )?;
        let batch = Batch {
            puts: vec![account.insert()?, audit.insert()?],
            ..Default::default()
        };
        self.commit(batch).await.map_err(|e| match e {
            CoreError::Conflict { what, .. }
                if what.starts_with(&format!("{}:", namespace::STAFF_NAME)) =>
            {
                CoreError::InvalidParameter {
                    field: "name",
                    reason: "a staff account with this name exists".into(),
                }
            }
            other => other,
        })?;
        Ok(IssuedStaff { account, secret })
    }

    /// The active account whose secret is `secret`. Unknown (or not shaped like a staff
    /// secret) is `InvalidApiKey`; disabled is `ApiKeyRevoked`. Never cached, so a
    /// disabled account is refused at once in every process.
    pub async fn authenticate_staff(&self, secret: &str) -> CoreResult<StaffAccount> {
        let secret = secret.trim();
        if !StaffAccount::is_secret_shaped(secret) {
            return Err(CoreError::InvalidApiKey);
        }
        let hash = sha256_hex(secret);
        let Some(v) = get_record_by_unique::<StaffAccount>(
            &*self.ports().store,
            &StaffAccount::secret_key(&hash),
        )
        .await?
        else {
            return Err(CoreError::InvalidApiKey);
        };
        if !v.record.is_active() {
            return Err(CoreError::ApiKeyRevoked);
        }
        Ok(v.record)
    }

    /// The account with id `id_or_name` (`stf_...`) or, failing that, that name
    /// (case-insensitive). `NOT_FOUND` when neither exists.
    pub async fn find_staff(&self, id_or_name: &str) -> CoreResult<StaffAccount> {
        let s = id_or_name.trim();
        if let Some(v) = get_record::<StaffAccount>(&*self.ports().store, s).await? {
            return Ok(v.record);
        }
        if !s.is_empty()
            && let Some(v) = get_record_by_unique::<StaffAccount>(
                &*self.ports().store,
                &StaffAccount::name_key(s),
            )
            .await?
        {
            return Ok(v.record);
        }
        Err(CoreError::NotFound {
            kind: "staff_account",
            id: s.chars().take(64).collect(),
        })
    }

    /// Disables an account for good (audited, actor `cli`); disabling twice is harmless
    /// and audited once.
    pub async fn disable_staff(&self, id: &str) -> CoreResult<StaffAccount> {
        let Some(v) = get_record::<StaffAccount>(&*self.ports().store, id.trim()).await? else {
            return Err(CoreError::NotFound {
                kind: "staff_account",
                id: id.chars().take(64).collect(),
            });
        };
        if !v.record.is_active() {
            return Ok(v.record);
        }
        let mut account = v.record;
        account.disabled_at = Some(self.now());
        let audit = self.audit_entry(STAFF_ACTOR_CLI, "staff.disable", &account.id, None)?;
        self.commit(Batch {
            puts: vec![account.update(v.version)?, audit.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(account)
    }

    /// Every staff account, active and disabled, newest first.
    pub async fn list_staff(&self) -> CoreResult<Vec<StaffAccount>> {
        let mut out = Vec::new();
        loop {
            let (rows, total) = self
                .ports()
                .store
                .list(&ListQuery {
                    kind: kind::STAFF_ACCOUNT.into(),
                    tenant: STAFF_LIST_OWNER.into(),
                    subkind: None,
                    status: None,
                    limit: 100,
                    offset: out.len(),
                })
                .await
                .map_err(super::store_err)?;
            let n = rows.len();
            for r in &rows {
                out.push(StaffAccount::from_stored(r)?);
            }
            if n == 0 || out.len() as u64 >= total {
                return Ok(out);
            }
        }
    }

    /// Appends an entry to the staff audit log on its own: `staff_id` (`stf_...`,
    /// `admin-token`, `cli`) did `action` to `target` because of `note`. For actions that
    /// change nothing else; a decision that moves money commits its entry with itself
    /// ([`StaffAuditEntry::new`]).
    pub async fn record_staff_action(
        &self,
        staff_id: &str,
        action: &str,
        target: &str,
        note: Option<&str>,
    ) -> CoreResult<StaffAuditEntry> {
        let entry = self.audit_entry(staff_id, action, target, note)?;
        self.commit(Batch {
            puts: vec![entry.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(entry)
    }

    /// A page of the audit log, newest first, and the total: `limit` 1 to 100, `page`
    /// from 1.
    pub async fn staff_audit(
        &self,
        limit: u32,
        page: u32,
    ) -> CoreResult<(Vec<StaffAuditEntry>, u64)> {
        if !(1..=100).contains(&limit) {
            return Err(CoreError::InvalidParameter {
                field: "limit",
                reason: "must be between 1 and 100".into(),
            });
        }
        if page == 0 {
            return Err(CoreError::InvalidParameter {
                field: "page",
                reason: "pages start at 1".into(),
            });
        }
        let (rows, total) = self
            .ports()
            .store
            .list(&ListQuery {
                kind: kind::STAFF_AUDIT.into(),
                tenant: STAFF_LIST_OWNER.into(),
                subkind: None,
                status: None,
                limit: limit as usize,
                offset: (page as usize - 1).saturating_mul(limit as usize),
            })
            .await
            .map_err(super::store_err)?;
        let entries = rows
            .iter()
            .map(StaffAuditEntry::from_stored)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((entries, total))
    }

    pub(crate) fn audit_entry(
        &self,
        staff_id: &str,
        action: &str,
        target: &str,
        note: Option<&str>,
    ) -> CoreResult<StaffAuditEntry> {
        StaffAuditEntry::new(staff_id, action, target, note, self.now(), self.random10())
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;

    use crate::engine::test_engine::engine;

    #[tokio::test]
    async fn staff_accounts_authenticate_until_disabled() {
        let (e, _) = engine();
        let issued = e.create_staff("  Ada Ops ").await.unwrap();
        assert!(StaffAccount::is_secret_shaped(&issued.secret));
        assert!(issued.account.id.starts_with("stf_"));
        assert_eq!(issued.account.name, "Ada Ops");
        assert!(!format!("{issued:?}").contains(&issued.secret));
        assert_ne!(issued.account.hash, issued.secret);
        let a = e.authenticate_staff(&issued.secret).await.unwrap();
        assert_eq!(a.id, issued.account.id);
        // Unknown and malformed secrets.
        let other = format!("{STAFF_SECRET_PREFIX}{}", "a".repeat(32));
        assert_eq!(
            e.authenticate_staff(&other).await,
            Err(CoreError::InvalidApiKey)
        );
        assert_eq!(
            e.authenticate_staff("admin").await,
            Err(CoreError::InvalidApiKey)
        );
        // Found by id and by name.
        assert_eq!(e.find_staff(&a.id).await.unwrap().id, a.id);
        assert_eq!(e.find_staff("ada ops").await.unwrap().id, a.id);
        assert_eq!(
            e.find_staff("nobody").await.unwrap_err().code(),
            "NOT_FOUND"
        );
        // Disabled: refused for good; disabling twice is harmless.
        let d = e.disable_staff(&a.id).await.unwrap();
        assert!(d.disabled_at.is_some());
        assert_eq!(
            e.authenticate_staff(&issued.secret).await,
            Err(CoreError::ApiKeyRevoked)
        );
        e.disable_staff(&a.id).await.unwrap();
        assert_eq!(
            e.disable_staff("stf_nope").await.unwrap_err().code(),
            "NOT_FOUND"
        );
    }

    #[tokio::test]
    async fn names_are_unique_and_validated() {
        let (e, _) = engine();
        e.create_staff("Bo").await.unwrap();
        let dup = e.create_staff("BO").await.unwrap_err();
        assert_eq!(
            (dup.code(), dup.param()),
            ("INVALID_PARAMETER", Some("name"))
        );
        for bad in ["", "   ", "a\tb", &"x".repeat(101)] {
            assert_eq!(
                e.create_staff(bad).await.unwrap_err().code(),
                "INVALID_PARAMETER"
            );
        }
        let list = e.list_staff().await.unwrap();
        assert_eq!(list.len(), 1);
    }

    #[tokio::test]
    async fn the_audit_log_lists_every_action_newest_first() {
        let (e, clock) = engine();
        let a = e.create_staff("Ada").await.unwrap().account;
        clock.advance_ms(1000);
        e.record_staff_action(&a.id, "escrow.resolve", "esc_1", Some("photos show damage"))
            .await
            .unwrap();
        clock.advance_ms(1000);
        e.disable_staff(&a.id).await.unwrap();
        let (entries, total) = e.staff_audit(20, 1).await.unwrap();
        assert_eq!(total, 3);
        let got: Vec<_> = entries
            .iter()
            .map(|x| (x.staff_id.as_str(), x.action.as_str(), x.target.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("cli", "staff.disable", a.id.as_str()),
                (a.id.as_str(), "escrow.resolve", "esc_1"),
                ("cli", "staff.create", a.id.as_str()),
            ]
        );
        assert_eq!(entries[1].note.as_deref(), Some("photos show damage"));
        let (page2, _) = e.staff_audit(2, 2).await.unwrap();
        assert_eq!(page2.len(), 1);
        assert_eq!(
            e.staff_audit(0, 1).await.unwrap_err().code(),
            "INVALID_PARAMETER"
        );
        assert_eq!(
            e.staff_audit(1, 0).await.unwrap_err().code(),
            "INVALID_PARAMETER"
        );
        let bad = e.record_staff_action("", "x", "y", None).await.unwrap_err();
        assert_eq!(bad.param(), Some("staff_id"));
    }
}
