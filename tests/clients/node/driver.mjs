// Sends MSETEX calls through a Node.js cluster client, one reply line per call.
// tests/it/cluster_clients.rs runs it after `npm ci` of this folder:
//
//   node driver.mjs CLIENT HOST:PORT[,HOST:PORT...] PLAN
//
// CLIENT is one of
//   node-redis  createCluster(), cluster.sendCommand(firstKey, false, call): node-redis
//               routes a raw command by the key its caller names, here the call's first key
//   ioredis     new Cluster(), cluster.call(...call): ioredis routes by its own command table
//
// PLAN has one call a line, its arguments separated by tabs: the call's first key, then the
// command and its arguments. For each call the driver prints one line: `ok<TAB>REPLY` (OK,
// or an integer) or `error<TAB>ERROR-CLASS<TAB>MESSAGE`, the message on one line. A client
// that cannot start exits non-zero with its reason.
import { readFileSync } from "node:fs";
import { createCluster } from "redis";
import { Cluster } from "ioredis";

const [client, seedList, planPath] = process.argv.slice(2);
const seeds = seedList.split(",").map((seed) => {
  const at = seed.lastIndexOf(":");
  return { host: seed.slice(0, at), port: Number(seed.slice(at + 1)) };
});
const plan = readFileSync(planPath, "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => {
    const [firstKey, ...call] = line.split("\t");
    return { firstKey, call };
  });

const oneLine = (text) => String(text).split(/\s+/).filter(Boolean).join(" ");

// An exception a client throws outside the call's promise (ioredis writing a queued
// command) fails the call under way instead of ending the driver.
let failCall = null;
process.on("uncaughtException", (error) => {
  if (failCall) failCall(error);
  else console.error(`uncaught: ${error?.stack ?? error}`);
});

async function report(send) {
  let timer;
  try {
    const reply = await new Promise((resolve, reject) => {
      failCall = reject;
      timer = setTimeout(() => reject(new Error("no reply within 20 s")), 20_000);
      Promise.resolve().then(send).then(resolve, reject);
    });
    console.log(`ok\t${String(reply)}`);
  } catch (error) {
    console.log(`error\t${error?.constructor?.name ?? "Error"}\t${oneLine(error?.message ?? error)}`);
  } finally {
    clearTimeout(timer);
    failCall = null;
  }
}

if (client === "node-redis") {
  const cluster = createCluster({
    rootNodes: seeds.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
  });
  cluster.on("error", (error) => console.error(`node-redis: ${error}`));
  await cluster.connect();
  for (const { firstKey, call } of plan) {
    await report(() => cluster.sendCommand(firstKey, false, call));
  }
  await cluster.close();
} else if (client === "ioredis") {
  const cluster = new Cluster(seeds, { lazyConnect: true });
  cluster.on("error", (error) => console.error(`ioredis: ${error}`));
  await cluster.connect();
  // Every primary's connection up before the calls, so that each call takes the same
  // path whichever node it goes to first.
  await Promise.all(cluster.nodes("master").map((node) => node.ping()));
  for (const { call } of plan) {
    await report(() => cluster.call(...call));
  }
  await cluster.quit();
} else {
  console.error(`unknown client ${client}`);
  process.exit(2);
}
