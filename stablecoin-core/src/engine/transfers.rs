//! P2P transfers: `POST /v1/transfers/send` and its TRON and Solana twins. One attempt
//! decides and commits in the steps of [`Engine::send_attempt`]: the quote that prices
//! it, the recipient (and both ends' addresses on the rail), the payment legs with their
//! ledger holds, the batch.

use super::operations::{SendRequest, SendView, hold};
use super::policy_gate::{Approving, PendingRequest, Subject, lost_policy_race};
use super::{Engine, accounts};
use crate::domain::consent::Wallet;
use crate::domain::fees::{FeeSplit, split_fees};
use crate::domain::fx::{Quote, QuoteRef};
use crate::domain::ids::TenantId;
use crate::domain::money::Micros;
use crate::domain::policy::chain_key;
use crate::domain::state::OpKind;
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::kernel::auth::Tenant;
use crate::ports::ledger::{LedgerAccount, LedgerTransfer};
use crate::ports::rail::{ChainAddress, LegRole, PaymentLeg, Rail, RailId, RailPayment};
use crate::ports::record::{Record, get_record};
use crate::ports::signer::KeyPurpose;
use crate::ports::store::{Batch, Put, Unchanged};
use std::sync::Arc;

/// The quote step's decision: the amount sent and, for an FX quote, its id and the put
/// that marks it used.
struct Priced {
    amount: Micros,
    quote_id: Option<String>,
    quote_put: Option<Put>,
}

/// The recipient step's decision.
struct Recipient {
    wallet: Wallet,
    /// Created by this send: inserted with the batch, told by SMS once paid.
    created: bool,
    /// The check that the recipient as read is unchanged at commit; `None` when the
    /// batch updates it (its put checks the version) or creates it.
    check: Option<Unchanged>,
    /// The update that records the recipient's new address on the rail.
    put: Option<Put>,
    /// The sender's address on the rail.
    from_address: ChainAddress,
    /// The recipient's address on the rail.
    to_address: ChainAddress,
}

/// The legs step's decision: the on-chain legs, a pending hold per leg, and the ledger
/// accounts the holds use (created if absent).
struct Legs {
    legs: Vec<PaymentLeg>,
    holds: Vec<LedgerTransfer>,
    accounts: Vec<LedgerAccount>,
}

impl Engine {
    /// `POST /v1/transfers/send`: a P2P transfer between phone-keyed wallets.
    ///
    /// Member only. The sender is debited exactly the amount; the recipient gets it minus
    /// the service fee and the tenant fee, all in one on-chain batch. A recipient phone
    /// that has no wallet gets one on the fly (unaffiliated) and an SMS once paid.
    /// UNKNOWN_TOKEN, INVALID_QUOTE_ID and QUOTE_TOKEN_MISMATCH come before anything is
    /// read; RAIL_NOT_READY unless the rail is READY.
    pub async fn send(
        &self,
        tenant: &TenantId,
        req: &SendRequest,
        idempotency_key: Option<&str>,
    ) -> CoreResult<SendView> {
        let rail = self.evm_rail()?.id();
        self.send_on(tenant, rail, req, idempotency_key).await
    }

    /// A P2P transfer on `rail_id`. On an EVM chain it is [`Engine::send`]. On a parallel
    /// rail (`POST /v1/tron/transfers/send`, `POST /v1/solana/transfers/send`) it moves
    /// the rail's own balance of the wallets (ledger accounts
    /// `wallet:<id>:<rail>:<TOKEN>`, credited by that rail's deposit scanner) and deducts
    /// no fee: the service fee and the tenant fee are EVM's (spec 1 item 8, 8.4); TRON's
    /// sponsorship covers activation and resources, Solana's makes the service the fee
    /// payer. A recipient wallet that has no address on the rail yet gets it (derived
    /// offline, durable) in the same commit.
    ///
    /// Refused before anything is read: a token the rail does not carry (UNKNOWN_TOKEN,
    /// e.g. USDC on TRON), a malformed `quote_id`, a `DIRECT_CRYPTO` quote of another
    /// token. Then, unless an idempotent replay answers, RAIL_NOT_READY while the rail is
    /// not READY (a TRON or Solana rail that is INBOUND_READY receives but does not send).
    pub async fn send_on(
        &self,
        tenant: &TenantId,
        rail_id: RailId,
        req: &SendRequest,
        idempotency_key: Option<&str>,
    ) -> CoreResult<SendView> {
        self.send_gated(tenant, rail_id, req, idempotency_key, None)
            .await
    }

    /// [`Engine::send_on`], or the carrying out of a pending policy approval
    /// (`approving`, see `policy_gate.rs`).
    pub(crate) async fn send_gated(
        &self,
        tenant: &TenantId,
        rail_id: RailId,
        req: &SendRequest,
        idempotency_key: Option<&str>,
        approving: Option<&Approving>,
    ) -> CoreResult<SendView> {
        let rail = self.rail(rail_id)?.clone();
        let quote_ref = self.check_send(&*rail, req)?;
        let attempt =
            || self.send_attempt(tenant, &rail, &quote_ref, req, idempotency_key, approving);
        match attempt().await {
            // A wallet it decided on changed before the commit (a cached copy was stale,
            // or a concurrent change landed), or a policy's window usage did (another
            // request of the same scope was admitted): nothing was written, so decide
            // again on fresh reads, once.
            Err(e) if e.lost_race_on(Wallet::KIND) || lost_policy_race(&e) => {
                self.forget_wallet(&req.from_phone_number);
                self.forget_wallet(&req.to_phone_number);
                attempt().await
            }
            other => other,
        }
    }

    /// One decision and commit of [`Engine::send_on`]. The two wallets come from the
    /// wallet cache when it has them; the batch checks that both are still at the
    /// version read (the one it updates is checked by its put).
    ///
    /// The steps, in this order (it is also the order of the errors a send may meet):
    /// the rail is ready; the sender, a member, is not the recipient by phone; the quote
    /// ([`Engine::send_quote`]) and the minimum; the fees; the recipient
    /// ([`Engine::send_recipient`]); the legs and holds ([`Engine::send_legs`]); the
    /// batch ([`Engine::send_batch`]).
    async fn send_attempt(
        &self,
        tenant: &TenantId,
        rail: &Arc<dyn Rail>,
        quote_ref: &QuoteRef,
        req: &SendRequest,
        idempotency_key: Option<&str>,
        approving: Option<&Approving>,
    ) -> CoreResult<SendView> {
        let rail_id = rail.id();
        let scope = self.scope_on("send", rail_id);
        self.idempotent(tenant, idempotency_key, &scope, req, || async {
            self.require_ready(rail_id).await?;
            let now = self.now();
            let sender_read = self
                .wallet_by_phone_checked(&req.from_phone_number)
                .await?
                .ok_or_else(|| super::wallets::no_wallet(&req.from_phone_number))?;
            let mut unchanged = vec![sender_read.unchanged()];
            let sender = sender_read.record;
            sender.require_member(tenant)?;
            if req.from_phone_number == req.to_phone_number {
                return Err(CoreError::SameWallet);
            }
            let priced = self.send_quote(tenant, quote_ref, req, now).await?;
            self.config.min_send.check(rail_id, priced.amount)?;
            let tenant_rec = self.tenant(tenant).await?;
            // Sponsorship budget (issue #51 item 4), before anything is held.
            self.sponsor_gate(tenant, rail_id).await?;
            let fees = if matches!(rail_id, RailId::Evm(_)) {
                split_fees(priced.amount, &tenant_rec.pricing)?
            } else {
                FeeSplit::none(priced.amount)
            };
            let mut recipient = self.send_recipient(rail, &sender, req, now).await?;
            unchanged.extend(recipient.check.take());
            let id = self.new_id(OpKind::Transfer.id_prefix());
            let legs = self
                .send_legs(rail, &tenant_rec, req, &id, &sender, &recipient, &fees)
                .await?;
            // Sanctions screening of every leg's destination (the recipient's address
            // and the tenant's fee address), before anything is held.
            let to: Vec<_> = legs.legs.iter().map(|l| &l.to).collect();
            self.kernel
                .screen_addresses(&tenant.0, "send", &id, rail_id, &to)
                .await?;
            // Spending policies (issue #51), before anything is held.
            let subject = Subject {
                operation: "send",
                wallet: &sender.id,
                rail: rail_id,
                token: req.token,
                amount: priced.amount,
                destination: Some(chain_key(&recipient.to_address.0)),
            };
            let pending = || PendingRequest::Send {
                rail: rail_id,
                request: req.clone(),
            };
            let policy_puts = self
                .policy_gate(tenant, &subject, &id, approving, pending, idempotency_key)
                .await?;
            let parties = (sender, recipient);
            let (mut batch, view) = self.send_batch(
                tenant, rail, req, id, parties, fees, priced, legs, unchanged,
            )?;
            batch.puts.extend(policy_puts);
            Ok((batch, view))
        })
        .await
        .map_err(|e| {
            // The quote was consumed by a concurrent send between our read and commit.
            if e.lost_race_on(Quote::KIND) {
                CoreError::QuoteAlreadyUsed {
                    quote_id: req.quote_id.clone(),
                }
            } else {
                e
            }
        })
    }

    /// The quote step: a `DIRECT_CRYPTO` reference carries its amount (its token was
    /// checked with the request, `check_send`); an FX quote must be this tenant's and
    /// usable for the token, and is marked used by the batch.
    async fn send_quote(
        &self,
        tenant: &TenantId,
        quote_ref: &QuoteRef,
        req: &SendRequest,
        now: Timestamp,
    ) -> CoreResult<Priced> {
        let qid = match quote_ref.clone() {
            QuoteRef::DirectCrypto { amount, .. } => {
                return Ok(Priced {
                    amount,
                    quote_id: None,
                    quote_put: None,
                });
            }
            QuoteRef::Fx(qid) => qid,
        };
        let Some(v) = get_record::<Quote>(&*self.ports().store, &qid.0).await? else {
            return Err(CoreError::NotFound {
                kind: "quote",
                id: qid.0,
            });
        };
        if &v.record.tenant != tenant {
            return Err(CoreError::NotFound {
                kind: "quote",
                id: qid.0,
            });
        }
        v.record.check_usable(now, req.token)?;
        let mut q = v.record.clone();
        q.mark_used(now, "pending");
        Ok(Priced {
            amount: v.record.expected_out,
            quote_id: Some(qid.0),
            quote_put: Some(q.update(v.version)?),
        })
    }

    /// The recipient step: the wallet of the recipient's phone, or a new one
    /// (unaffiliated); never the sender's. Then both ends' addresses on the rail: the
    /// sender must have one; a recipient without one gets it derived here.
    async fn send_recipient(
        &self,
        rail: &Arc<dyn Rail>,
        sender: &Wallet,
        req: &SendRequest,
        now: Timestamp,
    ) -> CoreResult<Recipient> {
        let rail_name = rail.id().name();
        let recipient_read = self.wallet_by_phone_checked(&req.to_phone_number).await?;
        let recipient_check = recipient_read.as_ref().map(|v| v.unchanged());
        let (mut recipient, recipient_version) = match recipient_read {
            Some(v) => (v.record, Some(v.version)),
            None => (self.new_wallet(&req.to_phone_number, None).await?, None),
        };
        let created = recipient_version.is_none();
        if recipient.id == sender.id {
            return Err(CoreError::SameWallet);
        }
        let from_address =
            sender
                .address(&rail_name)
                .cloned()
                .ok_or_else(|| CoreError::NotFound {
                    kind: "wallet address",
                    id: format!("{rail_name} (provision the sender on {rail_name} first)"),
                })?;
        let recipient_put = match recipient.address(&rail_name).cloned() {
            Some(_) => None,
            None => {
                // Offline derivation: the wallet's key on this chain. No chain-side
                // preparation here (a Solana ATA would hold the request until
                // finality): the payment itself opens a missing recipient account and
                // reports it (`created_recipient_ata`); provisioning completes the rest.
                let purpose = KeyPurpose::Wallet(recipient.id.0.clone());
                let a = rail.address_for(&purpose).await.map_err(super::rail_err)?;
                recipient.addresses.insert(rail_name.clone(), a);
                recipient.updated_at = now;
                recipient_version.map(|v| recipient.update(v)).transpose()?
            }
        };
        let to_address =
            recipient
                .address(&rail_name)
                .cloned()
                .ok_or_else(|| CoreError::NotFound {
                    kind: "wallet address",
                    id: rail_name.clone(),
                })?;
        Ok(Recipient {
            wallet: recipient,
            created,
            check: recipient_check.filter(|_| recipient_put.is_none()),
            put: recipient_put,
            from_address,
            to_address,
        })
    }

    /// The legs step: the recipient's leg, then the service fee's and the tenant fee's
    /// when not zero, each with its pending hold on the sender's account.
    #[allow(clippy::too_many_arguments)]
    async fn send_legs(
        &self,
        rail: &Arc<dyn Rail>,
        tenant_rec: &Tenant,
        req: &SendRequest,
        id: &str,
        sender: &Wallet,
        recipient: &Recipient,
        fees: &FeeSplit,
    ) -> CoreResult<Legs> {
        let rail_id = rail.id();
        let mut legs = vec![PaymentLeg {
            to: recipient.to_address.clone(),
            amount: fees.recipient,
            role: LegRole::Recipient,
        }];
        let src = self.wallet_account(&sender.id, rail_id, req.token);
        let dst = self.wallet_account(&recipient.wallet.id, rail_id, req.token);
        let svc = accounts::service_fees(req.token);
        let tfee = accounts::tenant_fees(&tenant_rec.id, req.token);
        let mut holds = vec![hold(format!("{id}:recipient"), &src, &dst, fees.recipient)];
        if !fees.service_fee.is_zero() {
            let addr = self.service_address(rail, KeyPurpose::ServiceFees).await?;
            legs.push(PaymentLeg {
                to: addr,
                amount: fees.service_fee,
                role: LegRole::ServiceFee,
            });
            holds.push(hold(
                format!("{id}:service_fee"),
                &src,
                &svc,
                fees.service_fee,
            ));
        }
        if !fees.tenant_fee.is_zero() {
            let addr: ChainAddress =
                tenant_rec
                    .fee_address
                    .clone()
                    .ok_or_else(|| CoreError::InvalidPricing {
                        reason: "tenant fee configured without fee_address".into(),
                    })?;
            legs.push(PaymentLeg {
                to: addr,
                amount: fees.tenant_fee,
                role: LegRole::TenantFee,
            });
            holds.push(hold(
                format!("{id}:tenant_fee"),
                &src,
                &tfee,
                fees.tenant_fee,
            ));
        }
        Ok(Legs {
            legs,
            holds,
            accounts: vec![src, dst, svc, tfee],
        })
    }

    /// The batch step: the operation with its payment and holds, the quote marked used
    /// by it, the new or updated recipient, and the checks of the wallets read.
    #[allow(clippy::too_many_arguments)]
    fn send_batch(
        &self,
        tenant: &TenantId,
        rail: &Arc<dyn Rail>,
        req: &SendRequest,
        id: String,
        (sender, recipient): (Wallet, Recipient),
        fees: FeeSplit,
        priced: Priced,
        legs: Legs,
        unchanged: Vec<Unchanged>,
    ) -> CoreResult<(Batch, SendView)> {
        let payment = RailPayment {
            id: id.clone(),
            from: KeyPurpose::Wallet(sender.id.0.clone()),
            from_address: recipient.from_address,
            token: req.token,
            legs: legs.legs,
            valid_until: None,
        };
        let mut op = self.new_operation(
            OpKind::Transfer,
            tenant,
            rail.id(),
            req.token,
            priced.amount,
            payment,
        );
        op.fees = Some(fees);
        op.from_wallet = Some(sender.id.clone());
        op.from_customer = Some(sender.customer_id_for(tenant));
        op.to_wallet = Some(recipient.wallet.id.clone());
        op.from_phone = Some(sender.phone.clone());
        op.to_phone = Some(recipient.wallet.phone.clone());
        op.quote_id = priced.quote_id;
        op.notify_recipient = recipient.created;
        op.holds = legs.holds;
        let mut puts = Vec::new();
        if let Some(mut put) = priced.quote_put {
            // Record which operation consumed the quote.
            let mut q: Quote = Quote::from_stored(&put.record)?;
            q.used_by = Some(id.clone());
            put.record = q.to_stored()?;
            puts.push(put);
        }
        puts.push(op.insert()?);
        if recipient.created {
            puts.push(recipient.wallet.insert()?);
        }
        puts.extend(recipient.put);
        let batch = Batch {
            unchanged,
            puts,
            accounts: legs.accounts,
            ledger: op.holds.clone(),
            ..Default::default()
        };
        Ok((batch, op.view()))
    }
}
