"""confluent-kafka (Debian's python3-confluent-kafka, on librdkafka)
against kbroker, for test/interop/groups_python_test.go.

    python3 confluent.py roundtrip <host:port> <topic> <n>
        produces the values 0..n-1 with Producer (acks=all), then reads
        every partition from the beginning with an assign()ed Consumer that
        commits nothing; prints {"values": [...]}.

    python3 confluent.py group <host:port> <topic> <group> <max>
        a Consumer subscribes as a member of <group> and reads until <max>
        records or until nothing more arrives for 3 s after the first,
        committing each record's offset synchronously; then closes (leaving
        the group). prints {"values": [...]}. A second run resumes from the
        commits.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition, OFFSET_BEGINNING


def roundtrip(addr, topic, n):
    producer = Producer({"bootstrap.servers": addr, "acks": "all", "client.id": "kbroker-confluent"})
    failed = []
    for i in range(n):
        producer.produce(topic, str(i).encode(), on_delivery=lambda err, msg: err and failed.append(str(err)))
    if producer.flush(30) != 0 or failed:
        sys.exit("produce failed: %s" % failed[:3])
    consumer = Consumer({"bootstrap.servers": addr, "group.id": "kbroker-confluent-roundtrip",
                         "enable.auto.commit": False, "client.id": "kbroker-confluent"})
    md = consumer.list_topics(topic, timeout=10)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in md.topics[topic].partitions])
    values = []
    deadline = time.time() + 30
    while len(values) < n and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        values.append(int(msg.value()))
    consumer.close()
    print(json.dumps({"values": values}))


def group(addr, topic, group_id, limit):
    consumer = Consumer({"bootstrap.servers": addr, "group.id": group_id, "client.id": "kbroker-confluent-group",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 10000, "heartbeat.interval.ms": 500})
    consumer.subscribe([topic])
    values = []
    deadline = time.time() + 60
    last = None
    while len(values) < limit and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            if last is not None and time.time() - last > 3:
                break
            continue
        if msg.error():
            raise KafkaException(msg.error())
        values.append(int(msg.value()))
        consumer.commit(message=msg, asynchronous=False)
        last = time.time()
    consumer.close()
    print(json.dumps({"values": values}))


def main():
    mode, addr, topic = sys.argv[1:4]
    if mode == "roundtrip":
        roundtrip(addr, topic, int(sys.argv[4]))
    elif mode == "group":
        group(addr, topic, sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
