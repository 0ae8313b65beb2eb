use super::*;

#[test]
fn extra_env_cannot_override_the_home_or_ci() {
    let cli = TartCli::builder("/var/tart")
        .env("CI", "")
        .env("TART_HOME", "/elsewhere")
        .env("TART_REGISTRY_HOSTNAME", "ghcr.io")
        .build();
    let env = &cli.inner.env;
    let get = |k: &str| -> Vec<&OsString> {
        env.iter().filter(|(n, _)| n == k).map(|(_, v)| v).collect()
    };
    assert_eq!(get("TART_HOME"), ["/var/tart"]);
    assert_eq!(get("CI"), ["1"]);
    assert_eq!(get("TART_REGISTRY_HOSTNAME"), ["ghcr.io"]);
}
