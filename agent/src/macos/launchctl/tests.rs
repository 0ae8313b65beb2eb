use super::*;

#[test]
fn gui_domain_session_type_is_found() {
    let t = "gui/501 = {\n\ttype = gui\n\thandle = 501\n\tsession = Aqua\n\tcreator = loginwindow[123]\n}\n";
    assert_eq!(parse_domain_session(t).as_deref(), Some("Aqua"));
    assert_eq!(parse_domain_session("Could not print domain: 125"), None);
}
