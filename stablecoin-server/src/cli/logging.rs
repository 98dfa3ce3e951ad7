//! The binary's log output: every line goes out with its URLs redacted.
//!
//! Why at the writer: a URL reaches a log line from many places (a rail's readiness
//! reasons, a dependency's error text, `reqwest`'s "error sending request for url (…)"),
//! and the URLs operators configure are secrets: RPC providers, rate feeds and bundlers
//! put their API keys in the path, the query or the user-info. Redacting each call site
//! would miss the next one; redacting the formatted line cannot. The cost is that no log
//! line names a URL at all, the operator's own included (`<redacted url>`); the
//! configuration says which node is meant.

use crate::config::{Config, LogFormat};
use stablecoin_core::domain::redact;
use std::io::Write;
use tracing_subscriber::fmt::MakeWriter;

/// Installs the global subscriber: `config.log.filter` (or `default_filter`), text or
/// JSON lines on stderr, URLs redacted.
pub(super) fn init(config: &Config, default_filter: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_new(if config.log.filter.is_empty() {
        default_filter
    } else {
        &config.log.filter
    })
    .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(RedactedStderr);
    let _ = match config.log.format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

/// Prints a fatal error on stderr, its URLs redacted (`error: …`).
pub(super) fn print_error(e: impl std::fmt::Display) {
    eprintln!("error: {}", redact::urls(&e.to_string()));
}

/// Makes one [`RedactedLine`] per event.
struct RedactedStderr;

impl<'a> MakeWriter<'a> for RedactedStderr {
    type Writer = RedactedLine;
    fn make_writer(&'a self) -> RedactedLine {
        RedactedLine(Vec::with_capacity(256))
    }
}

/// One formatted event, buffered whole (the formatter writes an event into one writer
/// and drops it), then written to stderr redacted when dropped: a URL split across two
/// writes is still seen whole.
struct RedactedLine(Vec<u8>);

impl Write for RedactedLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactedLine {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let line = redact::urls(&String::from_utf8_lossy(&self.0));
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_written_once_with_its_urls_redacted() {
        let mut line = RedactedStderr.make_writer();
        line.write_all(b"reasons=rpc: error sending request for url (http://node")
            .unwrap();
        line.write_all(b".example/?api-key=K) ok\n").unwrap();
        assert_eq!(
            redact::urls(&String::from_utf8_lossy(&line.0)),
            "reasons=rpc: error sending request for url (<redacted url>) ok\n"
        );
    }
}
