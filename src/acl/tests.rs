//! The pure parts of the 7.0 ACL translation. Whether the server then
//! decides as Redis 7.2 does is tested against a real 7.2 server
//! (tests/it/acl.rs); these tests pin the string handling.

use super::*;

fn ops(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|i| i.as_bytes().to_vec()).collect()
}

fn translate(items: &[&str]) -> Option<Vec<String>> {
    let bytes: Vec<&[u8]> = items.iter().map(|i| i.as_bytes()).collect();
    translate_setuser(&bytes, "msetex").map(|ops| {
        ops.into_iter()
            .map(|o| String::from_utf8(o).unwrap())
            .collect()
    })
}

#[test]
fn category_rules_gain_the_same_rule_for_msetex() {
    assert_eq!(
        translate(&["on", ">pw", "+@all", "-@WRITE", "~*"]),
        Some(
            vec!["on", ">pw", "+@all", "-@WRITE", "-msetex", "~*"]
                .into_iter()
                .map(String::from)
                .collect()
        )
    );
    assert_eq!(
        translate(&["-@all", "+@string", "+@read", "-@slow"]),
        Some(
            ["-@all", "+@string", "+msetex", "+@read", "-@slow", "-msetex"]
                .map(String::from)
                .to_vec()
        )
    );
    // Nothing of MSETEX's categories: nothing to change.
    assert_eq!(
        translate(&["on", "+@all", "-@dangerous", "~*", "+get", "-set"]),
        None
    );
    assert_eq!(translate(&["+@writex", "@write", "+write"]), None);
}

#[test]
fn selectors_are_translated_inside_even_when_split() {
    assert_eq!(
        translate(&["+@all", "(+@write", "~tmp:*)"]),
        Some(
            ["+@all", "(+@write +msetex ~tmp:*)"]
                .map(String::from)
                .to_vec()
        )
    );
    assert_eq!(
        translate(&["(~a:* -@write +get)"]),
        Some(["(~a:* -@write -msetex +get)"].map(String::from).to_vec())
    );
    // Quoted rules and patterns with spaces keep their quoting.
    assert_eq!(
        translate(&[r#"(~"a b" "+@slow")"#]),
        Some([r#"(~"a b" "+@slow" +msetex)"#].map(String::from).to_vec())
    );
    // An unterminated selector or quote: left to the server to refuse.
    assert_eq!(translate(&["(+@write", "~x"]), None);
    assert_eq!(translate(&[r#"(+@write "~x)"#]), None);
    assert_eq!(translate(&["()", "(~x)"]), None);
}

#[test]
fn split_args_follows_sdssplitargs() {
    let split = |line: &str| {
        split_args(line.as_bytes()).map(|args| {
            args.into_iter()
                .map(|(v, e)| (String::from_utf8(v).unwrap(), e))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        split("a  bc"),
        Some(vec![("a".into(), 1), ("bc".into(), 5)])
    );
    assert_eq!(
        split(r#""x\x41\n" 'it\'s'"#),
        Some(vec![("xA\n".into(), 9), ("it's".into(), 17)])
    );
    assert_eq!(
        split(r#"a"b c"d"#),
        None,
        "a closing quote must end the argument"
    );
    assert_eq!(
        split(r#"ab"c d" e"#),
        Some(vec![("abc d".into(), 7), ("e".into(), 9)])
    );
    assert_eq!(split("\"open"), None);
    assert_eq!(split(" \t "), Some(vec![]));
}

#[test]
fn the_permission_a_description_gives() {
    let both = |commands: &str| {
        (
            permission(commands, "msetex", false),
            permission(commands, "msetex", true),
        )
    };
    let p = |allowed, args: &[&str]| Permission {
        allowed,
        first_args: args.iter().map(|a| a.to_string()).collect(),
    };
    assert_eq!(both("+@all"), (p(true, &[]), p(true, &[])));
    assert_eq!(both("+@all -@write"), (p(true, &[]), p(false, &[])));
    assert_eq!(both("-@all +@read +@string"), (p(false, &[]), p(true, &[])));
    assert_eq!(both("+@all -@write +msetex"), (p(true, &[]), p(true, &[])));
    assert_eq!(
        both("-@all +msetex|60 +msetex|5"),
        (p(false, &["60", "5"]), p(false, &["60", "5"]))
    );
    assert_eq!(
        both("-@all +@slow +MSETEX|60"),
        (p(false, &["60"]), p(true, &["60"]))
    );
    // Another command with the name as prefix is not MSETEX.
    assert_eq!(
        permission("-@all +msetex.ttl +msetexx", "msetex", false),
        p(false, &[])
    );
    assert_eq!(
        permission("-@all +msetex.ttl", "msetex.ttl", false),
        p(true, &[])
    );
}

#[test]
fn fixes_reach_the_goal() {
    let fix_for = |commands: &str, goal| fix(commands, "msetex", &wanted(commands, "msetex", goal));
    assert_eq!(fix_for("+@all -@write", Goal::Like72), ["-msetex"]);
    assert_eq!(
        fix_for("-@all +@write", Goal::Like72),
        ["-msetex", "+msetex"]
    );
    assert!(fix_for("-@all +msetex", Goal::Like72).is_empty());
    assert!(fix_for("+@all -@write -msetex", Goal::Like72).is_empty());
    assert_eq!(fix_for("-@all +msetex", Goal::Unloadable), ["-msetex"]);
    assert_eq!(
        fix_for("+@all -msetex", Goal::Unloadable),
        ["-msetex", "+msetex"]
    );
    assert_eq!(fix_for("-@all +msetex|60", Goal::Unloadable), ["-msetex"]);
    assert!(fix_for("+@all -@write", Goal::Unloadable).is_empty());
}

#[test]
fn a_correction_rebuilds_every_selector_when_one_needs_it() {
    let selector = |commands: &str, keys: &str| Selector {
        commands: commands.into(),
        keys: keys.into(),
        channels: String::new(),
    };
    let like72 = |root: &str, selectors: &[Selector]| {
        wanted_permissions(root, selectors, "msetex", Goal::Like72, None)
    };
    let selectors = [selector("-@all +get", "~x")];
    assert_eq!(
        correction("+@all", &selectors, "msetex", &like72("+@all", &selectors)),
        None
    );
    let selectors = [
        selector("-@all +get", "~x"),
        selector("-@all +@write", "%W~w:*"),
    ];
    assert_eq!(
        correction(
            "+@all -@write",
            &selectors,
            "msetex",
            &like72("+@all -@write", &selectors)
        ),
        Some(
            [
                "-msetex",
                "clearselectors",
                "(~x -@all +get)",
                "(%W~w:* -@all +@write -msetex +msetex)"
            ]
            .map(String::from)
            .to_vec()
        )
    );
}

#[test]
fn rules_as_written_decide_where_the_description_cannot() {
    let written = |line: &str| {
        line.split(' ')
            .map(|w| w.as_bytes().to_vec())
            .collect::<Vec<_>>()
    };
    let p = |allowed, args: &[&str]| Permission {
        allowed,
        first_args: args.iter().map(|a| a.to_string()).collect(),
    };
    // 7.0 describes `-@all +msetex -@write` as `-@all +msetex`: only the
    // written rules say that 7.2 refuses MSETEX there.
    let rules = written("on >pw -@all +msetex -@write ~*");
    assert_eq!(
        wanted_permissions("-@all +msetex", &[], "msetex", Goal::Like72, Some(&rules)),
        [p(false, &[])]
    );
    assert_eq!(
        wanted_permissions("-@all +msetex", &[], "msetex", Goal::Like72, None),
        [p(true, &[])]
    );
    // Written rules that the server's present bits contradict (the user was
    // changed since) are not used.
    assert_eq!(
        wanted_permissions("-@all", &[], "msetex", Goal::Like72, Some(&rules)),
        [p(false, &[])]
    );
    assert_eq!(
        wanted_permissions("+@all -@write", &[], "msetex", Goal::Like72, Some(&rules)),
        [p(false, &[])]
    );
    let rules = written(
        "reset +@all -@write +msetex ~* (+@write ~w:*) clearselectors (-@all +msetex|5 -@slow)",
    );
    assert_eq!(
        permissions(
            &rules.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            "msetex",
            true
        ),
        Some(vec![p(true, &[]), p(false, &[])])
    );
    assert_eq!(
        permissions(
            &rules.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            "msetex",
            false
        ),
        Some(vec![p(true, &[]), p(false, &["5"])])
    );
}

#[test]
fn user_and_include_lines() {
    let text = "# users\nuser app on >pw ~app:* \"(+get ~x)\"\n  USER  other off\ninclude /etc/redis/users.conf\nport 6379\nuser\n";
    assert_eq!(
        user_lines(text),
        vec![
            (b"app".to_vec(), ops(&["on", ">pw", "~app:*", "(+get ~x)"])),
            (b"other".to_vec(), ops(&["off"])),
        ]
    );
    assert_eq!(include_lines(text), ["/etc/redis/users.conf"]);
}

#[test]
fn acl_file_lines_are_split_on_spaces_without_quoting() {
    // As ACLLoadFromFile: `user` in lower case, single spaces, no quotes.
    let text = "user u on >pw +@all ~k* ~'x -@write ~y'\r\nUSER other on\n  user v on\t\n";
    assert_eq!(
        acl_file_users(text),
        vec![
            (
                b"u".to_vec(),
                ops(&["on", ">pw", "+@all", "~k*", "~'x", "-@write", "~y'"])
            ),
            (b"v".to_vec(), ops(&["on"])),
        ]
    );
    let rules = ops(&["on", ">pw", "+@all", "~k*", "~'x", "-@write", "~y'"]);
    let views: Vec<&[u8]> = rules.iter().map(Vec::as_slice).collect();
    assert_eq!(
        permissions(&views, "msetex", true).map(|p| p[0].allowed),
        Some(false)
    );
}

#[test]
fn a_nul_byte_ends_a_rule_name_as_in_the_server() {
    // The server compares rule names as C strings: `-@write\0x` is -@write.
    let ops_nul = [b"+@all".as_slice(), b"-@write\0x", b"~*"];
    assert_eq!(
        permissions(&ops_nul, "msetex", true).map(|p| p[0].allowed),
        Some(false)
    );
    assert_eq!(
        translate_setuser(&ops_nul, "msetex"),
        Some(ops(&["+@all", "-@write\0x", "-msetex", "~*"]))
    );
    let reset = [b"-@all".as_slice(), b"+@write", b"reset\0", b"+@all"];
    assert_eq!(
        permissions(&reset, "msetex", true).map(|p| p[0].allowed),
        Some(true)
    );
}

#[test]
fn successful_acl_loads_are_read_from_commandstats() {
    assert_eq!(
        successful_calls("calls=5,usec=90,usec_per_call=18.00,rejected_calls=3,failed_calls=2"),
        Some(3)
    );
    assert_eq!(
        successful_calls("calls=1,usec=9,usec_per_call=9.00"),
        Some(1)
    );
    assert_eq!(successful_calls("usec=9"), None);
}

#[test]
fn acl_commands_the_filter_acts_on() {
    let args = |items: &[&str]| {
        items
            .iter()
            .map(|i| i.as_bytes().to_vec())
            .collect::<Vec<_>>()
    };
    let classify = |items: &[&str]| {
        let owned = args(items);
        let views: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        acl_command(&views, "msetex")
    };
    assert_eq!(classify(&["ACL", "load"]), AclCommand::Load);
    assert_eq!(
        classify(&["acl", "SetUser", "u", "-@write"]),
        AclCommand::SetUser(ops(&["-@write", "-msetex"]))
    );
    assert_eq!(
        classify(&["ACL", "SETUSER", "u", "+get"]),
        AclCommand::Other
    );
    assert_eq!(classify(&["ACL", "SETUSER"]), AclCommand::Other);
    assert_eq!(classify(&["ACL", "LIST"]), AclCommand::Other);
}

#[test]
fn clients_inside_multi_are_found_in_client_list() {
    let line = |id: u64, flags: &str| {
        format!(
            "id={id} addr=127.0.0.1:5000 laddr=127.0.0.1:6379 fd=8 name=x age=1 idle=0 flags={flags} db=0 sub=0 psub=0 ssub=0 multi=-1 cmd=client|list user=default"
        )
    };
    assert!(clients_in_multi("").is_empty());
    assert!(clients_in_multi(&line(3, "N")).is_empty());
    assert_eq!(clients_in_multi(&line(7, "x")), [7]);
    assert_eq!(
        clients_in_multi(&format!(
            "{}\n{}\n{}\n",
            line(1, "N"),
            line(2, "xP"),
            line(9, "x")
        )),
        [2, 9]
    );
    // Another field holding an x is not a flag.
    assert!(clients_in_multi("id=1 name=xx flags=N cmd=exec user=x\n").is_empty());
}

#[test]
fn a_rebuilt_selector_quotes_what_the_server_would_split_otherwise() {
    let selectors = [Selector {
        commands: "+@all -@write".into(),
        keys: "~a\" ~x\\y".into(),
        channels: String::new(),
    }];
    let wanted = wanted_permissions("-@all", &selectors, "msetex", Goal::Like72, None);
    let ops = correction("-@all", &selectors, "msetex", &wanted).expect("a fix");
    assert_eq!(
        ops,
        [
            "clearselectors",
            "(\"~a\\\"\" \"~x\\\\y\" +@all -@write -msetex)"
        ]
    );
    // What the server's split of the selector gives back.
    let inner = ops[1].trim_start_matches('(').trim_end_matches(')');
    let words: Vec<String> = split_args(inner.as_bytes())
        .expect("splits")
        .into_iter()
        .map(|(word, _)| String::from_utf8(word).unwrap())
        .collect();
    assert_eq!(words, ["~a\"", "~x\\y", "+@all", "-@write", "-msetex"]);
}

#[test]
fn an_acl_load_is_seen_through_a_counter_reset() {
    // The only test that touches these counters.
    loads_counted(0, 100); // first reading: nothing to compare with
    assert!(!loads_counted(0, 150), "nothing ran");
    assert!(loads_counted(1, 160), "a load ran");
    assert!(!loads_counted(1, 170));
    // CONFIG RESETSTAT (fewer commands than before): loads since the reset
    // count; none ran: nothing to do.
    assert!(!loads_counted(0, 5));
    assert!(loads_counted(1, 3), "reset, then a load");
}
