//! `sandbox`: the README's main command (via `scripts/sandbox`). See docs/sandbox.md.
fn main() -> std::process::ExitCode {
    tart_kubelet_tests::sandbox::main()
}
