# Homebrew formula for tart-kubelet (a tap formula: `brew install <org>/tools/tart-kubelet`).
# scripts/release renders it into dist/ with the release tarball's homepage, url, version and
# sha256 (the values below are the template's). The tarball's layout is listed in
# scripts/release; `install` puts each of its files in exactly one place (checked by
# tests/tests/e2e/ship_release.rs). See docs/install.md.
class TartKubelet < Formula
  desc "Virtual kubelet that registers a Mac as a Kubernetes Node and runs Pods as Tart VMs"
  homepage "https://example.invalid/tart-kubelet"
  url "https://example.invalid/tart-kubelet/releases/download/v0.1.0/tart-kubelet-0.1.0-darwin-arm64.tar.gz"
  version "0.1.0"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"
  license "Apache-2.0"

  # macOS guests on Virtualization.framework need Apple silicon.
  depends_on arch: :arm64
  depends_on :macos
  depends_on "cirruslabs/cli/tart"

  # Each file of the tarball is installed exactly once (`install` moves it).
  def install
    bin.install "tart-kubelet"
    # Homebrew keeps an existing etc file and writes the new one next to it as .default.
    (etc/"tart-kubelet").install "config.example.toml" => "config.toml"
    # The guest launcher and its plist (baked into guest images), the cluster's manifests,
    # the launchd templates and the monitoring files (alerts, their tests, the dashboard).
    pkgshare.install "guest", "kubernetes", "launchd", "monitoring"
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
      RBAC for the cluster: #{pkgshare}/kubernetes/rbac.yaml. Guest launcher for the images:
      #{pkgshare}/guest. Alerts and dashboard: #{pkgshare}/monitoring. Guide: docs/install.md.
      To remove the agent from this Mac: docs/operations.md, "Decommissioning a Mac".
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
