// Runs kafkajs admin calls against a broker for kbroker's interop tests
// (test/interop/kafkajs_test.go), which checks what they return.
//
//   node admin.js <host:port> < steps.json
//
// steps.json is an array of {"call": "<admin method>", "args": {...}}; a
// resource "type" given by name ("TOPIC", "BROKER") is replaced by kafkajs's
// ConfigResourceTypes value. The output is one JSON array with, per step,
// {"result": <what the call resolved to>} or {"error": {name, type, code,
// message, retriable, errors}} — kafkajs's error as a program using it sees
// it. The script itself fails (exit 1) only if it cannot run the steps.
// KJS_SASL_MECHANISM, KJS_SASL_USERNAME and KJS_SASL_PASSWORD in the
// environment make it authenticate (test/security's policy test).
'use strict'

const { Kafka, logLevel, ConfigResourceTypes } = require('kafkajs')

const readStdin = async () => {
  const chunks = []
  for await (const chunk of process.stdin) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}

// withResourceTypes turns type names into kafkajs's numeric resource types.
const withResourceTypes = args => {
  if (!args || !Array.isArray(args.resources)) return args
  return {
    ...args,
    resources: args.resources.map(r =>
      typeof r.type === 'string' ? { ...r, type: ConfigResourceTypes[r.type] } : r
    ),
  }
}

const describeError = e => ({
  name: e.name,
  type: e.type,
  code: e.code,
  message: e.message,
  retriable: e.retriable,
  errors: Array.isArray(e.errors) ? e.errors.map(describeError) : undefined,
})

const main = async () => {
  const broker = process.argv[2]
  if (!broker) throw new Error('usage: node admin.js <host:port> < steps.json')
  const steps = JSON.parse(await readStdin())
  const kafka = new Kafka({
    clientId: 'kbroker-interop-kafkajs',
    brokers: [broker],
    logLevel: logLevel.NOTHING,
    // An answer the broker gets wrong must show up as an error, not as
    // minutes of retries.
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
    connectionTimeout: 5000,
    requestTimeout: 10000,
    sasl: process.env.KJS_SASL_MECHANISM
      ? { mechanism: process.env.KJS_SASL_MECHANISM, username: process.env.KJS_SASL_USERNAME, password: process.env.KJS_SASL_PASSWORD }
      : undefined,
  })
  const admin = kafka.admin()
  await admin.connect()
  const out = []
  try {
    for (const step of steps) {
      if (typeof admin[step.call] !== 'function') throw new Error(`no admin call ${step.call}`)
      try {
        const result = await admin[step.call](withResourceTypes(step.args))
        out.push({ result: result === undefined ? null : result })
      } catch (e) {
        out.push({ error: describeError(e) })
      }
    }
  } finally {
    await admin.disconnect()
  }
  process.stdout.write(JSON.stringify(out) + '\n')
}

main().catch(e => {
  process.stderr.write(`admin.js: ${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})
