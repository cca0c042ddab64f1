//! A second module, for the tests only: `caller.call <command> <args...>` runs a command with
//! RedisModule_Call as the module (no user, no ACL check), `caller.callc ...` as the calling
//! client's user (the `C` flag). Built by `cargo test` as target/<profile>/examples/libcaller_module.so.

use redis_module::{
    redis_module, CallOptionsBuilder, CallResult, Context, RedisError, RedisResult, RedisString,
    RedisValue,
};

fn run(ctx: &Context, args: Vec<RedisString>, as_user: bool) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let command = args.next().ok_or(RedisError::WrongArity)?;
    let rest: Vec<RedisString> = args.collect();
    let rest: Vec<&RedisString> = rest.iter().collect();
    let mut options = CallOptionsBuilder::new().errors_as_replies();
    if as_user {
        options = options.verify_acl();
    }
    let reply: CallResult = ctx.call_ext(
        &command.to_string_lossy(),
        &options.build(),
        rest.as_slice(),
    );
    match reply {
        Ok(_) => Ok(RedisValue::SimpleStringStatic("OK")),
        Err(error) => Err(RedisError::String(
            error.to_utf8_string().unwrap_or_default(),
        )),
    }
}

fn call(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    run(ctx, args, false)
}

fn callc(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    run(ctx, args, true)
}

redis_module! {
    name: "caller",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    commands: [
        ["caller.call", call, "write", 0, 0, 0, ""],
        ["caller.callc", callc, "write", 0, 0, 0, ""],
    ],
}
