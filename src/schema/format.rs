//! The `format` keyword for strings: `date-time`, `date`, `time` (RFC 3339), `uri`
//! (RFC 3986 absolute URI), `email` (RFC 5321 mailbox, without comments or quoted local
//! parts), `uuid` (RFC 4122 text form), `ipv4`, `ipv6`, `hostname`, when the schema asserts
//! `format` (see [`StringSpec::format_asserted`](super::StringSpec::format_asserted)).
//! Other format names are annotations and accept every string, as JSON Schema allows.

/// The format names [`check_format`] enforces.
pub const KNOWN_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "uri",
    "email",
    "uuid",
    "ipv4",
    "ipv6",
    "hostname",
];

/// Checks `s` against the format `name`; `Err` says what is wrong.
pub(crate) fn check_format(name: &str, s: &str) -> Result<(), &'static str> {
    match name {
        "date-time" => date_time(s),
        "date" => date(s),
        "time" => time(s),
        "uri" => uri(s),
        "email" => email(s),
        "uuid" => uuid(s),
        "ipv4" => s
            .parse::<std::net::Ipv4Addr>()
            .map(drop)
            .map_err(|_| "expected four decimal octets like 192.0.2.1"),
        "ipv6" => s
            .parse::<std::net::Ipv6Addr>()
            .map(drop)
            .map_err(|_| "expected an IPv6 address like 2001:db8::1"),
        "hostname" => hostname(s),
        _ => Ok(()),
    }
}

fn digits(s: &str, n: usize) -> Option<u32> {
    if s.len() == n && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

fn date(s: &str) -> Result<(), &'static str> {
    const WHY: &str = "expected a full-date like 2024-02-29";
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return Err(WHY);
    }
    let (Some(y), Some(m), Some(d)) = (
        digits(&s[0..4], 4),
        digits(&s[5..7], 2),
        digits(&s[8..10], 2),
    ) else {
        return Err(WHY);
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err("month out of range"),
    };
    if d == 0 || d > days {
        return Err("day out of range for the month");
    }
    Ok(())
}

fn time(s: &str) -> Result<(), &'static str> {
    const WHY: &str = "expected a time with offset like 23:59:59Z or 08:30:00.5+02:00";
    let b = s.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' {
        return Err(WHY);
    }
    let (Some(h), Some(mi), Some(sec)) = (
        digits(&s[0..2], 2),
        digits(&s[3..5], 2),
        digits(&s[6..8], 2),
    ) else {
        return Err(WHY);
    };
    if h > 23 || mi > 59 || sec > 60 {
        return Err("time field out of range");
    }
    let mut rest = &s[8..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return Err(WHY);
        }
        rest = &frac[n..];
    }
    match rest {
        "Z" | "z" => Ok(()),
        _ => {
            let b = rest.as_bytes();
            if b.len() == 6 && (b[0] == b'+' || b[0] == b'-') && b[3] == b':' {
                match (digits(&rest[1..3], 2), digits(&rest[4..6], 2)) {
                    (Some(oh), Some(om)) if oh <= 23 && om <= 59 => Ok(()),
                    _ => Err("offset out of range"),
                }
            } else {
                Err(WHY)
            }
        }
    }
}

fn date_time(s: &str) -> Result<(), &'static str> {
    let Some(t) = s.find(['T', 't']) else {
        return Err("expected a date-time like 2024-02-29T23:59:59Z");
    };
    date(&s[..t])?;
    time(&s[t + 1..])
}

fn uri(s: &str) -> Result<(), &'static str> {
    let Some(colon) = s.find(':') else {
        return Err("expected an absolute URI with a scheme, like https://example.com/");
    };
    let scheme = &s[..colon];
    let mut chars = scheme.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return Err("the scheme must start with a letter");
    }
    let rest = &s[colon + 1..];
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return Err("bad percent-encoding");
            }
            i += 3;
            continue;
        }
        let allowed = c.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&c);
        if !allowed {
            return Err("contains a character that must be percent-encoded");
        }
        i += 1;
    }
    Ok(())
}

fn email(s: &str) -> Result<(), &'static str> {
    let Some(at) = s.rfind('@') else {
        return Err("expected local@domain");
    };
    let (local, domain) = (&s[..at], &s[at + 1..]);
    if local.is_empty() || local.len() > 64 {
        return Err("the local part must have 1 to 64 characters");
    }
    let atext = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c);
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return Err("dots in the local part must separate words");
    }
    if !local.chars().all(|c| atext(c) || c == '.') {
        return Err("the local part has a character email does not allow unquoted");
    }
    if let Some(lit) = domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        let ok = lit.parse::<std::net::Ipv4Addr>().is_ok()
            || lit
                .strip_prefix("IPv6:")
                .is_some_and(|v| v.parse::<std::net::Ipv6Addr>().is_ok());
        return if ok {
            Ok(())
        } else {
            Err("bad address literal")
        };
    }
    hostname(domain)
}

fn hostname(s: &str) -> Result<(), &'static str> {
    let s = s.strip_suffix('.').unwrap_or(s);
    if s.is_empty() || s.len() > 253 {
        return Err("a hostname has 1 to 253 characters");
    }
    for label in s.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err("each label has 1 to 63 characters");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err("a label cannot start or end with '-'");
        }
        if !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err("labels use letters, digits and '-'");
        }
    }
    Ok(())
}

fn uuid(s: &str) -> Result<(), &'static str> {
    let b = s.as_bytes();
    let ok = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    if ok {
        Ok(())
    } else {
        Err("expected 8-4-4-4-12 hexadecimal digits")
    }
}

#[cfg(test)]
mod tests {
    use super::check_format;

    #[test]
    fn formats_accept_and_refuse() {
        assert!(check_format("date-time", "2024-02-29T23:59:59.123+01:00").is_ok());
        assert!(check_format("date-time", "2023-02-29T00:00:00Z").is_err());
        assert!(check_format("date", "2024-13-01").is_err());
        assert!(check_format("uri", "https://example.com/a%20b?x=1#f").is_ok());
        assert!(check_format("uri", "example.com").is_err());
        assert!(check_format("uri", "http://a b").is_err());
        assert!(check_format("uri", "http://x/%zz").is_err());
        assert!(check_format("uri", "http://x/%").is_err());
        assert!(check_format("email", "a.b+c@example.org").is_ok());
        assert!(check_format("email", "a..b@example.org").is_err());
        assert!(check_format("uuid", "123e4567-e89b-12d3-a456-426614174000").is_ok());
        assert!(check_format("uuid", "123e4567e89b12d3a456426614174000").is_err());
        assert!(check_format("made-up", "anything").is_ok());
    }
}
