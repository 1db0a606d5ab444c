// kafkajs transactions against kbroker, for kbroker's interop tests
// (test/interop/txn_kafkajs_test.go): producer.transaction() three times,
// 5 values each: "c0".."c4" committed, "a0".."a4" aborted, "d0".."d4"
// committed. Then two group consumers read the topic from the start, one
// with readUncommitted: false (read_committed), one with true, each until
// it has seen "d4" and a moment more.
//
//   node transactions.js <host:port> <topic> <transactionalId>
//
// Prints one JSON object: {"readCommitted": [...], "readUncommitted": [...]}.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const consume = async (kafka, topic, readUncommitted) => {
  const consumer = kafka.consumer({ groupId: 'kbroker-kafkajs-txn-' + readUncommitted, readUncommitted, maxWaitTimeInMs: 200 })
  const values = []
  let resolveDone
  const done = new Promise(resolve => { resolveDone = resolve })
  consumer.on(consumer.events.CRASH, e => {
    process.stderr.write('consumer crashed: ' + String(e.payload.error && e.payload.error.stack || e.payload.error) + '\n')
    process.exit(1)
  })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ message }) => {
      const v = message.value.toString()
      values.push(v)
      // A record that should not be seen would come before "d4" or right
      // after it; wait a moment for the latter.
      if (v === 'd4') setTimeout(resolveDone, 1000)
    },
  })
  const timer = setTimeout(resolveDone, 30000)
  await done
  clearTimeout(timer)
  await consumer.disconnect()
  return values
}

const main = async () => {
  const [addr, topic, transactionalId] = process.argv.slice(2)
  const kafka = new Kafka({ clientId: 'kbroker-kafkajs-txn', brokers: [addr], logLevel: logLevel.NOTHING })
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  for (const [prefix, commit] of [['c', true], ['a', false], ['d', true]]) {
    const txn = await producer.transaction()
    const messages = [0, 1, 2, 3, 4].map(i => ({ value: prefix + i, partition: 0 }))
    await txn.send({ topic, messages })
    if (commit) await txn.commit()
    else await txn.abort()
  }
  await producer.disconnect()
  const readCommitted = await consume(kafka, topic, false)
  const readUncommitted = await consume(kafka, topic, true)
  process.stdout.write(JSON.stringify({ readCommitted, readUncommitted }) + '\n')
}

main().catch(err => {
  process.stderr.write(String(err && err.stack || err) + '\n')
  process.exit(1)
})
