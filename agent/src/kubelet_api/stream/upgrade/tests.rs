use hyper::header::HeaderValue;

use super::*;

fn headers(list: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (n, v) in list {
        h.append(*n, HeaderValue::from_static(v));
    }
    h
}

#[test]
fn kubectls_spdy_request_switches_to_v4() {
    let h = headers(&[
        ("connection", "Upgrade"),
        ("upgrade", "SPDY/3.1"),
        (PROTOCOL_HEADER, "v5.channel.k8s.io"),
        (PROTOCOL_HEADER, "v4.channel.k8s.io"),
        (PROTOCOL_HEADER, "v3.channel.k8s.io"),
    ]);
    assert_eq!(kind(&h), Upgrade::Spdy);
    assert_eq!(decide(&h), Ok(Protocol::V4));
}

#[test]
fn one_header_line_may_list_several_versions() {
    let h = headers(&[
        ("connection", "Upgrade"),
        ("upgrade", "SPDY/3.1"),
        (PROTOCOL_HEADER, "v2.channel.k8s.io, v4.channel.k8s.io"),
    ]);
    assert_eq!(decide(&h), Ok(Protocol::V2));
    let empty = headers(&[
        ("connection", "Upgrade"),
        ("upgrade", "SPDY/3.1"),
        (PROTOCOL_HEADER, " , "),
    ]);
    assert_eq!(decide(&empty).unwrap_err().status, 400);
}

#[test]
fn websocket_is_refused_before_upgrading_so_kubectl_falls_back() {
    let h = headers(&[
        ("connection", "keep-alive, Upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-protocol", "v5.channel.k8s.io"),
    ]);
    assert_eq!(kind(&h), Upgrade::WebSocket);
    assert_eq!(decide(&h).unwrap_err().status, 403);
}

#[test]
fn requests_without_an_upgrade_or_a_version_are_400() {
    let plain = headers(&[("upgrade", "SPDY/3.1")]);
    assert_eq!(kind(&plain), Upgrade::None);
    assert_eq!(decide(&plain).unwrap_err().status, 400);
    let no_version = headers(&[("connection", "upgrade"), ("upgrade", "spdy/3.1")]);
    let a = decide(&no_version).unwrap_err();
    assert_eq!(a.status, 400);
    assert!(a.body.contains("X-Stream-Protocol-Version"), "{}", a.body);
}

#[test]
fn port_forward_speaks_only_its_one_version() {
    let mut h = headers(&[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")]);
    h.append(
        PROTOCOL_HEADER,
        HeaderValue::from_static("portforward.k8s.io"),
    );
    assert_eq!(decide_forward(&h), Ok("portforward.k8s.io"));
    assert_eq!(decide(&h).unwrap_err().status, 403);
    let exec = headers(&[
        ("connection", "Upgrade"),
        ("upgrade", "SPDY/3.1"),
        (PROTOCOL_HEADER, "v4.channel.k8s.io"),
    ]);
    assert_eq!(decide_forward(&exec).unwrap_err().status, 403);
}

#[test]
fn an_unshared_version_is_403_with_the_served_list() {
    let h = headers(&[
        ("connection", "Upgrade"),
        ("upgrade", "SPDY/3.1"),
        (PROTOCOL_HEADER, "portforward.k8s.io"),
    ]);
    let a = decide(&h).unwrap_err();
    assert_eq!(a.status, 403);
    let listed: Vec<&str> = a.headers.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(
        listed,
        [
            "v4.channel.k8s.io",
            "v3.channel.k8s.io",
            "v2.channel.k8s.io",
            "channel.k8s.io"
        ]
    );
}
