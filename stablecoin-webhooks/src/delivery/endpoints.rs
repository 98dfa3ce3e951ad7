//! Endpoint registration and management: register (subscription and SSRF checks, a fresh
//! secret), rotate the secret, disable, enable, read and list. Every read is tenant-scoped:
//! another tenant's endpoint is `NOT_FOUND`.
//!
//! Secrets at rest: every endpoint write goes through `put_endpoint`, which seals the
//! secret under [`DeliveryConfig::secret_key`](super::DeliveryConfig::secret_key); the
//! attempt opens it only to sign. Records read back hold it sealed.

use super::{Deliverer, Endpoint, family_of, not_found, store_err};
use crate::error::{WebhookError, WebhookResult};
use crate::secret_box::SecretKey;
use crate::signature::Family;
use crate::ssrf::{self, SsrfError};
use stablecoin_core::domain::ids::{TenantId, WebhookEndpointId};
use stablecoin_core::ports::ListQuery;
use stablecoin_core::ports::record::{Record, get_record};

/// What a tenant registers: see [`Deliverer::register_endpoint`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEndpoint {
    /// Which family's payloads, headers and secret it gets.
    pub family: Family,
    /// Where deliveries go: `https://` to a public address (see [`crate::ssrf`]).
    pub url: String,
    /// Event types of `family` to subscribe to (1 to 64).
    pub events: Vec<String>,
    /// Also send Standard Webhooks headers ([`crate::standard`]).
    pub standard_webhooks: bool,
}

impl Deliverer {
    /// Checks a URL as a webhook target: at registration, and before every attempt
    /// (`attempt`). The reason is the same whether the host does not resolve or
    /// resolves to an internal address, so registration tells a tenant nothing about
    /// the service's internal network.
    pub(super) async fn check_target(&self, url: &str) -> WebhookResult<()> {
        let reason = if url.len() > 2048 {
            "longer than 2048 bytes"
        } else {
            match ssrf::check_url(&*self.resolver, &self.config.allow_networks, url).await {
                Ok(()) => return Ok(()),
                Err(SsrfError::NotAUrl) => "not an absolute URL",
                Err(SsrfError::NoHost) => "the URL has no host",
                Err(SsrfError::HttpsRequired) => "https is required",
                Err(SsrfError::Unresolvable | SsrfError::NotPublic) => {
                    "the host does not resolve to a public internet address"
                }
            }
        };
        Err(WebhookError::InvalidUrl {
            url: url.chars().take(200).collect(),
            reason: reason.into(),
        })
    }

    /// Writes an endpoint, its secret sealed when a key is configured (a record
    /// written before secrets were sealed is sealed here, at its next write). Returns
    /// the record as stored.
    pub(super) async fn put_endpoint(
        &self,
        e: &Endpoint,
        version: Option<u64>,
    ) -> WebhookResult<Endpoint> {
        let mut stored = e.clone();
        if let Some(key) = &self.config.secret_key
            && !SecretKey::is_sealed(&stored.secret)
        {
            let mut nonce = [0u8; 12];
            self.entropy.fill(&mut nonce);
            stored.secret = key.seal(&e.secret, e.id.as_str(), nonce);
        }
        let put = match version {
            None => stored.insert()?,
            Some(v) => stored.update(v)?,
        };
        self.put(put).await?;
        Ok(stored)
    }

    /// An endpoint's signing secret in the clear, opened only to sign. A record written
    /// before secrets were sealed holds it plain. `None` when it is sealed under another
    /// key (or no key is configured).
    pub(super) fn signing_secret(&self, e: &Endpoint) -> Option<String> {
        if !SecretKey::is_sealed(&e.secret) {
            return Some(e.secret.clone());
        }
        self.config
            .secret_key
            .as_ref()?
            .open(&e.secret, e.id.as_str())
    }

    /// Registers a wallet-service endpoint; the returned record holds the secret, shown
    /// once.
    pub async fn register(
        &self,
        tenant: &TenantId,
        url: &str,
        events: &[String],
    ) -> WebhookResult<Endpoint> {
        self.register_for(Family::Wallet, tenant, url, events).await
    }

    /// Registers an endpoint of `family` subscribed to `events` (names of that family);
    /// the returned record holds the secret (`whsec_...` for payments), shown once.
    pub async fn register_for(
        &self,
        family: Family,
        tenant: &TenantId,
        url: &str,
        events: &[String],
    ) -> WebhookResult<Endpoint> {
        let new = NewEndpoint {
            family,
            url: url.to_string(),
            events: events.to_vec(),
            standard_webhooks: false,
        };
        self.register_endpoint(tenant, &new).await
    }

    /// Registers an endpoint; the returned record holds the secret in the clear, shown
    /// once (the stored record holds it sealed). The subscription is checked first,
    /// then the URL against the SSRF rules (which resolves its host).
    pub async fn register_endpoint(
        &self,
        tenant: &TenantId,
        new: &NewEndpoint,
    ) -> WebhookResult<Endpoint> {
        let (family, events) = (new.family, &new.events);
        if events.is_empty() {
            return Err(WebhookError::InvalidParameter {
                field: "events",
                reason: "subscribe to at least one event type".into(),
            });
        }
        if events.len() > 64 {
            return Err(WebhookError::InvalidParameter {
                field: "events",
                reason: "at most 64 event types".into(),
            });
        }
        for e in events {
            if family_of(e) != Some(family) {
                return Err(WebhookError::UnknownEventType {
                    event_type: e.chars().take(100).collect(),
                    family: match family {
                        Family::Wallet => "wallet-service",
                        Family::Payments => "payments",
                    },
                });
            }
        }
        self.check_target(&new.url).await?;
        let mut events = events.to_vec();
        events.sort();
        events.dedup();
        let now = self.clock.now();
        let endpoint = Endpoint {
            id: WebhookEndpointId::generate(now.millis(), self.random10()),
            tenant: tenant.clone(),
            family,
            url: new.url.clone(),
            events,
            secret: family.generate_secret(&*self.entropy),
            standard_webhooks: new.standard_webhooks,
            enabled: true,
            disabled_reason: None,
            failing_since: None,
            created_at: now,
        };
        self.put_endpoint(&endpoint, None).await?;
        Ok(endpoint)
    }

    /// Replaces an endpoint's secret; the previous one stops verifying at once. The
    /// returned record holds the new secret in the clear, shown once.
    pub async fn rotate_secret(&self, tenant: &TenantId, id: &str) -> WebhookResult<Endpoint> {
        let (mut e, version) = self.endpoint_versioned(tenant, id).await?;
        e.secret = e.family.generate_secret(&*self.entropy);
        self.put_endpoint(&e, Some(version)).await?;
        Ok(e)
    }

    async fn all_endpoints(
        &self,
        tenant: &str,
        status: Option<&str>,
    ) -> WebhookResult<Vec<Endpoint>> {
        let (records, _) = self
            .store
            .list(&ListQuery {
                kind: Endpoint::KIND.into(),
                subkind: None,
                tenant: tenant.to_string(),
                status: status.map(str::to_string),
                limit: 1000,
                offset: 0,
            })
            .await
            .map_err(store_err)?;
        records
            .iter()
            .map(|r| Endpoint::from_stored(r).map_err(WebhookError::from))
            .collect()
    }

    pub(super) async fn enabled_endpoints(&self, tenant: &str) -> WebhookResult<Vec<Endpoint>> {
        self.all_endpoints(tenant, Some("enabled")).await
    }

    /// The tenant's endpoints, newest first, and their total.
    pub async fn list_endpoints(
        &self,
        tenant: &TenantId,
        limit: usize,
        offset: usize,
    ) -> WebhookResult<(Vec<Endpoint>, u64)> {
        let page = self.list::<Endpoint>(tenant, None, limit, offset).await?;
        Ok((page.items, page.total))
    }

    /// One endpoint of the tenant; another tenant's is not found.
    pub async fn endpoint(&self, tenant: &TenantId, id: &str) -> WebhookResult<Endpoint> {
        Ok(self.endpoint_versioned(tenant, id).await?.0)
    }

    async fn endpoint_versioned(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> WebhookResult<(Endpoint, u64)> {
        get_record::<Endpoint>(&*self.store, id)
            .await?
            .filter(|v| &v.record.tenant == tenant)
            .map(|v| (v.record, v.version))
            .ok_or_else(|| not_found("webhook endpoint", id))
    }

    /// Disables an endpoint: it receives nothing more, and its pending deliveries end
    /// DEAD at their next attempt. Disabling twice is harmless.
    pub async fn disable(&self, tenant: &TenantId, id: &str) -> WebhookResult<Endpoint> {
        let (mut e, version) = self.endpoint_versioned(tenant, id).await?;
        if !e.enabled {
            return Ok(e);
        }
        e.enabled = false;
        e.disabled_reason = Some("disabled by the tenant".into());
        self.put_endpoint(&e, Some(version)).await
    }

    /// Enables an endpoint again (after a manual or automatic disable); its failure run
    /// starts afresh. Events missed meanwhile are recovered with the replays.
    pub async fn enable(&self, tenant: &TenantId, id: &str) -> WebhookResult<Endpoint> {
        let (mut e, version) = self.endpoint_versioned(tenant, id).await?;
        if e.enabled {
            return Ok(e);
        }
        e.enabled = true;
        e.disabled_reason = None;
        e.failing_since = None;
        self.put_endpoint(&e, Some(version)).await
    }
}
