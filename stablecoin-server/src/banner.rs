//! The start-up banner: where the server listens, what is real and what is simulated,
//! and, on the demo tenant's first start, its keys.

use crate::app::App;
use stablecoin_core::ports::RailId;
use std::net::SocketAddr;

impl App {
    /// The start-up banner: where the server listens and, on the demo tenant's first
    /// start, its keys and a curl line that works as printed. Printed to stdout (not the
    /// log): keys are shown once and never logged.
    pub fn banner(&self, addr: SocketAddr) -> String {
        let host = if addr.ip().is_unspecified() {
            SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), addr.port())
        } else {
            addr
        };
        let base = format!("http://{host}");
        let names = |ids: &mut dyn Iterator<Item = &RailId>| {
            ids.map(|r| r.name()).collect::<Vec<_>>().join(", ")
        };
        let simulated = self.state.simulated_rails();
        let mut rails = Vec::new();
        if !simulated.is_empty() {
            rails.push(format!("simulated {}", names(&mut simulated.iter())));
            if let Some(url) = &self.state.config.sim.chain_url {
                rails.push(format!("shared simulated chain at {url}"));
            }
        }
        if !self.state.live_rails.is_empty() {
            rails.push(format!("real {}", names(&mut self.state.live_rails.keys())));
        }
        let mut s = format!(
            "stablecoin-server listening on {base} (storage: {}, rails: {})\n  API description: {base}/openapi.json   health: {base}/health/ready   metrics: {base}/metrics\n",
            self.state.storage.kind,
            rails.join("; "),
        );
        let stand_ins = self.state.config.stand_ins();
        s.push_str(&format!("  mode: {}", self.state.config.mode.as_str()));
        if !stand_ins.is_empty() || !simulated.is_empty() {
            s.push_str(" (simulated or in-memory parts: ");
            if !simulated.is_empty() {
                s.push_str(&format!("rails {}; ", names(&mut simulated.iter())));
            }
            s.push_str(&stand_ins.join("; "));
            s.push(')');
        }
        s.push('\n');
        for l in self.state.live_rails.values() {
            // What the sponsor key does on this chain, so the operator knows what to fund.
            let role = match l.rail {
                RailId::Solana => "fee and rent payer; needs SOL",
                RailId::Tron => "activations, Energy and Bandwidth; needs TRX and stake",
                _ => "paymaster signer, bundler; needs native coin",
            };
            s.push_str(&format!(
                "  {}: sponsor ({role}) {}, treasury account (pays fundings) {}\n",
                l.rail.name(),
                l.sponsor,
                l.treasury
            ));
        }
        if let Some(d) = &self.demo {
            match (&d.live_key, &d.test_key) {
                (Some(live), Some(test)) => {
                    s.push_str(&format!(
                        "\nDemo tenant \"{}\" ({}) with {} USDC and {} USDT in its treasury.\nIts API keys are shown only now:\n  live key: {live}\n  test key: {test}\n\nTry it:\n  curl -s -X POST {base}/v1/users/provision -H 'X-API-Key: {live}' -H 'Content-Type: application/json' -d '{{\"phone_number\":\"+2250700000001\"}}'\n",
                        d.name,
                        d.tenant,
                        self.state.config.demo.treasury_credit,
                        self.state.config.demo.treasury_credit,
                    ));
                    if !self.state.storage.durable {
                        s.push_str("(memory storage: the demo tenant and everything else is recreated at each start)\n");
                    }
                }
                _ => s.push_str(&format!(
                    "\nDemo tenant \"{}\" ({}) reused; its keys were shown at its first start.\nIssue a new one with: stablecoin-server key issue --tenant {} --mode test\n",
                    d.name, d.tenant, d.tenant
                )),
            }
        }
        s
    }
}
