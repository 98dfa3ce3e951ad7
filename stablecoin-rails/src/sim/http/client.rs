//! The client side, in every server process: [`RemoteSimRail`], a [`Rail`] over the shared
//! chain.

use super::{
    BalanceReq, FaultReq, HostedChain, InfoReply, MineReq, PurposeReq, Reply, ScanReq, StatusReq,
    Switch, SwitchReq, TransferReq,
};
use crate::sim::{Fault, SimProfile};
use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, Rail, RailError, RailId, RailPayment, Readiness, ReadinessStatus,
    ScanBatch, Submission, SubmissionStatus,
};
use std::time::Duration;

/// How long one call may take before it counts as a transport failure. Loopback calls
/// answer in well under a millisecond; this only bounds a hung chain process.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// One simulated chain hosted by a [`SimChainServer`](super::SimChainServer), as a
/// [`Rail`]: every port call is one JSON request over one keep-alive client.
///
/// A transport failure (connection refused or reset, timeout, an answer that is not the
/// chain's) never becomes `Rejected`, which would prove that nothing was sent and let
/// the engine fail a payment that may have landed: `submit` and `submit_batch` answer
/// `Unknown` (the engine then asks `status`), every other call `Unavailable`
/// (RAIL_NOT_READY), and `readiness` `DEGRADED` with the reason.
#[derive(Clone, Debug)]
pub struct RemoteSimRail {
    profile: SimProfile,
    /// `<chain url>/v1/chains/<rail name>/`.
    base: String,
    http: reqwest::Client,
}

/// A failed request: the chain's answer never arrived or was not one.
struct Transport(String);

impl RemoteSimRail {
    /// The chain of `profile` at `chain_url` (`http://127.0.0.1:<port>`). Contacts
    /// nothing: a chain that is down shows in readiness, as a real node's outage does.
    pub fn new(chain_url: &str, profile: SimProfile) -> Result<Self, RailError> {
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .connect_timeout(Duration::from_secs(2))
            // Loopback only: an HTTP(S)_PROXY of the environment must not reroute it.
            .no_proxy()
            .build()
            .map_err(|e| RailError::Unavailable {
                reason: format!("shared simulated chain client: {e}"),
            })?;
        Ok(RemoteSimRail {
            profile,
            base: format!(
                "{}/v1/chains/{}/",
                chain_url.trim_end_matches('/'),
                profile.rail_id().name()
            ),
            http,
        })
    }

    /// The chain this rail imitates.
    pub fn profile(&self) -> SimProfile {
        self.profile
    }

    /// The chains the process at `chain_url` hosts (`GET /v1/chains`).
    pub async fn hosted(chain_url: &str) -> Result<Vec<HostedChain>, RailError> {
        let url = format!("{}/v1/chains", chain_url.trim_end_matches('/'));
        let fail = |e: String| RailError::Unavailable {
            reason: format!("shared simulated chain at {chain_url}: {e}"),
        };
        let res = reqwest::Client::builder()
            .no_proxy()
            .timeout(CALL_TIMEOUT)
            .build()
            .map_err(|e| fail(e.to_string()))?
            .get(url)
            .send()
            .await
            .map_err(|e| fail(e.to_string()))?;
        if !res.status().is_success() {
            return Err(fail(format!("HTTP {}", res.status())));
        }
        res.json().await.map_err(|e| fail(e.to_string()))
    }

    async fn request<Req: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        call: &str,
        req: &Req,
    ) -> Result<T, Transport> {
        let res = self
            .http
            .post(format!("{}{call}", self.base))
            .json(req)
            .send()
            .await
            .map_err(|e| Transport(format!("{call}: {e}")))?;
        let status = res.status();
        if !status.is_success() {
            let body = res.text().await.unwrap_or_default();
            return Err(Transport(format!("{call}: HTTP {status}: {body}")));
        }
        res.json()
            .await
            .map_err(|e| Transport(format!("{call}: unreadable answer: {e}")))
    }

    /// A read or control call: a transport failure is `Unavailable`.
    async fn read<Req: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        call: &str,
        req: &Req,
    ) -> Result<T, RailError> {
        match self.request::<_, Reply<T>>(call, req).await {
            Ok(Reply::Ok(v)) => Ok(v),
            Ok(Reply::Err(e)) => Err(e.into()),
            Err(Transport(reason)) => Err(RailError::Unavailable {
                reason: format!("shared simulated chain unreachable: {reason}"),
            }),
        }
    }

    fn unknown(reason: &str) -> RailError {
        RailError::Unknown {
            reason: format!("shared simulated chain: {reason}"),
        }
    }

    // ---- test and demo controls (those of `SimRail`, over the wire) ----------------

    /// An external deposit to `to` from the faucet, in the next block; its hash.
    pub async fn mint(
        &self,
        to: &ChainAddress,
        token: Token,
        amount: Micros,
    ) -> Result<String, RailError> {
        let req = TransferReq {
            from: None,
            to: to.clone(),
            token,
            amount,
        };
        self.read("transfer", &req).await
    }

    /// An outside party pays `to` from `from`, in the next block; its hash.
    pub async fn external_transfer(
        &self,
        from: &ChainAddress,
        to: &ChainAddress,
        token: Token,
        amount: Micros,
    ) -> Result<String, RailError> {
        let req = TransferReq {
            from: Some(from.clone()),
            to: to.clone(),
            token,
            amount,
        };
        self.read("transfer", &req).await
    }

    /// Mines `blocks` blocks; the new head.
    pub async fn mine(&self, blocks: u64) -> Result<u64, RailError> {
        self.read("mine", &MineReq { blocks }).await
    }

    /// Queues a fault for the chain's next submit, whichever server sends it.
    pub async fn inject(&self, fault: Fault) -> Result<(), RailError> {
        self.read("inject", &FaultReq { fault }).await
    }

    /// See `SimRail::set_rpc_down`.
    pub async fn set_rpc_down(&self, down: bool) -> Result<(), RailError> {
        self.switch(Switch::RpcDown, down).await
    }

    /// See `SimRail::set_sponsor_funded`.
    pub async fn set_sponsor_funded(&self, funded: bool) -> Result<(), RailError> {
        self.switch(Switch::SponsorFunded, funded).await
    }

    /// See `SimRail::set_monitoring`.
    pub async fn set_monitoring(&self, enabled: bool) -> Result<(), RailError> {
        self.switch(Switch::Monitoring, enabled).await
    }

    async fn switch(&self, switch: Switch, on: bool) -> Result<(), RailError> {
        self.read("switch", &SwitchReq { switch, on }).await
    }

    /// See `SimRail::token_account_exists`.
    pub async fn token_account_exists(
        &self,
        address: &ChainAddress,
        token: Token,
    ) -> Result<bool, RailError> {
        let req = BalanceReq {
            address: address.clone(),
            token,
        };
        self.read("token_account_exists", &req).await
    }

    /// The chain's head block.
    pub async fn head(&self) -> Result<u64, RailError> {
        Ok(self.info().await?.head)
    }

    /// How many distinct payments the chain accepted, from every server.
    pub async fn submit_count(&self) -> Result<usize, RailError> {
        Ok(self.info().await?.submit_count)
    }

    /// The address mints come from.
    pub async fn faucet_address(&self) -> Result<ChainAddress, RailError> {
        Ok(self.info().await?.faucet)
    }

    async fn info(&self) -> Result<InfoReply, RailError> {
        self.read("info", &()).await
    }
}

#[async_trait]
impl Rail for RemoteSimRail {
    fn id(&self) -> RailId {
        self.profile.rail_id()
    }

    fn tokens(&self) -> Vec<Token> {
        self.profile.tokens()
    }

    /// The chain's readiness; an unreachable chain is `DEGRADED`, with the reason.
    async fn readiness(&self) -> Readiness {
        match self.read("readiness", &()).await {
            Ok(r) => r,
            Err(e) => Readiness {
                status: ReadinessStatus::Degraded,
                reasons: vec![e.to_string()],
            },
        }
    }

    /// One loopback round trip (well under a millisecond): asked before every send, as
    /// the in-process chain is, so a readiness flipped by any process shows at once.
    fn readiness_is_cheap(&self) -> bool {
        true
    }

    async fn address_for(&self, purpose: &KeyPurpose) -> Result<ChainAddress, RailError> {
        let req = PurposeReq {
            purpose: purpose.clone(),
        };
        self.read("address_for", &req).await
    }

    async fn prepare_wallet(&self, purpose: &KeyPurpose) -> Result<(), RailError> {
        let req = PurposeReq {
            purpose: purpose.clone(),
        };
        self.read("prepare_wallet", &req).await
    }

    fn prepare_wallet_pays_rent(&self) -> bool {
        self.profile == SimProfile::Solana
    }

    async fn balance(&self, address: &ChainAddress, token: Token) -> Result<Micros, RailError> {
        let req = BalanceReq {
            address: address.clone(),
            token,
        };
        self.read("balance", &req).await
    }

    /// A transport failure is `Unknown`: the chain may have accepted the payment before
    /// the answer was lost.
    async fn submit(&self, payment: &RailPayment) -> Result<Submission, RailError> {
        match self
            .request::<_, Reply<Submission>>("submit", payment)
            .await
        {
            Ok(Reply::Ok(s)) => Ok(s),
            Ok(Reply::Err(e)) => Err(e.into()),
            Err(Transport(reason)) => Err(Self::unknown(&reason)),
        }
    }

    /// The whole batch in one request; a transport failure (or an answer of the wrong
    /// length) makes every payment `Unknown`.
    async fn submit_batch(&self, payments: &[RailPayment]) -> Vec<Result<Submission, RailError>> {
        if payments.is_empty() {
            return Vec::new();
        }
        let answers = self
            .request::<_, Vec<Reply<Submission>>>("submit_batch", payments)
            .await;
        match answers {
            Ok(a) if a.len() == payments.len() => a
                .into_iter()
                .map(|r| match r {
                    Reply::Ok(s) => Ok(s),
                    Reply::Err(e) => Err(e.into()),
                })
                .collect(),
            Ok(a) => {
                let reason = format!("{} answers to {} payments", a.len(), payments.len());
                payments
                    .iter()
                    .map(|_| Err(Self::unknown(&reason)))
                    .collect()
            }
            Err(Transport(reason)) => payments
                .iter()
                .map(|_| Err(Self::unknown(&reason)))
                .collect(),
        }
    }

    async fn status(&self, payment_id: &str) -> Result<SubmissionStatus, RailError> {
        let req = StatusReq {
            payment_id: payment_id.to_string(),
        };
        self.read("status", &req).await
    }

    async fn scan(
        &self,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<ScanBatch, RailError> {
        let req = ScanReq {
            cursor: cursor.to_string(),
            watched: watched.to_vec(),
            limit,
        };
        self.read("scan", &req).await
    }
}
