'use strict';
// One block of node-redlock 4.2's uncontended cycle, for
// scripts/bench-redlock.sh:
//   node cycle.js REDIS_URL RESOURCE CYCLES MAX_SECONDS WARMUP
// lock(RESOURCE, 30000) + unlock(), one at a time (each awaited), on one
// ioredis client (Redlock with that single server, retryCount 0: a try).
// WARMUP cycles first, untimed (connection, EVALSHA script load, JIT);
// then CYCLES timed ones, stopping early after MAX_SECONDS.  Prints one
// JSON line: {"impl":"node-redlock",...,"cycles":N,"seconds":S,
// "cycles_per_s":R}.  Exit 1 on any failed lock or unlock.
const Redis = require('ioredis');
const Redlock = require('redlock');

const [url, resource, cyclesArg, secondsArg, warmupArg] = process.argv.slice(2);
const cycles = Number(cyclesArg);
const maxSeconds = Number(secondsArg);
const warmup = Number(warmupArg);
if (!url || !resource || !(cycles > 0) || !(maxSeconds > 0) || !(warmup >= 0)) {
  console.error('usage: node cycle.js REDIS_URL RESOURCE CYCLES MAX_SECONDS WARMUP');
  process.exit(2);
}
const TTL_MS = 30000; // dlock's default lease (DLOCK_DEFAULT_TTL_MS)

async function main() {
  // Fail fast instead of ioredis's endless reconnects.
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  await client.connect();
  const redlock = new Redlock([client], {
    driftFactor: 0.01,
    retryCount: 0, // a try: uncontended, it never needs one
    retryDelay: 200,
    retryJitter: 200,
  });
  let clientError = null;
  redlock.on('clientError', (e) => { clientError = clientError || e; });

  async function cycle() {
    const lock = await redlock.lock(resource, TTL_MS);
    await lock.unlock();
    if (clientError) throw clientError;
  }

  for (let i = 0; i < warmup; i++) await cycle();
  const limit = BigInt(Math.round(maxSeconds * 1e9));
  const t0 = process.hrtime.bigint();
  let n = 0;
  let t = t0;
  while (n < cycles) {
    await cycle();
    n++;
    t = process.hrtime.bigint();
    if (t - t0 >= limit) break;
  }
  const seconds = Number(t - t0) / 1e9;
  await client.quit();
  process.stdout.write(JSON.stringify({
    impl: 'node-redlock',
    version: require('redlock/package.json').version,
    ioredis: require('ioredis/package.json').version,
    node: process.version,
    cycles: n,
    seconds: seconds,
    cycles_per_s: n / seconds,
  }) + '\n');
}

main().catch((e) => {
  console.error('cycle.js: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
