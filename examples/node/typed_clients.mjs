// MSETEX from the typed methods of node-redis (`mSetEx`) and ioredis
// (`msetex`), which send the numkeys form of Redis 8.4+ / Valkey 9.1+:
//   MSETEX numkeys key value [key value ...] [NX|XX] [EX s|PX ms|EXAT|PXAT|KEEPTTL]
// Serve it with `loadmodule .../libmsetex.so SYNTAX NUMKEYS` (or the built-in).
// Run: npm ci && node typed_clients.mjs redis://127.0.0.1:6379/
// Prints one line per client: the seven replies, then each key's value and TTL.
import { createClient } from "redis";
import Redis from "ioredis";

const url = process.argv[2] ?? "redis://127.0.0.1:6379/";

// The same seven calls through each client; `msetex(pairs, options)` wraps
// the client's own method. Returns the replies in order.
async function calls(p, msetex) {
  return [
    // A session and its token, for 100 s.
    await msetex([[`${p}a`, "a1"], [`${p}b`, "b1"]], { ex: 100 }),
    // NX where one key exists: nothing is written, the reply is 0.
    await msetex([[`${p}a`, "x"], [`${p}c`, "x"]], { nx: true, px: 50_000 }),
    // NX on new keys, for 50,000 ms.
    await msetex([[`${p}c`, "c1"], [`${p}d`, "d1"]], { nx: true, px: 50_000 }),
    // XX where both exist: rewritten with a new TTL.
    await msetex([[`${p}a`, "a2"], [`${p}b`, "b2"]], { xx: true, ex: 200 }),
    // XX where one is missing: nothing is written, the reply is 0.
    await msetex([[`${p}a`, "x"], [`${p}zz`, "x"]], { xx: true, ex: 200 }),
    // No expiry: `MSETEX 2 e e1 b b3`, like SET it clears b's TTL.
    await msetex([[`${p}e`, "e1"], [`${p}b`, "b3"]], {}),
    // KEEPTTL: c keeps its 50 s.
    await msetex([[`${p}c`, "c2"]], { keepttl: true }),
  ];
}

async function report(name, p, replies, get, pttl) {
  const fields = [`${name}`, `replies=${replies.map(Number).join(",")}`];
  for (const key of ["a", "b", "c", "d", "e", "zz"]) {
    fields.push(`${key}=${(await get(`${p}${key}`)) ?? "nil"}`);
    fields.push(`pttl_${key}=${await pttl(`${p}${key}`)}`);
  }
  console.log(fields.join(" "));
}

// node-redis 5: client.mSetEx(pairs, { mode: "NX"|"XX", expiration: { type, value } })
const nodeRedis = createClient({ url });
nodeRedis.on("error", (e) => {
  console.error(e);
  process.exitCode = 1;
});
await nodeRedis.connect();
const nodeRedisReplies = await calls("nr:", (pairs, o) => {
  const options = {};
  if (o.nx) options.mode = "NX";
  if (o.xx) options.mode = "XX";
  if (o.ex) options.expiration = { type: "EX", value: o.ex };
  if (o.px) options.expiration = { type: "PX", value: o.px };
  if (o.keepttl) options.expiration = { type: "KEEPTTL" };
  return nodeRedis.mSetEx(pairs, options);
});
await report("node-redis", "nr:", nodeRedisReplies, (k) => nodeRedis.get(k), (k) =>
  nodeRedis.pTTL(k),
);
await nodeRedis.quit();

// ioredis 5.11+ / 6: redis.msetex(numkeys, key, value, ..., options...), sent
// as given; here the expiry goes before NX/XX, as Lettuce sends it.
const ioredis = new Redis(url, { maxRetriesPerRequest: 1 });
const ioredisReplies = await calls("io:", (pairs, o) => {
  const args = [pairs.length, ...pairs.flat()];
  if (o.ex) args.push("EX", o.ex);
  if (o.px) args.push("PX", o.px);
  if (o.keepttl) args.push("KEEPTTL");
  if (o.nx) args.push("NX");
  if (o.xx) args.push("XX");
  return ioredis.msetex(...args);
});
await report("ioredis", "io:", ioredisReplies, (k) => ioredis.get(k), (k) => ioredis.pttl(k));
await ioredis.quit();
