//! RPC registration: named, typed methods a client calls synchronously.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;
use xdb_protocol::{Context, EncodedObject, GlobalAttributeLoading, LocalAttributeLoading};

use crate::communication::Communication;
use crate::encoding;
use crate::error::{InvokeError, Result};
use crate::persistence::Persistence;

/// Per-RPC call options, used by the client when invoking the RPC.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RpcOptions {
    /// Timeout of the worker call in seconds (service default when `None`).
    pub timeout_seconds: Option<u32>,
    /// `None` loads every declared column without a lock; set a lock type to serialize
    /// read-modify-write RPCs on the same row.
    pub global_attribute_loading: Option<GlobalAttributeLoading>,
    /// `None` loads every declared key without a lock.
    pub local_attribute_loading: Option<LocalAttributeLoading>,
}

/// A function usable as an RPC handler on process `P`: in practice a method
/// `async fn name(&self, ctx: &Context, input: I, persistence: &mut Persistence,
/// communication: &mut Communication) -> Result<O>`.
///
/// The lifetime parameter lets the returned future borrow its arguments, which a plain
/// `Fn(..) -> Fut` bound cannot express; it is implemented for every such function.
pub trait RpcHandler<'a, P: 'a, I, O>: Send + Sync + 'static {
    type Future: Future<Output = Result<O>> + Send + 'a;

    fn call(
        &self,
        process: &'a P,
        ctx: &'a Context,
        input: I,
        persistence: &'a mut Persistence,
        communication: &'a mut Communication,
    ) -> Self::Future;
}

impl<'a, P, I, O, F, Fut> RpcHandler<'a, P, I, O> for F
where
    P: 'a,
    F: Fn(&'a P, &'a Context, I, &'a mut Persistence, &'a mut Communication) -> Fut
        + Send
        + Sync
        + 'static,
    Fut: Future<Output = Result<O>> + Send + 'a,
{
    type Future = Fut;

    fn call(
        &self,
        process: &'a P,
        ctx: &'a Context,
        input: I,
        persistence: &'a mut Persistence,
        communication: &'a mut Communication,
    ) -> Fut {
        self(process, ctx, input, persistence, communication)
    }
}

/// An RPC with its input and output types erased.
#[async_trait]
pub(crate) trait ErasedRpc<P>: Send + Sync {
    async fn invoke(
        &self,
        process: &P,
        ctx: &Context,
        input: Option<&EncodedObject>,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> std::result::Result<Option<EncodedObject>, InvokeError>;
}

struct TypedRpc<I, O, H> {
    name: String,
    handler: H,
    _marker: PhantomData<fn(I) -> O>,
}

#[async_trait]
impl<P, I, O, H> ErasedRpc<P> for TypedRpc<I, O, H>
where
    P: Send + Sync + 'static,
    I: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    H: for<'a> RpcHandler<'a, P, I, O>,
{
    async fn invoke(
        &self,
        process: &P,
        ctx: &Context,
        input: Option<&EncodedObject>,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> std::result::Result<Option<EncodedObject>, InvokeError> {
        let input: I = encoding::decode(&format!("input of rpc {:?}", self.name), input)
            .map_err(|e| InvokeError::UndecodableInput(e.to_string()))?;
        let output = self
            .handler
            .call(process, ctx, input, persistence, communication)
            .await
            .map_err(InvokeError::from_user)?;
        encoding::encode_optional(&format!("output of rpc {:?}", self.name), &output)
            .map_err(|e| InvokeError::User(e.into()))
    }
}

pub(crate) struct RpcEntry<P> {
    pub(crate) name: String,
    pub(crate) options: RpcOptions,
    pub(crate) rpc: Arc<dyn ErasedRpc<P>>,
}

/// The RPCs of process `P`, by name.
pub struct RpcSchema<P> {
    pub(crate) rpcs: Vec<RpcEntry<P>>,
}

impl<P> Default for RpcSchema<P> {
    fn default() -> Self {
        Self { rpcs: Vec::new() }
    }
}

impl<P: Send + Sync + 'static> RpcSchema<P> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `handler` as RPC `name`, with default options.
    pub fn rpc<I, O, H>(self, name: impl Into<String>, handler: H) -> Self
    where
        I: DeserializeOwned + Send + 'static,
        O: Serialize + Send + 'static,
        H: for<'a> RpcHandler<'a, P, I, O>,
    {
        self.rpc_with_options(name, handler, RpcOptions::default())
    }

    /// Registers `handler` as RPC `name`, with `options` for clients that invoke it.
    pub fn rpc_with_options<I, O, H>(
        mut self,
        name: impl Into<String>,
        handler: H,
        options: RpcOptions,
    ) -> Self
    where
        I: DeserializeOwned + Send + 'static,
        O: Serialize + Send + 'static,
        H: for<'a> RpcHandler<'a, P, I, O>,
    {
        let name = name.into();
        self.rpcs.push(RpcEntry {
            name: name.clone(),
            options,
            rpc: Arc::new(TypedRpc {
                name,
                handler,
                _marker: PhantomData,
            }),
        });
        self
    }

    /// Names of the registered RPCs.
    pub fn names(&self) -> Vec<&str> {
        self.rpcs.iter().map(|r| r.name.as_str()).collect()
    }
}
