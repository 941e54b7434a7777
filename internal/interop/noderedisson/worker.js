// node-redisson workers for rlock's interop test: each worker is its own
// Redisson instance (its own two ioredis connections, as each rlock worker is
// its own Client) and takes one name in turns with lock() and unlock() until
// the run ends, as a user's code would.
//
//   node worker.js <host:port> <name> <workers> <hold ms> <think ms> [published|timer-fixed]
//
// timer-fixed mends node-redisson 1.0.4's one waiting defect before the run:
// its CommandExecutor.waitSubscribeOnce starts a timer for the wait and never
// clears it when a message ends the wait; when it fires later, its
// UNSUBSCRIBE takes the connection's subscription from under a newer wait,
// which then sleeps the whole TTL its attempt saw (30 s against a watchdog
// hold). The mended wait is the published one with the timer cleared.
//
// It connects each worker, takes and frees the name once (the warm-up:
// connections and scripts), prints "ready", then waits for a line on stdin:
// "start <end>", the run's end in ms since the epoch. Each worker holds the
// name <hold ms> (0: frees it at once) and pauses a uniform 0 to <think ms>
// between turns. At the end it prints one line per hold, "hold <worker>
// <acquired> <released>" (µs since the epoch: lock() returned, unlock() was
// called), then "done", and exits: a worker still waiting then is abandoned.
'use strict';

const { Redisson } = require('node-redisson');
const { SYMBOL_TIMEOUT } = require('node-redisson/dist/contracts/ICommandExecutor');
const readline = require('node:readline');

const [addr, name, workersArg, holdArg, thinkArg, variant = 'published'] = process.argv.slice(2);
if (!addr || !name || !['published', 'timer-fixed'].includes(variant)) {
  console.error('usage: node worker.js <host:port> <name> <workers> <hold ms> <think ms> [published|timer-fixed]');
  process.exit(2);
}
const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];
const workers = Number(workersArg || 1);
const holdMS = Number(holdArg || 0);
const thinkMS = Number(thinkArg || 0);

const nowUS = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// clearTimer replaces ex's waitSubscribeOnce with the published one (1.0.4,
// dist/executor/CommandExecutor.js) whose timer is cleared when a message
// ends the wait.
function clearTimer(ex) {
  ex.waitSubscribeOnce = function (eventName, timeout) {
    return new Promise(async (resolve) => {
      let timer;
      const handler = async (e) => {
        clearTimeout(timer);
        await this.unsubscribe(eventName, handler);
        resolve(e);
      };
      if (timeout) {
        timer = setTimeout(async () => {
          await this.unsubscribe(eventName, handler);
          resolve(SYMBOL_TIMEOUT);
        }, timeout);
      }
      await this.subscribeOnce(eventName, handler);
    });
  };
}

async function main() {
  const clients = [];
  for (let i = 0; i < workers; i++) {
    const r = new Redisson({ redis: { options: { host, port } } });
    if (variant === 'timer-fixed') {
      clearTimer(r.commandExecutor);
    }
    clients.push(r);
  }
  const locks = clients.map((r) => r.getLock(name));
  for (const l of locks) {
    await l.lock();
    await l.unlock();
  }
  console.log('ready');

  const end = await new Promise((resolve) => {
    const rl = readline.createInterface({ input: process.stdin });
    rl.on('line', (line) => {
      const [word, at] = line.trim().split(/\s+/);
      if (word === 'start') {
        rl.close();
        resolve(Number(at));
      }
    });
  });

  const holds = [];
  const turns = locks.map(async (l, i) => {
    while (Date.now() < end) {
      await l.lock();
      const acquired = nowUS();
      if (holdMS > 0) {
        await sleep(holdMS);
      }
      const released = nowUS();
      await l.unlock();
      holds.push([i, acquired, released]);
      if (thinkMS > 0) {
        await sleep(Math.random() * thinkMS);
      }
    }
  });
  // A worker that missed its wake-up may wait for the holder's TTL: the
  // run ends at its end, with what the others did.
  await Promise.race([Promise.all(turns), sleep(Math.max(end - Date.now(), 0) + 1000)]);
  for (const [i, a, r] of holds) {
    console.log(`hold ${i} ${a} ${r}`);
  }
  console.log('done');
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
