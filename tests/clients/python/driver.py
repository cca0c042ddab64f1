"""Sends MSETEX calls through a Python cluster client, one reply line per call.

tests/it/cluster_clients.rs runs it in the virtual environment of one client:

    python driver.py VARIANT HOST:PORT[,HOST:PORT...] PLAN

VARIANT is one of
  redis-py          redis.cluster.RedisCluster, execute_command(*call)
  redis-py-asyncio  redis.asyncio.cluster.RedisCluster, await execute_command(*call)
  redis-py-typed    redis.cluster.RedisCluster.msetex(mapping, ...), the typed method
                    (numkeys form only: it always sends the name MSETEX)
  glide             valkey-glide's asyncio GlideClusterClient, custom_command(call)

PLAN has one call a line, its arguments separated by tabs: the call's first key, then
the command and its arguments (the first key is for clients that route by a key the
caller names; these ignore it). For each call the driver prints one line:
`ok<TAB>REPLY` (OK, or an integer) or `error<TAB>EXCEPTION-CLASS<TAB>MESSAGE`, the
message on one line. A client that cannot start exits non-zero with its reason.
"""

import asyncio
import sys


def read_plan(path):
    with open(path, encoding="utf-8") as plan:
        return [line.rstrip("\n").split("\t")[1:] for line in plan if line.strip()]


def show(reply):
    if isinstance(reply, bytes):
        reply = reply.decode("utf-8", "replace")
    if reply is True:
        reply = "OK"
    return str(reply)


def one_line(text):
    return " ".join(str(text).split())


def report(call, outcome):
    try:
        print(f"ok\t{show(outcome())}", flush=True)
    except Exception as error:  # every failure is a result to report
        print(f"error\t{type(error).__name__}\t{one_line(error)}", flush=True)


def seeds(arg):
    return [(host, int(port)) for host, port in (s.rsplit(":", 1) for s in arg.split(","))]


def typed_call(client, call):
    """The numkeys call `MSETEX n k v ... [NX|XX] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`
    as redis-py's typed msetex()."""
    from redis.commands.core import DataPersistOptions

    count = int(call[1])
    pairs = call[2 : 2 + 2 * count]
    mapping = dict(zip(pairs[0::2], pairs[1::2]))
    options = {}
    rest = call[2 + 2 * count :]
    index = 0
    while index < len(rest):
        word = rest[index].upper()
        if word in ("NX", "XX"):
            options["data_persist_option"] = DataPersistOptions[word]
        elif word == "KEEPTTL":
            options["keepttl"] = True
        else:
            options[word.lower()] = int(rest[index + 1])
            index += 1
        index += 1
    return lambda: client.msetex(mapping, **options)


def run_redis_py(nodes, plan, typed):
    from redis.cluster import ClusterNode, RedisCluster

    client = RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in nodes],
        decode_responses=True,
        socket_timeout=20,
    )
    for call in plan:
        if typed:
            report(call, typed_call(client, call))
        else:
            report(call, lambda: client.execute_command(*call))
    client.close()


async def run_redis_py_asyncio(nodes, plan):
    from redis.asyncio.cluster import ClusterNode, RedisCluster

    client = RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in nodes],
        decode_responses=True,
        socket_timeout=20,
    )
    await client.initialize()
    for call in plan:
        try:
            reply = await client.execute_command(*call)
            print(f"ok\t{show(reply)}", flush=True)
        except Exception as error:
            print(f"error\t{type(error).__name__}\t{one_line(error)}", flush=True)
    await client.aclose()


async def run_glide(nodes, plan):
    from glide import GlideClusterClient, GlideClusterClientConfiguration, NodeAddress

    config = GlideClusterClientConfiguration(
        [NodeAddress(host, port) for host, port in nodes], request_timeout=20000
    )
    client = await GlideClusterClient.create(config)
    for call in plan:
        try:
            reply = await client.custom_command(call)
            print(f"ok\t{show(reply)}", flush=True)
        except Exception as error:
            print(f"error\t{type(error).__name__}\t{one_line(error)}", flush=True)
    await client.close()


def main():
    variant, nodes, plan = sys.argv[1], seeds(sys.argv[2]), read_plan(sys.argv[3])
    if variant == "redis-py":
        run_redis_py(nodes, plan, typed=False)
    elif variant == "redis-py-typed":
        run_redis_py(nodes, plan, typed=True)
    elif variant == "redis-py-asyncio":
        asyncio.run(run_redis_py_asyncio(nodes, plan))
    elif variant == "glide":
        asyncio.run(run_glide(nodes, plan))
    else:
        sys.exit(f"unknown variant {variant}")


if __name__ == "__main__":
    main()
