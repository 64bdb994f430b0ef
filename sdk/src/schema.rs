//! What a process declares about its data: attributes and local queues.

/// Where a process's global attributes live: one row of a user table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalAttributeTable {
    /// The user table, optionally schema-qualified (`schema.table`).
    pub table_name: String,
    /// The primary-key column; each execution picks its row with a value given at start.
    pub primary_key_column: String,
}

/// The attributes a process reads and writes.
///
/// Global attributes are columns of one row in the user's own table; local attributes are
/// key/values kept by XDB per execution. Both must be declared: the SDK loads every
/// declared one by default and refuses writes to undeclared ones, which catches typos.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PersistenceSchema {
    table: Option<GlobalAttributeTable>,
    global_attributes: Vec<String>,
    local_attributes: Vec<String>,
}

impl PersistenceSchema {
    /// A schema with no attributes.
    pub fn new() -> Self {
        Self::default()
    }

    /// A schema whose global attributes are columns of `table_name`, with rows keyed by
    /// `primary_key_column`.
    pub fn with_table(
        table_name: impl Into<String>,
        primary_key_column: impl Into<String>,
    ) -> Self {
        Self {
            table: Some(GlobalAttributeTable {
                table_name: table_name.into(),
                primary_key_column: primary_key_column.into(),
            }),
            ..Self::default()
        }
    }

    /// Declares a global-attribute column.
    pub fn global_attribute(mut self, column: impl Into<String>) -> Self {
        let column = column.into();
        if !self.global_attributes.contains(&column) {
            self.global_attributes.push(column);
        }
        self
    }

    /// Declares a local-attribute key.
    pub fn local_attribute(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        if !self.local_attributes.contains(&key) {
            self.local_attributes.push(key);
        }
        self
    }

    pub fn table(&self) -> Option<&GlobalAttributeTable> {
        self.table.as_ref()
    }

    /// Declared global-attribute columns, in declaration order.
    pub fn global_attributes(&self) -> &[String] {
        &self.global_attributes
    }

    /// Declared local-attribute keys, in declaration order.
    pub fn local_attributes(&self) -> &[String] {
        &self.local_attributes
    }

    pub fn declares_global_attribute(&self, column: &str) -> bool {
        self.global_attributes.iter().any(|c| c == column)
    }

    pub fn declares_local_attribute(&self, key: &str) -> bool {
        self.local_attributes.iter().any(|k| k == key)
    }
}

/// The local queues a process uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommunicationSchema {
    local_queues: Vec<String>,
}

impl CommunicationSchema {
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares a local queue.
    pub fn local_queue(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        if !self.local_queues.contains(&name) {
            self.local_queues.push(name);
        }
        self
    }

    pub fn local_queues(&self) -> &[String] {
        &self.local_queues
    }

    pub fn declares_local_queue(&self, name: &str) -> bool {
        self.local_queues.iter().any(|q| q == name)
    }
}
