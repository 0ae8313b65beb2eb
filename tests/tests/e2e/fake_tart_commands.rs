//! fake-tart's bookkeeping commands against the spec texts (docs/reference/tart-cli.md §1-§2):
//! version, list/get quirks, set, delete, prune, usage errors and tmp GC. Each test owns a temp
//! home. pull and clone are in `fake_tart_pull.rs`.

use std::fs;

use tart_kubelet_tests::fake::{FakeHome, ImageKnob, Knobs, parse_json, small_images};

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");
const IMG: &str = "ghcr.io/cirruslabs/macos-tahoe-base:latest";

fn home() -> FakeHome {
    FakeHome::new().expect("temp home")
}

#[tokio::test]
async fn version_is_the_default_or_the_configured_one() {
    let h = home();
    let out = h.tart(FT, &["--version"]).await.unwrap();
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), "2.35.0\n"));
    h.set_knobs(&Knobs::new().with_version("2.30.1")).unwrap();
    assert_eq!(h.tart(FT, &["--version"]).await.unwrap().stdout, "2.30.1\n");
    assert_eq!(h.tart(FT, &["--help"]).await.unwrap().code, Some(0));
}

#[tokio::test]
async fn list_json_has_int_size_source_casing_accessed_and_state() {
    let h = home();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    assert_eq!(
        h.tart(FT, &["clone", IMG, "vm1"]).await.unwrap().code,
        Some(0)
    );
    let out = h.tart(FT, &["list", "--format", "json"]).await.unwrap();
    let list = parse_json(&out.stdout);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 3, "local VM, tag and digest: {list:?}");
    assert_eq!(list[0]["Source"], "local");
    assert_eq!(list[0]["Name"], "vm1");
    assert_eq!(list[0]["Disk"], 20);
    assert!(list[0]["Size"].is_u64());
    assert_eq!(list[0]["Running"], false);
    assert_eq!(list[0]["State"], "stopped");
    let accessed = list[0]["Accessed"].as_str().unwrap();
    assert!(
        accessed.len() == 20 && accessed.ends_with('Z') && accessed.as_bytes()[10] == b'T',
        "{accessed}"
    );
    assert_eq!(list[1]["Source"], "OCI");
    assert_eq!(list[1]["Name"], IMG);
    assert!(list[2]["Name"].as_str().unwrap().contains("@sha256:"));

    let out = h
        .tart(FT, &["list", "--source", "local", "-q"])
        .await
        .unwrap();
    assert_eq!(out.stdout, "vm1\n");
    // Older versions: lowercase "oci", SizeOnDisk, no Accessed (docs/reference/tart-cli.md §2.5).
    h.set_knobs(&small_images(Knobs::new()).with_version("2.10.0"))
        .unwrap();
    let old = parse_json(
        &h.tart(FT, &["list", "--format", "json", "--source", "oci"])
            .await
            .unwrap()
            .stdout,
    );
    assert_eq!(old[0]["Source"], "oci");
    assert!(old[0].get("Accessed").is_none());
    h.set_knobs(&small_images(Knobs::new()).with_version("2.20.0"))
        .unwrap();
    let mid = parse_json(
        &h.tart(FT, &["list", "--format", "json"])
            .await
            .unwrap()
            .stdout,
    );
    assert!(mid[0]["SizeOnDisk"].is_u64());
}

#[tokio::test]
async fn empty_list_prints_nothing_quiet_an_empty_line_as_text_and_bad_source_is_64() {
    let h = home();
    assert_eq!(h.tart(FT, &["list", "-q"]).await.unwrap().stdout, "");
    assert_eq!(h.tart(FT, &["list"]).await.unwrap().stdout, "\n");
    assert_eq!(
        parse_json(
            &h.tart(FT, &["list", "--format", "json"])
                .await
                .unwrap()
                .stdout
        ),
        serde_json::json!([])
    );
    let out = h.tart(FT, &["list", "--source", "remote"]).await.unwrap();
    assert_eq!(out.code, Some(64));
    assert!(
        out.stderr
            .starts_with("Error: 'remote' is not a valid <source>\nUsage: tart list"),
        "{out:?}"
    );
}

#[tokio::test]
async fn get_json_size_is_a_three_decimal_string_and_text_is_a_table() {
    let h = home();
    h.create_vm("vm1").unwrap();
    let out = h
        .tart(FT, &["get", "vm1", "--format", "json"])
        .await
        .unwrap();
    let v = parse_json(&out.stdout);
    assert!(
        out.stdout.contains("\"CPU\" : 4"),
        "Apple-style pretty JSON: {}",
        out.stdout
    );
    let size = v["Size"].as_str().expect("Size is a string");
    assert_eq!(size.split('.').nth(1).map(str::len), Some(3), "{size}");
    assert_eq!(
        (
            v["OS"].as_str(),
            v["CPU"].as_u64(),
            v["Memory"].as_u64(),
            v["Disk"].as_u64()
        ),
        (Some("darwin"), Some(4), Some(8192), Some(50))
    );
    assert_eq!(
        (
            v["DiskFormat"].as_str(),
            v["Display"].as_str(),
            v["State"].as_str()
        ),
        (Some("raw"), Some("1024x768"), Some("stopped"))
    );
    assert_eq!(v["Running"], false);
    let text = h.tart(FT, &["get", "vm1"]).await.unwrap().stdout;
    assert!(text.starts_with("OS     CPU Memory"), "{text}");
    let out = h.tart(FT, &["get", "nope"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (Some(2), "the specified VM \"nope\" does not exist\n")
    );
}

#[tokio::test]
async fn set_changes_resources_display_and_mac_and_grows_the_disk() {
    let h = home();
    h.create_vm("vm1").unwrap();
    let mac = h.vm_mac("vm1").unwrap();
    let out = h
        .tart(
            FT,
            &[
                "set",
                "vm1",
                "--cpu",
                "6",
                "--memory=16384",
                "--display",
                "1920x1080px",
                "--random-mac",
                "--disk-size",
                "60",
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (Some(0), "", "")
    );
    let cfg = h.vm_config("vm1").unwrap();
    assert_eq!(cfg["cpuCount"], 6);
    assert_eq!(cfg["memorySize"], 16384u64 << 20);
    assert_eq!(
        cfg["display"],
        serde_json::json!({"width": 1920, "height": 1080, "unit": "px"})
    );
    assert_ne!(h.vm_mac("vm1").unwrap(), mac);
    assert_eq!(
        fs::metadata(h.vm_dir("vm1").join("disk.img"))
            .unwrap()
            .len(),
        60_000_000_000
    );
}

#[tokio::test]
async fn set_refuses_shrinking_and_resources_below_the_minimum() {
    let h = home();
    h.create_vm("vm1").unwrap();
    let out = h
        .tart(FT, &["set", "vm1", "--disk-size", "10"])
        .await
        .unwrap();
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.starts_with(
            "new disk size of 10GB should be larger than the current disk size of 50GB"
        ),
        "{out:?}"
    );
    let out = h.tart(FT, &["set", "vm1", "--cpu", "2"]).await.unwrap();
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.starts_with("Error: LessThanMinimalResourcesError: VM should have 4 CPU cores at minimum (requested 2)"), "{out:?}");
    assert_eq!(h.vm_config("vm1").unwrap()["cpuCount"], 4);
    let out = h.tart(FT, &["set", "nope", "--cpu", "8"]).await.unwrap();
    assert_eq!(out.code, Some(2));
    let out = h.tart(FT, &["set", "vm1", "--cpu", "many"]).await.unwrap();
    assert_eq!(out.code, Some(64));
}

#[tokio::test]
async fn delete_goes_in_order_and_stops_at_the_first_missing_vm() {
    let h = home();
    h.create_vm("a").unwrap();
    h.create_vm("c").unwrap();
    let out = h.tart(FT, &["delete", "a", "b", "c"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (Some(2), "the specified VM \"b\" does not exist\n")
    );
    assert!(!h.vm_exists("a"));
    assert!(h.vm_exists("c"));
    assert_eq!(h.tart(FT, &["delete", "c"]).await.unwrap().code, Some(0));
    assert!(!h.vm_dir("c").exists());
}

#[tokio::test]
async fn delete_of_a_cached_tag_removes_it_and_gc_drops_its_digest() {
    let h = home();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    assert_eq!(h.tart(FT, &["pull", IMG]).await.unwrap().code, Some(0));
    assert_eq!(h.tart(FT, &["delete", IMG]).await.unwrap().code, Some(0));
    assert_eq!(h.tart(FT, &["list", "-q"]).await.unwrap().stdout, "");
    assert_eq!(h.tart(FT, &["delete", IMG]).await.unwrap().code, Some(2));
}

#[tokio::test]
async fn prune_needs_a_criterion_and_a_zero_budget_empties_the_cache() {
    let h = home();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    let out = h.tart(FT, &["prune"]).await.unwrap();
    assert_eq!(out.code, Some(64));
    assert!(
        out.stderr
            .starts_with("Error: at least one pruning criteria must be specified"),
        "{out:?}"
    );
    assert_eq!(
        h.tart(FT, &["prune", "--entries", "everything", "--gc"])
            .await
            .unwrap()
            .code,
        Some(64)
    );
    assert_eq!(
        h.tart(FT, &["clone", IMG, "vm1"]).await.unwrap().code,
        Some(0)
    );
    let out = h.tart(FT, &["prune", "--space-budget", "0"]).await.unwrap();
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), ""));
    assert_eq!(
        h.tart(FT, &["list", "-q"]).await.unwrap().stdout,
        "vm1\n",
        "local VMs are not caches"
    );
    assert_eq!(
        h.tart(FT, &["prune", "--entries", "vms", "--older-than", "0"])
            .await
            .unwrap()
            .code,
        Some(0)
    );
    assert_eq!(h.tart(FT, &["list", "-q"]).await.unwrap().stdout, "");
}

#[tokio::test]
async fn parse_errors_are_exit_64_with_a_usage_block() {
    let h = home();
    for (args, first) in [
        (
            &["frobnicate"][..],
            "Error: Unexpected argument 'frobnicate'",
        ),
        (&["get"][..], "Error: Missing expected argument '<name>'"),
        (
            &["get", "a", "--bogus"][..],
            "Error: Unknown option '--bogus'",
        ),
        (
            &["ip", "a", "--wait"][..],
            "Error: Missing value for '--wait <wait>'",
        ),
    ] {
        let out = h.tart(FT, args).await.unwrap();
        assert_eq!(out.code, Some(64), "{args:?}");
        let mut lines = out.stderr.lines();
        assert_eq!(lines.next(), Some(first));
        assert!(lines.next().unwrap().starts_with("Usage: tart "), "{out:?}");
        assert!(lines.next().unwrap().starts_with("  See 'tart "), "{out:?}");
    }
    assert_eq!(
        h.tart(FT, &["clone", "--help"]).await.unwrap().code,
        Some(0)
    );
}

#[tokio::test]
async fn tmp_gc_runs_before_commands_except_pull_and_clone() {
    let h = home();
    let stale = h.path().join("tmp").join("DEADBEEF-0000");
    fs::create_dir_all(&stale).unwrap();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    assert_eq!(h.tart(FT, &["pull", IMG]).await.unwrap().code, Some(0));
    assert!(stale.exists(), "pull must not GC tmp");
    assert_eq!(h.tart(FT, &["list"]).await.unwrap().code, Some(0));
    assert!(!stale.exists(), "list GCs unlocked tmp entries");
}

#[tokio::test]
async fn set_replaces_the_disk_from_a_file_and_clears_display_refit_unless_given() {
    let h = home();
    h.create_vm("vm1").unwrap();
    let src = h.path().join("new-disk.img");
    std::fs::File::create(&src)
        .unwrap()
        .set_len(70_000_000_000)
        .unwrap();
    let out = h
        .tart(
            FT,
            &[
                "set",
                "vm1",
                "--display-refit",
                "--disk",
                src.to_str().unwrap(),
            ],
        )
        .await
        .unwrap();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(h.vm_config("vm1").unwrap()["displayRefit"], true);
    assert_eq!(
        fs::metadata(h.vm_dir("vm1").join("disk.img"))
            .unwrap()
            .len(),
        70_000_000_000
    );
    // Any set without the flag writes displayRefit = nil (docs/reference/tart-cli.md §2.3).
    assert_eq!(
        h.tart(FT, &["set", "vm1", "--cpu", "5"])
            .await
            .unwrap()
            .code,
        Some(0)
    );
    assert!(h.vm_config("vm1").unwrap().get("displayRefit").is_none());
}

#[tokio::test]
async fn linux_images_get_linux_configs_and_the_arp_hint() {
    let h = home();
    h.set_knobs(&Knobs::new().with_image("default", ImageKnob::sized(0.1, 20).linux()))
        .unwrap();
    assert_eq!(
        h.tart(FT, &["clone", IMG, "lin"]).await.unwrap().code,
        Some(0)
    );
    let cfg = h.vm_config("lin").unwrap();
    assert_eq!(
        (cfg["os"].as_str(), cfg["cpuCountMin"].as_u64()),
        (Some("linux"), Some(1))
    );
    let out = h
        .tart(FT, &["ip", "lin", "--resolver", "arp"])
        .await
        .unwrap();
    assert_eq!(
        out.stderr,
        "no IP address found, is your VM running? (not all Linux distributions are compatible with the ARP resolver)\n"
    );
}
