use super::*;

#[test]
fn env_file_lines_become_a_map() {
    let env = parse_env("SERVER=https://127.0.0.1:1234\nKUBECONFIG=/r/kubeconfig\n\nbad\n");
    assert_eq!(env["SERVER"], "https://127.0.0.1:1234");
    assert_eq!(env["KUBECONFIG"], "/r/kubeconfig");
    assert_eq!(env.len(), 2);
}
