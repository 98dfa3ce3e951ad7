//! Endpoint registration and management: register (URL and subscription checks, a fresh
//! secret), rotate the secret, disable, enable, read and list. Every read is tenant-scoped:
//! another tenant's endpoint is `NOT_FOUND`.

use super::{Deliverer, Endpoint, family_of, not_found, store_err};
use crate::error::{WebhookError, WebhookResult};
use crate::signature::Family;
use stablecoin_core::domain::ids::{TenantId, WebhookEndpointId};
use stablecoin_core::ports::ListQuery;
use stablecoin_core::ports::record::{Record, get_record};

impl Deliverer {
    fn check_url(&self, url: &str) -> WebhookResult<()> {
        let bad = |reason: &str| {
            Err(WebhookError::InvalidUrl {
                url: url.chars().take(200).collect(),
                reason: reason.into(),
            })
        };
        if url.len() > 2048 {
            return bad("longer than 2048 bytes");
        }
        let parsed = match reqwest::Url::parse(url) {
            Ok(u) => u,
            Err(_) => return bad("not an absolute URL"),
        };
        let loopback = matches!(
            parsed.host_str(),
            Some("127.0.0.1") | Some("localhost") | Some("[::1]")
        );
        match parsed.scheme() {
            "https" => Ok(()),
            "http" if loopback && self.config.allow_loopback_http => Ok(()),
            _ => bad("https is required"),
        }
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
        self.check_url(url)?;
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
        let mut events = events.to_vec();
        events.sort();
        events.dedup();
        let now = self.clock.now();
        let endpoint = Endpoint {
            id: WebhookEndpointId::generate(now.millis(), self.random10()),
            tenant: tenant.clone(),
            family,
            url: url.to_string(),
            events,
            secret: family.generate_secret(&*self.entropy),
            enabled: true,
            disabled_reason: None,
            failing_since: None,
            created_at: now,
        };
        self.put(endpoint.insert()?).await?;
        Ok(endpoint)
    }

    /// Replaces an endpoint's secret; the previous one stops verifying at once. The
    /// returned record holds the new secret, shown once.
    pub async fn rotate_secret(&self, tenant: &TenantId, id: &str) -> WebhookResult<Endpoint> {
        let (mut e, version) = self.endpoint_versioned(tenant, id).await?;
        e.secret = e.family.generate_secret(&*self.entropy);
        self.put(e.update(version)?).await?;
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
        self.put(e.update(version)?).await?;
        Ok(e)
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
        self.put(e.update(version)?).await?;
        Ok(e)
    }
}
