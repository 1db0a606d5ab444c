// Runs two kafkajs group consumers for kbroker's interop tests
// (test/interop/groups_kafkajs_test.go): the first starts alone with
// consumer.run, the second joins once the first has messages, and both
// commit as they go (autoCommitThreshold 1) until together they have seen
// <want> distinct values; then both leave.
//
//   node group.js <host:port> <topic> <group> <want>
//
// Prints one JSON object: {"values": [...every value seen...],
// "secondAssigned": <partitions the second member was given>}.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const main = async () => {
  const [addr, topic, groupId, wantArg] = process.argv.slice(2)
  const want = Number(wantArg)
  const kafka = new Kafka({ clientId: 'kbroker-kafkajs-group', brokers: [addr], logLevel: logLevel.NOTHING })
  const seen = new Set()
  const values = []
  let secondAssigned = 0
  let resolveDone
  const done = new Promise(resolve => { resolveDone = resolve })
  let resolveFirst
  const firstMessage = new Promise(resolve => { resolveFirst = resolve })

  const start = async onAssigned => {
    const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 200, rebalanceTimeout: 20000 })
    if (onAssigned) {
      consumer.on(consumer.events.GROUP_JOIN, e => {
        onAssigned(Object.values(e.payload.memberAssignment).reduce((n, ps) => n + ps.length, 0))
      })
    }
    // A crashed consumer stops for good (kafkajs gives up on an error it
    // does not retry): fail loudly rather than leave nothing running.
    consumer.on(consumer.events.CRASH, e => {
      process.stderr.write('consumer crashed: ' + String(e.payload.error && e.payload.error.stack || e.payload.error) + '\n')
      process.exit(1)
    })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({
      autoCommitThreshold: 1,
      eachMessage: async ({ message }) => {
        const v = message.value.toString()
        values.push(v)
        seen.add(v)
        resolveFirst()
        if (seen.size >= want && secondAssigned > 0) resolveDone()
      },
    })
    return consumer
  }

  const first = await start()
  await firstMessage
  const second = await start(n => { secondAssigned = n })
  const timer = setTimeout(resolveDone, 60000)
  // Both conditions may already hold when the second member's join lands.
  const poll = setInterval(() => { if (seen.size >= want && secondAssigned > 0) resolveDone() }, 100)
  await done
  clearTimeout(timer)
  clearInterval(poll)
  await Promise.all([first.disconnect(), second.disconnect()])
  process.stdout.write(JSON.stringify({ values, secondAssigned }))
}

main().catch(err => {
  process.stderr.write(String(err && err.stack || err) + '\n')
  process.exit(1)
})
