//! Sanctions screening adapters of the core `Screening` port (issue #51): the OFAC SDN
//! list read from its published data file ([`ofac`], feature `sanctions-list`) and
//! Chainalysis's free sanctions API ([`chainalysis`], feature `chainalysis`).

#[cfg(feature = "chainalysis")]
pub mod chainalysis;
#[cfg(feature = "sanctions-list")]
pub mod ofac;
