//! The chain side: hosts [`SimRail`]s and answers their calls as JSON over HTTP.
//!
//! `GET /v1/chains` lists the hosted chains; `POST /v1/chains/{name}/{call}` runs one
//! call on the chain named by its rail name (`polygon`, `tron`, `solana`, `evm-<id>`).
//! A rail call answers `200 {"ok": value}` or `200 {"err": {"code", "reason"}}` (the
//! rail's own error); any other status (unknown chain or call, a body that does not
//! parse) is the transport's failure, which the client never reads as a rejection.

use super::{
    BalanceReq, FaultReq, HostedChain, InfoReply, MineReq, PurposeReq, Reply, ScanReq, StatusReq,
    Switch, SwitchReq, TransferReq,
};
use crate::sim::SimRail;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde::de::DeserializeOwned;
use stablecoin_core::ports::{Rail, RailPayment};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpListener;

/// The simulated chains one process hosts for several servers, by rail name.
#[derive(Clone, Debug, Default)]
pub struct SimChainServer {
    chains: Arc<BTreeMap<String, Arc<SimRail>>>,
}

/// Refuses an address other than 127.0.0.1: the chain has no authentication and its
/// controls mint money, so it must not be reachable from another machine (nor from
/// another interface of this one).
fn require_loopback(addr: SocketAddr) -> io::Result<()> {
    if addr.ip() == std::net::IpAddr::V4(Ipv4Addr::LOCALHOST) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the simulated chain listens on 127.0.0.1 only (it has no authentication), not {addr}"
            ),
        ))
    }
}

/// Binds `addr`, which must be 127.0.0.1 (any port; 0 picks a free one).
pub async fn bind_loopback(addr: SocketAddr) -> io::Result<TcpListener> {
    require_loopback(addr)?;
    TcpListener::bind(addr).await
}

impl SimChainServer {
    /// Hosts `rails`, each under its rail name (a later rail of the same name replaces an
    /// earlier one).
    pub fn new(rails: impl IntoIterator<Item = Arc<SimRail>>) -> Self {
        let chains = rails
            .into_iter()
            .map(|r| (r.profile().rail_id().name(), r))
            .collect();
        SimChainServer {
            chains: Arc::new(chains),
        }
    }

    /// The hosted chain of a rail name, for the hosting process's own controls.
    pub fn chain(&self, name: &str) -> Option<&Arc<SimRail>> {
        self.chains.get(name)
    }

    /// The hosted chains, as `GET /v1/chains` lists them.
    pub fn hosted(&self) -> Vec<HostedChain> {
        self.chains
            .iter()
            .map(|(name, r)| HostedChain {
                name: name.clone(),
                profile: r.profile(),
                config: r.config(),
            })
            .collect()
    }

    /// The HTTP API over the hosted chains.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/v1/chains", get(list))
            .route("/v1/chains/{name}/{call}", post(call))
            .with_state(self.clone())
    }

    /// Serves on `listener` (bound to 127.0.0.1, else refused) until `shutdown`
    /// resolves.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        require_loopback(listener.local_addr()?)?;
        axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown)
            .await
    }

    /// Serves on a free port of 127.0.0.1 as a task of the current runtime and returns
    /// the chain's URL (`http://127.0.0.1:<port>`). The task ends with the runtime, so a
    /// test's chain stops by itself when the test does.
    pub async fn spawn(self) -> io::Result<String> {
        let listener = bind_loopback(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(self.serve(listener, std::future::pending()));
        Ok(url)
    }
}

async fn list(State(s): State<SimChainServer>) -> Response {
    json(&s.hosted())
}

fn json<T: Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

fn reply<T: Serialize>(r: Result<T, stablecoin_core::ports::RailError>) -> Response {
    json(&Reply::from(r))
}

/// A call that is not one: its HTTP status and why.
type Refusal = (StatusCode, String);

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, Refusal> {
    serde_json::from_slice(body)
        .map_err(|e| (StatusCode::BAD_REQUEST, format!("request body: {e}")))
}

async fn call(
    State(s): State<SimChainServer>,
    Path((name, call)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let Some(rail) = s.chains.get(&name) else {
        return (
            StatusCode::NOT_FOUND,
            format!("no simulated chain {name:?} here"),
        )
            .into_response();
    };
    dispatch(rail, &call, &body)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// Runs one call on `rail`; `Err` is the HTTP answer of a call that is not one.
async fn dispatch(rail: &SimRail, call: &str, body: &[u8]) -> Result<Response, Refusal> {
    Ok(match call {
        // ---- the Rail port ----
        "readiness" => reply(Ok(rail.readiness().await)),
        "address_for" => {
            let r: PurposeReq = parse(body)?;
            reply(rail.address_for(&r.purpose).await)
        }
        "prepare_wallet" => {
            let r: PurposeReq = parse(body)?;
            reply(rail.prepare_wallet(&r.purpose).await)
        }
        "balance" => {
            let r: BalanceReq = parse(body)?;
            reply(rail.balance(&r.address, r.token).await)
        }
        "submit" => {
            let p: RailPayment = parse(body)?;
            reply(rail.submit(&p).await)
        }
        "submit_batch" => {
            let ps: Vec<RailPayment> = parse(body)?;
            let answers: Vec<Reply<_>> = rail
                .submit_batch(&ps)
                .await
                .into_iter()
                .map(Reply::from)
                .collect();
            json(&answers)
        }
        "status" => {
            let r: StatusReq = parse(body)?;
            reply(rail.status(&r.payment_id).await)
        }
        "scan" => {
            let r: ScanReq = parse(body)?;
            reply(rail.scan(&r.cursor, &r.watched, r.limit).await)
        }
        // ---- test and demo controls ----
        "transfer" => {
            let r: TransferReq = parse(body)?;
            reply(match &r.from {
                None => rail.mint(&r.to, r.token, r.amount),
                Some(from) => rail.external_transfer(from, &r.to, r.token, r.amount),
            })
        }
        "mine" => {
            let r: MineReq = parse(body)?;
            reply(Ok(rail.mine(r.blocks)))
        }
        "inject" => {
            let r: FaultReq = parse(body)?;
            rail.inject(r.fault);
            reply(Ok(()))
        }
        "switch" => {
            let r: SwitchReq = parse(body)?;
            match r.switch {
                Switch::RpcDown => rail.set_rpc_down(r.on),
                Switch::SponsorFunded => rail.set_sponsor_funded(r.on),
                Switch::Monitoring => rail.set_monitoring(r.on),
            }
            reply(Ok(()))
        }
        "token_account_exists" => {
            let r: BalanceReq = parse(body)?;
            reply(Ok(rail.token_account_exists(&r.address, r.token)))
        }
        "info" => reply(Ok(InfoReply {
            head: rail.head(),
            submit_count: rail.submit_count(),
            faucet: rail.faucet_address(),
        })),
        other => {
            return Err((
                StatusCode::NOT_FOUND,
                format!("no call {other:?} on a chain"),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_127_0_0_1_is_accepted() {
        for addr in [
            "0.0.0.0:0",
            "[::1]:0",
            "[::]:0",
            "10.0.0.1:0",
            "127.0.0.2:0",
        ] {
            let addr: SocketAddr = addr.parse().unwrap();
            let err = bind_loopback(addr).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{addr}");
        }
        let any = TcpListener::bind("0.0.0.0:0").await.unwrap();
        let err = SimChainServer::default()
            .serve(any, async {})
            .await
            .unwrap_err();
        assert!(err.to_string().contains("127.0.0.1 only"), "{err}");
        assert!(bind_loopback("127.0.0.1:0".parse().unwrap()).await.is_ok());
    }
}
