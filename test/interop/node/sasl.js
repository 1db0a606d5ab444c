// Authenticates to a broker with kafkajs SASL and produces one message, for
// kbroker's security tests (test/security/clients_test.go).
//
//   node sasl.js <host:port> <plain|scram-sha-256|scram-sha-512> <user> <password> <topic>
//
// Prints {"ok": true} or {"ok": false, "error": "<kafkajs error name: message>"};
// exits 1 only if it cannot run.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const main = async () => {
  const [broker, mechanism, username, password, topic] = process.argv.slice(2)
  const kafka = new Kafka({
    clientId: 'kbroker-sasl-test',
    brokers: [broker],
    sasl: { mechanism, username, password },
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  })
  const producer = kafka.producer({ allowAutoTopicCreation: true })
  try {
    await producer.connect()
    await producer.send({ topic, messages: [{ value: 'hello' }] })
    await producer.disconnect()
    process.stdout.write(JSON.stringify({ ok: true }))
  } catch (e) {
    process.stdout.write(JSON.stringify({ ok: false, error: `${e.name}: ${e.message}` }))
  }
}

main().catch(e => {
  console.error(e)
  process.exit(1)
})
