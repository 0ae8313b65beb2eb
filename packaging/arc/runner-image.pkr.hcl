# A Tart image for actions-runner-controller runner Pods on tart-kubelet: a Cirrus Labs macOS
# image (which already has Xcode, Homebrew, the `admin` user and the Tart Guest Agent) plus
# tart-kubelet's guest launcher, the GitHub Actions runner in /Users/admin/actions-runner and
# the Pod's entry, /usr/local/bin/tart-runner-entry (packaging/arc/tart-runner-entry).
#
#   packer init packaging/arc/runner-image.pkr.hcl
#   packer build -var runner_version=2.329.0 -var runner_sha256=<sha256 of the osx-arm64 tarball> \
#     packaging/arc/runner-image.pkr.hcl
#   tart push macos-runner-arc ghcr.io/your-org/macos-runner-arc:sequoia
#
# Run from the repository's root (the file provisioners read packaging/...).

packer {
  required_plugins {
    tart = {
      version = ">= 1.12.0"
      source  = "github.com/cirruslabs/tart"
    }
  }
}

variable "base_image" {
  type    = string
  default = "ghcr.io/cirruslabs/macos-sequoia-xcode:latest"
}

variable "vm_name" {
  type    = string
  default = "macos-runner-arc"
}

# A release of github.com/actions/runner; ARC's runners must be recent enough for GitHub to
# accept them (an outdated one exits 7 and ARC marks it Outdated).
variable "runner_version" {
  type = string
}

# The SHA-256 of actions-runner-osx-arm64-<runner_version>.tar.gz, from the release notes.
variable "runner_sha256" {
  type = string
}

source "tart-cli" "runner" {
  vm_base_name = var.base_image
  vm_name      = var.vm_name
  cpu_count    = 4
  memory_gb    = 8
  headless     = true
  ssh_username = "admin"
  ssh_password = "admin"
  ssh_timeout  = "180s"
}

build {
  sources = ["source.tart-cli.runner"]

  provisioner "file" {
    sources = [
      "packaging/guest/tart-guest-launcher",
      "packaging/guest/dev.tart-kubelet.guest-launcher.plist",
      "packaging/arc/tart-runner-entry",
    ]
    destination = "/tmp/"
  }

  provisioner "shell" {
    inline = [
      "set -eu",
      # tart-kubelet's guest launcher (docs/guest.md "What an image must contain").
      "echo admin | sudo -S mkdir -p /usr/local/libexec/tart-guest /usr/local/bin",
      "echo admin | sudo -S install -m 0755 -o root -g wheel /tmp/tart-guest-launcher /usr/local/libexec/tart-guest/",
      "echo admin | sudo -S install -m 0644 -o root -g wheel /tmp/dev.tart-kubelet.guest-launcher.plist /Library/LaunchDaemons/",
      "echo admin | sudo -S plutil -lint /Library/LaunchDaemons/dev.tart-kubelet.guest-launcher.plist",
      # The Pod's entry.
      "echo admin | sudo -S install -m 0755 -o root -g wheel /tmp/tart-runner-entry /usr/local/bin/",
      # The GitHub Actions runner, owned by admin, checked against its published digest.
      "mkdir -p /Users/admin/actions-runner",
      "cd /Users/admin/actions-runner",
      "curl -fsSL -o runner.tar.gz https://github.com/actions/runner/releases/download/v${var.runner_version}/actions-runner-osx-arm64-${var.runner_version}.tar.gz",
      "echo '${var.runner_sha256}  runner.tar.gz' | shasum -a 256 -c -",
      "tar xzf runner.tar.gz",
      "rm runner.tar.gz",
      "test -x /Users/admin/actions-runner/run.sh",
    ]
  }
}
