//! `sim-http`: one simulated chain shared by several processes, over loopback HTTP.
//!
//! A [`SimRail`](super::SimRail) lives in one process's memory, so two server processes
//! on one database each saw a chain of their own: one submitted a payment, the other
//! polled a chain that never saw it. Here one process hosts the chains
//! ([`SimChainServer`], the server binary's `sim-chain` command) and every server reaches
//! them through [`RemoteSimRail`], a [`Rail`](stablecoin_core::ports::Rail) whose every
//! call is one small JSON request.
//!
//! Signing stays where it is in-process: the chain process holds a [`Signer`] built from
//! the same master seed as the servers, and its `SimRail` derives addresses, signs and
//! verifies exactly as before; the wire carries the core port types unchanged. Why not
//! sign in the client: the chain process needs the seed anyway (it mints the treasury
//! float to the treasury's address at start), and forwarding `RailPayment` as-is keeps one
//! implementation of the chain's rules (digest, checks, faults) instead of a second,
//! client-side half that could drift from it. Every server sharing the chain sees the same
//! addresses because they all come from the chain process.
//!
//! The chain listens on 127.0.0.1 only ([`bind_loopback`] and [`SimChainServer::serve`]
//! refuse anything else): it has no authentication and its controls mint money.
//!
//! [`Signer`]: stablecoin_core::ports::Signer

mod client;
mod server;

pub use client::RemoteSimRail;
pub use server::{SimChainServer, bind_loopback};

use serde::{Deserialize, Serialize};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{ChainAddress, KeyPurpose, RailError};

use super::{Fault, SimConfig, SimProfile};

/// The answer of one chain call on the wire: the rail's value or its [`RailError`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reply<T> {
    Ok(T),
    Err(WireError),
}

impl<T> From<Result<T, RailError>> for Reply<T> {
    fn from(r: Result<T, RailError>) -> Self {
        match r {
            Ok(v) => Reply::Ok(v),
            Err(e) => Reply::Err(WireError::from(&e)),
        }
    }
}

/// A [`RailError`] on the wire: its stable code and text (`RailError` itself is not
/// serializable, and its variants are non-exhaustive).
#[derive(Debug, Serialize, Deserialize)]
struct WireError {
    code: String,
    reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    address: Option<String>,
}

impl From<&RailError> for WireError {
    fn from(e: &RailError) -> Self {
        let (reason, address) = match e {
            RailError::Rejected { reason }
            | RailError::Unknown { reason }
            | RailError::Unavailable { reason } => (reason.clone(), None),
            RailError::InvalidAddress { address, reason } => {
                (reason.clone(), Some(address.clone()))
            }
            RailError::Unsupported { what } => (what.clone(), None),
            other => (other.to_string(), None),
        };
        WireError {
            code: e.code().to_string(),
            reason,
            address,
        }
    }
}

impl From<WireError> for RailError {
    /// Back to the variant its code names. An unknown code (a newer chain process) is
    /// `Unknown`: never a `Rejected`, which would prove that nothing was sent.
    fn from(w: WireError) -> Self {
        let reason = w.reason;
        match w.code.as_str() {
            "RAIL_REJECTED" => RailError::Rejected { reason },
            "RAIL_UNAVAILABLE" => RailError::Unavailable { reason },
            "INVALID_ADDRESS" => RailError::InvalidAddress {
                address: w.address.unwrap_or_default(),
                reason,
            },
            "UNSUPPORTED" => RailError::Unsupported { what: reason },
            "SUBMISSION_UNKNOWN" => RailError::Unknown { reason },
            other => RailError::Unknown {
                reason: format!("{other}: {reason}"),
            },
        }
    }
}

/// One hosted chain, as `GET /v1/chains` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostedChain {
    /// The rail name the chain is reached by (`polygon`, `tron`, `solana`, `evm-<id>`).
    pub name: String,
    /// Which chain it imitates.
    pub profile: SimProfile,
    /// Its confirmation depth and auto-mining switch.
    pub config: SimConfig,
}

#[derive(Serialize, Deserialize)]
struct PurposeReq {
    purpose: KeyPurpose,
}

#[derive(Serialize, Deserialize)]
struct BalanceReq {
    address: ChainAddress,
    token: Token,
}

#[derive(Serialize, Deserialize)]
struct StatusReq {
    payment_id: String,
}

#[derive(Serialize, Deserialize)]
struct ScanReq {
    cursor: String,
    watched: Vec<ChainAddress>,
    limit: usize,
}

#[derive(Serialize, Deserialize)]
struct TransferReq {
    /// `None`: a mint from the faucet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<ChainAddress>,
    to: ChainAddress,
    token: Token,
    amount: Micros,
}

#[derive(Serialize, Deserialize)]
struct MineReq {
    blocks: u64,
}

#[derive(Serialize, Deserialize)]
struct FaultReq {
    fault: Fault,
}

/// Which readiness switch a `switch` call flips.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Switch {
    RpcDown,
    SponsorFunded,
    Monitoring,
}

#[derive(Serialize, Deserialize)]
struct SwitchReq {
    switch: Switch,
    on: bool,
}

/// What `GET /v1/chains/{name}/info` answers: the chain's counters.
#[derive(Serialize, Deserialize)]
struct InfoReply {
    head: u64,
    submit_count: usize,
    faucet: ChainAddress,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rail_error_survives_the_wire_and_unknown_codes_are_never_rejections() {
        let errors = [
            RailError::Rejected { reason: "r".into() },
            RailError::Unknown { reason: "u".into() },
            RailError::Unavailable { reason: "a".into() },
            RailError::InvalidAddress {
                address: "0xzz".into(),
                reason: "bad".into(),
            },
            RailError::Unsupported { what: "w".into() },
        ];
        for e in errors {
            let json = serde_json::to_string(&WireError::from(&e)).unwrap();
            let back: WireError = serde_json::from_str(&json).unwrap();
            assert_eq!(RailError::from(back), e);
        }
        let future = WireError {
            code: "SOMETHING_NEW".into(),
            reason: "x".into(),
            address: None,
        };
        assert_eq!(RailError::from(future).code(), "SUBMISSION_UNKNOWN");
    }
}
