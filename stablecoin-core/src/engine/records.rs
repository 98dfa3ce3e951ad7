//! How the store keeps the domain's records: the [`Record`] impls of the domain's types
//! and the unique keys they claim.
//!
//! They live here, not beside the types, because `Record` and the kinds and key
//! namespaces (`ports::kinds`) are the store's vocabulary, and the domain names no port
//! (KERNEL.md §3.1). The types stay in `domain/`; an impl may sit anywhere in the crate.

use crate::domain::chain::ChainAddress;
use crate::domain::consent::{Challenge, Wallet};
use crate::domain::fx::Quote;
use crate::domain::ids::{TenantId, WalletId};
use crate::domain::limits::TenantQuota;
use crate::domain::otp::{GuardScope, OtpGuard};
use crate::domain::phone::Phone;
use crate::domain::time::Timestamp;
use crate::domain::topup::TopUp;
use crate::ports::kinds;
use crate::ports::record::Record;

impl Wallet {
    /// The unique key that finds a wallet by phone (one wallet per phone).
    pub fn phone_key(phone: &Phone) -> String {
        kinds::key(kinds::namespace::WALLET_PHONE, phone)
    }
    /// The unique key that reserves the wallet's address on `rail` in the one address
    /// namespace of every product (the kernel's inbound router finds the wallet by it).
    pub fn address_key(rail: &str, address: &ChainAddress) -> String {
        crate::kernel::inbound::address_key(rail, &address.0)
    }
}

impl Record for Wallet {
    const KIND: &'static str = kinds::kind::WALLET;
    fn id(&self) -> String {
        self.id.0.clone()
    }
    /// Every wallet sits in one list, [`Wallet::LIST_OWNER`]'s: a wallet belongs to no
    /// one tenant, and the chain reconciliation walks them all.
    fn tenant(&self) -> Option<String> {
        Some(Wallet::LIST_OWNER.to_string())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn unique_keys(&self) -> Vec<String> {
        let mut keys = vec![Wallet::phone_key(&self.phone)];
        keys.extend(
            self.addresses
                .iter()
                .map(|(r, a)| Wallet::address_key(r, a)),
        );
        keys
    }
}

impl Challenge {
    /// The key that finds the open challenge of (kind, tenant, wallet).
    pub fn open_key(kind: &str, tenant: &TenantId, wallet: &WalletId) -> String {
        kinds::key(
            kinds::namespace::OTP_OPEN,
            format_args!("{kind}:{tenant}:{wallet}"),
        )
    }
}

impl Record for Challenge {
    const KIND: &'static str = kinds::kind::CHALLENGE;
    fn id(&self) -> String {
        self.id.0.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn unique_keys(&self) -> Vec<String> {
        if self.is_open() {
            vec![Challenge::open_key(
                self.purpose.kind(),
                &self.tenant,
                &self.wallet,
            )]
        } else {
            vec![]
        }
    }
}

impl Record for Quote {
    const KIND: &'static str = kinds::kind::QUOTE;
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.to_string())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

impl Record for TenantQuota {
    const KIND: &'static str = kinds::kind::TENANT_QUOTA;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

impl Record for OtpGuard {
    const KIND: &'static str = kinds::kind::OTP_GUARD;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        match &self.scope {
            GuardScope::Subject { tenant, .. } | GuardScope::Tenant { tenant } => {
                Some(tenant.0.clone())
            }
            GuardScope::Phone { .. } => None,
        }
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

impl Record for TopUp {
    const KIND: &'static str = kinds::kind::TOPUP;
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
        Some(self.status.as_str().to_string())
    }
    /// A fiat receipt funds one top-up: its reference is claimed by the first
    /// confirmation (a proposal included).
    fn unique_keys(&self) -> Vec<String> {
        self.fiat_reference
            .iter()
            .map(|r| kinds::key(kinds::namespace::TOPUP_REFERENCE, r))
            .collect()
    }
}

impl super::Engine {
    /// A page of `tenant`'s records of type `R` in `status` (in the store's list order,
    /// newest first) and their total: the typed list read that the tenant-scoped lists
    /// (policies, the address book, held approvals) share.
    pub(crate) async fn list_tenant_records<R: Record>(
        &self,
        tenant: &TenantId,
        status: &str,
        limit: usize,
        offset: usize,
    ) -> crate::error::CoreResult<(Vec<R>, u64)> {
        let (rows, total) = self
            .ports()
            .store
            .list(&crate::ports::store::ListQuery {
                kind: R::KIND.into(),
                tenant: tenant.0.clone(),
                subkind: None,
                status: Some(status.into()),
                limit,
                offset,
            })
            .await
            .map_err(super::store_err)?;
        let out = rows
            .iter()
            .map(R::from_stored)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((out, total))
    }
}
