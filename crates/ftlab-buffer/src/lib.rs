//! ftlab's flash-aware write buffers, placed between the host and any FTL. Each module
//! opens with the paper and section it implements and the choices the paper left open.
//! Buffers are constructed through the registry in the `ftlab` crate; nothing here
//! matches on scheme names.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod bagc;
pub mod blocklru;
pub mod bplru;
pub mod bpref;
pub mod clash;
pub mod coop;
pub mod costmodel;
pub mod fab;
pub mod lru;

#[cfg(test)]
mod options_tests {
    //! The typed options of every buffer list the keys and defaults the string tables
    //! had before them (golden reports depend on the defaults), and read back what they
    //! echo.

    use crate::{bagc, blocklru, bplru, bpref, clash, coop, fab, lru};
    use ftlab_core::options::{from_pairs, resolve, OptionMap, Options, OptionsDef};

    /// Key and default of each option of `O`, sorted by key.
    fn listed<O: Options>() -> Vec<(String, String)> {
        OptionsDef::of::<O>()
            .fields()
            .into_iter()
            .map(|f| (f.name, f.default))
            .collect()
    }

    /// No options resolve to `O::default()`, and the echo of the resolved options reads
    /// back unchanged.
    fn round_trips<O: Options + PartialEq>(id: &str) {
        let o: O = from_pairs(id, &[]).unwrap();
        assert_eq!(o, O::default(), "{id}");
        let echo = (OptionsDef::of::<O>().resolve)(id, &OptionMap::new()).unwrap();
        let map = echo.as_object().unwrap();
        assert_eq!(resolve::<O>(id, map).unwrap(), o, "{id}");
    }

    fn pairs(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_the_ones_of_the_string_tables() {
        let size = pairs(&[("size", "16MiB")]);
        assert_eq!(listed::<lru::LruOptions>(), size);
        assert_eq!(listed::<fab::FabOptions>(), size);
        assert_eq!(listed::<bplru::BplruOptions>(), size);
        assert_eq!(listed::<bplru::BlruOptions>(), size);
        assert_eq!(listed::<coop::CoopOptions>(), size);
        assert_eq!(
            listed::<bpref::BprefOptions>(),
            pairs(&[
                ("pad_threshold_pct", "50"),
                ("size", "16MiB"),
                ("window_blocks", "4"),
            ])
        );
        assert_eq!(
            listed::<bagc::BagcOptions>(),
            pairs(&[("hot_pct", "33"), ("size", "16MiB"), ("warm_pct", "33")])
        );
        assert_eq!(
            listed::<clash::ClashOptions>(),
            pairs(&[
                ("b_space_blocks", "2"),
                ("evict_with_p_space", "false"),
                ("merge", "late"),
                ("p_space_pages", "128"),
                ("read_miss_insert", "false"),
            ])
        );
        round_trips::<blocklru::SizeOptions>(lru::ID);
        round_trips::<bpref::BprefOptions>(bpref::ID);
        round_trips::<bagc::BagcOptions>(bagc::ID);
        round_trips::<clash::ClashOptions>(clash::ID);
    }

    #[test]
    fn every_size_option_has_the_same_help() {
        let help = |fields: Vec<ftlab_core::options::OptionField>| {
            fields
                .into_iter()
                .find(|f| f.name == "size")
                .map(|f| (f.help, f.kind))
                .unwrap()
        };
        let want = help(OptionsDef::of::<blocklru::SizeOptions>().fields());
        assert!(want.0.starts_with("Buffer capacity in bytes"), "{want:?}");
        assert_eq!(help(OptionsDef::of::<bpref::BprefOptions>().fields()), want);
        assert_eq!(help(OptionsDef::of::<bagc::BagcOptions>().fields()), want);
    }
}
