//! tart-kubelet: a virtual kubelet for Tart VMs.
pub mod macos;
pub mod pods;
pub mod ship;
pub mod vm;

/// Process entry point shared by the `tart-kubelet` binary and the test build of it.
pub fn cli_main() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
