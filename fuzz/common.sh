# Shared setup of fuzz/run.sh and fuzz/soak.sh (sourced from fuzz/): installs cargo-fuzz
# when missing, sets `targets` to the named targets (default: every one) and builds
# them in release without a sanitizer (no nightly here: RUSTC_BOOTSTRAP).
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi
export RUSTC_BOOTSTRAP=1
cargo ${TOOLCHAIN:-} fuzz build --release --debug-assertions --sanitizer none
