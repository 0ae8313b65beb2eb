//! The agent binary, built inside the tests package so end-to-end tests get its path from
//! `env!("CARGO_BIN_EXE_agent-under-test")` (Cargo only sets that for the package's own bins).
fn main() -> std::process::ExitCode {
    tart_kubelet::cli_main()
}
