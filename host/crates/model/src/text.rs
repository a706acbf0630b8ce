//! Text from outside (plugin logs, fault messages) made safe to print: one
//! line, bounded.

use std::borrow::Cow;

/// `s` on one line — control characters (a newline would forge a log line)
/// escaped — and cut at about `max` bytes, saying how much was cut. Text
/// that needs neither comes back borrowed: plugin reasons are on a hot path.
pub fn one_line(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max && !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().min(max) + 32);
    for (i, c) in s.char_indices() {
        if out.len() >= max {
            out.push_str(&format!("… ({} more bytes)", s.len() - i));
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn one_bounded_line() {
        assert_eq!(one_line("fine", 100), "fine");
        assert_eq!(one_line("a\nERROR forged", 100), "a\\nERROR forged");
        assert_eq!(one_line("tab\there\r\u{1b}[31m", 100), "tab\\there\\r\\u{1b}[31m");
        let long = "x".repeat(50 << 20);
        let cut = one_line(&long, 1000);
        assert!(cut.len() < 1100 && cut.ends_with(&format!("… ({} more bytes)", (50 << 20) - 1000)), "{}", cut.len());
        assert_eq!(one_line("ééé", 2), "é… (4 more bytes)");
    }
}
