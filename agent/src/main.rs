fn main() -> std::process::ExitCode {
    tart_kubelet::cli_main()
}
