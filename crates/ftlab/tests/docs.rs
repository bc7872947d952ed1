//! docs/schemes.md is generated from the registry and the options types; this keeps the
//! checked-in file equal to what the code says. After a change of a scheme or an option,
//! rewrite it with `FTLAB_BLESS=1 cargo test -p ftlab --test docs` (or `ftlab list
//! --markdown > docs/schemes.md`) and review the diff.

#[test]
fn schemes_md_is_what_the_registry_says() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/schemes.md");
    let generated = ftlab::registry::reference_markdown();
    if std::env::var_os("FTLAB_BLESS").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/schemes.md is out of date: run FTLAB_BLESS=1 cargo test -p ftlab --test docs"
    );
    for id in [
        "page",
        "dftl",
        "superblock",
        "coop",
        "gc_threshold",
        "cmt_bytes",
    ] {
        assert!(generated.contains(id), "{id}");
    }
    assert!(
        !generated.contains("### `example`"),
        "test-only schemes stay out"
    );
}
