//! The queue annotation `volcano.sh/nodegroup-resource-limits`: a JSON map
//! from node-group name to a Kubernetes `ResourceList`, e.g.
//! `{"group1": {"cpu": "3", "memory": "8Gi"}}`.
//!
//! Volcano decodes it with `encoding/json` into `map[string]v1.ResourceList`
//! and fails the whole queue on any error. This module accepts exactly what
//! that decoding accepts, without a JSON dependency:
//!
//! * the document is `null` (no limits) or an object; a group's value is
//!   `null` (a limit naming nothing) or an object; a quantity is a string, a
//!   number, or `null` (zero), anything else is an error;
//! * a quantity string is taken verbatim between its quotes (as
//!   `Quantity.UnmarshalJSON` does: escape sequences are not decoded, so
//!   they make the quantity invalid), trimmed, and parsed with Kubernetes'
//!   quantity grammar;
//! * a repeated key keeps its last value; trailing text is an error.
//!
//! Amounts are converted to Volcano's internal units: `cpu` and every scalar
//! in milli-units, `memory` and `pods` in whole units, rounded up as
//! `MilliValue()` / `Value()` round. `count/*` names are object-count quotas
//! that Volcano's `NewResource` drops, so they are dropped here too.

/// One group's limit: `(resource name, amount in internal units)`.
pub type GroupLimit = Vec<(String, f64)>;

/// Parses the annotation's text. `Ok` holds `(group, limit)` pairs in first-
/// appearance order (a repeated group keeps its last value).
pub fn parse(text: &str) -> Result<Vec<(String, GroupLimit)>, String> {
    let mut p = Parser { b: text.as_bytes(), pos: 0 };
    p.ws();
    let mut groups: Vec<(String, GroupLimit)> = Vec::new();
    if !p.null() {
        p.object(|p, group| {
            let mut limit: GroupLimit = Vec::new();
            if !p.null() {
                p.object(|p, name| {
                    let amount = p.quantity(&name)?;
                    if !name.starts_with("count/") {
                        upsert(&mut limit, name, amount);
                    }
                    Ok(())
                })?;
            }
            upsert(&mut groups, group, limit);
            Ok(())
        })?;
    }
    p.ws();
    if p.pos < p.b.len() {
        return Err(p.err("unexpected text after the JSON value"));
    }
    Ok(groups)
}

fn upsert<T>(v: &mut Vec<(String, T)>, key: String, value: T) {
    match v.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => v.push((key, value)),
    }
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, what: &str) -> String {
        format!("{what} at byte {}", self.pos)
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &str) -> bool {
        if self.b[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn null(&mut self) -> bool {
        self.literal("null")
    }

    /// `{ "key": value, ... }`, calling `member` with the parser positioned
    /// at each value (whitespace skipped).
    fn object(&mut self, mut member: impl FnMut(&mut Self, String) -> Result<(), String>) -> Result<(), String> {
        if !self.eat(b'{') {
            return Err(self.err("expected a JSON object"));
        }
        self.ws();
        if self.eat(b'}') {
            return Ok(());
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a string key"));
            }
            let (key, _) = self.string()?;
            self.ws();
            if !self.eat(b':') {
                return Err(self.err("expected ':'"));
            }
            self.ws();
            member(self, key)?;
            self.ws();
            if self.eat(b',') {
                self.ws();
                continue;
            }
            if self.eat(b'}') {
                return Ok(());
            }
            return Err(self.err("expected ',' or '}'"));
        }
    }

    /// A JSON string starting at `"`: its decoded text and its raw text
    /// between the quotes.
    fn string(&mut self) -> Result<(String, &'a str), String> {
        let start = self.pos + 1;
        self.pos = start;
        let mut out = String::new();
        loop {
            let run = self.pos;
            while matches!(self.peek(), Some(c) if c != b'"' && c != b'\\' && c >= 0x20) {
                self.pos += 1;
            }
            out.push_str(self.text(run, self.pos));
            match self.peek() {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    let raw = self.text(start, self.pos);
                    self.pos += 1;
                    return Ok((out, raw));
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let c = self.peek().ok_or_else(|| self.err("unterminated string"))?;
                    self.pos += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode_escape()?),
                        _ => return Err(self.err("invalid escape in string")),
                    }
                }
                Some(_) => return Err(self.err("control character in string")),
            }
        }
    }

    /// The text of `b[from..to]`; both ends sit on ASCII bytes of a `&str`.
    fn text(&self, from: usize, to: usize) -> &'a str {
        let b: &'a [u8] = self.b;
        std::str::from_utf8(&b[from..to]).unwrap_or_default()
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.b.get(self.pos..self.pos + 4).ok_or_else(|| self.err("short \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.err("invalid \\u escape"))?;
        let v = u32::from_str_radix(text, 16).map_err(|_| self.err("invalid \\u escape"))?;
        if !text.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(self.err("invalid \\u escape"));
        }
        self.pos += 4;
        Ok(v)
    }

    /// After `\u`: one code point; a lone surrogate becomes U+FFFD, as in Go.
    fn unicode_escape(&mut self) -> Result<char, String> {
        let hi = self.hex4()?;
        if (0xD800..0xDC00).contains(&hi) && self.b[self.pos..].starts_with(b"\\u") {
            let save = self.pos;
            self.pos += 2;
            let lo = self.hex4()?;
            if (0xDC00..0xE000).contains(&lo) {
                let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                return Ok(char::from_u32(c).unwrap_or('\u{FFFD}'));
            }
            self.pos = save;
        }
        Ok(char::from_u32(hi).unwrap_or('\u{FFFD}'))
    }

    /// A JSON number token (RFC 8259 grammar); returns its text.
    fn number(&mut self) -> Result<&'a str, String> {
        let start = self.pos;
        self.eat(b'-');
        let digits = |p: &mut Self| {
            let from = p.pos;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.pos += 1;
            }
            p.pos - from
        };
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(self.err("invalid number")),
        }
        if self.eat(b'.') && digits(self) == 0 {
            return Err(self.err("invalid number"));
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if digits(self) == 0 {
                return Err(self.err("invalid number"));
            }
        }
        Ok(self.text(start, self.pos))
    }

    /// A quantity value of resource `name`, in internal units.
    fn quantity(&mut self, name: &str) -> Result<f64, String> {
        let at = self.pos;
        if self.null() {
            return Ok(0.0);
        }
        let text = match self.peek() {
            Some(b'"') => self.string()?.1.to_string(),
            Some(b'-' | b'0'..=b'9') => self.number()?.to_string(),
            _ => return Err(self.err(&format!("{name}: expected a quantity (string or number)"))),
        };
        let q = Quantity::parse(text.trim()).map_err(|e| format!("{name}: {e} at byte {at}"))?;
        Ok(q.internal(name))
    }
}

/// A parsed Kubernetes quantity: `±digits · 10^exp10 · 2^exp2`.
#[derive(Debug, PartialEq)]
pub struct Quantity {
    negative: bool,
    /// Integer and fraction digits together, leading zeros removed.
    digits: String,
    exp10: i32,
    exp2: u32,
}

impl Quantity {
    /// Kubernetes' grammar: `[+-] digits [. digits] suffix`, the suffix one
    /// of `n u m "" k M G T P E`, `Ki Mi Gi Ti Pi Ei`, or `e`/`E` and a
    /// signed exponent. Like Kubernetes, `"+"`, `"-"` and `"."` read as zero.
    pub fn parse(s: &str) -> Result<Quantity, String> {
        let bad = || format!("invalid quantity {s:?}");
        if s.is_empty() {
            return Err(bad());
        }
        let b = s.as_bytes();
        let mut pos = 0;
        let negative = b[0] == b'-';
        if matches!(b[0], b'+' | b'-') {
            pos += 1;
        }
        let run = |pos: &mut usize, ok: fn(u8) -> bool| {
            let from = *pos;
            while *pos < b.len() && ok(b[*pos]) {
                *pos += 1;
            }
            &s[from..*pos]
        };
        let int = run(&mut pos, |c| c.is_ascii_digit());
        let mut frac = "";
        if pos < b.len() && b[pos] == b'.' {
            pos += 1;
            frac = run(&mut pos, |c| c.is_ascii_digit());
        }
        let suffix_start = pos;
        run(&mut pos, |c| b"eEinumkKMGTP".contains(&c));
        if pos < b.len() && matches!(b[pos], b'+' | b'-') {
            pos += 1;
        }
        run(&mut pos, |c| c.is_ascii_digit());
        if pos < b.len() {
            return Err(bad());
        }
        let (exp10, exp2) = match &s[suffix_start..] {
            "" => (0, 0),
            "n" => (-9, 0),
            "u" => (-6, 0),
            "m" => (-3, 0),
            "k" => (3, 0),
            "M" => (6, 0),
            "G" => (9, 0),
            "T" => (12, 0),
            "P" => (15, 0),
            "E" => (18, 0),
            "Ki" => (0, 10),
            "Mi" => (0, 20),
            "Gi" => (0, 30),
            "Ti" => (0, 40),
            "Pi" => (0, 50),
            "Ei" => (0, 60),
            suf if suf.len() > 1 && suf.starts_with(['e', 'E']) => {
                (suf[1..].parse::<i32>().map_err(|_| bad())?.clamp(-1000, 1000), 0)
            }
            _ => return Err(bad()),
        };
        let digits = format!("{int}{frac}").trim_start_matches('0').to_string();
        Ok(Quantity { negative, digits, exp10: exp10 - frac.len() as i32, exp2 })
    }

    /// The amount scaled by `10^scale`, rounded up (away from zero), as
    /// Kubernetes' `ScaledValue` rounds: `scale` 3 is `MilliValue()`.
    pub fn scaled(&self, scale: i32) -> f64 {
        let magnitude = self.exact(scale).unwrap_or_else(|| {
            let d: f64 = self.digits.parse().unwrap_or(0.0);
            let v = (d * 2f64.powi(self.exp2 as i32) * 10f64.powi(self.exp10 + scale)).ceil();
            // Kubernetes rounds any non-zero amount up to at least one nano.
            v.max(1.0)
        });
        if self.negative {
            -magnitude
        } else {
            magnitude
        }
    }

    /// `scaled` in integers, or `None` when it does not fit.
    fn exact(&self, scale: i32) -> Option<f64> {
        if self.digits.is_empty() {
            return Some(0.0);
        }
        if self.digits.len() > 38 {
            return None;
        }
        let n = self.digits.parse::<u128>().ok()?.checked_mul(1u128.checked_shl(self.exp2)?)?;
        let e = self.exp10 + scale;
        let v = if e >= 0 {
            n.checked_mul(10u128.checked_pow(e as u32)?)?
        } else {
            let d = 10u128.checked_pow(e.unsigned_abs())?;
            n.div_ceil(d)
        };
        Some(v as f64)
    }

    /// In Volcano's unit for resource `name`: `memory` and `pods` whole,
    /// everything else (cpu, scalars) in milli-units.
    pub fn internal(&self, name: &str) -> f64 {
        match name {
            "memory" | "pods" => self.scaled(0),
            _ => self.scaled(3),
        }
    }
}
