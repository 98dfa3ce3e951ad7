//! Removing internal detail from text that leaves the service.
//!
//! A rail's readiness reasons and a dependency's error text are written for operators,
//! and often carry the URL of the node they talked to; providers put API keys in those
//! URLs (`https://mainnet.example/v3/<key>`). Whatever reaches a client (an error message,
//! the public `/health/ready`) goes through [`urls`] first.

/// `text` with every `scheme://...` URL replaced by `<redacted url>`.
pub fn urls(text: &str) -> String {
    const END: &[char] = &[
        ' ', '\t', '\n', '\r', ')', '(', '"', '\'', '<', '>', ',', ';', '`',
    ];
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme: letters, digits, '+', '-', '.' right before "://".
        let head = &rest[..at];
        let scheme_len = head
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            .map(char::len_utf8)
            .sum::<usize>();
        if scheme_len == 0 {
            out.push_str(&rest[..at + 3]);
            rest = &rest[at + 3..];
            continue;
        }
        out.push_str(&head[..head.len() - scheme_len]);
        out.push_str("<redacted url>");
        let tail = &rest[at + 3..];
        let end = tail.find(END).unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_removed_and_the_rest_kept() {
        assert_eq!(
            urls("rpc https://polygon.example/v3/SECRETKEY unreachable"),
            "rpc <redacted url> unreachable"
        );
        assert_eq!(
            urls("error sending request for url (http://user:pw@10.0.0.1:8545/)"),
            "error sending request for url (<redacted url>)"
        );
        assert_eq!(
            urls("a wss://x/y, then postgres://u:p@db/x; done"),
            "a <redacted url>, then <redacted url>; done"
        );
        assert_eq!(urls("plain :// text"), "plain :// text");
        assert_eq!(
            urls("INBOUND_READY: sponsor balance low"),
            "INBOUND_READY: sponsor balance low"
        );
    }
}
