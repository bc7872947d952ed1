//! Newtypes for addresses and units, so a logical page can never be passed where a
//! physical one is expected (DESIGN.md rule 1).
//!
//! Addresses are stored as `u32`: tables indexed by them are flat arrays sized from the
//! geometry, and halving their width halves the memory a 1 TiB device needs. The
//! geometry builder refuses a device with more than `u32::MAX - 1` pages (16 TiB at
//! 4 KiB pages), so every address fits.

use std::fmt;

macro_rules! address {
    ($(#[$doc:meta])* $name:ident, $short:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u32);

        impl $name {
            /// The address as an index into a flat table.
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($short, "{}"), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

address!(
    /// Logical page number: the host's address space in pages.
    Lpn,
    "lpn"
);
address!(
    /// Physical page number: `block * pages_per_block + offset`.
    Ppn,
    "ppn"
);
address!(
    /// Logical block number: `lpn / pages_per_block`.
    Lbn,
    "lbn"
);
address!(
    /// Physical block number.
    Pbn,
    "pbn"
);

/// Simulated time or duration in nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Zero duration.
    pub const ZERO: Nanos = Nanos(0);

    /// From microseconds given as a decimal (the papers quote latencies in µs).
    pub fn from_us_f64(us: f64) -> Nanos {
        Nanos((us * 1000.0).round() as u64)
    }

    /// Saturating difference `self - earlier`.
    pub fn saturating_sub(self, earlier: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }
}

impl std::ops::Add for Nanos {
    type Output = Nanos;
    fn add(self, o: Nanos) -> Nanos {
        Nanos(self.0 + o.0)
    }
}

impl std::ops::AddAssign for Nanos {
    fn add_assign(&mut self, o: Nanos) {
        self.0 += o.0;
    }
}

impl std::ops::Mul<u64> for Nanos {
    type Output = Nanos;
    fn mul(self, n: u64) -> Nanos {
        Nanos(self.0 * n)
    }
}

impl fmt::Debug for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}

/// What a page holds, as far as ftlab cares: the LPN it was written for and the version
/// stamp of that write. Both live in the page's spare (OOB) area, which is what makes
/// the correctness oracle and spare-scan recovery possible.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct PageTag {
    /// The logical page this data belongs to.
    pub lpn: Lpn,
    /// Per-LPN write counter: 1 for the first write of the LPN, 2 for the second, ...
    pub version: u32,
}

impl PageTag {
    /// What the spare area of a page reads as when its program was cut short by a power
    /// loss, or its block's erase was ([`crate::flash::Flash::arm_power_cut`]): the ECC
    /// cannot correct it, so the page holds no LPN an FTL may trust. Recovery must skip
    /// such a page ([`PageTag::is_uncorrectable`]); a host read that reaches one fails
    /// the oracle.
    pub const UNCORRECTABLE: PageTag = PageTag {
        lpn: Lpn(u32::MAX - 15),
        version: u32::MAX,
    };

    /// Whether this is [`PageTag::UNCORRECTABLE`]: a torn page.
    #[inline]
    pub fn is_uncorrectable(&self) -> bool {
        *self == PageTag::UNCORRECTABLE
    }
}

/// One page of a write handed to a buffer or FTL.
pub type PageWrite = PageTag;

/// Parses a size like `64MiB`, `1GiB`, `512KiB`, `4096`, `1TiB`, `2GB` (decimal units
/// are accepted and mean powers of ten). Returns bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (expected e.g. 64MiB, 1GiB, 4096)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "p" | "pib" => 1 << 50,
        "e" | "eib" => 1 << 60,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "pb" => 1_000_000_000_000_000,
        "eb" => 1_000_000_000_000_000_000,
        other => {
            return Err(format!(
                "`{text}`: unknown size unit `{other}` (use B, KiB, MiB, GiB, TiB, PiB, EiB, \
                 KB, MB, GB, TB, PB, EB)"
            ))
        }
    };
    let bytes = value * mult as f64;
    // `u64::MAX as f64` rounds up to 2^64, so `>=` keeps 16 EiB itself out.
    if !bytes.is_finite() || bytes < 0.0 || bytes >= u64::MAX as f64 {
        return Err(format!(
            "`{text}` is out of range: sizes go up to 16 EiB minus one byte (2^64 - 1)"
        ));
    }
    Ok(bytes.round() as u64)
}

/// Formats bytes with a binary unit, e.g. `64 MiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{} {}", v as u64, UNITS[u])
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("1TiB").unwrap(), 1 << 40);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1.5KiB").unwrap(), 1536);
        assert_eq!(parse_size("2GB").unwrap(), 2_000_000_000);
        assert!(parse_size("12XB").is_err());
        assert_eq!(parse_size("1PiB").unwrap(), 1 << 50);
        assert_eq!(parse_size("15EiB").unwrap(), 15 << 60);
        let e = parse_size("16EiB").unwrap_err();
        assert!(e.contains("out of range") && e.contains("2^64 - 1"), "{e}");
        assert!(parse_size("abc").is_err());
    }

    #[test]
    fn sizes_format() {
        assert_eq!(format_size(64 << 20), "64 MiB");
        assert_eq!(format_size(1536), "1.50 KiB");
    }

    #[test]
    fn nanos_from_us() {
        assert_eq!(Nanos::from_us_f64(129.7), Nanos(129_700));
    }
}

/// A size in bytes, written as an integer or as a number with a unit (`16MiB`, see
/// [`parse_size`]). Shown with the largest binary unit that divides it exactly, so a
/// configuration echo reads back as it was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u32); 4] = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
        for (unit, shift) in UNITS {
            if self.0 != 0 && self.0.trailing_zeros() >= shift {
                return write!(f, "{}{unit}", self.0 >> shift);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl std::str::FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_size(s).map(ByteSize)
    }
}

impl serde::Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as 16MiB, 1GiB or a number of bytes")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom(format!("{v} is not a size (negative)")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ByteSize, E> {
                parse_size(v).map(ByteSize).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for ByteSize {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ByteSize".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": ["string", "integer"],
            "description": "a size: bytes, or a number with a unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB), e.g. \"16MiB\"",
            "pattern": "^[0-9.]+ *([kKmMgGtT]i?[bB]?|[bB])?$",
        })
    }
}

#[cfg(test)]
mod byte_size_tests {
    use super::ByteSize;

    #[test]
    fn shows_the_largest_exact_unit_and_reads_it_back() {
        for (text, shown) in [
            ("16MiB", "16MiB"),
            ("1.5GiB", "1536MiB"),
            ("4096", "4KiB"),
            ("100", "100B"),
            ("1TiB", "1TiB"),
            ("0", "0B"),
        ] {
            let b: ByteSize = text.parse().unwrap();
            assert_eq!(b.to_string(), shown);
            assert_eq!(shown.parse::<ByteSize>().unwrap(), b);
        }
        let b: ByteSize = serde_json::from_str("2048").unwrap();
        assert_eq!(b, ByteSize(2048));
        assert!(serde_json::from_str::<ByteSize>("-1").is_err());
        assert!(serde_json::from_str::<ByteSize>("\"12 parsecs\"").is_err());
    }
}
