//! The samples' business tables (`samples/sql/`), for tools that create them (`xdb dev`).
//! Each script is re-runnable.

/// PostgreSQL: the `user` and `site` tables, and `site`'s trigger.
pub const POSTGRES: &[&str] = &[
    include_str!("../sql/postgres/user_signup.sql"),
    include_str!("../sql/postgres/site_creation.sql"),
];

/// MySQL/MariaDB: the `user` and `site` tables.
pub const MYSQL: &[&str] = &[
    include_str!("../sql/mysql/user_signup.sql"),
    include_str!("../sql/mysql/site_creation.sql"),
];
