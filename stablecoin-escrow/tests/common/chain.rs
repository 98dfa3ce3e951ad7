//! The TRON rail an escrow world runs on, with the test controls the suites use, over
//! either backend:
//! - `Sim`: the simulated TRON rail ([`SimRail`]), deterministic and instant;
//! - `Tron`: the real [`TronRail`] over HTTP against the local TRON node
//!   (the `stablecoin-tron-node` crate), the token executed as EVM bytecode on Anvil
//!   when an anvil binary is present (required when `TRON_REQUIRE_ANVIL` is set, as in
//!   CI), the node's native TRC-20 ledger otherwise. The node seals a block on every
//!   head read, so the chain advances as the workers poll it, as the simulated rail's
//!   auto-mining does.
//!
//! The controls are synchronous on both (the node queues them and applies them before
//! its next answer), so a suite runs unchanged on either.

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::MemoryStore;
use stablecoin_core::ports::{ChainAddress, Clock, Rail, RailError, Signer, StoreJournal};
use stablecoin_rails::tron::{HttpTronApi, TronAddress, TronConfig, TronRail};
use stablecoin_rails::{Fault, SimConfig, SimProfile, SimRail};
use stablecoin_tron_node::{self as testkit, Controls, NodeConfig, TronNode};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which TRON rail a test crate runs its suite on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sim,
    Tron,
}

const TRX: u64 = 1_000_000;
const BANDWIDTH: i32 = 0;
const ENERGY: i32 = 1;
/// TriggerSmartContract.
const TRIGGER: i32 = 31;

enum Inner {
    Sim(Arc<SimRail>),
    Tron {
        node: Box<TronNode>,
        controls: Arc<Controls>,
        sponsor: [u8; 21],
        /// TRX taken from the sponsor while it is "unfunded".
        withheld: Arc<Mutex<u64>>,
        usdt: [u8; 21],
        usdc: [u8; 21],
    },
}

pub struct TestChain {
    rail: Arc<dyn Rail>,
    inner: Inner,
}

impl TestChain {
    pub fn sim(signer: Arc<dyn Signer>) -> TestChain {
        let sim = Arc::new(SimRail::new(
            SimProfile::Tron,
            signer,
            SimConfig::for_profile(SimProfile::Tron),
        ));
        TestChain {
            rail: sim.clone(),
            inner: Inner::Sim(sim),
        }
    }

    /// The real rail on a fresh local node, its payment journal in `store`, its sponsor
    /// funded (TRX for activations, Stake 2.0 Energy and Bandwidth to delegate).
    pub async fn tron(
        signer: Arc<dyn Signer>,
        store: Arc<MemoryStore>,
        clock: Arc<dyn Clock>,
    ) -> TestChain {
        let node = TronNode::start(NodeConfig {
            backend: testkit::backend_from_env(),
            block_per_head_read: true,
            ..NodeConfig::default()
        })
        .await;
        let (usdt, usdc) = {
            let c = node.chain().await;
            (c.config.usdt_contract, c.config.usdc_contract)
        };
        let api = Arc::new(HttpTronApi::new(node.url(), Duration::from_secs(5)).unwrap());
        let mut config = TronConfig::new(TronAddress::from_bytes(&usdt).unwrap());
        config.usdc_contract = Some(TronAddress::from_bytes(&usdc).unwrap());
        config.poll_interval = Duration::from_millis(2);
        config.inclusion_timeout = Duration::from_secs(5);
        let rail = TronRail::new(api, signer, config)
            .await
            .unwrap()
            .with_journal(Arc::new(StoreJournal::new(store, clock)));
        let sponsor = *rail.sponsor_address().as_bytes();
        node.create_account(&sponsor, 1_000 * TRX).await;
        node.freeze(&sponsor, ENERGY, 100_000 * TRX).await;
        node.freeze(&sponsor, BANDWIDTH, 10_000 * TRX).await;
        TestChain {
            rail: Arc::new(rail),
            inner: Inner::Tron {
                controls: node.controls(),
                node: Box::new(node),
                sponsor,
                withheld: Arc::default(),
                usdt,
                usdc,
            },
        }
    }

    /// An outside deposit of `amount` to `to` (executes in the next block).
    pub fn mint(&self, to: &ChainAddress, token: Token, amount: Micros) -> Result<(), RailError> {
        match &self.inner {
            Inner::Sim(sim) => sim.mint(to, token, amount).map(drop),
            Inner::Tron {
                controls,
                usdt,
                usdc,
                ..
            } => {
                let to = stablecoin_rails::tron::rail::parse_address(to)?;
                let contract = match token {
                    Token::Usdt => *usdt,
                    Token::Usdc => *usdc,
                };
                controls.mint(contract, *to.as_bytes(), amount.get() as u128);
                Ok(())
            }
        }
    }

    pub fn mine(&self, n: u64) {
        match &self.inner {
            Inner::Sim(sim) => {
                sim.mine(n);
            }
            Inner::Tron { controls, .. } => controls.mine(n),
        }
    }

    /// A fault in the next payout. On the node: `Revert` makes the token revert the next
    /// TRC-20 call, `LostResponse` loses the answer to its broadcast after the node
    /// accepted it, `Drop` loses the broadcast before it reaches the node (the rail has
    /// journaled the transaction: it is Pending until its expiry, then Failed). The
    /// simulator's other faults have no node counterpart here.
    pub fn inject(&self, fault: Fault) {
        match &self.inner {
            Inner::Sim(sim) => sim.inject(fault),
            Inner::Tron { controls, .. } => match fault {
                Fault::Revert => controls.revert_next_trigger(),
                Fault::LostResponse => controls.lose_next_broadcast_response(TRIGGER),
                Fault::Drop => controls.drop_next_broadcast(TRIGGER),
                other => panic!("fault {other:?} is not modelled on the TRON node"),
            },
        }
    }

    /// Payout transactions the chain accepted (reverted ones count, lost answers count,
    /// transactions that never reached the chain do not).
    pub fn submit_count(&self) -> usize {
        match &self.inner {
            Inner::Sim(sim) => sim.submit_count(),
            Inner::Tron { controls, .. } => controls.triggers_accepted(),
        }
    }

    /// `false`: the sponsor cannot pay for sends (on the node: its TRX is withheld, below
    /// the activation reserve), so readiness is INBOUND_READY.
    pub fn set_sponsor_funded(&self, funded: bool) {
        match &self.inner {
            Inner::Sim(sim) => sim.set_sponsor_funded(funded),
            Inner::Tron {
                controls,
                sponsor,
                withheld,
                ..
            } => {
                let (sponsor, withheld) = (*sponsor, withheld.clone());
                controls.edit(move |c| {
                    let account = c.accounts.entry(sponsor).or_default();
                    let mut held = withheld.lock().unwrap();
                    if funded {
                        account.balance += std::mem::take(&mut *held);
                    } else {
                        *held += std::mem::take(&mut account.balance);
                    }
                });
            }
        }
    }

    /// `true`: every RPC call fails (readiness DEGRADED).
    pub fn set_rpc_down(&self, down: bool) {
        match &self.inner {
            Inner::Sim(sim) => sim.set_rpc_down(down),
            Inner::Tron { controls, .. } => controls.edit(move |c| c.down = down),
        }
    }

    /// The rail the engines drive (the simulated chain or the real TronRail).
    pub fn rail(&self) -> Arc<dyn Rail> {
        self.rail.clone()
    }

    /// The local node, on the TRON backend.
    pub fn node(&self) -> Option<&TronNode> {
        match &self.inner {
            Inner::Sim(_) => None,
            Inner::Tron { node, .. } => Some(node),
        }
    }
}

/// A test reads the chain through the rail the engines drive (`w.tron.balance(..)`);
/// the engines get that rail itself ([`TestChain::rail`]), not a wrapper that could
/// forget to forward a method.
impl std::ops::Deref for TestChain {
    type Target = dyn Rail;
    fn deref(&self) -> &(dyn Rail + 'static) {
        &*self.rail
    }
}
