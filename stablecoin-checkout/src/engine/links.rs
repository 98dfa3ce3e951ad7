//! Payment links: create, read, list, deactivate (a business key), and the payer's
//! open of a session from a link (no key: the link's id is the capability, as a
//! session's id is for its page).
//!
//! A link's counts are read from its index of sessions ([`LinkSession`], listed per
//! link) and each session's status: a payment is a session that reached `paid`, by
//! whatever deposits, so the count needs no hook in the deposit path.

use super::{CheckoutEngine, MAX_RETRIES, Scope};
use crate::error::{CheckoutError, CheckoutResult, store_err};
use crate::links::{
    CreatePaymentLinkRequest, LinkSession, PaymentLink, PaymentLinkList, PaymentLinkView,
    decode_cursor, encode_cursor, is_link_id,
};
use crate::model::Session;
use crate::state::SessionStatus;
use crate::views::{CreateSessionRequest, SessionView};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::kernel::AuthContext;
use stablecoin_core::kernel::idempotency::KeyedRequest;
use stablecoin_core::ports::{Batch, ListPosition, ListQuery, Record, Versioned, get_record};

/// Largest page of the link list.
pub const MAX_LINKS_PAGE: u32 = 100;
/// Sessions read per page when a link counts its sessions.
const COUNT_PAGE: usize = 200;

fn bad(field: &'static str, reason: &str) -> CheckoutError {
    CheckoutError::InvalidParameter {
        field,
        reason: reason.into(),
    }
}

fn parse_amount(field: &'static str, v: &str) -> CheckoutResult<Micros> {
    Micros::parse_positive(v.trim()).map_err(|e| CheckoutError::InvalidParameter {
        field,
        reason: e.to_string(),
    })
}

/// A link's sessions by what they became.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    sessions: u64,
    paid: u64,
    open: u64,
}

impl PaymentLink {
    /// Why the link opens no session at `now` given its counts, or `None`.
    fn refusal(&self, now: Timestamp, counts: Counts) -> Option<CheckoutError> {
        if !self.active {
            return Some(CheckoutError::PaymentLinkInactive);
        }
        if self.expires_at.is_some_and(|at| now >= at) {
            return Some(CheckoutError::PaymentLinkExpired);
        }
        if let Some(max) = self.max_payments
            && counts.paid + counts.open >= u64::from(max)
        {
            return Some(CheckoutError::PaymentLinkLimitReached { max_payments: max });
        }
        None
    }

    fn view(&self, now: Timestamp, counts: Counts) -> PaymentLinkView {
        let status = match self.refusal(now, counts) {
            None => "active",
            Some(CheckoutError::PaymentLinkInactive) => "inactive",
            Some(CheckoutError::PaymentLinkExpired) => "expired",
            Some(_) => "completed",
        };
        let dec = |m: Option<Micros>| m.map(|m| m.to_decimal_string());
        PaymentLinkView {
            link_id: self.id.clone(),
            business_id: self.business.clone(),
            mode: self.mode.as_str().into(),
            status: status.into(),
            amount: dec(self.amount),
            min_amount: dec(self.min_amount),
            max_amount: dec(self.max_amount),
            currency: self.currency.clone(),
            description: self.description.clone(),
            expires_at: self.expires_at.map(Timestamp::to_rfc3339),
            max_payments: self.max_payments,
            url: format!("/pay/l/{}", self.id),
            sessions_count: counts.sessions,
            payments_count: counts.paid,
            open_sessions_count: counts.open,
            created_at: self.created_at.to_rfc3339(),
            updated_at: self.updated_at.to_rfc3339(),
            deactivated_at: self.deactivated_at.map(Timestamp::to_rfc3339),
        }
    }
}

impl CheckoutEngine {
    /// `POST /api/v1/payment-links`. The same `Idempotency-Key` with the same request
    /// answers the first link.
    pub async fn create_payment_link(
        &self,
        auth: &AuthContext,
        req: &CreatePaymentLinkRequest,
        idempotency_key: Option<&str>,
    ) -> CheckoutResult<PaymentLinkView> {
        let scope = Self::scope(auth)?;
        let namespace = format!("checkout:{}:{}:", scope.business, scope.mode.as_str());
        let at = KeyedRequest {
            tenant: &scope.tenant.0,
            key: idempotency_key,
            namespace: &namespace,
            operation: "checkout.link.create",
        };
        self.kernel
            .idempotent(at, req, || async {
                let link = self.new_link(&scope, req)?;
                let view = link.view(self.now(), Counts::default());
                let batch = Batch {
                    puts: vec![link.insert()?],
                    ..Default::default()
                };
                Ok::<_, CheckoutError>((batch, view))
            })
            .await
    }

    fn new_link(
        &self,
        scope: &Scope,
        req: &CreatePaymentLinkRequest,
    ) -> CheckoutResult<PaymentLink> {
        let max = self.config.max_amount;
        let within = |field: &'static str, m: Micros| {
            if m > max {
                Err(bad(field, &format!("at most {}", max.to_decimal_string())))
            } else {
                Ok(m)
            }
        };
        let opt = |field: &'static str, v: &Option<String>| -> CheckoutResult<Option<Micros>> {
            v.as_deref()
                .map(|v| parse_amount(field, v).and_then(|m| within(field, m)))
                .transpose()
        };
        let amount = opt("amount", &req.amount)?;
        let min_amount = opt("min_amount", &req.min_amount)?;
        let max_amount = opt("max_amount", &req.max_amount)?;
        if amount.is_some() && (min_amount.is_some() || max_amount.is_some()) {
            return Err(bad(
                "amount",
                "either a fixed amount or min_amount/max_amount, not both",
            ));
        }
        if let (Some(lo), Some(hi)) = (min_amount, max_amount)
            && lo > hi
        {
            return Err(bad("min_amount", "must not exceed max_amount"));
        }
        let currency = req.currency.trim().to_string();
        if !matches!(currency.as_str(), "USD" | "USDC" | "USDT") {
            return Err(CheckoutError::UnknownToken {
                token: currency.chars().take(16).collect(),
            });
        }
        let description = req.description.as_deref().unwrap_or("").trim().to_string();
        if description.chars().count() > 500 || description.chars().any(char::is_control) {
            return Err(bad(
                "description",
                "at most 500 characters, no control characters",
            ));
        }
        let now = self.now();
        let expires_at = match req.expires_at.as_deref() {
            None => None,
            Some(s) => {
                let at = Timestamp::parse_rfc3339(s.trim())
                    .ok_or_else(|| bad("expires_at", "an RFC 3339 instant"))?;
                if at <= now {
                    return Err(bad("expires_at", "must be in the future"));
                }
                Some(at)
            }
        };
        if let Some(n) = req.max_payments
            && !(1..=1_000_000).contains(&n)
        {
            return Err(bad("max_payments", "between 1 and 1000000"));
        }
        Ok(PaymentLink {
            id: self.new_id("plink"),
            tenant: scope.tenant.clone(),
            business: scope.business.clone(),
            mode: scope.mode,
            amount,
            min_amount,
            max_amount,
            currency,
            description,
            expires_at,
            max_payments: req.max_payments,
            active: true,
            deactivated_at: None,
            sessions_opened: 0,
            created_at: now,
            updated_at: now,
        })
    }

    async fn load_link(&self, id: &str) -> CheckoutResult<Option<Versioned<PaymentLink>>> {
        if !is_link_id(id) {
            return Ok(None);
        }
        Ok(get_record::<PaymentLink>(&*self.kernel.ports().store, id).await?)
    }

    /// The link, only for the business and mode that own it (`NOT_FOUND` otherwise).
    async fn load_link_scoped(
        &self,
        scope: &Scope,
        id: &str,
    ) -> CheckoutResult<Versioned<PaymentLink>> {
        match self.load_link(id).await? {
            Some(v)
                if v.record.tenant == scope.tenant
                    && v.record.business == scope.business
                    && v.record.mode == scope.mode =>
            {
                Ok(v)
            }
            _ => Err(CheckoutError::NotFound {
                kind: "payment link",
                id: id.chars().take(64).collect(),
            }),
        }
    }

    /// Walks the link's session index and reads each session's status.
    async fn counts(&self, link: &PaymentLink) -> CheckoutResult<Counts> {
        let mut counts = Counts::default();
        let mut offset = 0;
        loop {
            let (rows, _) = self
                .kernel
                .ports()
                .store
                .list(&ListQuery {
                    kind: LinkSession::KIND.into(),
                    tenant: link.tenant.0.clone(),
                    subkind: Some(link.id.clone()),
                    status: None,
                    limit: COUNT_PAGE,
                    offset,
                })
                .await
                .map_err(store_err)?;
            for r in &rows {
                counts.sessions += 1;
                match self.load(&r.id).await?.map(|v| v.record.status) {
                    Some(SessionStatus::Paid) => counts.paid += 1,
                    Some(SessionStatus::Pending) => counts.open += 1,
                    _ => {}
                }
            }
            if rows.len() < COUNT_PAGE {
                return Ok(counts);
            }
            offset += rows.len();
        }
    }

    /// `GET /api/v1/payment-links/{link_id}`.
    pub async fn get_payment_link(
        &self,
        auth: &AuthContext,
        id: &str,
    ) -> CheckoutResult<PaymentLinkView> {
        let scope = Self::scope(auth)?;
        let v = self.load_link_scoped(&scope, id).await?;
        let counts = self.counts(&v.record).await?;
        Ok(v.record.view(self.now(), counts))
    }

    /// `GET /api/v1/payment-links`: the business's links of the key's mode, newest
    /// first; `limit` 1-100 (default 20); `starting_after` the `next_cursor` of the
    /// previous page.
    pub async fn list_payment_links(
        &self,
        auth: &AuthContext,
        limit: Option<u32>,
        starting_after: Option<&str>,
    ) -> CheckoutResult<PaymentLinkList> {
        let scope = Self::scope(auth)?;
        let limit = limit.unwrap_or(20);
        if !(1..=MAX_LINKS_PAGE).contains(&limit) {
            return Err(bad("limit", "between 1 and 100"));
        }
        let after: Option<ListPosition> = match starting_after {
            None => None,
            Some(c) => Some(decode_cursor(c.trim()).ok_or_else(|| {
                bad(
                    "starting_after",
                    "not a cursor this API returned (use next_cursor of a page)",
                )
            })?),
        };
        let mut rows = self
            .kernel
            .ports()
            .store
            .list_before(
                &ListQuery {
                    kind: PaymentLink::KIND.into(),
                    tenant: scope.tenant.0.clone(),
                    subkind: Some(Session::scope(&scope.business, scope.mode)),
                    status: None,
                    limit: limit as usize + 1,
                    offset: 0,
                },
                after.as_ref(),
            )
            .await
            .map_err(store_err)?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_cursor = more
            .then(|| rows.last().map(|r| encode_cursor(&ListPosition::of(r))))
            .flatten();
        let now = self.now();
        let mut payment_links = Vec::with_capacity(rows.len());
        for r in &rows {
            let link = PaymentLink::from_stored(r)?;
            let counts = self.counts(&link).await?;
            payment_links.push(link.view(now, counts));
        }
        Ok(PaymentLinkList {
            payment_links,
            next_cursor,
        })
    }

    /// `POST /api/v1/payment-links/{link_id}/deactivate`: the link opens no more
    /// sessions (for good); sessions it opened are untouched. Deactivating an inactive
    /// link answers it unchanged, so a retry is safe.
    pub async fn deactivate_payment_link(
        &self,
        auth: &AuthContext,
        id: &str,
    ) -> CheckoutResult<PaymentLinkView> {
        let scope = Self::scope(auth)?;
        for _ in 0..MAX_RETRIES {
            let Versioned {
                record: mut link,
                version,
            } = self.load_link_scoped(&scope, id).await?;
            if link.active {
                let now = self.now();
                link.active = false;
                link.deactivated_at = Some(now);
                link.updated_at = now;
                let batch = Batch {
                    puts: vec![link.update(version)?],
                    ..Default::default()
                };
                match self.commit(batch).await {
                    Ok(()) => {}
                    Err(CheckoutError::Conflict { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
            let counts = self.counts(&link).await?;
            return Ok(link.view(self.now(), counts));
        }
        Err(CheckoutError::Conflict {
            what: format!("payment link {id}"),
        })
    }

    /// The payer's read of a link by its id (the link's page): the link as its API
    /// view, and its business's display name; `None` for an unknown id.
    pub async fn public_payment_link(
        &self,
        id: &str,
    ) -> CheckoutResult<Option<(PaymentLinkView, String)>> {
        let Some(v) = self.load_link(id).await? else {
            return Ok(None);
        };
        let counts = self.counts(&v.record).await?;
        let name = self
            .business_name_of(&v.record.tenant, &v.record.business)
            .await?;
        Ok(Some((v.record.view(self.now(), counts), name)))
    }

    /// A payer opens a session from link `id`: a new session of the link's business and
    /// mode, on every network and token the business takes (as a session created
    /// without `networks`), for the link's amount or the payer's `amount` within its
    /// bounds, carrying the link's id. Refused with `PAYMENT_LINK_INACTIVE`,
    /// `PAYMENT_LINK_EXPIRED`, `PAYMENT_LINK_LIMIT_REACHED` or `AMOUNT_OUT_OF_RANGE`.
    pub async fn open_link_session(
        &self,
        id: &str,
        amount: Option<&str>,
    ) -> CheckoutResult<SessionView> {
        for _ in 0..MAX_RETRIES {
            let Some(Versioned {
                record: mut link,
                version,
            }) = self.load_link(id).await?
            else {
                return Err(CheckoutError::NotFound {
                    kind: "payment link",
                    id: id.chars().take(64).collect(),
                });
            };
            let now = self.now();
            // Only a limited link needs its sessions counted to decide (the walk reads
            // each of its sessions); an unlimited one opens without it.
            let counts = match link.max_payments {
                Some(_) if link.active => self.counts(&link).await?,
                _ => Counts::default(),
            };
            if let Some(refused) = link.refusal(now, counts) {
                return Err(refused);
            }
            let amount = match link.amount {
                Some(fixed) => fixed,
                None => {
                    let sent = amount
                        .map(str::trim)
                        .filter(|a| !a.is_empty())
                        .ok_or(CheckoutError::MissingParameter { field: "amount" })?;
                    let chosen =
                        Micros::parse_positive(sent).map_err(|e| CheckoutError::InvalidAmount {
                            reason: e.to_string(),
                        })?;
                    let lo = link.min_amount.unwrap_or(Micros::new(1));
                    let hi = link.max_amount.unwrap_or(self.config.max_amount);
                    if chosen < lo || chosen > hi {
                        return Err(CheckoutError::AmountOutOfRange {
                            min: lo.to_decimal_string(),
                            max: hi.to_decimal_string(),
                        });
                    }
                    chosen
                }
            };
            let scope = Scope {
                tenant: link.tenant.clone(),
                business: link.business.clone(),
                mode: link.mode,
            };
            let req = CreateSessionRequest {
                amount: amount.to_decimal_string(),
                currency: link.currency.clone(),
                description: Some(link.description.clone()).filter(|d| !d.is_empty()),
                ..Default::default()
            };
            let (mut session, _) = self.new_session(&scope, &req).await?;
            session.payment_link = Some(link.id.clone());
            let index = LinkSession {
                session: session.id.clone(),
                link: link.id.clone(),
                tenant: link.tenant.clone(),
                created_at: session.created_at,
            };
            link.sessions_opened += 1;
            link.updated_at = now;
            let batch = Batch {
                puts: vec![session.insert()?, index.insert()?, link.update(version)?],
                ..Default::default()
            };
            match self.commit(batch).await {
                Ok(()) => return Ok(SessionView::of(&session, &[])),
                Err(CheckoutError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(CheckoutError::Conflict {
            what: format!("payment link {id}"),
        })
    }
}
