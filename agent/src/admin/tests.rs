use super::*;

#[tokio::test(start_paused = true)]
async fn readiness_needs_api_a_recent_lease_and_tart() {
    let r = Readiness::new(Duration::from_secs(10));
    let failed = |r: &Readiness| -> Vec<&str> {
        r.checks()
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.name)
            .collect()
    };
    assert_eq!(failed(&r), ["api", "lease", "tart"]);
    r.lease_renewed();
    r.set_tart(true);
    assert!(failed(&r).is_empty());
    tokio::time::advance(Duration::from_secs(21)).await;
    assert_eq!(failed(&r), ["lease"]);
    r.api_failed();
    let body = readyz_body(&r.checks());
    assert!(body.contains("[-]api failed"), "{body}");
    assert!(body.ends_with("readyz check failed: api,lease\n"), "{body}");
}

#[tokio::test(start_paused = true)]
async fn a_fenced_agent_is_not_ready_and_names_the_holder() {
    let r = Readiness::new(Duration::from_secs(10));
    r.lease_renewed();
    r.set_tart(true);
    r.fenced("mini-1_0abc");
    r.lease_renewed();
    let body = readyz_body(&r.checks());
    assert!(
        body.contains("[-]lease failed: another agent instance (mini-1_0abc)"),
        "{body}"
    );
}

#[test]
fn openmetrics_counters_become_total_families_in_text_format() {
    let om = "# HELP a_x Things.\n# TYPE a_x counter\na_x_total{k=\"v\"} 1\n# HELP g A gauge.\n# TYPE g gauge\n# UNIT g seconds\ng 2\n# EOF\n";
    assert_eq!(
        to_prometheus_text(om),
        "# HELP a_x_total Things.\n# TYPE a_x_total counter\na_x_total{k=\"v\"} 1\n# HELP g A gauge.\n# TYPE g gauge\ng 2\n"
    );
}

#[tokio::test]
async fn endpoints_answer_over_http() {
    let mut reg = Registry::default();
    crate::metrics::NodeMetrics::register(&mut reg);
    let readiness = Readiness::new(Duration::from_secs(10));
    let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = watch::channel(false);
    let server = tokio::spawn(serve(listener, router(Arc::new(reg), readiness), rx));
    let get_with = |path: &'static str, accept: &'static str| async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    };
    let get = |path: &'static str| get_with(path, "*/*");
    let t = Duration::from_secs(5);
    let om = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
    let m = tokio::time::timeout(t, get_with("/metrics", om))
        .await
        .unwrap();
    assert!(m.starts_with("HTTP/1.1 200"), "{m}");
    assert!(m.contains(OPENMETRICS), "{m}");
    assert!(m.contains("tart_kubelet_vm_slots"), "{m}");
    assert!(m.trim_end().ends_with("# EOF"), "{m}");
    let plain = tokio::time::timeout(t, get("/metrics")).await.unwrap();
    assert!(plain.contains(PROMETHEUS_TEXT), "{plain}");
    assert!(
        plain.contains("# TYPE tart_kubelet_node_lease_renewals_total counter"),
        "{plain}"
    );
    let h = tokio::time::timeout(t, get("/healthz")).await.unwrap();
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    let r = tokio::time::timeout(t, get("/readyz")).await.unwrap();
    assert!(r.starts_with("HTTP/1.1 503"), "{r}");
    assert!(r.contains("[-]lease failed"), "{r}");
    tx.send(true).unwrap();
    tokio::time::timeout(t, server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
