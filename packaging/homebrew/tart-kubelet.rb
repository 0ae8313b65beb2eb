# Homebrew formula for tart-kubelet (a tap formula: `brew install <org>/tools/tart-kubelet`).
# Release automation replaces `url`/`sha256` with the release tarball, which contains
# `tart-kubelet` (aarch64-apple-darwin, cross-built with cargo-zigbuild), `config.example.toml`,
# `rbac.yaml` and `launchd/`. See docs/install.md.
class TartKubelet < Formula
  desc "Virtual kubelet that registers a Mac as a Kubernetes Node and runs Pods as Tart VMs"
  homepage "https://example.invalid/tart-kubelet"
  url "https://example.invalid/tart-kubelet/releases/download/v0.1.0/tart-kubelet-0.1.0-aarch64-apple-darwin.tar.gz"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"
  license "Apache-2.0"

  # macOS guests on Virtualization.framework need Apple silicon.
  depends_on arch: :arm64
  depends_on :macos
  depends_on "cirruslabs/cli/tart"

  def install
    bin.install "tart-kubelet"
    # Homebrew keeps an existing etc file and writes the new one next to it as .default.
    (etc/"tart-kubelet").install "config.example.toml" => "config.toml"
    pkgshare.install "config.example.toml", "rbac.yaml", "launchd"
    (var/"log/tart-kubelet").mkpath
  end

  # `brew services` can only express part of what the agent needs: it has no ExitTimeOut,
  # UserName or AbandonProcessGroup (docs/reference/host-and-conventions.md §2.5). Prefer
  # `sudo tart-kubelet install` (see caveats); this block is for `brew services start` in the
  # auto-login user's session (a LaunchAgent), e.g. for evaluation.
  service do
    run [opt_bin/"tart-kubelet", "--config", etc/"tart-kubelet/config.toml"]
    run_type :immediate
    keep_alive true
    throttle_interval 10
    process_type :interactive
    working_dir Dir.home
    environment_variables PATH: std_service_path_env
    log_path var/"log/tart-kubelet/launchd.stdout.log"
    error_log_path var/"log/tart-kubelet/launchd.stderr.log"
  end

  def caveats
    <<~EOS
      1. Edit #{etc}/tart-kubelet/config.toml (kubeconfig, node name, log file).
      2. Check the host:   tart-kubelet doctor --config #{etc}/tart-kubelet/config.toml
      3. Install the LaunchDaemon (runs at boot as the auto-login user, survives upgrades
         without stopping VMs):
           sudo #{opt_bin}/tart-kubelet install --user "$(whoami)" \\
             --binary #{opt_bin}/tart-kubelet --config #{etc}/tart-kubelet/config.toml
      RBAC for the cluster: #{pkgshare}/rbac.yaml. Guide: docs/install.md.
    EOS
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/tart-kubelet --version")
    plan = shell_output("#{bin}/tart-kubelet install --dry-run --user admin --home /Users/admin " \
                        "--binary #{opt_bin}/tart-kubelet")
    assert_match "<key>ExitTimeOut</key>", plan
    assert_match "launchctl bootstrap system", plan
  end
end
