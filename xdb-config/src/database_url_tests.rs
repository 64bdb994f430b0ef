use super::*;

fn parse(text: &str) -> DatabaseUrl {
    DatabaseUrl::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn dialect_comes_from_the_scheme() {
    for (text, dialect, mariadb) in [
        ("postgres://u@h:5432/db", Dialect::Postgres, false),
        ("PostgreSQL://u@h/db", Dialect::Postgres, false),
        ("  postgresql://h/db  ", Dialect::Postgres, false),
        ("mysql://u:p@h:3306/db", Dialect::MySql, false),
        ("MariaDB://u@h/db", Dialect::MySql, true),
        ("host=localhost dbname=db", Dialect::Postgres, false),
    ] {
        let url = parse(text);
        assert_eq!(url.dialect(), dialect, "{text}");
        assert_eq!(url.mariadb_scheme(), mariadb, "{text}");
        assert_eq!(Dialect::from_url(text).unwrap(), dialect);
    }
    assert_eq!(Dialect::Postgres.to_string(), "PostgreSQL");
    assert_eq!(Dialect::MySql.to_string(), "MySQL");
}

#[test]
fn database_name_from_path_query_or_dbname() {
    let cases = [
        ("postgres://u@h:5432/app", Some("app")),
        (
            "postgres://u@h:5432/my%20app?sslmode=disable",
            Some("my app"),
        ),
        ("postgres://u@h?dbname=app", Some("app")),
        ("postgres://u@h/", None),
        ("postgres://u@h", None),
        ("mysql://root@db:3306/shop?ssl-mode=disabled", Some("shop")),
        ("mysql://root@db:3306", None),
        ("host=h dbname='my app' user=u", Some("my app")),
        ("host=h user=u", None),
    ];
    for (text, database) in cases {
        assert_eq!(parse(text).database(), database, "{text}");
    }
    let error = parse("mysql://root@db:3306")
        .require_database()
        .unwrap_err();
    assert!(
        error.to_string().contains("must name the database"),
        "{error}"
    );
    assert_eq!(parse("mysql://r@h/x").require_database(), Ok("x"));
}

#[test]
fn mariadb_is_spelled_mysql_for_the_driver() {
    let url = parse("mariadb://root:pw@127.0.0.1:3306/app");
    assert_eq!(url.driver_url(), "mysql://root:pw@127.0.0.1:3306/app");
    let url = parse("postgres://u:pw@h/app");
    assert_eq!(url.driver_url(), "postgres://u:pw@h/app");
    assert_eq!(url.as_str(), "postgres://u:pw@h/app");
}

#[test]
fn the_driver_never_sees_the_tls_parameters_xdb_reads() {
    let cases = [
        (
            "postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem&connect_timeout=3",
            "postgres://u@h/db?connect_timeout=3&sslmode=require",
        ),
        (
            "postgres://u@h/db?sslcert=/c&sslkey=/k&sslmode=disable#x",
            "postgres://u@h/db?sslmode=disable#x",
        ),
        ("postgres://u@h/db?sslmode=prefer", "postgres://u@h/db"),
        (
            "host=h sslmode=verify-ca sslrootcert='/a b' dbname=db",
            "host=h dbname=db sslmode=require",
        ),
        (
            "mariadb://root@h/db?ssl-mode=VERIFY_IDENTITY&ssl-ca=/ca.pem&pool_max=3",
            "mysql://root@h/db?pool_max=3",
        ),
        ("mysql://root@h/db?ssl-mode=DISABLED", "mysql://root@h/db"),
    ];
    for (text, driver) in cases {
        assert_eq!(parse(text).driver_url(), driver, "{text}");
    }
}

#[test]
fn display_and_debug_never_show_the_password() {
    let cases = [
        (
            "postgres://u:s3cret@h:5432/db",
            "postgres://u:***@h:5432/db",
        ),
        (
            "postgres://u@h/db?password=s3cret&sslmode=require",
            "postgres://u@h/db?password=***&sslmode=require",
        ),
        (
            "mysql://root:s3cret@[::1]:3306/db",
            "mysql://root:***@[::1]:3306/db",
        ),
        ("postgres://u:p%40s3cret@h/db", "postgres://u:***@h/db"),
        (
            "host=h password='s3cret pw' dbname=db",
            "host=h password=*** dbname=db",
        ),
        ("host=h password=s3cret", "host=h password=***"),
        ("postgres://u@h/db", "postgres://u@h/db"),
    ];
    for (text, redacted) in cases {
        let url = parse(text);
        assert_eq!(url.to_string(), redacted, "{text}");
        assert_eq!(url.redacted(), redacted, "{text}");
        let debug = format!("{url:?}");
        assert!(!debug.contains("s3cret"), "{debug}");
    }
}

#[test]
fn bad_input_gets_a_clear_error_without_the_password() {
    let cases = [
        ("", DatabaseUrlError::Empty),
        ("   ", DatabaseUrlError::Empty),
        (
            "oracle://scott:s3cret@h/db",
            DatabaseUrlError::UnknownScheme("oracle".into()),
        ),
        (
            "sqlite://x.db",
            DatabaseUrlError::UnknownScheme("sqlite".into()),
        ),
        ("s3cret-without-scheme", DatabaseUrlError::NotAUrl),
        ("u:s3cret@h//db", DatabaseUrlError::NotAUrl),
        ("postgres://u:s3cret@h:54x2/db", DatabaseUrlError::BadPort),
        ("mysql://u:s3cret@h:70000/db", DatabaseUrlError::BadPort),
        ("postgres://u:s3cret@h/d%zzb", DatabaseUrlError::BadEncoding),
        ("postgres://u:s3cret@h/d%ff", DatabaseUrlError::BadEncoding),
        ("host=h password='s3cret", DatabaseUrlError::BadKeyValue),
        ("host=h s3cret", DatabaseUrlError::BadKeyValue),
        ("=s3cret", DatabaseUrlError::BadKeyValue),
    ];
    for (text, expected) in cases {
        let error = DatabaseUrl::parse(text).unwrap_err();
        assert_eq!(error, expected, "{text}");
        let message = error.to_string();
        assert!(!message.contains("s3cret"), "{text}: {message}");
        assert!(!message.is_empty());
    }
    assert!(DatabaseUrlError::UnknownScheme("oracle".into())
        .to_string()
        .starts_with("unknown scheme `oracle://`"));
}

#[test]
fn a_key_value_string_with_a_url_inside_is_key_value() {
    let url = parse("host=h options='-c search_path=a://b' dbname=app");
    assert_eq!(url.dialect(), Dialect::Postgres);
    assert_eq!(url.database(), Some("app"));
}

#[test]
fn with_database_replaces_only_the_database() {
    let cases = [
        (
            "postgres://postgres@127.0.0.1:5432/postgres",
            "postgres://postgres@127.0.0.1:5432/db1",
        ),
        ("postgres://u:p@h", "postgres://u:p@h/db1"),
        ("postgres://u@h/", "postgres://u@h/db1"),
        (
            "postgresql://u@h:1/x?sslmode=disable",
            "postgresql://u@h:1/db1?sslmode=disable",
        ),
        (
            "postgres://u@h:5432?sslmode=disable",
            "postgres://u@h:5432/db1?sslmode=disable",
        ),
        (
            "mysql://root@127.0.0.1:3306/mysql",
            "mysql://root@127.0.0.1:3306/db1",
        ),
        ("mariadb://root@h/mysql", "mariadb://root@h/db1"),
        ("host=h dbname=old user=u", "host=h user=u dbname=db1"),
    ];
    for (text, expected) in cases {
        let url = parse(text).with_database("db1").unwrap();
        assert_eq!(url.as_str(), expected, "{text}");
        assert_eq!(url.database(), Some("db1"));
    }
    let url = parse("postgres://u@h/x").with_database("a b/c").unwrap();
    assert_eq!(url.as_str(), "postgres://u@h/a%20b%2Fc");
    assert_eq!(url.database(), Some("a b/c"));
    let url = parse("host=h").with_database("it's").unwrap();
    assert_eq!(url.database(), Some("it's"));
}
