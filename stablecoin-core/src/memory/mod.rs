//! In-memory adapters of every port.
