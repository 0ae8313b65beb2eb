//! The end-to-end suite of `tart-kubelet-tests`: one test binary, each area a module, the
//! support modules compiled once for all of them. docs/testing.md describes the layout.
//!
//! Tests of every module run in this one process, concurrently, against one shared control
//! plane (`ControlPlane::shared`).

mod alone;
mod node_support;
mod pod_support;
mod tart_support;

mod architecture;
mod bench_exec;
mod bench_launcher;
mod bench_logs;
mod citations;
mod cluster;
mod cluster_lifecycle;
mod fake_tart_commands;
mod fake_tart_dir;
mod fake_tart_guest;
mod fake_tart_knobs;
mod fake_tart_net;
mod fake_tart_prune;
mod fake_tart_pull;
mod fake_tart_registry;
mod fake_tart_vm;
mod guest_launcher;
mod install_guide;
mod kubelet_abuse;
mod kubelet_api;
mod kubelet_attach;
mod kubelet_csr;
mod kubelet_exec;
mod kubelet_port_forward;
mod kubelet_websocket;
mod node_bootstrap;
mod node_e2e;
mod node_endpoints;
mod node_labels;
mod node_readiness;
mod node_survive;
mod pod_api_return;
mod pod_edges;
mod pod_faults;
mod pod_guest;
mod pod_hooks;
mod pod_hostile;
mod pod_identity;
mod pod_images;
mod pod_launcher;
mod pod_lifecycle;
mod pod_logs;
mod pod_prepull;
mod pod_probes;
mod pod_runtimeclass;
mod pod_vanished;
mod pod_vitals;
mod sandbox;
mod ship_arc;
mod ship_config_doc;
mod ship_doctor;
mod ship_install;
mod ship_logging;
mod ship_metrics_live;
mod ship_monitoring;
mod ship_packaging;
mod ship_plist;
mod ship_rbac;
mod ship_release;
mod ship_smoke;
mod stack_prometheus;
mod tart_contract;
mod tart_faults;
mod tart_leaks;
